"""An app built FROM tiangolo/uvicorn-gunicorn-fastapi (or uvicorn-gunicorn,
meinheld-gunicorn) with no CMD of its own runs the base image's /start.sh: gunicorn with
the image's gunicorn_conf.py, workers = WEB_CONCURRENCY when set, else
max(int(WORKERS_PER_CORE x cpu_count()), 2) at most MAX_WORKERS
(tiangolo/uvicorn-gunicorn-docker@cb5abd5 docker-images/start.sh:13-21,34,
gunicorn_conf.py:5-30). Audit 37 D10, Kludex/fastapi-microservices' shape: `ENV
WEB_CONCURRENCY 3` was not read, one process per pod assumed (2 x 15 = 30, right 90).
Our own tree."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

DOCKERFILE = """FROM tiangolo/uvicorn-gunicorn-fastapi:python3.8-slim

WORKDIR /app
ENV PYTHONPATH /app
ENVS
COPY ./requirements.txt /app/requirements.txt
RUN pip install -r requirements.txt
COPY ./app /app/app
"""
DATABASE = """from sqlalchemy.ext.asyncio import create_async_engine

engine = create_async_engine("postgresql+asyncpg://u:p@db:5432/users")
"""
MAIN = """from fastapi import FastAPI

from app.database import engine

app = FastAPI()
"""
README = "```\ndocker build -t users:latest -f docker/backend.dockerfile .\n```\n"
K8S = """
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: postgres, image: "postgres:12"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: users}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers: [{name: users, image: "users:latest"}]
"""


def _per_pod(tmp_path, envs: str, files: dict[str, str] | None = None) -> float:
    write(tmp_path, {"docker/backend.dockerfile": DOCKERFILE.replace("ENVS", envs),
                     "README.md": README,
                     "requirements.txt": "fastapi==0.63.0\nsqlalchemy==1.4.11\nasyncpg==0.22.0\n",
                     "app/__init__.py": "", "app/main.py": MAIN, "app/database.py": DATABASE,
                     "k8s/all.yaml": K8S, **(files or {})})
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    return budget.peak / 2


def test_web_concurrency_of_the_dockerfile_sets_the_workers(tmp_path):
    assert _per_pod(tmp_path, "ENV WEB_CONCURRENCY 3") == 3 * 15


def test_without_it_workers_per_core_times_cpus_at_least_two(tmp_path):
    # 4 CPUs assumed (node-cpus not set): max(int(1 x 4), 2) = 4
    assert _per_pod(tmp_path, "ENV MODULE_NAME app.main") == 4 * 15


def test_max_workers_caps_them(tmp_path):
    assert _per_pod(tmp_path, "ENV MAX_WORKERS 2") == 2 * 15


def test_the_apps_own_gunicorn_conf_replaces_the_images(tmp_path):
    # start.sh: /app/app/gunicorn_conf.py, when the image holds one, is the config
    conf = {"app/gunicorn_conf.py": "workers = 5\n"}
    assert _per_pod(tmp_path, "ENV WEB_CONCURRENCY 3", conf) == 5 * 15
