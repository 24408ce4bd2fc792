"""`int(os.getenv("DB_POOL_SIZE", 5))` in an application whose container takes a Secret
the repository does not hold whole (`envFrom`): the variable may be set there, so the
pool size is unknown (PA106, "may be set by", naming the source), never the fallback 5.
An explicit env entry, or a prefix that cannot form the name, keeps it known."""

from __future__ import annotations

from pathlib import Path

from advisor.model import Container, EnvVar, Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root

DB = '''import os
from sqlalchemy import create_engine

engine = create_engine("postgresql://app@db/app",
                       pool_size=int(os.getenv("DB_POOL_SIZE", 5)), max_overflow=0)
'''


def _app(tmp_path: Path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "db.py").write_text(DB)
    (tmp_path / "requirements.txt").write_text("sqlalchemy==2.0.30\npsycopg2\n")
    return scan_app_dir(Root.of(tmp_path), "")


def _container(*env: EnvVar) -> Container:
    return Container(name="app", env=env, source=Source(path="k8s/app.yaml", line=5))


def _var(name: str, value: str | None, line: int, ref: str | None = None) -> EnvVar:
    return EnvVar(name=name, value=value, source=Source(path="k8s/app.yaml", line=line),
                  from_ref=ref, secret=ref is not None and ref.startswith("secret"))


def _sizes(found) -> list[float]:
    return [p.size.value for p in found.pools if p.size is not None]


def test_a_getenv_fallback_is_not_taken_when_an_envfrom_secret_may_set_it(tmp_path):
    app = _app(tmp_path)
    plain = pools_for_container(_container(), app)
    assert 5 in _sizes(plain), plain
    hidden = pools_for_container(_container(_var("*", None, 9, "secret:app-env")), app)
    assert 5 not in _sizes(hidden), hidden
    assert any("DB_POOL_SIZE may be set by Secret app-env (envFrom, k8s/app.yaml:9), not in "
               "the repository" in u for u in hidden.unknown), hidden.unknown
    # an explicit entry wins over every envFrom source
    given = pools_for_container(_container(_var("*", None, 9, "secret:app-env"),
                                           _var("DB_POOL_SIZE", "7", 11)), app)
    assert 7 in _sizes(given) and not given.unknown, given
    # a prefix that cannot form DB_POOL_SIZE leaves the fallback
    other = pools_for_container(_container(_var("REDIS_*", None, 9, "secret:redis")), app)
    assert 5 in _sizes(other), other


def test_a_gunicorn_conf_fallback_is_not_taken_when_an_envfrom_secret_may_set_it(tmp_path):
    """gunicorn.conf.py `workers = int(os.environ.get("WEB_CONCURRENCY", 2))`: the
    process count is unknown, said as 'may be set', not the fallback 2."""
    from msgspec.structs import replace

    from advisor.read.apps.base import StackContext
    from tests.apphelpers import container

    (tmp_path / "gunicorn.conf.py").write_text(
        'import os\nworkers = int(os.environ.get("WEB_CONCURRENCY", 2))\n')
    (tmp_path / "requirements.txt").write_text("gunicorn==23.0.0\n")
    app = scan_app_dir(Root.of(tmp_path), "")
    plain = container({}, command=("gunicorn", "-c", "gunicorn.conf.py", "app:app"))
    info = StackContext(container=plain, app=app, profile=None, node_cpus=4).processes()
    assert info.processes is not None and info.processes.value == 2 and not info.hidden
    # a prefix that forms WEB_CONCURRENCY, not GUNICORN_CMD_ARGS (which, when it may be
    # set, decides before the file: tests/test_env_from_processes.py)
    hidden = replace(plain, env=(*plain.env, _var("WEB_*", None, 9, "secret:app-env")))
    info = StackContext(container=hidden, app=app, profile=None, node_cpus=4).processes()
    assert info.hidden == ["gunicorn workers: WEB_CONCURRENCY may be set by the envFrom "
                           "source with prefix WEB_ at k8s/app.yaml:9, whose keys are not in "
                           "the repository"], info.hidden
