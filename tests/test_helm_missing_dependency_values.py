"""A chart whose template reads a value only a dependency's own values.yaml sets
(`.Values.kafka.service.ports.client`), with that dependency not vendored: the render
fails on a nil pointer, and the PA901 finding says which dependency is why. Audit 47 D4
(sentry-kubernetes/charts' sentry 25.20.0: kafka 29.3.14 not vendored; the finding said
only "nil pointer evaluating interface {}.ports"). A chart in that shape."""

from __future__ import annotations

import pytest

from advisor.read.fs import Root
from advisor.read.render.helm import render_chart
from tests.tree_helpers import write

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")

CHART = {
    "chart/Chart.yaml": """\
apiVersion: v2
name: tracker
version: 25.20.0
dependencies:
  - name: kafka
    version: 29.3.14
    repository: oci://registry-1.docker.io/bitnamicharts
    condition: kafka.enabled
""",
    "chart/values.yaml": "kafka:\n  enabled: true\n  provisioning:\n    enabled: true\n",
    "chart/templates/_helpers.tpl": """\
{{- define "tracker.kafka.port" -}}
{{- if and (.Values.kafka.enabled) (.Values.kafka.service.ports.client) -}}
{{- .Values.kafka.service.ports.client }}
{{- end -}}
{{- end -}}
""",
    "chart/templates/consumer.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: consumer
spec:
  template:
    spec:
      containers:
        - name: consumer
          image: example/tracker:1
          env:
            - name: KAFKA_PORT
              value: "{{ include "tracker.kafka.port" . }}"
""",
}


def test_a_nil_value_of_a_dependency_not_vendored_says_so(tmp_path):
    write(tmp_path, CHART)
    r = render_chart(Root.of(tmp_path), "chart")
    (problem,) = r.problems
    assert problem.fatal
    assert "dependency 'kafka' (kafka 29.3.14)" in problem.message, problem.message
    assert "not vendored" in problem.message and "nil pointer" in problem.message
