"""A SQLAlchemy engine whose URL is a parameter the application passes run-time data
(audit 25 D6, DrDroidLab/PlayBooks: the SQL connector of databases its users configure,
`DBConnectionStringProcessor(**generate_credentials_dict(connector.type, connector.keys))`,
was counted on the app's own server, 2 x 15 per process: 2944 for a hand 184). Such an
engine connects where the repository does not say (Pool.route_unknown, said in
`unrouted`); one fed from the environment or settings stays the container's."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container

URL = {"DATABASE_URL": "postgresql://svc:pw@pg:5432/svc"}
CONNECTOR = '''from sqlalchemy import create_engine, text


class QueryRunner:
    def __init__(self, dsn_string):
        self.dsn_string = dsn_string

    def open(self):
        engine = create_engine(self.dsn_string)
        return engine.connect()

    def ping(self):
        self.open().execute(text("SELECT 1"))
'''
MANAGER = '''from app.keys import credentials_of
from app.runner import QueryRunner


class Manager:
    def runner(self, saved_source, **kwargs):
        creds = credentials_of(saved_source.kind, saved_source.secrets)
        return QueryRunner(**creds)
'''
OWN = '''import os

from app.runner import QueryRunner

RUNNER = QueryRunner(os.environ["DATABASE_URL"])
'''
FUNC = '''from sqlalchemy import create_engine


def engine_for(target_url):
    return create_engine(target_url, pool_size=3, max_overflow=0)


def handle(job):
    return engine_for(job.payload["target"])


def reuse(database_url):
    return engine_for(database_url)
'''


def _found(tmp_path: Path, files: dict[str, str]):
    files = {"requirements.txt": "SQLAlchemy==2.0.36\npsycopg2-binary==2.9.9\n",
             "app/__init__.py": "", "app/main.py": "from app import manager  # noqa\n",
             "app/runner.py": CONNECTOR, **files}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(URL, command=("python", "-m", "app.main")),
                               scan_app_dir(Root.of(tmp_path), ""))


def test_an_engine_of_a_connector_s_run_time_credentials_connects_where_not_known(tmp_path):
    found = _found(tmp_path, {"app/manager.py": MANAGER})
    assert found.pools and all(p.route is None and "dsn_string of QueryRunner.__init__"
                               in p.route_unknown for p in found.pools)
    assert any("app/manager.py:8" in u for u in found.unrouted)


def test_a_connector_also_built_from_the_environment_is_the_container_s(tmp_path):
    found = _found(tmp_path, {"app/manager.py": MANAGER, "app/own.py": OWN,
                              "app/main.py": "from app import manager, own  # noqa\n"})
    assert found.pools and all(p.route is not None and p.route.host == "pg"
                               and not p.route_unknown for p in found.pools)
    assert not found.unrouted


def test_a_function_parameter_fed_a_job_s_payload_or_a_url_parameter(tmp_path):
    # handle(job): the job's payload, run-time data; reuse(database_url): a caller's
    # caller may pass the container's URL, so that engine stays the container's
    found = _found(tmp_path, {"app/func.py": FUNC, "app/main.py": "from app import func  # noqa\n"})
    unknown = [p for p in found.pools if p.route_unknown]
    known = [p for p in found.pools if not p.route_unknown]
    assert len(unknown) == 1 and "target_url of engine_for()" in unknown[0].route_unknown
    assert len(known) == 1 and known[0].route is not None and known[0].route.host == "pg"
