"""A PgBouncer's server side, bounded by what its clients can ask for. Pure.

PgBouncer opens a server connection only for a client that is waiting for one while no
server connection of its pool is idle, tested or being tested, and one at a time
(src/janitor.c per_loop_activate, src/objects.c launch_new_connection: "Allow only a
single connection attempt at a time"); the janitor adds connections only while the pool
holds fewer than min_pool_size and fewer than pool_size (check_pool_size:
pgbouncer_1_18_0 src/janitor.c:493-502, pgbouncer_1_24_0 src/janitor.c:538-546). So one
PgBouncer process holds in a pool at most the larger of the most connections its
clients held there at once and min(min_pool_size, pool_size), never their sum. An idle
server connection stays open server_idle_timeout (600 s) after its client has gone: a
client that reconnects to another PgBouncer pod (a restart, a rolling update, a pool's
max lifetime) leaves its servers open on the first, so every process may hold up to all
the clients' connections: per pool, processes x min(pool maximum, max(its clients'
connections, min_pool_size)), the pools of a process together within
max_db_connections and max_user_connections (launch_new_connection checks them for the
janitor's connections too). An auth_query pool: at most the logins at once, one per
client connection (a lookup holds one of its connections: src/client.c
start_auth_query). Kept only when every client of the pooler is in the repository and
known (connections; database, and user unless the entry forces one), no other pooler of
the repository connects through it, it is not reachable from outside the cluster, and
one PgBouncer process per pod (no so_reuseport). Cancel requests open short
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
    """The pools (database, server user) the client's routes land in; None when a route
    leaves out its database, or its user where the entry forces none (its pool is then
    not known: a driver's default database, a Secret not held). `landed`: each pair's
    pool key, worked out once per pooler (clients share pairs)."""
    from advisor.facts.pgbouncer import pool_key

    keys: set[tuple[str, str]] = set()
    for r in client.routes():
        if r.dbname is None:
            return None
        pair = (r.dbname, r.user if r.user is not None else _NO_USER)
        if pair not in landed:
            landed[pair] = pool_key(pooler, *pair)
        key = landed[pair]
        if key is None or key[1] == _NO_USER:
            return None  # a database PgBouncer refuses, or a user not known
        keys.add(key)
    return keys


# A user name no client logs in with: a pool keyed by it means the entry forces no user
_NO_USER = "\0unknown user"


def _known(client: Client) -> bool:
    """Whether the client's connections are a number, not a floor."""
    if not client.pools:
        return not client.replicas_unknown and peak_pods(client.replicas, client.surge) == 0
    return not client.unknown and not client.replicas_unknown and all(
        p.bound != "unbounded" for p in client.pools)


def _held(pool: EffectivePool, asked: float) -> tuple[float, str]:
    """Server connections one process holds in `pool` at most when its clients ask for
    `asked` at once, and the arithmetic: max(asked, min_pool_size below pool_size),
    within the pool's maximum. The janitor opens one only while the pool holds fewer than
    min_pool_size (and fewer than pool_size); a client opens one only while waiting with
    no idle server: the larger of the two, never their sum (src/janitor.c
    check_pool_size)."""
    who = pool.lookup.describe() if pool.lookup is not None else f"{pool.database}/{pool.user}"
    clients = (f"{num(asked)} (the logins at once)" if pool.lookup is not None else
               f"{num(asked)} (its clients' connections)" if not pool.kept_only else
               "0 (no client counted here)")
    size = pool.min_pool_size
    if size.value > 0:
        below = f", only below pool_size {pool.pool_size.int_value}" \
            if pool.min_kept < size.value else ""
        kept = (f"{pool.min_kept} (min_pool_size {size.int_value}, "
                f"{size.source.label()}{below})")
        clients = f"max({clients}, {kept})"
    held = max(asked, float(pool.min_kept))
    if pool.unbounded:
        return held, f"{who}: {clients} (no limit of its own) = {num(held)}"
    top = min(float(pool.server_max), held)
    return top, (f"{who}: min({pool.server_max} (pool maximum), {clients}) = {num(top)}")


def demand_capped(pooler: Pooler, counted: Contribution, clients: list[Client],
                  contribution: Callable[[Client], Contribution], shut: bool,
                  pools: list[EffectivePool]) -> Contribution | None:
    """The pooler's contribution bounded by its clients (`counted` inside a min), or None
    when that bound is not lower or cannot be known. `contribution` is the budget's own
    for one client (slots.client_contribution: a Helm hook at its own peak, not one at a
    time: the servers its pool opened stay open). `shut`: no bound (the pooler is reached
    from outside the cluster, or by another pooler). `pools`: those `counted` counts
    (facts.pgbouncer.pooler_pools)."""
    from advisor.facts.pgbouncer import effective_setting, pools_flow

    if pooler.kind != "pgbouncer" or not clients or shut or pooler.unnamed_pairs:
        return None
    reuseport = effective_setting(pooler.settings, "so_reuseport", pooler.version)
    if int(reuseport.value) or not all(_known(c) for c in clients):
        return None
    demand: dict[tuple[str, str], float] = {}
    logins = 0.0  # each client connection once: at most one login at a time each
    landed: dict[tuple[str, str], tuple | None] = {}
    for client in clients:
        total = contribution(client).total
        logins += total
        keys = _keys(pooler, client, landed)
        if keys is None:
            return None
        for key in keys:  # a client of several pools: its all counted on each (a bound)
            demand[key] = demand.get(key, 0.0) + total
    if not set(demand) <= {(p.database, p.user) for p in pools}:
        return None  # a client's pool the pools counted do not hold: no bound from them
    processes = pooler.replicas.value + (pooler.surge.value if pooler.surge else 0)
    held = [_held(pool, logins if pool.lookup is not None else
                  demand.get((pool.database, pool.user), 0.0)) for pool in pools]
    per_process = pools_flow(pooler, pools, [h for h, _ in held])
    bound = processes * per_process
    unbounded = any(pool.unbounded for pool in pools)
    if bound >= counted.total and not unbounded:
        return None
    term = Term(label="what its clients can ask for", value=bound,
                source=Source.default_of(_WHY))
    capped = ("; capped by max_db_connections / max_user_connections: "
              f"{num(per_process)}" if per_process < sum(h for h, _ in held) else "")
    asked_note = (f"its clients ask for {num(logins)} connections; each of {num(processes)} "
                  "PgBouncer processes may hold, per pool, the larger of what they held "
                  "there at once and the min_pool_size its janitor keeps (never their "
                  "sum: src/janitor.c check_pool_size opens one only while the pool holds "
                  "fewer), idle server connections staying open server_idle_timeout after "
                  "a client moves to another process: "
                  + "; ".join(text for _, text in held)
                  + f"{capped}; {num(processes)} x {num(per_process)} = {num(bound)}")
    if unbounded:
        # a pool with no limit (pool_size 0, 1.24+): its pools' own arithmetic is a floor
        # of 1 each, no cap; the clients' bound is the number
        return Contribution(who=counted.who, kind="pooler", op="+", factors=[term],
                            total=bound, location=counted.location, note="; ".join(
                                x for x in (counted.note, "a pool has no limit (pool_size "
                                            "0): counted as what its clients ask for",
                                            asked_note) if x))
    return Contribution(who=counted.who, kind="pooler", op="min", factors=[term],
                        parts=[replace(counted, note="")], total=bound,
                        location=counted.location, note="; ".join(
                            x for x in (counted.note, asked_note) if x))


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
    return any(UNBOUNDED_NOTE in p.note for d in inner_pools(c).parts
               for p in d.parts)


UNBOUNDED_NOTE = "unbounded pool"
