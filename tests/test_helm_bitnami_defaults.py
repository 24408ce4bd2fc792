"""A Bitnami postgresql dependency that is not vendored, built from the values
(helm_fallback), with what its chart version renders when the values say nothing
(helm_bitnami_defaults): the metrics exporter sidecar, the server's resources, and
the chart's refusal of metrics without a database (audit10c D1, D2: "fits 96 <= 97,
no findings, exit 0" where the vendored chart is over by 1, PA111/PA301 silently off)."""

from __future__ import annotations

import math

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.read.render.helm_bitnami_defaults import (
    default_resources,
    exporter_tag,
    requires_database,
    resolve,
)
from tests.tree_helpers import write

CHART = """apiVersion: v2
name: app
version: 1.0.0
dependencies:
  - name: postgresql
    version: {version}
    repository: https://charts.bitnami.com/bitnami
    condition: postgresql.enabled
"""
# 9 pods (+3 surge) x 8 = 96 of 97 usable: the exporter's connections decide the verdict
WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-web}
spec:
  replicas: 9
  template:
    spec:
      containers:
        - name: web
          image: unleashorg/unleash-server:7.5.0
          env:
            - {name: DATABASE_HOST, value: db-postgresql}
            - {name: DATABASE_POOL_MAX, value: "8"}
"""
METRICS = ("postgresql:\n  enabled: true\n  fullnameOverride: db-postgresql\n"
           "{auth}  metrics:\n    enabled: true\n")


def _write(tmp_path, version: str, values: str) -> str:
    write(tmp_path, {"chart/Chart.yaml": CHART.format(version=version),
                     "chart/values.yaml": values, "chart/templates/web.yaml": WEB})
    return str(tmp_path / "chart")


def check(tmp_path, version: str, values: str):
    return run_check([_write(tmp_path, version, values)], CheckOptions(cache=False))


def server(tmp_path, version: str, values: str):
    (found,) = scan([_write(tmp_path, version, values)],
                    CheckOptions(cache=False)).topology.servers
    return found


@pytest.mark.parametrize(("version", "exporter", "peak"), [
    ("13.4.4", 2, 98),  # postgres-exporter 0.15: a Server per DSN + the collector's
    ("11.5.0", 1, 97),  # 0.10.1: one Server per DSN
    ("~11.7.0", 2, 98),  # Helm installs the newest 11.7.x: 0.11 from 11.7.1
])
def test_metrics_enabled_adds_the_charts_exporter_sidecar(tmp_path, version, exporter, peak):
    result = check(tmp_path, version, METRICS.format(auth="  auth: {database: app}\n"))
    (budget,) = result.budgets
    parts = {c.who: math.prod(t.value for t in c.factors) for c in budget.contributions}
    assert parts.get("db-postgresql/metrics") == exporter
    assert budget.peak == peak
    assert ("PA101" in {f.code for f in result.findings}) == (peak > 97)


def test_metrics_without_a_database_is_the_charts_render_error(tmp_path):
    """Charts 11.0.0-15.5.11 `required` a database for metrics: Helm renders nothing,
    as the vendored chart's PA901 error says; never "no findings"."""
    result = check(tmp_path, "13.4.4", METRICS.format(auth=""))
    (error,) = [f for f in result.findings if f.code == "PA901"]
    assert error.severity.value == "error"
    assert error.location.label() == "values.yaml:5"
    assert "In order to enable metrics you need to specify a database" in error.message
    # 16.x scrapes 127.0.0.1:<port>/postgres: no database needed, the exporter counted
    result = check(tmp_path, "16.0.0", METRICS.format(auth=""))
    assert [f for f in result.findings if f.code == "PA901"] == []
    (budget,) = result.budgets
    assert budget.peak == 98


def test_the_charts_default_resources_are_the_servers(tmp_path):
    plain = "postgresql:\n  enabled: true\n  fullnameOverride: db-postgresql\n"
    old = server(tmp_path, "13.4.4", plain)  # values.yaml:446-450 requests cpu 250m
    assert old.cpu_limit is not None and old.cpu_limit.value == 0.25
    assert "chart 13.4.4 values.yaml primary.resources" in old.cpu_limit.source.label()
    assert old.memory_limit is None  # limits: {}
    nano = server(tmp_path, "15.5.0", plain)  # resourcesPreset nano: 150m / 192Mi limits
    assert nano.cpu_limit is not None and nano.cpu_limit.value == 0.15
    assert nano.memory_limit is not None and nano.memory_limit.value == 192 * 2**20
    assert "resourcesPreset 'nano'" in nano.memory_limit.source.label()
    none = server(tmp_path, "14.2.3", plain)  # resourcesPreset "none": the chart sets none
    assert none.cpu_limit is None and none.memory_limit is None
    result = check(tmp_path, "15.5.0", plain)
    assert {f.code for f in result.findings} >= {"PA111", "PA301"}


def test_values_over_the_defaults(tmp_path):
    base = "postgresql:\n  enabled: true\n  fullnameOverride: db-postgresql\n  primary:\n"
    # 11.0.0-14.0.x: Helm merges the user's map into the chart's: the request stays
    merged = server(tmp_path, "13.4.4", base + "    resources: {limits: {memory: 1Gi}}\n")
    assert merged.cpu_limit is not None and merged.cpu_limit.value == 0.25
    assert merged.memory_limit is not None and merged.memory_limit.value == 2**30
    # 15.x: the user's map whole, no preset; another preset by name
    whole = server(tmp_path, "15.5.0", base + "    resources: {requests: {cpu: 2}}\n")
    assert whole.cpu_limit is not None and whole.cpu_limit.value == 2
    assert whole.memory_limit is None
    small = server(tmp_path, "15.5.0", base + "    resourcesPreset: small\n")
    assert small.cpu_limit is not None and small.cpu_limit.value == 0.75
    assert small.cpu_limit.source.label().startswith("default: values primary.resourcesPreset")


def test_an_unknown_chart_version_says_the_resources_are_unknown(tmp_path):
    result = check(tmp_path, "^18.0.0", "postgresql:\n  enabled: true\n"
                                        "  fullnameOverride: db-postgresql\n")
    assert any("the CPU and memory of postgresql.primary are unknown" in n
               for n in result.notices)
    (budget,) = result.budgets  # the budget itself still stands
    assert budget.usable == 97


def test_the_primary_is_one_pod_whatever_the_values_say(tmp_path):
    """templates/primary/statefulset.yaml `replicas: 1`: primary.replicaCount is no key
    of the chart."""
    found = server(tmp_path, "15.5.0", "postgresql:\n  fullnameOverride: db-postgresql\n"
                                       "  primary:\n    replicaCount: 3\n")
    assert found.instances.value == 1


@pytest.mark.parametrize(("version", "tag", "db", "preset"), [
    ("11.7.0", "0.10", True, "old"), ("~11.7.0", "0.11", True, "old"),
    ("~14.0.0", "0.15", True, "old"), ("^14.0.0", "0.15", True, None),
    ("15.5.11", "0.15", True, "nano"), ("15.5.12", "0.15", False, "nano"),
    ("^16.0.0", "0.17", False, "nano"),
])
def test_chart_versions(version, tag, db, preset):
    chart = resolve(version, None)
    assert chart is not None
    assert exporter_tag(chart) == tag
    assert requires_database(chart) is db
    got = default_resources(chart, "primary", {})
    if preset is None:
        assert got is None
    else:
        assert ("nano" in got.said) == (preset == "nano")


@pytest.mark.parametrize("version", ["18.8.12", "^18.0.0", ">=11.0.0", "10.16.2"])
def test_versions_not_read_are_unknown(version):
    assert resolve(version, None) is None


def test_with_read_replicas_each_server_has_its_own_exporter(tmp_path):
    """Both StatefulSets built at the same values line (`architecture`): each pod's
    exporter is its own server's, as rendered (2 + 2); both went to the read replicas
    and the primary had none."""
    result = check(tmp_path, "13.4.4", "postgresql:\n  fullnameOverride: db-postgresql\n"
                                       "  architecture: replication\n"
                                       "  auth: {database: app}\n  metrics: {enabled: true}\n")
    exporters = {b.server: [c.who for c in b.contributions if c.who.endswith("/metrics")]
                 for b in result.budgets}
    assert exporters == {"db-postgresql-primary": ["db-postgresql-primary/metrics"],
                         "db-postgresql-read": ["db-postgresql-read/metrics"]}
