"""Querying a live PostgreSQL (pg_settings, pg_stat_activity) and PgBouncer's admin
console (SHOW CONFIG / DATABASES / POOLS / STATS), sampled, into `inspect`'s records."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from advisor.live.dsn import mask_dsn, scrub
from advisor.live.inspect_records import (
    ActivityGroup,
    BouncerDatabase,
    BouncerLive,
    BouncerPool,
    IdleInTransaction,
    LiveError,
    LiveSetting,
    ServerLive,
    Slots,
)

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
