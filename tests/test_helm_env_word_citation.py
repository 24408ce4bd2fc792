"""A number a `sh -c` script reads from one of several env variables is cited where that
variable is set, not where the script's first variable is (audit 6a D6, DefectDojo's
chart: `celery worker --loglevel="${LOG}" --concurrency="${N:-1}"` with both from a
ConfigMap; the 8 a template's `| default "8"` gave was cited at the values line of
`logLevel`, and a `--set` concurrency at that line too)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.deploy_helpers import line_no
from tests.tree_helpers import write

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")

CHART = "apiVersion: v2\nname: app\nversion: 1.0.0\n"
VALUES = """\
queue:
  logLevel: INFO
  worker:
    replicas: 1
    settings:
      pool: prefork
      # concurrency: 4
db:
  host: db
"""
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-env
data:
  LOG: {{ .Values.queue.logLevel }}
  POOL: {{ .Values.queue.worker.settings.pool }}
  N: '{{ .Values.queue.worker.settings.concurrency | default "8" }}'
  DATABASE_URL: postgres://app@{{ .Values.db.host }}:5432/app
"""
WORKER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-worker
spec:
  replicas: {{ .Values.queue.worker.replicas }}
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: worker
          image: ghcr.io/acme/worker:1
          envFrom:
            - configMapRef:
                name: {{ .Release.Name }}-env
          command:
            - sh
            - -c
            - >-
              exec celery -A app worker --loglevel="${LOG}" --pool="${POOL}"
              --concurrency="${N:-1}"
"""
DB = """\
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: db
          image: postgres:17
"""


def _concurrency(tmp_path, set_values: list[str]):
    write(tmp_path, {"chart/Chart.yaml": CHART, "chart/values.yaml": VALUES,
                     "chart/templates/configmap.yaml": CONFIGMAP,
                     "chart/templates/worker.yaml": WORKER,
                     "chart/templates/db.yaml": DB,
                     # the worker's application: a Django project run by Celery
                     "worker/Dockerfile": "FROM python:3.12-slim\nCOPY . /app\n",
                     "worker/requirements.txt": "Django==5.2\ncelery==5.4.0\n"})
    result = run_check([str(tmp_path / "chart")],
                       CheckOptions(cache=False, root=tmp_path, set_values=set_values))
    (budget,) = result.budgets
    (c,) = budget.contributions
    (term,) = [f for f in c.factors if f.label == "Celery concurrency"]
    return term


def test_a_template_default_is_cited_at_the_template_line(tmp_path):
    term = _concurrency(tmp_path, [])
    assert term.value == 8
    assert term.source.path == "chart/templates/configmap.yaml"
    assert term.source.line == line_no(tmp_path / "chart/templates/configmap.yaml",
                                       '| default "8"')


def test_a_set_value_is_cited_at_the_set(tmp_path):
    term = _concurrency(tmp_path, ["queue.worker.settings.concurrency=3"])
    assert term.value == 3
    assert term.source.path == "--set"
