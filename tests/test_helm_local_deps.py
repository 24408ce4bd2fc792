"""A chart's `file://` dependency that is not vendored in charts/ (no `helm dependency
build` run) but whose chart is in the repository: rendered from its folder as `helm
dependency build` would place it (helm/helm v4.2.3 pkg/downloader/manager.go:305-315,
873), its condition, alias and import-values applied by the engine (audit s23 D1:
hasura/helm-charts graphql-engine's `postgres` chart at file://../postgres dropped out
of the budget, a warning where the truth is OVER by 3). A path outside the scanned root
is not read; a dependency that runs PostgreSQL by its name is then a PA901 warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.fs import Root
from advisor.read.render.helm import render_chart
from tests.tree_helpers import write

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")

PARENT = """apiVersion: v2
name: app
version: 1.0.0
dependencies:
  - name: db
    version: {version}
    repository: {repository}
    condition: db.enabled
{extra}"""
DB_CHART = "apiVersion: v2\nname: db\nversion: 0.2.0\n"
DB_VALUES = "maxConnections: 100\n"
DB = """apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}-db}
spec:
  selector: {app: db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: {{ .Release.Name }}-db}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.2
          args: ["-c", "max_connections={{ .Values.maxConnections }}"]
"""
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
            - name: SPRING_DATASOURCE_URL
              value: "jdbc:postgresql://{{ .Release.Name }}-db:5432/app"
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "{{ .Values.pool }}"}
"""


def repo(tmp_path: Path, values: str, *, version: str = "0.2.0",
         repository: str = "file://../db", extra: str = "") -> Path:
    write(tmp_path, {
        "charts/app/Chart.yaml": PARENT.format(version=version, repository=repository,
                                               extra=extra),
        "charts/app/values.yaml": values, "charts/app/templates/web.yaml": WEB,
        "charts/db/Chart.yaml": DB_CHART, "charts/db/values.yaml": DB_VALUES,
        "charts/db/templates/db.yaml": DB})
    return tmp_path


def check(root: Path, *paths: str):
    return run_check([str(root / p) for p in paths], CheckOptions(cache=False, root=root))


def test_a_file_dependency_in_the_repository_is_rendered_as_a_subchart(tmp_path):
    root = repo(tmp_path, "pool: 60\ndb:\n  enabled: true\n")
    result = check(root, "charts/app")
    (budget,) = result.budgets
    assert (budget.server, budget.usable, budget.peak) == ("release-db", 97, 120)
    assert [f.code for f in result.findings if f.severity.value == "error"] == ["PA101"]
    assert any("dependency db (file://../db) is not vendored in charts/; rendered from "
               "charts/db in the repository, as `helm dependency build` would place it" in n
               for n in result.notices)
    # its template cited in the repository, not under the parent's charts/
    rendered = render_chart(Root.of(root), "charts/app")
    sts = next(o for o in rendered.objects if o.kind == "StatefulSet")
    assert sts.path == "charts/db/templates/db.yaml"


def test_its_condition_alias_and_values_are_helms(tmp_path):
    # condition false: not rendered; the parent's values reach it under its alias
    off = check(repo(tmp_path / "off", "pool: 60\ndb:\n  enabled: false\n"), "charts/app")
    assert off.budgets == []
    aliased = repo(tmp_path / "alias", "pool: 10\nstore:\n  maxConnections: 400\n",
                   extra="    alias: store\n")
    (aliased / "charts/app/Chart.yaml").write_text(
        (aliased / "charts/app/Chart.yaml").read_text().replace("condition: db.enabled",
                                                                "condition: store.enabled"))
    (budget,) = check(aliased, "charts/app").budgets
    assert budget.usable == 397


def test_a_version_the_folder_does_not_meet_is_not_placed(tmp_path):
    root = repo(tmp_path, "pool: 60\n", version="0.3.0")
    result = check(root, "charts/app")
    assert result.budgets == []
    assert any("dependency db (file://../db) is not vendored in charts/ and not rendered: "
               "its version 0.2.0 does not meet '0.3.0'" in n for n in result.notices)


def test_a_file_dependency_outside_the_root_is_not_read(tmp_path):
    root = repo(tmp_path, "pool: 60\n")
    result = run_check([str(root / "charts/app")],
                       CheckOptions(cache=False, root=root / "charts/app"))
    assert result.budgets == []
    assert any("dependency db (file://../db) is not vendored in charts/ and not rendered: "
               "its folder is outside the scanned root" in n for n in result.notices)


@pytest.mark.parametrize("name", ["postgres", "acme-postgresql"])
def test_an_unread_dependency_named_as_a_postgresql_chart_is_a_warning(tmp_path, name):
    write(tmp_path, {
        "app/Chart.yaml": PARENT.format(version="1.0.0", repository="file://../../elsewhere",
                                        extra="").replace("name: db", f"name: {name}")
        .replace("db.enabled", f"{name}.enabled"),
        "app/values.yaml": f"pool: 60\n{name}:\n  enabled: true\n",
        "app/templates/web.yaml": WEB})
    result = run_check([str(tmp_path / "app")], CheckOptions(cache=False, root=tmp_path))
    (warning,) = [f for f in result.findings if f.code == "PA901"]
    assert warning.severity.value == "warning"
    assert warning.location.label() == "app/values.yaml:3"
    assert f"dependency '{name}' ({name}) runs PostgreSQL" in warning.message


def test_a_dependency_whose_own_chart_yaml_names_postgres_is_a_warning(tmp_path):
    # declared as `db`, its folder (in the repository, but at another version) says postgres
    root = repo(tmp_path, "pool: 60\ndb:\n  enabled: true\n", version="0.3.0")
    (root / "charts/db/Chart.yaml").write_text(DB_CHART.replace("name: db", "name: postgres"))
    result = check(root, "charts/app")
    (warning,) = [f for f in result.findings if f.code == "PA901"]
    assert "dependency 'db' (db; its Chart.yaml names it 'postgres') runs PostgreSQL" \
        in warning.message


def test_a_change_in_the_placed_folder_renders_the_chart_again(tmp_path):
    # the render cache's key covers the dependency's folder, outside the chart's own
    root = repo(tmp_path, "pool: 60\ndb:\n  enabled: true\n")
    options = CheckOptions(cache=True, root=root)
    (first,) = run_check([str(root / "charts/app")], options).budgets
    (root / "charts/db/values.yaml").write_text("maxConnections: 300\n")
    (again,) = run_check([str(root / "charts/app")], options).budgets
    assert (first.usable, again.usable) == (97, 297)
