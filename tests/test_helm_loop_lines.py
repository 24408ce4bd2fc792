"""The template line each object a `range` loop writes is cited at
(advisor.read.render.helm_positions): every copy of the loop's body maps to the body's
lines, not to the line after the first copy (temporalio/helm-charts
server-deployment.yaml ranges over frontend, history, matching and worker: history and
later were cited at its closing `---`)."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from advisor.read.fs import Root
from advisor.read.render.helm import render_chart
from advisor.read.render.helm_positions import line_map, loop_lines
from tests.deploy_helpers import by_ref

helm = pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")

# A Deployment per service from one template, the shape of Temporal's server chart: the
# loop's body starts at line 3; an in-document loop writes one env item per store.
SERVICES = """\
{{- range $service := (list "front" "history" "matching") }}
{{- $values := index $.Values.server $service }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $service }}
  labels:
    app: {{ $service }}
spec:
  replicas: {{ default $.Values.server.replicaCount $values.replicaCount }}
  strategy:
    type: Recreate
  template:
    spec:
      containers:
        - name: {{ $service }}
          image: temporalio/server:1.27.2
          env:
            {{- range $store := (list "default" "visibility") }}
            - name: STORE_{{ $store | upper }}
              value: {{ $store }}
            {{- end }}
          ports:
            - containerPort: 7233
---
{{- end }}
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-front
spec:
  ports:
    - port: 7233
"""

VALUES = """\
server:
  replicaCount: 2
  front: {}
  history:
    replicaCount: 3
  matching: {}
"""


def _chart(tmp_path):
    chart = helm.Chart.create("app", str(tmp_path))
    chart.close()
    app = tmp_path / "app"
    (app / "values.yaml").write_text(VALUES)
    shutil.rmtree(app / "templates")
    (app / "templates").mkdir()
    (app / "templates" / "server.yaml").write_text(SERVICES)
    return app


def test_each_deployment_of_a_loop_is_cited_at_the_loop_body(tmp_path):
    _chart(tmp_path)
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.problems, r.problems
    for name in ("front", "history", "matching"):
        obj = by_ref(r.objects, f"Deployment/r1-{name}")
        assert (obj.path, obj.line) == ("app/templates/server.yaml", 3), name
        assert obj.location("spec", "strategy", "type").line == 12, name
        containers = ("spec", "template", "spec", "containers", 0)
        assert obj.location(*containers, "image").line == 17, name
        assert obj.location(*containers, "ports", 0, "containerPort").line == 24, name
        # the second env item of each container: the inner loop's body again
        assert obj.location(*containers, "env", 1, "name").line == 20, name
        assert obj.location(*containers, "env", 1, "value").line == 21, name
    # after the loop, the Service is at its own lines
    svc = by_ref(r.objects, "Service/r1-front")
    assert svc.line == 27
    assert svc.location("spec", "ports", 0, "port").line == 33


def test_the_replicas_are_traced_per_copy(tmp_path):
    # the values line, per service: history's own, the others the server's default
    from advisor.read.render import field_source

    _chart(tmp_path)
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    history = field_source(by_ref(r.objects, "Deployment/r1-history"), "spec", "replicas")
    assert (history.path, history.line) == ("app/values.yaml", 5)
    front = field_source(by_ref(r.objects, "Deployment/r1-front"), "spec", "replicas")
    assert (front.path, front.line) == ("app/values.yaml", 2)


def test_loop_lines_are_those_inside_range_blocks_only():
    template = textwrap.dedent("""\
        {{- /* a {{ range }} in a comment opens nothing */ -}}
        {{- if .Values.on }}
        a: 1
        {{- range .Values.xs }}
        - {{ . }}
        {{- if . }}
        b: 2
        {{- end }}
        {{- end }}
        c: 3
        {{- end }}
        """)
    assert loop_lines(template) == (3, 4, 5, 6, 7, 8)
    assert loop_lines("a: 1\n") == ()


def test_a_line_written_once_is_not_matched_again():
    # outside every loop, a repeated key does not pull later lines back to it
    template = "kind: A\nname: x\nimage: y\n---\nkind: B\n"
    rendered = "kind: A\nname: x\nimage: y\n---\nkind: B\nname: z\nimage: w\n"
    mapping = line_map(template, rendered)
    assert mapping[5] == 4 and mapping[6] == 4  # at the last matched line, as before


# temporalio/helm-charts server-job.yaml's shape: a command per driver in an if/else, and
# an argument line whose only key is in an action.
JOB = """\
      initContainers:
        - name: create
          image: admin-tools
            {{- if eq .driver "cassandra" }}
          command: ['temporal-cassandra-tool', '-k', '{{ .k }}'{{- if .dc }}, '--dc'{{- end }}]
            {{- else if eq .driver "sql" }}
          command: ['temporal-sql-tool', 'create-database']
            {{- end }}
        - name: manage-schema
          args:
            {{- if eq .driver "cassandra" }}
            - temporal-cassandra-tool setup-schema -v 0.0
            {{- else }}
            - temporal-sql-tool setup-schema -v 0.0 --schema-dir /schema/{{ .schema }}/versioned
            {{- end }}
          env:
            - name: SQL_PLUGIN
"""
JOB_RENDERED = """\
      initContainers:
        - name: create
          image: admin-tools
          command: ['temporal-sql-tool', 'create-database']
        - name: manage-schema
          args:
            - temporal-sql-tool setup-schema -v 0.0 --schema-dir /schema/temporal/versioned
          env:
            - name: SQL_PLUGIN
"""


def test_a_line_is_cited_at_the_branch_that_writes_it():
    mapping = line_map(JOB, JOB_RENDERED)
    assert mapping[3] == 6  # the sql branch's command, not the cassandra one (line 4)
    assert mapping[6] == 13  # the argument, not `args:` before it
    assert mapping[7] == 15 and mapping[8] == 16  # the lines after are where they were


def test_a_line_of_actions_alone_is_no_writer():
    template = "data:\n  {{ .Values.a }}\n  b: 1\n"
    mapping = line_map(template, "data:\n  x: 2\n  b: 1\n")
    assert mapping[1] == 0  # left at the line before it, not pulled to `{{ .Values.a }}`
