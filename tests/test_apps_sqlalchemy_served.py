"""SQLAlchemy engines the serving process makes (audit 9b D4: Arize-ai/phoenix summed
every create_engine of the repository, 179 instead of 15). Counted: the engines of the
modules the command's entry module imports; not developer scripts, not SQLite-only
engines, not the app's own `create_engine` wrapper; engines in the arms of one
if/elif/else are alternatives (the largest counts); a NullPool engine made to run
migrations is not at peak (NullPool closes each connection on return:
sqlalchemy/sqlalchemy@f35da7e2 lib/sqlalchemy/pool/impl.py:297-301). A node-postgres
pool of a package.json is not a Python process's."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container

URL = {"DATABASE_URL": "postgresql://svc:pw@pg:5432/svc"}
PYPROJECT = ('[project]\nname = "svc"\nversion = "1"\n'
             'dependencies = ["sqlalchemy[asyncio]==2.0.36", "asyncpg==0.30.0"]\n')
DB = '''import os

from sqlalchemy import NullPool
from sqlalchemy.ext.asyncio import create_async_engine

from svc.cloud import create_cloud_engine


def make_engine(url: str):
    if url.startswith("sqlite"):
        return create_async_engine(url, pool_size=8, max_overflow=8)
    if os.environ.get("USE_CLOUD_AUTH"):
        engine = create_cloud_engine(url, pool_size=20, max_overflow=0)
    else:
        engine = create_async_engine(url.replace("postgresql://", "postgresql+asyncpg://"))
    migration = create_async_engine(url.replace("postgresql://", "postgresql+asyncpg://"),
                                    poolclass=NullPool)
    return engine


ENGINE = make_engine(os.environ["DATABASE_URL"])
'''
CLOUD = '''from sqlalchemy.ext.asyncio import create_async_engine


def create_cloud_engine(url, **kwargs):
    return create_async_engine(url, async_creator=None, **kwargs)
'''
WRAPPER_CLI = '''from svc.db import make_engine as create_engine

ENGINE = create_engine("postgresql://svc@pg/svc")
'''
FILES = {"pyproject.toml": PYPROJECT, "src/svc/__init__.py": "",
         "src/svc/main.py": "from svc.db import ENGINE  # noqa: F401\n",
         "src/svc/db.py": DB, "src/svc/cloud.py": CLOUD, "src/svc/cli.py": WRAPPER_CLI,
         "scripts/seed.py": 'from sqlalchemy import create_engine\n\n'
                            'engine = create_engine("postgresql://localhost/dev")\n',
         "src/svc/notebook.py": 'from sqlalchemy import create_engine\n\n'
                                'ENGINE = create_engine("postgresql://svc@pg/svc")\n',
         "tools/mock-oidc/package.json": '{"name": "m", "dependencies": {"pg": "8.13.1"}}\n',
         "tools/mock-oidc/index.js": 'const { Pool } = require("pg");\n'
                                     'const pool = new Pool({ max: 30 });\n'}


def _found(tmp_path: Path, command: tuple[str, ...]):
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(URL, command=command),
                               scan_app_dir(Root.of(tmp_path), ""))


def test_the_served_engine_only(tmp_path):
    found = _found(tmp_path, ("python", "-m", "svc.main"))
    (pool,) = found.pools
    # the cloud arm (20) and the plain arm (15) are alternatives: the largest counts
    assert pool.size.value == 20
    assert "alternative branches" in pool.note and "src/svc/db.py:12" in pool.note
    assert pool.bound != "unbounded"
    assert any("NullPool" in n and "migration" in n for n in found.notices)
    assert any("runs Python" in n and "node-postgres" in n for n in found.notices)


def test_without_a_known_entry_scripts_are_still_not_the_pod_s(tmp_path):
    found = _found(tmp_path, ())
    sizes = sorted(int(p.size.value) for p in found.pools)
    # the served engine (20, alternatives) + the notebook module's engine (15): an
    # upper bound; the script, the SQLite arm and the wrapper call are not engines
    assert sizes[:2] == [15, 20] and all("scripts/" not in (p.size.source.path or "")
                                         for p in found.pools)


CONNECTOR = '''import os

from sqlalchemy import create_engine, text


class SqlConnector:
    def __init__(self, url):
        self.url = url

    def get_connection(self):
        engine = create_engine(self.url)
        return engine.connect()

    def ping(self):
        conn = self.get_connection()
        conn.execute(text("SELECT 1"))


CONNECTOR = SqlConnector(os.environ["DATABASE_URL"])
'''
OTHER_CONNECTOR = '''def create_session():
    return object()


class Client:
    def get_connection(self):
        return create_session()

    def fetch(self):
        return self.get_connection(), self.get_connection(), get_connection()
'''


def test_a_method_factory_is_called_through_its_own_class_only(tmp_path):
    """Audit 25 D1 (DrDroidLab/PlayBooks: 15 x 15 per process): the `self.get_connection()`
    of other classes (and a bare `get_connection()`) call other functions of that name,
    not the SQL connector's engine factory: one engine, made where `ping` calls it."""
    files = {"requirements.txt": "SQLAlchemy==2.0.36\npsycopg2-binary==2.9.9\n",
             "app/__init__.py": "", "app/main.py": "from app import sql, api  # noqa\n",
             "app/sql.py": CONNECTOR, "app/api.py": OTHER_CONNECTOR}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = pools_for_container(container(URL, command=("python", "-m", "app.main")),
                                scan_app_dir(Root.of(tmp_path), ""))
    (pool,) = found.pools
    assert pool.size.value == 15
