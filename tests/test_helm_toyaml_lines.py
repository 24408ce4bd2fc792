"""Objects a template writes with `toYaml` out of a values list (8gears/n8n-helm-chart's
extraManifests, audit s23 D4): their numbers are traced to the values lines, though
the object's `kind` is itself a value (its sentinel made the object another in every
tracing render); and a line tracing cannot tell is cited at the `toYaml` line, never
at a line of the template's own `define` block (a CNPG Cluster's shared_buffers was
cited at `release: {{ .Release.Name }}` of the labels helper above)."""

from __future__ import annotations

import pytest

from advisor.read.fs import Root
from advisor.read.render import field_source
from advisor.read.render.helm import render_chart
from advisor.read.render.helm_positions import line_map
from tests.tree_helpers import write

TEMPLATE = """{{/*
Objects from .Values.extraObjects, each with the chart's labels
*/}}

{{- define "extra.metadata" -}}
metadata:
  labels:
    app: {{ .Chart.Name }}
    release: {{ .Release.Name }}
{{- end }}

{{- $metadata := fromYaml (include "extra.metadata" .) -}}

{{- range .Values.extraObjects }}
---
{{ merge . $metadata | toYaml }}
{{- end }}
"""
VALUES = """extraObjects:
  - apiVersion: postgresql.cnpg.io/v1
    kind: Cluster
    metadata:
      name: db
    spec:
      instances: 1
      postgresql:
        parameters:
          shared_buffers: "64MB"
          max_connections: "200"
      resources:
        requests:
          memory: "512Mi"
        limits:
          memory: "512Mi"
"""


def test_the_lines_toyaml_writes_are_the_toyaml_lines_not_the_define_blocks():
    rendered = ("---\napiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n"
                "  labels:\n    app: app\n    release: release\n  name: db\nspec:\n"
                "  instances: 1\n")
    toyaml = TEMPLATE.splitlines().index("{{ merge . $metadata | toYaml }}")
    mapping = line_map(TEMPLATE, rendered)
    assert {mapping[r] for r in range(1, len(rendered.splitlines()))} == {toyaml}


def test_numbers_of_an_object_from_a_values_list_are_traced_to_the_values_lines(tmp_path):
    pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")
    write(tmp_path, {"chart/Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.0.0\n",
                     "chart/values.yaml": "extraObjects: []\n",
                     "chart/templates/extra.yaml": TEMPLATE,
                     "values-db.yaml": VALUES})
    r = render_chart(Root.of(tmp_path), "chart", values_files=["values-db.yaml"])
    (cluster,) = [o for o in r.objects if o.kind == "Cluster"]
    lines = VALUES.splitlines()
    for path, text in ((("spec", "postgresql", "parameters", "shared_buffers"),
                        'shared_buffers: "64MB"'),
                       (("spec", "postgresql", "parameters", "max_connections"),
                        'max_connections: "200"'),
                       (("spec", "resources", "limits", "memory"), None)):
        source = field_source(cluster, *path)
        want = lines.index(f"          {text}") + 1 if text else len(lines)
        assert (source.path, source.line) == ("values-db.yaml", want), path
