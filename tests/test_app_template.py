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
    and 5.1.0 (billimek/k8s-gitops' teslamate, a release of unknown size before) are made
    into their Deployment; a major whose library was not read (6.x) stays a release of
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
    assert budget.peak == 2 * MINIFLUX_DEFAULT and not budget.peak_is_floor
    replicas = budget.contributions[0].factors[0]
    assert "app-template 5.1.0" in replicas.source.default
    _tree(tmp_path, {"k8s/apps/miniflux/ocirepository.yaml": OCI % "6.0.0"})
    result, budget = _budget(tmp_path)
    assert budget.peak_is_floor and budget.unknown_clients == ["miniflux"]
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert "replicas = N (pods at peak)" in finding.message


# A second controller of the same application: `{kind}` and what follows its type
OTHER = """\
      cleanup:
        type: {kind}
{settings}        containers:
          app:
            image:
              repository: ghcr.io/miniflux/miniflux
              tag: 2.2.1-distroless
            env:
              DATABASE_URL: postgres://miniflux@db:5432/miniflux
"""


def test_a_cronjob_beside_a_deployment_is_made_and_counted(tmp_path):
    """bjw-s-labs/home-ops piped's shape: a Deployment next to a CronJob controller. The
    whole release was left unrendered (one client of unknown size); now each controller
    is what the chart makes: the Deployment (1 + surge 1) x 20 and the CronJob's one Job
    pod (parallelism unset) x 20, its concurrencyPolicy the chart's Forbid (no overlap
    notice), each traced."""
    cron = MINIFLUX + OTHER.format(kind="cronjob", settings="        cronjob:\n"
                                   "          schedule: \"@daily\"\n")
    _tree(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=100"),
                     "k8s/apps/miniflux/helmrelease.yaml": release(cron)})
    result, budget = _budget(tmp_path)
    totals = {c.who: c.total for c in budget.contributions}
    assert totals == {"miniflux": 2 * MINIFLUX_DEFAULT, "miniflux-cleanup": MINIFLUX_DEFAULT}
    assert not budget.peak_is_floor
    topo = scan([str(tmp_path)], CheckOptions()).topology
    kinds = {c.name: c.kind for c in topo.clients}
    assert kinds == {"miniflux": "Deployment", "miniflux-cleanup": "CronJob"}
    assert not [n for n in result.notices if "concurrencyPolicy Allow" in n]
    (note,) = [n for n in result.notices if n.startswith("app-template:")]
    assert "CronJob/default/miniflux-cleanup" in note


def test_cronjob_settings_are_the_chart_s(tmp_path):
    """cronjob.parallelism 3 is the Job's parallelism (traced to its values line);
    concurrencyPolicy Allow is said to overlap runs; cronjob.suspend true: no Job runs."""
    settings = ("        cronjob:\n          schedule: \"@daily\"\n"
                "          parallelism: 3\n          concurrencyPolicy: Allow\n")
    cron = MINIFLUX + OTHER.format(kind="cronjob", settings=settings)
    _tree(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=200"),
                     "k8s/apps/miniflux/helmrelease.yaml": release(cron)})
    result, budget = _budget(tmp_path)
    cleanup = next(c for c in budget.contributions if c.who == "miniflux-cleanup")
    pods = cleanup.factors[0]
    assert pods.value == 3 and pods.source.line == 29  # parallelism: 3
    assert [n for n in result.notices if "concurrencyPolicy Allow" in n]
    _tree(tmp_path, {"k8s/apps/miniflux/helmrelease.yaml": release(MINIFLUX + OTHER.format(
        kind="cronjob", settings=settings + "          suspend: true\n"))})
    _, budget = _budget(tmp_path)
    assert budget.peak == 2 * MINIFLUX_DEFAULT


def test_job_daemonset_and_statefulset_controllers(tmp_path):
    """A Job's pods are its job.parallelism (the chart writes it only when set); a
    DaemonSet's one per node, as any DaemonSet is counted; a StatefulSet without replicas
    gets none from the chart (classes/_statefulset.tpl), so Kubernetes' 1."""
    job = OTHER.format(kind="job", settings="        job:\n          parallelism: 2\n")
    daemon = OTHER.format(kind="daemonset", settings="").replace("cleanup:", "agent:")
    stateful = OTHER.format(kind="statefulset", settings="").replace("cleanup:", "store:")
    _tree(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=200"),
                     "k8s/apps/miniflux/helmrelease.yaml": release(job + daemon + stateful)})
    _, budget = _budget(tmp_path)
    pods = {c.who: c.factors[0] for c in budget.contributions}
    assert {who: t.value for who, t in pods.items()} == {
        "miniflux-cleanup": 2, "miniflux-agent": 1, "miniflux-store": 1}
    assert pods["miniflux-cleanup"].label == "Job parallelism"
    assert pods["miniflux-agent"].label == "DaemonSet: one pod per node"
    assert "Kubernetes default" in pods["miniflux-store"].source.default


def test_a_type_the_chart_refuses_leaves_the_release_unrendered(tmp_path):
    """The chart fails on a type it does not know (lib/controller/_validate.tpl compares
    exactly): the release stays one client of unknown size."""
    other = MINIFLUX + OTHER.format(kind="CronJob", settings="")
    _tree(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=100"),
                     "k8s/apps/miniflux/helmrelease.yaml": release(other)})
    result, budget = _budget(tmp_path)
    assert budget.peak_is_floor and budget.unknown_clients == ["miniflux"]
    assert not [n for n in result.notices if n.startswith("app-template:")]


def test_rolling_update_keys_by_version(tmp_path):
    """3.x and 4.x write rollingUpdate from `surge` only: `maxSurge: 3` is not read (the
    Kubernetes 25% of 4 pods, 1); 5.3.0 reads maxSurge (3); 5.1 was not read for it, so
    that release is left unrendered rather than guessed."""
    chart = "  chartRef:\n    kind: OCIRepository\n    name: miniflux\n"
    web = MINIFLUX.replace("        strategy: RollingUpdate\n",
                           "        strategy: RollingUpdate\n        replicas: 4\n"
                           "        rollingUpdate:\n          maxSurge: 3\n")
    files = {"k8s/db.yaml": DB.replace("=50", "=300"),
             "k8s/apps/miniflux/helmrelease.yaml": release(web, chart),
             "k8s/apps/miniflux/ocirepository.yaml": OCI % "4.1.1"}
    _tree(tmp_path, files)
    _, budget = _budget(tmp_path)
    assert budget.peak == (4 + 1) * MINIFLUX_DEFAULT
    _tree(tmp_path, {"k8s/apps/miniflux/ocirepository.yaml": OCI % "5.3.0"})
    _, budget = _budget(tmp_path)
    assert budget.peak == (4 + 3) * MINIFLUX_DEFAULT
    _tree(tmp_path, {"k8s/apps/miniflux/ocirepository.yaml": OCI % "5.1.0"})
    _, budget = _budget(tmp_path)
    assert budget.peak_is_floor and budget.unknown_clients == ["miniflux"]
    _tree(tmp_path, {"k8s/apps/miniflux/helmrelease.yaml": release(
        web.replace("maxSurge: 3", "surge: 3"), chart)})
    _, budget = _budget(tmp_path)
    assert budget.peak == (4 + 3) * MINIFLUX_DEFAULT


def test_a_5x_autoscaler_and_image_forms(tmp_path):
    """5.x: `horizontalPodAutoscaler` makes an HPA of the controller, whose maxReplicas
    (traced) is its pods at peak; the image may be one string (4.4.0+)."""
    chart = "  chartRef:\n    kind: OCIRepository\n    name: miniflux\n"
    web = MINIFLUX.replace("        strategy: RollingUpdate\n",
                           "        horizontalPodAutoscaler:\n          maxReplicas: 5\n"
                           ).replace("            image:\n              repository: "
                                     "ghcr.io/miniflux/miniflux\n              tag: "
                                     "2.2.1-distroless\n",
                                     "            image: ghcr.io/miniflux/miniflux:2.2.1\n")
    _tree(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=300"),
                     "k8s/apps/miniflux/helmrelease.yaml": release(web, chart),
                     "k8s/apps/miniflux/ocirepository.yaml": OCI % "5.1.0"})
    _, budget = _budget(tmp_path)
    (miniflux,) = budget.contributions
    pods, size = miniflux.factors
    assert (pods.value, pods.source.line) == (5, 15) and size.value == MINIFLUX_DEFAULT


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
