"""Fields a named template writes (`{{ include "x" . | nindent 2 }}` of a `define` in
_helpers.tpl) cite the values line when the value comes from .Values through the helper,
else the helper's line that writes it, not the include line of the calling template
(element-hq/ess-helm's commonSpec helper writing maxSurge, its postgres args helper
writing max_connections; temporalio/helm-charts' admintools env helper writing
SQL_PLUGIN: audit s22). A chart scanned at its own folder shows `templates/x.yaml`,
never `./templates/x.yaml`."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.read.fs import Root
from advisor.read.render.helm import render_chart

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")

CHART = "apiVersion: v2\nname: shop\nversion: 1.0.0\n"
VALUES = """\
replicas: 3
db:
  plugin: postgres12
  driver: sql
"""
HELPERS = """\
{{- define "shop.commonSpec" -}}
replicas: {{ .Values.replicas }}
strategy:
  type: RollingUpdate
  rollingUpdate:
    maxSurge: 2
    maxUnavailable: 0
{{- end }}

{{- define "shop.name" -}}{{ .Release.Name }}-shop{{- end }}

{{- define "shop.env" -}}
- name: DB_PLUGIN
  value: {{ .Values.db.plugin }}
- name: POOL_MODE
  value: fixed
{{- end }}

{{- define "shop.storeEnv" -}}
{{- if eq .Values.db.driver "cassandra" }}
- name: CASSANDRA_HOST
  value: cassandra
- name: CASSANDRA_PORT
  value: "9042"
{{- else if eq .Values.db.driver "sql" }}
- name: SQL_HOST
  value: db
- name: SQL_PORT
  value: "5432"
{{- end }}
{{- end }}

{{- define "shop.pgArgs" -}}
- "-c"
- "max_connections=200"
{{- end }}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  {{- include "shop.commonSpec" . | nindent 2 }}
  template:
    spec:
      containers:
        - name: web
          image: shop/web:1
          env:
            {{- include "shop.env" . | nindent 12 }}
            {{- include "shop.storeEnv" . | nindent 12 }}
          envFrom:
            - secretRef:
                name: {{ include "shop.name" . | sha1sum }}
"""
STATEFULSET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-db
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: postgres
          image: postgres:17
          args:
            {{- include "shop.pgArgs" . | nindent 12 }}
"""


def _chart(folder: Path) -> None:
    (folder / "templates").mkdir(parents=True)
    (folder / "Chart.yaml").write_text(CHART)
    (folder / "values.yaml").write_text(VALUES)
    (folder / "templates" / "_helpers.tpl").write_text(HELPERS)
    (folder / "templates" / "deployment.yaml").write_text(DEPLOYMENT)
    (folder / "templates" / "statefulset.yaml").write_text(STATEFULSET)


def _line(text: str, start: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(start))


def _objects(root: Path, chart: str) -> dict[str, object]:
    out = render_chart(Root(root.resolve()), chart)
    assert not out.problems, out.problems
    return {o.kind: o for o in out.objects}


def _at(obj, *keys) -> tuple[str | None, int | None]:
    source = obj.source(*keys)
    return source.path, source.line


def test_helper_fields_cite_the_helper_line_or_the_values_line(tmp_path: Path) -> None:
    _chart(tmp_path / "shop")
    by = _objects(tmp_path, "shop")
    web, db = by["Deployment"], by["StatefulSet"]
    helpers = "shop/templates/_helpers.tpl"
    # a number the helper writes as it is: its line in the helper
    assert _at(web, "spec", "strategy", "rollingUpdate", "maxSurge") == (
        helpers, _line(HELPERS, "    maxSurge: 2"))
    # a number from .Values through the helper: the values line
    assert _at(web, "spec", "replicas") == ("shop/values.yaml", _line(VALUES, "replicas:"))
    env = ("spec", "template", "spec", "containers", 0, "env")
    assert _at(web, *env, 0, "value") == ("shop/values.yaml", _line(VALUES, "  plugin:"))
    assert _at(web, *env, 1, "value") == (helpers, _line(HELPERS, "  value: fixed"))
    # the branch that wrote it, not the first branch's line of the same key
    assert _at(web, *env, 3, "value") == (helpers, _line(HELPERS, '  value: "5432"'))
    args = ("spec", "template", "spec", "containers", 0, "args")
    assert _at(db, *args, 1) == (helpers, _line(HELPERS, '- "max_connections=200"'))
    # the template's own lines stay where they are
    assert _at(db, "spec", "replicas") == (
        "shop/templates/statefulset.yaml", _line(STATEFULSET, "  replicas: 1"))


def test_a_chart_at_the_root_shows_its_paths_without_dot_slash(tmp_path: Path) -> None:
    _chart(tmp_path)
    by = _objects(tmp_path, ".")
    db = by["StatefulSet"]
    assert db.path == "templates/statefulset.yaml"
    assert _at(db, "spec", "template", "spec", "containers", 0, "args", 1) == (
        "templates/_helpers.tpl", _line(HELPERS, '- "max_connections=200"'))


def test_only_an_include_alone_on_its_lines_writes_lines_of_its_own() -> None:
    from advisor.read.render.helm_include_lines import included_after

    text = ('spec:\n  {{- include "a" . | nindent 2 }}\n'
            'checksum: {{ include "b" . | sha1sum }}\n'
            'x: {{ include "c" . | fromYaml }}\n'
            'probe: {{- include "d" . | nindent 4 }}\n')
    assert included_after(text) == {1: ["a"], 4: ["d"]}


def test_a_helper_that_includes_itself_is_expanded_once() -> None:
    from advisor.read.render.helm_include_lines import Helpers
    from advisor.read.render.helm_text_lines import _part

    loop = _part("t/_helpers.tpl", 1, ['a: 1', '{{ include "loop" . | nindent 0 }}'])
    body = Helpers({"loop": loop}).body("loop")
    assert body is not None and body.lines == ["a: 1", '{{ include "loop" . | nindent 0 }}']
    assert body.places == [("t/_helpers.tpl", 1), ("t/_helpers.tpl", 2)]
