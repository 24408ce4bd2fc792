"""The defaults pool-advisor applies, read from the real libraries. Any drift fails.

Python: introspection of the installed packages (declared in the `test` extra).
node-postgres: pg-pool from npm (scripts/test installs it into .tools/), run under node.
"""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.read.apps import asyncpg as asyncpg_mod
from advisor.read.apps import django as django_mod
from advisor.read.apps import psycopg_pool as psycopg_mod
from advisor.read.apps import sqlalchemy as sqlalchemy_mod

ROOT = Path(__file__).resolve().parent.parent


def _default(func, name):
    return inspect.signature(func).parameters[name].default


def test_sqlalchemy_queuepool_defaults():
    from sqlalchemy.pool import QueuePool

    assert _default(QueuePool.__init__, "pool_size") == sqlalchemy_mod.DEFAULT_POOL_SIZE
    assert _default(QueuePool.__init__, "max_overflow") == sqlalchemy_mod.DEFAULT_MAX_OVERFLOW


def test_sqlalchemy_create_engine_uses_queuepool_for_postgresql():
    import sqlalchemy
    from sqlalchemy.pool import QueuePool

    # create_engine does not connect; the dialect picks the pool class
    engine = sqlalchemy.create_engine("postgresql+psycopg://u@h/db")
    assert isinstance(engine.pool, QueuePool)
    assert engine.pool.size() == sqlalchemy_mod.DEFAULT_POOL_SIZE
    assert engine.pool._max_overflow == sqlalchemy_mod.DEFAULT_MAX_OVERFLOW


def test_asyncpg_create_pool_defaults():
    import asyncpg

    assert _default(asyncpg.create_pool, "max_size") == asyncpg_mod.DEFAULT_MAX_SIZE
    assert _default(asyncpg.create_pool, "min_size") == 10


def test_psycopg_pool_defaults():
    import psycopg_pool

    sig = psycopg_pool.ConnectionPool.__init__
    assert _default(sig, "min_size") == psycopg_mod.DEFAULT_MIN_SIZE
    assert _default(sig, "max_size") is None  # None -> max_size = min_size
    assert _default(psycopg_pool.AsyncConnectionPool.__init__, "min_size") == \
        psycopg_mod.DEFAULT_MIN_SIZE
    assert _default(psycopg_pool.NullConnectionPool.__init__, "min_size") == \
        psycopg_mod.DEFAULT_NULL_MIN_SIZE
    pool = psycopg_pool.ConnectionPool("", open=False)  # no connection is made
    assert pool.max_size == psycopg_mod.DEFAULT_MIN_SIZE
    pool.close()


def test_django_connections_per_thread_and_pool_options():
    import django.db.backends.postgresql.base as pg_base
    from django.db.utils import ConnectionHandler

    assert ConnectionHandler.thread_critical is True
    source = inspect.getsource(pg_base.DatabaseWrapper.pool.fget)
    assert "ConnectionPool(" in source and "**pool_options" in source
    assert "pool_options is True" in source
    assert django_mod.DEFAULT_POOL_MIN_SIZE == psycopg_mod.DEFAULT_MIN_SIZE


def test_gunicorn_and_uvicorn_worker_defaults(monkeypatch):
    import gunicorn.config as gconf
    import uvicorn

    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    assert gconf.Workers.default in (1, int(__import__("os").environ.get("WEB_CONCURRENCY", 1)))
    assert 'os.environ.get("WEB_CONCURRENCY", 1)' in inspect.getsource(gconf.Workers)
    assert gconf.WorkerThreads.default == 1
    assert gconf.ConfigFile.default == "./gunicorn.conf.py"
    assert "WEB_CONCURRENCY" in inspect.getsource(uvicorn.Config.__init__)
    assert uvicorn.Config(app="x:y").workers == 1


def _pg_pool_dir(tmp_path_factory) -> Path:
    local = ROOT / ".tools" / "node_modules" / "pg-pool"
    if local.is_dir():
        return local
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm not installed; scripts/test installs pg-pool into .tools/")
    prefix = tmp_path_factory.mktemp("npm")
    subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                    str(prefix), "pg-pool"], check=True, timeout=300)
    return prefix / "node_modules" / "pg-pool"


def test_node_postgres_pool_default_max(tmp_path_factory):
    from advisor.read.apps import node_pg

    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed")
    pkg = _pg_pool_dir(tmp_path_factory)
    script = (
        "const Pool = require(process.argv[1]);"
        "function Client() {};"
        "const out = {default: new Pool({Client}).options.max,"
        " legacy: new Pool({Client, poolSize: 7}).options.max,"
        " zero: new Pool({Client, max: 0}).options.max};"
        "console.log(JSON.stringify(out));"
    )
    got = json.loads(subprocess.run([node, "-e", script, str(pkg)], check=True,
                                    capture_output=True, text=True, timeout=60).stdout)
    version = json.loads((pkg / "package.json").read_text())["version"]
    assert got["default"] == node_pg.DEFAULT_MAX, version
    assert got["legacy"] == 7  # poolSize is still honoured
    assert got["zero"] == node_pg.DEFAULT_MAX  # max: 0 falls through to the default


def test_pa104_reference_list_matches_the_readers_constants():
    from advisor.read.apps import ecto, hikari, knex, node_pg, npgsql, quarkus, rails, sequelize
    from advisor.rules import load_rules

    doc = load_rules().resolve("PA104").doc
    expected = [
        f"HikariCP {hikari.DEFAULT_POOL_SIZE}:",
        f"SQLAlchemy {sqlalchemy_mod.DEFAULT_POOL_SIZE} + {sqlalchemy_mod.DEFAULT_MAX_OVERFLOW}:",
        f"psycopg_pool {psycopg_mod.DEFAULT_MIN_SIZE}:",
        f"asyncpg {asyncpg_mod.DEFAULT_MAX_SIZE}:",
        f"node-postgres {node_pg.DEFAULT_MAX}:",
        f"Sequelize {sequelize.DEFAULT_MAX}:",
        f"Knex {knex.DEFAULT_MAX}:",
        f"Rails {rails.DEFAULT_POOL}:",
        f"Npgsql {npgsql.DEFAULT_MAX_POOL_SIZE}:",
        f"Ecto {ecto.DEFAULT_POOL_SIZE}:",
        f"Quarkus Agroal {quarkus.DEFAULT_MAX_SIZE}:",
    ]
    for text in expected:
        assert text in doc
