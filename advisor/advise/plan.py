"""`advise`: settings that make every server fit its connection budget, and why.

Plain data in, plain data out: a Topology and its Budgets -> ServerAdvice per server.
Proposals change values in a copy of the topology; the "after" arithmetic is the core
budget code run again on that copy, so before and after are computed the same way.

How a server that does not fit is made to fit (each step says which assumption it
rests on):
1. the usable slots are split over the contributions (direct clients, poolers) by
   declared weight, else by their current share, never below a declared minimum and
   never above what a contribution asks for today;
2. a client's share becomes a pool size per process (pods x processes x size <= share);
   a pooler's share becomes PgBouncer limits per replica: max_db_connections where that
   cap binds, else pool_size / default_pool_size (reserve kept when it still fits);
3. poolers in session mode are proposed transaction mode unless a hazard of a client
   behind them forbids it; max_client_conn is sized to the clients behind each replica;
4. where a memory limit is known, max_connections is brought down to what the clients
   need and work_mem to what fits the limit;
5. the target number of active server connections is stated from the sizing evidence:
   (cores x 2) + spindles as a floor, or the USL fit of a sweep when one is given.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Literal

from msgspec.structs import replace
from pydantic import BaseModel, ConfigDict, Field

from advisor.live.usl import Recommendation, Sweep, recommend_active_connections
from advisor.model import (
    Budget,
    Client,
    Contribution,
    Pool,
    Pooler,
    PoolerDatabase,
    Server,
    Setting,
    Source,
    SqlHazard,
    Term,
    Topology,
)

if TYPE_CHECKING:
    from advisor.rules import Registry

KIB = 1024
MIB = 1024 * 1024


class AdviseOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    all_servers: bool = False  # advise on servers that already fit too
    weights: dict[str, float] = Field(default_factory=dict)  # client or pooler name -> weight
    minimums: dict[str, int] = Field(default_factory=dict)  # client name -> min pool size
    sweep: Sweep | None = None
    spindles: float = 1
    force: bool = False  # use a sweep whose fit is unreliable
    new_pooler: bool = True  # may propose a PgBouncer where pools would shrink too far
    min_r2: float = 0.8  # below it a sweep's fit is unreliable
    memory: object | None = None  # advisor.budget.slots.MemoryOptions


class Edit(BaseModel):
    """One value changed in one file at one line."""

    model_config = ConfigDict(extra="forbid")

    path: str
    line: int  # the line holding the value; for an insert, the line to add it after
    key: str
    old: str  # "" for an insert
    new: str  # the new value; for an insert, the whole line to add (its indentation
    #          taken from the line it follows)
    insert: bool = False


class NewFile(BaseModel):
    """A file advise proposes to add; never written over an existing one."""

    model_config = ConfigDict(extra="forbid")

    path: str
    text: str


class Proposal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["client-pool", "pooler", "server"]
    subject: str  # "checkout HikariCP", "pgbouncer", "postgres"
    key: str
    old: str  # the current value with its source
    new: str
    reason: str
    assumption: str = ""
    edit: Edit | None = None  # None: the value is a default or not at a file line
    manual: str = ""  # what to do when there is no edit (add the key, ...)
    new_file: NewFile | None = None  # a file to add (a proposed PgBouncer's manifest)


class ServerAdvice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: str
    server_id: str
    fits_before: bool
    usable_before: float
    peak_before: float
    before: list[str] = Field(default_factory=list)
    proposals: list[Proposal] = Field(default_factory=list)
    fits_after: bool
    usable_after: float
    peak_after: float
    after: list[str] = Field(default_factory=list)
    sizing: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    memory_before: str = ""
    memory_after: str = ""


# --- allocation ------------------------------------------------------------------------


class Share(BaseModel):
    model_config = ConfigDict(extra="forbid")

    who: str
    kind: Literal["client", "pooler"]
    demand: float
    weight: float
    minimum: float
    alloc: float = 0


def allocate(shares: list[Share], total: float) -> bool:
    """Water-filling: split `total` by weight, each between its minimum and its demand.
    Sets `alloc`; False when the minimums alone exceed the total (allocs = minimums)."""
    if sum(s.minimum for s in shares) > total:
        for s in shares:
            s.alloc = s.minimum
        return False
    fixed: dict[int, float] = {}
    while True:
        free = total - sum(fixed.values())
        open_ = [i for i in range(len(shares)) if i not in fixed]
        weight = sum(shares[i].weight for i in open_)
        changed = False
        for i in open_:
            s = shares[i]
            want = free * s.weight / weight if weight > 0 else free / len(open_)
            if want >= s.demand:
                fixed[i] = s.demand
                changed = True
            elif want < s.minimum:
                fixed[i] = s.minimum
                changed = True
        if not changed:
            for i in open_:
                s = shares[i]
                s.alloc = free * s.weight / weight if weight > 0 else free / len(open_)
            for i, v in fixed.items():
                shares[i].alloc = v
            return True


# --- the plan ----------------------------------------------------------------------------


def advise(
    topo: Topology,
    budgets: list[Budget],
    options: AdviseOptions | None = None,
) -> list[ServerAdvice]:
    from advisor.budget.slots import MemoryOptions
    from advisor.rules import load_rules

    options = options or AdviseOptions()
    memory = options.memory if isinstance(options.memory, MemoryOptions) else MemoryOptions()
    registry = load_rules()  # once: the one-value rules run for every server advised
    out: list[ServerAdvice] = []
    for b in budgets:
        server = topo.server(b.server_id)
        if server is None:
            continue
        zero = [c.who for c in b.contributions if c.kind == "client" and c.total <= 0]
        if b.unknown_clients or zero:
            out.append(_withheld(b, [*b.unknown_clients, *zero]))
            continue
        # A server that fits is listed only for a one-value rule fix (or a note why
        # not); those are computed once, inside _advise_server.
        only_for_rules = b.fits and not options.all_servers and not _memory_over(b)
        advice = _advise_server(topo, server, b, options, memory, registry,
                                only_for_rules=only_for_rules)
        if advice is not None:
            out.append(advice)
    return out


def _withheld(b: Budget, unknown: list[str]) -> ServerAdvice:
    """No proposal for a server whose clients are not all counted: sizes shared out
    without them would be wrong, and max_connections sized to a floor too small."""
    from advisor.budget.arith import peak_expr, usable_expr

    names = ", ".join(dict.fromkeys(unknown))
    lines = [f"usable: {usable_expr(b)}", f"peak: {peak_expr(b)}"]
    return ServerAdvice(
        server=b.server, server_id=b.server_id, fits_before=False, usable_before=b.usable,
        peak_before=b.peak, before=lines, fits_after=False, usable_after=b.usable,
        peak_after=b.peak, after=lines,
        notes=[f"proposals withheld for {b.server}: the connections of {names} are not known "
               "(PA106), so the peak is a floor and any size shared out without them would be "
               "wrong; declare them under [[tool.pool-advisor.read.workloads]] (connections = N) "
               "or point pool-advisor at their source (source = \"...\")"],
        memory_before=_memory_line(b), memory_after=_memory_line(b))


def _memory_over(b: Budget) -> bool:
    return (
        b.memory is not None
        and b.memory.limit is not None
        and (b.memory.total > b.memory.limit.value)
    )


def _advise_server(
    topo: Topology, server: Server, b: Budget, options: AdviseOptions, memory: object,
    registry: Registry, *, only_for_rules: bool = False,
) -> ServerAdvice | None:
    """The advice for one server; None when `only_for_rules` (it fits) and no one-value
    rule has a fix or a note for it."""
    from advisor.budget.arith import contribution_lines, peak_expr, usable_expr
    from advisor.budget.slots import server_budget

    after_topo = copy.deepcopy(topo)
    after_server = after_topo.server(server.id)
    assert after_server is not None
    proposals: list[Proposal] = []
    notes: list[str] = []
    sizing = _sizing(server, options)
    target_active = _target_active(sizing)

    # 0: a transaction-mode PgBouncer for direct clients past what the server should run
    # (not when the user shapes the pools' shares: --weight, --min, their declarations)
    pooled = _new_pooler(after_topo, after_server, b, target_active, notes) \
        if options.new_pooler and not (options.weights or options.minimums) else []
    proposals += pooled
    # 1-2: fit the slots.
    if (not b.fits or options.all_servers) and not pooled:
        proposals += _fit_slots(after_topo, server, b, options, target_active, notes)
    # 3: pooler modes and client limits.
    for pooler in after_topo.poolers:
        if pooler.server_id == server.id and pooler.kind == "pgbouncer":
            proposals += _pooler_client_side(after_topo, pooler, notes)
    # 4: memory and max_connections, on the budget after the pool changes.
    mid = server_budget(after_server, after_topo, memory)  # type: ignore[arg-type]
    primary = topo.server(server.primary_id) if server.primary_id else None
    if server.role == "standby" and primary is not None:
        # A hot standby refuses to start with max_connections (and the other slot
        # settings) below the primary's; in operator resources they are one setting.
        if _memory_over(mid):
            notes.append(
                f"{server.name} is a standby of {primary.name}: its max_connections must stay "
                f">= the primary's (a hot standby refuses to start otherwise), so memory is "
                f"fitted through {primary.name}'s settings"
            )
    else:
        standby_peaks = [
            server_budget(sb, after_topo, memory).peak  # type: ignore[arg-type]
            for sb in after_topo.servers
            if sb.primary_id == server.id and sb.role == "standby"
        ]
        proposals += _server_settings(after_server, mid, memory, notes, standby_peaks)
    # 5: timeouts, lifetimes and a single PgBouncer (PA5xx, PA210): one value each
    rule_notes: list[str] = []
    fixes = _rule_fixes(after_topo, after_server, memory, rule_notes, registry)
    if only_for_rules and not fixes and not rule_notes:
        return None
    proposals += fixes
    notes += rule_notes
    after = server_budget(after_server, after_topo, memory)  # type: ignore[arg-type]

    def lines(x: Budget) -> list[str]:
        out = [f"usable: {usable_expr(x)}", f"peak: {peak_expr(x)}"]
        for c in x.contributions:
            out += ["  " + ln for ln in contribution_lines(c)]
        verdict = "fits" if x.fits else f"does not fit: {_n(x.peak)} > {_n(x.usable)}"
        out.append(verdict)
        return out

    return ServerAdvice(
        server=server.name,
        server_id=server.id,
        fits_before=b.fits,
        usable_before=b.usable,
        peak_before=b.peak,
        before=lines(b),
        proposals=proposals,
        fits_after=after.fits,
        usable_after=after.usable,
        peak_after=after.peak,
        after=lines(after),
        sizing=sizing.reasons + ([sizing.alternative] if sizing.alternative else []),
        notes=notes,
        memory_before=_memory_line(b),
        memory_after=_memory_line(after),
    )


def _new_pooler(topo: Topology, server: Server, b: Budget, target_active: float | None,
                notes: list[str]) -> list[Proposal]:
    """The PgBouncer to add (advisor.advise.pooler), applied to `topo` (a copy), and the
    client hosts to point at it."""
    from advisor.advise.pooler import apply_to, propose_pooler

    new = propose_pooler(topo, server, b, target_active)
    if new is None:
        return []
    apply_to(topo, server, new)
    out = [Proposal(
        kind="pooler", subject=new.name, key="PgBouncer (new)", old="none",
        new=new.path, reason="; ".join(new.reasons),
        assumption="transaction pooling suits the clients: pool-advisor checks their SQL and "
                   "drivers for session features (PA4xx) once the pooler is there",
        manual=f"add {new.path}; create the pgbouncer-userlist Secret (userlist.txt)",
        new_file=NewFile(path=new.path, text=new.text))]
    for client, old, new_host in new.host_edits:
        route = next(p.route for p in client.pools if p.route is not None)
        src = route.source
        out.append(Proposal(
            kind="client-pool", subject=client.name, key="database host", old=old,
            new=new_host, reason=f"connect through {new.name} instead of {server.name}",
            edit=Edit(path=src.path, line=src.line, key=src.key or "", old=old, new=new_host)
            if src.path and src.line else None,
            manual="" if src.path and src.line else
            f"point {client.name}'s database host at {new_host} (port 5432)"))
    notes.append(f"{server.name}: PgBouncer {new.name} proposed instead of smaller pools: the "
                 "pools stay as they are and queue in PgBouncer")
    return out


# Rules whose fix is one value: a timeout, a lifetime, PgBouncer replicas.
ONE_VALUE_RULES = ("PA501", "PA502", "PA503", "PA504", "PA210")


ONE_VALUE_KEYS = {"PA501": "query_wait_timeout", "PA502": "maximum lifetime",
                  "PA503": "idle_session_timeout",
                  "PA504": "idle_in_transaction_session_timeout", "PA210": "replicas"}


def _entity_name(topo: Topology, subject: str) -> str:
    """The name of the first entity a finding's subject names (a client over its pooler)."""
    names = [e.name for part in subject.split("|")
             for e in (*topo.servers, *topo.poolers, *topo.clients) if e.id == part]
    return names[0] if names else subject


def _server_of(topo: Topology, subject: str) -> str | None:
    """The server a finding's subject (ids joined by |) is about."""
    for part in subject.split("|"):
        if topo.server(part) is not None:
            return part
        pooler = topo.pooler(part)
        if pooler is not None:
            return pooler.server_id
        client = next((c for c in topo.clients if c.id == part), None)
        if client is not None and client.target_id:
            if client.target_kind == "server":
                return client.target_id
            target = topo.pooler(client.target_id)
            return target.server_id if target else None
    return None


def _rule_fixes(topo: Topology, server: Server, memory: object,
                notes: list[str], registry: Registry) -> list[Proposal]:
    """Proposals for the one-value rules' findings about `server`, applied to `topo` (a
    copy) where they change the budget: PgBouncer replicas 1 -> 2 only when the server
    still fits with the second replica's server connections."""
    from advisor.budget.slots import budgets as all_budgets
    from advisor.budget.slots import server_budget
    from advisor.rule_context import RuleContext

    ctx = RuleContext(budgets=all_budgets(topo, memory))  # type: ignore[arg-type]
    out: list[Proposal] = []
    for code in ONE_VALUE_RULES:
        for finding in registry.rules[code].func(topo, ctx):
            if _server_of(topo, finding.subject) != server.id or finding.fix is None:
                continue
            rep = finding.fix.replacement
            kind = {"PA502": "client-pool", "PA503": "server", "PA504": "server"}.get(
                code, "pooler")
            if code == "PA210" and rep is not None:
                pooler = topo.pooler(finding.subject)
                if pooler is None:
                    continue
                before = pooler.replicas
                pooler.replicas = replace(before, value=float(rep.new))
                if not server_budget(server, topo, memory).fits:  # type: ignore[arg-type]
                    pooler.replicas = before
                    notes.append(f"PA210: a second {pooler.name} replica would open more "
                                 f"server connections than {server.name} has; make its "
                                 "pools fit first, then run two replicas")
                    continue
            out.append(Proposal(
                kind=kind, subject=_entity_name(topo, finding.subject),
                key=rep.key if rep else ONE_VALUE_KEYS[code],
                old=rep.old if rep else "not set (default)",
                new=rep.new if rep else "see below",
                reason=f"{code} {finding.name}: {finding.fix.description}",
                edit=Edit(path=rep.path, line=rep.line, key=rep.key, old=rep.old, new=rep.new)
                if rep else None,
                manual="" if rep else finding.fix.description))
    return out


def _sizing(server: Server, options: AdviseOptions) -> Recommendation:
    cores = replace(server.cpu_limit, label="cores") if server.cpu_limit else None
    return recommend_active_connections(cores, options.spindles, options.sweep,
                                        min_r2=options.min_r2, force=options.force)


def _target_active(rec: Recommendation) -> float | None:
    # Only a measurement caps the pools; the floor is where measuring starts.
    return float(rec.active_connections) if rec.fit is not None else None


def _memory_line(b: Budget) -> str:
    from advisor.budget.arith import size

    m = b.memory
    if m is None or m.limit is None:
        return ""
    verdict = "fits" if m.total <= m.limit.value else "over"
    terms = " + ".join(f"{size(t.value)} ({t.label})" for t in m.terms)
    limit = f"{size(m.limit.value)} ({m.limit.label}, {m.limit.source.label()})"
    return f"memory: {terms} = {size(m.total)} vs limit {limit}: {verdict}"


def _weight_of(name: str, demand: float, options: AdviseOptions) -> float:
    return float(options.weights.get(name, demand))


def _fit_slots(
    topo: Topology,
    server: Server,
    b: Budget,
    options: AdviseOptions,
    target_active: float | None,
    notes: list[str],
) -> list[Proposal]:
    shares: list[Share] = []
    for c in b.contributions:
        if c.kind == "client":
            client = _client_named(topo, c.who)
            minimum = _client_minimum(client, options) if client else 1.0
        else:
            pooler = _pooler_named(topo, c.who)
            minimum = _pooler_minimum(pooler) if pooler else 1.0
        shares.append(
            Share(
                who=c.who,
                kind=c.kind,
                demand=c.total,
                weight=_weight_of(c.who, c.total, options),
                minimum=min(minimum, c.total),
            )
        )
    total = b.usable
    pooled = [s for s in shares if s.kind == "pooler"]
    if target_active is not None and pooled:
        # Server connections behind poolers are the active ones: no more than the
        # measured optimum needs (the rest only queue inside PostgreSQL).
        direct = sum(s.demand for s in shares if s.kind == "client")
        for s in pooled:
            cap = max(s.minimum, target_active * s.weight / sum(p.weight for p in pooled))
            if s.demand > cap:
                s.demand = math.floor(cap)
        total = min(total, direct + sum(s.demand for s in pooled))
    if sum(s.demand for s in shares) <= total and not any(
        s.kind == "pooler" and s.demand < c.total
        for s, c in zip(shares, b.contributions, strict=True)
    ):
        return []
    feasible = allocate(shares, total)
    basis = (
        "declared weights"
        if any(s.who in options.weights for s in shares)
        else "each one's current share of the peak"
    )
    if not feasible:
        notes.append(
            f"the declared minimums ({_n(sum(s.minimum for s in shares))} connections) exceed "
            f"the {_n(total)} usable slots: pool sizes alone cannot make {server.name} fit; "
            "raise max_connections (memory permitting) or put PgBouncer in transaction mode "
            "in front of the clients"
        )
    direct_demand = sum(c.total for c in b.contributions if c.kind == "client")
    if direct_demand > 2 * b.usable:
        notes.append(_pooler_alternative(topo, server, b, target_active))
    proposals: list[Proposal] = []
    for s, c in zip(shares, b.contributions, strict=True):
        if s.alloc >= c.total:
            continue
        assumption = f"split of {_n(total)} usable slots by {basis}" + (
            f", at least {_n(s.minimum)} connections (the minimum pool size in every process)"
            if s.minimum > 1
            else ""
        )
        if s.kind == "client":
            client = _client_named(topo, s.who)
            if client is not None:
                proposals += _shrink_client(client, c, s.alloc, assumption, options, notes)
        else:
            pooler = _pooler_named(topo, s.who)
            if pooler is not None and pooler.kind == "rds-proxy":
                proposals += _shrink_proxy(pooler, b, s.alloc, assumption)
            elif pooler is not None:
                proposals += _shrink_pooler(pooler, c, s.alloc, assumption, target_active)
    return proposals


def _pooler_alternative(
    topo: Topology, server: Server, b: Budget, target_active: float | None
) -> str:
    direct = [c for c in b.contributions if c.kind == "client"]
    demand = sum(c.total for c in direct)
    names = ", ".join(c.who for c in direct)
    ids = {c.id for c in topo.clients if c.name in {d.who for d in direct}}
    hazards = [h for h in _bouncer_hazards(topo) if h.client_id in ids]
    pool = min(b.usable, target_active) if target_active else None
    sized = (
        f"default_pool_size about {_n(math.floor(pool))} server connections in total (the "
        "measured optimum)"
        if pool
        else f"a pool sized from a measurement (`pool-advisor sweep`), within {_n(b.usable)} usable"
    )
    text = (
        f"alternative: {names} {'asks' if len(direct) == 1 else 'ask'} for {_n(demand)} "
        "connections, more than twice the "
        f"{_n(b.usable)} usable; shrinking pools that far queues requests inside each pod. "
        f"A PgBouncer in transaction mode in front of {server.name} lets them keep their "
        f"pools: max_client_conn >= {_n(demand)} (over all PgBouncer replicas), {sized}"
    )
    if hazards:
        text += "; but transaction mode would break: " + "; ".join(
            f"{h.kind} at {h.location.label()}" for h in hazards[:5]
        )
    return text


def _client_named(topo: Topology, name: str) -> Client | None:
    return next((c for c in topo.clients if c.name == name), None)


def _shrink_proxy(proxy: Pooler, b: Budget, alloc: float, assumption: str) -> list[Proposal]:
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
        reason=(f"pool maximum floor({_n(max_conn)} max_connections x {percent} / 100) = "
                f"{math.floor(max_conn * percent / 100)} server connections, within its "
                f"share of {_n(math.floor(alloc))}; set the same on the proxy in AWS "
                "(modify-db-proxy-target-group): the declaration only describes it"),
        assumption=assumption, edit=_edit(source, _n(old.value), str(percent)),
        manual=(f"set MaxConnectionsPercent to {percent} on the proxy's target group in AWS "
                "(aws rds modify-db-proxy-target-group --connection-pool-config "
                f"MaxConnectionsPercent={percent}); the declaration only describes it"))]


def _pooler_named(topo: Topology, name: str) -> Pooler | None:
    return next((p for p in topo.poolers if p.name == name), None)


def _pods(client: Client) -> float:
    from advisor.model import peak_pods

    return peak_pods(client.replicas, client.surge)


def _client_minimum(client: Client, options: AdviseOptions) -> float:
    per_process = options.minimums.get(client.name, 1)
    return _pods(client) * sum(
        per_process * (p.processes.value if p.processes else 1) for p in client.pools
    )


def _pooler_minimum(pooler: Pooler) -> float:
    pairs = max(len(pooler.pairs), 1)
    return pooler.replicas.value * pairs


def _shrink_client(
    client: Client, c: Contribution, alloc: float, assumption: str, options: AdviseOptions,
    notes: list[str],
) -> list[Proposal]:
    pods = _pods(client)
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
        edit = _edit(old.source, _n(old.value), _n(new_size)) or _pool_insert(pool, new_size)
        client.pools[i] = replace(pool, size=replace(old, value=new_size), moves_with=[
            replace(t, value=min(t.value, new_size)) for t in pool.moves_with])
        per = f"{_n(pods)} pods" + (f" x {_n(processes)} processes" if processes != 1 else "")
        proposals.append(
            Proposal(
                kind="client-pool",
                subject=f"{client.name} {pool.label}",
                key=old.source.key or old.label,
                old=old.show(),
                new=_n(new_size),
                reason=(
                    f"{per} x {_n(new_size)} = {_n(pods * processes * new_size)} connections "
                    f"(was {_n(pods * processes * old.value)}), within its share of "
                    f"{_n(math.floor(alloc))}"
                ),
                assumption=assumption,
                edit=edit,
                manual="" if edit is not None else _manual_for(old, new_size),
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
                new=f"pool: {_n(new_size)}", insert=True)


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
            f"{client.name} {pool.label}: not shrunk to {_n(new_size)}: {size.show()} is a "
            "default, and a pool below the threads makes them wait for a connection "
            f"(ActiveRecord::ConnectionTimeoutError); set the threads to {_n(new_size)} "
            "explicitly, then run advise again")
        return None
    for term in pool.moves_with:
        same_line = (term.source.path, term.source.line) == (pool.size.source.path,
                                                            pool.size.source.line)
        if term.value <= new_size or same_line:
            continue  # already within the new size, or the one edit moves both
        if term.source.path is None or term.source.line is None:
            notes.append(
                f"{client.name} {pool.label}: not shrunk to {_n(new_size)}: {term.show()} "
                f"would stay above it (threads wait for a connection: "
                "ActiveRecord::ConnectionTimeoutError) and it is not set at a file line; set "
                f"it to {_n(new_size)} explicitly, then run advise again")
            return None
        out.append(Proposal(
            kind="client-pool", subject=f"{client.name} {term.label}",
            key=term.source.key or term.label, old=term.show(), new=_n(new_size),
            reason=f"moves with {pool.label} ({_n(pool.size.value)} -> {_n(new_size)}): "
                   "one connection per thread, never more threads than pool slots",
            edit=_edit(term.source, _n(term.value), _n(new_size))))
    return out


def _manual_for(term: Term, new: float) -> str:
    return (
        f"{term.label} is a default ({term.source.label()}): set it to {_n(new)} "
        "explicitly in the application's configuration"
    )


def _shrink_pooler(
    pooler: Pooler,
    c: Contribution,
    alloc: float,
    assumption: str,
    target_active: float | None,
) -> list[Proposal]:
    """Per-replica PgBouncer limits so that replicas x server connections <= alloc."""
    from advisor.facts.pgbouncer import _find_database, effective_pool

    replicas = max(pooler.replicas.value + (pooler.surge.value if pooler.surge else 0), 1)
    per_replica = math.floor(alloc / replicas)
    current_per_replica = c.total / replicas if replicas else c.total
    if per_replica >= current_per_replica:
        return []
    why = (
        f"{_n(replicas)} replicas x {_n(per_replica)} = {_n(replicas * per_replica)} server "
        f"connections (was {_n(c.total)})"
    )
    if target_active is not None:
        why += f"; the measured optimum is {_n(target_active)} active connections"
    proposals: list[Proposal] = []
    db_parts = c.parts or [c]
    raw_total = sum(p.total for p in db_parts) or 1
    for part in db_parts:
        db_share = math.floor(per_replica * part.total / raw_total)
        entry = _find_database(pooler, part.who)
        pool_parts = part.parts or []
        users = [pp.who.split("/", 1)[1] for pp in pool_parts if "/" in pp.who]
        pools = [p for p in (effective_pool(pooler, part.who, u) for u in users) if p]
        if not pools:
            continue
        cap = pools[0].max_db_connections
        raw = sum(p.server_max for p in pools)
        if cap.value > 0 and cap.value <= raw:
            # The cap binds: lowering it is the one-value change.
            if db_share < cap.value:
                proposals.append(
                    _pooler_value(
                        pooler, entry, "max_db_connections", cap, db_share, why, assumption
                    )
                )
            continue
        per_pool = max(1, math.floor(db_share / len(pools)))
        for p in pools:
            reserve = p.reserve_pool_size.value if p.reserve_used else 0
            if reserve and per_pool - reserve < 1:
                proposals.append(
                    _pooler_value(
                        pooler, entry, "reserve_pool_size", p.reserve_pool_size, 0, why, assumption
                    )
                )
                reserve = 0
            new_size = max(1, per_pool - int(reserve))
            if new_size < p.pool_size.value:
                key = "default_pool_size"
                proposal = _pooler_value(pooler, entry, key, p.pool_size, new_size, why, assumption)
                if all(x.key != proposal.key or x.subject != proposal.subject for x in proposals):
                    proposals.append(proposal)
    return proposals


def _pooler_value(
    pooler: Pooler,
    entry: PoolerDatabase | None,
    key: str,
    old: Term,
    new: float,
    why: str,
    assumption: str,
) -> Proposal:
    """Change one PgBouncer limit in the topology copy (on the [databases] entry when
    that is where the value came from, else in [pgbouncer]) and say so."""
    new_term = replace(old, value=float(new))
    subject = pooler.name
    entry_attr = {"default_pool_size": "pool_size"}.get(key, key)
    if entry is not None and getattr(entry, entry_attr, None) == old:
        setattr(entry, entry_attr, new_term)
        subject = f"{pooler.name} [databases] {entry.name}"
        manual = f"add `{entry_attr}={_n(new)}` to the {entry.name} line of [databases]"
    else:
        edit = _ini_insert(pooler, key, _n(new)) if old.source.path is None else None
        pooler.settings[key] = _setting_with(pooler.settings.get(key), key, new,
                                             _added_at(edit) or old.source)
        manual = f"add `{key} = {_n(new)}` to the [pgbouncer] section"
        if edit is not None:
            return Proposal(kind="pooler", subject=subject, key=key, old=old.show(),
                            new=_n(new), reason=why, assumption=assumption, edit=edit)
    return Proposal(
        kind="pooler",
        subject=subject,
        key=entry_attr if subject != pooler.name else key,
        old=old.show(),
        new=_n(new),
        reason=why,
        assumption=assumption,
        edit=_edit(old.source, _n(old.value), _n(new)),
        manual="" if old.source.path else manual,
    )


def _setting_with(old: Setting | None, name: str, value: float | str, source: Source) -> Setting:
    raw = _n(value) if isinstance(value, float | int) else value
    if old is None:
        return Setting(name=name, raw=raw, value=value, source=source)
    return replace(old, raw=raw, value=value)


def _bouncer_hazards(topo: Topology) -> list[SqlHazard]:
    """Hazards that break behind PgBouncer (not the forms only RDS Proxy pins on)."""
    from advisor.read.sql.hazards import PINNING_ONLY_KINDS

    return [h for h in topo.sql_hazards if h.kind not in PINNING_ONLY_KINDS]


def _pooler_client_side(topo: Topology, pooler: Pooler, notes: list[str]) -> list[Proposal]:
    from advisor.budget.slots import client_contribution
    from advisor.facts.pgbouncer import effective_setting

    proposals: list[Proposal] = []
    behind = [c for c in topo.clients if c.target_kind == "pooler" and c.target_id == pooler.id]
    mode = effective_setting(pooler.settings, "pool_mode", pooler.version)
    if str(mode.value) == "session" and behind:
        ids = {c.id for c in behind}
        hazards = [h for h in _bouncer_hazards(topo) if h.client_id in ids]
        unmapped = [h for h in _bouncer_hazards(topo) if h.client_id is None]
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
                    edit=_edit(mode.source, mode.raw, "transaction"),
                    manual=""
                    if mode.source.path
                    else "add `pool_mode = transaction` to the [pgbouncer] section",
                )
            )
            pooler.settings["pool_mode"] = _setting_with(
                pooler.settings.get("pool_mode"), "pool_mode", "transaction", mode.source
            )
    if behind:
        clients_total = sum(client_contribution(c).total for c in behind)
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
                        f"{_n(clients_total)} client connections at peak over {_n(replicas)} "
                        f"replica(s) = {needed} per PgBouncer, + 10% headroom: clients past "
                        "max_client_conn are refused"
                    ),
                    assumption="the Service spreads clients evenly over the replicas",
                    edit=_edit(current.source, current.raw, str(new)),
                    manual=""
                    if current.source.path
                    else f"add `max_client_conn = {new}` to the [pgbouncer] section",
                )
            )
            pooler.settings["max_client_conn"] = _setting_with(
                pooler.settings.get("max_client_conn"), "max_client_conn", new, current.source
            )
    return proposals


def _server_settings(
    server: Server,
    b: Budget,
    memory: object,
    notes: list[str],
    standby_peaks: list[float] | None = None,
) -> list[Proposal]:
    """max_connections to what the clients need (when memory is short), then work_mem."""
    from advisor.budget.slots import memory_budget, setting_term

    proposals: list[Proposal] = []
    m = b.memory
    if m is None or m.limit is None or m.total <= m.limit.value:
        return proposals
    limit = m.limit.value
    max_conn = b.max_connections
    reserved = sum(t.value for t in b.reserved)
    counts_max = getattr(memory, "connections", "max_connections") == "max_connections"
    # Standbys take the primary's max_connections (they may not run with less): size it
    # for the busiest of them too.
    busiest = max([b.peak, *(standby_peaks or [])])
    # Room for people and tools (psql, monitoring, migrations) unless the configuration
    # declares its own headroom, which is then already among the reserved terms.
    declared = any("headroom" in t.label for t in b.reserved)
    spare = 0 if declared else max(MIN_HEADROOM, math.ceil(busiest * HEADROOM_SHARE))
    needed = math.ceil(busiest + reserved + spare)
    if counts_max and needed < max_conn.value:
        new_max = int(math.ceil(needed / 5) * 5)
        new_max = min(new_max, max_conn.int_value)
        if new_max < max_conn.value:
            mc_edit, mc_manual = _set_or_insert(server, max_conn.source, "max_connections",
                                                _n(max_conn.value), str(new_max))
            _set_server(server, "max_connections", new_max, str(new_max),
                        _added_at(mc_edit) or max_conn.source)
            proposals.append(
                Proposal(
                    kind="server",
                    subject=server.name,
                    key="max_connections",
                    old=max_conn.show(),
                    new=str(new_max),
                    reason=(
                        f"the clients need {_n(busiest)}"
                        + (" (on the busiest standby)" if busiest > b.peak else "")
                        + f" + {_n(reserved)} reserved"
                        + (f" + {spare} headroom (10%, at least {MIN_HEADROOM}, for psql, "
                           "monitoring and migrations)" if spare else "")
                        + f" = {needed} slots, rounded up to 5s; every slot is memory the "
                        "estimate must cover"
                    ),
                    assumption="memory estimate counts max_connections (PA301 connections)",
                    edit=mc_edit,
                    manual=mc_manual,
                )
            )
    proposals += _cache_settings(server, limit, m.limit.source.label())
    after = memory_budget(server, b.peak, memory)  # type: ignore[arg-type]
    if after is None or after.total <= limit:
        return proposals
    wm = setting_term(server, "work_mem")
    if wm is None or len(after.terms) < 2:
        return proposals
    work_term = after.terms[1]
    rest = after.total - work_term.value
    per_kb = work_term.value / wm.value if wm.value else 0  # bytes per kB of work_mem
    if per_kb <= 0:
        return proposals
    new_kb = math.floor((limit - rest) / per_kb)
    if new_kb < WORK_MEM_MIN_KB:
        notes.append(
            f"work_mem cannot make {server.name} fit its memory limit: shared_buffers, "
            f"backend overhead and autovacuum alone leave {max(new_kb, 0)}kB per sort or hash, "
            f"below PostgreSQL's minimum of {WORK_MEM_MIN_KB}kB; lower max_connections (put "
            "PgBouncer in front) or raise the memory limit"
        )
        return proposals
    # Whole megabytes read better, but below 4MB a megabyte is a quarter of the value:
    # kB there (PostgreSQL takes either).
    new_kb = new_kb - new_kb % 1024 if new_kb >= 4096 else new_kb
    if new_kb >= wm.value:
        return proposals
    new_text = f"{new_kb // 1024}MB" if new_kb % 1024 == 0 else f"{new_kb}kB"
    old_raw = server.settings["work_mem"].raw if "work_mem" in server.settings else _n(wm.value)
    wm_edit, wm_manual = _set_or_insert(server, wm.source, "work_mem", old_raw, new_text)
    _set_server(server, "work_mem", new_kb, new_text, _added_at(wm_edit) or wm.source)
    proposals.append(
        Proposal(
            kind="server",
            subject=server.name,
            key="work_mem",
            old=f"{old_raw} ({wm.source.label()})",
            new=new_text,
            reason=(
                f"(limit {_mib(limit)} ({m.limit.source.label()}) - {_mib(rest)} for "
                f"shared_buffers, backends and autovacuum) / {per_kb / 1024:g} (connections x "
                f"sort/hash nodes x hash_mem_multiplier) = {new_text} per sort or hash"
            ),
            assumption="; ".join(after.assumptions),
            edit=wm_edit,
            manual=wm_manual,
        )
    )
    return proposals


HEADROOM_SHARE = 0.10  # max_connections above the need, when no headroom is declared
MIN_HEADROOM = 5
WORK_MEM_MIN_KB = 64  # guc_tables.c: work_mem's minimum
# pgtune (le0pard/pgtune, configuration.js) for every DB type but desktop, and the
# PostgreSQL docs' "a reasonable starting value for shared_buffers is 25% of the memory
# in your system": shared_buffers = RAM / 4, effective_cache_size = RAM x 3 / 4.
SHARED_BUFFERS_SHARE = 0.25
EFFECTIVE_CACHE_SHARE = 0.75


def _cache_settings(server: Server, limit: float, limit_label: str) -> list[Proposal]:
    """shared_buffers above 25% of the RAM the server has, effective_cache_size above
    75% of it: brought to the pgtune values (whole MB)."""
    from advisor.budget.slots import setting_term

    out: list[Proposal] = []
    for name, share, unit_bytes in (("shared_buffers", SHARED_BUFFERS_SHARE, 8 * KIB),
                                    ("effective_cache_size", EFFECTIVE_CACHE_SHARE, 8 * KIB)):
        term = setting_term(server, name)
        if term is None:
            continue
        current = term.value * unit_bytes
        target_mb = math.floor(limit * share / MIB)
        if current <= target_mb * MIB or target_mb < 1:
            continue
        new_text = f"{target_mb // 1024}GB" if target_mb % 1024 == 0 else f"{target_mb}MB"
        old_raw = server.settings[name].raw if name in server.settings else _mib(current)
        edit, manual = _set_or_insert(server, term.source, name, old_raw, new_text)
        _set_server(server, name, target_mb * MIB // unit_bytes, new_text,
                    _added_at(edit) or term.source)
        out.append(Proposal(
            kind="server", subject=server.name, key=name,
            old=f"{old_raw} ({term.source.label()})", new=new_text,
            reason=(f"{share:.0%} of the {_mib(limit)} the server has ({limit_label}): the "
                    "pgtune starting point (PostgreSQL docs: shared_buffers 25% of RAM; "
                    "effective_cache_size, a planner hint, 75%)"),
            assumption="the memory limit is the server's RAM",
            edit=edit, manual=manual))
    return out


def _set_server(server: Server, name: str, value: float, raw: str, source: Source) -> None:
    old = server.settings.get(name)
    if old is not None and old.source.path is None and source.path is not None:
        server.settings[name] = replace(old, value=int(value), raw=raw, source=source)
    elif old is not None:
        server.settings[name] = replace(old, value=int(value), raw=raw)
    else:
        server.settings[name] = Setting(name=name, raw=raw, value=int(value), source=source)


def _conf_insert(server: Server, name: str, value: str) -> Edit | None:
    """`name = value` added after the last line of the server's postgresql.conf (the
    setting is absent, so nothing later in that file overrides it), when the server has
    one; never as a new `-c` argument."""
    end = server.conf_end
    if end is None or end.path is None or end.line is None:
        return None
    return Edit(path=end.path, line=end.line, key=name, old="", new=f"{name} = {value}",
                insert=True)


def _set_or_insert(server: Server, source: Source, name: str, old: str,
                   new: str) -> tuple[Edit | None, str]:
    """The edit for a server setting (replaced at its line, else added to the conf
    file) and the manual step when neither is possible."""
    if source.path is not None and source.line is not None:
        return _edit(source, old, new), ""
    added = _conf_insert(server, name, new)
    if added is not None:
        return added, ""
    return None, f"set {name} = {new} in postgresql.conf (or as `-c {name}={new}`)"


def _ini_insert(pooler: Pooler, key: str, value: str) -> Edit | None:
    """`key = value` added at the end of the pooler's [pgbouncer] section (the key is
    absent: its default applies), when its pgbouncer.ini was read; not for images
    configured by environment."""
    end = pooler.main_end
    if end is None or end.path is None or end.line is None:
        return None
    return Edit(path=end.path, line=end.line, key=key, old="", new=f"{key} = {value}",
                insert=True)


def _added_at(edit: Edit | None) -> Source | None:
    """Where an inserted setting will be, for the after-budget's labels."""
    if edit is None or not edit.insert:
        return None
    return Source(path=edit.path, key=f"{edit.key} (added after line {edit.line})")


def _edit(source: Source, old: str, new: str) -> Edit | None:
    if source.path is None or source.line is None:
        return None
    return Edit(path=source.path, line=source.line, key=source.key or "", old=old, new=new)


def _mib(value: float) -> str:
    from advisor.budget.arith import size

    return size(value)


def _n(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# --- rendering ---------------------------------------------------------------------------


def render_text(advice: list[ServerAdvice]) -> str:
    if not advice:
        return "Every server fits its connection budget; nothing to propose (use --all)."
    lines: list[str] = []
    for a in advice:
        state = "fits" if a.fits_before else "does not fit"
        lines.append(
            f"== {a.server}: {state} ({_n(a.peak_before)} at peak, {_n(a.usable_before)} usable)"
        )
        lines.append("Before:")
        lines += [f"  {x}" for x in a.before]
        if a.memory_before:
            lines.append(f"  {a.memory_before}")
        if a.proposals:
            lines.append("Proposals:")
            for i, p in enumerate(a.proposals, 1):
                lines.append(f"  {i}. {p.subject}: {p.key} {p.old} -> {p.new}")
                lines.append(f"     why: {p.reason}")
                if p.assumption:
                    lines.append(f"     assumes: {p.assumption}")
                if p.edit is not None and p.edit.insert:
                    lines.append(f"     add: `{p.edit.new}` after {p.edit.path}:{p.edit.line}")
                elif p.edit is not None:
                    lines.append(f"     edit: {p.edit.path}:{p.edit.line}")
                elif p.manual:
                    lines.append(f"     by hand: {p.manual}")
        else:
            lines.append("Proposals: none")
        lines.append("After:")
        lines += [f"  {x}" for x in a.after]
        if a.memory_after:
            lines.append(f"  {a.memory_after}")
        if a.sizing:
            lines.append("Active connections (sizing evidence):")
            lines += [f"  {x}" for x in a.sizing]
        for n in a.notes:
            lines.append(f"note: {n}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
