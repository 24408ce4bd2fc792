"""A field an included helper writes in one branch of an `if`/`else if` chain, each branch
writing the same key, cites the line of the branch Helm took, not the first branch's line
(BorisPolonsky/dify-helm charts/dify/templates/config.tpl `dify.db.config`: DB_HOST was
cited at :215, the externalPostgres branch, while the postgresql branch's :236 wrote it:
audit 13d D8); when the values cannot tell the branch, the include line of the calling
template is cited rather than a wrong branch."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.read.fs import Root
from advisor.read.render.helm import render_chart
from advisor.read.render.helm_branches import NO, UNKNOWN, YES, condition

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")

CHART = "apiVersion: v2\nname: x\nversion: 1.0.0\n"
VALUES = """\
mode: b
externalPostgres:
  enabled: false
  address: db.example.com
  port: 5432
postgresql:
  enabled: true
"""
# Dify's shape: the external branch first, its DB_TYPE line the same text as the
# in-chart branch's, the in-chart branch's host from a helper.
HELPERS = """\
{{- define "x.postgresql.fullname" -}}{{ .Release.Name }}-postgresql{{- end }}
{{- define "x.pgbouncer.fullname" -}}{{ .Release.Name }}-pgbouncer{{- end }}
{{- define "x.mode" -}}{{ .Values.mode }}{{- end }}

{{- define "x.db.config" -}}
{{- if .Values.externalPostgres.enabled }}
DB_TYPE: postgresql
DB_HOST: {{ .Values.externalPostgres.address }}
DB_PORT: {{ .Values.externalPostgres.port | toString | quote }}
{{- else if .Values.postgresql.enabled }}
DB_TYPE: postgresql
DB_HOST: {{ include "x.postgresql.fullname" . }}
DB_PORT: "5432"
{{- end }}
{{- end }}

{{- define "x.proxy.config" -}}
{{- if .Values.externalPostgres.enabled }}
DB_TYPE: postgresql
DB_HOST: {{ .Values.externalPostgres.address }}
DB_PORT: {{ .Values.externalPostgres.port | toString | quote }}
{{- else if eq (include "x.mode" .) "a" }}
DB_TYPE: postgresql
DB_HOST: {{ include "x.postgresql.fullname" . }}
DB_PORT: "5432"
{{- else }}
DB_TYPE: postgresql
DB_HOST: {{ include "x.pgbouncer.fullname" . }}
DB_PORT: "5432"
{{- end }}
{{- end }}
"""
CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-api
data:
  {{- include "x.db.config" . | nindent 2 }}
"""
PROXY = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-proxy
data:
  {{- include "x.proxy.config" . | nindent 2 }}
"""
HELPERS_PATH = "x/templates/_helpers.tpl"


def _chart(folder: Path) -> None:
    (folder / "templates").mkdir(parents=True)
    (folder / "Chart.yaml").write_text(CHART)
    (folder / "values.yaml").write_text(VALUES)
    (folder / "templates" / "_helpers.tpl").write_text(HELPERS)
    (folder / "templates" / "config.yaml").write_text(CONFIG)
    (folder / "templates" / "proxy.yaml").write_text(PROXY)


def _lines(text: str, start: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), 1) if line.startswith(start)]


def _config_maps(root: Path, sets: list[str]) -> dict[str, object]:
    out = render_chart(Root(root.resolve()), "x", set_values=sets)
    assert not out.problems, out.problems
    return {o.name: o for o in out.objects if o.kind == "ConfigMap"}


def _at(obj, *keys) -> tuple[str | None, int | None]:
    source = obj.source(*keys)
    return source.path, source.line


def test_the_host_cites_the_branch_helm_took(tmp_path: Path) -> None:
    _chart(tmp_path / "x")
    api = _config_maps(tmp_path, [])["release-api"]
    assert api.body["data"]["DB_HOST"] == "release-postgresql"
    in_chart = _lines(HELPERS, 'DB_HOST: {{ include "x.postgresql.fullname"')[0]
    assert _at(api, "data", "DB_HOST") == (HELPERS_PATH, in_chart)
    # the literal line the two branches share, at the branch taken too
    assert _at(api, "data", "DB_TYPE") == (HELPERS_PATH, in_chart - 1)
    assert _at(api, "data", "DB_PORT") == (HELPERS_PATH, in_chart + 1)


def test_the_other_branch_taken_cites_its_values(tmp_path: Path) -> None:
    _chart(tmp_path / "x")
    api = _config_maps(tmp_path, ["externalPostgres.enabled=true"])["release-api"]
    assert api.body["data"]["DB_HOST"] == "db.example.com"
    # values tracing: the values line that set it
    assert _at(api, "data", "DB_HOST") == ("x/values.yaml", _lines(VALUES, "  address:")[0])
    external = _lines(HELPERS, "DB_TYPE: postgresql")[0]
    assert _at(api, "data", "DB_TYPE") == (HELPERS_PATH, external)


def test_a_branch_the_values_cannot_tell_cites_the_include_line(tmp_path: Path) -> None:
    _chart(tmp_path / "x")
    proxy = _config_maps(tmp_path, [])["release-proxy"]
    assert proxy.body["data"]["DB_HOST"] == "release-pgbouncer"
    # `eq (include "x.mode" .) "a"` is not read: either include branch can have written
    # it; the external branch is ruled out, and no branch is guessed
    assert _at(proxy, "data", "DB_HOST") == (
        "x/templates/proxy.yaml", _lines(PROXY, "  {{- include")[0])


@pytest.mark.parametrize(("text", "expected"), [
    (".Values.a.on", YES),
    (".Values.a.off", NO),
    ("not .Values.a.off", YES),
    ('eq .Values.a.kind "db"', YES),
    ('and .Values.a.on (ne .Values.a.kind "db")', NO),
    ("or .Values.a.off .Values.missing", NO),
    (".Values.nothere.x", UNKNOWN),  # Helm fails on it: never read as false
    ('eq (include "x" .) "a"', UNKNOWN),
    (".Values.a.on | default false", UNKNOWN),
    ("$.Values.a.on", YES),
])
def test_conditions_read_from_the_values(text: str, expected: int) -> None:
    values = {"a": {"on": True, "off": False, "kind": "db"}}
    assert condition(text, values, True, True) == expected


def test_a_condition_inside_with_is_not_read_from_the_chart_values() -> None:
    assert condition(".Values.a.on", {"a": {"on": True}}, False, True) == UNKNOWN
    assert condition("$.Values.a.on", {"a": {"on": True}}, False, True) == YES
    assert condition(".Values.a.on", None, True, True) == UNKNOWN
