"""advisor.read.render.app_template: Flux HelmReleases of the bjw-s app-template chart
(3.x, 4.x), whose chart is a Helm or OCI repository's, made into the Deployments and
StatefulSets the chart makes from `controllers` in the values, each number traced to its
values line or to the chart's default. The trees are in the shape of home-ops
repositories: an app folder with its HelmRelease (and OCIRepository) beside a server."""

from __future__ import annotations

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write

# Miniflux's DATABASE_MAX_CONNS default (internal/config/options.go)
MINIFLUX_DEFAULT = 20


def release(controllers: str, chart: str = "", name: str = "miniflux") -> str:
    chart = chart or ("  chart:\n    spec:\n      chart: app-template\n      version: 3.5.1\n"
                      "      sourceRef: {kind: HelmRepository, name: bjw-s, "
                      "namespace: flux-system}\n")
    return f"""---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: {name}
spec:
  interval: 30m
{chart}  values:
    controllers:
{controllers}"""


# flux/repositories: where the chart comes from, as home-ops repositories name it
BJW_S = """---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: bjw-s
  namespace: flux-system
spec:
  type: oci
  interval: 30m
  url: oci://ghcr.io/bjw-s/helm
"""

MINIFLUX = """\
      miniflux:
        strategy: RollingUpdate
        containers:
          app:
            image:
              repository: ghcr.io/miniflux/miniflux
              tag: 2.2.1-distroless
            env:
              BASE_URL: https://miniflux.example.org
              DATABASE_URL: postgres://{{ .Release.Name }}@db:5432/miniflux
"""


def _budget(tmp_path):
    result = run_check([str(tmp_path)], CheckOptions())
    return result, {b.server: b for b in result.budgets}["db"]


def _tree(tmp_path, files: dict[str, str]) -> None:
    write(tmp_path, {"k8s/flux/repositories/bjw-s.yaml": BJW_S, **files})


def test_a_release_is_made_into_its_deployment(tmp_path):
    """One controller, no replicas key, strategy RollingUpdate: 1 pod (the chart's
    `replicas: 1`) + a 25% surge, x Miniflux's 20 = 40; it was a release of unknown pods
    and connections (audit l: bjw-s/home-ops)."""
    _tree(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=100"),
                     "k8s/apps/miniflux/helmrelease.yaml": release(MINIFLUX)})
    result, budget = _budget(tmp_path)
    assert budget.peak == (1 + 1) * MINIFLUX_DEFAULT and not budget.peak_is_floor
    (miniflux,) = budget.contributions
    replicas, surge, size = miniflux.factors
    assert replicas.value == 1 and "app-template 3.5.1" in replicas.source.default
    assert surge.value == 1
    assert size.value == MINIFLUX_DEFAULT
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (client,) = [c for c in topo.clients if c.name == "miniflux"]
    assert client.kind == "Deployment"
    # the URL, tpl'd with the release name, traced to its values line
    assert (client.route.user, client.route.source.path, client.route.source.line) == (
        "miniflux", "k8s/apps/miniflux/helmrelease.yaml", 24)
    assert not [f for f in result.findings if f.code == "PA106"]
    (note,) = [n for n in result.notices if n.startswith("app-template:")]
    assert "HelmRelease/miniflux (3.5.1: Deployment/default/miniflux)" in note
    assert not [n for n in result.notices if "chart releases not rendered" in n]


def test_replicas_recreate_and_two_controllers(tmp_path):
    """replicas 3 and no strategy (the chart's Recreate: no surge) = 3 x 20; a second
    controller is named <release>-<id> and counted on its own."""
    worker = MINIFLUX.replace("      miniflux:\n        strategy: RollingUpdate\n",
                              "      worker:\n        replicas: 2\n")
    web = MINIFLUX.replace("        strategy: RollingUpdate\n", "        replicas: 3\n")
    _tree(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=200"),
                     "k8s/apps/miniflux/helmrelease.yaml": release(web + worker)})
    _, budget = _budget(tmp_path)
    totals = {c.who: c.total for c in budget.contributions}
    assert totals == {"miniflux": 3 * MINIFLUX_DEFAULT, "miniflux-worker": 2 * MINIFLUX_DEFAULT}
    replicas = next(c for c in budget.contributions if c.who == "miniflux").factors[0]
    assert (replicas.source.path, replicas.source.line) == (
        "k8s/apps/miniflux/helmrelease.yaml", 16)


OCI = """---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: miniflux
spec:
  interval: 5m
  layerSelector:
    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip
    operation: copy
  ref:
    tag: %s
  url: oci://ghcr.io/bjw-s-labs/helm/app-template
"""


def test_an_oci_chart_ref_of_a_version_read_and_one_not(tmp_path):
    """chartRef to an OCIRepository of app-template (joryirving/home-ops' shape): 4.1.1
    is made into its Deployment; 5.x, whose library was not read, stays a release of
    unknown pods and connections (PA106), never a guess."""
    chart = "  chartRef:\n    kind: OCIRepository\n    name: miniflux\n"
    files = {"k8s/db.yaml": DB.replace("=50", "=100"),
             "k8s/apps/miniflux/helmrelease.yaml": release(MINIFLUX, chart),
             "k8s/apps/miniflux/ocirepository.yaml": OCI % "4.1.1"}
    _tree(tmp_path, files)
    _, budget = _budget(tmp_path)
    assert budget.peak == 2 * MINIFLUX_DEFAULT
    _tree(tmp_path, {"k8s/apps/miniflux/ocirepository.yaml": OCI % "5.1.0"})
    result, budget = _budget(tmp_path)
    assert budget.peak_is_floor and budget.unknown_clients == ["miniflux"]
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert "replicas = N (pods at peak)" in finding.message


def test_a_controller_type_not_made_leaves_the_release_unrendered(tmp_path):
    cron = MINIFLUX + "      cleanup:\n        type: cronjob\n" + \
        "\n".join(MINIFLUX.splitlines()[2:]) + "\n"
    _tree(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=100"),
                     "k8s/apps/miniflux/helmrelease.yaml": release(cron)})
    result, budget = _budget(tmp_path)
    assert budget.peak_is_floor and budget.unknown_clients == ["miniflux"]
    assert not [n for n in result.notices if n.startswith("app-template:")]


def test_env_from_a_secret_named_by_the_release(tmp_path):
    """A map-form env entry with valueFrom (and app-template's shorthand, secretKeyRef at
    the top) and envFrom `secret: name`, each tpl'd: read from the repository's Secret."""
    secret = """---
apiVersion: v1
kind: Secret
metadata: {name: miniflux-db}
stringData:
  url: postgres://miniflux@db:5432/miniflux
  max: "7"
---
apiVersion: v1
kind: Secret
metadata: {name: miniflux-extra}
stringData:
  LOG_LEVEL: info
"""
    controllers = MINIFLUX.replace(
        "              DATABASE_URL: postgres://{{ .Release.Name }}@db:5432/miniflux\n",
        "              DATABASE_URL:\n                valueFrom:\n                  secretKeyRef:"
        "\n                    name: \"{{ .Release.Name }}-db\"\n                    key: url\n"
        "              DATABASE_MAX_CONNS:\n                secretKeyRef:\n"
        "                  name: miniflux-db\n                  key: max\n"
        "            envFrom:\n              - secret: \"{{ .Release.Name }}-extra\"\n")
    _tree(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=100"), "k8s/secret.yaml": secret,
                     "k8s/apps/miniflux/helmrelease.yaml": release(controllers)})
    _, budget = _budget(tmp_path)
    assert budget.peak == 2 * 7 and not budget.peak_is_floor


def test_a_chart_named_app_template_from_another_repository_is_not_made(tmp_path):
    """The chart is known to be bjw-s's by where it comes from: the same release from a
    Helm repository of someone else stays a release of unknown size."""
    _tree(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=100"),
                     "k8s/flux/repositories/bjw-s.yaml": BJW_S.replace(
                         "oci://ghcr.io/bjw-s/helm", "https://charts.example.org"),
                     "k8s/apps/miniflux/helmrelease.yaml": release(MINIFLUX)})
    result, budget = _budget(tmp_path)
    assert budget.peak_is_floor and budget.unknown_clients == ["miniflux"]
    assert not [n for n in result.notices if n.startswith("app-template:")]
