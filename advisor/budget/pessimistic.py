"""Terms a budget's verdict may rest on that are full only at the extreme (audit 5, D5):
each auth_query pool counted at pool_size + reserve (full only when that many logins
look a password up at once), and a PgBouncer no client of the repository connects to
(counted at its pools' capacity). The arithmetic is unchanged; when the server is over
with them and not without, the budget says so beside its peak. Pure."""

from __future__ import annotations

import math
from collections.abc import Callable

from msgspec.structs import replace

from advisor.budget.arith import num
from advisor.model import Contribution, Pooler, Topology


def _without_auth(pooler: Pooler) -> Pooler:
    """The pooler with no auth_user: PgBouncer then runs no auth_query, so no auth pool
    (advisor.facts.pgbouncer.auth_lookup), every other pool as it is."""
    settings = {k: v for k, v in pooler.settings.items() if k != "auth_user"}
    databases = [replace(d, auth_user=None) for d in pooler.databases]
    return replace(pooler, settings=settings, databases=databases)


def _auth_share(pooler: Pooler, counted: Contribution,
                contribution: Callable[[Pooler], Contribution]) -> float:
    """What the pooler's auth_query pools add to its server side (0 when none)."""
    from advisor.budget.demand import inner_pools

    if pooler.kind != "pgbouncer" or not any(
            "auth_query lookups" in p.note for d in inner_pools(counted).parts
            for p in d.parts):
        return 0.0
    return counted.total - contribution(_without_auth(pooler)).total


def verdict_notes(topo: Topology, poolers: list[tuple[Pooler, Contribution]], total: float,
                  usable: float, spread: float | None,
                  contribution: Callable[[Pooler], Contribution],
                  wal_senders: float = 0) -> list[str]:
    """`66 without the auth_query pools (...)` for each such term whose removal brings an
    over peak within usable; nothing when the peak fits or is over regardless.
    `contribution` is the budget's slots.pooler_contribution, passed in (slots imports
    this module). `wal_senders`: the max_wal_senders slots taken from usable (before
    PostgreSQL 12), which a WAL sender holds only while a standby or a base backup
    streams."""
    def peak(x: float) -> float:
        return math.ceil(x / spread) if spread else x

    if peak(total) <= usable:
        return []
    out = []
    if wal_senders and peak(total) <= usable + wal_senders:
        out.append(f"{num(usable + wal_senders)} usable without the {num(wal_senders)} "
                   "max_wal_senders slots, which WAL senders take only while standbys or base "
                   "backups stream (before PostgreSQL 12)")
    auth = sum(_auth_share(p, c, contribution) for p, c in poolers)
    if auth and peak(total - auth) <= usable:
        out.append(f"{num(peak(total - auth))} without the auth_query pools ({num(auth)}), "
                   "which fill only when as many logins look a password up at once")
    used = {c.target_id for c in topo.clients if c.target_kind == "pooler"}
    for p, c in poolers:
        if p.kind == "pgbouncer" and p.id not in used and c.total \
                and peak(total - c.total) <= usable:
            out.append(f"{num(peak(total - c.total))} without {p.name} ({num(c.total)}), "
                       "to which no client in the repository connects")
    return out
