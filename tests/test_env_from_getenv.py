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
