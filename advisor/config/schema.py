"""The project configuration file's schema, validated by pydantic: unknown keys and bad
values are errors that advisor.config.settings reports at their file:line. Imported only when a
configuration file exists; the engine reads the result as `advisor.config.settings.Settings`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
)

from advisor.config.sizes import parse_size


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Lined(Strict):
    """A `[[table]]` block of the configuration file whose values are cited at their
    line."""

    # key -> line in the configuration file, for Sources; filled by load_settings
    # ("" is the block's header line, "settings.work_mem" a key of its sub-table).
    _lines: dict[str, int] = PrivateAttr(default_factory=dict)

    def line_of(self, key: str) -> int | None:
        """The line of `key` in this block, else of the key it is under
        (`settings.work_mem` -> `settings`), else the block's header line."""
        while True:
            if key in self._lines:
                return self._lines[key]
            if "." not in key:
                return self._lines.get("")
            key = key.rsplit(".", 1)[0]


class ServerDecl(Lined):
    """A server that is not in the repository (RDS, Cloud SQL, a VM)."""

    name: str
    hosts: list[str] = Field(default_factory=list)
    max_connections: int | None = None
    superuser_reserved_connections: int | None = None
    reserved_connections: int | None = None
    version: float | None = None  # major (9.6, 10..18); unset: pg-version or assumed
    memory: int | None = None  # bytes
    cpus: float | None = None
    headroom: int | None = None
    settings: dict[str, str | int | float] = Field(default_factory=dict)
    instances: int = 1

    @field_validator("memory", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        return None if v is None else parse_size(v)


class RdsProxyDecl(Lined):
    """A managed connection proxy in front of a declared server (AWS RDS Proxy).

    Defaults are AWS's (ConnectionPoolConfiguration, RDS API reference):
    MaxConnectionsPercent 100 for PostgreSQL, MaxIdleConnectionsPercent half of
    MaxConnectionsPercent (50 when that is not given), 0 <= idle <= max."""

    name: str
    kind: Literal["rds-proxy"]
    hosts: list[str] = Field(default_factory=list)
    target: str  # the name of a declared server
    max_connections_percent: int = Field(default=100, ge=1, le=100)
    max_idle_connections_percent: int | None = Field(default=None, ge=0, le=100)

    @field_validator("max_idle_connections_percent")
    @classmethod
    def _idle_within_max(cls, v: int | None, info: ValidationInfo) -> int | None:
        top = info.data.get("max_connections_percent")
        if v is not None and top is not None and v > top:
            raise ValueError(f"must be at most max_connections_percent ({top}), as AWS requires")
        return v


class PgBouncerDecl(Lined):
    """A PgBouncer the repository does not deploy (a provider's managed pooler, one run on
    a VM): clients whose host is one of `hosts` go through it. Unset keys are PgBouncer's
    own defaults for `version` (advisor.facts.pgbouncer's per-version tables); unset
    `version` is assumed as for any PgBouncer whose version is not read."""

    name: str
    kind: Literal["pgbouncer"]
    hosts: list[str] = Field(default_factory=list)
    target: str  # the name (or id) of a declared server or a server of the repository
    version: str | None = Field(default=None, pattern=r"^1\.\d{1,2}(\.\d+)?$")
    instances: int = Field(default=1, ge=1)  # PgBouncer processes, each with its own pools
    pool_mode: Literal["session", "transaction", "statement"] | None = None
    default_pool_size: int | None = Field(default=None, ge=0)
    max_db_connections: int | None = Field(default=None, ge=0)
    max_client_conn: int | None = Field(default=None, ge=1)
    max_prepared_statements: int | None = Field(default=None, ge=0)
    idle_transaction_timeout: float | None = Field(default=None, ge=0)  # seconds (PA504)

    @field_validator("max_prepared_statements")
    @classmethod
    def _known_in_version(cls, v: int | None, info: ValidationInfo) -> int | None:
        # PgBouncer refuses to start on a parameter its version does not have (1.21.0
        # added max_prepared_statements): such a declaration describes no real pooler
        version = info.data.get("version")
        if v is not None and version is not None:
            from advisor.facts.pgbouncer import introduced_in

            since = introduced_in("max_prepared_statements")
            minor = int(version.split(".")[1])
            if since is not None and (1, minor) < since:
                raise ValueError(f"PgBouncer {version} has no max_prepared_statements "
                                 f"(added in {since[0]}.{since[1]})")
        return v


ProxyDecl = Annotated[RdsProxyDecl | PgBouncerDecl, Field(discriminator="kind")]


class WorkloadDecl(Lined):
    """An explicit per-workload declaration; overrides what was read from files."""

    name: str
    namespace: str | None = None
    pool_size: int | None = Field(default=None, alias="pool-size")
    processes: int | None = None
    # Connections one pod opens at peak, all pools and processes together (for a client
    # whose pools cannot be read: PA106 unknown-client-connections).
    connections: int | None = Field(default=None, ge=0)
    replicas: int | None = None
    target: str | None = None  # a server or pooler name
    # The database and user it connects as, where what it reads leaves them unknown
    # (a URL from a Secret not held): the (database, user) pool it opens behind PgBouncer
    database: str | None = None
    user: str | None = None
    source: str | None = None  # the application's source directory
    # For `advise`: its share of a server's budget, and the pool it must keep.
    weight: float | None = Field(default=None, gt=0)
    min_pool_size: int | None = Field(default=None, alias="min-pool-size", ge=1)


class ChartDecl(Strict):
    """How a Helm chart is deployed: values files and --set values, release, namespace."""

    path: str  # chart folder, relative to the scanned root
    values: list[str] = Field(default_factory=list)  # relative to the chart folder or root
    set: list[str] = Field(default_factory=list)
    release: str = "release"
    namespace: str | None = None


class RuleOptions(Strict):
    model_config = ConfigDict(extra="allow")


class SettingsFile(Strict):
    """`.pool-advisor.toml`, or `[tool.pool-advisor]` of pyproject.toml. Keep in step with
    advisor.config.settings.Settings (a test compares their fields and defaults)."""

    fail_on: Literal["error", "warning", "info"] = Field(default="warning", alias="fail-on")
    select: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    pg_version: int | None = Field(default=None, alias="pg-version")
    headroom: int = 0  # connections kept free on every server unless it says otherwise
    count_surge: bool = Field(default=True, alias="count-surge")
    scan_test_code: bool = Field(default=False, alias="scan-test-code")
    # Logical CPUs of the nodes pods run on: pool sizes derived from the CPU count (pgx,
    # Prisma, gunicorn's 2 x cores + 1) are computed for it; unset, the readers assume 4.
    node_cpus: int | None = Field(default=None, alias="node-cpus", ge=1)
    # Logical CPUs per physical core of those nodes, for the libraries that count physical
    # cores (Prisma <= 6, deadpool < 0.12.3); unset, 1 is assumed (no SMT: the larger pool;
    # 2 for x86 nodes with hyperthreading).
    threads_per_core: int | None = Field(
        default=None, alias="threads-per-core", ge=1, le=8,
        description="Logical CPUs per physical core of the nodes, for pools sized from "
                    "physical cores (Prisma <= 6, deadpool < 0.12.3). Unset: 1 (no SMT: the "
                    "larger pool); set 2 for x86 nodes with hyperthreading.")
    servers: list[ServerDecl] = Field(default_factory=list)
    proxies: list[ProxyDecl] = Field(default_factory=list)
    workloads: list[WorkloadDecl] = Field(default_factory=list)
    charts: list[ChartDecl] = Field(default_factory=list)
    rules: dict[str, dict[str, Any]] = Field(default_factory=dict)
