"""Files of other tools kept beside manifests, and a problem reached by several paths, as
real repositories have them: an Ansible role's Jinja template (khuedoan/homelab's
metal/roles/cilium/templates) or a Go template outside a chart is a notice, not a broken
manifest (PA901 error, exit 1); a kustomization that several overlays build reports its
remote resource once (argo-workflows' test/e2e/manifests/minimal was four times)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor.engine.check import CheckOptions, run_check
from tests.tree_helpers import write

JINJA_ROLE = """apiVersion: cilium.io/v2alpha1
kind: CiliumLoadBalancerIPPool
metadata:
  name: default
spec:
  blocks:
    {% for cidr in load_balancer_ip_pool %}
    - cidr: {{ cidr }}
    {% endfor %}
"""

GO_TEMPLATE = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ .Values.replicas }}
"""


# spring-cloud-skipper's io/cf-template.yml shape: mustache sections (audit 10a: three
# such resources were PA901 errors, each budget a floor)
MUSTACHE = """apiVersion: skipper.spring.io/v1
kind: CloudFoundryApplication
spec:
  resource: "{{{spec.resource}}}"
  manifest:
    {{#spec.manifest.entrySet}}
    "{{{key}}}": "{{{value}}}"
    {{/spec.manifest.entrySet}}
"""


def _check(root: Path):
    return run_check([str(root)], CheckOptions(cache=False))


@pytest.mark.parametrize(("path", "text", "line"), [
    ("metal/roles/cilium/templates/pool.yaml", JINJA_ROLE, 7),
    ("deploy/templates-raw/web.yaml", GO_TEMPLATE, 6),
    ("src/main/resources/io/cf-template.yml", MUSTACHE, 8)])
def test_another_tools_template_is_a_notice_not_a_broken_manifest(tmp_path, path, text, line):
    write(tmp_path, {path: text})
    result = _check(tmp_path)
    assert not [f for f in result.findings if f.code == "PA901"]
    assert [n for n in result.notices if n.startswith(f"{path}:{line}: not read: a template")]


def test_a_broken_manifest_with_quoted_braces_is_still_invalid_yaml(tmp_path):
    """`{{workflow.name}}` inside quotes is a string (Argo parameters): the file's real
    YAML error elsewhere stays a PA901 error."""
    write(tmp_path, {"k8s/wf.yaml": 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n'
                                    'data:\n  name: "{{workflow.name}}"\n  bad: [1\n'})
    (finding,) = [f for f in _check(tmp_path).findings if f.code == "PA901"]
    assert finding.message.startswith("invalid YAML") and finding.severity.value == "error"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_a_problem_reached_by_several_overlays_is_one_finding(tmp_path):
    remote = "https://host.example/crds/eventbus.yaml"
    write(tmp_path, {
        "k/base/kustomization.yaml": f"resources:\n  - {remote}\n  - cm.yaml\n",
        "k/base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
        "k/one/kustomization.yaml": "resources:\n  - ../base\n",
        "k/two/kustomization.yaml": "resources:\n  - ../base\n"})
    found = [f for f in _check(tmp_path).findings if f.code == "PA901"]
    assert [(f.location.path, f.location.line) for f in found] == [
        ("k/base/kustomization.yaml", 2)]
    assert remote in found[0].message


API = """apiVersion: apps/v1
kind: Deployment
metadata: {name: controller}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: main
          image: quay.io/acme/controller:v3
          env:
            - {name: DATABASE_URL, value: "postgres://c@db:5432/c"}
"""
DEV_APP = {"requirements.txt": "sqlalchemy\npsycopg2\n",
           "app.py": "from sqlalchemy import create_engine\n"
                     "e = create_engine('postgresql://x@db/x', pool_size=3, max_overflow=0)\n",
           "Dockerfile": "FROM python:3.12\n"}


@pytest.mark.parametrize("folder", [".devcontainer/builder", "hack/tools"])
def test_a_dev_container_or_hack_folder_is_not_the_workloads_source(tmp_path, folder):
    """argo-workflows: every Deployment (mysql, dex, prometheus, the controller) was read
    with the source of .devcontainer/builder/, 'the repository's only application
    folder with a Dockerfile'. Tooling folders are not an application's source; the
    same files in a folder of its own still are."""
    from tests.tree_helpers import POSTGRES_DB

    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/api.yaml": API,
                     **{f"{folder}/{k}": v for k, v in DEV_APP.items()}})
    result = _check(tmp_path)
    assert not [n for n in result.notices if "application source inferred" in n]
    assert result.budgets[0].unknown_clients == ["controller"]
    shutil.move(tmp_path / folder, tmp_path / "service")
    moved = _check(tmp_path)
    assert [n for n in moved.notices if "application source inferred as service/" in n]
    assert moved.budgets[0].peak == 6  # (1 replica + 1 rolling-update surge) x 3
