"""Budget oracle: real PostgreSQL 15 behind real PgBouncer 1.18 in transaction mode.

More clients than pools hold `pg_sleep`; we sample pg_stat_activity (client backends of
the test users only) every 25 ms. The server connection count must reach, and never
exceed, `server_side_max` computed from the parsed ini.

Scenario "caps": pool_size + reserve per pool, db1 capped by its max_db_connections,
u2 by max_user_connections. Scenario "forced": what the source reading of 1.18 claims
about forced users (a private user object per database: the [users] entry of that name
does not apply, the global max_user_connections caps each database separately) and
that reserve_pool_timeout = 0 disables the reserve pool.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path

import pytest

from advisor.facts.pgbouncer import server_side_max
from advisor.model import BouncerVersion
from advisor.read.fs import Root
from advisor.read.sources.pgbouncer_ini import pooler_from_ini, read_pgbouncer_ini
from tests.realbouncer import have_pgbouncer, running_pgbouncer
from tests.realpg import PgServer, have_postgres, running_postgres

pytestmark = [
    pytest.mark.pgbouncer,
    pytest.mark.postgres,
    pytest.mark.skipif(not have_pgbouncer(), reason="pgbouncer binary not installed"),
    pytest.mark.skipif(not have_postgres(), reason="PostgreSQL 15 binaries not installed"),
]

CAPS = """\
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

FORCED = """\
[databases]
f1 = host=127.0.0.1 port={port} dbname=db1 user=u3 pool_size=4
f2 = host=127.0.0.1 port={port} dbname=db2 user=u3 pool_size=4

[users]
u3 = max_user_connections=2

[pgbouncer]
pool_mode = transaction
reserve_pool_size = 2
reserve_pool_timeout = 0
max_user_connections = 3
max_client_conn = 200
"""

SCENARIOS = {
    # name: (ini, client pairs, expected total, expected max per (datname, usename))
    "caps": (
        CAPS,
        [("db1", "u1"), ("db2", "u1"), ("db2", "u2")],
        6 + 7 + 5,
        {("db1", "u1"): 6, ("db2", "u1"): 7, ("db2", "u2"): 5},
    ),
    "forced": (
        FORCED,
        [("f1", "u1"), ("f2", "u2")],
        3 + 3,
        {("db1", "u3"): 3, ("db2", "u3"): 3},
    ),
}
CLIENTS_PER_PAIR = 9  # more than any pool's pool_size + reserve
SLEEP_S = 1.5
WINDOW_S = 3.0  # sampling; the reserve opens after reserve_pool_timeout 0.3 s


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    with running_postgres("max_connections = 60") as server:
        server.psql("CREATE ROLE u1 LOGIN; CREATE ROLE u2 LOGIN; CREATE ROLE u3 LOGIN;")
        server.psql("CREATE DATABASE db1")
        server.psql("CREATE DATABASE db2")
        yield server


def _sample(pg_dsn: str, users: list[str], until: float) -> list[Counter[tuple[str, str]]]:
    import psycopg

    samples: list[Counter[tuple[str, str]]] = []
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        while time.monotonic() < until:
            rows = conn.execute(
                "SELECT datname, usename FROM pg_stat_activity"
                " WHERE backend_type = 'client backend' AND usename = ANY(%s)",
                [users],
            ).fetchall()
            samples.append(Counter((r[0], r[1]) for r in rows))
            time.sleep(0.025)
    return samples


def _client(dsn: str, stop: threading.Event) -> None:
    import psycopg

    # Clients queued behind full pools get an error when PgBouncer is stopped.
    with suppress(psycopg.Error), psycopg.connect(dsn, autocommit=True, connect_timeout=10) as c:
        while not stop.is_set():
            c.execute(f"SELECT pg_sleep({SLEEP_S})")


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_server_connections_reach_but_never_exceed_server_side_max(
    pg: PgServer, scenario: str, tmp_path: Path
) -> None:
    pytest.importorskip("psycopg")
    template, pairs, total, per_pair = SCENARIOS[scenario]
    with running_pgbouncer(template.format(port=pg.port), users=["u1", "u2", "u3"]) as pgb:
        (tmp_path / "pgbouncer.ini").write_text(pgb.ini_text)
        ini = read_pgbouncer_ini(
            Root.of(tmp_path), "pgbouncer.ini", version=BouncerVersion(major=1, minor=18)
        )
        assert not ini.problems, ini.problems
        pooler = pooler_from_ini(ini, id="pgb", name="pgbouncer")
        expected = server_side_max(pooler, pairs)
        assert expected.total == total, expected.note

        stop = threading.Event()
        pool = ThreadPoolExecutor(max_workers=1 + CLIENTS_PER_PAIR * len(pairs))
        server_users = sorted({user for _, user in per_pair})
        sampler = pool.submit(_sample, pg.dsn(), server_users, time.monotonic() + WINDOW_S)
        clients = [
            pool.submit(_client, pgb.dsn(db, user), stop)
            for db, user in pairs
            for _ in range(CLIENTS_PER_PAIR)
        ]
        samples = sampler.result(timeout=WINDOW_S + 10)
        stop.set()
    # PgBouncer is stopped: queued clients fail, running ones finish their sleep.
    for c in clients:
        c.result(timeout=SLEEP_S + 10)
    pool.shutdown()
    totals = [sum(s.values()) for s in samples]
    assert max(totals) == expected.total, (max(totals), expected.note)
    assert all(t <= expected.total for t in totals)
    for key, most in per_pair.items():
        assert max(s[key] for s in samples) == most, key
