"""What the PA111, PA210 and PA5xx rules warn about, shown on the real PostgreSQL 15 and
PgBouncer 1.18 (issue 18): each test reproduces the failure the rule's documentation
describes, so the rule text is something seen, not believed."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.realbouncer import have_pgbouncer, running_pgbouncer
from tests.realpg import PG_BIN, have_postgres, running_postgres

psycopg = pytest.importorskip("psycopg")

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not have_postgres(), reason="PostgreSQL 15 binaries not installed"),
]
needs_bouncer = pytest.mark.skipif(not have_pgbouncer(), reason="pgbouncer not installed")

INI = "[databases]\napp = host=127.0.0.1 port={port} dbname=postgres pool_size=1\n"
TRANSACTION = {"pool_mode": "transaction", "default_pool_size": "1", "reserve_pool_size": "0"}


def _connect(dsn: str, **kw: object) -> psycopg.Connection:
    kw.setdefault("autocommit", True)
    return psycopg.connect(dsn, connect_timeout=5, prepare_threshold=None, **kw)


@needs_bouncer
def test_pa501_the_wait_is_in_pgbouncers_queue_not_at_connect():
    """Behind a transaction pool, connecting succeeds at once while the only server
    connection is busy; the query then waits in PgBouncer until query_wait_timeout, which
    no client-side acquire timeout sees."""
    with running_postgres() as pg, running_pgbouncer(
            INI.format(port=pg.port), users=["postgres"],
            extra={**TRANSACTION, "query_wait_timeout": "2"}) as bouncer:
        dsn = bouncer.dsn("app", "postgres")
        with _connect(dsn, autocommit=False) as holder:
            holder.execute("SELECT 1")  # holds the one server connection: open transaction
            started = time.monotonic()
            waiter = _connect(dsn)
            connected = time.monotonic() - started
            with pytest.raises(psycopg.OperationalError) as err:
                waiter.execute("SELECT 1")
            waited = time.monotonic() - started
            waiter.close()
        assert connected < 1.0  # the pool's acquire step is over before any wait
        assert 1.8 <= waited < 10  # the wait was PgBouncer's query_wait_timeout
        assert "query_wait_timeout" in str(err.value)


@needs_bouncer
def test_pa503_idle_session_timeout_closes_pgbouncers_idle_server_connection():
    with running_postgres("idle_session_timeout = '1s'") as pg, running_pgbouncer(
            INI.format(port=pg.port), users=["postgres"], extra=TRANSACTION) as bouncer:
        dsn = bouncer.dsn("app", "postgres")
        with _connect(dsn) as client:
            first = client.execute("SELECT pg_backend_pid()").fetchone()[0]
            time.sleep(2.5)  # PgBouncer keeps the server connection idle; PG closes it
            try:
                second = client.execute("SELECT pg_backend_pid()").fetchone()[0]
                failed = False
            except psycopg.OperationalError:
                failed, second = True, None
        log = pg.log()
        assert "terminating connection due to idle-session timeout" in log
        # Either the client got the error, or PgBouncer had to open a new connection:
        # the pooled one was gone.
        assert failed or second != first


@needs_bouncer
def test_pa504_a_stalled_transaction_blocks_the_pool_until_the_server_ends_it():
    def blocked(conf: str) -> bool:
        with running_postgres(conf) as pg, running_pgbouncer(
                INI.format(port=pg.port), users=["postgres"],
                extra={**TRANSACTION, "query_wait_timeout": "4"}) as bouncer:
            dsn = bouncer.dsn("app", "postgres")
            stalled = _connect(dsn, autocommit=False)
            stalled.execute("SELECT 1")  # BEGIN ... then the client stalls
            try:
                with _connect(dsn) as other:
                    other.execute("SELECT 1")
                return False
            except psycopg.OperationalError:
                return True
            finally:
                stalled.close()

    assert blocked("")  # no timeout: the other client waits out query_wait_timeout
    assert not blocked("idle_in_transaction_session_timeout = '1s'")


def test_pa502_server_closes_an_idle_pooled_connection_underneath_the_client():
    with running_postgres("idle_session_timeout = '1s'") as pg:
        conn = _connect(pg.dsn())
        conn.execute("SELECT 1")
        time.sleep(2.5)  # idle in the application's pool, below any maxLifetime
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 1")
        conn.close()


@needs_bouncer
def test_pa210_pgbouncer_does_its_work_on_one_thread():
    """Under load, all of PgBouncer's CPU time is spent by one thread (1.18 has a second,
    idle, thread of its DNS resolver): one process serves its clients on one core."""
    with running_postgres() as pg, running_pgbouncer(
            INI.format(port=pg.port).replace("pool_size=1", "pool_size=4"),
            users=["postgres"]) as bouncer:
        config = {r["key"]: r["value"] for r in bouncer.admin_dicts("SHOW CONFIG")}
        subprocess.run([str(PG_BIN / "pgbench"), "-h", "127.0.0.1", "-p", str(bouncer.port),
                        "-U", "postgres", "-n", "-c", "8", "-j", "2", "-T", "2", "-f",
                        "/dev/stdin", "app"], input="SELECT 1;\n", capture_output=True,
                       text=True, timeout=60, check=True)
        ticks = []
        for stat in Path(f"/proc/{bouncer.process.pid}/task").glob("*/stat"):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            ticks.append(int(fields[11]) + int(fields[12]))  # utime + stime
    assert config["so_reuseport"] == "0"
    ticks.sort(reverse=True)
    assert ticks[0] > 0
    assert sum(ticks[1:]) <= 0.02 * ticks[0], ticks


def _pgbench(pg, *args: str) -> tuple[float, float]:
    out = subprocess.run([str(PG_BIN / "pgbench"), "-h", "127.0.0.1", "-p", str(pg.port),
                          "-U", "postgres", *args, "postgres"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    tps = float(re.search(r"tps = ([\d.]+)", out).group(1))
    latency = float(re.search(r"latency average = ([\d.]+) ms", out).group(1))
    return tps, latency


@pytest.mark.slow
def test_pa111_connections_past_the_cores_buy_latency_not_throughput():
    """On this machine's cores, 32x the connections of a core-sized pool run the same
    work slower each: latency rises with the connection count while throughput does not."""
    with running_postgres("max_connections = 100") as pg:
        subprocess.run([str(PG_BIN / "pgbench"), "-i", "-q", "-s", "1", "-h", "127.0.0.1",
                        "-p", str(pg.port), "-U", "postgres", "postgres"],
                       capture_output=True, timeout=120, check=True)
        few_tps, few_latency = _pgbench(pg, "-c", "2", "-j", "2", "-T", "4")
        many_tps, many_latency = _pgbench(pg, "-c", "64", "-j", "2", "-T", "4")
    assert many_latency > 5 * few_latency, (few_latency, many_latency)
    assert many_tps < 2 * few_tps, (few_tps, many_tps)
