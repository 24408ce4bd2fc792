"""Dify from its images (audit 6 on BorisPolonsky/dify-helm: api, worker, beat and the
plugin daemon were clients of unknown size, 1 per pod, on a server their defaults put
over): the dify-api image's program by MODE (api: gunicorn SERVER_WORKER_AMOUNT workers;
worker: one Celery process under gevent, a process per slot under prefork; beat: none),
each process one SQLAlchemy engine of SQLALCHEMY_POOL_SIZE 30 + SQLALCHEMY_MAX_OVERFLOW
10; pgvector's pools per vector object; the plugin daemon's DB_MAX_OPEN_CONNS 30."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")
API = "langgenius/dify-api:1.16.1"
DAEMON = "langgenius/dify-plugin-daemon:0.6.3-local"
DB_ENV = {"DB_HOST": "db", "DB_PORT": "5432", "DB_DATABASE": "dify"}


def deployment(name: str, image: str, env: dict[str, str | None], replicas: int = 1,
               init: bool = False) -> str:
    """The chart's shape: env by value, or from a Secret (None); Recreate, so that the
    pods at peak are the replicas."""
    lines = "".join(
        f"            - {{name: {k}, value: \"{v}\"}}\n" if v is not None else
        f"            - {{name: {k}, valueFrom: {{secretKeyRef: {{name: s, key: {k}}}}}}}\n"
        for k, v in env.items())
    init_block = f"""
      initContainers:
        - name: check-api
          image: {image}
          command: [sh, -c, "until curl http://api:5001/health; do sleep 1; done"]
          env:
{lines}""" if init else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  strategy: {{type: Recreate}}
  template:
    spec:{init_block}
      containers:
        - name: {name}
          image: {image}
          env:
{lines}"""


def pools_of(tmp_path, name: str):
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    return next(c for c in topo.clients if c.name == name).pools


def budget_of(tmp_path):
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    return result, budget


def test_chart_defaults_api_worker_beat_and_plugin_daemon(tmp_path):
    """dify-helm's defaults, each Deployment 2 pods: 2 x 40 + 2 x 40 + 0 + 2 x 30 = 220,
    over a server of 100 (the hand count of audit 6; the tool said >= 7, cannot tell)."""
    write(tmp_path, {
        "k8s/db.yaml": POSTGRES_DB.replace("max_connections=50", "max_connections=100"),
        "k8s/api.yaml": deployment("api", API, {"MODE": "api", **DB_ENV}, replicas=2),
        "k8s/worker.yaml": deployment("worker", API, {"MODE": "worker", **DB_ENV},
                                      replicas=2, init=True),
        "k8s/beat.yaml": deployment("beat", API, {"MODE": "beat", **DB_ENV}, replicas=2),
        "k8s/daemon.yaml": deployment("daemon", DAEMON, {"DB_USERNAME": "postgres",
                                                         **DB_ENV}, replicas=2)})
    result, budget = budget_of(tmp_path)
    totals = {c.who: c.total for c in budget.contributions}
    assert totals == {"api": 80, "worker": 80, "beat": 0, "daemon": 60}
    assert budget.peak == 220 and not budget.unknown_clients
    (api,) = pools_of(tmp_path, "api")
    assert api.bound == "default" and api.processes.value == 1
    assert "SERVER_WORKER_AMOUNT" in api.processes.label
    # the beat's named 0 does not break the over-share advice of PA101
    assert any(f.code == "PA101" for f in result.findings)
    assert not any("internal error" in n for n in result.notices)


def test_api_workers_and_pool_from_the_env(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/api.yaml": deployment("api", API, {
        **DB_ENV, "SERVER_WORKER_AMOUNT": "4", "SQLALCHEMY_POOL_SIZE": "10"})})
    (pool,) = pools_of(tmp_path, "api")
    assert (pool.processes.value, pool.size.value, pool.bound) == (4, 20, "fixed")
    assert pool.size.source.key == "SQLALCHEMY_POOL_SIZE"
    assert pool.per_pod() == 80


@pytest.mark.parametrize("env, processes", [
    ({"CELERY_WORKER_AMOUNT": "8"}, None),  # gevent: greenlets of one process
    ({"CELERY_WORKER_POOL": "prefork", "CELERY_WORKER_AMOUNT": "3"}, 3),
    ({"CELERY_WORKER_CLASS": "prefork", "CELERY_WORKER_AMOUNT": "3",
      "CELERY_WORKER_CONCURRENCY": "5"}, 5),  # CONCURRENCY over AMOUNT
    ({"CELERY_WORKER_POOL": "threads", "CELERY_WORKER_CLASS": "prefork",
      "CELERY_WORKER_AMOUNT": "3"}, None),  # POOL over CLASS
    ({"CELERY_WORKER_POOL": "prefork", "CELERY_AUTO_SCALE": "True",
      "CELERY_MAX_WORKERS": "6"}, 6),
])
def test_worker_processes_by_celery_pool(tmp_path, env, processes):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/worker.yaml": deployment(
        "worker", API, {"MODE": "worker", **DB_ENV, **env})})
    (pool,) = pools_of(tmp_path, "worker")
    assert (pool.processes.value if pool.processes else None) == processes
    assert pool.size.value == 40


def test_worker_autoscale_prefork_is_the_node_cpus(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/worker.yaml": deployment("worker", API, {
        "MODE": "worker", **DB_ENV, "CELERY_WORKER_POOL": "prefork",
        "CELERY_AUTO_SCALE": "true"})})
    (pool,) = pools_of(tmp_path, "worker")
    assert pool.bound == "default" and pool.cpu_formula is not None
    assert pool.processes.value == 4  # 4 CPUs assumed


@pytest.mark.parametrize("env", [
    {"SERVER_WORKER_AMOUNT": None},
    {"SQLALCHEMY_MAX_OVERFLOW": None},
    {"SQLALCHEMY_POOL_SIZE": "-1"},
])
def test_values_not_held_or_not_read_leave_the_client_unknown(tmp_path, env):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/api.yaml": deployment(
        "api", API, {**DB_ENV, **env})})
    _, budget = budget_of(tmp_path)
    assert budget.unknown_clients == ["api"]


def test_pool_size_zero_is_unbounded(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/api.yaml": deployment(
        "api", API, {**DB_ENV, "SQLALCHEMY_POOL_SIZE": "0"})})
    (pool,) = pools_of(tmp_path, "api")
    assert pool.bound == "unbounded"


def test_pgvector_pools_on_the_same_server_have_no_limit(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/api.yaml": deployment("api", API, {
        **DB_ENV, "DB_USERNAME": "postgres", "VECTOR_STORE": "pgvector",
        "PGVECTOR_HOST": "db", "PGVECTOR_PORT": "5432", "PGVECTOR_DATABASE": "vectors"})})
    main, vector = pools_of(tmp_path, "api")
    assert (main.size.value, vector.bound) == (40, "unbounded")
    assert vector.route.host == "db" and vector.route.dbname == "vectors"
    _, budget = budget_of(tmp_path)
    assert budget.unbounded_clients == ["api"]


def test_other_databases_and_programs(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/mysql.yaml": deployment("mysql-api", API,
                                                  {**DB_ENV, "DB_TYPE": "mysql"}),
                     "k8s/migrate.yaml": deployment("migrate", API, {
                         **DB_ENV, "MODE": "migration", "MIGRATION_ENABLED": "true"}),
                     "k8s/job.yaml": deployment("job", API, {**DB_ENV, "MODE": "job"})})
    clients = scan([str(tmp_path)], CheckOptions(cache=False)).topology.clients
    assert all(c.pools == [] for c in clients if c.name == "mysql-api")  # MySQL: none
    (migrate,) = pools_of(tmp_path, "migrate")
    assert migrate.per_pod() == 1
    (job,) = pools_of(tmp_path, "job")
    assert job.per_pod() == 40 and job.processes is None


def test_migration_mode_without_migrations_is_the_api(tmp_path):
    # MODE=migration with MIGRATION_ENABLED unset falls to the entrypoint's else: gunicorn
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/api.yaml": deployment(
        "api", API, {**DB_ENV, "MODE": "migration"})})
    (pool,) = pools_of(tmp_path, "api")
    assert pool.per_pod() == 40 and "gunicorn" in pool.label


@pytest.mark.parametrize("image, env, per_pod, bound", [
    (DAEMON, {}, 30, "default"),
    (DAEMON, {"DB_MAX_OPEN_CONNS": "50"}, 50, "fixed"),
    (DAEMON, {"DB_MAX_OPEN_CONNS": "0"}, 0, "unbounded"),
    ("langgenius/dify-plugin-daemon:0.0.9-local", {}, 0, "unbounded"),
])
def test_plugin_daemon_max_open_conns(tmp_path, image, env, per_pod, bound):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/daemon.yaml": deployment(
        "daemon", image, {**DB_ENV, **env})})
    (pool,) = pools_of(tmp_path, "daemon")
    assert (pool.per_pod(), pool.bound) == (per_pod, bound)


def test_plugin_daemon_max_from_a_secret_is_unknown(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/daemon.yaml": deployment(
        "daemon", DAEMON, {**DB_ENV, "DB_MAX_OPEN_CONNS": None})})
    _, budget = budget_of(tmp_path)
    assert budget.unknown_clients == ["daemon"]
