"""Demand oracle: real PgBouncer 1.18 in front of real PostgreSQL 15 opens no more server
connections than the larger of what its clients hold at once and what min_pool_size
keeps (never their sum: the janitor opens one only while the pool holds fewer than
min_pool_size, pgbouncer_1_18_0 src/janitor.c:494).

A pool far larger than its clients (default_pool_size 20): the clients run statements
back to back and, in between, stay connected while idle. pg_stat_activity (the test
user's client backends, sampled every 20 ms) must reach the bound the budget computes
(advisor.budget.demand, through slots.pooler_contribution) and never pass it.

Scenario "clients": 5 client connections, 5 server connections at most (not 20).
Scenario "min_pool": 1 client connection and min_pool_size 4: the janitor opens 4 (src/
janitor.c check_pool_size), the bound max(1, 4) = 4.
Scenario "min_pool_under": 6 client connections and min_pool_size 4: 6, not 6 + 4.
Scenario "min_pool_equal" (audit 10d D1): 10 client connections and min_pool_size 10
in a pool of 20: 10, not 10 + 10 = 20.
Two processes (two pods): the client's 5 connections on the first, then on the second
(a restart, a rolling update): the first keeps its idle servers (server_idle_timeout,
600 s), so the two hold 10, what the bound counts for 2 processes (5 each), not 5.
pool_size 0 before 1.24: one server connection for the pool's first login.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path

import pytest

from advisor.budget.slots import pooler_contribution
from advisor.model import BouncerVersion, Client, Location, Pool, Route, Source, Term, Topology
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

INI = """\
[databases]
db1 = host=127.0.0.1 port={port} dbname=db1

[pgbouncer]
pool_mode = transaction
default_pool_size = 20
max_client_conn = 100
{extra}
"""
SCENARIOS = {
    # name: (extra settings, client connections, bound, least the server must reach)
    "clients": ("", 5, 5, 5),
    "min_pool": ("min_pool_size = 4", 1, 4, 4),
    "min_pool_under": ("min_pool_size = 4", 6, 6, 6),
    "min_pool_equal": ("min_pool_size = 10", 10, 10, 10),
}
SLEEP_S = 0.3
WINDOW_S = 3.0


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    with running_postgres("max_connections = 60") as server:
        server.psql("CREATE ROLE u1 LOGIN")
        server.psql("CREATE DATABASE db1")
        yield server


def _sample(dsn: str, until: float) -> list[int]:
    import psycopg

    counts = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < until:
            counts.append(conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                " AND usename = 'u1'").fetchone()[0])
            time.sleep(0.02)
    return counts


def _client(dsn: str, stop: threading.Event) -> None:
    import psycopg

    with suppress(psycopg.Error), psycopg.connect(dsn, autocommit=True, connect_timeout=10) as c:
        while not stop.is_set():
            c.execute(f"SELECT pg_sleep({SLEEP_S})")
            time.sleep(SLEEP_S / 3)  # connected and idle: its server connection is freed


def _bound(ini_text: str, tmp_path: Path, connections: int, processes: int = 1) -> float:
    (tmp_path / "pgbouncer.ini").write_text(ini_text)
    ini = read_pgbouncer_ini(Root.of(tmp_path), "pgbouncer.ini",
                             version=BouncerVersion(major=1, minor=18))
    assert not ini.problems, ini.problems
    pooler = pooler_from_ini(ini, id="pgb", name="pgbouncer", replicas=Term(
        label="PgBouncer processes", value=processes, source=Source(path="pgb.yaml")))
    pooler.pairs = [("db1", "u1")]
    client = Client(id="Deployment/app", name="app", location=Location(path="app.yaml"),
                    replicas=Term(label="replicas", value=1, source=Source(path="app.yaml")),
                    pools=[Pool(label="declared", size=Term(
                        label="connections", value=connections, source=Source(
                            path="app.yaml")))],
                    route=Route(host="pgbouncer", dbname="db1", user="u1",
                                source=Source(path="app.yaml")),
                    target_kind="pooler", target_id="pgb")
    topo = Topology()
    topo.poolers.append(pooler)
    topo.clients.append(client)
    assert pooler_contribution(pooler).total == 20 * processes  # the pools alone
    return pooler_contribution(pooler, topo).total


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_server_connections_never_pass_what_the_clients_ask_for(pg: PgServer, scenario: str,
                                                                 tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    extra, connections, bound, least = SCENARIOS[scenario]
    with running_pgbouncer(INI.format(port=pg.port, extra=extra), users=["u1"]) as pgb:
        assert _bound(pgb.ini_text, tmp_path, connections) == bound
        stop = threading.Event()
        pool = ThreadPoolExecutor(max_workers=1 + connections)
        sampler = pool.submit(_sample, pg.dsn(), time.monotonic() + WINDOW_S)
        clients = [pool.submit(_client, pgb.dsn("db1", "u1"), stop)
                   for _ in range(connections)]
        counts = sampler.result(timeout=WINDOW_S + 10)
        stop.set()
        for c in clients:
            c.result(timeout=SLEEP_S + 10)
        pool.shutdown()
    assert max(counts) <= bound, counts
    assert max(counts) >= least, counts


def _count(pg: PgServer) -> int:
    import psycopg

    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
                            "'client backend' AND usename = 'u1'").fetchone()[0]


def _hold(dsn: str, n: int) -> None:
    """n connections, each in a transaction at once (n server connections), then gone."""
    import psycopg

    conns = [psycopg.connect(dsn, autocommit=True, connect_timeout=10) for _ in range(n)]
    for c in conns:
        c.execute("BEGIN")
        c.execute("SELECT 1")
    for c in conns:
        c.execute("COMMIT")
        c.close()


def test_a_client_that_moves_to_another_process_leaves_its_servers_open(
        pg: PgServer, tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    ini = INI.format(port=pg.port, extra="")
    with running_pgbouncer(ini, users=["u1"]) as first, \
            running_pgbouncer(ini, users=["u1"]) as second:
        _hold(first.dsn("db1", "u1"), 5)
        _hold(second.dsn("db1", "u1"), 5)
        time.sleep(0.3)
        held = _count(pg)
        bound = _bound(first.ini_text, tmp_path, 5, processes=2)
    assert held == 10 and bound == 10, (held, bound)


def test_pool_size_0_opens_one_before_1_24(pg: PgServer, tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    import psycopg

    ini = INI.format(port=pg.port, extra="").replace("dbname=db1", "dbname=db1 pool_size=0")
    with running_pgbouncer(ini.replace("pool_mode = transaction", "pool_mode = session"),
                           users=["u1"]) as pgb:
        (tmp_path / "pgbouncer.ini").write_text(pgb.ini_text)
        found = read_pgbouncer_ini(Root.of(tmp_path), "pgbouncer.ini",
                                   version=BouncerVersion(major=1, minor=18))
        pooler = pooler_from_ini(found, id="pgb", name="pgbouncer")
        pooler.pairs = [("db1", "u1")]
        with psycopg.connect(pgb.dsn("db1", "u1"), autocommit=True,
                             connect_timeout=10) as c:
            c.execute("SELECT 1")
            held = _count(pg)
    assert held == 1 and pooler_contribution(pooler).total == 1, held
