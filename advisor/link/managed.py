"""Clients that connect to a provider's managed transaction-mode pooler (Supabase's
Supavisor on port 6543, Neon's `-pooler` endpoint) that nothing of the repository or its
configuration stands for: linked to a pooler of kind "managed" so the PA4xx hazards its
provider documents are checked against it (advisor.facts.managed_poolers). Audit 53:
such apps could not be checked at all."""

from __future__ import annotations

from advisor.facts.managed_poolers import recognise
from advisor.model import (
    BouncerVersion,
    Location,
    Pooler,
    PoolerDatabase,
    Setting,
    Source,
    Term,
    Topology,
)


def link_managed_poolers(topo: Topology) -> None:
    made: dict[str, Pooler] = {}
    for c in topo.clients:
        if c.target_id is not None:
            continue
        for r in c.routes():
            found = recognise(r.host, r.port)
            if found is None or r.host is None:
                continue
            host = r.host.lower().rstrip(".")
            pooler = made.get(host)
            if pooler is None:
                pooler = made[host] = _pooler(host, found, r.source)
                topo.poolers.append(pooler)
                topo.notices.append(
                    f"{host}: {found.label} ({found.mode_doc}): its clients' SQL and driver "
                    "settings are checked against transaction pooling"
                    + "".join(f"; {code} not checked: {why}" for code, why in found.not_checked)
                    + f"; its server side is in no budget here: {found.counting}")
            c.target_kind, c.target_id = "pooler", pooler.id
            break


def _pooler(host: str, found, at: Source) -> Pooler:
    settings = {
        key: Setting(name=key, raw=raw, value=int(raw) if raw.isdigit() else raw,
                     source=Source.default_of(f"{found.label}: {url}", key=key))
        for key, raw, url in found.settings}
    where = Location(path=at.path or "", line=at.line)
    return Pooler(
        id=f"managed/{host}", name=host, kind="managed", managed=found.provider,
        replicas=Term(label="managed pooler", value=1,
                      source=Source.default_of(f"{found.label}: the provider runs it")),
        # Supavisor is not PgBouncer, and Neon does not document its PgBouncer's version:
        # what depends on a version is said by `settings` and facts.managed_poolers
        version=BouncerVersion(major=1, minor=21, source=Source.default_of(
            f"not read: {found.label}")),
        settings=settings, databases=[PoolerDatabase(name="*", location=where)],
        location=where, hosts=[host])
