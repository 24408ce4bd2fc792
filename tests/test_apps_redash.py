"""Redash from its image (audit4 D7 on getredash/contrib-helm-chart: every Redash
workload was a client of unknown size, ">= 10, cannot tell", where the web tier alone,
2 pods x 4 gunicorn workers x an engine of 5 + 10, is over 97; getredash/redash v25.8.0
bin/docker-entrypoint, redash/settings/__init__.py, redash/models/base.py)."""

from __future__ import annotations

from msgspec.structs import replace

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.model import EnvVar, Source
from advisor.read.apps import pools_for_container
from advisor.read.apps.redash import is_redash
from tests.apphelpers import container
from tests.test_apps_concourse import DB
from tests.tree_helpers import write

IMAGE = "redash/redash:25.8.0"


def script(function: str, exports: str = "") -> tuple[str, ...]:
    """The chart's args: a shell script that builds the URLs, then execs the image's
    entrypoint with one of its functions."""
    return ("/bin/sh", "-c",
            'if [ -n "${REDIS_PASSWORD}" ]; then\n  export REDASH_REDIS_URL="redis://r"\n'
            'fi\nexport REDASH_DATABASE_URL="postgresql://u:${PASSWORD}@db:5432/redash"\n'
            f"{exports}exec /app/bin/docker-entrypoint {function}\n")


def pods(tmp_path, function: str, env: dict[str, str] | None = None):
    lines = "".join(f'            - {{name: {k}, value: "{v}"}}\n'
                    for k, v in {"REDASH_DATABASE_HOSTNAME": "db", **(env or {})}.items())
    args = "\n".join(f"            - {a!r}" if "\n" not in a else
                     "            - |\n" + "\n".join(f"              {x}"
                                                    for x in a.splitlines())
                     for a in script(function))
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/redash.yaml": f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: redash}}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: redash
          image: {IMAGE}
          args:
{args}
          env:
{lines}"""})
    return run_check([str(tmp_path)], CheckOptions(cache=False))


def test_the_charts_web_server_is_over_not_unknown(tmp_path):
    """2 pods (1 + the 25% surge) x 4 gunicorn workers x (5 + 10) = 120 > 97."""
    result = pods(tmp_path, "server")
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 120 and not budget.fits
    assert "PA101" in {f.code for f in result.findings}


def per_pod(args: tuple[str, ...] = (), env: dict[str, str] | None = None,
            image: str = IMAGE, secret: tuple[str, ...] = ()):
    c = replace(container(env, args=args), image=image)
    c = replace(c, env=tuple(EnvVar(name=e.name, value=None, source=e.source, secret=True,
                                    from_ref="secret:s/k") if e.name in secret else e
                             for e in c.env))
    got = pools_for_container(c)
    return got, sum(p.per_pod() for p in got.pools)


def test_web_workers_and_engine_from_the_env():
    got, n = per_pod(script("server"))
    assert n == 4 * 15, got
    (pool,) = got.pools
    assert "docker-entrypoint:49" in pool.processes.source.default
    assert pool.size.source.default and "1.3.24" in pool.size.source.default
    _, n = per_pod(script("server"), {"REDASH_WEB_WORKERS": "2", "SQLALCHEMY_POOL_SIZE": "3",
                                      "SQLALCHEMY_MAX_OVERFLOW": "0"})
    assert n == 2 * 3
    _, n = per_pod(script("server"), {"SQLALCHEMY_POOL_SIZE": "3"})
    assert n == 4 * 13  # max_overflow stays SQLAlchemy's 10
    _, n = per_pod((), {"SQLALCHEMY_DISABLE_POOL": "true"})  # the image's CMD: server
    assert n == 4 * 1  # NullPool: a sync worker's one thread holds one


def test_rq_workers_from_workers_count_also_when_the_script_exports_it():
    got, n = per_pod(script("worker"))
    assert n == 2 * 15 and "WORKERS_COUNT:-2" in got.pools[0].processes.source.default
    _, n = per_pod(script("worker"), {"WORKERS_COUNT": "3"})
    assert n == 3 * 15
    _, n = per_pod(script("worker", "export WORKERS_COUNT=5\n"), {"WORKERS_COUNT": "3"})
    assert n == 5 * 15
    _, n = per_pod(("/app/manage.py", "rq", "worker", "queries"))
    assert n == 1 * 15  # run directly, not through supervisord: one process


def test_scheduler_none_and_one_off_commands_one():
    got, n = per_pod(script("scheduler"))
    assert n == 0 and got.pools and got.unknown == []
    _, n = per_pod(script("create_db"))
    assert n == 1
    _, n = per_pod(("manage", "db", "upgrade"))
    assert n == 1


def test_unknown_never_a_default():
    """A variable from a Secret not held, a value not a number, an old release, or a
    command that is not Redash's: unknown, with the reason."""
    for env, secret in (({"SQLALCHEMY_POOL_SIZE": "x"}, ("SQLALCHEMY_POOL_SIZE",)),
                        ({"REDASH_WEB_WORKERS": "x"}, ("REDASH_WEB_WORKERS",)),
                        ({"SQLALCHEMY_DISABLE_POOL": "x"}, ("SQLALCHEMY_DISABLE_POOL",)),
                        ({"SQLALCHEMY_MAX_OVERFLOW": "lots"}, ()),
                        ({"SQLALCHEMY_DISABLE_POOL": "maybe"}, ())):
        got, _ = per_pod(script("server"), env, secret=secret)
        assert got.pools == [] and got.unknown, (env, secret)
    got, _ = per_pod(script("worker"), {"WORKERS_COUNT": "x"}, secret=("WORKERS_COUNT",))
    assert got.pools == [] and "WORKERS_COUNT" in got.unknown[0]
    got, _ = per_pod(script("server"), image="redash/redash:8.0.0.b32245")
    assert got.pools == [] and "before 10.0" in got.unknown[0]
    got, _ = per_pod(("/app/bin/docker-entrypoint", "dev_server"))
    assert got.pools == [] and "dev_server" in got.unknown[0]


def test_unlimited_queue_pool_is_unbounded():
    got, _ = per_pod(script("server"), {"SQLALCHEMY_MAX_OVERFLOW": "-1"})
    assert got.pools[0].bound == "unbounded"


def test_the_image_name():
    assert is_redash("docker.io/redash/redash:25.8.0")
    assert not is_redash("redash/nginx:latest") and not is_redash("example/redash:1")


def test_source_of_a_set_value():
    got, _ = per_pod(script("server"), {"SQLALCHEMY_POOL_SIZE": "7"})
    assert got.pools[0].size.source == Source(path="k8s/app.yaml", line=10,
                                              key="SQLALCHEMY_POOL_SIZE")
