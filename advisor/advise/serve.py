"""Step 0 of the advise plan: a [databases] entry for each database a PgBouncer of the
repository refuses to a client of this server (PA213). Until it is served the client
opens nothing, so every later step would size the server without it; with the entry
(added to the copy of the topology) its pools are counted like any other client's."""

from __future__ import annotations

from advisor.advise.records import Edit, Proposal
from advisor.model import Location, PoolerDatabase, Server, Topology


def serve_databases(topo: Topology, server: Server) -> list[Proposal]:
    """One proposal per (PgBouncer, database) refused to a client of `server`, applied to
    `topo` (a copy): added after the last line of its [databases] (a later entry
    following it after the edit), or by hand when that line is not the file's own (a
    template's values)."""
    from advisor.budget.unserved import entry_line, unserved_routes

    out: list[Proposal] = []
    done: set[tuple[str, str]] = set()
    refused = unserved_routes(topo)
    for u in refused:
        pooler = u.pooler
        if pooler.server_id != server.id or (pooler.id, u.dbname) in done:
            continue
        done.add((pooler.id, u.dbname))
        served = [d for d in pooler.databases if d.name != "*"]
        line = entry_line(u.dbname, served)
        end = pooler.databases_end  # None: not a line of the file as it is held
        edit = None if end is None or end.path is None or end.line is None else \
            Edit(path=end.path, line=end.line, key=u.dbname, old="", new=line, insert=True)
        clients = sorted({x.client.name for x in refused
                          if x.pooler.id == pooler.id and x.dbname == u.dbname})
        out.append(Proposal(
            kind="pooler", subject=pooler.name, key=f"[databases] {u.dbname}",
            old="no entry, no * fallback", new=line,
            reason=(f"{', '.join(clients)} name{'s' if len(clients) == 1 else ''} database "
                    f"{u.dbname!r} ({u.at.label()}), which {pooler.name} does not serve: "
                    "PgBouncer disconnects "
                    f"{'it' if len(clients) == 1 else 'them'} with 'no such database: "
                    f"{u.dbname}' (PA213); served, {'its' if len(clients) == 1 else 'their'} "
                    "pools count on this server"),
            assumption=(f"{u.dbname} is a database on the server the other entries lead to; "
                        f"else point the clients at one {pooler.name} serves"),
            edit=edit,
            manual="" if edit else f"add `{line}` to {pooler.name}'s [databases]"))
        pooler.databases.append(PoolerDatabase(
            name=u.dbname, host=next((d.host for d in served if d.host), None),
            port=next((d.port for d in served if d.host), None), dbname=u.dbname,
            location=Location(path=edit.path if edit else pooler.location.path,
                              line=edit.line if edit else None)))
    return out
