"""Typed data passed between the stages: sources -> topology -> rules -> report.

Every number that enters the arithmetic is a `Term`: a value plus the `Source` it came
from (a file:line and key, or a named default). Rules never see a bare int.

Records are msgspec Structs, keyword-only like the pydantic models they replace. Why
not pydantic, nor stdlib dataclasses: defining the classes is most of what a `check` of
a small repository costs, and pre-commit pays it on every commit. pydantic built a
schema per class; dataclasses compile four to six generated methods per class (90 ms
for the 70 on the check path); a Struct class is made in C (about 0.1 ms). pydantic
stays where input is validated (the configuration file: advisor.config.schema), and
can hold these types (see `_Struct.__get_pydantic_core_schema__`). Float fields hold
floats, as the pydantic models made them (`_set_float`).
"""

from __future__ import annotations

from enum import StrEnum
from functools import cache
from typing import Any, Literal

import msgspec
from msgspec import Struct, field
from msgspec.structs import force_setattr


class _Struct(Struct):
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """Let pydantic models hold these records (advise, diff, sweep): validated by
        msgspec from plain data, serialized as plain data."""
        from pydantic_core import core_schema

        def validate(value: Any) -> Any:
            return value if isinstance(value, cls) else msgspec.convert(value, cls)

        return core_schema.no_info_plain_validator_function(
            validate, serialization=core_schema.plain_serializer_function_ser_schema(
                msgspec.to_builtins))


class Frozen(_Struct, frozen=True, gc=False):
    """An immutable value (a Source, a Term): hashable, compared by value. Subclasses say
    `kw_only=True` themselves (msgspec does not inherit it), like every record here.

    Not tracked by the cycle collector (gc=False, which subclasses inherit): 16 bytes
    less per instance (a Source 64 -> 48), and linking makes one or more per env item,
    limit and pool. That is safe because nothing here can close a cycle: fields hold
    strings, numbers, tuples and other Frozen values (SpringProps' dicts and
    ProcessInfo's list hold only those too), never a mutable record."""


class Record(_Struct):
    """A mutable record (a Server being linked, a Topology being built)."""


_INF = float("inf")


def _set_float(obj: Struct, *names: str) -> None:
    """Store int values of float fields as floats (JSON shows 40.0, as documented)."""
    for name in names:
        value = getattr(obj, name)
        if type(value) is int:
            force_setattr(obj, name, float(value))


class Source(Frozen, kw_only=True):
    """Where a value came from: a file position, or a named default."""

    path: str | None = None
    line: int | None = None
    key: str | None = None
    default: str | None = None  # e.g. "PostgreSQL 15 default", "HikariCP default"

    def label(self) -> str:
        if self.default is not None and self.path is None:
            return f"default: {self.default}"
        if self.path is None:
            return "unknown source"
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return where

    def location(self) -> Location | None:
        if self.path is None:
            return None
        return Location(path=self.path, line=self.line)

    @classmethod
    def default_of(cls, who: str, key: str | None = None) -> Source:
        return cls(default=who, key=key)


class Term(Frozen, kw_only=True):
    """One number in a product or sum, e.g. 40 (HPA maxReplicas, k8s/hpa.yaml:9)."""

    label: str
    value: float
    source: Source

    def __post_init__(self) -> None:
        # _set_float's work, inline: every number linking and the budgets record is a Term
        value = self.value
        if type(value) is int:
            try:
                value = float(value)
            except OverflowError:  # 400 digits in a file: no float holds it
                raise _unusable(self) from None
            force_setattr(self, "value", value)
        if value != value or value == _INF or value == -_INF:
            raise _unusable(self)

    @property
    def int_value(self) -> int:
        return int(self.value)

    def show(self) -> str:
        number = _fmt_number(self.value)
        return f"{number} ({self.label}, {self.source.label()})"


def _unusable(term: Term) -> Exception:
    """1e308 summed, 400 digits, inf, nan: reported where the number was written."""
    shown = str(term.value)
    shown = shown if len(shown) <= 24 else f"{shown[:12]}...({len(shown)} characters)"
    return WrongType(Location(path=term.source.path or "<input>", line=term.source.line),
                     f"{term.label} = {shown} is not a usable number (too large, or not "
                     "finite); what depends on it is not counted", program="pool-advisor")


def _fmt_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class Location(Frozen, kw_only=True):
    path: str
    line: int | None = None
    column: int | None = None
    end_line: int | None = None

    def label(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"


class WrongType(Exception):
    """A value of the wrong type or out of range where the real program refuses the whole
    object (kubectl's strict decoding): reported at its file:line as what it is, not as
    an internal error, and the object is skipped."""

    def __init__(self, location: Location, message: str, program: str = "Kubernetes") -> None:
        super().__init__(message)
        self.location = location
        self.message = message
        self.program = program


class RelatedLocation(Frozen, kw_only=True):
    location: Location
    message: str


class Severity(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"

    @property
    def rank(self) -> int:
        return {"info": 1, "warning": 2, "error": 3}[self.value]


class Replacement(Frozen, kw_only=True):
    """A machine-readable one-value edit: set `key` at path:line from `old` to `new`."""

    path: str
    line: int
    key: str
    old: str
    new: str


class Fix(Frozen, kw_only=True):
    description: str
    replacement: Replacement | None = None


class Finding(Frozen, kw_only=True):
    code: str
    name: str
    severity: Severity
    message: str
    location: Location
    related: tuple[RelatedLocation, ...] = ()
    fix: Fix | None = None
    # How the numbers in `message` were reached, one step a line (a budget's arithmetic):
    # the terminal shows it with -v, the PR comment in a collapsible block.
    detail: str = ""
    # Stable identity for "new findings only" and SARIF partialFingerprints: what the
    # finding is about, not the line it sits on.
    subject: str = ""

    @property
    def fingerprint(self) -> str:
        basis = f"{self.code}|{self.location.path}|{self.subject or self.message}"
        return _sha256()(basis.encode()).hexdigest()[:16]


@cache
def _sha256() -> Any:
    """hashlib.sha256 (the same digest) without importing hashlib, which loads OpenSSL
    (2.7 ms of a JSON report's start-up, for a few hundred bytes hashed): CPython's own
    module, `_sha2` since 3.12, `_sha256` before. Cached: a failed import is not kept in
    sys.modules, so trying `_sha2` per finding searched sys.path each time (1,100
    findings: 0.05 s)."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef]
        except ImportError:  # pragma: no cover - a Python without them
            from hashlib import sha256
    return sha256


# --- configuration as read from files -------------------------------------------------


class Setting(Frozen, kw_only=True):
    """A configuration parameter's effective value and the line that set it."""

    name: str
    raw: str  # the text as written (after unquoting, for postgresql.conf)
    value: str | int | float | bool
    unit: str | None = None  # base unit of `value` when numeric: "kB", "8kB", "ms", "s", ...
    source: Source


class ConfigProblem(Frozen, kw_only=True):
    """A problem found while reading a file; `fatal` when the real program refuses it."""

    location: Location
    message: str
    fatal: bool = False
    program: str = ""  # "PostgreSQL", "PgBouncer", "YAML", ...


# ConfigProblem.program of a file that is another tool's template (an Ansible role's
# Jinja, a Go template outside a chart): said as a notice, not a PA901 finding.
TEMPLATE_PROGRAM = "template"

# ConfigProblem.program values whose refusals have rules of their own (PA109, PA209) or
# are a notice (TEMPLATE_PROGRAM): not PA901's, and not a file left unread.
OWN_RULE_PROGRAMS = frozenset({"PostgreSQL", "PgBouncer", TEMPLATE_PROGRAM})


# --- topology ------------------------------------------------------------------------


class Server(Record, kw_only=True):
    """A PostgreSQL server (or a set of identical instances) that clients connect to."""

    id: str
    name: str
    kind: Literal["workload", "external", "operator"] = "workload"
    namespace: str | None = None
    version: Term
    settings: dict[str, Setting] = field(default_factory=dict)
    # The last line of its main postgresql.conf: where advise adds an absent setting.
    conf_end: Source | None = None
    instances: Term
    memory_limit: Term | None = None  # bytes
    cpu_limit: Term | None = None  # cores
    headroom: Term | None = None  # connections the user keeps free (psql, monitoring)
    location: Location
    hosts: list[str] = field(default_factory=list)  # names clients may use to reach it
    role: Literal["primary", "standby"] = "primary"
    primary_id: str | None = None
    suppressed: list[str] = field(default_factory=list)


class PoolerDatabase(Record, kw_only=True):
    """A [databases] entry of pgbouncer.ini (or its operator equivalent)."""

    name: str
    host: str | None = None
    port: int | None = None
    dbname: str | None = None
    user: str | None = None  # forced user, if any
    pool_size: Term | None = None
    min_pool_size: Term | None = None
    reserve_pool_size: Term | None = None
    max_db_connections: Term | None = None
    pool_mode: Setting | None = None
    location: Location


class PoolerUser(Record, kw_only=True):

    name: str
    pool_mode: Setting | None = None
    pool_size: Term | None = None
    max_user_connections: Term | None = None
    location: Location


class BouncerVersion(Frozen, kw_only=True):
    """PgBouncer version; a pair, since 1.9 < 1.18 and floats would say otherwise."""

    major: int = 1
    minor: int = 18
    source: Source = Source(default="assumed: Debian 12 PgBouncer 1.18")

    @property
    def text(self) -> str:
        return f"{self.major}.{self.minor}"

    def at_least(self, major: int, minor: int) -> bool:
        return (self.major, self.minor) >= (major, minor)


class Pooler(Record, kw_only=True):
    """A PgBouncer (or compatible) deployment: config plus how many copies run; or a
    declared AWS RDS Proxy (kind "rds-proxy": no ini, no pool modes; its server side
    is a percentage of its target's max_connections, see advisor.budget.slots)."""

    id: str
    name: str
    kind: Literal["pgbouncer", "rds-proxy"] = "pgbouncer"
    # RDS Proxy only: MaxConnectionsPercent / MaxIdleConnectionsPercent, with sources.
    max_connections_percent: Term | None = None
    max_idle_connections_percent: Term | None = None
    namespace: str | None = None
    replicas: Term
    surge: Term | None = None
    version: BouncerVersion
    settings: dict[str, Setting] = field(default_factory=dict)  # [pgbouncer] section
    main_end: Source | None = None  # its pgbouncer.ini's last [pgbouncer] line (inserts)
    # Configured by environment instead: the image's convention ("bitnami", "edoburu")
    # and the container's first env item, before which advise adds a variable.
    env_style: str = ""
    env_first: Source | None = None
    databases: list[PoolerDatabase] = field(default_factory=list)
    users: list[PoolerUser] = field(default_factory=list)
    # Which (database, user) pairs clients actually use; filled by topology.
    pairs: list[tuple[str, str]] = field(default_factory=list)
    # Clients behind it whose (database, user) is not known here (a URL from a Secret
    # the repository does not hold), one per distinct setting: each may be a pool more
    # than `pairs` counts, so the server's peak is a floor (advisor.link.poolers).
    unnamed_pairs: list[str] = field(default_factory=list)
    server_id: str | None = None
    location: Location
    hosts: list[str] = field(default_factory=list)
    suppressed: list[str] = field(default_factory=list)


class Route(Frozen, kw_only=True):
    """Where a client says it connects: parsed from a URL, PGHOST env, JDBC URL..."""

    host: str | None = None
    port: int | None = None
    dbname: str | None = None
    user: str | None = None
    source: Source


class CpuFormula(Frozen, kw_only=True):
    """A figure a library derives from the machine: max(floor, per_cpu x CPUs + plus).
    pgx: max(4, NumCPU) -> per_cpu=1, floor=4; Prisma: 2 x physical cores + 1;
    gunicorn configs with cpu_count() * 2 + 1 (applies_to="processes")."""

    per_cpu: float = 1
    plus: float = 0
    floor: float = 0
    physical: bool = False  # physical cores (Prisma) rather than logical CPUs
    applies_to: Literal["size", "processes"] = "size"
    text: str = ""  # as the library or config writes it, e.g. "max(4, runtime.NumCPU())"

    def __post_init__(self) -> None:
        _set_float(self, "per_cpu", "plus", "floor")

    def at(self, cpus: float) -> float:
        return max(self.floor, self.per_cpu * cpus + self.plus)


class Pool(Record, kw_only=True):
    """One connection pool inside one process: processes x size connections per pod."""

    label: str  # "HikariCP", "SQLAlchemy", "declared"
    size: Term  # connections one process's pool may open
    processes: Term | None = None  # processes per pod sharing nothing (gunicorn workers)
    route: Route | None = None
    # How `size` was decided: written in config ("fixed"), a driver default ("default"),
    # no limit at all ("unbounded": size is then what the process could reach, or 0), or
    # derived from the machine's CPUs ("cpu": size is for `cpus`, see `note`).
    bound: Literal["fixed", "default", "unbounded", "cpu"] = "fixed"
    note: str = ""  # e.g. "pgx default max(4, NumCPU): NumCPU of the node, not the pod"
    cpus: Term | None = None  # the CPU count a "cpu" size was computed for
    cpu_formula: CpuFormula | None = None  # how to recompute it for another node size
    # Timeouts of the pool, in seconds (PA5xx): "acquire" the longest a caller waits for
    # a connection, "lifetime" the age at which the pool retires a connection (absent:
    # never). A value of 0 means no limit, as the libraries write it.
    timeouts: dict[str, Term] = field(default_factory=dict)
    # Settings that must move with `size` (the threads that check connections out of
    # this pool, or the pool those threads use): more threads than pool slots wait
    # (ActiveRecord::ConnectionTimeoutError). advise edits them together.
    moves_with: list[Term] = field(default_factory=list)
    # Where the setting would be added when `size` is a default (the line to add it
    # after, in the mapping or section that lacks it); None: not known.
    insert_at: Source | None = None

    def per_pod(self) -> float:
        return self.size.value * (self.processes.value if self.processes else 1)


def peak_pods(replicas: Term, surge: Term | None) -> float:
    return replicas.value + (surge.value if surge else 0)


class Client(Record, kw_only=True):
    """An application workload that opens connections."""

    id: str
    name: str
    namespace: str | None = None
    kind: str = "Deployment"
    replicas: Term  # pods at peak: replicas, or the autoscaler's maximum
    surge: Term | None = None  # extra pods a rolling update runs at once (maxSurge)
    pools: list[Pool] = field(default_factory=list)
    target_kind: Literal["server", "pooler"] | None = None
    target_id: str | None = None
    location: Location
    suppressed: list[str] = field(default_factory=list)
    source_dir: str | None = None  # the application source folder, when known
    route: Route | None = None  # where its environment says it connects
    # Its further routes to the same target (Airflow's metadata database and Celery result
    # backend through one PgBouncer): each (database, user) opens its own pooler pool.
    extra_routes: list[Route] = field(default_factory=list)
    # The id of the client this is a part of: the same pods, reaching another target with
    # the pools read for those routes (link.clients._split_by_target); None for a whole one.
    part_of: str | None = None
    # Why its connections per pod could not be determined (what was looked for, where);
    # empty when its pools are known. An unknown client is never counted as 0.
    unknown: str = ""
    # Its pods at peak are unknown too (a release of a chart that is not rendered):
    # `replicas` is then a placeholder that no text shows as a count.
    replicas_unknown: bool = False
    # When its route links to nothing but names a Service of the repository: that Service
    # and why it leads nowhere (PA107 says so instead of "no Service").
    unlinked_service: str = ""

    def routes(self) -> list[Route]:
        """Every route its connections take: its pools' (else its own), then its
        further routes."""
        found = [p.route for p in self.pools if p.route is not None]
        if not found and self.route is not None:
            found = [self.route]
        return found + [r for r in self.extra_routes if r not in found]


class EnvVar(Frozen, kw_only=True):
    """A container environment variable. Secret values are never kept as `value` for
    display; `secret` marks them so reporters do not print them."""

    name: str
    value: str | None = None
    source: Source
    from_ref: str | None = None  # "configmap:name/key", "secret:name/key", "field:..."
    secret: bool = False


class Container(Frozen, kw_only=True):
    name: str
    image: str = ""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    # Where each command item, then each args item, is written (its own list line, or
    # the values-file line a template took it from); empty when not known.
    word_sources: tuple[Source, ...] = ()
    env: tuple[EnvVar, ...] = ()
    # The first item of the container's own `env:` list in a plain manifest (where advise
    # inserts a variable); None when rendered from a template or there is no such list.
    env_first: Source | None = None
    role: Literal["main", "init", "sidecar"] = "main"
    memory_limit: Term | None = None  # bytes
    cpu_limit: Term | None = None  # cores
    source: Source


class SqlHazard(Frozen, kw_only=True):
    """A statement or driver setting that breaks behind transaction/statement pooling."""

    kind: str  # e.g. "session-set", "listen", "advisory-lock", "prepared-statements"
    detail: str  # the statement (shortened) or the setting as written
    location: Location
    origin: str = "sql"  # "sql", "python", "java", "go", "js", "ruby", "driver-setting"
    client_id: str | None = None  # the workload it belongs to, when mapped
    suppressed: tuple[str, ...] = ()


class Topology(Record, kw_only=True, dict=True):

    servers: list[Server] = field(default_factory=list)
    poolers: list[Pooler] = field(default_factory=list)
    clients: list[Client] = field(default_factory=list)
    problems: list[ConfigProblem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    sql_hazards: list[SqlHazard] = field(default_factory=list)
    # Workloads whose connection variable (DATABASE_URL, *_POSTGRES_HOST) has a value not
    # known here (an ExternalSecret's, a SOPS-encrypted one): each may connect to any
    # server, so no server's peak is more than a floor.
    unplaced_clients: list[str] = field(default_factory=list)
    # path -> {line: [codes]} from `pool-advisor: ignore[...]` comments.
    line_suppressions: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    # client id -> its containers' env (not Secrets): hazards written as ERB in
    # database.yml are evaluated with it (advisor.read.sql.drivers.resolve_erb)
    client_env: dict[str, list[EnvVar]] = field(default_factory=dict)

    def server(self, server_id: str) -> Server | None:
        return _first_with_id(self, "servers", server_id)

    def pooler(self, pooler_id: str) -> Pooler | None:
        return _first_with_id(self, "poolers", pooler_id)

    def client(self, client_id: str) -> Client | None:
        return _first_with_id(self, "clients", client_id)


def _first_with_id(topo: Topology, group: str, wanted: str):
    """The first entity of `topo.<group>` with id `wanted`, through an index kept on
    the topology (not a field: never encoded): rules look entities up per client, and
    a scan per lookup was clients x servers. The index is made again when the list is
    another, its length changed, its first or last entity's id changed (ids are renamed
    all at once, by advisor.engine.repository._label_environment), or a hit's id no
    longer matches."""
    entities = getattr(topo, group)
    stamp = (len(entities), entities[0].id, entities[-1].id) if entities else (0,)
    cached = topo.__dict__.get(group)
    if cached is None or cached[0] is not entities or cached[1] != stamp:
        cached = (entities, stamp, _index_by_id(entities))
        topo.__dict__[group] = cached
    found = cached[2].get(wanted)
    if found is not None and found.id != wanted:
        cached = (entities, stamp, _index_by_id(entities))
        topo.__dict__[group] = cached
        found = cached[2].get(wanted)
    return found


def _index_by_id(entities: list) -> dict:
    index: dict = {}
    for e in entities:
        index.setdefault(e.id, e)
    return index


# --- budgets -------------------------------------------------------------------------


class Contribution(Record, kw_only=True):
    """Connections one client or pooler brings to a server at peak: product of factors
    (for a pooler: replicas x the sum of its pools, each already capped)."""

    who: str
    kind: Literal["client", "pooler"]
    # How `factors` combine: "x" product (pods x pool size), "+" sum (pool_size +
    # reserve_pool_size), "min" a cap (min(sum of parts, max_db_connections)).
    op: Literal["x", "+", "min"] = "x"
    factors: list[Term] = field(default_factory=list)
    parts: list[Contribution] = field(default_factory=list)  # e.g. one per pool
    total: float
    location: Location
    note: str = ""
    unknown: bool = False  # a client whose connections per pod are unknown (PA106)

    def __post_init__(self) -> None:
        _set_float(self, "total")


class NotSubtracted(Frozen, kw_only=True):
    term: Term
    why: str


class MemoryBudget(Record, kw_only=True):
    limit: Term | None = None  # bytes
    terms: list[Term] = field(default_factory=list)  # each in bytes
    total: float = 0
    assumptions: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        _set_float(self, "total")


class Budget(Record, kw_only=True):
    """Slot accounting for one server."""

    server_id: str
    server: str
    version: Term
    max_connections: Term
    reserved: list[Term] = field(default_factory=list)
    usable: float
    peak: float  # per instance
    # For a set of standbys behind one Service: the sum over clients, and the instances
    # it is spread over (peak = ceil(total_peak / spread_over)).
    total_peak: float | None = None
    spread_over: Term | None = None
    contributions: list[Contribution] = field(default_factory=list)
    not_subtracted: list[NotSubtracted] = field(default_factory=list)
    memory: MemoryBudget | None = None
    location: Location
    # Clients linked to this server whose connections could not be determined: `peak`
    # is then a floor (peak >= N, K clients unknown), never a fit.
    unknown_clients: list[str] = field(default_factory=list)
    # Clients straight to this server with a pool of no upper limit (PA102): counted at
    # what they were read as, so `peak` is a floor too, never a fit.
    unbounded_clients: list[str] = field(default_factory=list)
    # Poolers in front of it whose clients' (database, user) pairs are not all known:
    # "pg-pooler: (database, user) of 3 clients unknown" (each may open its own pool).
    unknown_pairs: list[str] = field(default_factory=list)
    # Workloads of the run whose server is not known (Topology.unplaced_clients): each
    # may connect here, so `peak` is a floor, never a fit.
    unplaced_clients: list[str] = field(default_factory=list)
    # Files of the run that could not be read (PA901 errors: invalid YAML, a chart Helm
    # cannot render, a kustomization kustomize refuses): what they hold may connect
    # here, so `peak` is a floor, never a fit.
    unread_files: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        _set_float(self, "usable", "peak", "total_peak")

    @property
    def peak_is_floor(self) -> bool:
        """Some linked client's connections are unknown or unbounded, some client's
        server is not known, or some file was not read: the real peak may be higher."""
        return bool(self.unknown_clients or self.unbounded_clients or self.unknown_pairs
                    or self.unplaced_clients or self.unread_files)

    @property
    def fits(self) -> bool:
        """Known to fit: a floor that fits is not a fit."""
        return self.peak <= self.usable and not self.peak_is_floor


class CheckResult(Record, kw_only=True):
    """Everything one `check` run produced; what reporters render."""

    schema_version: int = 1
    tool_version: str
    roots: list[str] = field(default_factory=list)  # the paths given, relative to `root`
    # The repository every path is relative to (absolute; reporters read lines under it).
    # Not in the JSON report, which is the same from every working directory and machine.
    root: str = ""
    # With --changed-files: the files pre-commit passed, relative to `root`.
    focus: list[str] = field(default_factory=list)
    budgets: list[Budget] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    fail_on: Literal["error", "warning", "info"] = "warning"  # from configuration
    # Findings an inline comment or annotation suppressed: counted, and carried as SARIF
    # suppressions, never silently dropped.
    suppressed: list[Finding] = field(default_factory=list)
