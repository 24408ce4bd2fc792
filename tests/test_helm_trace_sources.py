"""Which line a rendered Helm field cites (advisor.read.render.helm_trace): never a
values key whose value Helm discarded (a falsy value `default` passes over)."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from advisor.read.fs import Root
from advisor.read.render import field_source
from advisor.read.render.helm import render_chart
from advisor.read.sources.k8s import get
from tests.deploy_helpers import by_ref

helm = pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")


def _chart(tmp_path, values: str, template: str):
    chart = helm.Chart.create("app", str(tmp_path))
    chart.close()
    app = tmp_path / "app"
    (app / "values.yaml").write_text(values)
    shutil.rmtree(app / "templates")
    (app / "templates").mkdir()
    (app / "templates" / "db.yaml").write_text(textwrap.dedent(template))
    return app


DEPLOYMENT = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: {{ .Release.Name }}-db
    spec:
      replicas: %s
      template:
        spec:
          containers:
            - name: db
              image: postgres:16
    """


def test_a_zero_default_passes_over_is_not_the_source(tmp_path):
    # Temporal: `default $.Values.server.replicaCount $serviceValues.replicaCount` with
    # the service's 0 renders the server's 1; a sentinel for the 0 is truthy and won.
    # `a` shows up in another object too, so it is not tried again for being missing.
    app = _chart(tmp_path, "a: 3\nb: 2\n", DEPLOYMENT % "{{ default .Values.a .Values.b }}")
    (app / "templates" / "other.yaml").write_text(textwrap.dedent(
        DEPLOYMENT.replace("-db", "-other") % "{{ .Values.a }}"))
    (app / "zero.yaml").write_text("b: 0\n")
    r = render_chart(Root.of(tmp_path), "app", values_files=["zero.yaml"], release="r1")
    assert not r.problems, r.problems
    db = by_ref(r.objects, "Deployment/r1-db")
    assert get(db.body, "spec", "replicas") == 3
    src = field_source(db, "spec", "replicas")
    assert (src.path, src.line, src.key) == ("app/values.yaml", 1, "values: a")
    other = by_ref(r.objects, "Deployment/r1-other")
    assert field_source(other, "spec", "replicas").line == 1


def test_a_zero_that_only_picks_a_branch_leaves_the_template_line(tmp_path):
    _chart(tmp_path, "b: 0\n",
           DEPLOYMENT % "{{ if .Values.b }}{{ .Values.b }}{{ else }}4{{ end }}")
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.problems, r.problems
    db = by_ref(r.objects, "Deployment/r1-db")
    assert get(db.body, "spec", "replicas") == 4
    src = field_source(db, "spec", "replicas")
    assert (src.path, src.line) == ("app/templates/db.yaml", 6)
