"""Read a live PostgreSQL (and optionally PgBouncer's admin console) and report usage
against the connection budget.

Only the DSNs the user names are contacted. Everything read is kept as plain data
(`LiveReport`) so the text and JSON reporters, and the comparison with the repository,
are pure functions of it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.live.sweep import mask_dsn, scrub

SETTINGS = (
    "max_connections",
    "superuser_reserved_connections",
    "reserved_connections",  # PostgreSQL 16+
    "max_wal_senders",
    "autovacuum_max_workers",
    "max_worker_processes",
    "max_prepared_transactions",
    "shared_buffers",
    "work_mem",
    "maintenance_work_mem",
    "hash_mem_multiplier",
    "idle_in_transaction_session_timeout",
    "idle_session_timeout",
    "statement_timeout",
    "transaction_timeout",  # PostgreSQL 17+
)
IDLE_IN_TRANSACTION_WARN_SECONDS = 60.0
_UNIT_BYTES = {"B": 1, "kB": 1024, "MB": 1024 * 1024}


def _bytes(n: int) -> str:
    for unit, size in (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2), ("kB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


class LiveError(Exception):
    """A live server or pooler could not be read; the message is for the user."""


class Signal(BaseModel):
    """One observation worth acting on, with the numbers behind it."""

    model_config = ConfigDict(extra="forbid")

    severity: Literal["error", "warning", "info"]
    subject: str  # "server", "pgbouncer appdb/app", ...
    message: str


class LiveSetting(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    setting: str
    unit: str | None = None
    source: str | None = None  # pg_settings.source: default, configuration file, ...
    sourcefile: str | None = None  # visible to superusers and pg_read_all_settings
    sourceline: int | None = None

    def label(self) -> str:
        where = self.source or "unknown"
        if self.sourcefile:
            where = f"{self.sourcefile}:{self.sourceline}" if self.sourceline else self.sourcefile
        return f"{self.shown()}, {where}"

    def shown(self) -> str:
        """The value with its unit: 16384 x 8kB = 128MB, 4096kB = 4MB, 0ms."""
        if not self.unit:
            return self.setting
        m = re.fullmatch(r"(\d*)(B|kB|MB)", self.unit)
        if m is None or not self.setting.lstrip("-").isdigit():
            return f"{self.setting}{self.unit}"
        size = int(self.setting) * int(m.group(1) or 1) * _UNIT_BYTES[m.group(2)]
        base = f"{self.setting} x {self.unit}" if m.group(1) else f"{self.setting}{self.unit}"
        return f"{base} = {_bytes(size)}" if size > 0 else base


class ActivityGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")

    usename: str | None
    application_name: str | None
    state: str | None
    backend_type: str | None
    datname: str | None = None
    count: int
    peak: int = 0  # largest count seen over the samples


class IdleInTransaction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pid: int
    usename: str | None
    application_name: str | None
    datname: str | None
    seconds: float  # since the state changed to idle in transaction
    xact_seconds: float | None


class Slots(BaseModel):
    """Client connection slots: max_connections less the reserved ones, and use of them."""

    model_config = ConfigDict(extra="forbid")

    max_connections: int
    superuser_reserved: int
    reserved: int  # reserved_connections, PostgreSQL 16+; 0 before
    usable: int
    client_backends: int  # now (last sample)
    client_backends_peak: int  # most seen over the samples
    walsenders: int
    other_backends: dict[str, int] = Field(default_factory=dict)

    @property
    def arithmetic(self) -> str:
        parts = [
            f"{self.max_connections} max_connections",
            f"{self.superuser_reserved} superuser_reserved_connections",
        ]
        if self.reserved:
            parts.append(f"{self.reserved} reserved_connections")
        return " - ".join(parts) + f" = {self.usable} usable"


class ServerLive(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str
    version: str
    version_num: int
    current_user: str
    superuser: bool
    settings: dict[str, LiveSetting] = Field(default_factory=dict)
    slots: Slots
    groups: list[ActivityGroup] = Field(default_factory=list)
    idle_in_transaction: list[IdleInTransaction] = Field(default_factory=list)
    can_see_all: bool = True  # pg_read_all_stats: else other roles' state shows as null
    samples: int = 1


class BouncerPool(BaseModel):
    model_config = ConfigDict(extra="forbid")

    database: str
    user: str
    cl_active: int = 0
    cl_waiting: int = 0
    sv_active: int = 0
    sv_idle: int = 0
    sv_used: int = 0
    sv_tested: int = 0
    sv_login: int = 0
    maxwait_seconds: float = 0.0  # maxwait + maxwait_us, the oldest waiting client
    pool_mode: str | None = None
    cl_waiting_peak: int = 0
    maxwait_peak_seconds: float = 0.0

    @property
    def server_connections(self) -> int:
        return self.sv_active + self.sv_idle + self.sv_used + self.sv_tested + self.sv_login


class BouncerDatabase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    host: str | None = None
    port: int | None = None
    database: str | None = None
    pool_size: int | None = None
    reserve_pool: int | None = None
    max_connections: int | None = None  # max_db_connections
    current_connections: int | None = None
    pool_mode: str | None = None


class BouncerLive(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str
    version: str = ""
    config: dict[str, str] = Field(default_factory=dict)
    pools: list[BouncerPool] = Field(default_factory=list)
    databases: list[BouncerDatabase] = Field(default_factory=list)
    stats: list[dict[str, Any]] = Field(default_factory=list)
    samples: int = 1


class Disagreement(BaseModel):
    """A value the repository declares that the live system does not have."""

    model_config = ConfigDict(extra="forbid")

    subject: str  # "server checkout-db", "pgbouncer checkout-pgbouncer"
    key: str
    repo_value: str
    repo_source: str
    live_value: str


class PoolProposal(BaseModel):
    """A pool size to change, from what the pool did while inspect watched it."""

    model_config = ConfigDict(extra="forbid")

    database: str
    user: str
    key: str = "pool_size"  # or default_pool_size, where the repository sets it
    current: int
    proposed: int
    reason: str
    where: str = ""  # the file:line that holds the setting (with --repo)


class LiveReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    tool_version: str
    taken_at: str
    server: ServerLive | None = None
    pgbouncer: BouncerLive | None = None
    signals: list[Signal] = Field(default_factory=list)
    disagreements: list[Disagreement] = Field(default_factory=list)
    proposals: list[PoolProposal] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)


# --- reading -------------------------------------------------------------------------


def _connect(dsn: str, what: str) -> Any:
    try:
        import psycopg
    except ImportError:
        raise LiveError("inspect needs psycopg: pip install 'pool-advisor[live]'") from None
    try:
        return psycopg.connect(
            dsn,
            autocommit=True,
            connect_timeout=10,
            application_name="pool-advisor-inspect",
        )
    except psycopg.Error as exc:
        raise LiveError(f"cannot connect to {what} {mask_dsn(dsn)}: "
                        f"{scrub(_first_line(exc), dsn)}") from None
    except Exception as exc:  # a DSN psycopg cannot even parse: never its text
        raise LiveError(f"cannot connect to {what} {mask_dsn(dsn)}: "
                        f"{scrub(_first_line(exc), dsn)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _rows(conn: Any, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    cur = conn.execute(sql, params) if params is not None else conn.execute(sql)
    if cur.description is None:
        return []
    names = [d.name for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


_ACTIVITY_SQL = """
select usename, application_name, state, backend_type, datname, count(*)::int as count
from pg_stat_activity
where pid <> pg_backend_pid()  -- our own session is not part of the load
group by 1, 2, 3, 4, 5
order by count(*) desc, 1, 2, 3, 4, 5
"""

_IDLE_IN_XACT_SQL = """
select pid, usename, application_name, datname,
       extract(epoch from now() - state_change)::float8 as seconds,
       extract(epoch from now() - xact_start)::float8 as xact_seconds
from pg_stat_activity
where state in ('idle in transaction', 'idle in transaction (aborted)')
  and pid <> pg_backend_pid()
order by state_change
"""


def read_server(
    dsn: str,
    *,
    samples: int = 1,
    interval: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> ServerLive:
    """pg_settings, and pg_stat_activity sampled `samples` times (peaks kept)."""
    import psycopg

    conn = _connect(dsn, "PostgreSQL")
    try:
        with conn:
            head = _rows(
                conn,
                "select current_setting('server_version') as version, "
                "current_setting('server_version_num')::int as num, current_user as who, "
                "(select rolsuper from pg_roles where rolname = current_user) as su, "
                "pg_has_role(current_user, 'pg_read_all_stats', 'member') as all_stats",
            )[0]
            settings = {
                r["name"]: LiveSetting(**r)
                for r in _rows(
                    conn,
                    "select name, setting, unit, source, sourcefile, sourceline "
                    "from pg_settings where name = any(%s)",
                    [list(SETTINGS)],
                )
            }
            peaks: dict[tuple[Any, ...], int] = {}
            groups: list[dict[str, Any]] = []
            client_peak = 0
            for i in range(max(samples, 1)):
                if i:
                    sleep(interval)
                groups = _rows(conn, _ACTIVITY_SQL)
                for g in groups:
                    key = _group_key(g)
                    peaks[key] = max(peaks.get(key, 0), g["count"])
                client_peak = max(client_peak, _count(groups, "client backend"))
            idle = _rows(conn, _IDLE_IN_XACT_SQL)
    except psycopg.Error as exc:
        raise LiveError(f"reading PostgreSQL {mask_dsn(dsn)} failed: "
                        f"{scrub(_first_line(exc), dsn)}") from None

    def num(name: str) -> int:
        s = settings.get(name)
        return int(s.setting) if s is not None else 0

    by_type: dict[str, int] = {}
    for g in groups:
        by_type[g["backend_type"] or "unknown"] = (
            by_type.get(g["backend_type"] or "unknown", 0) + g["count"]
        )
    max_conn = num("max_connections")
    su_res = num("superuser_reserved_connections")
    res = num("reserved_connections")
    seen_groups = {_group_key(g) for g in groups}
    activity = [ActivityGroup(**g, peak=peaks[_group_key(g)]) for g in groups] + [
        # Groups seen in an earlier sample but gone by the last one still count for peaks.
        ActivityGroup(**dict(zip(_GROUP_FIELDS, key, strict=True)), count=0, peak=peak)
        for key, peak in peaks.items()
        if key not in seen_groups
    ]
    return ServerLive(
        target=mask_dsn(dsn),
        version=head["version"],
        version_num=head["num"],
        current_user=head["who"],
        superuser=bool(head["su"]),
        settings=settings,
        slots=Slots(
            max_connections=max_conn,
            superuser_reserved=su_res,
            reserved=res,
            usable=max_conn - su_res - res,
            client_backends=_count(groups, "client backend"),
            client_backends_peak=client_peak,
            walsenders=by_type.get("walsender", 0),
            other_backends={
                k: v for k, v in sorted(by_type.items()) if k not in ("client backend", "walsender")
            },
        ),
        groups=activity,
        idle_in_transaction=[IdleInTransaction(**r) for r in idle],
        can_see_all=bool(head["su"] or head["all_stats"]),
        samples=max(samples, 1),
    )


_GROUP_FIELDS = ("usename", "application_name", "state", "backend_type", "datname")


def _group_key(g: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(g[f] for f in _GROUP_FIELDS)


def _count(groups: Iterable[dict[str, Any]], backend_type: str) -> int:
    return sum(g["count"] for g in groups if g["backend_type"] == backend_type)


def _int(v: Any) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0


def read_pgbouncer(
    dsn: str,
    *,
    samples: int = 1,
    interval: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> BouncerLive:
    """SHOW CONFIG / DATABASES / STATS once, SHOW POOLS `samples` times (peaks kept).

    The admin console takes the simple query protocol only; queries without parameters
    are sent that way by psycopg."""
    import psycopg

    conn = _connect(dsn, "the PgBouncer admin console")
    try:
        with conn:
            version_rows = _rows(conn, "SHOW VERSION")
            version = str(next(iter(version_rows[0].values()))) if version_rows else ""
            config = {
                str(r["key"]): "" if r["value"] is None else str(r["value"])
                for r in _rows(conn, "SHOW CONFIG")
            }
            databases = [
                BouncerDatabase(
                    name=r["name"],
                    host=r.get("host"),
                    port=r.get("port"),
                    database=r.get("database"),
                    pool_size=r.get("pool_size"),
                    reserve_pool=r.get("reserve_pool"),
                    max_connections=r.get("max_connections"),
                    current_connections=r.get("current_connections"),
                    pool_mode=r.get("pool_mode"),
                )
                for r in _rows(conn, "SHOW DATABASES")
            ]
            pools: dict[tuple[str, str], BouncerPool] = {}
            for i in range(max(samples, 1)):
                if i:
                    sleep(interval)
                for r in _rows(conn, "SHOW POOLS"):
                    key = (str(r["database"]), str(r["user"]))
                    wait = _int(r.get("maxwait")) + _int(r.get("maxwait_us")) / 1e6
                    previous = pools.get(key)
                    pool = BouncerPool(
                        database=key[0],
                        user=key[1],
                        cl_active=_int(r.get("cl_active")),
                        cl_waiting=_int(r.get("cl_waiting")),
                        sv_active=_int(r.get("sv_active")),
                        sv_idle=_int(r.get("sv_idle")),
                        sv_used=_int(r.get("sv_used")),
                        sv_tested=_int(r.get("sv_tested")),
                        sv_login=_int(r.get("sv_login")),
                        maxwait_seconds=wait,
                        pool_mode=r.get("pool_mode"),
                    )
                    pool.cl_waiting_peak = max(
                        pool.cl_waiting, previous.cl_waiting_peak if previous else 0
                    )
                    pool.maxwait_peak_seconds = max(
                        wait, previous.maxwait_peak_seconds if previous else 0.0
                    )
                    pools[key] = pool
            stats = [
                {k: (float(v) if hasattr(v, "as_integer_ratio") else v) for k, v in r.items()}
                for r in _rows(conn, "SHOW STATS")
            ]
    except psycopg.Error as exc:
        raise LiveError(f"reading PgBouncer {mask_dsn(dsn)} failed: "
                        f"{scrub(_first_line(exc), dsn)}") from None
    return BouncerLive(
        target=mask_dsn(dsn),
        version=version,
        config=config,
        pools=[p for p in pools.values() if p.database != "pgbouncer"],
        databases=[d for d in databases if d.name != "pgbouncer"],
        stats=[s for s in stats if s.get("database") != "pgbouncer"],
        samples=max(samples, 1),
    )


# --- judging ---------------------------------------------------------------------------


def signals_for(server: ServerLive | None, bouncer: BouncerLive | None) -> list[Signal]:
    out: list[Signal] = []
    if server is not None:
        out += _server_signals(server)
    if bouncer is not None:
        out += _bouncer_signals(bouncer, server)
    return out


def _server_signals(server: ServerLive) -> list[Signal]:
    out: list[Signal] = []
    s = server.slots
    used = max(s.client_backends, s.client_backends_peak)
    share = used / s.usable if s.usable > 0 else 1.0
    peak_note = (
        ""
        if s.client_backends_peak == s.client_backends
        else (f" (peak {s.client_backends_peak} over {server.samples} samples)")
    )
    text = f"{s.client_backends} client connections{peak_note} of {s.arithmetic} ({share:.0%})"
    if used >= s.usable:
        out.append(
            Signal(
                severity="error",
                subject="server",
                message=f"{text}: new non-superuser connections are refused",
            )
        )
    elif share >= 0.8:
        out.append(
            Signal(
                severity="warning",
                subject="server",
                message=f"{text}: little headroom for deploys, psql and migrations",
            )
        )
    else:
        out.append(Signal(severity="info", subject="server", message=text))
    if s.walsenders or s.other_backends:
        others = ", ".join(f"{v} {k}" for k, v in s.other_backends.items())
        out.append(
            Signal(
                severity="info",
                subject="server",
                message=(
                    f"not counted against client slots: {s.walsenders} walsender(s)"
                    + (f", {others}" if others else "")
                    + " (WAL senders have their own slots since PostgreSQL 12; autovacuum and "
                    "background workers never take client slots)"
                ),
            )
        )
    long_idle = [
        i for i in server.idle_in_transaction if i.seconds >= IDLE_IN_TRANSACTION_WARN_SECONDS
    ]
    timeout = server.settings.get("idle_in_transaction_session_timeout")
    timeout_off = timeout is not None and timeout.setting == "0"
    if server.idle_in_transaction:
        longest = max(server.idle_in_transaction, key=lambda i: i.seconds)
        who = ", ".join(
            sorted({f"{i.usename}/{i.application_name or '-'}" for i in server.idle_in_transaction})
        )
        message = (
            f"{len(server.idle_in_transaction)} session(s) idle in transaction ({who}); "
            f"longest {longest.seconds:.0f} s (pid {longest.pid}): each holds a slot, locks "
            "and a snapshot"
        )
        if timeout_off:
            message += "; idle_in_transaction_session_timeout is 0 (off)"
        out.append(
            Signal(
                # a session caught between two statements is idle in transaction for a
                # moment: only one past the threshold is worth a warning
                severity="warning" if long_idle else "info",
                subject="server",
                message=message,
            )
        )
    if not server.can_see_all:
        out.append(
            Signal(
                severity="info",
                subject="server",
                message=(
                    f"{server.current_user} is neither superuser nor in pg_read_all_stats: other "
                    "roles' sessions show no state or application_name"
                ),
            )
        )
    return out


def _bouncer_signals(bouncer: BouncerLive, server: ServerLive | None) -> list[Signal]:
    out: list[Signal] = []
    for p in bouncer.pools:
        subject = f"pgbouncer {p.database}/{p.user}"
        waiting = max(p.cl_waiting, p.cl_waiting_peak)
        wait = max(p.maxwait_seconds, p.maxwait_peak_seconds)
        if waiting or wait > 0:
            size = _pool_size(bouncer, p.database)
            out.append(
                Signal(
                    severity="warning",
                    subject=subject,
                    message=(
                        f"{waiting} client(s) waiting for a server connection (cl_waiting), "
                        f"oldest waiting {wait:.2f} s (maxwait) with {p.sv_active} active server "
                        f"connections of pool_size {size}: the pool is too small for this load, "
                        "or the server is slow to answer"
                    ),
                )
            )
    total = sum(p.server_connections for p in bouncer.pools)
    if server is not None and bouncer.pools:
        out.append(
            Signal(
                severity="info",
                subject="pgbouncer",
                message=(
                    f"{total} server connections open from this PgBouncer across "
                    f"{len(bouncer.pools)} pool(s); the server has "
                    f"{server.slots.usable} usable slots"
                ),
            )
        )
    return out


def _pool_size(bouncer: BouncerLive, database: str) -> str:
    db = next((d for d in bouncer.databases if d.name == database), None)
    if db is not None and db.pool_size is not None:
        return str(db.pool_size)
    return bouncer.config.get("default_pool_size", "?")


def inspect(
    server_dsn: str | None,
    bouncer_dsn: str | None,
    *,
    tool_version: str,
    samples: int = 1,
    interval: float = 1.0,
) -> LiveReport:
    report = LiveReport(
        tool_version=tool_version,
        taken_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    if server_dsn is not None:
        report.server = read_server(server_dsn, samples=samples, interval=interval)
    if bouncer_dsn is not None:
        report.pgbouncer = read_pgbouncer(bouncer_dsn, samples=samples, interval=interval)
    report.signals = signals_for(report.server, report.pgbouncer)
    if report.pgbouncer is not None:
        report.proposals = propose_pool_sizes(report.server, report.pgbouncer)
    return report


def propose_pool_sizes(server: ServerLive | None, bouncer: BouncerLive) -> list[PoolProposal]:
    """A pool whose clients queued (cl_waiting, maxwait) while every server connection
    was busy grows by the clients that waited, within the slots the server has free
    (usable - client connections at their peak). Queueing is the signal: a pool that
    never made anyone wait is not grown, whatever its size."""
    out: list[PoolProposal] = []
    for p in bouncer.pools:
        waiting = max(p.cl_waiting, p.cl_waiting_peak)
        wait = max(p.maxwait_seconds, p.maxwait_peak_seconds)
        size_text = _pool_size(bouncer, p.database)
        if not waiting or not size_text.isdigit() or p.sv_active < int(size_text):
            continue
        current = int(size_text)
        want = current + waiting
        reason = (f"{waiting} client(s) waited (cl_waiting, peak over {bouncer.samples} "
                  f"sample(s)), the oldest {wait:.2f} s (maxwait), with all {current} server "
                  f"connections active: {current} + {waiting} = {want}")
        proposed = want
        if server is not None:
            free = server.slots.usable - server.slots.client_backends_peak
            room = current + max(free, 0)
            if room < want:
                proposed = room
                reason += (f", capped at {room}: the server has {max(free, 0)} free of "
                           f"{server.slots.usable} usable slots ({server.slots.arithmetic})")
        if proposed <= current:
            continue
        reason += ("; measure the server's knee with `pool-advisor sweep` before growing "
                   "further: past it, more connections make every query slower")
        out.append(PoolProposal(database=p.database, user=p.user, current=current,
                                proposed=proposed, reason=reason))
    return out


# --- rendering -----------------------------------------------------------------------


def render_text(report: LiveReport) -> str:
    lines: list[str] = []
    s = report.server
    if s is not None:
        lines.append(
            f"PostgreSQL {s.version} at {s.target} (as {s.current_user}"
            f"{', superuser' if s.superuser else ''})"
        )
        lines.append(
            f"  slots: {s.slots.arithmetic}; in use {s.slots.client_backends} "
            f"client connections (peak {s.slots.client_backends_peak}"
            f" over {s.samples} sample(s))"
        )
        for name in (
            "max_connections",
            "superuser_reserved_connections",
            "reserved_connections",
            "work_mem",
            "shared_buffers",
            "idle_in_transaction_session_timeout",
        ):
            if name in s.settings:
                lines.append(f"  {name} = {s.settings[name].label()}")
        lines.append("  connections by usename / application_name / state / backend_type:")
        for g in s.groups:
            peak = f" (peak {g.peak})" if g.peak != g.count else ""
            lines.append(
                f"    {g.count:>5}{peak}  {g.usename or '-'} / {g.application_name or '-'} / "
                f"{g.state or '-'} / {g.backend_type or '-'}"
            )
    b = report.pgbouncer
    if b is not None:
        lines.append(f"{b.version or 'PgBouncer'} at {b.target}")
        keys = (
            "pool_mode",
            "default_pool_size",
            "reserve_pool_size",
            "max_client_conn",
            "max_db_connections",
            "max_user_connections",
        )
        lines.append("  " + ", ".join(f"{k}={b.config[k]}" for k in keys if k in b.config))
        lines.append(f"  pools (database/user: cl_active sv_active sv_idle at the last "
                     f"sample; cl_waiting maxwait at their peak over {b.samples} sample(s)):")
        for p in b.pools:
            lines.append(
                f"    {p.database}/{p.user}: {p.cl_active} {p.sv_active} {p.sv_idle}; "
                f"{max(p.cl_waiting, p.cl_waiting_peak)} "
                f"{max(p.maxwait_seconds, p.maxwait_peak_seconds):.2f}s ({p.pool_mode or '-'})"
            )
    if report.signals:
        lines.append("")
        for sig in report.signals:
            lines.append(f"{sig.severity}: {sig.subject}: {sig.message}")
    if report.disagreements:
        lines.append("")
        lines.append("Where the live system disagrees with the repository:")
        for d in report.disagreements:
            lines.append(
                f"  {d.subject}: {d.key} = {d.live_value} live, {d.repo_value} in "
                f"the repository ({d.repo_source})"
            )
    if report.proposals:
        lines.append("")
        lines.append("Proposals:")
        for pr in report.proposals:
            where = f" ({pr.where})" if pr.where else ""
            lines.append(f"  {pr.database}/{pr.user}: {pr.key} {pr.current} -> {pr.proposed}"
                         f"{where}")
            lines.append(f"    why: {pr.reason}")
    lines.extend(f"notice: {n}" for n in report.notices)
    return "\n".join(lines)
