from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import typer
from typer.testing import CliRunner

from advisor.commands import register_all
from tests.realbouncer import ADMIN_USER, have_pgbouncer, running_pgbouncer
from tests.realpg import free_port, have_postgres, running_postgres

psycopg = pytest.importorskip("psycopg", reason="psycopg (extra 'live') is not installed")

pytestmark = pytest.mark.postgres


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    register_all(app)
    return app


def invoke(*args: str):
    return CliRunner().invoke(_app(), list(args))


def _json(output: str) -> dict:
    return json.loads(output[output.index("{") :])


@pytest.fixture
def pg():
    if not have_postgres():
        pytest.skip("PostgreSQL 15 binaries not installed")
    conf = "max_connections = 20\nidle_in_transaction_session_timeout = 0"
    with running_postgres(conf) as server:
        server.psql("create role app login")
        yield server


@contextmanager
def sessions(dsn: str, n: int, app_name: str) -> Iterator[list]:
    conns = [psycopg.connect(dsn, application_name=app_name) for _ in range(n)]
    try:
        yield conns
    finally:
        for c in conns:
            c.close()


def _wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_server_groups_slots_and_idle_in_transaction(pg):
    with sessions(pg.dsn(user="app"), 3, "checkout") as conns:
        conns[0].execute("select 1")  # not autocommit: left idle in transaction
        r = invoke("inspect", pg.dsn(), "--format", "json")
        assert r.exit_code == 0, r.output
        data = _json(r.output)
    slots = data["server"]["slots"]
    # 20 - 3 superuser_reserved_connections (PG15 has no reserved_connections).
    assert slots["usable"] == 17 and slots["reserved"] == 0
    assert slots["client_backends"] == 3  # our own session is excluded
    groups = {
        (g["usename"], g["application_name"], g["state"]): g["count"]
        for g in data["server"]["groups"]
        if g["backend_type"] == "client backend"
    }
    assert groups == {("app", "checkout", "idle"): 2, ("app", "checkout", "idle in transaction"): 1}
    types = {g["backend_type"] for g in data["server"]["groups"]}
    assert {"checkpointer", "autovacuum launcher"} <= types
    idle = data["server"]["idle_in_transaction"]
    assert len(idle) == 1 and idle[0]["usename"] == "app"
    messages = [s["message"] for s in data["signals"]]
    assert any("idle in transaction" in m and "timeout is 0" in m for m in messages)
    # caught a moment after its statement: below the 60 s threshold, info not warning
    idle_signal = next(s for s in data["signals"] if "idle in transaction" in s["message"])
    assert idle_signal["severity"] == "info"
    assert data["server"]["settings"]["max_connections"]["setting"] == "20"


def test_usable_slots_match_what_the_server_refuses():
    if not have_postgres():
        pytest.skip("PostgreSQL 15 binaries not installed")
    with running_postgres("max_connections = 6") as pg:
        pg.psql("create role app login")
        with sessions(pg.dsn(user="app"), 3, "web"):
            # The oracle: a 4th non-superuser connection is refused, as usable = 6 - 3 says.
            with pytest.raises(psycopg.OperationalError, match="reserved"):
                psycopg.connect(pg.dsn(user="app"))
            r = invoke("inspect", pg.dsn())
        assert r.exit_code == 1, r.output
        assert "6 max_connections - 3 superuser_reserved_connections = 3 usable" in r.output
        assert "error: server: 3 client connections" in r.output and "refused" in r.output


def test_peak_over_samples(pg):
    def open_then_close() -> None:
        with sessions(pg.dsn(user="app"), 4, "burst"):
            time.sleep(0.6)

    t = threading.Thread(target=open_then_close)
    t.start()
    _wait_for(lambda: pg.psql("select count(*) from pg_stat_activity where usename='app'").strip()
              == "4")
    r = invoke("inspect", pg.dsn(), "--samples", "8", "--interval", "0.2", "--format", "json")
    t.join()
    assert r.exit_code == 0, r.output
    slots = _json(r.output)["server"]["slots"]
    assert slots["client_backends_peak"] == 4
    assert slots["client_backends"] == 0  # the burst had gone by the last sample


def test_non_superuser_view_is_flagged(pg):
    r = invoke("inspect", pg.dsn(user="app"), "--format", "json")
    assert r.exit_code == 0, r.output
    data = _json(r.output)
    assert data["server"]["superuser"] is False and data["server"]["can_see_all"] is False
    assert any("pg_read_all_stats" in s["message"] for s in data["signals"])


def test_unreachable_is_a_clear_error():
    r = invoke("inspect", f"host=127.0.0.1 port={free_port()} dbname=postgres connect_timeout=2")
    assert r.exit_code == 2
    assert "cannot connect to PostgreSQL" in r.output and "Traceback" not in r.output


def test_needs_a_target():
    r = invoke("inspect")
    assert r.exit_code == 2 and "give a PostgreSQL DSN" in r.output


@pytest.mark.pgbouncer
def test_pgbouncer_waiting_clients_under_load(pg):
    if not have_pgbouncer():
        pytest.skip("PgBouncer not installed")
    ini = f"[databases]\nappdb = host=127.0.0.1 port={pg.port} dbname=postgres\n"
    extra = {"pool_mode": "transaction", "default_pool_size": "2", "max_client_conn": "50"}
    with running_pgbouncer(ini, users=["app"], extra=extra) as bouncer:

        def slow_query() -> None:
            dsn = bouncer.dsn("appdb", "app")
            with psycopg.connect(dsn, autocommit=True, application_name="batch") as c:
                c.execute("select pg_sleep(2)")

        load = [threading.Thread(target=slow_query) for _ in range(6)]
        for t in load:
            t.start()
        try:
            _wait_for(
                lambda: any(
                    p["database"] == "appdb" and int(p["cl_waiting"]) >= 3
                    for p in bouncer.admin_dicts("SHOW POOLS")
                )
            )
            admin = f"postgresql://{ADMIN_USER}@127.0.0.1:{bouncer.port}/pgbouncer"
            r = invoke("inspect", pg.dsn(), "--pgbouncer", admin, "--format", "json")
        finally:
            for t in load:
                t.join()
    assert r.exit_code == 0, r.output
    data = _json(r.output)
    b = data["pgbouncer"]
    assert b["version"].startswith("PgBouncer 1.")
    assert b["config"]["pool_mode"] == "transaction" and b["config"]["default_pool_size"] == "2"
    (pool,) = [p for p in b["pools"] if p["database"] == "appdb"]
    assert pool["user"] == "app" and pool["pool_mode"] == "transaction"
    assert pool["cl_waiting"] >= 3 and pool["sv_active"] == 2
    assert pool["maxwait_seconds"] > 0
    (db,) = [d for d in b["databases"] if d["name"] == "appdb"]
    assert db["port"] == pg.port
    assert any(s["database"] == "appdb" for s in b["stats"])
    warn = [s for s in data["signals"] if s["subject"] == "pgbouncer appdb/app"]
    assert warn and warn[0]["severity"] == "warning" and "too small" in warn[0]["message"]
    # The server sees exactly the pool's two server connections for the batch load.
    batch = [
        g for g in data["server"]["groups"]
        if g["application_name"] == "batch" and g["backend_type"] == "client backend"
    ]
    assert sum(g["count"] for g in batch) == 2


@pytest.mark.pgbouncer
def test_repo_disagreements(pg, tmp_path):
    if not have_pgbouncer():
        pytest.skip("PgBouncer not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "postgresql.conf").write_text(
        "max_connections = 50\nwork_mem = 8MB\nshared_buffers = 128MB\n"
    )
    (repo / "pgbouncer.ini").write_text(
        "[databases]\nappdb = host=127.0.0.1 dbname=postgres\n\n"
        "[pgbouncer]\npool_mode = transaction\ndefault_pool_size = 30\nmax_client_conn = 500\n"
    )
    ini = f"[databases]\nappdb = host=127.0.0.1 port={pg.port} dbname=postgres\n"
    extra = {"pool_mode": "transaction", "default_pool_size": "5"}
    with running_pgbouncer(ini, users=["app"], extra=extra) as bouncer:
        admin = f"host=127.0.0.1 port={bouncer.port} dbname=pgbouncer user={ADMIN_USER}"
        r = invoke("inspect", pg.dsn(), "--pgbouncer", admin, "--repo", str(repo),
                   "--format", "json")
    assert r.exit_code == 0, r.output
    data = _json(r.output)
    found = {(d["subject"].split()[0], d["key"]): d for d in data["disagreements"]}
    # Live server: max_connections 20 (test conf), work_mem 4MB and shared_buffers 128MB
    # (the defaults initdb leaves).
    assert found[("server", "max_connections")]["repo_value"] == "50"
    assert found[("server", "max_connections")]["live_value"] == "20"
    assert found[("server", "max_connections")]["repo_source"] == "postgresql.conf:1"
    assert found[("server", "work_mem")]["repo_value"] == "8MB"
    assert found[("server", "work_mem")]["live_value"] == "4096kB = 4MB"
    assert ("server", "shared_buffers") not in found  # 128MB = 16384 x 8kB: units agree
    bouncer_keys = {k for s, k in found if s == "pgbouncer"}
    assert bouncer_keys == {"default_pool_size", "max_client_conn"}
    assert found[("pgbouncer", "default_pool_size")]["live_value"] == "5"
    assert found[("pgbouncer", "max_client_conn")]["live_value"] == "100"  # PgBouncer default


def test_repo_that_does_not_exist_is_exit_2_before_connecting(tmp_path):
    port = free_port()  # nothing listens: the check must come first
    r = invoke("inspect", f"postgresql://x@127.0.0.1:{port}/db", "--repo",
               str(tmp_path / "missing"))
    assert r.exit_code == 2
    assert "--repo" in r.output and "no such file or directory" in r.output


@pytest.mark.pgbouncer
def test_inspect_proposes_a_pool_size_and_names_its_file(pg, tmp_path):
    """Clients queue behind a pool of 2 on the real PgBouncer: inspect proposes 2 + the
    clients that waited, within the server's free slots, at the repository's line."""
    if not have_pgbouncer():
        pytest.skip("PgBouncer not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pgbouncer.ini").write_text(
        "[databases]\nappdb = host=127.0.0.1 dbname=postgres\n\n"
        "[pgbouncer]\npool_mode = transaction\ndefault_pool_size = 2\nmax_client_conn = 50\n")
    ini = f"[databases]\nappdb = host=127.0.0.1 port={pg.port} dbname=postgres\n"
    extra = {"pool_mode": "transaction", "default_pool_size": "2", "max_client_conn": "50"}
    with running_pgbouncer(ini, users=["app"], extra=extra) as bouncer:

        def slow_query() -> None:
            with psycopg.connect(bouncer.dsn("appdb", "app"), autocommit=True) as c:
                c.execute("select pg_sleep(2)")

        load = [threading.Thread(target=slow_query) for _ in range(5)]
        for t in load:
            t.start()
        try:
            _wait_for(lambda: any(p["database"] == "appdb" and int(p["cl_waiting"]) >= 3
                                  for p in bouncer.admin_dicts("SHOW POOLS")))
            admin = f"postgresql://{ADMIN_USER}@127.0.0.1:{bouncer.port}/pgbouncer"
            r = invoke("inspect", pg.dsn(), "--pgbouncer", admin, "--repo", str(repo),
                       "--format", "json")
        finally:
            for t in load:
                t.join()
    assert r.exit_code == 0, r.output
    data = _json(r.output)
    (pool,) = [p for p in data["pgbouncer"]["pools"] if p["database"] == "appdb"]
    (proposal,) = data["proposals"]
    assert (proposal["database"], proposal["current"]) == ("appdb", 2)
    # 2 + the clients that waited (3 of the 5), within 17 usable - the peak in use
    assert proposal["proposed"] == 2 + max(pool["cl_waiting"], pool["cl_waiting_peak"])
    assert proposal["key"] == "default_pool_size"
    assert proposal["where"] == "pgbouncer.ini:6"
    assert "waited" in proposal["reason"] and "pool-advisor sweep" in proposal["reason"]
