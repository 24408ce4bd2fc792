"""A Flux Kustomization whose spec.path is a folder holding a `kind: Component`
kustomization: Flux keeps that file as it is, adds spec.components to it and builds it,
and kustomize builds a Component given as the root. Before, such a folder was no leaf
(a Component is never built alone through another kustomization), so its apps were
dropped and their server printed "fits, peak 0" (tscibilia/home-ops: immich and memini),
with a notice saying the folder had no kustomization.yaml, though it had one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.read.discover import discover_paths
from tests.test_flux_clusters import KUSTOMIZATION, _write

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="kubectl (kustomize) not installed")

COMPONENT = ("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
             "resources:\n{}")


def _flux_ks(name: str, path: str, components: list[str] | None = None) -> str:
    text = ("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
            f"metadata: {{name: {name}, namespace: flux-system}}\n"
            f"spec:\n  path: {path}\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n"
            "  targetNamespace: shop\n")
    if components:
        text += "  components:\n" + "".join(f"    - {c}\n" for c in components)
    return text


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: cart}
spec:
  replicas: 1
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart}}
    spec:
      containers:
        - name: cart
          image: example/cart:2.1
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://orders-rw.shop.svc:5432/cart"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE, value: "15"}
"""

HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: cart}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: cart}
  minReplicas: 1
  maxReplicas: 6
"""

# a component the Flux Kustomization adds: a nightly job that connects too
DUMP_COMPONENT = COMPONENT.format("  - ./cronjob.yaml\n")
DUMP_JOB = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: cart-dump}
spec:
  schedule: "0 3 * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: dump
              image: example/dump:1
              env:
                - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://orders-rw.shop.svc:5432/cart"}
                - {name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE, value: "2"}
"""

# a manifest beside the Component its kustomization does not list: Flux does not apply it
STRAY = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: cart-notes}
data: {note: "kept by hand"}
"""

SERVER = ("apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\n"
          "metadata: {name: orders}\nspec:\n  instances: 1\n"
          "  imageName: ghcr.io/cloudnative-pg/postgresql:17\n"
          "  postgresql:\n    parameters:\n      max_connections: \"60\"\n")


def _tree(tmp_path: Path, *, built_by_flux: bool = True) -> Path:
    files = {
        "deploy/flux/db.yaml": _flux_ks("orders-db", "./deploy/shop/orders-db"),
        "deploy/shop/orders-db/kustomization.yaml": KUSTOMIZATION.format("  - cluster.yaml\n"),
        "deploy/shop/orders-db/cluster.yaml": SERVER,
        "deploy/shop/cart/app/kustomization.yaml": COMPONENT.format(
            "  - ./deployment.yaml\n  - ./hpa.yaml\n"),
        "deploy/shop/cart/app/deployment.yaml": DEPLOYMENT,
        "deploy/shop/cart/app/hpa.yaml": HPA,
        "deploy/shop/cart/app/notes.yaml": STRAY,
        "deploy/parts/dump/kustomization.yaml": DUMP_COMPONENT,
        "deploy/parts/dump/cronjob.yaml": DUMP_JOB,
    }
    if built_by_flux:
        files["deploy/flux/cart.yaml"] = _flux_ks("cart", "./deploy/shop/cart/app",
                                                  ["../../../parts/dump"])
    return _write(tmp_path, files)


def _check(path: Path) -> dict:
    result = CliRunner().invoke(app, ["check", str(path), "--format", "json", "--no-cache",
                                      "--root", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output[result.output.index("{"):])


def test_discovery_names_the_component_folders_apart_from_the_leaves(tmp_path):
    found = discover_paths(_tree(tmp_path), [tmp_path], excludes=[])
    rel = sorted(str(p.relative_to(tmp_path)) for p in found.kustomize_components)
    assert rel == ["deploy/parts/dump", "deploy/shop/cart/app"]
    assert [str(p.relative_to(tmp_path)) for p in found.kustomize_dirs] == [
        "deploy/shop/orders-db"]


@needs_kustomize
def test_a_component_folder_flux_builds_is_built_with_its_flux_components(tmp_path):
    report = _check(_tree(tmp_path))
    b = next(b for b in report["budgets"] if b["server"] == "orders")
    assert b["usable"] == 57  # 60 - 3 reserved
    who = {c["who"]: c["total"] for c in b["terms"]["contributions"]}
    # cart: (6 HPA max + ceil(25% of 6) = 2 surge) x 15; the dump job: 1 pod x 2
    assert who == {"cart": 120, "cart-dump": 2}
    assert b["peak"] == 122 and b["fits"] is False and not b["peak_is_floor"]
    text = json.dumps(b)
    # cited in the Component folder's own files
    assert "deploy/shop/cart/app/hpa.yaml" in text
    assert "deploy/shop/cart/app/deployment.yaml" in text
    notices = report["notices"]
    assert not [n for n in notices if "no built kustomization uses" in n]
    assert not [n for n in notices if "has no kustomization.yaml" in n]
    assert any(n.startswith("Flux: deploy/shop/cart/app built with the components of "
                            "Kustomization/flux-system/cart") for n in notices)
    # the manifest its kustomization does not list is said not applied
    assert any("Flux does not apply them; not read: deploy/shop/cart/app/notes.yaml" in n
               for n in notices)


@needs_kustomize
def test_a_component_folder_no_flux_kustomization_builds_is_still_not_read(tmp_path):
    report = _check(_tree(tmp_path, built_by_flux=False))
    b = next(b for b in report["budgets"] if b["server"] == "orders")
    assert b["peak"] == 0
    assert any(n.startswith("kustomize: deploy/shop/cart/app is a kustomization that no "
                            "built kustomization uses") for n in report["notices"])


@needs_kustomize
def test_a_flux_built_base_included_by_an_overlay_is_not_said_to_lack_its_file(tmp_path):
    """A folder whose kustomization an overlay includes, which a Flux Kustomization also
    builds with components, is no leaf: the notice says so, not that the file is
    missing."""
    files = {
        "deploy/flux/db.yaml": _flux_ks("orders-db", "./deploy/shop/orders-db"),
        "deploy/shop/orders-db/kustomization.yaml": KUSTOMIZATION.format("  - cluster.yaml\n"),
        "deploy/shop/orders-db/cluster.yaml": SERVER,
        "deploy/shop/cart/base/kustomization.yaml": KUSTOMIZATION.format(
            "  - ./deployment.yaml\n"),
        "deploy/shop/cart/base/deployment.yaml": DEPLOYMENT,
        "deploy/shop/cart/live/kustomization.yaml": KUSTOMIZATION.format("  - ../base\n"),
        "deploy/parts/dump/kustomization.yaml": DUMP_COMPONENT,
        "deploy/parts/dump/cronjob.yaml": DUMP_JOB,
        "deploy/flux/cart.yaml": _flux_ks("cart", "./deploy/shop/cart/base",
                                          ["../../../parts/dump"]),
    }
    notices = _check(_write(tmp_path, files))["notices"]
    assert not [n for n in notices if "has no kustomization.yaml" in n]
    assert any(n.startswith("Flux: deploy/shop/cart/base is read only through the "
                            "kustomizations that include its kustomization") for n in notices)
