"""kustomize overlays rendered by the real kustomize (kubectl kustomize), traced to
the overlay lines."""

from __future__ import annotations

import re
import shutil

import pytest

from advisor.read.fs import Root
from advisor.read.render import field_source, text_origin
from advisor.read.render.kustomize import render_kustomization
from advisor.read.sources.k8s import get
from tests.deploy_helpers import FIXTURES, by_ref, line_no

KZ = FIXTURES / "kustomize-overlays"
PROD = KZ / "overlays" / "prod"
needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="kubectl (kustomize) not installed")


@needs_kustomize
def test_prod_overlay_replicas_images_generators_and_patches_map_to_overlay_lines():
    r = render_kustomization(Root.of(KZ), "overlays/prod")
    assert not r.problems, r.problems
    api = by_ref(r.objects, "Deployment/prod/api")
    assert api.path == "base/api.yaml"
    assert get(api.body, "spec", "replicas") == 4
    src = field_source(api, "spec", "replicas")
    assert (src.path, src.line) == ("overlays/prod/kustomization.yaml",
                                    line_no(PROD / "kustomization.yaml", "count: 4"))
    surge = field_source(api, "spec", "strategy", "rollingUpdate", "maxSurge")
    assert (surge.path, surge.line) == ("overlays/prod/kustomization.yaml",
                                        line_no(PROD / "kustomization.yaml", "maxSurge: 1"))
    image = get(api.body, "spec", "template", "spec", "containers", 0, "image")
    assert image == "ghcr.io/acme/shop-api:1.9.2"
    # unchanged fields stay at the base file's lines
    loc = api.location("spec", "template", "spec", "containers", 0, "envFrom")
    assert loc.line == line_no(KZ / "base" / "api.yaml", "envFrom:")

    [cm] = [o for o in r.objects if o.kind == "ConfigMap" and o.name.startswith("api-db-")]
    assert cm.body["data"]["SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE"] == "12"
    src = field_source(cm, "data", "SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE")
    assert (src.path, src.line) == ("overlays/prod/kustomization.yaml",
                                    line_no(PROD / "kustomization.yaml", "MAXIMUMPOOLSIZE=12"))
    src = field_source(cm, "data", "SPRING_DATASOURCE_URL")
    assert (src.path, src.line) == ("base/kustomization.yaml",
                                    line_no(KZ / "base" / "kustomization.yaml", "DATASOURCE_URL"))
    # the Deployment's envFrom follows the generated (hashed) name
    ref = get(api.body, "spec", "template", "spec", "containers", 0, "envFrom", 0,
              "configMapRef", "name")
    assert ref == cm.name

    conf = by_ref(r.objects, "ConfigMap/prod/postgres-config")
    assert "max_connections = 200" in conf.body["data"]["postgresql.conf"]
    src = field_source(conf, "data", "postgresql.conf", text_line=2)
    assert (src.path, src.line) == ("overlays/prod/postgres-conf.yaml",
                                    line_no(PROD / "postgres-conf.yaml", "max_connections"))
    assert text_origin(conf, "data", "postgresql.conf") == (
        "overlays/prod/postgres-conf.yaml", line_no(PROD / "postgres-conf.yaml", "conf: |"))

    hpa = by_ref(r.objects, "HorizontalPodAutoscaler/prod/api")
    assert hpa.path == "overlays/prod/hpa.yaml"
    assert hpa.location("spec", "maxReplicas").line == line_no(PROD / "hpa.yaml", "maxReplicas")
    assert "spec.replicas" not in hpa.value_sources  # `replicas:` only edits workloads


@needs_kustomize
def test_staging_overlay():
    r = render_kustomization(Root.of(KZ), "overlays/staging")
    api = by_ref(r.objects, "Deployment/staging/api")
    assert get(api.body, "spec", "replicas") == 1
    src = field_source(api, "spec", "replicas")
    assert src.path == "overlays/staging/kustomization.yaml"
    conf = by_ref(r.objects, "ConfigMap/staging/postgres-config")
    assert conf.path == "base/postgres.yaml"
    assert text_origin(conf, "data", "postgresql.conf") is None  # not patched: base lines
    assert conf.location("data", "postgresql.conf").line == line_no(
        KZ / "base" / "postgres.yaml", "postgresql.conf: |")


def test_without_binary_the_resources_are_read_as_plain_manifests():
    r = render_kustomization(Root.of(KZ), "overlays/prod", binary=[])
    [notice] = r.notices
    assert "NOT rendered" in notice and "patches, replicas" in notice
    # in the overlay's namespace, as kustomize puts it (audit 10b D3)
    api = by_ref(r.objects, "Deployment/prod/api")
    assert get(api.body, "spec", "replicas") == 2  # the base's
    assert api.path == "base/api.yaml"
    # the base's generator, merged with the overlay's, each key at its line
    db = by_ref(r.objects, "ConfigMap/prod/api-db")
    assert db.body["data"]["SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE"] == "12"
    assert field_source(db, "data", "SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE").label() == \
        "overlays/prod/kustomization.yaml:17"
    assert field_source(db, "data", "SPRING_DATASOURCE_URL").label() == \
        "base/kustomization.yaml:12"


def test_base_outside_the_root_is_refused():
    r = render_kustomization(Root.of(KZ / "overlays"), "prod")
    # the overlay's own files read as written (audit 10a D2), the base never
    assert "prod/hpa.yaml" in {o.path for o in r.objects}
    assert all(o.path.startswith("prod/") for o in r.objects)
    [p] = r.problems
    assert p.fatal and "outside the scanned root" in p.message
    assert (p.location.path, p.location.line) == ("prod/kustomization.yaml", 5)


@needs_kustomize
def test_remote_resources_are_not_fetched_and_the_rest_is_built(tmp_path):
    """A vendor's CRDs named by URL beside the application (audit G: three of damacus'
    kustomizations were a PA901 error each, their local objects unread)."""
    (tmp_path / "kustomization.yaml").write_text(
        "resources:\n  - https://github.com/kubernetes-sigs/kustomize//examples/helloWorld\n"
        "  - cm.yaml\n"
        "components:\n  - https://example.invalid/component\n")
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-db\n"
        "data:\n  DATABASE_URL: postgres://app@db/app\n")
    r = render_kustomization(Root.of(tmp_path), ".")
    [component] = [p for p in r.problems if "component" in p.message]
    # a remote component changes what is read: not built, the files read as written
    # (audit 10a D2), each peak a floor by the error
    assert component.fatal and [o.origin for o in r.objects] == ["kustomize-plain:."]
    (tmp_path / "kustomization.yaml").write_text(
        "resources:\n  - https://github.com/kubernetes-sigs/kustomize//examples/helloWorld\n"
        "  - cm.yaml\n")
    r = render_kustomization(Root.of(tmp_path), ".")
    [p] = r.problems
    assert not p.fatal and p.location.line == 2
    assert "does not fetch from the network" in p.message and "the rest" in p.message
    assert [o.ref for o in r.objects] == ["ConfigMap/app-db"]



@needs_kustomize
def test_a_remote_resource_under_comments_and_a_remote_generator_file(tmp_path):
    """The only resource remote, under comment lines (sourcegraph's ingress example: the
    list made anew was dumped as `[]` under the comments and the next key as `-`, a
    ScannerError that made the whole check exit 2); a ConfigMap generated from a
    dashboard by URL (toboshii/home-ops: the whole apps build failed, its server and 64
    releases unread): both left out with a warning, the rest built."""
    (tmp_path / "kustomization.yaml").write_text(
        "namespace: web\nresources:\n  # the provider's manifests:\n"
        "  # - https://example.invalid/${PROVIDER}\n"
        "  - https://github.com/kubernetes/ingress-nginx/deploy/static/provider/cloud"
        "?ref=controller-v1.5.1\n"
        "configMapGenerator:\n  - name: dashboards\n    files:\n"
        "      - postgres.json=https://example.invalid/dashboards/9628.json\n"
        "      - local.json\n"
        "  - name: app-db\n    literals:\n      - DATABASE_URL=postgres://app@db/app\n"
        "    options:\n      disableNameSuffixHash: true\n")
    (tmp_path / "local.json").write_text("{}\n")
    r = render_kustomization(Root.of(tmp_path), ".")
    assert not [p for p in r.problems if p.fatal], r.problems
    assert sorted(p.location.line for p in r.problems) == [5, 9]
    assert all("not fetched" in p.message for p in r.problems)
    assert sorted(o.ref.rsplit("-", 1)[0] if "dashboards" in o.ref else o.ref
                  for o in r.objects) == ["ConfigMap/web/app-db", "ConfigMap/web/dashboards"]
    dashboards = next(o for o in r.objects if o.name.startswith("dashboards-"))
    assert list(dashboards.body["data"]) == ["local.json"]

def test_helm_inflation_and_symlinked_resources_are_refused(tmp_path):
    (tmp_path / "kustomization.yaml").write_text(
        "helmCharts:\n  - name: postgresql\n    repo: https://charts.bitnami.com/bitnami\n")
    r = render_kustomization(Root.of(tmp_path), ".", binary=["/bin/false"])
    assert "--enable-helm" in r.problems[0].message and r.problems[0].location.line == 1

    outside = tmp_path / "outside.yaml"
    outside.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "leak.yaml").symlink_to(outside)
    (repo / "kustomization.yaml").write_text("resources:\n  - leak.yaml\n")
    r = render_kustomization(Root.of(repo), ".", binary=["/bin/false"])
    assert r.objects == [] and "outside the scanned root" in r.problems[0].message


@needs_kustomize
def test_components_and_strategic_merge_env_patch(tmp_path):
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n  - app.yaml\n")
    (tmp_path / "base" / "app.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n"
        "  replicas: 1\n  template:\n    spec:\n      containers:\n        - name: app\n"
        "          image: app:1\n          env:\n            - name: A\n              value: x\n"
        "            - name: POOL\n              value: \"5\"\n")
    (tmp_path / "comp").mkdir()
    (tmp_path / "comp" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n"
        "  - patch: |-\n      apiVersion: apps/v1\n      kind: Deployment\n      metadata:\n"
        "        name: app\n      spec:\n        template:\n          spec:\n"
        "            containers:\n              - name: app\n                env:\n"
        "                  - name: POOL\n                    value: \"30\"\n")
    (tmp_path / "prod").mkdir()
    (tmp_path / "prod" / "kustomization.yaml").write_text(
        "resources:\n  - ../base\ncomponents:\n  - ../comp\n")
    r = render_kustomization(Root.of(tmp_path), "prod")
    assert not r.problems, r.problems
    app = by_ref(r.objects, "Deployment/app")
    env = get(app.body, "spec", "template", "spec", "containers", 0, "env")
    pool = next(i for i, e in enumerate(env) if e["name"] == "POOL")
    assert env[pool]["value"] == "30"
    src = field_source(app, "spec", "template", "spec", "containers", 0, "env", pool, "value")
    # line 16 of comp/kustomization.yaml: `value: "30"` inside the inline patch
    assert (src.path, src.line) == ("comp/kustomization.yaml", 16)
    a = next(i for i, e in enumerate(env) if e["name"] == "A")
    loc = app.location("spec", "template", "spec", "containers", 0, "env", a, "value")
    assert (loc.path, loc.line) == ("base/app.yaml", 14)


@needs_kustomize
def test_label_selector_patch_is_traced_only_where_it_applied(tmp_path):
    deployment = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {n}\n"
                  "  labels:\n    tier: {t}\nspec:\n  replicas: 1\n")
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "a.yaml").write_text(deployment.format(n="a", t="web"))
    (tmp_path / "base" / "b.yaml").write_text(deployment.format(n="b", t="batch"))
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n  - a.yaml\n  - b.yaml\n")
    (tmp_path / "prod").mkdir()
    (tmp_path / "prod" / "kustomization.yaml").write_text(
        "resources:\n  - ../base\npatches:\n  - target:\n      labelSelector: tier=web\n"
        "    patch: |-\n      - op: replace\n        path: /spec/replicas\n        value: 5\n")
    r = render_kustomization(Root.of(tmp_path), "prod")
    a, b = by_ref(r.objects, "Deployment/a"), by_ref(r.objects, "Deployment/b")
    assert get(a.body, "spec", "replicas") == 5
    assert (field_source(a, "spec", "replicas").path,
            field_source(a, "spec", "replicas").line) == ("prod/kustomization.yaml", 9)
    assert get(b.body, "spec", "replicas") == 1
    assert (field_source(b, "spec", "replicas").path,
            field_source(b, "spec", "replicas").line) == ("base/b.yaml", 8)


@needs_kustomize
def test_helm_charts_are_left_out_and_the_rest_is_built(tmp_path):
    """A kustomization that inflates a chart (helmCharts) and lists plain resources: the
    chart is reported (a warning: its objects are not read) and the resources are still
    built (theepicsaxguy/homelab's authentik folder lost its Zalando database)."""
    (tmp_path / "kustomization.yaml").write_text(
        "namespace: auth\nresources:\n  - database.yaml\nhelmCharts:\n  - name: authentik\n"
        "    repo: https://charts.goauthentik.io\n    version: 2024.10.1\n")
    (tmp_path / "database.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db-settings\n"
        "data:\n  max: \"10\"\n")
    r = render_kustomization(Root.of(tmp_path), ".")
    assert [(o.kind, o.name, o.namespace) for o in r.objects] == [
        ("ConfigMap", "db-settings", "auth")]
    (helm,) = r.problems
    assert not helm.fatal and helm.location.line == 4
    assert helm.message.startswith("helmCharts authentik not inflated")


@needs_kustomize
def test_a_file_outside_the_kustomization_folder_is_built_as_flux_builds(tmp_path):
    """kustomize's default refuses a resource file outside the kustomization's folder;
    Flux's kustomize-controller builds with LoadRestrictionsNone (joryirving/home-ops:
    all 39 app folders failed, 0 servers found). Built again so, with a notice."""
    (tmp_path / "app").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "app" / "kustomization.yaml").write_text(
        "namespace: web\nresources:\n  - ../shared/settings.yaml\n")
    (tmp_path / "shared" / "settings.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"1\"\n")
    r = render_kustomization(Root.of(tmp_path), "app")
    assert not r.problems, r.problems
    assert [(o.kind, o.name, o.namespace) for o in r.objects] == [("ConfigMap", "settings", "web")]
    assert any("LoadRestrictionsNone" in n for n in r.notices), r.notices


@needs_kustomize
def test_a_file_outside_the_folder_that_the_scan_sees_is_built_once(tmp_path, monkeypatch):
    """The scan sees the file outside the folder: kustomize runs once, with
    LoadRestrictionsNone, instead of failing first (52 of gavinmcfall/home-ops' 211
    builds ran twice); unseen (build_sandboxed told nothing), it fails first and is
    built again."""
    from advisor.read.render import kustomize as kustomize_mod
    from advisor.read.render import sandbox

    (tmp_path / "app").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "app" / "kustomization.yaml").write_text("resources:\n  - ../shared/cm.yaml\n")
    (tmp_path / "shared" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n")
    runs: list[str] = []
    real = sandbox.run_bounded

    def counting(argv, **kw):
        runs.extend(a.split("=", 1)[1] for a in argv if a.startswith("--load-restrictor="))
        return real(argv, **kw)

    monkeypatch.setattr(sandbox, "run_bounded", counting)
    r = render_kustomization(Root.of(tmp_path), "app")
    assert [o.name for o in r.objects] == ["settings"]
    assert runs == ["LoadRestrictionsNone"]
    assert any("LoadRestrictionsNone" in n for n in r.notices)
    runs.clear()
    built = kustomize_mod.build_sandboxed(Root.of(tmp_path), tmp_path / "app",
                                          [tmp_path / "app"], kustomize_mod.find_kustomize(),
                                          files=[tmp_path / "shared" / "cm.yaml"])
    assert built.text and "settings" in built.text
    assert runs == ["LoadRestrictionsRootOnly", "LoadRestrictionsNone"]


@needs_kustomize
def test_a_component_file_outside_its_folder_deep_in_components_is_built_as_flux_builds(
        tmp_path):
    """The refusal comes from a component that a component includes, and kubectl's
    message is longer than the 500 characters kept of it: "is not in or below" is
    looked for in the whole of stderr (gavinmcfall/home-ops: 49 app folders failed with
    PA901 through volsync-standard -> volsync/nfs-relaxed -> ../nfs/pvc.yaml)."""
    comps = tmp_path / "kubernetes" / "components"
    for d in ("standard", "volsync/nfs", "volsync/nfs-relaxed"):
        (comps / d).mkdir(parents=True)
    app = tmp_path / "kubernetes" / "apps" / "media" / "a-rather-long-application-name" / "app"
    app.mkdir(parents=True)
    (app / "kustomization.yaml").write_text(
        "resources:\n  - ./cm.yaml\ncomponents:\n  - ../../../../components/standard\n")
    (app / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  a: \"1\"\n")
    component = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
    (comps / "standard" / "kustomization.yaml").write_text(
        component + "components:\n  - ../volsync/nfs-relaxed\n")
    (comps / "volsync" / "nfs-relaxed" / "kustomization.yaml").write_text(
        component + "resources:\n  - ../nfs/pvc.yaml\n")
    (comps / "volsync" / "nfs" / "pvc.yaml").write_text(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: app-backup\n"
        "spec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n"
        "      storage: 1Gi\n")
    r = render_kustomization(Root.of(tmp_path), "kubernetes/apps/media/"
                             "a-rather-long-application-name/app")
    assert not r.problems, r.problems
    assert sorted((o.kind, o.name) for o in r.objects) == [
        ("ConfigMap", "app"), ("PersistentVolumeClaim", "app-backup")]
    assert any("LoadRestrictionsNone" in n for n in r.notices), r.notices


@needs_kustomize
def test_a_kustomize_error_is_the_same_text_on_every_run(tmp_path):
    """kustomize prints Go pointers in some errors (`merging from generator &{0xc00062e9c0
    <nil>}`: deploy-sourcegraph-k8s' k3s monitoring component); they differ per run, so
    the finding, the JSON and a PR comment would change with nothing changed."""
    (tmp_path / "kustomization.yaml").write_text(
        "configMapGenerator:\n- name: missing\n  behavior: merge\n  literals: [a=b]\n")
    messages = {next(p.message for p in render_kustomization(Root.of(tmp_path), ".").problems)
                for _ in range(2)}
    [message] = messages
    assert "merging from generator &{0x…" in message
    assert not re.search(r"0x[0-9a-f]{6}", message)


def _kfile(folder, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kustomization.yaml").write_text(text)


_CLUSTER = ("apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: pg\n"
            "spec:\n  instances: 1\n")


@needs_kustomize
def test_a_kustomization_of_a_helm_chart_alone_does_not_fail_its_parent(tmp_path):
    """Audit F (theepicsaxguy/homelab): storage/proxmox-csi held a helmCharts entry and
    patches of the chart's objects; without the chart kustomize said "kustomization.yaml
    is empty", then "no resource matches strategic merge patch", and the whole
    infrastructure tree, its CloudNativePG Cluster included, was not read."""
    _kfile(tmp_path / "app", "resources:\n- chartonly\n- withpatch\n- remoteonly\n- db\n")
    _kfile(tmp_path / "app" / "chartonly",
           "helmCharts:\n- name: foo\n  repo: https://example.invalid/charts\n"
           "  version: 1.0.0\n  releaseName: foo\n")
    _kfile(tmp_path / "app" / "withpatch",
           "helmCharts:\n- name: csi\n  repo: oci://example.invalid/charts\n  version: 0.5.7\n"
           "patches:\n- path: sc-patch.yaml\n")
    (tmp_path / "app" / "withpatch" / "sc-patch.yaml").write_text(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: csi\n"
        "reclaimPolicy: Retain\n")
    _kfile(tmp_path / "app" / "remoteonly",
           "resources:\n- https://example.invalid/manifest.yaml\n")
    _kfile(tmp_path / "app" / "db", "resources:\n- pg.yaml\n")
    (tmp_path / "app" / "db" / "pg.yaml").write_text(_CLUSTER)
    r = render_kustomization(Root.of(tmp_path), "app")
    assert [o.ref for o in r.objects] == ["Cluster/pg"]
    assert not [p for p in r.problems if p.fatal], r.problems
    [said] = [n for n in r.notices if "built without the patches" in n]
    assert said.startswith("kustomize: app/withpatch: ")


def test_a_long_nested_error_keeps_its_cause():
    from advisor.read.render.sandbox import clip

    levels = "".join(f"accumulating resources from 'l{i}': '/tmp/x/l{i}' must resolve to a "
                     "file': couldn't make target for path: " for i in range(8))
    text = clip(levels + "kustomization.yaml is empty")
    assert len(text) <= 500
    assert text.startswith("accumulating resources from 'l0'")
    assert text.endswith("kustomization.yaml is empty")
    assert clip("short") == "short"
