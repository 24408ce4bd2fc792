"""A PgBouncer's server side, bounded by what its clients can ask for. Pure.

PgBouncer opens a server connection only for a client that is waiting for one while no
server connection of its pool is idle, tested or being tested, and one at a time
(src/janitor.c per_loop_activate, src/objects.c launch_new_connection: "Allow only a
single connection attempt at a time"); the janitor adds connections only up to
min_pool_size, and only below pool_size (check_pool_size). So each PgBouncer process
holds, per pool, at most max(the connections its clients hold at once, min_pool_size):
summed over processes, at most the clients' connections plus processes x min_pool_size.
That bound is kept only when every client of the pooler is in the repository and known:
its connections, its (database, user), the pooler not reachable from outside the
cluster, one PgBouncer process per pod (no so_reuseport). An auth_query pool is bounded by
the logins at once (a lookup holds one of its connections: src/client.c
start_auth_query), at most one per client connection. Cancel requests open short
connections past every limit (the budget's note says so); PostgreSQL handles them
without a backend slot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.budget.arith import num
from advisor.model import Client, Contribution, Pooler, Source, Term, peak_pods

if TYPE_CHECKING:
    from advisor.facts.pgbouncer import EffectivePool

_WHY = ("PgBouncer opens a server connection only for a client waiting for one, one at "
        "a time (src/janitor.c per_loop_activate, src/objects.c launch_new_connection)")


def _keys(pooler: Pooler, client: Client, landed: dict[tuple[str, str], tuple | None]
          ) -> set[tuple[str, str]] | None:
    """The pools (database, server user) the client's routes land in; None when one of
    them names neither database nor user (any pool may be its). `landed`: each pair's
    pool key, worked out once per pooler (clients share pairs)."""
    from advisor.facts.pgbouncer import pool_key

    keys: set[tuple[str, str]] = set()
    for r in client.routes():
        if r.dbname is None and r.user is None:
            return None
        pair = (r.dbname or "*", r.user or "*")
        if pair not in landed:
            landed[pair] = pool_key(pooler, *pair)
        if (key := landed[pair]) is not None:
            keys.add(key)
    return keys


def _known(client: Client) -> bool:
    """Whether the client's connections are a number, not a floor."""
    if not client.pools:
        return not client.replicas_unknown and peak_pods(client.replicas, client.surge) == 0
    return not client.unknown and not client.replicas_unknown and all(
        p.bound != "unbounded" for p in client.pools)


def demand_capped(pooler: Pooler, counted: Contribution, clients: list[Client],
                  contributions: Callable[[list[Client]], list[Contribution]],
                  exposed: bool, pools: list[EffectivePool]) -> Contribution | None:
    """The pooler's contribution bounded by its clients (`counted` inside a min), or None
    when that bound is not lower or cannot be known. `contributions` is the budget's own
    (slots.client_contributions): slots imports this module. `pools`: those `counted`
    counts (facts.pgbouncer.pooler_pools)."""
    from advisor.facts.pgbouncer import effective_setting

    if pooler.kind != "pgbouncer" or not clients or exposed or pooler.unnamed_pairs:
        return None
    reuseport = effective_setting(pooler.settings, "so_reuseport", pooler.version)
    if int(reuseport.value) or not all(_known(c) for c in clients):
        return None
    demand: dict[tuple[str, str], float] = {}
    clients_total = 0.0  # each client once (a client of several pools is on each below)
    landed: dict[tuple[str, str], tuple | None] = {}
    for client, found in zip(clients, contributions(clients), strict=True):
        clients_total += found.total
        keys = _keys(pooler, client, landed)
        if keys is None:
            return None
        for key in keys:  # a client of several pools: its all counted on each (a bound)
            demand[key] = demand.get(key, 0.0) + found.total
    if not set(demand) <= {(p.database, p.user) for p in pools}:
        return None  # a client's pool the pools counted do not hold: no bound from them
    processes = pooler.replicas.value + (pooler.surge.value if pooler.surge else 0)
    bound = 0.0
    kept = 0.0  # min_pool_size connections kept per process, all pools
    auth = 0.0
    logins = clients_total  # each client connection is at most one login at a time
    for pool in pools:
        if pool.lookup is not None:
            # a lookup holds one of its connections while a login waits for it (src/
            # client.c start_auth_query): no more than the logins at once, as for clients
            auth += min(processes * pool.server_max, logins + processes * pool.min_kept)
            continue
        asked = demand.get((pool.database, pool.user), 0.0) + processes * pool.min_kept
        kept += processes * pool.min_kept
        bound += asked if pool.unbounded else min(processes * pool.server_max, asked)
    unbounded = any(p.unbounded for p in pools if p.lookup is None)
    total = bound + auth
    if total >= counted.total and not unbounded:
        return None
    label = f"what its clients can ask for: {num(clients_total)} client connections"
    if kept:
        label += f" + {num(kept)} kept by min_pool_size"
    if auth:
        label += f" + {num(auth)} in auth_query pools"
    term = Term(label=label, value=total, source=Source.default_of(_WHY))
    if unbounded:
        # a pool with no limit (pool_size 0, 1.24+): its pools' own arithmetic is a floor
        # of 1 each, no cap; the clients' bound is the number
        return Contribution(who=counted.who, kind="pooler", op="+", factors=[term],
                            total=total, location=counted.location, note="; ".join(
                                x for x in (counted.note, "a pool has no limit (pool_size "
                                            "0): counted as what its clients ask for") if x))
    return Contribution(who=counted.who, kind="pooler", op="min", factors=[term],
                        parts=[replace(counted, note="")], total=total,
                        location=counted.location, note="; ".join(
                            x for x in (counted.note, "no more server connections than its "
                                        "clients hold at once") if x))


def inner_pools(c: Contribution) -> Contribution:
    """The pooler's own arithmetic (its database parts) inside a demand bound."""
    if c.op == "min" and len(c.parts) == 1 and c.parts[0].who == c.who \
            and c.parts[0].kind == "pooler":
        return c.parts[0]
    return c


def bounded_by_clients(c: Contribution) -> bool:
    """Whether `c` is a pooler's contribution demand_capped made."""
    return bool(c.factors) and c.factors[0].source.default == _WHY


def has_unbounded_pool(c: Contribution) -> bool:
    """Whether the pooler's own arithmetic counts a pool of no limit as 1 (server_side_max
    notes it on the pool's part)."""
    return any(p.note.startswith(UNBOUNDED_NOTE) for d in inner_pools(c).parts
               for p in d.parts)


UNBOUNDED_NOTE = "unbounded pool"
