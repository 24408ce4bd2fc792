"""Clients whose PgBouncer refuses the database they name (PA213): they open no
connection through it, so a server budget that fits without them is not their fit."""

from __future__ import annotations

from msgspec import Struct

from advisor.facts.pgbouncer import refuses_database
from advisor.model import Client, Pooler, PoolerDatabase, Route, Source, Topology


class Unserved(Struct, frozen=True):
    client: Client
    pooler: Pooler
    route: Route

    @property
    def dbname(self) -> str:
        return self.route.dbname or ""

    @property
    def at(self) -> Source:
        """Where the database name is written (else the route's own line)."""
        return self.route.dbname_source or self.route.source


def unserved_routes(topo: Topology) -> list[Unserved]:
    """Each (client, database) a PgBouncer of the repository refuses, once."""
    # only a PgBouncer whose [databases] are wholly read refuses (refuses_database): most
    # repositories have none, and then no client's routes are walked
    poolers = {p.id: p for p in topo.poolers if p.kind == "pgbouncer" and p.databases_complete}
    if not poolers:
        return []
    out: list[Unserved] = []
    seen: set[tuple[str, str, str]] = set()
    for c in topo.clients:
        pooler = poolers.get(c.target_id or "") if c.target_kind == "pooler" else None
        if pooler is None:
            continue
        for r in c.routes():
            key = (c.id, pooler.id, r.dbname or "")
            if key in seen or not refuses_database(pooler, r.dbname):
                continue
            seen.add(key)
            out.append(Unserved(client=c, pooler=pooler, route=r))
    return out


def unserved_by_server(topo: Topology) -> dict[str, list[str]]:
    """Budget.unserved of every server behind refusing poolers, one line a client: worked
    out once for all servers (a walk of every client's routes per server made the budgets
    of 5,000 manifests a third dearer)."""
    out: dict[str, list[str]] = {}
    for u in unserved_routes(topo):
        out.setdefault(u.pooler.server_id or "", []).append(
            f"{u.client.name}: database {u.dbname!r} is not in {u.pooler.name}'s "
            f"[databases] (no * fallback): PgBouncer refuses it (PA213)")
    return out


def entry_line(dbname: str, databases: list[PoolerDatabase]) -> str:
    """The [databases] line that serves `dbname` on the server the pooler's other entries
    lead to: `<dbname> = host=... port=... dbname=<dbname>` (PA213's fix, advise's edit)."""
    first = next((d for d in databases if d.host and d.name != "*"), None)
    where = ""
    if first is not None:
        where = f"host={first.host} " + (f"port={first.port} " if first.port else "")
    return f"{dbname} = {where}dbname={dbname}"
