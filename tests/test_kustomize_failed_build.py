"""A kustomization kustomize refuses (hasura's install-manifests overlays/local: kustomize
5 rejects `patches: [./deployment.yaml]`, a list of strings): PA901, and what it lists
under resources is still read as written, so the server it deploys is budgeted (a
floor, by the error) instead of missing; its patch file is a patch, not a manifest
"its kustomization does not list"."""

from __future__ import annotations

import shutil

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

pytestmark = pytest.mark.skipif(not (shutil.which("kubectl") or shutil.which("kustomize")),
                                reason="needs kustomize or kubectl")

APP = """apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/acme/app:1
          env:
            - {name: DATABASE_URL, value: "postgres://app@placeholder:5432/app"}
"""
PATCH = """apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  template:
    spec:
      containers:
        - name: app
          env:
            - {name: DATABASE_URL, value: "postgres://app@db:5432/app"}
"""


def test_a_refused_kustomization_still_reads_its_resources(tmp_path):
    write(tmp_path, {
        "base/kustomization.yaml": "resources: [app.yaml]\n", "base/app.yaml": APP,
        "overlays/local/kustomization.yaml": ("resources:\n  - ../../base\n  - ./db.yaml\n"
                                              "patches:\n  - ./app-patch.yaml\n"),
        "overlays/local/db.yaml": POSTGRES_DB, "overlays/local/app-patch.yaml": PATCH})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert [f.code for f in result.findings if f.severity.value == "error"] == ["PA901"]
    (budget,) = result.budgets
    assert budget.server == "db" and budget.unread_files == ["overlays/local/kustomization.yaml"]
    assert not any("does not list it" in n for n in result.notices), result.notices
    assert any("was NOT rendered: kustomize failed on it" in n for n in result.notices)
