"""PA107 for a chart whose values name its own database Service under another release
name (audit 25: Sajeyks/Django-Helm's values say davina-radius-postgresql, AVTopilin/
health-improve-workout-ms's helth-postgres-postgresql, while the chart renders here as
release 'release', its Service release-postgresql): the finding names that Service and
the release name that makes it the host, and with that --release the client links."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

CHART = {
    "chart/Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
    "chart/values.yaml": "dbHost: shop-db-postgresql\n",
    "chart/templates/db.yaml": """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-postgresql
spec:
  serviceName: {{ .Release.Name }}-postgresql
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: postgres, image: "postgres:16.4"}]
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-postgresql
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
""",
    "chart/templates/api.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-api
spec:
  replicas: 2
  strategy: {type: Recreate}
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: example/api:1
          env:
            - name: DATABASE_URL
              value: "postgres://app@{{ .Values.dbHost }}:5432/shop"
            - {name: DB_POOL_SIZE, value: "5"}
""",
}


def test_the_release_name_that_makes_the_host_the_charts_own_service_links_it(tmp_path):
    """Audit 46 D1: a host named in the workload's env is linked as if the chart were
    installed as that release (the only name under which it connects), said in a notice
    that names the release and --release; it was PA107 with the server "fits, peak 0"."""
    write(tmp_path, CHART)
    r = run_check([str(tmp_path / "chart")], CheckOptions(cache=False, root=tmp_path))
    assert [f for f in r.findings if f.code == "PA107"] == []
    (budget,) = r.budgets
    assert budget.server == "release-postgresql"
    assert budget.unknown_clients == ["release-api"]
    (said,) = [n for n in r.notices if "as if installed so" in n]
    assert "Service release-postgresql" in said and "release 'shop-db'" in said
    assert "--release shop-db" in said


def test_the_release_name_is_said_for_a_host_from_the_applications_files(tmp_path):
    """A host read from the application's own configuration (not the pod's env) is not
    linked so: PA107 names the Service and the release name that makes it the host."""
    write(tmp_path, {**CHART, "chart/templates/api.yaml": CHART["chart/templates/api.yaml"]
                     .replace("postgres://app@{{ .Values.dbHost }}:5432/shop", "unused"),
                     "api/package.json": '{"name": "api", "dependencies": {"pg": "8.13.1"}}',
                     "api/Dockerfile": "FROM node:20\nCOPY . .\n",
                     "api/db.js": "const { Pool } = require('pg')\n"
                                  "module.exports = new Pool({ host: 'shop-db-postgresql',"
                                  " max: 5 })\n",
                     ".pool-advisor.toml": '[[workloads]]\nname = "release-api"\n'
                                           'source = "api"\n'})
    r = run_check([str(tmp_path / "chart")], CheckOptions(
        cache=False, root=tmp_path, config=tmp_path / ".pool-advisor.toml"))
    (pa107,) = [f for f in r.findings if f.code == "PA107"]
    assert "release 'release'" in pa107.message
    assert "Service release-postgresql" in pa107.message
    assert "--release shop-db" in pa107.message


def test_with_that_release_name_the_client_links(tmp_path):
    write(tmp_path, CHART)
    r = run_check([str(tmp_path / "chart")],
                  CheckOptions(cache=False, root=tmp_path, release="shop-db"))
    assert [f for f in r.findings if f.code == "PA107"] == []
    (budget,) = r.budgets
    assert budget.server == "shop-db-postgresql"
