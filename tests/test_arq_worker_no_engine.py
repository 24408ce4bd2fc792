"""A worker whose entry module imports no SQLAlchemy engine, and loads no module by name,
opens none: the engines of the folder it shares with the API are the API's (audit 37
D11, Kludex/fastapi-microservices' users-worker shape: `arq app.worker.WorkerSettings`,
app/worker.py imports only arq and asyncio; every engine of users/ was counted, "may
connect here"). A string naming another app module (arq's func("app.jobs.run"), which
arq imports by name: arq/worker.py func() -> import_string) keeps the upper bound.
Our own tree."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

DATABASE = """from sqlalchemy import create_engine

engine = create_engine("postgresql://u:p@db:5432/app")
"""
JOBS = """from app.database import engine


async def run(ctx):
    with engine.connect() as c:
        c.exec_driver_sql("select 1")
"""
WORKER = """import asyncio

from arq.connections import RedisSettings


async def ping(ctx, word: str):
    await asyncio.sleep(1)
    return word


class WorkerSettings:
    functions = [FUNCS]
    redis_settings = RedisSettings(host="redis")
"""
K8S = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: worker
          image: "worker:latest"
          command: ["arq", "app.worker.WorkerSettings"]
"""


def _peak(tmp_path, funcs: str) -> float:
    write(tmp_path, {"requirements.txt": "arq==0.19\nsqlalchemy==1.4.11\npsycopg2==2.9.1\n",
                     "README.md": "```\ndocker build -t worker:latest .\n```\n",
                     "Dockerfile": "FROM python:3.8-slim\nWORKDIR /app\nCOPY ./app /app/app\n",
                     "app/__init__.py": "", "app/database.py": DATABASE,
                     "app/jobs.py": JOBS, "app/worker.py": WORKER.replace("FUNCS", funcs),
                     "k8s/db.yaml": POSTGRES_DB, "k8s/worker.yaml": K8S})
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    return budget.peak


def test_a_worker_importing_no_engine_opens_none(tmp_path):
    assert _peak(tmp_path, "ping") == 0


def test_a_module_named_by_a_string_keeps_the_folders_engines(tmp_path):
    funcs = 'ping, func("app.jobs.run", name="run")'
    assert _peak(tmp_path, funcs) == 2 * 15
