"""Shared by the PA4xx rules: the pool mode a hazard's client runs under, and the finding.

Pool mode of a route (PgBouncer semantics, [real] 1.18 and docs): the [users] entry's
pool_mode wins over the [databases] entry's, which wins over [pgbouncer] pool_mode,
whose default is `session`. A client whose route does not name the database or user
is checked against the strictest entry that could apply, and the message says so.
A hazard not mapped to a client (client_id None) is checked against the strictest
mode among the poolers it may run behind (unmapped_poolers: those some workload
connects through, or all of them while a workload's route is not known), and the
message says that too. Either is an assumption: behind a pooler no workload of the
repository is known to connect through, the finding is a warning that says the route
is assumed (build_finding); nothing the repository holds puts the code there.

The (database, user) -> pool resolution is advisor.facts.pgbouncer.effective_pool (forced
users, the `*` fallback, repeated entries, version differences), defaults come from
advisor.facts.pgbouncer.bouncer_default for the pooler's version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from msgspec import Struct
from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import (
    Client,
    Finding,
    Fix,
    Location,
    Pooler,
    RelatedLocation,
    Route,
    Severity,
    Source,
    SqlHazard,
    Topology,
)

MODE_RANK = {"session": 0, "transaction": 1, "statement": 2}


class RouteMode(Struct, frozen=True):
    """The pool mode one route through one pooler gets, and why."""

    pooler: Pooler
    mode: str
    scope: str  # "[users] batch", "[databases] appdb", "[pgbouncer]", "default"
    source: Source
    note: str = ""  # e.g. why the strictest candidate was taken
    # The client's route is not known (a Secret's URL) and this pooler was taken as the
    # one it may reach: an assumption, said in the finding (build_finding)
    assumed: bool = False

    @property
    def rank(self) -> int:
        return MODE_RANK.get(self.mode, 0)

    def describe(self) -> str:
        known = managed_facts(self.pooler)
        if known is not None:
            # its mode is the provider's host/port rule, not a default (audit 55: it read
            # "(default, default: Supabase shared pooler ...)")
            text = (f"{known.title} {self.pooler.name} in {self.mode} mode "
                    f"({known.rule}: {known.mode_doc})")
        else:
            text = (f"PgBouncer {self.pooler.name} in {self.mode} mode "
                    f"({self.scope}, {self.source.label()})")
        return f"{text}; {self.note}" if self.note else text


def managed_facts(pooler: Pooler):  # -> advisor.facts.managed_poolers.ManagedPooler | None
    """The provider facts of a managed pooler (kind "managed"); None for any other."""
    if pooler.kind != "managed":
        return None
    from advisor.facts.managed_poolers import of

    return of(pooler.managed)


def pooler_title(pooler: Pooler) -> str:
    """How a finding names a pooler the PA4xx rules check: "PgBouncer <name>" (deployed
    or declared), "Supabase Supavisor (transaction mode, port 6543) <host>" (managed)."""
    known = managed_facts(pooler)
    if known is not None:
        return f"{known.title} ({known.brief}) {pooler.name}"
    return f"PgBouncer {pooler.name}"


def _mode_of(setting: object) -> str:
    value = getattr(setting, "value", None)
    return str(value).strip().lower() if value is not None else "session"


_UNKNOWN_USER = "\x00unknown user"  # matches no [users] entry


def effective_mode(pooler: Pooler, dbname: str | None, user: str | None) -> RouteMode | None:
    """pool_mode for (dbname, user): [users] over [databases] over [pgbouncer] over the
    default; None when PgBouncer would refuse the database (no entry, no `*`)."""
    # PgBouncer's and the SQL scanner's modules are imported where a pooler or a hazard
    # is there to look at: a repository without them skips their start-up cost
    from advisor.facts.pgbouncer import effective_pool_mode, effective_setting

    if not pooler.databases:  # e.g. an operator's pooler: only the global mode is known
        setting = effective_setting(pooler.settings, "pool_mode", pooler.version)
        scope = "default" if setting.source.path is None else "[pgbouncer]"
        return RouteMode(pooler, _mode_of(setting), scope, setting.source)
    found = effective_pool_mode(pooler, dbname if dbname is not None else "*",
                                user or _UNKNOWN_USER)
    if found is None:
        return None
    setting = found
    user_entry = next((u for u in pooler.users if u.pool_mode == setting), None)
    db_entry = next((d for d in pooler.databases if d.pool_mode == setting), None)
    if user_entry is not None:
        scope = f"[users] {user_entry.name}"
    elif db_entry is not None:
        scope = f"[databases] {db_entry.name}"
    elif setting.source.path is not None:
        scope = "[pgbouncer]"
    else:
        scope = "default"
    return RouteMode(pooler, _mode_of(setting), scope, setting.source)


def candidate_modes(pooler: Pooler, dbname: str | None, user: str | None) -> list[RouteMode]:
    """Every mode a route may get when its database or user is not known. None for an
    RDS Proxy: it has no pool modes (PA411 checks its pinning list instead)."""
    if pooler.kind not in ("pgbouncer", "managed"):
        return []
    dbs = [dbname] if dbname is not None else [d.name for d in pooler.databases] or [None]
    users = [user] if user is not None else [u.name for u in pooler.users] + [None]
    modes = (effective_mode(pooler, d, u) for d in dbs for u in users)
    return [m for m in modes if m is not None]


def strictest(modes: Iterable[RouteMode]) -> RouteMode | None:
    best: RouteMode | None = None
    for m in modes:
        if best is None or m.rank > best.rank:
            best = m
    return best


def client_route_mode(topology: Topology, client_id: str) -> RouteMode | None:
    client = topology.client(client_id)
    if client is None or client.target_kind != "pooler" or client.target_id is None:
        return None
    pooler = topology.pooler(client.target_id)
    if pooler is None:
        return None
    routes: list[Route | None] = [*client.routes()] or [None]
    modes: list[RouteMode] = []
    unknown = False
    for route in routes:
        dbname = route.dbname if route else None
        user = route.user if route else None
        unknown = unknown or dbname is None or user is None
        modes.extend(candidate_modes(pooler, dbname, user))
    chosen = strictest(modes)
    if chosen is not None and unknown and len({m.mode for m in modes}) > 1:
        chosen = RouteMode(
            chosen.pooler,
            chosen.mode,
            chosen.scope,
            chosen.source,
            f"{client.name}'s database or user is not known, so the strictest entry is used",
        )
    return chosen


def repo_strictest_mode(topology: Topology, poolers: Iterable[Pooler] | None = None
                        ) -> RouteMode | None:
    modes = [m for p in (topology.poolers if poolers is None else poolers)
             for m in candidate_modes(p, None, None)]
    return strictest(modes)


def unmapped_poolers(topology: Topology) -> list[Pooler]:
    """The poolers code tied to no workload may run behind: it runs in some workload of
    the repository, whose route may be theirs. Every pooler when no workload is read
    (nothing says where the code runs) or one is not placed at all (an ERB template);
    else those some workload may reach (may_reach): a pooler that every workload is
    known to bypass is on no route of this code."""
    clients = topology.clients
    if not clients or topology.unplaced_clients:
        return list(topology.poolers)
    return [p for p in topology.poolers if any(may_reach(c, p) for c in clients)]


_NOT_A_HOST = lazy(r"[$%{}<>\s]")  # a placeholder, a template or a variable


def may_reach(client: Client, pooler: Pooler) -> bool:
    """Whether `client` may connect through `pooler`: it is linked to it; or its target
    is not known and its host is not either (from a Secret, a placeholder), or may name
    it (a host that resolves to nothing here but is named like the pooler: its Service
    may be outside the repository). A client linked to a server, going through Pgpool-II,
    or naming a host that is not the pooler's does not."""
    if client.target_kind is not None and client.target_id is not None:
        return client.target_kind == "pooler" and client.target_id == pooler.id
    if client.via:
        return False
    hosts = [r.host for r in client.routes()] or [client.route.host if client.route else None]
    names = {pooler.name.lower(), *(h.lower().split(".", 1)[0] for h in pooler.hosts)}
    for host in hosts:
        if host is None or not host.strip() or _NOT_A_HOST.search(host):
            return True
        label = host.strip().lower().split(".", 1)[0]
        if label in names or "bouncer" in label or "pool" in label:
            return True
    return False


def bypassed_notice(topology: Topology) -> str | None:
    """The notice for a transaction/statement-mode pooler that code tied to no workload
    is not checked against (unmapped_poolers left it out), once; None when none is."""
    unmapped = [h for h in topology.sql_hazards if h.client_id is None]
    if not unmapped:
        return None
    kept = {p.id for p in unmapped_poolers(topology)}
    skipped = []
    for p in topology.poolers:
        mode = strictest(candidate_modes(p, None, None))
        if p.id not in kept and mode is not None and mode.rank >= MODE_RANK["transaction"]:
            skipped.append(f"{pooler_title(p)} ({mode.mode} mode, {p.location.label()})")
    if not skipped:
        return None
    first = unmapped[0].location.label()
    count = len({(h.kind, h.location.path, h.location.line) for h in unmapped})
    return (f"{', '.join(skipped)}: no workload of the repository connects through it "
            f"(each goes to a server or a host that is not it), so {count} pooling "
            f"hazard(s) in code tied to no workload (first: {first}) are not checked "
            "against it (PA4xx); if a workload running that code does use it, declare its "
            "source ([[workloads]] source = ...)")


def hazard_mode(topology: Topology, hazard: SqlHazard, memo: dict | None = None
                ) -> tuple[RouteMode | None, bool]:
    """(mode the hazard runs under, whether it was checked against the repository's
    strictest mode: unmapped code, or a client whose route is not resolved). `memo`
    keeps the answer per client for one pass over the hazards (a client has many)."""
    if memo is None:
        return _hazard_mode(topology, hazard)
    key = hazard.client_id
    if key not in memo:
        memo[key] = _hazard_mode(topology, hazard)
    return memo[key]


def _hazard_mode(topology: Topology, hazard: SqlHazard) -> tuple[RouteMode | None, bool]:
    if hazard.client_id is not None:
        route = client_route_mode(topology, hazard.client_id)
        client = topology.client(hazard.client_id)
        if route is None and client is not None and _route_unresolved(topology, client.id):
            fallback = repo_strictest_mode(
                topology, [p for p in topology.poolers if may_reach(client, p)])
            if fallback is not None:
                note = (
                    f"{client.name}'s route to a server is not resolved, so the strictest "
                    "pool mode in the repository is used"
                )
                return replace(fallback, note=note, assumed=True), False
        return route, False
    return repo_strictest_mode(topology, unmapped_poolers(topology)), True


def _route_unresolved(topology: Topology, client_id: str) -> bool:
    """A client whose target (a server or a pooler) is not known; a client that goes
    straight to a server is resolved and breaks on no pooler."""
    client = topology.client(client_id)
    return client is not None and (client.target_kind is None or client.target_id is None)


def is_suppressed(hazard: SqlHazard, code: str, name: str) -> bool:
    marks = {c.strip().lower() for c in hazard.suppressed}
    return bool(marks & {code.lower(), name.lower(), "all"})


Breaks = Callable[[SqlHazard, RouteMode], str | None]


def by_place(hazards: Iterable[SqlHazard]) -> list[list[SqlHazard]]:
    """Hazards grouped by where they are written: a folder several workloads run from
    gives one hazard per workload (advisor.read.sql.extract.assign_clients), reported once."""
    groups: dict[tuple, list[SqlHazard]] = {}
    for h in hazards:
        key = (h.kind, h.location.path, h.location.line, h.location.column)
        groups.setdefault(key, []).append(h)
    return list(groups.values())


def hazard_findings(
    topology: Topology,
    *,
    code: str,
    name: str,
    severity: Severity,
    kinds: frozenset[str],
    min_mode: str = "transaction",
    breaks: Breaks | None = None,
    consequence: str,
    fix: Breaks | None = None,
) -> Iterator[Finding]:
    """One finding per place of a hazard of `kinds` whose route's pool mode is at least
    `min_mode` (the strictest route when several workloads run that code; the others
    are related locations).

    `breaks(hazard, route)` may refine: it returns the reason it breaks on that pooler
    (appended to the message) or None when that pooler copes (e.g. PgBouncer 1.21+
    tracking protocol-level prepared statements). `fix(hazard, route)` may give the fix
    for that pooler (its kind and version) instead of the hazard kind's HAZARD_FIXES."""
    wanted = (h for h in topology.sql_hazards if h.kind in kinds)
    modes: dict = {}  # client id -> its hazard_mode: the same for each of its hazards
    by_id: dict[str, list[tuple[int, Client]]] | None = None
    for group in by_place(wanted):
        if is_suppressed(group[0], code, name):
            continue
        hits: list[tuple[SqlHazard, RouteMode, bool, str]] = []
        for hazard in group:
            route, unmapped = hazard_mode(topology, hazard, modes)
            if route is None or route.rank < MODE_RANK[min_mode]:
                continue
            reason = breaks(hazard, route) if breaks else ""
            if reason is not None:
                hits.append((hazard, route, unmapped, reason))
        if not hits:
            continue
        hazard, route, unmapped, reason = max(hits, key=lambda hit: hit[1].rank)
        found = build_finding(code, name, severity, hazard, route, unmapped, consequence,
                              reason, topology=topology,
                              fix_text=fix(hazard, route) if fix else None)
        if by_id is None:
            by_id = _clients_by_id(topology)
        workloads = _workload_locations(by_id, [hit[0] for hit in hits])
        if len(workloads) > 1:
            found = replace(found, related=found.related + tuple(workloads))
        yield found


def _clients_by_id(topology: Topology) -> dict[str, list[tuple[int, Client]]]:
    """Client id -> (position, client): built once per rule, not a scan per place."""
    out: dict[str, list[tuple[int, Client]]] = {}
    for i, c in enumerate(topology.clients):
        out.setdefault(c.id, []).append((i, c))
    return out


def _workload_locations(by_id: dict[str, list[tuple[int, Client]]], hazards: list[SqlHazard]
                        ) -> list[RelatedLocation]:
    ids = {h.client_id for h in hazards if h.client_id is not None}
    found = sorted((hit for i in ids for hit in by_id.get(i, ())), key=lambda hit: hit[0])
    return [
        RelatedLocation(location=c.location, message=f"runs this code: workload {c.name}")
        for _, c in found
    ]


def build_finding(
    code: str,
    name: str,
    severity: Severity,
    hazard: SqlHazard,
    route: RouteMode,
    unmapped: bool,
    consequence: str,
    reason: str = "",
    *,
    topology: Topology | None = None,
    fix_text: str | None = None,
) -> Finding:
    """The finding; with `topology`, one whose route is assumed (code tied to no
    workload, or a workload whose route is not resolved) behind a pooler no workload of
    the repository is known to connect through is a warning that says so: nothing the
    repository holds puts that code behind that pooler."""
    from advisor.read.sql.hazards import HAZARD_FIXES

    what, fix = HAZARD_FIXES.get(hazard.kind, (hazard.kind, ""))
    if fix_text:
        fix = fix_text
    origin = "" if hazard.origin == "sql" else f" ({hazard.origin})"
    via = route.describe()
    if unmapped:
        via = (
            f"{via}: not mapped to a workload, so checked against the strictest pool mode "
            "in the repository"
        )
    message = f"{what}{origin} `{hazard.detail}` runs through {via}: {consequence}"
    if reason:
        message = f"{message}; {reason}"
    if (unmapped or route.assumed) and topology is not None and \
            not _known_through(topology, route.pooler):
        message = (f"{message}; the route is assumed: no workload of the repository is "
                   f"known to connect through {route.pooler.name} (a warning until one "
                   "is; declare the workload's [[workloads]] target to settle it)")
        if severity.rank > Severity.warning.rank:
            severity = Severity.warning
    related = []
    mode_at = route.source.location()
    if mode_at is not None:
        related.append(RelatedLocation(location=mode_at, message=f"pool_mode = {route.mode}"))
    related.append(
        RelatedLocation(location=route.pooler.location, message=pooler_title(route.pooler))
    )
    return Finding(
        code=code,
        name=name,
        severity=severity,
        message=message,
        location=Location(
            path=hazard.location.path, line=hazard.location.line, column=hazard.location.column
        ),
        related=tuple(related),
        fix=Fix(description=fix) if fix else None,
        subject=f"{hazard.kind}|{hazard.detail}|{route.pooler.id}",
    )


def _known_through(topology: Topology, pooler: Pooler) -> bool:
    """Whether some workload's route is known to go through `pooler`."""
    return any(c.target_kind == "pooler" and c.target_id == pooler.id
               for c in topology.clients)


# --- PgBouncer settings the PA4xx rules read -----------------------------------------


def setting_int(pooler: Pooler, key: str) -> tuple[int, Source]:
    """The [pgbouncer] value of `key` (or the version's default) as an int."""
    from advisor.facts.pgbouncer import UnknownSetting, effective_setting

    try:
        setting = effective_setting(pooler.settings, key, pooler.version)
    except UnknownSetting:
        return 0, Source.default_of(f"absent in {pooler.version.cite()}", key=key)
    try:
        return int(str(setting.value).strip()), setting.source
    except ValueError:
        return 0, setting.source


def setting_list(pooler: Pooler, key: str) -> list[str]:
    """A comma-separated [pgbouncer] value (or the version's default), lowercased."""
    from advisor.facts.pgbouncer import UnknownSetting, effective_setting

    try:
        setting = effective_setting(pooler.settings, key, pooler.version)
    except UnknownSetting:
        return []
    return [p.strip().lower() for p in str(setting.value).split(",") if p.strip()]
