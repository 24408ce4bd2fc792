"""A manifest kept as a template whose only expressions are its image tag (or an
annotation) is read as written: Sp3aR007/Three-Tier-Project's deploy/tmpl/deploy.j2
(cuchi/jinja2-action fills `{{ image_deploy_tag }}`) made every budget a floor where the
backend fits (audit 33 D3, audit 38). A template whose expressions stand anywhere else,
or that holds statements, is still not read and stays a floor."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

DB = """
apiVersion: v1
kind: Service
metadata: {name: postgres}
spec:
  selector: {app: postgres}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: postgres}
spec:
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers:
        - {name: postgres, image: "postgres:16"}
"""
WEB = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    metadata:
      labels: {app: web}
      annotations:
        deployed-at: "ANNOTATION"
    spec:
      containers:
        - name: web
          image: acme/web:TAG
          env:
            - name: DATABASE_URL
              value: HOST
"""
# what one pod opens, declared (no application source in these trees)
CONFIG = """[[workloads]]
name = "web"
connections = 20
"""
URL = "postgres://u@postgres:5432/app"


def web(tag: str = "{{ image_tag }}", annotation: str = "{{ now }}", host: str = URL
        ) -> str:
    return WEB.replace("TAG", tag).replace("ANNOTATION", annotation).replace("HOST", host)


def check(tmp_path, files: dict[str, str]):
    write(tmp_path, {"k8s/db.yaml": DB, ".pool-advisor.toml": CONFIG, **files})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    return result, budget


@pytest.mark.parametrize("name,text", [
    ("deploy/tmpl/deploy.j2", web()),
    ("k8s/web.yaml.j2", web(annotation="fixed")),
    ("k8s/web.yaml.tpl", web(tag="${TAG}", annotation="x")),
    ("config/deploy/web.yaml.erb", web(tag="<%= current_sha %>", annotation="x")),
    ("k8s/web.yml.j2", web(tag="1.0", annotation="x")),  # no expression at all
])
def test_a_template_whose_expressions_are_its_image_tag_is_read(tmp_path, name, text):
    result, budget = check(tmp_path, {name: text})
    assert budget.unplaced_clients == []
    assert not budget.peak_is_floor
    assert budget.peak == 3 * 20 and budget.fits
    (said,) = [n for n in result.notices if n.startswith(f"manifest template {name}")]
    assert "read as written" in said


@pytest.mark.parametrize("text", [
    web(host="postgres://u@{{ db_host }}:5432/app"),  # where it connects
    web().replace("replicas: 3", "replicas: {{ replicas }}"),  # how many
    web().replace("acme/web:", "{{ registry }}/web:"),  # which program
    "{% if db %}\n" + web() + "{% endif %}\n",  # statements
    web(host="${DATABASE_URL}"),  # envsubst after Jinja
    web().replace("  template:", "  {{ if .canary }}template:"),  # a Go template action
])
def test_a_template_with_expressions_elsewhere_stays_a_floor(tmp_path, text):
    _result, budget = check(tmp_path, {"k8s/web.yaml.j2": text})
    assert budget.unplaced_clients == ["k8s/web.yaml.j2 (manifest template, not rendered)"]
    assert budget.peak_is_floor and not budget.fits


def test_a_template_of_a_plain_manifest_s_object_is_read_once(tmp_path):
    """The rendered template and a plain manifest declare one object: counted once; when
    they differ beyond the expressions, which is applied last is not known: a floor."""
    result, budget = check(tmp_path, {"k8s/web.yaml": web(tag="v1", annotation="x"),
                                      "k8s/tmpl/web.j2": web()})
    assert budget.peak == 60 and budget.fits and not budget.peak_is_floor
    assert any("Deployment/web is declared by a plain manifest too" in n
               for n in result.notices)
    result, budget = check(tmp_path, {"k8s/web.yaml": web(tag="v1", annotation="x"),
                                      "k8s/tmpl/web.j2": web().replace("replicas: 3",
                                                                       "replicas: 4")})
    assert budget.unplaced_clients == ["k8s/tmpl/web.j2 (manifest template, not rendered)"]
    assert budget.peak_is_floor


# audit 50, item 4: a template whose whole image is an expression beside a plain manifest
# of the same object (deploy.j2 rendering deploy/web.yaml's Deployment with the image the
# pipeline built), and a bare `$` in a literal value of a Jinja or ERB file (a password,
# a shell's variable), stayed floors
@pytest.mark.parametrize("image", ["{{ image }}", "{{ registry }}/web:{{ tag }}",
                                   "<%= image %>"])
def test_a_whole_image_expression_beside_a_plain_twin_is_read_once(tmp_path, image):
    name = "k8s/tmpl/web.yaml.erb" if image.startswith("<%") else "k8s/tmpl/web.j2"
    result, budget = check(tmp_path, {"k8s/web.yaml": web(tag="v1", annotation="x"),
                                      name: web().replace("acme/web:{{ image_tag }}", image)})
    assert budget.unplaced_clients == [] and not budget.peak_is_floor, budget
    assert budget.peak == 60 and budget.fits
    (said,) = [n for n in result.notices if n.startswith(f"manifest template {name}")]
    assert "Deployment/web is declared by a plain manifest too" in said
    assert "image is filled in whole" in said


def test_a_whole_image_expression_without_a_twin_stays_a_floor(tmp_path):
    _result, budget = check(tmp_path, {"k8s/web.yaml.j2": web().replace(
        "acme/web:{{ image_tag }}", "{{ image }}")})
    assert budget.unplaced_clients == ["k8s/web.yaml.j2 (manifest template, not rendered)"]
    assert budget.peak_is_floor


@pytest.mark.parametrize("name", ["k8s/web.yaml.j2", "config/deploy/web.yaml.erb"])
@pytest.mark.parametrize("literal", ["p@ss$word", "p@ss$$word"])
def test_a_bare_dollar_in_a_jinja_or_erb_value_is_a_literal(tmp_path, name, literal):
    text = web(annotation="x").replace(
        "          env:\n", "          args: [\"sh\", \"-c\", \"exec web --port $PORT\"]\n"
        f"          env:\n            - {{name: ADMIN_PASSWORD, value: \"{literal}\"}}\n")
    if name.endswith(".erb"):
        text = text.replace("{{ image_tag }}", "<%= current_sha %>")
    _result, budget = check(tmp_path, {name: text})
    assert budget.unplaced_clients == [] and not budget.peak_is_floor, budget
    assert budget.peak == 60


def test_a_bare_dollar_in_an_envsubst_template_is_still_an_expression(tmp_path):
    # envsubst (.tpl) fills every $NAME: a value holding one may change when rendered
    text = web(tag="${TAG}", annotation="x", host="postgres://u:$PASSWORD@postgres:5432/app")
    _result, budget = check(tmp_path, {"k8s/web.yaml.tpl": text})
    assert budget.peak_is_floor
