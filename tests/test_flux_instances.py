"""A folder several Flux Kustomizations build, each with its own postBuild: a database
template each app's Kustomization makes its own Cluster of (JJGadgets/Biohazard's
`pg/clusters/template`, built as pg-home and pg-default; only the first was read, and an
app of pg-home was PA107 'no Service'). A folder built again under the same names (a
base built for each cluster with other sizes) is read once, as before."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from tests.test_flux_clusters import KUSTOMIZATION, _write

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="kubectl (kustomize) not installed")


def _ks(name: str, path: str, substitute: dict[str, str]) -> str:
    lines = "".join(f"      {k}: \"{v}\"\n" for k, v in substitute.items())
    return ("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
            f"metadata: {{name: {name}, namespace: flux-system}}\n"
            f"spec:\n  path: {path}\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n"
            f"  postBuild:\n    substitute:\n{lines}")


TEMPLATE = "kube/db/template"
FILES = {
    "kube/flux/cluster.yaml": _ks("cluster", "./kube/apps", {}).replace(
        "  postBuild:\n    substitute:\n", ""),
    "kube/apps/kustomization.yaml": KUSTOMIZATION.format("  - home.yaml\n  - default.yaml\n"
                                                         "  - web\n"),
    "kube/apps/home.yaml": _ks("pg-home", f"./{TEMPLATE}", {"PG_NAME": "home", "MAX": "60"}),
    "kube/apps/default.yaml": _ks("pg-default", f"./{TEMPLATE}",
                                  {"PG_NAME": "default", "MAX": "80"}),
    f"{TEMPLATE}/kustomization.yaml": KUSTOMIZATION.format("  - cluster.yaml\n"),
    f"{TEMPLATE}/cluster.yaml": (
        "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\n"
        "metadata:\n  name: pg-${PG_NAME}\n  namespace: pg\nspec:\n  instances: 1\n"
        "  imageName: ghcr.io/cloudnative-pg/postgresql:17\n"
        "  postgresql:\n    parameters:\n      max_connections: \"${MAX}\"\n"),
    "kube/apps/web/kustomization.yaml": KUSTOMIZATION.format("  - deployment.yaml\n"),
    "kube/apps/web/deployment.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
        "spec:\n  replicas: 2\n  strategy: {type: Recreate}\n  template:\n    spec:\n"
        "      containers:\n        - name: web\n          image: example/web:1\n"
        "          env:\n            - name: DATABASE_URL\n"
        "              value: postgres://web@pg-home-rw.pg.svc.cluster.local:5432/web\n"),
    ".pool-advisor.toml": "[[workloads]]\nname = \"web\"\nconnections = 5\n",
}


def _check(root) -> dict:
    result = CliRunner().invoke(app, ["check", str(root), "--format", "json", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output[result.output.index("{"):])


@needs_kustomize
def test_a_template_folder_is_read_once_for_each_kustomization_that_builds_it(tmp_path):
    report = _check(_write(tmp_path, FILES))
    budgets = {b["server"]: b for b in report["budgets"]}
    assert {"pg-home", "pg-default"} <= set(budgets)
    # each Cluster with its own Kustomization's max_connections, less 3 reserved
    assert (budgets["pg-home"]["usable"], budgets["pg-default"]["usable"]) == (57, 77)
    # web: 2 replicas x 5 declared, on pg-home, which exists only as the second build
    assert [(c["who"], c["total"]) for c in budgets["pg-home"]["terms"]["contributions"]] \
        == [("web", 10)]
    assert "PA107" not in [f["code"] for f in report["findings"]]
    assert f"Flux: {TEMPLATE} is built by 2 Kustomizations, each into objects of its own: " \
           "read once for each" in report["notices"]


@needs_kustomize
def test_a_folder_built_again_under_the_same_names_is_read_once(tmp_path):
    """The second build makes pg-home again, only larger: the same object, read as the
    first Kustomization builds it (as before), and no instance is said."""
    files = dict(FILES)
    files["kube/apps/default.yaml"] = _ks("pg-home-big", f"./{TEMPLATE}",
                                          {"PG_NAME": "home", "MAX": "500"})
    report = _check(_write(tmp_path, files))
    budgets = {b["server"]: b for b in report["budgets"]}
    assert [b for b in budgets if b.startswith("pg-")] == ["pg-home"]
    assert budgets["pg-home"]["usable"] == 57
    assert not [n for n in report["notices"] if "is built by" in n]
    assert not [n for n in report["notices"] if "is defined 2 times" in n]



@needs_kustomize
def test_an_app_template_release_read_with_each_overlay_is_named_once(tmp_path):
    """Aviator-Coding/home-ops: the app-template notice was printed for the shared objects
    and again for each alternative overlay's build, which reads them too (four near
    copies, each with one more release at the end): one notice, each release once."""
    from tests.test_app_template import BJW_S, MINIFLUX, release
    from tests.tree_helpers import POSTGRES_DB

    # a Service both overlays render: they are alternatives, each built with the rest
    base = ("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
            "spec:\n  ports: [{port: 80}]\n")
    files = {
        "k8s/flux/repositories/bjw-s.yaml": BJW_S,
        "k8s/db.yaml": POSTGRES_DB,
        "k8s/apps/miniflux/helmrelease.yaml": release(MINIFLUX),
        "deploy/base/kustomization.yaml": KUSTOMIZATION.format("  - service.yaml\n"),
        "deploy/base/service.yaml": base,
        "deploy/overlays/staging/kustomization.yaml": KUSTOMIZATION.format(
            "  - ../../base\n"),
        "deploy/overlays/prod/kustomization.yaml": KUSTOMIZATION.format(
            "  - ../../base\n  - helmrelease.yaml\n"),
        "deploy/overlays/prod/helmrelease.yaml": release(MINIFLUX, name="admin"),
    }
    report = _check(_write(tmp_path, files))
    notes = [n for n in report["notices"] if n.startswith("app-template:")]
    (note,) = notes
    assert note.startswith("app-template: 2 releases of"), note
    assert "HelmRelease/miniflux (3.5.1" in note and "HelmRelease/admin (3.5.1" in note


# The Kustomization of one instance patches the objects it builds (JJGadgets/Biohazard's
# authentik-db: max_connections 500 in spec.patches for the PostgresCluster of the
# template): kustomize-controller adds spec.patches to the kustomization it builds.
HOME_PATCH = """\
  patches:
    - patch: |-
        apiVersion: postgresql.cnpg.io/v1
        kind: Cluster
        metadata:
          name: not-used
        spec:
          postgresql:
            parameters:
              max_connections: "200"
      target:
        group: postgresql.cnpg.io
        kind: Cluster
"""


@needs_kustomize
def test_a_kustomizations_patches_of_what_it_builds_are_applied(tmp_path):
    """Audit 13b D2: the patch was not applied, so the PR that moved JJGadgets/
    Biohazard's max_connections into the patch's `parameters` (2915c60c2) said 'usable
    95 -> 95, +0, over by at least 68' where it is 95 -> 495 and cannot tell."""
    files = dict(FILES)
    files["kube/apps/home.yaml"] += HOME_PATCH
    report = _check(_write(tmp_path, files))
    budgets = {b["server"]: b for b in report["budgets"]}
    home, default = budgets["pg-home"], budgets["pg-default"]
    # only pg-home's Kustomization patches: 200 - 3; pg-default keeps its ${MAX} 80
    assert (home["usable"], default["usable"]) == (197, 77)
    src = home["terms"]["max_connections"]["source"]
    assert (src["path"], src["line"]) == ("kube/apps/home.yaml", 20), src


@needs_kustomize
def test_a_json6902_patch_not_applied_is_said(tmp_path):
    files = dict(FILES)
    files["kube/apps/home.yaml"] += (
        "  patches:\n    - patch: |-\n        - op: replace\n"
        "          path: /spec/postgresql/parameters/max_connections\n"
        "          value: \"200\"\n      target:\n        kind: Cluster\n")
    report = _check(_write(tmp_path, files))
    assert any("pg-home (kube/apps/home.yaml:1) spec.patches[0] (kube/apps/home.yaml:12)" in n
               and "not evaluated" in n for n in report["notices"]), \
        report["notices"]


@needs_kustomize
def test_a_patch_of_a_built_in_kinds_lists_is_not_merged_as_json(tmp_path):
    """Containers merge by name in a strategic merge: a JSON merge would replace the
    list, dropping web's DATABASE_URL; the patch is said, not applied."""
    files = dict(FILES)
    files["kube/flux/cluster.yaml"] += (
        "  patches:\n    - patch: |-\n        apiVersion: apps/v1\n        kind: Deployment\n"
        "        metadata:\n          name: web\n        spec:\n          template:\n"
        "            spec:\n              containers:\n                - name: web\n"
        "                  resources: {limits: {memory: 1Gi}}\n")
    report = _check(_write(tmp_path, files))
    budgets = {b["server"]: b for b in report["budgets"]}
    assert [(c["who"], c["total"]) for c in budgets["pg-home"]["terms"]["contributions"]] \
        == [("web", 10)]
    assert any("spec.patches[0]" in n and "not evaluated" in n for n in report["notices"])
