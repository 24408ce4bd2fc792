"""A kustomize `helmCharts` entry is not inflated (that runs helm), but its values are
read for where its release connects, as a Flux HelmRelease's (advisor.read.render.
kustomize_tree.chart_objects, advisor.read.releases): the release is a client of unknown
size, so the server it reaches is a floor, never 'fits, peak 0' (theepicsaxguy/homelab:
authentik's values.yaml sets authentik.postgresql.host to its CloudNativePG Cluster)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="kubectl (kustomize) not installed")

CLUSTER = """\
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: sso-postgresql}
spec:
  instances: 1
  imageName: ghcr.io/cloudnative-pg/postgresql:17
  postgresql:
    parameters:
      max_connections: "100"
"""

VALUES = """\
server:
  replicas: 1
sso:
  secret_key: file:///secrets/key
  postgresql:
    host: sso-postgresql-rw
    name: app
    port: "5432"
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _sso(root: Path, entry: str) -> Path:
    return _write(root, {
        "auth/kustomization.yaml": "resources:\n  - sso\n",
        "auth/sso/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "namespace: auth\nresources:\n  - database.yaml\nhelmCharts:\n" + entry),
        "auth/sso/database.yaml": CLUSTER,
        "auth/sso/values.yaml": VALUES,
    })


def check_json(root: Path) -> dict:
    result = CliRunner().invoke(app, ["check", str(root), "--format", "json", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


ENTRY = ("  - name: sso\n    namespace: auth\n    releaseName: sso\n"
         "    repo: https://charts.example.org\n    valuesFile: values.yaml\n"
         "    version: 2026.5.0\n")


@needs_kustomize
def test_a_helm_charts_release_whose_values_name_the_server_is_a_client_of_unknown_size(
        tmp_path):
    report = check_json(_sso(tmp_path, ENTRY))
    (b,) = [b for b in report["budgets"] if b["server"] == "sso-postgresql"]
    assert b["fits"] is False and b["peak_is_floor"] is True
    assert b["unknown_clients"] == ["sso"]
    (pa106,) = [f for f in report["findings"] if f["code"] == "PA106"]
    assert pa106["location"] == {"path": "auth/sso/kustomization.yaml", "line": 7}
    assert pa106["message"].startswith(
        "sso: connections per pod and replicas unknown: helmCharts sso (chart sso from Helm "
        "repository https://charts.example.org)")
    assert {"path": "auth/sso/values.yaml", "line": 6} in [
        r["location"] for r in pa106["related"]]
    # the PA901 finding names the chart once; no second 'not rendered' notice
    assert not [n for n in report["notices"] if "chart release" in n]


@needs_kustomize
def test_values_inline_wins_over_the_values_file(tmp_path):
    entry = ENTRY + ("    valuesInline:\n      sso:\n        postgresql:\n"
                     "          host: sso-postgresql-rw.auth.svc\n")
    report = check_json(_sso(tmp_path, entry))
    (pa106,) = [f for f in report["findings"] if f["code"] == "PA106"]
    assert {"path": "auth/sso/kustomization.yaml", "line": 16} in [
        r["location"] for r in pa106["related"]]


@needs_kustomize
def test_a_missing_values_file_is_said(tmp_path):
    """Its database hosts are not read: said, never a silent zero."""
    report = check_json(_sso(tmp_path, ENTRY.replace("values.yaml", "missing.yaml")))
    (problem,) = [f for f in report["findings"] if f["code"] == "PA901"
                  and "missing.yaml" in f["message"]]
    assert problem["message"].startswith("valuesFile 'missing.yaml' of helmCharts sso not "
                                         "read")
    (b,) = [b for b in report["budgets"] if b["server"] == "sso-postgresql"]
    assert b["unknown_clients"] == []


@needs_kustomize
def test_a_chart_with_no_repo_is_not_read_as_a_release(tmp_path):
    """Without `repo` kustomize inflates the chart under chartHome, a chart of the
    repository, which is rendered from there when pool-advisor is pointed at it."""
    report = check_json(_sso(tmp_path, ENTRY.replace(
        "    repo: https://charts.example.org\n", "")))
    (b,) = [b for b in report["budgets"] if b["server"] == "sso-postgresql"]
    assert b["unknown_clients"] == [] and b["fits"] is True
