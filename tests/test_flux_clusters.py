"""Two clusters in one Flux repository (kubernetes/main, kubernetes/staging, each
bootstrapped from its own cluster Kustomization): both hold a database Cluster `pg`
in namespace db, and only main runs the app. Before, the two `pg` folders were taken
for alternatives of each other and main's app for a part of neither, so it linked to
no server (szinn/k8s-homelab: bookboss and issueboss, PA107 'no Service', and
postgres-18 'peak 0, fits')."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.read.flux import clusters
from advisor.read.sources.k8s import k8s_objects

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="kubectl (kustomize) not installed")

KUSTOMIZATION = ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                 "resources:\n{}")


def _flux_ks(name: str, path: str) -> str:
    return ("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
            f"metadata: {{name: {name}, namespace: flux-system}}\n"
            f"spec:\n  path: {path}\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n")


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _cluster(name: str, with_app: bool) -> dict[str, str]:
    top = f"kubernetes/{name}"
    files = {
        f"{top}/flux/cluster.yaml": _flux_ks("cluster-apps", f"./{top}/apps"),
        f"{top}/apps/db/kustomization.yaml": KUSTOMIZATION.format("  - ks.yaml\n"),
        f"{top}/apps/db/ks.yaml": _flux_ks("pg", f"./{top}/apps/db/cluster"),
        f"{top}/apps/db/cluster/kustomization.yaml": KUSTOMIZATION.format("  - cluster.yaml\n"),
        f"{top}/apps/db/cluster/cluster.yaml": (
            "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\n"
            "metadata: {name: pg, namespace: db}\nspec:\n  instances: 1\n"
            "  imageName: ghcr.io/cloudnative-pg/postgresql:17\n"
            "  postgresql:\n    parameters:\n      max_connections: \"50\"\n"),
    }
    if with_app:
        files |= {
            f"{top}/apps/web/kustomization.yaml": KUSTOMIZATION.format("  - ks.yaml\n"),
            f"{top}/apps/web/ks.yaml": _flux_ks("web", f"./{top}/apps/web/app"),
            f"{top}/apps/web/app/kustomization.yaml": KUSTOMIZATION.format(
                "  - deployment.yaml\n"),
            f"{top}/apps/web/app/deployment.yaml": (
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
                "spec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n"
                "        - name: web\n          image: example/web:1\n          env:\n"
                "            - name: DATABASE_URL\n"
                "              value: postgres://web@pg-rw.db.svc.cluster.local:5432/web\n"),
        }
    return files


def _tree(root: Path) -> Path:
    return _write(root, {**_cluster("main", True), **_cluster("staging", False),
                         ".pool-advisor.toml": "[[workloads]]\nname = \"web\"\n"
                                               "connections = 5\n"})


@needs_kustomize
def test_an_app_links_to_the_server_of_its_own_cluster(tmp_path):
    root = _tree(tmp_path)
    result = CliRunner().invoke(app, ["check", str(root), "--format", "json", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.output[result.output.index("{"):])
    budgets = {b["server"]: b for b in report["budgets"]}
    main, staging = budgets["pg [kubernetes/main]"], budgets["pg [kubernetes/staging]"]
    # web: (3 replicas + 1 surge) x 5 declared, on main's server only
    assert [(c["who"], c["total"]) for c in main["terms"]["contributions"]] == [
        ("web [kubernetes/main]", 20)]
    assert main["peak"] == 20 and main["usable"] == 47
    assert staging["peak"] == 0 and staging["terms"]["contributions"] == []
    assert "PA107" not in [f["code"] for f in report["findings"]]


def test_clusters_are_what_each_cluster_kustomization_reaches():
    files = {**_cluster("main", True), **_cluster("staging", False)}
    plain, leaves = [], []
    for name, text in files.items():
        objs, _problems = k8s_objects(text, name)
        folder = name.rsplit("/", 1)[0]
        if name.endswith("ks.yaml"):  # read by the kustomization of its folder
            leaves.append((folder, objs))
        elif "/flux/" in name:
            plain += objs
        elif not name.endswith("kustomization.yaml"):
            leaves.append((folder, objs))
    found = clusters(plain, leaves, lambda p: p.removeprefix("./"))
    assert found == {
        "kubernetes/main/apps/db": "kubernetes/main",
        "kubernetes/main/apps/db/cluster": "kubernetes/main",
        "kubernetes/main/apps/web": "kubernetes/main",
        "kubernetes/main/apps/web/app": "kubernetes/main",
        "kubernetes/staging/apps/db": "kubernetes/staging",
        "kubernetes/staging/apps/db/cluster": "kubernetes/staging",
    }


def test_a_folder_two_clusters_build_joins_them():
    """apps/base built for main and for test (joryirving/home-ops): one cluster, so
    their same-named objects stay alternatives leaf by leaf, as before."""
    ks = {"kubernetes/clusters/main/ks.yaml": _flux_ks("apps", "./kubernetes/apps/main"),
          "kubernetes/clusters/test/ks.yaml": _flux_ks("apps", "./kubernetes/apps/test")}
    plain = [o for name, text in ks.items() for o in k8s_objects(text, name)[0]]
    leaves = [(f"kubernetes/apps/{c}", k8s_objects(_flux_ks("db", "./kubernetes/apps/base/db"),
                                                   f"kubernetes/apps/{c}/db.yaml")[0])
              for c in ("main", "test")] + [("kubernetes/apps/base/db", [])]
    found = clusters(plain, leaves, lambda p: p.removeprefix("./"))
    assert set(found.values()) == {"kubernetes"}
