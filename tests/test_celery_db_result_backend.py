"""A container whose only PostgreSQL URL is a Celery database result backend
(`CELERY_RESULT_BACKEND=db+postgresql://...`): the connections are Celery's own engine's,
not an application pool's. yolossn/flask-celery-microservice (audit 15 D1): its Flask
server (gunicorn --workers 10) was given SQLAlchemy's QueuePool 15 per process from
requirements.txt, 2 x 10 x 15 = 300, while Celery's SessionManager builds a NullPool
engine outside a prefork worker child (celery/backends/database/session.py get_engine):
2 x 10 x 1 = 20. A prefork worker child keeps its QueuePool (5 + 10)."""

from __future__ import annotations

from advisor.engine.check import run_check
from tests.tree_helpers import write

DB = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pg, namespace: data}
spec:
  serviceName: pg
  replicas: 1
  selector: {matchLabels: {app: pg}}
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers: [{name: pg, image: "postgres:16"}]
---
apiVersion: v1
kind: Service
metadata: {name: pg, namespace: data}
spec:
  selector: {app: pg}
  ports: [{port: 5432}]
"""

APPS = """\
apiVersion: v1
kind: Secret
metadata: {name: tasks-env, namespace: web}
stringData:
  CELERY_RESULT_BACKEND: db+postgresql://u:p@pg.data:5432/results
  CELERY_BROKER_URL: amqp://u:p@mq.mq:5672
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: shop/api:1
          envFrom: [{secretRef: {name: tasks-env}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: jobs, namespace: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: jobs}}
  template:
    metadata: {labels: {app: jobs}}
    spec:
      containers:
        - name: jobs
          image: shop/api:1
          command: ["celery", "-A", "tasks.celery", "worker", "--concurrency", "2"]
          envFrom: [{secretRef: {name: tasks-env}}]
"""


def _tree(tmp_path):
    return write(tmp_path, {
        "k8s/db.yaml": DB, "k8s/apps.yaml": APPS,
        "requirements.txt": "celery==5.0.1\nSQLAlchemy==1.3.20\npsycopg2-binary\nFlask\n",
        "tasks.py": "from celery import Celery\n"
                    "import os\n"
                    "celery = Celery('t', backend=os.getenv('CELERY_RESULT_BACKEND'))\n",
        "Dockerfile": "FROM python:3.11\nCOPY . /app\n"
                      "CMD gunicorn --workers 4 --bind 0.0.0.0:5000 main:app\n",
        "main.py": "from flask import Flask\napp = Flask(__name__)\n"})


def test_web_processes_hold_one_connection_each_worker_children_a_queuepool(tmp_path):
    r = run_check([_tree(tmp_path)])
    (b,) = [b for b in r.budgets if b.server == "pg"]
    by = {c.who: c.total for c in b.contributions}
    assert by["api"] == (2 + 1) * 4 * 1  # NullPool: one connection per gunicorn worker
    assert by["jobs"] == (1 + 1) * 2 * 15  # prefork children: QueuePool 5 + 10 each
    assert b.peak == 12 + 60 and b.fits  # before: 3 x 4 x 15 = 180 for api, OVER
