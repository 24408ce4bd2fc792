"""Smaller Python forms: each case is an app dir written here, with the expected figure."""

from pathlib import Path

import pytest

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product


def _found(tmp_path: Path, files: dict[str, str], env=None, command=("gunicorn", "app:app")):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(env or {}, command=command),
                               scan_app_dir(Root.of(tmp_path), ""))


@pytest.mark.parametrize(("code", "expected", "bound"), [
    ("engine = create_engine(URL, poolclass=NullPool)", "1 x 0 = 0", "unbounded"),
    ("engine = create_engine(URL, pool_size=3, max_overflow=-1)", "1 x 3 = 3", "unbounded"),
    ("engine = create_engine(URL, poolclass=StaticPool)", "1 x 1 = 1", "fixed"),
    ("engine = create_async_engine(URL, pool_size=7)", "1 x 17 = 17", "fixed"),
    ("engine = sqlalchemy.create_engine(URL)", "1 x 15 = 15", "default"),
    ("SIZE = 4\nengine = create_engine(URL, pool_size=SIZE * 2, max_overflow=0)", "1 x 8 = 8",
     "fixed"),
    ("engine = create_engine('sqlite:///x.db')", " = 0", None),
    ("engine = create_engine('mysql+pymysql://u@h/db', pool_size=50)", " = 0", None),
])
def test_sqlalchemy_forms(tmp_path, code, expected, bound):
    found = _found(tmp_path, {"app.py": "import sqlalchemy\nfrom sqlalchemy import "
                              "create_engine\nURL = 'postgresql://u@db/x'\n" + code + "\n"})
    assert product(found.pools) == expected
    if bound:
        assert found.pools[0].bound == bound


def test_unreadable_pool_size_is_unknown(tmp_path):
    """A pool_size the code sets to an expression not read: unknown (PA106), not
    SQLAlchemy's default 5 + 10, which does not apply (it was, with a notice)."""
    found = _found(tmp_path, {"app.py": "from sqlalchemy import create_engine\n"
                              "engine = create_engine(URL, pool_size=settings.POOL)\n"})
    assert found.pools == []
    assert found.unknown == ["SQLAlchemy pool_size (settings.POOL) at app.py:2 is set to an "
                             "expression not read statically"]


def test_psycopg2_threaded_pool(tmp_path):
    found = _found(tmp_path, {"db.py": "import os\nfrom psycopg2.pool import "
                              "ThreadedConnectionPool\npool = ThreadedConnectionPool(1, "
                              "int(os.getenv('PG_MAX', '12')), os.environ['DATABASE_URL'])\n"},
                   env={"DATABASE_URL": "host=pg dbname=app"})
    (pool,) = found.pools
    assert product(found.pools) == "1 x 12 = 12" and pool.route.host == "pg"


def test_asyncpg_env_max_size(tmp_path):
    found = _found(tmp_path, {"db.py": "import os, asyncpg\n\nasync def init():\n"
                              "    return await asyncpg.create_pool(os.environ['DATABASE_URL'], "
                              "max_size=int(os.environ.get('POOL_MAX', 4)))\n"},
                   env={"DATABASE_URL": "postgres://e@events/ev", "POOL_MAX": "6"},
                   command=("uvicorn", "app:app", "--workers", "2"))
    (pool,) = found.pools
    assert product(found.pools) == "2 x 6 = 12" and pool.size.source.key == "POOL_MAX"


def test_dj_database_url_and_pool_true(tmp_path):
    found = _found(tmp_path, {
        "manage.py": "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', "
                     "'site1.settings')\n",
        "site1/settings.py": "import dj_database_url\nDATABASES = {\n"
                             "    'default': dj_database_url.config(conn_max_age=600),\n}\n"
                             "DATABASES['default']['OPTIONS'] = {'pool': True}\n",
    }, env={"DATABASE_URL": "postgres://web@pg-main:5432/site"},
        command=("gunicorn", "site1.wsgi", "-w", "2", "--threads", "8"))
    (pool,) = found.pools
    # the alias comes from DATABASE_URL; the later OPTIONS item turns the psycopg pool on
    # (pool=True: psycopg_pool defaults, 4 per process) instead of 1 per thread (8)
    assert pool.route.host == "pg-main" and pool.route.source.key == "DATABASE_URL"
    assert product(found.pools) == "2 x 4 = 8" and pool.bound == "default"


def test_dj_database_url_without_pool_counts_threads(tmp_path):
    found = _found(tmp_path, {
        "site1/settings.py": "import dj_database_url\nDATABASES = {\n"
                             "    'default': dj_database_url.config(conn_max_age=600),\n}\n",
    }, env={"DATABASE_URL": "postgres://web@pg-main:5432/site"},
        command=("gunicorn", "site1.wsgi", "-w", "2", "--threads", "8"))
    assert product(found.pools) == "2 x 8 = 16"


def test_django_mysql_alias_is_skipped(tmp_path):
    found = _found(tmp_path, {"proj/settings.py": "import django\nDATABASES = {'default': "
                              "{'ENGINE': 'django.db.backends.mysql', 'NAME': 'x'}}\n"})
    assert found.pools == []


def test_flask_engine_options_argument(tmp_path):
    found = _found(tmp_path, {"app.py": "from flask_sqlalchemy import SQLAlchemy\n"
                              "db = SQLAlchemy(engine_options={'pool_size': 2, "
                              "'max_overflow': 3})\n"},
                   env={"DATABASE_URL": "postgresql://f@flask-db/f"},
                   command=("gunicorn", "-w", "5", "app:app"))
    (pool,) = found.pools
    assert product(found.pools) == "5 x 5 = 25" and pool.route.host == "flask-db"


def test_syntax_error_is_a_problem_with_line(tmp_path):
    found = _found(tmp_path, {"app.py": "from sqlalchemy import create_engine\n"
                              "engine = create_engine(\n"})
    assert found.pools == []
    assert found.problems and found.problems[0].location.path == "app.py"
    assert "syntax error" in found.problems[0].message
