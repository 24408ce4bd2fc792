"""Is the sweep's target a PgBouncer, and how many server connections did each step use?

Through a pooler, pgbench's client count is not what the server runs at once: 64
clients through default_pool_size 8 are 8 server connections. The USL describes the
server, so its N must be the server-side active connections.

Detection asks PgBouncer's admin console (the virtual `pgbouncer` database) with the
sweep's own credentials, or `--pooler-admin DSN`:
- `SHOW VERSION` answers: PgBouncer, and SHOW POOLS can be sampled (the user is in
  admin_users or stats_users);
- `FATAL: not allowed`: PgBouncer, but this user may not use its console (checked
  against PgBouncer 1.18: a user outside admin_users/stats_users gets exactly this);
- `database "pgbouncer" does not exist` (or SHOW VERSION unknown): PostgreSQL itself.
A differing port alone (`inet_server_port()` vs the DSN's) is not used: a container
port mapping gives the same difference without any pooler.
"""

from __future__ import annotations

import threading
from typing import Literal

from pydantic import BaseModel, ConfigDict

SAMPLE_SECONDS = 0.25  # SHOW POOLS interval during a step


class PoolerProbe(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["postgresql", "pgbouncer", "unknown"]
    version: str = ""  # "PgBouncer 1.18.0"
    admin: bool = False  # SHOW POOLS can be read
    database: str = ""  # the pooler database the sweep's DSN names
    detail: str = ""  # why, in words


def _conninfo(dsn: str, **changes: str) -> tuple[str, dict[str, str]]:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    return make_conninfo(dsn, **changes) if changes else dsn, params


def probe(dsn: str, admin_dsn: str | None = None) -> PoolerProbe:
    """What answers at `dsn`: PostgreSQL, PgBouncer (with or without its console)."""
    try:
        import psycopg
    except ImportError:
        return PoolerProbe(kind="unknown", detail="psycopg is not installed: cannot tell a "
                           "PgBouncer from PostgreSQL (pip install 'pool-advisor[live]')")
    try:
        _, params = _conninfo(dsn)
        console, _ = _conninfo(admin_dsn or dsn, dbname="pgbouncer")
    except psycopg.Error as exc:
        return PoolerProbe(kind="unknown", detail=f"DSN not understood: {exc}")
    database = params.get("dbname") or params.get("user") or ""
    try:
        with psycopg.connect(console, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute("SHOW VERSION").fetchone()
    except psycopg.OperationalError as exc:
        text = str(exc)
        if "not allowed" in text:
            return PoolerProbe(kind="pgbouncer", database=database, detail=(
                "PgBouncer (its admin console answered `not allowed` to this user): "
                "SHOW POOLS cannot be read; pass --pooler-admin with a user in admin_users "
                "or stats_users"))
        if 'database "pgbouncer" does not exist' in text:
            return PoolerProbe(kind="postgresql", database=database,
                               detail="PostgreSQL (no PgBouncer admin console)")
        return PoolerProbe(kind="unknown", database=database,
                           detail=f"PgBouncer admin console probe failed: {text.strip()}")
    except psycopg.Error as exc:  # SHOW VERSION on PostgreSQL: unknown parameter
        return PoolerProbe(kind="postgresql", database=database,
                           detail=f"PostgreSQL (SHOW VERSION: {str(exc).strip()})")
    version = str(row[0]) if row else ""
    if not version.startswith("PgBouncer"):
        return PoolerProbe(kind="postgresql", database=database,
                           detail=f"PostgreSQL (a database named pgbouncer; {version})")
    return PoolerProbe(kind="pgbouncer", version=version, admin=True, database=database,
                       detail=f"{version}: server-side active connections from SHOW POOLS")


class ActiveSampler:
    """Samples SHOW POOLS sv_active (summed over the users of `database`) every
    SAMPLE_SECONDS in a thread while a step runs."""

    def __init__(self, admin_dsn: str, database: str) -> None:
        self.console, _ = _conninfo(admin_dsn, dbname="pgbouncer")
        self.database = database
        self.samples: list[int] = []
        self.error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ActiveSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.console, autocommit=True, connect_timeout=5) as conn:
                while not self._stop.is_set():
                    cur = conn.execute("SHOW POOLS")
                    names = [d.name for d in cur.description or []]
                    active = 0
                    for row in cur.fetchall():
                        pool = dict(zip(names, row, strict=False))
                        if pool.get("database") == self.database:
                            active += int(pool.get("sv_active") or 0)
                    self.samples.append(active)
                    self._stop.wait(SAMPLE_SECONDS)
        except (psycopg.Error, OSError) as exc:
            self.error = str(exc).strip()

    def mean(self) -> float | None:
        # the first sample is taken while pgbench is still connecting: left out
        kept = self.samples[1:] or self.samples
        return sum(kept) / len(kept) if kept else None

