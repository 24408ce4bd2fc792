"""Without the Helm engine (the values-only fallback), a chart that deploys a PostgreSQL
server its values or templates name is a PA901 error and every budget a floor, never "no
findings (no PostgreSQL server found)", exit 0, nor "fits, peak 0". Audit 47 D2: with the
engine hidden, goharbor/harbor-helm (database.internal.image.repository
goharbor/harbor-db), windmill's chart (templates/postgresql-demo-app.yaml `image:
postgres:18`), supabase-community's chart (image.db.repository supabase/postgres) and
zitadel-charts' examples/cloudnativepg/postgres-cluster (a CloudNativePG Cluster in
templates/) each said "no findings (no PostgreSQL server found)", exit 0; airflow-helm's
chart (stable postgresql 8.6.4, not vendored, legacy postgresqlDatabase values) said the
same, and once that server was built from its values, "fits, peak 0". Charts written in
those shapes."""

from __future__ import annotations

import importlib.util

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.render.helm_process import EngineProcess
from tests.tree_helpers import write


@pytest.fixture
def no_engine(monkeypatch):
    """As a slim install: helm-python-sdk is not found, and no engine process starts."""
    found = importlib.util.find_spec

    def refuse(self):
        raise AssertionError("the Helm engine was started")

    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "helm_python" else found(name, *a))
    monkeypatch.setattr(EngineProcess, "_start", refuse)


REGISTRY_CHART = {
    "chart/Chart.yaml": "apiVersion: v2\nname: registry\nversion: 1.0.0\nappVersion: 2.0.0\n",
    "chart/values.yaml": """\
core:
  replicas: 1
database:
  type: internal
  internal:
    image:
      repository: docker.io/example/registry-db
      tag: dev
  maxOpenConns: 900
metrics:
  exporter:
    image:
      repository: docker.io/prometheuscommunity/postgres-exporter
""",
    "chart/templates/database-ss.yaml": """\
{{- if eq .Values.database.type "internal" }}
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-database
spec:
  template:
    spec:
      containers:
        - name: database
          image: "{{ .Values.database.internal.image.repository }}:dev"
{{- end }}
""",
}


def _check(tmp_path, path: str = "chart"):
    return run_check([tmp_path / path], CheckOptions(root=tmp_path, cache=False))


def test_a_server_image_in_the_values_is_a_file_not_read(tmp_path, no_engine, monkeypatch):
    # harbor's shape; its db image is goharbor/harbor-db (a PostgreSQL server image)
    tree = dict(REGISTRY_CHART)
    tree["chart/values.yaml"] = tree["chart/values.yaml"].replace("example/registry-db",
                                                                  "goharbor/harbor-db")
    write(tmp_path, tree)
    r = _check(tmp_path)
    (pa901,) = [f for f in r.findings if f.code == "PA901"]
    assert pa901.severity == "error", pa901
    assert (pa901.location.path, pa901.location.line) == ("chart/values.yaml", 7)
    assert "NOT rendered" in pa901.message and "goharbor/harbor-db" in pa901.message
    # the exporter image (postgres-exporter) is no server
    assert "postgres-exporter" not in pa901.message


def test_a_disabled_section_names_no_server(tmp_path, no_engine):
    tree = dict(REGISTRY_CHART)
    tree["chart/values.yaml"] = tree["chart/values.yaml"].replace(
        "example/registry-db", "library/postgres").replace(
        "  internal:\n", "  internal:\n    enabled: false\n")
    write(tmp_path, tree)
    assert [f for f in _check(tmp_path).findings if f.code == "PA901"] == []


def test_a_server_image_written_in_a_template_is_a_file_not_read(tmp_path, no_engine):
    # windmill's shape: a demo PostgreSQL Deployment with its image written as such
    write(tmp_path, {
        "chart/Chart.yaml": "apiVersion: v2\nname: flows\nversion: 1.0.0\n",
        "chart/values.yaml": "postgresql:\n  enabled: true\napp:\n  replicas: 2\n",
        "chart/templates/postgresql-demo.yaml": """\
{{ if .Values.postgresql.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: flows-postgresql-demo
spec:
  template:
    spec:
      containers:
        - name: postgres
          image: postgres:18
{{ end }}
""",
        # a Helm test hook's client image is no server of the release
        "chart/templates/tests/db.yaml": "image: postgres:15-alpine\n"})
    r = _check(tmp_path)
    (pa901,) = [f for f in r.findings if f.code == "PA901"]
    assert (pa901.location.path, pa901.location.line) == \
        ("chart/templates/postgresql-demo.yaml", 11)
    assert "postgres:18" in pa901.message and "15-alpine" not in pa901.message


def test_an_operator_cluster_in_a_template_is_a_file_not_read(tmp_path, no_engine):
    # zitadel-charts examples/cloudnativepg/postgres-cluster's shape
    write(tmp_path, {
        "chart/Chart.yaml": "apiVersion: v2\nname: pg-cluster\nversion: 0.1.0\n",
        "chart/templates/cluster.yaml": "#file: noinspection X\napiVersion: "
                                        "postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n"
                                        "  name: app-pg\nspec:\n  instances: 1\n"})
    (pa901,) = [f for f in _check(tmp_path).findings if f.code == "PA901"]
    assert pa901.location.line == 2 and "Cluster (postgresql.cnpg.io)" in pa901.message


AIRFLOW_SHAPE = {
    "chart/Chart.yaml": """\
apiVersion: v2
name: workflows
version: 8.9.0
appVersion: 2.8.4
dependencies:
  - name: postgresql
    version: 8.6.4
    repository: https://charts.helm.sh/stable
    condition: postgresql.enabled
""",
    "chart/values.yaml": """\
scheduler:
  replicas: 1
pgbouncer:
  enabled: true
  poolSize: 20
postgresql:
  enabled: true
  image:
    registry: ghcr.io
    repository: example/postgresql-bitnami
    tag: 11.22-patch.0
  postgresqlDatabase: workflows
  postgresqlUsername: postgres
""",
    "chart/templates/scheduler.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-scheduler
spec:
  replicas: {{ .Values.scheduler.replicas }}
  template:
    spec:
      containers:
        - name: scheduler
          image: example/workflows:2.8.4
          env:
            - name: DATABASE_URL
              value: postgresql://postgres@{{ .Release.Name }}-postgresql:5432/workflows
""",
}


def test_a_legacy_bitnami_dependency_is_built_and_its_budget_is_a_floor(tmp_path, no_engine):
    write(tmp_path, AIRFLOW_SHAPE)
    r = _check(tmp_path)
    (budget,) = r.budgets
    assert budget.server == "release-postgresql"
    assert budget.unread_files, budget  # a floor: the templates were not evaluated
    (pa901,) = [f for f in r.findings if f.code == "PA901"]
    assert "built from the values only" in pa901.message


def test_a_disabled_legacy_dependency_is_not_built(tmp_path, no_engine):
    tree = dict(AIRFLOW_SHAPE)
    tree["chart/values.yaml"] = tree["chart/values.yaml"].replace(
        "postgresql:\n  enabled: true", "postgresql:\n  enabled: false")
    write(tmp_path, tree)
    r = _check(tmp_path)
    assert r.budgets == [] and [f for f in r.findings if f.code == "PA901"] == []


def test_an_operator_cluster_in_the_values_is_a_file_not_read(tmp_path, no_engine):
    # 8gears/n8n-helm-chart examples/values_full.yaml's shape: the chart writes
    # extraManifests out; one is a CloudNativePG Cluster
    write(tmp_path, {
        "chart/Chart.yaml": "apiVersion: v2\nname: flows\nversion: 1.1.0\n",
        "chart/values.yaml": "main:\n  config: {}\nextraManifests: []\n",
        "chart/templates/extraManifests.yaml":
            "{{ range .Values.extraManifests }}\n---\n{{ toYaml . }}\n{{ end }}\n",
        "values_full.yaml": """\
main:
  config:
    db:
      type: postgresdb
      postgresdb:
        host: db-rw
extraManifests:
  - apiVersion: postgresql.cnpg.io/v1
    kind: Cluster
    metadata:
      name: db
    spec:
      instances: 1
"""})
    given = [str(tmp_path / "values_full.yaml")]
    r = run_check([tmp_path / "chart"],
                  CheckOptions(root=tmp_path, cache=False, values_files=given))
    (pa901,) = [f for f in r.findings if f.code == "PA901"]
    assert (pa901.location.path, pa901.location.line) == ("values_full.yaml", 9)
    assert "resource Cluster (postgresql.cnpg.io)" in pa901.message


def test_a_bitnami_dependency_its_condition_disables_is_no_server(tmp_path, no_engine):
    # goauthentik/helm charts/authentik's shape: postgresql.enabled false (condition
    # postgresql.enabled) beside primary.extendedConfiguration; the fallback built it and
    # said "release-postgresql: fits" for a server the chart does not deploy
    write(tmp_path, {
        "chart/Chart.yaml": """\
apiVersion: v2
name: idp
version: 2026.8.0
dependencies:
  - name: postgresql
    version: 18.8.12
    repository: oci://registry-1.docker.io/bitnamicharts
    condition: postgresql.enabled
""",
        "chart/values.yaml": """\
postgresql:
  enabled: false
  image:
    repository: library/postgres
  primary:
    extendedConfiguration: |
      max_connections = 500
"""})
    r = _check(tmp_path)
    assert r.budgets == [] and [f for f in r.findings if f.code == "PA901"] == []
