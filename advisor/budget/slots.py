"""Slot accounting and memory arithmetic for one server. Pure functions, versioned.

The client budget (FACTS.md; checked against real servers of 11, 15 and 18 by
tests/test_budget_oracle.py):
  usable = max_connections - superuser_reserved_connections (every version)
           - reserved_connections (PostgreSQL 16+)
           - max_wal_senders (before PostgreSQL 12, when WAL senders took normal
             connection slots; PostgreSQL 12 release notes: "Make max_wal_senders not
             count as part of max_connections")
           - headroom the user declares
           - the sessions the server's manager holds in ordinary slots (Patroni's
             superuser connections, advisor.facts.patroni)
Autovacuum workers, WAL senders (since 12) and background workers have slots of their
own and are listed, not subtracted; so are the sessions a manager opens and closes again
(CloudNativePG's instance manager, Server.unsubtracted).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from msgspec.structs import replace

from advisor.budget.arith import READ_FLOOR, num
from advisor.budget.client_side import client_side_line
from advisor.budget.demand import bounded_by_clients, demand_capped, has_unbounded_pool
from advisor.budget.pessimistic import verdict_notes
from advisor.budget.unserved import unserved_by_server
from advisor.model import (
    OWN_RULE_PROGRAMS,
    Budget,
    Client,
    Contribution,
    MemoryBudget,
    NotSubtracted,
    Pool,
    Pooler,
    Server,
    Source,
    StartRefusal,
    Term,
    Topology,
    peak_pods,
)
from advisor.options import OPTIONS_CONFIG, at_least, options_class

MIB = 1024 * 1024
WAL_SENDERS_BEFORE_12 = ("max_wal_senders: before PostgreSQL 12 each WAL sender takes a "
                         "max_connections slot (PostgreSQL 12 release notes)")


@options_class
class MemoryOptions:
    """Assumptions of the worst-case memory estimate (PA301 options)."""

    __pydantic_config__ = OPTIONS_CONFIG

    # sort/hash nodes one query runs at once, each may use work_mem (x hash_mem_multiplier
    # for hashes)
    nodes_per_query: int = 2
    # private memory of one backend besides work_mem (idle backends were measured at
    # about 1.7 MB on PostgreSQL 15)
    backend_overhead: str = "2MB"
    # 'max_connections' (what the server admits) or 'peak' (what the repository's
    # clients can open)
    connections: str = "max_connections"

    def __post_init__(self) -> None:
        at_least(self, "nodes_per_query", 1)


def setting_term(server: Server, name: str, label: str | None = None) -> Term | None:
    """A server parameter as a Term: the file value, or the version's default."""
    from advisor.facts.pg_defaults import pg_default

    found = server.settings.get(name)
    if found is None:
        found = pg_default(name, server.version.int_value)
    if found is None or not isinstance(found.value, int | float) or isinstance(found.value, bool):
        return None
    return Term(label=label or name, value=float(found.value), source=found.source)


def client_contribution(client: Client) -> Contribution:
    """pods at peak x processes x pool size; with several pools per pod, pods x the
    sum of the per-pod pools (each pool a part)."""
    pods = peak_pods(client.replicas, client.surge)
    pod_factors = [client.replicas] + ([client.surge] if client.surge else [])
    if client.replicas_unknown:  # a release of a chart not rendered: no count to show
        # linked here, so it runs a pod that holds a connection: 1, the least it can be
        # (22 releases of app-template 5.x were a floor of 0 on drag0n141/home-ops)
        known = sum(p.per_pod() for p in client.pools) if client.pools else 0
        return Contribution(who=client.name, kind="client", total=max(known, 1),
                            location=client.location, unknown=True,
                            note=("pods unknown (PA106): counted as one pod, "
                                  f"{num(max(known, 1))} connections" if known else
                                  "pods and connections per pod unknown (PA106): counted as "
                                  "1") + ", the least a release that connects holds, so the "
                                  "peak is a floor")
    if (client.unknown or not client.pools) and not pods:
        return Contribution(who=client.name, kind="client", factors=pod_factors, total=0,
                            location=client.location,
                            note="no pod runs at peak: what one would open does not count")
    if client.unknown or not client.pools:
        # A pod that connects holds at least one connection when every pod is busy at
        # once: counted so, the least it can be (251 linked pods of unknown size were a
        # floor of 0 that "fit" in 97 usable; netbox-chart with both autoscalers); or the
        # pools read, when only another pool's size is not (Client.floor_pools)
        read = sum(p.per_pod() for p in client.floor_pools) if client.unknown else 0
        if read > 1:
            labels = " + ".join(f"{num(p.per_pod())} ({p.label})" for p in client.floor_pools)
            return Contribution(
                who=client.name, kind="client", factors=[*pod_factors, Term(
                    label=READ_FLOOR, value=read,
                    source=Source.default_of(f"the pools read: {labels}"))],
                total=pods * read, location=client.location, unknown=True,
                note=(f"connections per pod unknown (PA106): counted as the pools read, "
                      f"{labels} = {num(read)} per pod, the least a pod holds, so the peak "
                      "is a floor"))
        return Contribution(who=client.name, kind="client", factors=pod_factors, total=pods,
                            location=client.location, unknown=True,
                            note="connections per pod unknown (PA106): counted as 1 per pod, "
                                 "the least a pod that connects holds, so the peak is a floor")
    if any(p.bound == "unbounded" for p in client.pools):
        # Say it where the number is printed: the sum below is a floor, not the peak.
        client = replace(client, pools=[
            p if p.bound != "unbounded" else _unbounded_floor(p) for p in client.pools])
    if len(client.pools) == 1:
        pool = client.pools[0]
        factors = [*pod_factors, *([pool.processes] if pool.processes else []), pool.size]
        return Contribution(who=client.name, kind="client", factors=factors,
                            total=pods * pool.per_pod(), location=client.location,
                            note=pool.note)
    parts = [Contribution(who=pool.label, kind="client", factors=[
                 *([pool.processes] if pool.processes else []), pool.size],
                 total=pool.per_pod(), location=client.location, note=pool.note)
             for pool in client.pools]
    per_pod = sum(p.total for p in parts)
    per_pod_term = Term(label="connections per pod, the pools below",
                        value=per_pod, source=Source.default_of("sum of the pools below"))
    return Contribution(who=client.name, kind="client", factors=[*pod_factors, per_pod_term],
                        parts=parts, total=pods * per_pod, location=client.location)


def client_contributions(clients: list[Client]) -> list[Contribution]:
    """What the clients bring together at peak, one contribution each, except a Helm
    release's hook Jobs and Pods: Helm runs them one at a time, before or after the
    rollout, so they count as one contribution of what they add to the release's pods
    (advisor.budget.hooks)."""
    found = [client_contribution(c) for c in clients]
    if not any(c.hook is not None for c in clients):
        return found
    from advisor.budget.hooks import with_release_hooks

    return with_release_hooks(clients, found)


def _unbounded_floor(pool: Pool) -> Pool:
    """A pool with no upper limit, counted as the least it holds: what its process
    could reach when the reader knew it, else 1 (a process that connects holds at
    least one), never 0 (Temporal with no maxConns printed '= 0' and 'peak >= 0')."""
    size = pool.size
    if size.value < 1:
        # a default cited at a line (Temporal's unset maxConns) names itself here too
        named = size.source.default if size.source.default and size.source.path \
            else "no limit"
        size = replace(size, label=f"{named}, counted as at least 1", value=1.0)
    return replace(pool, size=size,
                   note=f"{pool.label} has no upper limit (PA102): counted as "
                        f"{num(size.value)} here, the real peak is higher")


def pooler_contribution(pooler: Pooler, topo: Topology | None = None,
                        clients: list[Client] | None = None) -> Contribution:
    """Server connections the pooler may open: PgBouncer's own arithmetic
    (advisor.facts.pgbouncer.server_side_max), with the extra pods of a rolling update added
    to its replicas, bounded by its clients with `topo`; for an RDS Proxy,
    `proxy_contribution` (needs `topo`). `clients`: topo's clients of the pooler, when the
    caller has them (behind())."""
    from advisor.facts.pgbouncer import pooler_pools, server_side_max

    if pooler.kind == "rds-proxy":
        return proxy_contribution(pooler, topo or Topology())
    if pooler.pairs_open:
        return _open_contribution(pooler)
    pools = pooler_pools(pooler, pooler.pairs or None)
    found = server_side_max(pooler, pooler.pairs or None, pools)
    if pooler.surge is not None and pooler.replicas.value > 0:
        replicas, *rest = found.factors
        per_replica = found.total / pooler.replicas.value
        found = replace(found, factors=[replicas, pooler.surge, *rest],
                        total=(pooler.replicas.value + pooler.surge.value) * per_replica)
    if pooler.unnamed_pairs:
        # a client's pair unknown may be a pool more: the sum counted is a floor
        found = replace(found, unknown=True)
    if topo is None:
        return found
    # no more server connections than its clients ask for (advisor.budget.demand)
    clients = behind(pooler, topo) if clients is None else clients
    shut = bool(topo.exposed.get(pooler.id)) or bool(pooler.fed_by)
    return demand_capped(pooler, found, clients, client_contribution, shut, pools[0]) or found


def _open_contribution(pooler: Pooler) -> Contribution:
    """The server side of a pooler whose pairs are not known at all (Pooler.pairs_open):
    as many pairs as its caps let open, or, when nothing caps them, the pools of the
    pairs its config names (one for a `*` alone), a floor (Contribution.unknown)."""
    from advisor.budget.pairs import open_bound

    bound = open_bound(pooler, pooler_contribution)
    if bound is not None:
        return replace(bound, note="; ".join(x for x in (
            "no client in the repository connects: counted with as many (database, user) "
            "pairs as max_db_connections / max_user_connections let open", bound.note) if x))
    floor = pooler_contribution(replace(pooler, pairs_open=False))
    return replace(floor, unknown=True, note="; ".join(x for x in (
        "no client in the repository connects, so the (database, user) pairs it serves are "
        "not known: each pair a client uses opens a pool of its own (src/objects.c "
        "get_pool) and no max_db_connections / max_user_connections bounds them, so this "
        "is a floor", floor.note) if x))


def behind(pooler: Pooler, topo: Topology) -> list[Client]:
    """The clients that connect to the pooler."""
    return [c for c in topo.clients if c.target_kind == "pooler" and c.target_id == pooler.id]


def feeder_contributions(pooler: Pooler, topo: Topology) -> list[Contribution]:
    """The server sides of the PgBouncers whose [databases] lead to `pooler` (Pooler.
    fed_by): connections it takes as a client's."""
    return [pooler_contribution(x) for x in topo.poolers if x.id in pooler.fed_by]


def pooler_unbounded(pooler: Pooler, counted: Contribution) -> bool:
    """A PgBouncer with a pool of no limit (pool_size 0 from 1.24, no max_db_connections
    or max_user_connections) that its clients do not bound: its count is a floor."""
    return pooler.kind == "pgbouncer" and not bounded_by_clients(counted) \
        and has_unbounded_pool(counted)


def proxy_contribution(proxy: Pooler, topo: Topology) -> Contribution:
    """Server connections an RDS Proxy may open on its target: its pool's maximum is
    MaxConnectionsPercent of the target's max_connections parameter (AWS: "a
    percentage of the max_connections setting for the RDS DB instance"; 75% of 1,000
    is 750). AWS takes the parameter itself: superuser_reserved_connections are not
    taken off first. AWS does not say how a fraction is rounded; it is rounded down.
    The proxy opens no more server connections than its clients hold at once (a
    multiplexed session borrows one per transaction, a pinned session keeps one), so
    with every client known the contribution is min(clients, the pool maximum)."""
    server = topo.server(proxy.server_id) if proxy.server_id else None
    if server is None or proxy.max_connections_percent is None:
        return Contribution(who=proxy.name, kind="pooler", total=0, location=proxy.location,
                            note="RDS Proxy target server unknown: not budgeted")
    max_conn = max_connections_term(server)
    percent = proxy.max_connections_percent
    # max_connections' own source is in the budget's usable line, next to this one
    cap = Term(label=f"RDS Proxy pool maximum = floor({max_conn.value:g} max_connections x "
                     f"MaxConnectionsPercent {percent.value:g} / 100)",
               value=math.floor(max_conn.value * percent.value / 100), source=percent.source)
    routed = behind(proxy, topo)
    clients = client_contributions(routed)
    unbounded = any(p.bound == "unbounded" for c in routed for p in c.pools)
    if not clients or unbounded:
        why = ("no client in the repository routes to it: other clients may fill it"
               if not clients else "a client's pool is unbounded")
        return Contribution(who=proxy.name, kind="pooler", factors=[cap], total=cap.value,
                            location=proxy.location,
                            note=f"the RDS Proxy pool maximum counted in full: {why}")
    demand = sum(c.total for c in clients)
    return Contribution(who=proxy.name, kind="pooler", op="min", factors=[cap], parts=clients,
                        total=min(demand, cap.value), location=proxy.location,
                        note="RDS Proxy: at most one server connection per client connection "
                             "(pinned sessions keep theirs), capped by the pool maximum")


def max_connections_term(server: Server) -> Term:
    return setting_term(server, "max_connections") or Term(
        label="max_connections", value=100, source=Source.default_of("PostgreSQL default"))


def server_budget(server: Server, topo: Topology, memory: MemoryOptions | None = None,
                  unread: list[str] | None = None,
                  unserved: dict[str, list[str]] | None = None) -> Budget:
    """server's budget; unread is unread_files(topo) and unserved unserved_by_server(topo)
    when the caller has them (one walk per run, not one per server)."""
    version = server.version.int_value
    max_conn = max_connections_term(server)
    reserved: list[Term] = []
    su = setting_term(server, "superuser_reserved_connections")
    if su is not None:
        reserved.append(su)
    if version >= 16:
        rc = setting_term(server, "reserved_connections")
        if rc is not None and rc.value:
            reserved.append(rc)
    wal_senders = 0.0
    if version < 12:
        ws = setting_term(server, "max_wal_senders", WAL_SENDERS_BEFORE_12)
        if ws is not None and ws.value:
            reserved.append(ws)
            wal_senders = ws.value
    if server.headroom is not None and server.headroom.value:
        reserved.append(server.headroom)
    reserved += server.held
    usable = max_conn.value - sum(t.value for t in reserved)
    refused = start_refusal(server, max_conn)

    unknown: list[str] = []
    unbounded: list[str] = []
    direct = [c for c in topo.clients if c.target_kind == "server" and c.target_id == server.id]
    contributions = client_contributions(direct)
    for c in direct:
        if (c.unknown or not c.pools) and (c.replicas_unknown
                                           or peak_pods(c.replicas, c.surge) > 0):
            unknown.append(c.name)  # no pod at peak (a suspended CronJob): nothing unknown
        elif any(p.bound == "unbounded" for p in c.pools) and c.name not in unbounded:
            unbounded.append(c.name)
    pairs_unknown: list[str] = []
    sides: list[str] = []
    counted: list[tuple[Pooler, Contribution]] = []  # each pooler and what it counts
    for p in topo.poolers:
        if p.server_id == server.id:
            clients = behind(p, topo)  # once, for its server side and its client side
            contributions.append(pooler_contribution(p, topo, clients))
            counted.append((p, contributions[-1]))
            if pooler_unbounded(p, contributions[-1]) and p.name not in unbounded:
                unbounded.append(p.name)  # pool_size 0 and clients not all known: a floor
            side = client_side_line(p, clients, client_contributions,
                                    feeder_contributions(p, topo))
            if side is not None:
                sides.append(side)
            if p.pairs_open and contributions[-1].unknown:
                pairs_unknown.append(f"{p.name}: no client in the repository connects, "
                                     "its (database, user) pairs unknown")
            if p.unnamed_pairs:
                n = len(p.unnamed_pairs)
                pairs_unknown.append(f"{p.name}: (database, user) of {n} "
                                     f"client{'s' if n != 1 else ''} unknown "
                                     f"({', '.join(p.unnamed_pairs)})")
    total = sum(c.total for c in contributions)
    # Read-only traffic to a set of standbys is spread over them by the Service (one
    # pick per connection); each instance has its own max_connections.
    spread = server.instances if server.role == "standby" and server.instances.value > 1 \
        else None
    peak = math.ceil(total / spread.value) if spread else total
    rests_on = verdict_notes(topo, counted, total, usable, spread.value if spread else None,
                             lambda p: pooler_contribution(p, topo), wal_senders)

    return Budget(
        server_id=server.id, server=server.name, version=server.version,
        max_connections=max_conn, reserved=reserved, usable=usable, peak=peak,
        total_peak=total if spread else None, spread_over=spread,
        contributions=contributions, not_subtracted=not_subtracted(server),
        memory=memory_budget(server, peak, memory or MemoryOptions()),
        location=server.location, unknown_clients=unknown, unbounded_clients=unbounded,
        unknown_pairs=pairs_unknown, client_sides=sides, rests_on=rests_on,
        unplaced_clients=list(topo.unplaced_clients) + (
            # nothing linked to it, while workloads whose program was not read run: one
            # of them may be its client, so 0 is no fit (audit 42: three .NET APIs whose
            # source was not found left their servers "fits, peak 0")
            [n for n in topo.unsourced_apps if n not in topo.unplaced_clients]
            if not contributions else []), refused=refused,
        unread_files=unread_files(topo) if unread is None else list(unread),
        unserved=list((unserved_by_server(topo) if unserved is None else unserved
                       ).get(server.id, [])),
        # a declared headroom is the room kept for clients outside the repository: the
        # exposure is then accounted for, not a floor that can never fit
        exposed=[] if server.headroom is not None and server.headroom.value
        else exposed_by(server, topo))


def start_refusal(server: Server, max_conn: Term | None = None) -> StartRefusal | None:
    """Why PostgreSQL refuses to start this server: the first error of the configuration
    it reads (the postmaster reads it before it checks the slot settings), else the slot
    settings' cross-check (slot_refusal)."""
    if server.start_errors:
        first = server.start_errors[0]
        more = len(server.start_errors) - 1
        return StartRefusal(
            message=first.message + (f" (and {more} more error{'s' if more > 1 else ''})"
                                     if more else ""),
            terms=(), location=first.location)
    return slot_refusal(server, max_conn)


def slot_refusal(server: Server, max_conn: Term | None = None) -> StartRefusal | None:
    """PostgreSQL's own cross-check of the slot settings (advisor.facts.pg_startup): the
    server's file values, else its version's defaults."""
    from advisor.facts.pg_startup import startup_refusal

    su = setting_term(server, "superuser_reserved_connections")
    if su is None:
        return None
    version = server.version.int_value
    return startup_refusal(
        version, max_conn or max_connections_term(server), su,
        setting_term(server, "reserved_connections") if version >= 16 else None,
        setting_term(server, "max_wal_senders") if version < 12 else None)


def exposed_by(server: Server, topo: Topology) -> list[str]:
    """The Services that expose the server, or a pooler in front of it, outside the
    cluster (Topology.exposed)."""
    out = list(topo.exposed.get(server.id, ()))
    for p in topo.poolers:
        if p.server_id == server.id:
            out += [x for x in topo.exposed.get(p.id, ()) if x not in out]
    return out


def unread_files(topo: Topology) -> list[str]:
    """The files PA901 reports as errors (the real program refuses them, or pool-advisor
    could not read them), once each in the order found. A PostgreSQL or PgBouncer
    config the server would refuse is PA109's or PA209's, not content left unread."""
    out: dict[str, None] = {}
    for p in topo.problems:
        if p.fatal and p.program not in OWN_RULE_PROGRAMS:
            out.setdefault(p.location.path)
    return list(out)


def not_subtracted(server: Server) -> list[NotSubtracted]:
    """Process slots users often subtract from max_connections, and why they are not."""
    version = server.version.int_value
    out = []
    av_name = "autovacuum_worker_slots" if version >= 18 else "autovacuum_max_workers"
    av = setting_term(server, av_name)
    if av is not None:
        out.append(NotSubtracted(term=av, why="autovacuum workers have their own slots "
                                 "(since PostgreSQL 8.3), outside max_connections"))
    ws = setting_term(server, "max_wal_senders") if version >= 12 else None
    if ws is not None:  # before 12 they are subtracted (server_budget)
        out.append(NotSubtracted(term=ws, why="WAL senders have their own slots since "
                                 "PostgreSQL 12"))
    bw = setting_term(server, "max_worker_processes")
    if bw is not None:
        out.append(NotSubtracted(term=bw, why="background and parallel workers never take "
                                 "client connection slots"))
    return out + server.unsubtracted  # its manager's transient sessions (CloudNativePG's)


class AutovacuumMemory(NamedTuple):
    """What autovacuum's workers may hold at once: workers x per_worker_kb."""

    workers: Term  # autovacuum_max_workers (how many run at once, also in 18+)
    per_worker_kb: float  # autovacuum_work_mem, or maintenance_work_mem when it is -1
    label: str  # which of the two
    source: Source  # where that one is set
    own: bool  # autovacuum_work_mem is set (not -1)


def autovacuum_memory(server: Server) -> AutovacuumMemory | None:
    """The autovacuum term of the memory estimate (memory_budget, and what advise
    changes to lower it)."""
    version = server.version.int_value
    mwm = setting_term(server, "maintenance_work_mem")  # kB
    avwm = setting_term(server, "autovacuum_work_mem")  # kB, -1 = maintenance_work_mem
    av_name = "autovacuum_worker_slots" if version >= 18 else "autovacuum_max_workers"
    avw = setting_term(server, "autovacuum_max_workers") or setting_term(server, av_name)
    if mwm is None or avw is None:
        return None
    if avwm is not None and avwm.value != -1:
        return AutovacuumMemory(avw, avwm.value, "autovacuum_work_mem", avwm.source, True)
    return AutovacuumMemory(avw, mwm.value, "maintenance_work_mem (autovacuum_work_mem = -1)",
                            mwm.source, False)


def memory_budget(server: Server, peak: float, options: MemoryOptions) -> MemoryBudget | None:
    """Worst case: shared_buffers + connections x (work_mem x nodes x hash_mem_multiplier
    + backend overhead) + autovacuum workers x maintenance memory."""
    from advisor.config.sizes import parse_size

    if server.memory_limit is None:
        return None
    version = server.version.int_value
    sb = setting_term(server, "shared_buffers")  # 8kB blocks
    wm = setting_term(server, "work_mem")  # kB
    hm = setting_term(server, "hash_mem_multiplier") if version >= 13 else None
    av = autovacuum_memory(server)
    if sb is None or wm is None or av is None:
        return None
    if options.connections == "peak":
        conns = Term(label="peak client connections", value=peak,
                     source=Source.default_of("sum of the budget above"))
    else:
        conns = setting_term(server, "max_connections") or Term(
            label="max_connections", value=100, source=Source.default_of("PostgreSQL default"))
    multiplier = hm.value if hm is not None else 1.0
    overhead = parse_size(options.backend_overhead.replace("MB", "MiB").replace("kB", "KiB"))
    terms = [
        Term(label="shared_buffers", value=sb.value * 8192, source=sb.source),
        Term(label=f"{conns.show()} x work_mem {_mib(wm.value * 1024)} x "
                   f"{options.nodes_per_query} nodes x hash_mem_multiplier {multiplier:g}",
             value=conns.value * wm.value * 1024 * options.nodes_per_query * multiplier,
             source=wm.source),
        Term(label=f"{conns.value:g} connections x backend overhead {options.backend_overhead}",
             value=conns.value * overhead,
             source=Source.default_of("assumed per-backend overhead (PA301 backend_overhead)")),
        Term(label=f"{av.workers.show()} x {av.label} {_mib(av.per_worker_kb * 1024)}",
             value=av.workers.value * av.per_worker_kb * 1024, source=av.source),
    ]
    return MemoryBudget(
        limit=server.memory_limit, terms=terms, total=sum(t.value for t in terms),
        assumptions=[f"{options.nodes_per_query} sort/hash nodes per query at once, each using "
                     "work_mem x hash_mem_multiplier (option nodes_per_query)",
                     f"{options.backend_overhead} private memory per backend "
                     "(option backend_overhead)",
                     f"connections counted: {options.connections}"])


def _mib(value: float) -> str:
    if value >= 1024**3 and value % (1024**3) == 0:
        return f"{value / 1024**3:g}GB"
    return f"{value / MIB:g}MB"


def budgets(topo: Topology, memory: MemoryOptions | None = None) -> list[Budget]:
    unread = unread_files(topo)
    unserved = unserved_by_server(topo)
    return [server_budget(s, topo, memory, unread, unserved) for s in topo.servers]
