"""PA213 oracle: a real PgBouncer 1.18 in front of a real PostgreSQL 15 refuses a client
of a database its [databases] has no entry for ("no such database: <name>", after the
login: src/objects.c:1459 @pgbouncer_1_18_0), serves it through a `*` fallback, and
serves its admin console `pgbouncer` with neither. advisor.facts.pgbouncer.
refuses_database, on the very text PgBouncer loaded, must say the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.facts.pgbouncer import refuses_database
from advisor.model import BouncerVersion
from advisor.read.fs import Root
from advisor.read.sources.pgbouncer_ini import pooler_from_ini, read_pgbouncer_ini
from tests.realbouncer import ADMIN_USER, have_pgbouncer, running_pgbouncer
from tests.realpg import PgServer, have_postgres, running_postgres

pytestmark = [
    pytest.mark.pgbouncer,
    pytest.mark.postgres,
    pytest.mark.skipif(not have_pgbouncer(), reason="pgbouncer binary not installed"),
    pytest.mark.skipif(not have_postgres(), reason="PostgreSQL 15 binaries not installed"),
]

NAMED = """\
[databases]
payments = host=127.0.0.1 port={port} dbname=payments

[pgbouncer]
pool_mode = transaction
default_pool_size = 5
"""
FALLBACK = NAMED.replace("[pgbouncer]", "* = host=127.0.0.1 port={port}\n\n[pgbouncer]")


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    with running_postgres("max_connections = 20") as server:
        server.psql("CREATE ROLE app LOGIN")
        server.psql("CREATE DATABASE payments")
        server.psql("CREATE DATABASE payment_processing")
        yield server


def _refuses(ini_text: str, tmp_path: Path, dbname: str) -> bool:
    """What the tool says of `dbname` on the text PgBouncer loaded."""
    (tmp_path / "pgbouncer.ini").write_text(ini_text)
    ini = read_pgbouncer_ini(Root.of(tmp_path), "pgbouncer.ini",
                             version=BouncerVersion(major=1, minor=18))
    assert not ini.problems, ini.problems
    pooler = pooler_from_ini(ini, id="pgb", name="pgbouncer")
    pooler.databases_complete = ini.complete
    return refuses_database(pooler, dbname)


def _connect(dsn: str, sql: str = "SELECT 1") -> str:
    """'ok' when `sql` runs through it, else the error PgBouncer sent."""
    import psycopg

    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql).fetchall()
        return "ok"
    except psycopg.OperationalError as exc:
        return str(exc)


def test_a_database_without_entry_is_refused(pg: PgServer, tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    with running_pgbouncer(NAMED.format(port=pg.port), users=["app"]) as pgb:
        refused = _connect(pgb.dsn("payment_processing", "app"))
        served = _connect(pgb.dsn("payments", "app"))
        admin = _connect(pgb.dsn("pgbouncer", ADMIN_USER), "SHOW VERSION")
        assert "no such database: payment_processing" in refused, refused
        assert served == "ok"
        assert admin == "ok", admin  # the admin console, with no entry of its own
        assert _refuses(pgb.ini_text, tmp_path, "payment_processing") is True
        assert _refuses(pgb.ini_text, tmp_path, "payments") is False
        assert _refuses(pgb.ini_text, tmp_path, "pgbouncer") is False


def test_a_star_entry_serves_any_database(pg: PgServer, tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    with running_pgbouncer(FALLBACK.format(port=pg.port), users=["app"]) as pgb:
        assert _connect(pgb.dsn("payment_processing", "app")) == "ok"
        assert _refuses(pgb.ini_text, tmp_path, "payment_processing") is False
