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
   cap binds, else pool_size / default_pool_size and reserve_pool_size, the reserve
   given up first (opened only after reserve_pool_timeout);
3. poolers in session mode are proposed transaction mode unless a hazard of a client
   behind them forbids it; max_client_conn is sized to the clients behind each replica;
4. where a memory limit is known, max_connections is brought down to what the clients
   need, shared_buffers and autovacuum_work_mem to the pgtune shares of the limit and
   work_mem to what fits it (a note when nothing does);
5. the target number of active server connections is stated from the sizing evidence:
   (cores x 2) + spindles as a floor, or the USL fit of a sweep when one is given.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.advise.allocation import fit_slots
from advisor.advise.memory import server_settings
from advisor.advise.pooler_limits import pooler_client_side
from advisor.advise.records import (
    AdviseOptions,
    Edit,
    NewFile,
    Proposal,
    ServerAdvice,
    edit_at,
    num,
)
from advisor.advise.rulefixes import rule_fixes
from advisor.advise.serve import serve_databases
from advisor.live.sizing import Recommendation, recommend_active_connections
from advisor.model import Budget, Server, Topology

if TYPE_CHECKING:
    from advisor.rules import Registry


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
        if b.refused is not None:  # no slots to fit anything into until it starts
            out.append(_refused(b))
            continue
        # A client counted at 0 is no unknown: a pod that runs nothing that connects
        # (GitLab's idle toolbox, Dify's beat) or none at peak (replicas 0); an unknown
        # one is counted at least 1 and listed. A client whose server is not known may
        # be this one's: sizes shared out without it would be wrong too.
        if b.unknown_clients or b.unplaced_clients:
            out.append(_withheld(b, b.unknown_clients, b.unplaced_clients))
            continue
        # A server that fits is listed only for a one-value rule fix (or a note why
        # not); those are computed once, inside _advise_server.
        # nothing connects to a server left no slots only by max_wal_senders (before
        # 12): nothing to fit, as for one that fits
        only_for_rules = (b.fits or b.no_room_once_streaming) and not options.all_servers \
            and not _memory_over(b) and not b.unserved
        advice = _advise_server(topo, server, b, options, memory, registry,
                                only_for_rules=only_for_rules)
        if advice is not None:
            out.append(advice)
    return out


def _withheld(b: Budget, unknown: list[str], unplaced: list[str]) -> ServerAdvice:
    """No proposal for a server whose clients are not all counted: sizes shared out
    without them would be wrong, and max_connections sized to a floor too small."""
    from advisor.budget.arith import peak_expr, usable_expr

    why = []
    if unknown:
        why.append(f"the connections of {', '.join(dict.fromkeys(unknown))} are not known "
                   "(PA106)")
    if unplaced:
        why.append(f"{', '.join(dict.fromkeys(unplaced))} may connect to it (their server "
                   "is not known)")
    lines = [f"usable: {usable_expr(b)}", f"peak: {peak_expr(b)}"]
    return ServerAdvice(
        server=b.server, server_id=b.server_id, fits_before=False, usable_before=b.usable,
        peak_before=b.peak, unknown=list(dict.fromkeys([*unknown, *unplaced])), before=lines,
        floor_before=b.peak_is_floor,
        fits_after=False, usable_after=b.usable, peak_after=b.peak, after=lines,
        notes=[f"proposals withheld for {b.server}: {' and '.join(why)}, so the peak is a "
               "floor and any size shared out without them would be wrong; declare them "
               "as [[workloads]] in .pool-advisor.toml ([[tool.pool-advisor.workloads]] in "
               "pyproject.toml) with connections = N or target = the server, or point "
               "pool-advisor at their source (source = \"...\")"],
        memory_before=_memory_line(b), memory_after=_memory_line(b))


def _refused(b: Budget) -> ServerAdvice:
    """A server PostgreSQL refuses to start (PA109): what to change first, and no
    proposal, since pools shared out of 0 usable slots would be sized to nothing."""
    from advisor.budget.arith import derivation

    lines = derivation(b)
    return ServerAdvice(
        server=b.server, server_id=b.server_id, fits_before=False, usable_before=0,
        peak_before=b.peak, floor_before=b.peak_is_floor, will_not_start=first_change(b),
        before=lines, fits_after=False, usable_after=0, peak_after=b.peak, after=lines,
        notes=[f"no pool sizes are proposed for {b.server}: it has no slots to share out "
               "until it starts; run advise again once it does"],
        memory_before=_memory_line(b), memory_after=_memory_line(b))


def first_change(b: Budget) -> str:
    """What to change first for a server that does not start: the configuration error
    at its line (PostgreSQL stops at it before it looks at the slots), else
    max_connections raised past the slots the other compared settings take plus the
    peak, or those settings lowered."""
    r = b.refused
    assert r is not None
    if not r.terms:
        where = r.location.label() if r.location is not None else b.location.label()
        return f"fix {where} first: {r.message}"
    mc, *others = r.terms
    need = sum(t.value for t in others) + b.peak
    taken = " + ".join(t.show() for t in others)
    lower = " or ".join(t.label for t in others if t.value) or "those"
    return (f"raise max_connections {mc.show()} first, to at least {num(need)} = {taken} "
            f"+ {num(b.peak)} at peak; or lower {lower}")


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
    from advisor.budget.arith import (
        contribution_lines,
        no_room_text,
        peak_expr,
        unserved_text,
        usable_expr,
    )
    from advisor.budget.slots import server_budget

    after_topo = copy.deepcopy(topo)
    after_server = after_topo.server(server.id)
    assert after_server is not None
    proposals: list[Proposal] = []
    notes: list[str] = []
    sizing = _sizing(server, options)
    target_active = _target_active(sizing)

    # 0: the databases a PgBouncer refuses its clients served (PA213): the steps after
    # size the server with those clients' pools, not without them
    proposals += serve_databases(after_topo, after_server)
    served = b
    if proposals:
        served = server_budget(after_server, after_topo, memory)  # type: ignore[arg-type]
    # then a transaction-mode PgBouncer for direct clients past what the server should
    # run (not when the user shapes the pools' shares: --weight, --min, their declarations)
    pooled = _new_pooler(after_topo, after_server, served, target_active, notes,
                         options.chart_dirs, options.kustomizations) \
        if options.new_pooler and not (options.weights or options.minimums) else []
    proposals += pooled
    # 1-2: fit the slots.
    if (not (served.fits or served.no_room_once_streaming) or options.all_servers) \
            and not pooled:
        proposals += fit_slots(after_topo, server, served, options, target_active, notes)
    # 3: pooler modes and client limits.
    for pooler in after_topo.poolers:
        if pooler.server_id == server.id and pooler.kind == "pgbouncer":
            proposals += pooler_client_side(after_topo, pooler, notes)
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
        proposals += server_settings(after_server, mid, memory, notes, standby_peaks)
    # 5: timeouts, lifetimes and a single PgBouncer (PA5xx, PA210): one value each
    rule_notes: list[str] = []
    fixes = rule_fixes(after_topo, after_server, memory, rule_notes, registry)
    if only_for_rules and not fixes and not rule_notes and not b.unserved:
        return None
    proposals += fixes
    notes += rule_notes
    after = server_budget(after_server, after_topo, memory)  # type: ignore[arg-type]

    def lines(x: Budget) -> list[str]:
        out = [f"usable: {usable_expr(x)}", f"peak: {peak_expr(x)}"]
        for c in x.contributions:
            out += ["  " + ln for ln in contribution_lines(c)]
        if x.fits and x.unserved:  # a fit without the clients PgBouncer refuses (PA213)
            verdict = unserved_text(len(x.unserved))
        elif x.fits:
            verdict = "fits"
        elif x.no_room_once_streaming:  # peak 0: not over (PA101)
            verdict = no_room_text(x)
        elif x.peak_is_floor and x.peak <= x.usable:
            # a floor within the usable slots: neither fits nor over ("does not fit:
            # 96 > 97" was false)
            verdict = (f"cannot tell: >= {num(x.peak)} at peak (a floor) vs "
                       f"{num(x.usable)} usable")
        else:
            verdict = (f"does not fit: {'>= ' if x.peak_is_floor else ''}{num(x.peak)} > "
                       f"{num(x.usable)}")
        out.append(verdict)
        return out

    return ServerAdvice(
        server=server.name,
        server_id=server.id,
        fits_before=b.fits,
        unserved=len(b.unserved),
        floor_before=b.peak_is_floor,
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
                notes: list[str], chart_dirs: list[str],
                kustomized: dict[str, tuple[str, int | None]]) -> list[Proposal]:
    """The PgBouncer to add (advisor.advise.pooler), applied to `topo` (a copy), and the
    client hosts to point at it."""
    from advisor.advise.pooler import apply_to, propose_pooler

    new = propose_pooler(topo, server, b, target_active, chart_dirs, kustomized)
    if new is None:
        return []
    apply_to(topo, server, new)
    out = [Proposal(
        kind="pooler", subject=new.name, key="PgBouncer (new)", old="none",
        new=new.path, reason="; ".join(new.reasons),
        assumption="transaction pooling suits the clients: pool-advisor checks their SQL and "
                   "drivers for session features (PA4xx) once the pooler is there",
        manual=f"add {new.path}; create the pgbouncer-userlist Secret (userlist.txt)"
               + (f"; {new.chart_caveat}" if new.chart_caveat else ""),
        new_file=NewFile(path=new.path, text=new.text))]
    listed = _kustomize_listing(new.path, kustomized)
    if listed is not None:
        out.append(listed)
    for client, old, new_host in new.host_edits:
        route = next(p.route for p in client.pools if p.route is not None)
        edit = edit_at(route.source, old, new_host) if route.source else None
        out.append(Proposal(
            kind="client-pool", subject=client.name, key="database host", old=old,
            new=new_host, reason=f"connect through {new.name} instead of {server.name}",
            edit=edit, manual="" if edit is not None else
            f"point {client.name}'s database host at {new_host} (port 5432)"))
    kept = (f"; {', '.join(c.name for c, _why in new.kept)} keep connecting to "
            f"{server.name} itself (Helm hooks and schema migrations take session advisory "
            "locks and run DDL: a transaction-mode pool breaks them), counted on it"
            if new.kept else "")
    notes.append(f"{server.name}: PgBouncer {new.name} proposed instead of smaller pools: the "
                 f"pools stay as they are and queue in PgBouncer{kept}")
    return out


def _kustomize_listing(path: str, kustomized: dict[str, tuple[str, int | None]],
                       ) -> Proposal | None:
    """The new manifest listed in the `resources:` of its folder's kustomization:
    kustomize builds only what is listed (audit 45: andarpratama/banking-api's PgBouncer
    added to k8s/base/ unlisted; check after the diff found no PgBouncer and the client's
    pods in no budget)."""
    folder, _, name = path.rpartition("/")
    found = kustomized.get(folder or ".")
    if found is None:
        return None
    kfile, end = found
    edit = Edit(path=kfile, line=end, key=name, old="", new=f"- {name}", insert=True,
                indent_from=end) if end is not None else None
    return Proposal(
        kind="pooler", subject=name, key="kustomize resources", old="not listed",
        new=f"- {name}",
        reason=f"kustomize builds only the resources {kfile} lists: unlisted, {name} is "
               "never deployed and the clients pointed at it cannot connect",
        edit=edit, manual="" if edit else f"list {name} under resources: in {kfile}")


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
