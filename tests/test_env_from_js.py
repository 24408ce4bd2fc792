"""`process.env.DB_POOL_MAX || '20'` in a Node app whose container takes a ConfigMap or
Secret the repository does not hold (`envFrom`): the variable may be set there, so the
pool size is unknown (PA106, "may be set by", naming the source), never the code's
default (review s26 F8; the Python side: tests/test_env_from_getenv.py). An explicit env
entry, or a prefix that cannot form the name, keeps it known."""

from __future__ import annotations

from pathlib import Path

from advisor.model import Container, EnvVar, Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root

SERVER = """const { Pool } = require('pg');
module.exports = new Pool({ host: 'db', max: parseInt(process.env.DB_POOL_MAX || '20', 10) });
"""


def _app(tmp_path: Path):
    (tmp_path / "package.json").write_text('{"dependencies": {"pg": "8.11.3"}}\n')
    (tmp_path / "server.js").write_text(SERVER)
    return scan_app_dir(Root.of(tmp_path), "")


def _container(*env: EnvVar) -> Container:
    return Container(name="app", env=env, command=("node", "server.js"),
                     source=Source(path="k8s/app.yaml", line=5))


def _var(name: str, value: str | None, line: int, ref: str | None = None) -> EnvVar:
    return EnvVar(name=name, value=value, source=Source(path="k8s/app.yaml", line=line),
                  from_ref=ref, secret=ref is not None and ref.startswith("secret"))


def _sizes(found) -> list[float]:
    return [p.size.value for p in found.pools if p.size is not None]


def test_a_js_env_default_is_not_taken_when_an_envfrom_configmap_may_set_it(tmp_path):
    app = _app(tmp_path)
    assert _sizes(pools_for_container(_container(), app)) == [20]
    hidden = pools_for_container(_container(_var("*", None, 9, "configmap:extra-tuning")), app)
    assert 20 not in _sizes(hidden), hidden
    assert any("DB_POOL_MAX may be set by ConfigMap extra-tuning (envFrom, k8s/app.yaml:9), "
               "not in the repository" in u for u in hidden.unknown), hidden.unknown
    # an explicit entry wins over every envFrom source
    given = pools_for_container(_container(_var("*", None, 9, "configmap:extra-tuning"),
                                           _var("DB_POOL_MAX", "7", 11)), app)
    assert _sizes(given) == [7] and not given.unknown, given
    # a prefix that cannot form DB_POOL_MAX leaves the default
    other = pools_for_container(_container(_var("REDIS_*", None, 9, "secret:redis")), app)
    assert _sizes(other) == [20], other
