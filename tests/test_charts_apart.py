"""Charts of one repository render as installs of their own: two that render the same
object are alternatives, each its own environment, never one chart's object replacing
another's (audit I, session 17: makeplane/helm-charts' plane-mcp-server replaced
plane-ce's Django API, release-api-wl, as 'the last applied', and the API left the
budget)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions

pytest.importorskip("helm_python", reason="the Helm engine (helm-python-sdk) is needed")

DB = """apiVersion: v1
kind: Service
metadata: {name: "{{ .Release.Name }}-pgdb"}
spec:
  selector: {app: pgdb}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: "{{ .Release.Name }}-pgdb"}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: pgdb}}
    spec:
      containers: [{name: postgres, image: "postgres:15.7"}]
"""

API = """apiVersion: apps/v1
kind: Deployment
metadata: {name: "{{ .Release.Name }}-api-wl"}
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
        - name: api
          image: example/api:1
{{- if .Values.db }}
          env:
            - {name: DATABASE_URL, value: "postgres://plane@{{ .Release.Name }}-pgdb:5432/plane"}
{{- end }}
"""


def _chart(root, name, templates, values):
    (root / name / "templates").mkdir(parents=True)
    (root / name / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 1.0.0\n")
    (root / name / "values.yaml").write_text(values)
    for file, text in templates.items():
        (root / name / "templates" / file).write_text(text)


def test_charts_that_render_one_object_are_alternatives(tmp_path):
    _chart(tmp_path / "charts", "ce", {"db.yaml": DB, "api.yaml": API},
           "replicas: 40\ndb: true\n")
    _chart(tmp_path / "charts", "mcp", {"api.yaml": API}, "replicas: 1\ndb: false\n")
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.server == "release-pgdb [charts/ce]"
    # 40 + 10 surge pods of unknown size, one connection each at least
    assert [(c.who, c.total) for c in budget.contributions] == [
        ("release-api-wl [charts/ce]", 50)]
    assert not [n for n in result.notices if "defined 2 times" in n]
