"""A chart whose dependencies are not vendored (no `helm dependency build`): a Bitnami
postgresql dependency with no values of its own is still the chart's default server,
and a dependency that runs PostgreSQL pool-advisor cannot build from values (a
postgresql-ha chart, or another chart's own postgresql subchart the values enable) is a
PA901 warning at the line that enables it. khuedoan/homelab (dendrite with
`dendrite.postgresql.enabled: true`) printed "no findings" and exited 0."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

CHART = """apiVersion: v2
name: app
version: 1.0.0
dependencies:
{deps}"""
DEP = ("  - name: {name}\n    version: {version}\n    repository: https://charts.example.org\n"
       "    condition: {name}.enabled\n")
WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-web}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: web
          image: ghcr.io/acme/web:1
          env:
            - {name: DATABASE_URL, value: "postgres://app@{{ .Release.Name }}-postgresql:5432/app"}
"""


def chart(tmp_path, deps: list[tuple[str, str]], values: str):
    write(tmp_path, {
        "chart/Chart.yaml": CHART.format(deps="".join(DEP.format(name=n, version=v)
                                                      for n, v in deps)),
        "chart/values.yaml": values, "chart/templates/web.yaml": WEB})
    return run_check([str(tmp_path / "chart")], CheckOptions(cache=False))


@pytest.mark.parametrize("version", ["15.5.0", "^12.1.0", "\">=9.0.0\"", "10.16.2"])
def test_a_postgresql_dependency_without_values_is_its_default_server(tmp_path, version):
    result = chart(tmp_path, [("postgresql", version)], "replicaCount: 1\n")
    (budget,) = result.budgets
    # chart 10.x ships PostgreSQL 11, where WAL senders take max_connections slots: the
    # Bitnami image's own postgresql.conf sets max_wal_senders 16, so 100 - 3 - 16
    assert budget.server == "release-postgresql"
    assert budget.usable == (81 if version.startswith("10") else 97)
    assert budget.unknown_clients == ["release-web"]


def test_a_disabled_postgresql_dependency_is_no_server(tmp_path):
    result = chart(tmp_path, [("postgresql", "15.5.0")], "postgresql:\n  enabled: false\n")
    assert result.budgets == []


def test_dependencies_that_run_postgresql_and_are_not_read_are_said(tmp_path):
    result = chart(tmp_path, [("postgresql-ha", "14.0.0"), ("dendrite", "0.14.0")],
                   "postgresql-ha:\n  enabled: true\ndendrite:\n  postgresql:\n"
                   "    enabled: true\n")
    found = sorted((f.location.label(), f.severity.value, f.message.split(",")[0])
                   for f in result.findings if f.code == "PA901")
    assert found == [
        ("values.yaml:2", "warning", "helm: .: dependency 'postgresql-ha' (postgresql-ha) "
                                     "runs PostgreSQL"),
        ("values.yaml:5", "warning", "helm: .: the values enable dendrite.postgresql"),
    ]


def test_a_dependency_whose_postgresql_is_off_or_unsaid_is_not_flagged(tmp_path):
    result = chart(tmp_path, [("postgresql-ha", "14.0.0"), ("dendrite", "0.14.0")],
                   "postgresql-ha:\n  enabled: false\ndendrite:\n  postgresql:\n"
                   "    enabled: false\n")
    assert [f for f in result.findings if f.code == "PA901"] == []


def _servers(tmp_path, values: str):
    from advisor.engine.check import scan

    chart(tmp_path, [("postgresql", "14.2.3")], values)
    return scan([str(tmp_path / "chart")], CheckOptions(cache=False)).topology.servers


def test_a_postgresql_dependencys_resources_give_its_server_cores(tmp_path):
    """`postgresql.primary.resources.limits.cpu` on a Bitnami dependency that is not
    vendored (Mastodon's chart pins 14.2.3): the chart renders primary.resources as the
    container's resources (templates/primary/statefulset.yaml `resources: toYaml
    .Values.primary.resources`), so the server has 1 core, cited at its values line; it
    was "CPU count not in repository". A request alone is its cores too (PA111 says it
    is a floor); readReplicas.resources are the replicas'."""
    values = ("postgresql:\n  primary:\n    resources:\n      requests: {cpu: 500m}\n"
              "      limits:\n        cpu: \"1\"\n        memory: 2Gi\n")
    (server,) = _servers(tmp_path, values)
    assert server.cpu_limit is not None and server.cpu_limit.value == 1
    assert server.cpu_limit.source.label() == "values.yaml:6"
    assert server.memory_limit is not None and server.memory_limit.value == 2 * 2**30

    values = ("postgresql:\n  architecture: replication\n  primary:\n"
              "    resources: {requests: {cpu: 250m}}\n"
              "  readReplicas:\n    resources: {limits: {cpu: 2}}\n")
    cores = {s.name: s.cpu_limit.value if s.cpu_limit else None
             for s in _servers(tmp_path, values)}
    assert cores == {"release-postgresql-primary": 0.25, "release-postgresql-read": 2}


CP_DEP = ("  - name: postgres\n    version: {version}\n"
          "    repository: oci://ghcr.io/cloudpirates-io/helm-charts\n"
          "    condition: db.enabled\n")
RAILS = WEB.replace("-postgresql:5432/app\"", "-postgres:5432/app?pool=40\"")


def cloudpirates(tmp_path, version: str, values: str, lock: str | None = None):
    files = {"chart/Chart.yaml": CHART.format(deps=CP_DEP.format(version=version)),
             "chart/values.yaml": values, "chart/templates/web.yaml": RAILS}
    if lock is not None:
        files["chart/Chart.lock"] = (
            "dependencies:\n- name: postgres\n"
            "  repository: oci://ghcr.io/cloudpirates-io/helm-charts\n"
            f"  version: {lock}\ndigest: sha256:0\n")
    write(tmp_path, files)
    return run_check([str(tmp_path / "chart")], CheckOptions(cache=False))


def test_a_cloudpirates_postgres_dependency_is_built_from_its_values(tmp_path):
    """Zammad's chart: `postgres` from CloudPirates (OCI) not vendored. The chart's
    defaults give PostgreSQL 18 with max_connections 100, cited as the chart's defaults;
    it was no server at all, its clients only "in no budget" (PA107)."""
    result = cloudpirates(tmp_path, "0.19.16", "replicaCount: 1\npostgres:\n  auth:\n"
                                               "    username: app\n")
    (budget,) = result.budgets
    assert budget.server == "release-postgres"
    assert budget.usable == 97
    assert [f.code for f in result.findings if f.code in ("PA107", "PA901")] == []


def _cp_server(tmp_path, version: str, values: str, lock: str | None = None):
    from advisor.engine.check import scan

    cloudpirates(tmp_path, version, values, lock)
    return scan([str(tmp_path / "chart")], CheckOptions(cache=False)).topology.servers


def test_a_cloudpirates_postgres_reads_max_connections_image_and_resources(tmp_path):
    values = ("postgres:\n  image:\n    tag: \"17.2\"\n  resources:\n    limits:\n"
              "      memory: 2Gi\n  config:\n    postgresql:\n      max_connections: 300\n")
    (server,) = _cp_server(tmp_path, "^0.19.0", values)
    assert server.name == "release-postgres"
    assert server.version.value == 17
    assert server.settings["max_connections"].value == 300
    assert server.settings["max_connections"].source.label() == "values.yaml:9"
    assert server.memory_limit is not None and server.memory_limit.value == 2 * 2**30
    # the legacy key wins when > 0, as the chart's ternary has it
    values += "    postgresqlMaxConnections: 50\n"
    (server,) = _cp_server(tmp_path, "0.19.16", values)
    assert server.settings["max_connections"].value == 50
    assert server.settings["max_connections"].source.label() == "values.yaml:10"


def test_a_cloudpirates_postgres_default_cites_the_chart(tmp_path):
    (server,) = _cp_server(tmp_path, "0.19.16", "replicaCount: 1\n")
    assert server.version.value == 18
    assert "CloudPirates postgres chart 0.19.16" in server.version.source.label()
    assert server.settings["max_connections"].value == 100
    assert "config.postgresql.max_connections: 100" in \
        server.settings["max_connections"].source.label()


@pytest.mark.parametrize(("version", "lock"), [("0.10.0", None), ("^0.19.0", "0.12.4"),
                                               ("\">=0.1.0\"", None)])
def test_a_cloudpirates_postgres_version_not_read_is_said(tmp_path, version, lock):
    """A version whose values this does not read: PA901 names it and how to vendor it,
    and the app's clients stay "in no budget" (PA107), never dropped."""
    result = cloudpirates(tmp_path, version, "replicaCount: 1\n", lock)
    assert result.budgets == []
    (pa901,) = [f for f in result.findings if f.code == "PA901"]
    shown = lock or version.strip('"')
    assert f"CloudPirates postgres {shown} is built from values only for " \
        "charts 0.15.1-0.20.1" in pa901.message
    assert "helm dependency build" in pa901.message
    assert [f.code for f in result.findings if f.code == "PA107"] == ["PA107"]


@pytest.mark.parametrize(("version", "lock", "major", "cited"), [
    ("^18.2.0", "18.5.6", 18, "Chart.lock:4"),
    ("^12.1.0", None, 15, "default: Bitnami postgresql chart ^12.1.0"),
    ("\">=12.0.0\"", None, 18, "default: assumed PostgreSQL 18"),
    ("^16.0.0", "16.7.27", 17, "Chart.lock:4"),
])
def test_a_bitnami_dependency_takes_its_major_from_the_locked_chart(tmp_path, version, lock,
                                                                    major, cited):
    """Redash pins postgresql 18.5.6 in its lock file: PostgreSQL 18, not "assumed 15"."""
    from advisor.engine.check import scan

    files = {"chart/Chart.yaml": CHART.format(deps=DEP.format(name="postgresql",
                                                              version=version)),
             "chart/values.yaml": "replicaCount: 1\n", "chart/templates/web.yaml": WEB}
    if lock:
        files["chart/Chart.lock"] = ("dependencies:\n- name: postgresql\n"
                                     "  repository: https://charts.example.org\n"
                                     f"  version: {lock}\n")
    write(tmp_path, files)
    (server,) = scan([str(tmp_path / "chart")], CheckOptions(cache=False)).topology.servers
    assert server.version.value == major
    assert server.version.source.label().startswith(cited)
