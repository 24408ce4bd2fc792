"""Jsonnet deployment sources (engine.jsonnet, read.render.jsonnet): an Argo CD
Application whose plain directory source holds `*.jsonnet` files, which Argo CD renders,
and `.jsonnet` files of Kubernetes objects in a plain `check DIR`. Before, both printed
"no findings (no PostgreSQL server found)" and exit 0 (walnuts1018/infra's shape: an
ApplicationSet's git files generator over `apps/*/app.json5`, every app in jsonnet)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.read.argo_cd import argo_builds, glob_files, rendered_jsonnet
from advisor.read.sources.k8s import k8s_objects

needs_jsonnet = pytest.mark.skipif(importlib.util.find_spec("_jsonnet") is None,
                                   reason="the optional jsonnet extra is not installed")

APPLICATION = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://git.example.org/infra.git
    path: deploy/shop
    directory:
      recurse: true
      exclude: 'old/*'
      jsonnet: {}
"""

APPSET = """\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: apps, namespace: argocd}
spec:
  goTemplate: true
  generators:
    - matrix:
        generators:
          - git:
              repoURL: https://git.example.org/infra.git
              revision: main
              files:
                - path: "deploy/*/app.json5"
          - list: {elements: [{on: "yes"}]}
  template:
    metadata: {name: '{{.name}}'}
    spec:
      destination: {server: https://kubernetes.default.svc}
      source:
        repoURL: https://git.example.org/infra.git
        path: '{{.path.path}}'
        directory: {recurse: true, jsonnet: {tlas: []}}
"""

CLUSTER = """{
  apiVersion: 'postgresql.cnpg.io/v1',
  kind: 'Cluster',
  metadata: { name: 'shopdb' },
  spec: { instances: 1, imageName: 'ghcr.io/cloudnative-pg/postgresql:17',
          postgresql: { parameters: { max_connections: '40' } } },
}
"""

WEB = """local pool = import 'pool.libsonnet';
{
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'shop-web' },
  spec: {
    replicas: 8,
    selector: { matchLabels: { app: 'shop-web' } },
    template: {
      metadata: { labels: { app: 'shop-web' } },
      spec: { containers: [{
        name: 'web', image: 'example.org/shop-web:2',
        env: [
          { name: 'SPRING_DATASOURCE_URL', value: 'jdbc:postgresql://shopdb-rw:5432/shop' },
          { name: 'SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE', value: std.toString(pool) },
        ],
      }] },
    },
  },
}
"""


def _repo(tmp_path: Path, app: str = APPLICATION) -> Path:
    (tmp_path / "argocd").mkdir()
    (tmp_path / "argocd" / "shop.yaml").write_text(app)
    shop = tmp_path / "deploy" / "shop"
    shop.mkdir(parents=True)
    (shop / "cluster.jsonnet").write_text(CLUSTER)
    (shop / "web.jsonnet").write_text(WEB)
    (shop / "pool.libsonnet").write_text("10\n")
    (shop / "app.json5").write_text("{name: 'shop'}\n")
    return tmp_path


def _check(*args: str):
    return CliRunner().invoke(app, ["check", "--no-cache", *args])


def _hide_evaluator(monkeypatch) -> None:
    monkeypatch.setattr("advisor.read.render.jsonnet.available", lambda: False)


def test_an_application_rendering_jsonnet_is_never_a_silent_pass(tmp_path, monkeypatch):
    _hide_evaluator(monkeypatch)
    root = _repo(tmp_path)
    result = _check("--root", str(root), str(root))
    assert result.exit_code == 1, result.output
    assert "no PostgreSQL server found" not in result.output
    assert ("argocd/shop.yaml:1: PA901 [warning] Argo CD Application shop "
            "(argocd/shop.yaml:1) renders 2 .jsonnet files") in result.output
    assert "deploy/shop" in result.output and "not read" in result.output


def test_an_applicationset_files_generator_renders_the_folders_of_its_files(
        tmp_path, monkeypatch):
    _hide_evaluator(monkeypatch)
    root = _repo(tmp_path, APPSET)
    result = _check("--root", str(root), str(root))
    assert result.exit_code == 1, result.output
    assert "ApplicationSet apps (argocd/shop.yaml:1) renders 2 .jsonnet files" in result.output


def test_jsonnet_files_no_application_renders_are_a_warning(tmp_path, monkeypatch):
    _hide_evaluator(monkeypatch)
    root = _repo(tmp_path)
    result = _check("--root", str(root), str(root / "deploy" / "shop"))
    assert result.exit_code == 1, result.output
    assert "2 .jsonnet files (deploy/shop/cluster.jsonnet, deploy/shop/web.jsonnet) " \
           "describe Kubernetes objects (Cluster, Deployment)" in result.output


def test_argo_cd_renders_jsonnet_only_its_globs_and_recurse_take():
    objs, _ = k8s_objects(APPLICATION, "argocd/shop.yaml")
    builds = argo_builds(objs, lambda p: p, lambda _f: [])
    files = ["deploy/shop/a.jsonnet", "deploy/shop/lib.libsonnet", "deploy/shop/old/b.jsonnet",
             "deploy/shop/sub/c.jsonnet", "deploy/other/d.jsonnet", "deploy/shop/e.yaml"]
    [(_build, mine)] = rendered_jsonnet(files, builds, lambda _f: True)
    assert mine == ["deploy/shop/a.jsonnet", "deploy/shop/sub/c.jsonnet"]
    assert rendered_jsonnet(files, builds, lambda _f: False) == []  # a kustomization


def test_git_files_patterns_match_one_level_per_star():
    tree = {"": ["deploy"], "deploy": ["a", "b"], "deploy/a": [], "deploy/b": []}
    files = {"deploy/a": ["app.json5"], "deploy/b": ["other.json5"]}
    assert glob_files("deploy/*/app.json5", tree.__getitem__,
                      lambda f: files.get(f, [])) == ["deploy/a/app.json5"]
    assert glob_files("deploy/**/app.json5", tree.__getitem__, lambda f: files.get(f, [])) == []


@needs_jsonnet
def test_with_the_evaluator_the_rendered_objects_are_budgeted(tmp_path):
    root = _repo(tmp_path)
    result = _check("-v", "--root", str(root), str(root))
    assert "PA101" in result.output, result.output
    assert "max_connections, deploy/shop/cluster.jsonnet:3" in result.output
    assert "(Deployment replicas, deploy/shop/web.jsonnet:4)" in result.output


LOOP = """local spin(n) = if n < 0 then n else spin(n + 1) tailstrict;
{ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db' },
  spec: { template: { spec: { containers: [{ name: 'db', image: 'postgres:16',
    args: ['-c', 'max_connections=' + spin(0)] }] } } } }
"""


@needs_jsonnet
def test_a_looping_jsonnet_file_is_stopped_at_its_timeout(tmp_path):
    """Before, the evaluator ran in-process without a bound: this file ran until killed."""
    import time

    from advisor.read.render.jsonnet import render

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.jsonnet").write_text(LOOP)
    began = time.monotonic()
    objects, problems = render(tmp_path, "app/main.jsonnet", "app", (), (), (), {},
                               timeout=1.0)
    assert time.monotonic() - began < 8
    assert objects == []
    [problem] = problems
    assert problem.location.path == "app/main.jsonnet"
    assert "did not evaluate within 1 s" in problem.message


@needs_jsonnet
def test_a_jsonnet_file_past_the_memory_limit_is_a_problem(tmp_path):
    from advisor.read.render.jsonnet import render

    (tmp_path / "main.jsonnet").write_text("{ kind: 'ConfigMap', n: std.length("
                                           "std.makeArray(100000000, function(i) i)) }\n")
    objects, [problem] = render(tmp_path, "main.jsonnet", "", (), (), (), {},
                                timeout=20.0, memory=400 << 20)
    assert objects == [] and "main.jsonnet does not evaluate" in problem.message


API = """function(replicas=1, name='api') [
  { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: name, namespace: 'prod' },
    spec: { replicas: if name == 'api' then 10 else replicas, strategy: { type: 'Recreate' },
      template: { spec: {
      containers: [{ name: 'api', image: 'example.org/api:1',
        env: [{ name: 'DATABASE_URL', value: 'postgres://u:p@db:5432/app' }] }] } } } },
]
"""

DB = """[
  { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db', namespace: 'prod' },
    spec: { template: { metadata: { labels: { app: 'db' } }, spec: { containers: [
      { name: 'pg', image: 'postgres:16.2', args: ['-c', 'max_connections=60'] }] } } } },
  { apiVersion: 'v1', kind: 'Service', metadata: { name: 'db', namespace: 'prod' },
    spec: { selector: { app: 'db' } } },
]
"""

TWO_APPS = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: db}
spec:
  source: {repoURL: x, path: apps/db}
  destination: {server: https://kubernetes.default.svc, namespace: prod}
""" + "".join(f"""\
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: {name}}}
spec:
  source:
    repoURL: x
    path: apps/api
    directory: {{jsonnet: {{tlas: [{{name: replicas, value: "{n}", code: true}},
                                 {{name: name, value: {name}}}]}}}}
  destination: {{server: https://kubernetes.default.svc, namespace: prod}}
""" for name, n in (("api-small", 2), ("api-big", 5)))

APPSET_TLA = """\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: apps}
spec:
  generators:
    - git: {repoURL: x, revision: HEAD, directories: [{path: "apps/*"}]}
  template:
    metadata: {name: '{{path.basename}}'}
    spec:
      source:
        repoURL: x
        path: '{{path}}'
        directory: {jsonnet: {tlas: [{name: name, value: '%s'}]}}
      destination: {server: https://kubernetes.default.svc, namespace: prod}
"""


def _tla_repo(tmp_path: Path, apps: str) -> Path:
    for folder, text in (("argocd", None), ("apps/api", API), ("apps/db", DB)):
        (tmp_path / folder).mkdir(parents=True)
        if text:
            (tmp_path / folder / "main.jsonnet").write_text(text)
    (tmp_path / "argocd" / "apps.yaml").write_text(apps)
    (tmp_path / "api" / "src").mkdir(parents=True)
    (tmp_path / "api" / "src" / "index.js").write_text(
        "const { Pool } = require('pg');\n"
        "module.exports = new Pool({ connectionString: process.env.DATABASE_URL, max: 8 });\n")
    (tmp_path / "api" / "Dockerfile").write_text("FROM node:20\nCMD [\"node\", \"src/index.js\"]\n")
    (tmp_path / "api" / "package.json").write_text('{"name": "api", "dependencies": {"pg": "8"}}')
    return tmp_path


@needs_jsonnet
def test_two_applications_rendering_one_folder_with_different_tlas_are_both_budgeted(
        tmp_path):
    """Before, only the first Application's TLAs were evaluated: api-big was dropped."""
    root = _tla_repo(tmp_path, TWO_APPS)
    result = _check("-v", "--root", str(root), str(root))
    assert "api-small: 2 (Deployment replicas" in result.output, result.output
    assert "api-big: 5 (Deployment replicas" in result.output, result.output


@needs_jsonnet
def test_an_applicationset_tla_gets_the_generators_path_parameters(tmp_path):
    """Before, `{{path.basename}}` was passed literally: a workload named so, 1 replica."""
    root = _tla_repo(tmp_path, APPSET_TLA % "{{path.basename}}")
    result = _check("-v", "--root", str(root), str(root))
    assert "api: 10 (Deployment replicas" in result.output, result.output
    assert "{{" not in result.output


@needs_jsonnet
def test_an_applicationset_tla_from_a_parameter_not_read_is_not_rendered(tmp_path):
    root = _tla_repo(tmp_path, APPSET_TLA % "{{cluster}}")
    result = _check("-v", "--root", str(root), str(root))
    assert "apps/api/main.jsonnet:1: PA901" in result.output, result.output
    assert "TLA name = '{{cluster}}' is templated by a generator parameter not read" \
        in result.output
    assert "Deployment replicas, apps/api" not in result.output


def test_applicationset_path_parameters_fill_tlas_and_the_app_name():
    from advisor.read.argo_cd import _fill

    assert _fill("{{ path.basename }}-{{path[0]}}/{{path}}", "", "apps/api", False) == \
        "api-apps/apps/api"
    assert _fill("{{.path.basename}} {{index .path.segments 1}} {{.path.path}}", "",
                 "apps/api", True) == "api api apps/api"
    assert _fill("{{.name}}", "", "apps/api", True) == "{{.name}}"
