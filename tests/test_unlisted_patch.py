"""A kustomize patch kept beside an overlay that does not list it (audit 13e D1,
jdost/homelab-manifests' tandoor/overlays/ingress/statefulset-patch.yaml): it is read as a
plain manifest, but a workload whose containers name no image is a patch the API server
refuses, so it does not replace the base's whole object. Before, it did: the
application's database env was dropped and its server said 'fits, peak 0', exit 0."""

from __future__ import annotations

import shutil

import pytest

from advisor.engine.check import run_check
from tests.test_kustomize_environments import _client, _server, _write

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="kubectl (kustomize) not installed")

PATCH = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: recipes
    spec:
      template:
        spec:
          containers:
          - name: recipes
            env:
            - name: ALLOWED_HOSTS
              value: recipes.home
    """


def _tree(root, patch: str) -> None:
    _write(root / "recipes" / "base" / "kustomization.yaml",
           "resources:\n  - db.yaml\n  - app.yaml\n")
    _write(root / "recipes" / "base" / "db.yaml", _server("recipes-db", 100))
    _write(root / "recipes" / "base" / "app.yaml", _client("recipes", "recipes-db", 10, 3))
    _write(root / "recipes" / "overlays" / "ingress" / "kustomization.yaml",
           "resources:\n  - ../../base\n")
    _write(root / "recipes" / "overlays" / "ingress" / "app-patch.yaml", patch)


@needs_kustomize
def test_an_unlisted_patch_does_not_replace_the_whole_workload(tmp_path):
    _tree(tmp_path, PATCH)
    r = run_check([tmp_path / "recipes"])
    # recipes: 3 replicas (maxSurge 0) x HikariCP 10 = 30, not 0
    assert {b.server: b.peak for b in r.budgets} == {"recipes-db": 30}
    assert any("app-patch.yaml:1 is a patch" in n and "not read" in n for n in r.notices), \
        r.notices


@needs_kustomize
def test_an_unlisted_whole_object_still_replaces_the_earlier_one(tmp_path):
    # a second whole Deployment of that name, with an image, is applied last and kept
    _tree(tmp_path, _client("recipes", "recipes-db", 10, 5))
    r = run_check([tmp_path / "recipes"])
    assert {b.server: b.peak for b in r.budgets} == {"recipes-db": 50}
    assert any("is defined 2 times" in n for n in r.notices), r.notices
