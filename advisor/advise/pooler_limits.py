"""Pooler proposals of the advise plan for the poolers a server already has: PgBouncer
limits per replica within a pooler's share (max_db_connections, default_pool_size,
reserve_pool_size, on the [databases] entry or in [pgbouncer]), RDS Proxy's
MaxConnectionsPercent, and the client side: pool_mode transaction unless a SQL hazard
forbids it, max_client_conn sized to the clients behind each replica."""

from __future__ import annotations

import math

from msgspec.structs import replace

from advisor.advise.records import Edit, Proposal, added_at, by_hand_at, edit_at, num
from advisor.model import (
    Budget,
    Contribution,
    Pooler,
    PoolerDatabase,
    Setting,
    Source,
    SqlHazard,
    Term,
    Topology,
)


def shrink_proxy(proxy: Pooler, b: Budget, alloc: float, assumption: str) -> list[Proposal]:
    """RDS Proxy's pool maximum is MaxConnectionsPercent of max_connections (floored):
    the largest percentage within `alloc`. Set in AWS; the declaration describes it."""
    old = proxy.max_connections_percent
    max_conn = max(b.max_connections.value, 1)
    percent = max(1, math.floor(alloc * 100 / max_conn))
    if old is None or percent >= old.value:
        return []
    proxy.max_connections_percent = replace(old, value=float(percent))
    source = replace(old.source, key="max_connections_percent")
    return [Proposal(
        kind="pooler", subject=f"{proxy.name} (RDS Proxy)", key="max_connections_percent",
        old=old.show(), new=str(percent),
        reason=(f"pool maximum floor({num(max_conn)} max_connections x {percent} / 100) = "
                f"{math.floor(max_conn * percent / 100)} server connections, within its "
                f"share of {num(math.floor(alloc))}; set the same on the proxy in AWS "
                "(modify-db-proxy-target-group): the declaration only describes it"),
        assumption=assumption, edit=edit_at(source, num(old.value), str(percent)),
        manual=(f"set MaxConnectionsPercent to {percent} on the proxy's target group in AWS "
                "(aws rds modify-db-proxy-target-group --connection-pool-config "
                f"MaxConnectionsPercent={percent}); the declaration only describes it"))]


def shrink_pooler(
    pooler: Pooler,
    c: Contribution,
    alloc: float,
    assumption: str,
    target_active: float | None,
    topo: Topology | None = None,
) -> list[Proposal]:
    """Per-replica PgBouncer limits so that replicas x server connections <= alloc. The
    reason given is the budget's own count of the changed pooler (pooler_contribution,
    what the After block shows), not the share it was sized to."""
    from advisor.budget.demand import inner_pools

    replicas = max(pooler.replicas.value + (pooler.surge.value if pooler.surge else 0), 1)
    per_replica = math.floor(alloc / replicas)
    current_per_replica = c.total / replicas if replicas else c.total
    if per_replica >= current_per_replica:
        return []
    own = inner_pools(c)  # its databases' arithmetic, inside the bound its clients set
    if pooler.sized_by is not None:
        proposals = _shrink_zalando(pooler, own, per_replica, assumption)
    else:
        proposals = _shrink_pools(pooler, own, per_replica, assumption)
    why = _pooler_why(pooler, topo, c.total, replicas, alloc)
    if target_active is not None:
        why += f"; the measured optimum is {num(target_active)} active connections"
    for p in proposals:
        p.reason = why + p.reason
    return proposals


def _pool_split(size: int, reserve: int, room: int) -> tuple[int, int]:
    """(pool_size, reserve_pool_size) of a pool that may hold `room` server connections.
    The reserve is part of what a pool takes at peak, and it is given up first: PgBouncer
    opens it only for a client that has waited reserve_pool_timeout (5 s by default;
    src/objects.c launch_new_connection), so a pool of 2 with a reserve of 5 serves
    its clients 2 at a time between 5-second stalls."""
    if size + reserve <= room:
        return size, reserve
    kept = max(1, min(size, room))
    return kept, max(0, min(reserve, room - kept))


def _shrink_pools(pooler: Pooler, own: Contribution, per_replica: int,
                  assumption: str) -> list[Proposal]:
    """max_db_connections where that cap binds, else each pool's size and reserve
    (_pool_split) within its database's part of `per_replica`. A value several pools
    share ([pgbouncer] default_pool_size) takes the smallest they need."""
    from advisor.facts.pgbouncer import _find_database, effective_pool

    # (entry name or "" for [pgbouncer], key) -> (entry, old term, new value)
    wanted: dict[tuple[str, str], tuple[PoolerDatabase | None, Term, int]] = {}

    def want(entry: PoolerDatabase | None, key: str, old: Term, new: int) -> None:
        attr = {"default_pool_size": "pool_size"}.get(key, key)
        where = entry.name if entry is not None and getattr(entry, attr, None) == old else ""
        was = wanted.get((where, key))
        if was is None or new < was[2]:
            wanted[(where, key)] = (entry, old, new)

    db_parts = own.parts or [own]
    raw_total = sum(p.total for p in db_parts) or 1
    for part in db_parts:
        db_share = math.floor(per_replica * part.total / raw_total)
        entry = _find_database(pooler, part.who)
        users = [pp.who.split("/", 1)[1] for pp in part.parts or [] if "/" in pp.who]
        pools = [p for p in (effective_pool(pooler, part.who, u) for u in users) if p]
        if not pools:
            continue
        cap = pools[0].max_db_connections
        raw = sum(p.server_max for p in pools)
        if cap.value > 0 and cap.value <= raw:
            # The cap binds: lowering it is the one-value change.
            if db_share < cap.value:
                want(entry, "max_db_connections", cap, db_share)
            continue
        room = max(1, math.floor(db_share / len(pools)))
        for p in pools:
            if p.pool_size.int_value <= 0:
                continue  # no size of its own (1.24+) or its first login only
            reserve = p.reserve_pool_size.int_value if p.reserve_used else 0
            size, new_reserve = _pool_split(p.pool_size.int_value, reserve, room)
            if new_reserve < reserve:
                want(entry, "reserve_pool_size", p.reserve_pool_size, new_reserve)
            if size < p.pool_size.int_value:
                want(entry, "default_pool_size", p.pool_size, size)
    proposals = []
    for (_where, key), (entry, old, new) in wanted.items():
        note = ""
        if key == "reserve_pool_size":
            note = ("; the reserve is given up before the steady pool: PgBouncer opens it "
                    "only for a client that has waited reserve_pool_timeout (src/objects.c "
                    "launch_new_connection)")
        proposal = _pooler_value(pooler, entry, key, old, new, note, assumption)
        proposals.append(proposal)
    return proposals


def _pooler_why(pooler: Pooler, topo: Topology | None, was: float, replicas: float,
                alloc: float) -> str:
    """The changed pooler counted as the budget counts it (slots.pooler_contribution,
    bounded by its clients when `topo` is given): the After block's number."""
    from advisor.budget.demand import bounded_by_clients, inner_pools
    from advisor.budget.slots import pooler_contribution

    after = pooler_contribution(pooler, topo)
    own = inner_pools(after)
    text = (f"{num(replicas)} replicas x {num(own.total / replicas)} = {num(own.total)} "
            "server connections")
    if bounded_by_clients(after) and after.total < own.total:
        text += f", {num(after.total)} of them what its clients can ask for"
    return text + f" (was {num(was)}), within its share of {num(math.floor(alloc))}"


def _shrink_zalando(pooler: Pooler, c: Contribution, per_replica: int,
                    assumption: str) -> list[Proposal]:
    """The Zalando operator writes the pooler's pgbouncer.ini itself from
    spec.connectionPooler.maxDBConnections (per pod: maxDBConnections / instances, pool
    half of that, reserve half the pool): the largest maxDBConnections whose pools fit
    `per_replica`, proposed there, and the pooler's settings moved with it."""
    from advisor.read.sources.operators.zalando import pool_sizes

    sized_by = pooler.sized_by
    assert sized_by is not None
    pods = max(int(pooler.replicas.value), 1)
    pools_per_db = [max(len(part.parts), 1) for part in (c.parts or [c])]
    current = int(pooler.settings["max_db_connections"].value) \
        if "max_db_connections" in pooler.settings else int(sized_by.value) // pods
    chosen = 0
    for per_pod in range(current - 1, 1, -1):
        pool, reserve = pool_sizes(per_pod)
        if sum(min(n * (pool + reserve), per_pod) for n in pools_per_db) <= per_replica:
            chosen = per_pod
            break
    if chosen == 0:
        return []
    new = chosen * pods
    pool, reserve = pool_sizes(chosen)
    how = (f"Zalando operator: maxDBConnections {new} (proposed) // {pods} pooler pods = "
           f"{chosen} per pod")
    for key, value, text in (("max_db_connections", chosen, how),
                             ("default_pool_size", pool, f"{how}; default pool size = "
                              f"{chosen} // 2"),
                             ("reserve_pool_size", reserve, f"{how}; reserve = default pool "
                              f"size {pool} // 2")):
        pooler.settings[key] = replace(_setting_with(
            pooler.settings.get(key), key, float(value), sized_by.source),
            source=Source(path=sized_by.source.path, line=sized_by.source.line,
                          key="maxDBConnections", default=text))
    written = sized_by.source.path is not None and sized_by.source.line is not None \
        and not sized_by.source.default
    return [Proposal(
        kind="pooler", subject=f"{pooler.name} (Zalando operator)", key="maxDBConnections",
        old=sized_by.show(), new=str(new),
        reason=(f"; the operator derives per pod max_db_connections {new} // {pods} = "
                f"{chosen}, default_pool_size {pool} and reserve_pool_size {reserve} "
                "(connection_pooler.go): its pgbouncer.ini is not edited by hand"),
        assumption=assumption,
        edit=edit_at(sized_by.source, num(sized_by.value), str(new)) if written else None,
        manual=(f"set spec.connectionPooler.maxDBConnections: {new} in the postgresql "
                f"resource ({pooler.location.path}:{pooler.location.line})"))]


def _pooler_value(
    pooler: Pooler,
    entry: PoolerDatabase | None,
    key: str,
    old: Term,
    new: float,
    reason: str,
    assumption: str,
) -> Proposal:
    """Change one PgBouncer limit in the topology copy (on the [databases] entry when
    that is where the value came from, else in [pgbouncer]) and say so (`reason`, after
    the count shrink_pooler puts first)."""
    new_term = replace(old, value=float(new))
    subject = pooler.name
    entry_attr = {"default_pool_size": "pool_size"}.get(key, key)
    if entry is not None and getattr(entry, entry_attr, None) == old:
        setattr(entry, entry_attr, new_term)
        subject = f"{pooler.name} [databases] {entry.name}"
        manual = f"add `{entry_attr}={num(new)}` to the {entry.name} line of [databases]"
    else:
        edit, manual = setting_insert(pooler, key, num(new))
        if old.source.path is not None:
            edit = None
        pooler.settings[key] = _setting_with(pooler.settings.get(key), key, new,
                                             added_at(edit) or old.source)
        if edit is not None:
            return Proposal(kind="pooler", subject=subject, key=key, old=old.show(),
                            new=num(new), reason=reason, assumption=assumption, edit=edit)
    return Proposal(
        kind="pooler",
        subject=subject,
        key=entry_attr if subject != pooler.name else key,
        old=old.show(),
        new=num(new),
        reason=reason,
        assumption=assumption,
        edit=edit_at(old.source, num(old.value), num(new)),
        manual=by_hand_at(old.source, num(new)) if old.source.path else manual,
    )


def _setting_with(old: Setting | None, name: str, value: float | str, source: Source) -> Setting:
    raw = num(value) if isinstance(value, float | int) else value
    if old is None:
        return Setting(name=name, raw=raw, value=value, source=source)
    return replace(old, raw=raw, value=value)


def bouncer_hazards(topo: Topology) -> list[SqlHazard]:
    """Hazards that break behind PgBouncer (not the forms only RDS Proxy pins on)."""
    from advisor.read.sql.hazards import PINNING_ONLY_KINDS

    return [h for h in topo.sql_hazards if h.kind not in PINNING_ONLY_KINDS]


def pooler_client_side(topo: Topology, pooler: Pooler, notes: list[str]) -> list[Proposal]:
    from advisor.budget.slots import client_contributions
    from advisor.facts.pgbouncer import effective_setting

    proposals: list[Proposal] = []
    behind = [c for c in topo.clients if c.target_kind == "pooler" and c.target_id == pooler.id]
    mode = effective_setting(pooler.settings, "pool_mode", pooler.version)
    if str(mode.value) == "session" and behind:
        ids = {c.id for c in behind}
        hazards = [h for h in bouncer_hazards(topo) if h.client_id in ids]
        unmapped = [h for h in bouncer_hazards(topo) if h.client_id is None]
        if hazards:
            listed = "; ".join(f"{h.kind} at {h.location.label()}" for h in hazards[:5])
            notes.append(
                f"{pooler.name} stays in session mode: transaction mode would break "
                f"{listed}. In session mode every client connection holds a server "
                "connection, so the pooler cannot multiplex."
            )
        else:
            caveat = (
                f"; {len(unmapped)} hazard(s) found in code not mapped to a workload: check them"
                if unmapped
                else ""
            )
            proposals.append(
                Proposal(
                    kind="pooler",
                    subject=pooler.name,
                    key="pool_mode",
                    old=f"{mode.raw} ({mode.source.label()})",
                    new="transaction",
                    reason=(
                        "transaction mode lends a server connection per transaction, so many "
                        "client connections share the few server connections the budget allows"
                    ),
                    assumption="no session-level feature (SET, LISTEN, advisory locks, SQL "
                    "PREPARE, WITH HOLD cursors) found in the clients behind it" + caveat,
                    **_set_or_add(pooler, "pool_mode", mode.source, mode.raw, "transaction"),
                )
            )
            pooler.settings["pool_mode"] = _setting_with(
                pooler.settings.get("pool_mode"), "pool_mode", "transaction", mode.source
            )
    if behind:
        clients_total = sum(c.total for c in client_contributions(behind))
        replicas = max(pooler.replicas.value, 1)
        needed = math.ceil(clients_total / replicas)
        current = effective_setting(pooler.settings, "max_client_conn", pooler.version)
        if needed > float(current.value):
            with_headroom = -(-needed * 11 // 10)  # +10%, integer ceiling
            new = -(-with_headroom // 10) * 10
            proposals.append(
                Proposal(
                    kind="pooler",
                    subject=pooler.name,
                    key="max_client_conn",
                    old=f"{current.raw} ({current.source.label()})",
                    new=str(new),
                    reason=(
                        f"{num(clients_total)} client connections at peak over {num(replicas)} "
                        f"replica(s) = {needed} per PgBouncer, + 10% headroom: clients past "
                        "max_client_conn are refused"
                    ),
                    assumption="the Service spreads clients evenly over the replicas",
                    **_set_or_add(pooler, "max_client_conn", current.source, current.raw,
                                  str(new)),
                )
            )
            pooler.settings["max_client_conn"] = _setting_with(
                pooler.settings.get("max_client_conn"), "max_client_conn", new, current.source
            )
    return proposals


def _set_or_add(pooler: Pooler, key: str, source: Source, old: str, new: str) -> dict:
    """A Proposal's edit and manual text for a [pgbouncer] key: edited at its line when a
    file sets it, else added where the pooler's configuration is written."""
    if source.path:
        return {"edit": edit_at(source, old, new), "manual": by_hand_at(source, new)}
    edit, manual = setting_insert(pooler, key, new)
    return {"edit": edit, "manual": manual}


def setting_insert(pooler: Pooler, key: str, value: str) -> tuple[Edit | None, str]:
    """A [pgbouncer] key the pooler's files do not set (its default applies), added where
    its configuration is written: `key = value` at the end of the [pgbouncer] section of
    its pgbouncer.ini, or the image's variable as the first item of the container's env
    (Bitnami PGBOUNCER_*, edoburu upper-case keys). Also what to do by hand."""
    from advisor.read.sources.operators.containers import bouncer_env_variable

    variable = bouncer_env_variable(pooler.env_style, key)
    if pooler.main_end is None and variable is not None:
        manual = f"add `{variable}: \"{value}\"` to the PgBouncer container's env"
        first = pooler.env_first
        if first is None or first.path is None or first.line is None:
            return None, manual
        return Edit(path=first.path, line=first.line - 1, key=variable, old="",
                    new=f"- {{name: {variable}, value: \"{value}\"}}", insert=True,
                    indent_from=first.line), manual
    return _ini_insert(pooler, key, value), f"add `{key} = {value}` to the [pgbouncer] section"


def _ini_insert(pooler: Pooler, key: str, value: str) -> Edit | None:
    """`key = value` added at the end of the pooler's [pgbouncer] section (the key is
    absent: its default applies), when its pgbouncer.ini was read; not for images
    configured by environment."""
    end = pooler.main_end
    if end is None or end.path is None or end.line is None:
        return None
    return Edit(path=end.path, line=end.line, key=key, old="", new=f"{key} = {value}",
                insert=True)
