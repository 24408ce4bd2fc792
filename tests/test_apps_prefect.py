"""Prefect's server from its image (audit of session 20 on PrefectHQ/prefect-helm: the
pool set in the container env and `--workers` were not read, and the server printed
"fits" where it is over): each `prefect server start` process (`--workers`, default 1)
and `prefect server services start` holds a SQLAlchemy pool of pool_size + max_overflow
(PREFECT_SERVER_DATABASE_SQLALCHEMY_POOL_SIZE / _MAX_OVERFLOW, unset: 5 + 10); a Prefect
worker talks to the API, not the database."""

from __future__ import annotations

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")


def prefect(args: str, env: str = "", name: str = "prefect-server") -> str:
    """The prefect-server chart's shape: tini and the entrypoint as command, the CLI in
    args, the database URL in the env."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: prefect
          image: prefecthq/prefect:3.4.10-python3.11
          command: [/usr/bin/tini, -g, --, /opt/prefect/entrypoint.sh]
          args: {args}
          env:
            - name: PREFECT_API_DATABASE_CONNECTION_URL
              value: postgresql+asyncpg://prefect:x@db:5432/prefect
{env}"""


def peak(tmp_path) -> float:
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    return budget.peak


def test_server_processes_and_pool_from_the_env(tmp_path):
    env = ("            - {name: PREFECT_SERVER_DATABASE_SQLALCHEMY_POOL_SIZE, value: \"40\"}\n"
           "            - {name: PREFECT_SQLALCHEMY_MAX_OVERFLOW, value: \"20\"}\n")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/server.yaml": prefect(
        "[prefect, server, start, --port, '4200', --workers, '4']", env)})
    assert peak(tmp_path) == 2 * 4 * (40 + 20)
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (pool,) = next(c for c in topo.clients if c.name == "prefect-server").pools
    assert pool.bound == "fixed" and pool.processes.source.key == "--workers"


def test_defaults_services_and_workers(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/server.yaml": prefect("[prefect, server, start]"),
                     "k8s/services.yaml": prefect("[prefect, server, services, start]",
                                                  name="prefect-services"),
                     "k8s/worker.yaml": prefect("[prefect, worker, start, --pool, k8s]",
                                                name="prefect-worker")})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    totals = {c.who: c.total for c in budget.contributions}
    # one process each, SQLAlchemy's 5 + 10 where Prefect sets none; the worker holds
    # no database pool (it has the URL in its env only because the chart gives it)
    assert totals["prefect-server"] == 2 * 15 and totals["prefect-services"] == 2 * 15
    assert "prefect-worker" not in totals or totals["prefect-worker"] == 0
    assert any(f.code == "PA104" and "prefect-server" in f.message for f in result.findings)

