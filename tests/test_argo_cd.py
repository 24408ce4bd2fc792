"""Argo CD (advisor.read.argo_cd, engine.repository._argo_cd_unlisted): the folders an
Application or an ApplicationSet's git directory generator builds, and the manifests
there that no kustomization lists, which Argo CD does not apply (theepicsaxguy/homelab:
an immich `recover/` Cluster, never deployed, was budgeted as the server with
max_connections 200 and won over the deployed one as 'last applied')."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.read.argo_cd import argo_builds, glob_folders, not_applied, path_match
from advisor.read.sources.k8s import k8s_objects

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="kubectl (kustomize) not installed")

KUSTOMIZATION = ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                 "{}resources:\n{}")


def _cluster(name: str, max_connections: int) -> str:
    return ("apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\n"
            f"metadata: {{name: {name}}}\nspec:\n  instances: 1\n"
            "  imageName: ghcr.io/cloudnative-pg/postgresql:17\n"
            f"  postgresql:\n    parameters:\n      max_connections: \"{max_connections}\"\n")


APPSET = """\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: applications, namespace: argocd}
spec:
  generators:
    - git:
        repoURL: https://git.example.org/homelab.git
        revision: main
        directories:
          - path: k8s/applications/*
          - path: k8s/applications/web
            exclude: true
  template:
    metadata: {name: 'apps-{{ path.basename }}'}
    spec:
      project: applications
      source:
        repoURL: https://git.example.org/homelab.git
        targetRevision: main
        path: '{{ path }}'
        kustomize: {}
      destination: {server: https://kubernetes.default.svc}
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _homelab(root: Path, appset: str = APPSET) -> Path:
    """The shape of theepicsaxguy/homelab: a top kustomization listing the
    ApplicationSet and the app folders; media/photos lists its database but not the
    `recover/` folder beside it, which restores the Cluster from a backup by hand."""
    return _write(root, {
        "k8s/applications/kustomization.yaml": KUSTOMIZATION.format(
            "", "  - application-set.yaml\n  - media\n"),
        "k8s/applications/application-set.yaml": appset,
        "k8s/applications/media/kustomization.yaml": KUSTOMIZATION.format(
            "", "  - photos\n"),
        "k8s/applications/media/photos/kustomization.yaml": KUSTOMIZATION.format(
            "namespace: photos\n", "  - database.yaml\n"),
        "k8s/applications/media/photos/database.yaml": _cluster("photos-postgresql", 100),
        "k8s/applications/media/photos/recover/04-cluster-recovery.yaml":
            _cluster("photos-postgresql", 200).replace(
                "metadata: {name: photos-postgresql}",
                "metadata: {name: photos-postgresql, namespace: photos}"),
    })


def check_json(root: Path) -> dict:
    result = CliRunner().invoke(app, ["check", str(root), "--format", "json", "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


@needs_kustomize
@pytest.mark.parametrize("template_path, go", [("'{{ path }}'", False),
                                               ("'{{.path.path}}'", True)])
def test_a_manifest_no_kustomization_lists_in_an_argo_built_folder_is_not_read(
        tmp_path, template_path, go):
    appset = APPSET.replace("path: '{{ path }}'", f"path: {template_path}")
    if go:
        appset = appset.replace("spec:\n  generators:", "spec:\n  goTemplate: true\n"
                                "  generators:")
    report = check_json(_homelab(tmp_path, appset))
    (b,) = [b for b in report["budgets"] if b["server"].startswith("photos-postgresql")
            and "replicas" not in b["server"]]
    assert b["max_connections"] == 100 and b["usable"] == 97
    assert b["terms"]["max_connections"]["source"]["path"] == \
        "k8s/applications/media/photos/database.yaml"
    (notice,) = [n for n in report["notices"] if n.startswith("Argo CD: ")]
    assert notice == ("Argo CD: 1 manifest in folders an Argo CD Application builds are "
                      "not listed by their kustomization, so Argo CD does not apply them; "
                      "not read: k8s/applications/media/photos/recover/04-cluster-recovery"
                      ".yaml")
    assert not [n for n in report["notices"] if "recover/04" in n and n.startswith(
        "kustomize: ")]


@needs_kustomize
def test_an_unlisted_file_that_does_not_parse_is_not_a_file_left_unread(tmp_path):
    """theepicsaxguy/homelab's authentik recover/12-post-cluster-configuration-job.yaml
    is not valid YAML and not applied: its PA901 error made every budget a floor."""
    root = _homelab(tmp_path)
    (root / "k8s/applications/media/photos/recover/12-job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: post}\nspec:\n"
        "  template: {spec: {containers: [{name: a, image: b, args: [x: y: z]}]}}\n")
    report = check_json(root)
    assert not [f for f in report["findings"] if f["code"] == "PA901"]
    assert all(not b["unread_files"] for b in report["budgets"])
    (notice,) = [n for n in report["notices"] if n.startswith("Argo CD: ")]
    assert notice.startswith("Argo CD: 2 manifests")


@needs_kustomize
def test_without_an_argo_application_the_unlisted_manifest_is_read_as_before(tmp_path):
    root = _homelab(tmp_path)
    (root / "k8s/applications/application-set.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: argocd}\n")
    report = check_json(root)
    assert {b["max_connections"] for b in report["budgets"]
            if b["server"].startswith("photos-postgresql")} == {200}
    assert not [n for n in report["notices"] if n.startswith("Argo CD: ")]


def _objects(text: str):
    found, problems = k8s_objects(text, "apps.yaml")
    assert not problems
    return found


FOLDERS = {"": ["apps", "infra"], "apps": ["a", "b", "web"], "infra": ["db"],
           "apps/a": ["sub"], "apps/b": [], "apps/web": [], "infra/db": [], "apps/a/sub": []}


def _subfolders(folder: str) -> list[str]:
    return FOLDERS.get(folder, [])


def _resolve(path: str) -> str | None:
    path = path.strip().strip("/").removeprefix("./")
    return path if path in FOLDERS else None


def test_git_directory_patterns_match_one_folder_level_per_star_and_exclude_wins():
    assert glob_folders("apps/*", _subfolders) == ["apps/a", "apps/b", "apps/web"]
    assert glob_folders("*/*", _subfolders) == ["apps/a", "apps/b", "apps/web", "infra/db"]
    assert glob_folders("apps/a", _subfolders) == ["apps/a"]
    assert glob_folders("apps/none", _subfolders) == []
    assert glob_folders("../x", _subfolders) == []
    assert path_match("apps/*", "apps/web") and not path_match("apps/*", "apps/a/sub")
    (appset,) = _objects(APPSET.replace("k8s/applications", "apps"))
    assert [b.folder for b in argo_builds([appset], _resolve, _subfolders)] == \
        ["apps/a", "apps/b"]


def test_an_application_builds_its_path_and_a_plain_folder_applies_its_own_files():
    text = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: plain, namespace: argocd}
spec:
  sources:
    - {repoURL: https://git.example.org/x.git, path: apps/a}
    - {repoURL: https://git.example.org/x.git, path: infra, directory: {recurse: true}}
    - {repoURL: https://charts.example.org, chart: redis}
"""
    builds = argo_builds(_objects(text), _resolve, _subfolders)
    assert [(b.folder, b.recurse) for b in builds] == [("apps/a", False), ("infra", True)]
    files = ["apps/a/x.yaml", "apps/a/sub/x.yaml", "infra/db/x.yaml", "apps/b/x.yaml"]
    # plain folders: apps/a applies its own files, infra all below it (recurse)
    assert not_applied(files, builds, lambda _f: True) == {"apps/a/sub/x.yaml"}
    # a folder with a kustomization applies only what it lists
    assert not_applied(files, builds, lambda f: f != "apps/a") == {
        "apps/a/x.yaml", "apps/a/sub/x.yaml"}


POSTGRESQL_APP = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: sso-postgresql, namespace: argocd}
spec:
  project: default
  sources:
    - repoURL: https://charts.bitnami.com/bitnami
      chart: postgresql
      targetRevision: 13.2.26
      helm:
        valueFiles: [$values-repo/postgresql/values.yaml]
    - {repoURL: https://git.example.org/sso-ops.git, targetRevision: HEAD, ref: values-repo}
  destination: {server: 'https://kubernetes.default.svc', namespace: sso}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: pg, namespace: argocd}
spec:
  source: {repoURL: 'https://cloudnative-pg.github.io/charts', chart: cluster,
           targetRevision: 0.3.1}
  destination: {namespace: db}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: cache, namespace: argocd}
spec:
  source: {repoURL: 'https://charts.bitnami.com/bitnami', chart: redis}
  destination: {namespace: sso}
"""


def test_a_release_of_a_postgresql_chart_is_a_server_not_budgeted_warning(tmp_path):
    """padminisys/keycloak-ops: Bitnami postgresql by an Argo CD Application printed 'no
    PostgreSQL server found' and exited 0 (with its remote CRDs aside); the server is
    not rendered, so it is a PA901 warning of its own, not one name in the notice."""
    _write(tmp_path, {"argocd-apps/postgresql/app.yaml": POSTGRESQL_APP,
                      "postgresql/values.yaml": "architecture: standalone\n"})
    result = CliRunner().invoke(app, ["check", str(tmp_path), "--format", "json",
                                      "--no-cache"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    found = [(f["location"], f["severity"], f["message"]) for f in report["findings"]
             if "PostgreSQL server not budgeted" in f["message"]]
    assert [(loc["line"], sev) for loc, sev, _m in found] == [(1, "warning"), (15, "warning")]
    assert found[0][2].startswith(
        "Application sso-postgresql (chart postgresql from Helm repository "
        "https://charts.bitnami.com/bitnami) is a PostgreSQL server not budgeted: ")
    assert 'hosts = ["sso-postgresql.sso.svc"]' in found[0][2]
    assert "(a CloudNativePG Cluster)" in found[1][2]
    (notice,) = [n for n in report["notices"] if "chart release" in n]
    assert notice.startswith("1 chart release not rendered") and notice.endswith(
        "Application sso/cache")


@needs_kustomize
def test_trees_argo_cd_deploys_to_one_cluster_are_one_deployment(tmp_path):
    """theepicsaxguy/homelab: k8s/applications and k8s/infrastructure each have an
    ApplicationSet, and one NetworkPolicy is in both trees; that made them alternatives
    (staging/prod), each budgeted alone, so an app of one reached no server of the
    other and that server said 'fits, peak 0'."""
    policy = ("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
              "metadata: {name: allow-web, namespace: web}\nspec: {podSelector: {}}\n")
    infra = APPSET.replace("applications", "infrastructure")
    web = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: web}\n"
           "spec:\n  replicas: 30\n  template:\n    spec:\n      containers:\n"
           "        - name: web\n          image: example/web:1\n          env:\n"
           "            - {name: DATABASE_URL, value: "
           "'postgres://web@shared-pg-rw.db:5432/web'}\n")
    _write(tmp_path, {
        "k8s/applications/kustomization.yaml": KUSTOMIZATION.format(
            "", "  - application-set.yaml\n  - shop\n"),
        "k8s/applications/application-set.yaml": APPSET,
        "k8s/applications/shop/kustomization.yaml": KUSTOMIZATION.format(
            "", "  - web.yaml\n  - policy.yaml\n"),
        "k8s/applications/shop/web.yaml": web,
        "k8s/applications/shop/policy.yaml": policy,
        "k8s/infrastructure/kustomization.yaml": KUSTOMIZATION.format(
            "", "  - application-set.yaml\n  - db\n  - policies\n"),
        "k8s/infrastructure/application-set.yaml": infra,
        "k8s/infrastructure/db/kustomization.yaml": KUSTOMIZATION.format(
            "namespace: db\n", "  - cluster.yaml\n"),
        "k8s/infrastructure/db/cluster.yaml": _cluster("shared-pg", 100),
        "k8s/infrastructure/policies/kustomization.yaml": KUSTOMIZATION.format(
            "", "  - policy.yaml\n"),
        "k8s/infrastructure/policies/policy.yaml": policy,
    })
    report = check_json(tmp_path)
    (b,) = [b for b in report["budgets"] if b["server"] == "shared-pg"]
    # 30 pods + 8 surge of unknown size: one connection each at least
    assert b["peak"] == 38 and b["unknown_clients"] == ["web"]
