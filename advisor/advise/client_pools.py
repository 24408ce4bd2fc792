"""Client pool proposals of the advise plan: a client's share of the server's slots
turned into a pool size per process (pods x processes x size <= share), with the thread
counts and pool settings that must move together with it (each edited at its own line,
or the pool left as it is with a note), and `pool: N` inserted where a default applies."""

from __future__ import annotations

import math

from msgspec.structs import replace

from advisor.advise.records import AdviseOptions, Edit, Proposal, by_hand_at, edit_at, num
from advisor.model import Client, Contribution, Pool, Term


def client_pods(client: Client) -> float:
    from advisor.model import peak_pods

    return peak_pods(client.replicas, client.surge)


def shrink_client(
    client: Client, c: Contribution, alloc: float, assumption: str, options: AdviseOptions,
    notes: list[str],
) -> list[Proposal]:
    pods = client_pods(client)
    minimum = options.minimums.get(client.name, 1)
    factor = alloc / c.total if c.total else 0
    proposals = []
    for i, pool in enumerate(client.pools):
        processes = pool.processes.value if pool.processes else 1
        new_size = max(minimum, math.floor(pool.size.value * factor))
        # Floors: make sure pods x processes x size stays within the share.
        while new_size > minimum and pods * processes * new_size > alloc:
            new_size -= 1
        if new_size >= pool.size.value:
            continue
        old = pool.size
        along = _moved_along(client, pool, new_size, notes)
        if along is None:
            continue
        edit = edit_at(old.source, num(old.value), num(new_size)) or _pool_insert(pool, new_size)
        client.pools[i] = replace(pool, size=replace(old, value=new_size), moves_with=[
            replace(t, value=min(t.value, new_size)) for t in pool.moves_with])
        per = f"{num(pods)} pods" + (f" x {num(processes)} processes" if processes != 1 else "")
        proposals.append(
            Proposal(
                kind="client-pool",
                subject=f"{client.name} {pool.label}",
                key=old.source.key or old.label,
                old=old.show(),
                new=num(new_size),
                reason=(
                    f"{per} x {num(new_size)} = {num(pods * processes * new_size)} connections "
                    f"(was {num(pods * processes * old.value)}), within its share of "
                    f"{num(math.floor(alloc))}"
                ),
                assumption=assumption,
                edit=edit,
                manual="" if edit is not None else (
                    by_hand_at(old.source, num(new_size)) or _manual_for(old, new_size)),
            )
        )
        proposals += along
    return proposals


def _is_threads(term: Term) -> bool:
    """A thread count (Puma threads, Sidekiq/Celery concurrency, gunicorn/uWSGI threads)
    rather than a pool setting: the labels the readers give them."""
    label = term.label.lower()
    return "thread" in label or "concurrency" in label


def _pool_insert(pool: Pool, new_size: float) -> Edit | None:
    """`pool: N` added to the database.yml mapping that sets none (Active Record's
    default 5 applied), after its last scalar key, in that key's indentation."""
    at = pool.insert_at
    if at is None or at.path is None or at.line is None:
        return None
    return Edit(path=at.path, line=at.line, key="pool", old="",
                new=f"pool: {num(new_size)}", insert=True)


def _moved_along(client: Client, pool: Pool, new_size: float,
                 notes: list[str]) -> list[Proposal] | None:
    """The threads (Sidekiq -c, Puma threads) or pool setting that must move with a pool
    shrunk to `new_size`, each edited at its own line; None (the pool is left as it is,
    with a note) when one of them is a default or not at a line: more threads than
    pool slots wait for a connection (ActiveRecord::ConnectionTimeoutError)."""
    out: list[Proposal] = []
    size = pool.size
    if (size.source.path is None or size.source.line is None) and _is_threads(size) \
            and any(not _is_threads(t) for t in pool.moves_with):
        # the threads are the default counted: a smaller pool alone would make them wait
        notes.append(
            f"{client.name} {pool.label}: not shrunk to {num(new_size)}: {size.show()} is a "
            "default, and a pool below the threads makes them wait for a connection "
            f"(ActiveRecord::ConnectionTimeoutError); set the threads to {num(new_size)} "
            "explicitly, then run advise again")
        return None
    for term in pool.moves_with:
        same_line = (term.source.path, term.source.line) == (pool.size.source.path,
                                                            pool.size.source.line)
        if term.value <= new_size or same_line:
            continue  # already within the new size, or the one edit moves both
        if term.source.path is None or term.source.line is None:
            notes.append(
                f"{client.name} {pool.label}: not shrunk to {num(new_size)}: {term.show()} "
                f"would stay above it (threads wait for a connection: "
                "ActiveRecord::ConnectionTimeoutError) and it is not set at a file line; set "
                f"it to {num(new_size)} explicitly, then run advise again")
            return None
        out.append(Proposal(
            kind="client-pool", subject=f"{client.name} {term.label}",
            key=term.source.key or term.label, old=term.show(), new=num(new_size),
            reason=f"moves with {pool.label} ({num(pool.size.value)} -> {num(new_size)}): "
                   "one connection per thread, never more threads than pool slots",
            edit=edit_at(term.source, num(term.value), num(new_size)),
            manual=by_hand_at(term.source, num(new_size))))
    return out


def _manual_for(term: Term, new: float) -> str:
    return (
        f"{term.label} is a default ({term.source.label()}): set it to {num(new)} "
        "explicitly in the application's configuration"
    )
