"""Pgpool-II oracle: real Pgpool-II (Debian's pgpool2) in front of real PostgreSQL 15.

What advisor/read/apps/pgpool.py counts for a backend, num_init_children x max_pool,
must be reached and never passed: with 2 children caching up to 2 connections each,
pairs of clients held at once (so both children serve one each) as three different
users fill every cache and then evict, while pg_stat_activity is sampled. The
pgpool.conf the server runs is also read by our reader: a repeated setting's last line
wins, a quoted number is a number.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from advisor.read.apps.pgpool import conf_values
from advisor.read.apps.source import AppFile
from tests.realpg import PgServer, free_port, have_postgres, running_postgres

PGPOOL = shutil.which("pgpool") or "/usr/sbin/pgpool"

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not Path(PGPOOL).exists(), reason="pgpool binary not installed"),
    pytest.mark.skipif(not have_postgres(), reason="PostgreSQL 15 binaries not installed"),
]

CONF = """\
backend_clustering_mode = 'streaming_replication'
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{run}'
pcp_listen_addresses = ''
pcp_port = {pcp_port}
pcp_socket_dir = '{run}'
pid_file_name = '{run}/pgpool.pid'
logdir = '{run}'
backend_hostname0 = '127.0.0.1'
backend_port0 = {pg_port}
backend_flag0 = 'ALWAYS_PRIMARY|DISALLOW_TO_FAILOVER'
enable_pool_hba = off
pool_passwd = ''
num_init_children = 5
num_init_children = '2'   # the last line wins
max_pool = 2
health_check_period = 0
sr_check_period = 0
load_balance_mode = off
connection_cache = on
"""
USERS = ("u1", "u2", "u3")


@contextmanager
def running_pgpool(pg: PgServer, tmp: Path, extra: str = "") -> Iterator[tuple[int, str]]:
    run = tmp / "run"
    run.mkdir()
    port = free_port()
    text = CONF.format(port=port, run=run, pcp_port=free_port(), pg_port=pg.port) + extra
    (tmp / "pgpool.conf").write_text(text)
    (tmp / "pcp.conf").write_text("")
    log = (tmp / "pgpool.log").open("w")
    proc = subprocess.Popen([PGPOOL, "-n", "-f", str(tmp / "pgpool.conf"),
                             "-F", str(tmp / "pcp.conf")], stdout=log, stderr=subprocess.STDOUT)
    try:
        import psycopg

        deadline = time.monotonic() + 20
        while True:
            try:
                with psycopg.connect(f"host=127.0.0.1 port={port} user=u1 dbname=postgres "
                                     "sslmode=disable", connect_timeout=2):
                    break
            except psycopg.OperationalError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("pgpool did not start:\n"
                                       + (tmp / "pgpool.log").read_text()) from None
                time.sleep(0.2)
        yield port, text
    finally:
        proc.terminate()
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def _backend_count(pg: PgServer) -> int:
    return int(pg.psql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
                       "'client backend' AND usename IN ('u1', 'u2', 'u3')").strip())


def test_backend_connections_reach_but_never_exceed_children_times_max_pool(tmp_path):
    psycopg = pytest.importorskip("psycopg")
    with running_postgres("max_connections = 40") as pg:
        pg.psql("CREATE ROLE u1 LOGIN; CREATE ROLE u2 LOGIN; CREATE ROLE u3 LOGIN;")
        pg.psql("CREATE DATABASE app")
        with running_pgpool(pg, tmp_path) as (port, text):
            values = conf_values(AppFile(path="pgpool.conf", rel="pgpool.conf",
                                         kind="pgpool-conf", text=text))
            children = int(values["num_init_children"].text)
            max_pool = int(values["max_pool"].text)
            assert (children, max_pool) == (2, 2)
            assert values["num_init_children"].source.line == 16
            counts = []
            # Each round holds `children` clients at once, one per child, as a user not
            # cached yet. Not database postgres: Pgpool-II caches no connection to
            # template0, template1, postgres or regression (connection_cache's docs).
            for user in (*USERS, "u1"):
                held = [psycopg.connect(f"host=127.0.0.1 port={port} user={user} "
                                        "dbname=app sslmode=disable", autocommit=True)
                        for _ in range(children)]
                for conn in held:
                    conn.execute("SELECT 1")
                counts.append(_backend_count(pg))
                for conn in held:
                    conn.close()
                time.sleep(0.3)  # the child caches the connection after the client leaves
                counts.append(_backend_count(pg))
    # u1 fills one slot of each child, u2 the other; u3 and u1 again evict the oldest
    assert counts[:2] == [children, children], counts
    assert max(counts) == children * max_pool, counts
    assert counts[2:] == [children * max_pool] * len(counts[2:]), counts


def test_reserved_connections_refuse_the_clients_past_children_minus_reserved(tmp_path):
    """PA212's capacity: num_init_children - reserved_connections clients at once, the
    next refused (not left waiting) when reserved_connections >= 1."""
    psycopg = pytest.importorskip("psycopg")
    with running_postgres("max_connections = 40") as pg:
        pg.psql("CREATE ROLE u1 LOGIN")
        with running_pgpool(pg, tmp_path, "reserved_connections = 1\n") as (port, text):
            values = conf_values(AppFile(path="pgpool.conf", rel="pgpool.conf",
                                         kind="pgpool-conf", text=text))
            admitted = int(values["num_init_children"].text) - int(
                values["reserved_connections"].text)
            assert admitted == 1
            dsn = f"host=127.0.0.1 port={port} user=u1 dbname=postgres sslmode=disable"
            held = [_connect_when_free(psycopg, dsn) for _ in range(admitted)]
            try:
                with pytest.raises(psycopg.OperationalError, match="too many clients"):
                    psycopg.connect(dsn, connect_timeout=5).close()
            finally:
                for conn in held:
                    conn.close()


def _connect_when_free(psycopg, dsn: str):
    """A connection, once the child that served running_pgpool's probe counts as free
    again (Pgpool-II lowers its count of clients a moment after one leaves)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return psycopg.connect(dsn, autocommit=True)
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
