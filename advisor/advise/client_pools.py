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
        per = f"{num(pods)} pods" + (f" x {num(processes)} processes" if processes != 1 else "")
        if pool.parts:
            parts = split_parts(pool.parts, new_size)
            client.pools[i] = replace(pool, size=replace(old, value=new_size), parts=parts,
                                      note=parts_note(pool.parts, parts, pool.note))
            proposals += _part_proposals(client, pool, parts, (per, pods * processes), alloc,
                                         assumption) + along
            continue
        edit = edit_at(old.source, num(old.value), num(new_size)) or _pool_insert(pool, new_size)
        client.pools[i] = replace(pool, size=replace(old, value=new_size), moves_with=[
            replace(t, value=min(t.value, new_size)) for t in pool.moves_with])
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


def split_parts(parts: list[Term], total: float) -> list[Term]:
    """The settings a pool's size is the sum of (pool_size, max_overflow), cut to sum to
    `total` with the fewest steps by hand: those written at a file line first (an edit),
    then one that can take the whole cut alone, then the last (the overflow) before the
    first; pool_size stays at least 1 (0 is no limit in QueuePool), an overflow at
    least 0."""
    excess = sum(t.value for t in parts) - total
    values = [t.value for t in parts]

    def floor(k: int) -> float:
        return 1 if k == 0 else 0

    order = sorted(range(len(parts)), key=lambda k: (
        edit_at(parts[k].source, num(parts[k].value), "0") is None,
        values[k] - floor(k) < excess, -k))
    for k in order:
        cut = max(0.0, min(excess, values[k] - floor(k)))
        values[k] -= cut
        excess -= cut
    return [replace(t, value=v) for t, v in zip(parts, values, strict=True)]


def parts_note(before: list[Term], after: list[Term], note: str) -> str:
    """The pool's note after its parts are moved: the proposed settings first, the
    reading they replace after (the After block kept "QueuePool pool_size 30 ... +
    max_overflow 10" beside a size of 17: audit 13d)."""
    shown = " + ".join(
        f"{t.label} {num(t.value)}" + ("" if t.value != b.value else " (unchanged)")
        for b, t in zip(before, after, strict=True))
    total = num(sum(t.value for t in after))
    return f"proposed: {shown} = {total}" + (f"; as read before: {note}" if note else "")


def _part_proposals(client: Client, pool: Pool, parts: list[Term], per: tuple[str, float],
                    alloc: float, assumption: str) -> list[Proposal]:
    """One proposal per setting of the sum that changes, each edited at its own line or
    set by hand where it is a default: the pool's size is their sum, so a proposal of
    the sum at one of them (SQLALCHEMY_POOL_SIZE 40 -> 28) left the other added on top
    (audit 13d: Dify's 28 + the default overflow 10 = 38 per process)."""
    total = sum(t.value for t in parts)
    written = " + ".join(f"{t.label} {num(t.value)}" for t in parts)
    out = []
    for old, new in zip(pool.parts, parts, strict=True):
        if new.value == old.value:
            continue
        edit = edit_at(old.source, num(old.value), num(new.value))
        out.append(Proposal(
            kind="client-pool", subject=f"{client.name} {pool.label}",
            key=old.source.key or old.label, old=old.show(), new=num(new.value),
            reason=(f"{written} = {num(total)} per process; {per[0]} x "
                    f"{num(total)} = {num(per[1] * total)} connections (was "
                    f"{num(per[1] * pool.size.value)}), within its share of "
                    f"{num(math.floor(alloc))}"),
            assumption=assumption, edit=edit,
            manual="" if edit is not None else (
                by_hand_at(old.source, num(new.value)) or _manual_for(old, new.value))))
    return out


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
