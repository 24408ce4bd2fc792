"""A kustomization read as written (kustomize failed on it, PA901, or no binary) still links
a pod to the Secret that holds its database URL (audit 10b D3, jellydn/monorepo-starter's
production overlay): the objects are put in the namespace the kustomizations set, the
generators' ConfigMaps and Secrets are made, and a Secret that is in the repository but
not where the pod reads it is never called "not in the repository"."""

from __future__ import annotations

import base64
import shutil

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.fs import Root
from advisor.read.render.kustomize import render_kustomization
from tests.tree_helpers import write

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="needs kustomize or kubectl")

API = """apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: api
          image: example/api:1
          env:
            - name: DATABASE_URL
              valueFrom: {secretKeyRef: {name: db-url, key: DATABASE_URL}}
"""
DB = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: postgres, image: "postgres:16.4"}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {selector: {app: db}}
"""
SECRET = """apiVersion: v1
kind: Secret
metadata: {name: db-url}
stringData:
  DATABASE_URL: postgresql://shop@db:5432/shop?connection_limit=5
"""
APP = {
    "api/package.json": '{"name": "api", "dependencies": {"@prisma/client": "6.19.0"}}\n',
    "api/prisma/schema.prisma": ('datasource db {\n  provider = "postgresql"\n'
                                 '  url      = env("DATABASE_URL")\n}\n'),
    "api/Dockerfile": 'FROM node:20\nCOPY . .\nCMD ["node", "main.js"]\n',
}
# a patch whose target is not among the resources: kustomize fails the whole build
PROD = "resources: [../base]\npatches:\n  - path: worker.yaml\n"
WORKER = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: worker}\nspec: {replicas: 3}\n"


def _tree(tmp_path, base_extra: dict[str, str], base: str) -> None:
    write(tmp_path, {**APP, "deploy/base/kustomization.yaml": base,
                     "deploy/base/api.yaml": API, **base_extra,
                     "deploy/prod/kustomization.yaml": PROD,
                     "deploy/prod/worker.yaml": WORKER})


def _api_total(result) -> tuple[float, str]:
    (budget,) = result.budgets
    (api,) = [c for c in budget.contributions if c.who.startswith("api")]
    return api.total, api.factors[-1].source.label() if api.factors[-1].source else ""


@needs_kustomize
def test_a_failed_overlay_reads_the_secret_of_a_sub_kustomization_in_its_namespace(tmp_path):
    # the Secret has no metadata.namespace: kustomize gives it the base's `shop`
    _tree(tmp_path, {"deploy/base/db/kustomization.yaml": "resources: [db.yaml, secret.yaml]\n",
                     "deploy/base/db/db.yaml": DB, "deploy/base/db/secret.yaml": SECRET},
          "namespace: shop\nresources: [api.yaml, db/]\n")
    result = run_check([str(tmp_path / "deploy/prod")], CheckOptions(cache=False,
                                                                     root=tmp_path))
    assert [f.code for f in result.findings if f.severity.value == "error"] == ["PA901"]
    assert _api_total(result) == (15, "deploy/base/db/secret.yaml:5")  # (2 + 1 surge) x 5
    assert not any("not in the repository" in n for n in result.notices), result.notices
    assert "PA103" not in [f.code for f in result.findings]


@needs_kustomize
def test_a_failed_overlay_makes_the_secret_of_a_secret_generator(tmp_path):
    _tree(tmp_path, {"deploy/base/db.yaml": DB, "deploy/base/db.env":
                     "# the URL\nDATABASE_URL=postgresql://shop@db:5432/shop?connection_limit=4\n"},
          "namespace: shop\nresources: [api.yaml, db.yaml]\n"
          "secretGenerator:\n  - name: db-url\n    envs: [db.env]\n")
    result = run_check([str(tmp_path / "deploy/prod")], CheckOptions(cache=False,
                                                                     root=tmp_path))
    assert _api_total(result) == (12, "deploy/base/db.env:2")
    assert not any("not in the repository" in n for n in result.notices), result.notices


def test_read_as_written_namespaces_and_generators(tmp_path):
    """Without a binary: the outermost `namespace:` wins, kinds without a namespace keep
    none, literals lose their quotes, and `merge` adds to the object read before."""
    write(tmp_path, {
        "base/kustomization.yaml": ("namespace: inner\nresources: [cm.yaml, ns.yaml]\n"
                                    "configMapGenerator:\n  - name: cfg\n    behavior: merge\n"
                                    "    literals: [B=2]\n"),
        "base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {A: '1'}\n",
        "base/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: outer}\n",
        "top/kustomization.yaml": ("namespace: outer\nresources: [../base]\n"
                                   "secretGenerator:\n  - name: s\n"
                                   "    literals: ['URL=\"postgres://db/x\"']\n"),
    })
    out = render_kustomization(Root(tmp_path), "top", binary=[])
    by = {(o.kind, o.name): o for o in out.objects}
    assert by[("Namespace", "outer")].namespace is None
    cfg = by[("ConfigMap", "cfg")]
    assert cfg.namespace == "outer" and dict(cfg.body["data"]) == {"A": "1", "B": "2"}
    assert cfg.source("data", "A").label() == "base/cm.yaml:4"
    assert cfg.source("data", "B").label().startswith("base/kustomization.yaml:6")
    secret = by[("Secret", "s")]
    assert secret.namespace == "outer"
    assert base64.b64decode(secret.body["data"]["URL"]).decode() == "postgres://db/x"


def test_a_secret_in_another_namespace_is_said_to_be_there(tmp_path):
    write(tmp_path, {"k8s/api.yaml": API, "k8s/db.yaml": DB,
                     "k8s/secret.yaml": SECRET.replace("{name: db-url}",
                                                       "{name: db-url, namespace: other}")})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    said = [n for n in result.notices if "DATABASE_URL (secret:db-url/DATABASE_URL" in n]
    assert said and "Secret db-url is in the repository in namespace other " \
        "(k8s/secret.yaml:1), not in shop where the pod reads it" in said[0], said
    assert not any("not in the repository" in n for n in result.notices), result.notices


def test_a_secret_without_the_key_is_said_to_be_there(tmp_path):
    write(tmp_path, {"k8s/api.yaml": API, "k8s/db.yaml": DB,
                     "k8s/secret.yaml": SECRET.replace("{name: db-url}",
                                                       "{name: db-url, namespace: shop}")
                     .replace("DATABASE_URL:", "OTHER_URL:")})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    said = [n for n in result.notices if "DATABASE_URL (secret:db-url/DATABASE_URL" in n]
    assert said and "Secret db-url is in the repository (k8s/secret.yaml:1) without key " \
        "DATABASE_URL" in said[0], said


@needs_kustomize
def test_a_secret_read_as_written_elsewhere_says_the_build_failed(tmp_path):
    # no `namespace:` anywhere: the Secret stays in default, the pod is in shop
    _tree(tmp_path, {"deploy/base/db.yaml": DB, "deploy/base/secret.yaml": SECRET},
          "resources: [api.yaml, db.yaml, secret.yaml]\n")
    result = run_check([str(tmp_path / "deploy/prod")], CheckOptions(cache=False,
                                                                     root=tmp_path))
    said = [n for n in result.notices if "DATABASE_URL (secret:db-url/DATABASE_URL" in n]
    assert said and ("Secret db-url is in the repository in namespace default "
                     "(deploy/base/secret.yaml:1), not in shop where the pod reads it; read "
                     "as written because kustomize did not build deploy/prod") in said[0], said


GENERATOR_NAMESPACES = {
    "base/kustomization.yaml": ("configMapGenerator:\n  - name: cfg\n    namespace: inner\n"
                                "    literals: [A=1]\n"),
    "top/kustomization.yaml": ("namespace: outer\nresources: [../base]\n"
                               "configMapGenerator:\n  - name: own\n    namespace: mine\n"
                               "    literals: [B=2]\n"),
}


def test_read_as_written_a_generator_items_namespace_yields_to_the_kustomizations(tmp_path):
    """kustomize's namespace transformer runs after the generators: a kustomization's
    `namespace:` (its own or an outer one) wins over an item's; alone, the item's
    stands."""
    write(tmp_path, GENERATOR_NAMESPACES)
    top = {o.name: o.namespace for o in
           render_kustomization(Root(tmp_path), "top", binary=[]).objects}
    assert top == {"cfg": "outer", "own": "outer"}
    base = {o.name: o.namespace for o in
            render_kustomization(Root(tmp_path), "base", binary=[]).objects}
    assert base == {"cfg": "inner"}


@needs_kustomize
def test_generator_namespaces_as_kustomize_builds_them(tmp_path):
    write(tmp_path, GENERATOR_NAMESPACES)
    built = {o.name.rsplit("-", 1)[0]: o.namespace for o in
             render_kustomization(Root(tmp_path), "top").objects}
    assert built == {"cfg": "outer", "own": "outer"}
