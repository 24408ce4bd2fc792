"""Budget oracle: real PostgreSQL 15 behind real PgBouncer 1.18 in transaction mode.

More clients than pools hold `pg_sleep`; we sample pg_stat_activity (client backends of
the test users only) every 25 ms. The server connection count must reach, and never
exceed, `server_side_max` computed from the parsed ini: per pool pool_size + reserve,
db1 capped by its max_db_connections, u2 capped by max_user_connections.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from advisor.fs import Root
from advisor.model import BouncerVersion
from advisor.pgbouncer import effective_pool, server_side_max
from advisor.sources.pgbouncer_ini import pooler_from_ini, read_pgbouncer_ini
from tests.realbouncer import have_pgbouncer, running_pgbouncer
from tests.realpg import have_postgres, running_postgres

pytestmark = [
    pytest.mark.pgbouncer,
    pytest.mark.postgres,
    pytest.mark.skipif(not have_pgbouncer(), reason="pgbouncer binary not installed"),
    pytest.mark.skipif(not have_postgres(), reason="PostgreSQL 15 binaries not installed"),
]

INI = """\
[databases]
db1 = host=127.0.0.1 port={port} dbname=db1 max_db_connections=6
db2 = host=127.0.0.1 port={port} dbname=db2

[users]
u2 = max_user_connections=5

[pgbouncer]
pool_mode = transaction
default_pool_size = 5
reserve_pool_size = 2
reserve_pool_timeout = 0.3
max_client_conn = 200
"""
PAIRS = [("db1", "u1"), ("db2", "u1"), ("db2", "u2")]
CLIENTS_PER_PAIR = 10
SLEEP_S = 3.0


def _sample(pg_dsn: str, stop: threading.Event) -> list[Counter[tuple[str, str]]]:
    import psycopg

    samples: list[Counter[tuple[str, str]]] = []
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        while not stop.is_set():
            rows = conn.execute(
                "SELECT datname, usename FROM pg_stat_activity"
                " WHERE backend_type = 'client backend' AND usename IN ('u1', 'u2')"
            ).fetchall()
            samples.append(Counter((r[0], r[1]) for r in rows))
            time.sleep(0.025)
    return samples


def _client(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"SELECT pg_sleep({SLEEP_S})")


def test_server_connections_reach_but_never_exceed_server_side_max(tmp_path) -> None:
    pytest.importorskip("psycopg")
    with running_postgres("max_connections = 60") as pg:
        pg.psql("CREATE ROLE u1 LOGIN; CREATE ROLE u2 LOGIN;")
        pg.psql("CREATE DATABASE db1")
        pg.psql("CREATE DATABASE db2")
        text = INI.format(port=pg.port)
        with running_pgbouncer(text, users=["u1", "u2"]) as pgb:
            (tmp_path / "pgbouncer.ini").write_text(pgb.ini_text)
            ini = read_pgbouncer_ini(
                Root.of(tmp_path), "pgbouncer.ini", version=BouncerVersion(major=1, minor=18)
            )
            assert not ini.problems, ini.problems
            pooler = pooler_from_ini(ini, id="pgb", name="pgbouncer")
            expected = server_side_max(pooler, PAIRS)
            assert expected.total == 6 + 7 + 5  # db1 capped at 6; u2 capped at 5
            db1_cap = effective_pool(pooler, "db1", "u1")
            assert db1_cap is not None and db1_cap.max_db_connections.int_value == 6

            stop = threading.Event()
            with ThreadPoolExecutor(max_workers=1 + CLIENTS_PER_PAIR * len(PAIRS)) as pool:
                sampler = pool.submit(_sample, pg.dsn(), stop)
                clients = [
                    pool.submit(_client, pgb.dsn(db, user))
                    for db, user in PAIRS
                    for _ in range(CLIENTS_PER_PAIR)
                ]
                deadline = time.monotonic() + SLEEP_S * 4 + 10
                for c in clients:
                    c.result(timeout=max(1.0, deadline - time.monotonic()))
                stop.set()
                samples = sampler.result(timeout=10)
    totals = [sum(s.values()) for s in samples]
    assert max(totals) == expected.total, (max(totals), expected.note)
    assert all(t <= expected.total for t in totals)
    assert max(s[("db1", "u1")] for s in samples) == 6  # max_db_connections
    assert max(s[("db2", "u2")] for s in samples) == 5  # max_user_connections
    assert max(s[("db2", "u1")] for s in samples) == 7  # pool_size 5 + reserve 2
