"""Flux postBuild variable substitution (advisor.read.flux_substitute): the syntax as
Flux's envsubst reads it, the variables of each Kustomization (substitute over
substituteFrom, a parent's values and patches), and a check of
tests/realworld/flux-substitute, whose app folders name their objects `${APP}`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.model import Source
from advisor.read.flux_substitute import (
    Sources,
    Variable,
    Variables,
    expand,
    substituted,
    variables_of,
)
from advisor.read.sources.k8s import k8s_objects

FIXTURE = Path(__file__).resolve().parent / "realworld" / "flux-substitute"
SRC = Source(path="ks.yaml", line=9)
needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="kubectl (kustomize) not installed")


def known(**values: str) -> Variables:
    return Variables("Kustomization/flux-system/app (ks.yaml:2)",
                     {k: Variable(v, SRC) for k, v in values.items()}, [])


def unread(**values: str) -> Variables:
    found = known(**values)
    found.unread = ["Secret cluster-secrets (secrets.sops.yaml:2: encrypted)"]
    return found


@pytest.mark.parametrize(("text", "out"), [
    ("${APP}-rw.database.svc", "radarr-rw.database.svc"),
    ("postgres://${APP}@${HOST}:5432/${APP}", "postgres://radarr@pg:5432/radarr"),
    ("${MISSING}", ""),  # a name with no value is the empty string
    ("${MISSING:=fallback}", "fallback"),
    ("${MISSING:-fallback}", "fallback"),
    ("${MISSING=fallback}", "fallback"),
    ("${EMPTY:=fallback}", "fallback"),  # an empty value takes the default too
    ("${MISSING:=${APP}-db}", "radarr-db"),  # a placeholder inside a default
    ("${APP-x}", ""),  # the dash belongs to the name: variable "APP-x"
    ("$${APP}", "${APP}"),  # $$ is one dollar
    ("$APP", "$APP"),  # no braces: text
    ("a\\/b\\\\c", "a/b\\c"),  # drone/envsubst's escapes
    ("${APP:0:3}", "${APP:0:3}"),  # substring: not evaluated, left as written
    ("${APP^^}", "${APP^^}"),
    ("${unclosed", "${unclosed"),
])
def test_expand_as_flux_envsubst(text, out):
    assert expand(text, known(APP="radarr", HOST="pg", EMPTY="")).text == out


def test_a_variable_a_source_not_read_may_hold_is_left_as_written():
    got = expand("${DB_HOST}:${APP}", unread(APP="radarr"))
    assert got.text == "${DB_HOST}:radarr"
    assert got.unknown == ["${DB_HOST}"]


def test_a_default_is_taken_and_said_when_a_source_was_not_read():
    got = expand("${MAX:=120}", unread())
    assert got.text == "120" and got.defaulted == ["MAX"] and not got.unknown


def _objects(text: str):
    objects, problems = k8s_objects(text, "app.yaml")
    assert not problems
    return objects


KS = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: app
  namespace: flux-system
spec:
  path: ./apps/app
  postBuild:
    substitute:
      APP: from-substitute
    substituteFrom:
      - kind: ConfigMap
        name: settings
      - kind: Secret
        name: plain
      - kind: ConfigMap
        name: absent
        optional: true
"""
SOURCES = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: flux-system
data:
  APP: from-configmap
  ZONE: "eu-1"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: elsewhere
data:
  ZONE: wrong-namespace
---
apiVersion: v1
kind: Secret
metadata:
  name: plain
  namespace: flux-system
data:
  TOKEN: c2VjcmV0Cg==
"""


def test_substitute_wins_over_substitute_from_and_sources_are_read_in_namespace():
    (ks,) = _objects(KS)
    found = variables_of(ks, ks.body, Sources(_objects(SOURCES)))
    assert found is not None
    assert {k: v.value for k, v in found.values.items()} == {
        "APP": "from-substitute", "ZONE": "eu-1", "TOKEN": "secret"}  # newline removed
    assert found.unread == []  # an optional source that is absent is skipped
    assert found.values["APP"].source.line == 10  # spec.postBuild.substitute.APP
    assert found.values["ZONE"].source.line == 8


def test_an_encrypted_secret_is_not_read_and_said():
    encrypted = SOURCES.replace("data:\n  TOKEN: c2VjcmV0Cg==\n",
                                "stringData:\n  TOKEN: ENC[AES256_GCM,data:xx]\nsops:\n"
                                "  version: 3.9.1\n")
    (ks,) = _objects(KS)
    found = variables_of(ks, ks.body, Sources(_objects(encrypted)))
    assert found is not None and "TOKEN" not in found.values
    assert found.unread == ["Secret plain (app.yaml:18: encrypted)"]


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${APP}
spec:
  replicas: ${REPLICAS}
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/example/${APP}:1.0
          env:
            - name: PORT
              value: ${PORT}
"""


def test_an_object_is_substituted_with_its_positions_and_sources():
    (obj,) = _objects(DEPLOYMENT)
    new, outcome = substituted(obj, known(APP="radarr", REPLICAS="3", PORT="8080"))
    assert new.name == "radarr"
    # a whole `${N}` that gives an integer is one (Flux's YAML round trip); an env
    # value stays a string, as Kubernetes types it
    assert new.body["spec"]["replicas"] == 3
    env = new.body["spec"]["template"]["spec"]["containers"][0]["env"][0]
    assert env["value"] == "8080"
    assert new.body["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "ghcr.io/example/radarr:1.0"
    # the count is traced to where the variable was set; lines stay the file's
    assert new.source("spec", "replicas") == SRC
    assert new.location("spec", "template", "spec", "containers", 0, "image").line == 11
    assert not outcome.unknown and not outcome.defaulted
    assert obj.body["metadata"]["name"] == "${APP}"  # the object read is not changed


def test_a_whole_default_that_is_an_integer_is_one():
    """`maxReplicaCount: ${MAX_REPLICAS:=1}` with no MAX_REPLICAS is the count 1, not the
    string "1" (mirceanton/home-ops: 13 ScaledObjects were PA901 'found the string')."""
    (obj,) = _objects("apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata:\n"
                      "  name: a\nspec:\n  maxReplicaCount: ${MAX_REPLICAS:=1}\n")
    new, _outcome = substituted(obj, known(APP="a"))
    assert new.body["spec"]["maxReplicaCount"] == 1
    assert new.location("spec", "maxReplicaCount").line == 6  # the default's own line


def test_an_object_marked_disabled_is_left_alone():
    text = DEPLOYMENT.replace("  name: ${APP}\n", "  name: ${APP}\n  annotations:\n"
                              "    kustomize.toolkit.fluxcd.io/substitute: disabled\n")
    (obj,) = _objects(text)
    new, _outcome = substituted(obj, known(APP="radarr", REPLICAS="3", PORT="1"))
    assert new is obj


def check_json(path: Path) -> dict:
    from advisor.cli import app

    result = CliRunner().invoke(app, ["check", str(path), "--format", "json", "--no-cache",
                                      "--root", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output[result.output.index("{"):])


@needs_kustomize
def test_the_fixture_budget_reads_the_apps_as_flux_applies_them():
    report = check_json(FIXTURE)
    b = next(b for b in report["budgets"] if b["server"] == "pg-shop")
    # ${CLUSTER} <- substitute CLUSTER: ${DB_SERVER} <- ConfigMap cluster-settings
    assert b["server"] == "pg-shop"
    # max_connections "${PG_MAX_CONNECTIONS:=120}": the default (the encrypted Secret
    # could set it, and a notice says so) - 3 superuser_reserved_connections
    assert b["usable"] == 117
    contributions = {c["who"]: c for c in b["terms"]["contributions"]}
    # orders (3 replicas + 1 surge) x 10 declared; billing (2 + 1) x 5
    assert {w: c["total"] for w, c in contributions.items()} == {"orders": 40, "billing": 15}
    assert b["peak"] == 55 and b["fits"] is True and not b["peak_is_floor"]
    # the replicas trace to the Kustomization's REPLICAS line
    replicas = contributions["orders"]["factors"][0]
    assert replicas["label"] == "Deployment replicas" and replicas["value"] == 3
    assert replicas["source"] == {"path": "kubernetes/apps/shop/orders/ks.yaml", "line": 18,
                                  "key": "spec.postBuild.substitute.REPLICAS",
                                  "default": None}
    # the two app folders rendered the same `Deployment/shop/${APP}` before: no longer
    # taken for alternative environments
    assert "[" not in b["server"]
    codes = [f["code"] for f in report["findings"]]
    assert "PA901" not in codes and "PA109" not in codes and "PA107" not in codes
    notices = [n for n in report["notices"] if n.startswith("Flux postBuild")]
    assert len(notices) == 2
    assert "${REPORTS_DB_HOST} not known in what Kustomization/flux-system/reports" in \
        notices[0]
    assert "cluster-secrets.sops.yaml:2: encrypted" in notices[0]
    assert notices[1].startswith("Flux postBuild: the default of ${PG_MAX_CONNECTIONS} "
                                 "assumed in what Kustomization/flux-system/pg-shop")


@needs_kustomize
def test_a_flux_kustomizations_components_are_built_into_its_folder():
    """invoices' Flux Kustomization adds components/app-database (a Cluster
    `${APP}-db`), which its folder's kustomization.yaml does not name: the server
    exists only so (joryirving/home-ops: 14 per-app Clusters, 'no PostgreSQL server
    found')."""
    report = check_json(FIXTURE)
    b = next(b for b in report["budgets"] if b["server"] == "invoices-db")
    # max_connections: PostgreSQL 17's default 100 - 3 reserved
    assert b["usable"] == 97
    # invoices: (1 replica + 1 surge) x 4 declared, reaching ${APP}-db-rw in its namespace
    assert [(c["who"], c["total"]) for c in b["terms"]["contributions"]] == [("invoices", 8)]
    notices = report["notices"]
    assert any(n.startswith("Flux: kubernetes/apps/shop/invoices/app built with the "
                            "components of Kustomization/flux-system/invoices") for n in notices)
    # the component folder is used, through Flux: not said unused
    assert not [n for n in notices if "no built kustomization uses" in n]


SOPS_TREE = {
    "db.yaml": """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pg, namespace: data}
spec:
  replicas: 1
  serviceName: pg
  selector: {matchLabels: {app: pg}}
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.4
---
apiVersion: v1
kind: Service
metadata: {name: pg, namespace: data}
spec:
  selector: {app: pg}
  ports: [{port: 5432}]
""",
    "web.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: ghcr.io/example/web:1.0
          envFrom:
            - secretRef: {name: web-db}
""",
    "web-db.sops.yaml": """\
apiVersion: v1
kind: Secret
metadata: {name: web-db, namespace: shop}
stringData:
  DATABASE_URL: ENC[AES256_GCM,data:bm90IGEgcmVhbCBzZWNyZXQ=,iv:aa,tag:bb,type:str]
sops:
  version: 3.9.1
""",
}


def _sops_tree(root: Path) -> Path:
    for name, text in SOPS_TREE.items():
        (root / name).write_text(text)
    return root


def test_a_sops_encrypted_connection_makes_every_budget_a_floor(tmp_path):
    """web's DATABASE_URL is encrypted with SOPS (Flux decrypts it when it applies):
    where it connects is not known here, so it may be any server's client. Said in a
    notice, and pg's peak is a floor, never 'fits' (Diaoul/home-ops printed 'peak 0
    fits' for a server four encrypted apps connect to)."""
    report = check_json(_sops_tree(tmp_path))
    (b,) = [b for b in report["budgets"] if b["server"] == "pg"]
    assert b["unplaced_clients"] == ["web"]
    assert b["peak"] == 0 and b["peak_is_floor"] is True and b["fits"] is False
    (note,) = [n for n in report["notices"] if n.startswith("Deployment/shop/web: ")]
    assert note.startswith("Deployment/shop/web: DATABASE_URL (secret:web-db/DATABASE_URL, "
                           "web-db.sops.yaml:5) is unknown here: encrypted with SOPS in "
                           "web-db.sops.yaml:1")


def test_a_readable_secret_is_not_unplaced(tmp_path):
    (_sops_tree(tmp_path) / "web-db.sops.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: web-db, namespace: shop}\n"
        "stringData:\n  DATABASE_URL: postgres://web@pg.data.svc:5432/web\n")
    report = check_json(tmp_path)
    (b,) = [b for b in report["budgets"] if b["server"] == "pg"]
    assert b["unplaced_clients"] == [] and [c["who"] for c in
                                           b["terms"]["contributions"]] == ["web"]


@needs_kustomize
def test_a_manifest_no_kustomization_lists_in_a_flux_built_folder_is_not_read():
    """Flux applies what kustomize builds from a Flux Kustomization's path and nothing
    beside it: migration/cluster-old.yaml is no server (damacus/home-ops: six retired
    `migration/` Clusters were servers beside the deployed ones)."""
    report = check_json(FIXTURE)
    assert "pg-shop-old" not in {b["server"] for b in report["budgets"]}
    (notice,) = [n for n in report["notices"] if "Flux does not apply them" in n]
    assert notice.endswith("not read: kubernetes/apps/database/pg-shop/migration/"
                           "cluster-old.yaml")
    assert not [n for n in report["notices"] if "cluster-old.yaml is in" in n]


def test_a_workload_declared_with_its_target_is_placed(tmp_path):
    """The notice asks for `[[workloads]] target and connections`: once declared, web
    is pg's client and no budget is a floor for it."""
    (_sops_tree(tmp_path) / ".pool-advisor.toml").write_text(
        '[[workloads]]\nname = "web"\ntarget = "pg"\nconnections = 5\n')
    report = check_json(tmp_path)
    (b,) = [b for b in report["budgets"] if b["server"] == "pg"]
    assert b["unplaced_clients"] == [] and b["peak_is_floor"] is False
    # web: (2 replicas + 1 surge) x 5 declared
    assert [(c["who"], c["total"]) for c in b["terms"]["contributions"]] == [("web", 15)]


PARENT = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cluster-apps
  namespace: flux-system
spec:
  path: ./apps
  patches:
    - patch: |-
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: not-used
        spec:
          postBuild:
            substitute:
              ZONE: from-the-patch
      target:
        group: kustomize.toolkit.fluxcd.io
        kind: Kustomization
        labelSelector: substitution.flux/disabled notin (true)
    - patch: |-
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: not-used
        spec:
          targetNamespace: billing-ns
      target:
        kind: Kustomization
        name: bill.*
"""
CHILDREN = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: billing
  namespace: flux-system
spec:
  path: ./apps/billing/app
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: rebilling
  namespace: flux-system
  labels:
    substitution.flux/disabled: "true"
spec:
  path: ./apps/rebilling/app
"""


def test_a_parents_patches_reach_the_children_their_target_selects():
    """bjw-s/home-ops gives every app Kustomization its substituteFrom through a patch
    with `labelSelector: ... notin (true)`; it was not applied (only patches without a
    selector were). kustomize selects names as whole regular expressions."""
    from advisor.read.flux_substitute import plan

    parent = k8s_objects(PARENT, "apps.yaml")[0][0]
    billing, rebilling = k8s_objects(CHILDREN, "apps/ks.yaml")[0]
    folders = {"./apps": "apps", "./apps/billing/app": "apps/billing/app",
               "./apps/rebilling/app": "apps/rebilling/app"}
    done = plan([(".", parent), ("apps", billing), ("apps", rebilling)], Sources([]),
                folders.get)
    got = {obj.name: done.kustomizations[id(obj)].body["spec"] for obj in (billing, rebilling)}
    assert got["billing"]["postBuild"]["substitute"] == {"ZONE": "from-the-patch"}
    assert got["billing"]["targetNamespace"] == "billing-ns"
    assert "postBuild" not in got["rebilling"]  # labelled out
    assert "targetNamespace" not in got["rebilling"]  # "bill.*" is anchored: ^(?:bill.*)$
    assert done.folders["apps/billing/app"].values["ZONE"].value == "from-the-patch"
    assert "apps/rebilling/app" not in done.folders


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("a=b", {"a": "b"}, True), ("a==b", {"a": "c"}, False), ("a!=b", {}, True),
    ("a", {"a": ""}, True), ("!a", {"a": "x"}, False), ("!a", {}, True),
    ("a in (x, y)", {"a": "y"}, True), ("a in (x)", {}, False),
    ("a notin (x)", {}, True), ("a notin (x, y)", {"a": "x"}, False),
    ("a=b, c in (d), !e", {"a": "b", "c": "d"}, True),
    ("a=b,!c", {"a": "b", "c": "1"}, False),
    ("a >> b", {}, None),  # not a selector: nothing selected
])
def test_label_selectors_as_kubernetes_reads_them(selector, labels, expected):
    from advisor.read.flux_substitute import _selector_matches

    assert _selector_matches(selector, labels) is expected


GENERATED_TREE = {
    "kubernetes/flux/apps.yaml": """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: shop, namespace: flux-system}
spec:
  path: ./kubernetes/apps/shop
  sourceRef: {kind: GitRepository, name: flux-system}
""",
    "kubernetes/apps/shop/kustomization.yaml": """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: shop
resources:
  - ./db.yaml
  - ./ks.yaml
""",
    "kubernetes/apps/shop/ks.yaml": """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: shop-app, namespace: shop}
spec:
  path: ./kubernetes/apps/shop/app
  targetNamespace: shop
  sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
""",
    "kubernetes/apps/shop/db.yaml": SOPS_TREE["db.yaml"].replace("namespace: data",
                                                                 "namespace: shop"),
    # no kustomization.yaml here: Flux generates one from every manifest in the folder
    "kubernetes/apps/shop/app/web.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  strategy: {type: Recreate}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: ghcr.io/example/web:1.0
          env:
            - {name: DATABASE_URL, value: "postgres://web@pg:5432/web"}
            - {name: DB_POOL_SIZE, value: "5"}
""",
}


@needs_kustomize
def test_a_flux_path_without_a_kustomization_is_built_from_its_manifests(tmp_path):
    """A Flux Kustomization whose path has no kustomization.yaml applies every manifest
    in it (kustomize-controller generates one): web is pg's client, not a manifest its
    parent's kustomization leaves out (gabe565/home-ops: 11 servers printed 'fits,
    peak 0', 6 Clusters were missing)."""
    for rel, text in GENERATED_TREE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    report = check_json(tmp_path)
    (b,) = [b for b in report["budgets"] if b["server"] == "pg"]
    assert [c["who"] for c in b["terms"]["contributions"]] == ["web"], report["notices"]
    assert not [n for n in report["notices"] if "Flux does not apply them" in n]
