"""Files in a Helm chart's folder that are not the chart's (s22 audit D1).

Helm deploys a chart's templates/ (and charts/, crds/); any other file is only `.Files`
to its templates (helm/helm@e9b85e4 pkg/chart/v2/loader/load.go LoadFiles). A chart
repository keeps manifests applied by hand in examples/ (codecentric/helm-charts keycloakx
keeps its CloudNativePG Cluster in examples/cloudnative-pg/): named as a path, such a
manifest was taken for the chart and never read (no server, no finding, exit 0).
The layouts here are written for the test in that shape.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.read.chart_parts import files_use_of, manifest_head
from advisor.read.discover import discover_paths

CHART = "apiVersion: v2\nname: app\nversion: 0.1.0\n"
VALUES = "replicaCount: 3\npoolSize: 20\n"
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: {{ .Values.replicaCount }}
  strategy:
    rollingUpdate:
      maxSurge: 0
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
        - name: app
          image: registry.example.test/app:1.0
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://db-rw:5432/app
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE
              value: {{ .Values.poolSize | quote }}
"""
CLUSTER = """\
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: db
spec:
  instances: 1
  imageName: ghcr.io/cloudnative-pg/postgresql:16.4
  postgresql:
    parameters:
      max_connections: "50"
"""
# values with an object in them: apiVersion and kind, but indented
EXTRA_VALUES = """\
replicaCount: 6
extraObjects:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: extra}
"""
FILES = {
    "charts/app/Chart.yaml": CHART,
    "charts/app/values.yaml": VALUES,
    "charts/app/templates/deployment.yaml": DEPLOYMENT,
    "charts/app/ci/prod-values.yaml": EXTRA_VALUES,
    "charts/app/examples/cnpg/db.yaml": CLUSTER,
    "charts/app/examples/cnpg/readme.md": "kubectl apply -f db.yaml\n",
    "charts/app/examples/only/db.yaml": CLUSTER,
}
NOTICE = ("charts/app: 2 Kubernetes manifests in the chart's folder but outside templates/ "
          "(examples/cnpg/db.yaml, examples/only/db.yaml): Helm does not deploy them "
          "(examples, CI and test files are applied by hand, if at all, often as "
          "alternatives), so not read; pass a file or folder as a path to read it")


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = write(tmp_path / "repo", FILES)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def rels(found, paths) -> list[str]:
    return [found.rel(p) for p in paths]


def test_a_manifest_named_in_a_charts_examples_is_read_beside_the_chart(repo: Path):
    found = discover_paths(repo, [repo / "charts/app/examples/cnpg/db.yaml",
                                  repo / "charts/app"])
    assert rels(found, found.manifests) == ["charts/app/examples/cnpg/db.yaml"]
    assert rels(found, found.helm_charts) == ["charts/app"]
    # the one not named is still said
    assert found.notices == [NOTICE.replace("2 Kubernetes manifests", "1 Kubernetes manifest")
                             .replace("examples/cnpg/db.yaml, ", "")
                             .replace("deploy them", "deploy it")]
    # alone, it is a manifest, not the chart
    alone = discover_paths(repo, [repo / "charts/app/examples/cnpg/db.yaml"])
    assert rels(alone, alone.manifests) == ["charts/app/examples/cnpg/db.yaml"]
    assert alone.helm_charts == []


def test_the_chart_and_a_walk_say_what_is_not_read(repo: Path):
    """An example folder is an alternative to what the chart deploys: a walk or the chart
    named does not read it (as before), but says so."""
    for paths in ([repo], [repo / "charts/app"], [repo / "charts/app/templates"]):
        found = discover_paths(repo, paths)
        assert found.manifests == [] and rels(found, found.helm_charts) == ["charts/app"]
        assert found.notices == [NOTICE]


def test_a_folder_named_in_a_chart_reads_its_manifests(repo: Path):
    only = discover_paths(repo, [repo / "charts/app/examples/only"])
    assert rels(only, only.manifests) == ["charts/app/examples/only/db.yaml"]
    assert only.helm_charts == []  # nothing in it is the chart's
    # a folder with other files (a readme, values) stands for the chart too
    both = discover_paths(repo, [repo / "charts/app/examples"])
    assert rels(both, both.manifests) == ["charts/app/examples/cnpg/db.yaml",
                                          "charts/app/examples/only/db.yaml"]
    assert rels(both, both.helm_charts) == ["charts/app"] and both.notices == []


def test_a_values_file_is_not_a_manifest(repo: Path):
    found = discover_paths(repo, [repo / "charts/app/ci/prod-values.yaml"])
    assert found.manifests == [] and rels(found, found.helm_charts) == ["charts/app"]
    assert [(found.rel(f), found.rel(c)) for f, c in found.chart_values_named] == [
        ("charts/app/ci/prod-values.yaml", "charts/app")]
    assert not manifest_head(EXTRA_VALUES.encode())
    assert manifest_head(b"# db\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
    # a kind cluster's configuration (chart-testing's e2e/) is no object to apply
    assert not manifest_head(b"apiVersion: kind.x-k8s.io/v1alpha4\nkind: Cluster\n")


def test_a_manifest_a_template_reads_is_the_charts(repo: Path):
    write(repo, {"charts/app/templates/extra.yaml": '{{ .Files.Get "files/cm.yaml" }}\n',
                 "charts/app/files/cm.yaml": "apiVersion: v1\nkind: ConfigMap\n"
                                             "metadata: {name: cm}\n"})
    found = discover_paths(repo, [repo / "charts/app/files/cm.yaml"])
    assert found.manifests == [] and rels(found, found.helm_charts) == ["charts/app"]
    assert found.notices[0] == ("charts/app/files/cm.yaml: a template of chart charts/app "
                                "reads it through .Files, so it is read as part of the chart, "
                                "not as a manifest of its own")
    assert "files/cm.yaml" not in found.notices[1]


def test_files_reads_as_helm_globs_them():
    use = files_use_of(['{{ (.Files.Glob "conf/*.yaml").AsConfig }}',
                        '{{ .Files.Get "a/b.yaml" }} {{ $.Files.Lines "x/{p,q}/**" }}'])
    assert use.patterns == ("conf/*.yaml", "a/b.yaml", "x/{p,q}/**")
    assert use.dynamic_text is None
    assert use.reads("conf/db.yaml") and not use.reads("conf/sub/db.yaml")
    assert use.reads("a/b.yaml") and not use.reads("a/bxyaml")
    assert use.reads("x/p/1/2.yaml") and use.reads("x/q/3.yaml") and not use.reads("x/r/3.yaml")
    # a path the template builds: the file's folder named in it is enough
    built = files_use_of(['{{ .Files.Get (printf "manifests/%s" .Values.f) }}'])
    assert built.reads("manifests/db.yaml") and not built.reads("examples/db.yaml")


def test_a_chart_in_a_charts_examples_is_a_chart_of_its_own(repo: Path):
    write(repo, {"charts/app/examples/umbrella/Chart.yaml": CHART.replace("app", "umbrella"),
                 "charts/app/examples/umbrella/templates/cm.yaml":
                     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: u}\n",
                 "charts/app/charts/sub/Chart.yaml": CHART.replace("app", "sub")})
    found = discover_paths(repo, [repo / "charts/app", repo / "charts/app/examples/umbrella",
                                  repo / "charts/app/charts/sub"])
    assert rels(found, found.helm_charts) == ["charts/app", "charts/app/examples/umbrella"]
    assert found.manifests == []
    # the umbrella's templates are its own, not manifests beside charts/app
    assert found.notices == [NOTICE]


# --- end to end ------------------------------------------------------------------------


def check(cwd: Path, *args: str, monkeypatch) -> tuple[int, dict]:
    pytest.importorskip("helm_python", reason="the helm extra renders charts")
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(app, ["check", *args, "--no-cache", "-f", "json"])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, json.loads(result.stdout)


def test_the_example_database_beside_its_chart_is_budgeted(repo: Path, monkeypatch):
    """Before: no server at all, no finding, exit 0 for a deployment over its budget."""
    code, data = check(repo, "charts/app/examples/cnpg/db.yaml", "charts/app",
                       monkeypatch=monkeypatch)
    (budget,) = data["budgets"]
    assert (budget["server"], budget["usable"], budget["peak"]) == ("db", 47, 60)
    assert budget["location"]["path"] == "charts/app/examples/cnpg/db.yaml"
    (pa101,) = [f for f in data["findings"] if f["code"] == "PA101"]
    assert pa101["location"]["path"] == "charts/app/examples/cnpg/db.yaml"
    assert "peak 60 connections > 47 usable, over by 13" in pa101["message"]
    assert code == 1


def test_a_values_file_named_as_a_path_is_said_unless_used(repo: Path, monkeypatch):
    said = ("charts/app/ci/prod-values.yaml: a values file of chart charts/app, given as a "
            "path, stands for the chart, which Helm renders with values.yaml and the --values "
            "files only: not with this one (pass it with --values to use it)")
    _, data = check(repo, "charts/app/ci/prod-values.yaml", monkeypatch=monkeypatch)
    assert said in data["notices"]
    _, data = check(repo, "charts/app/ci/prod-values.yaml", "--values",
                    os.path.join("charts/app/ci/prod-values.yaml"), monkeypatch=monkeypatch)
    assert said not in data["notices"]
