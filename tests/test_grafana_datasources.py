"""advisor.link.grafana_datasources: Grafana's PostgreSQL data sources are clients of the
server each names: the Grafana pods x one pool per data source (jsonData.maxOpenConns,
else [sql_datasources] max_open_conns_default, 100 from Grafana 9.5.1, no limit before).
Declared by grafana-operator GrafanaDatasources, provisioning files mounted into Grafana
or copied there by its k8s-sidecar, and a grafana chart release's `datasources:` value.
The trees are in the shape of the repositories they were found in (billimek/k8s-gitops:
a GrafanaDatasource teslamate on postgres-ro left the replica server "peak 0, fits")."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.link.grafana_datasources import (
    DefaultSetting,
    Found,
    GrafanaRelease,
    _expand_with,
    image_release,
    read_datasource,
)
from advisor.model import Source
from tests.deploy_helpers import line_no
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write

# usable on the db of tests.tree_helpers: max_connections 50 - 3 superuser_reserved
USABLE = 47

GRAFANA_CR = """
apiVersion: grafana.integreatly.org/v1beta1
kind: Grafana
metadata:
  name: grafana
  namespace: {ns}
  labels: {{dashboards: grafana}}
spec:
  version: "{version}"
  deployment:
    spec:
      replicas: 2
      strategy: {{type: Recreate}}
"""

DATASOURCE_CR = """
apiVersion: grafana.integreatly.org/v1beta1
kind: GrafanaDatasource
metadata:
  name: teslamate
  namespace: {ns}
spec:
  instanceSelector:
    matchLabels: {{dashboards: {selects}}}
{extra}  datasource:
    name: TeslaMate
    type: {kind}
    access: proxy
    url: db.default.svc.cluster.local:5432
    database: teslamate
    user: teslamate
    jsonData:
      sslmode: require
{json}"""


def operator_tree(tmp_path, *, version: str = "11.3.0", kind: str = "postgres",
                  json: str = "", selects: str = "grafana", ns: str = "monitoring",
                  grafana_ns: str = "monitoring", extra: str = "") -> None:
    write(tmp_path, {
        "db/db.yaml": DB,
        "monitoring/grafana.yaml": GRAFANA_CR.format(ns=grafana_ns, version=version),
        "monitoring/datasource.yaml": DATASOURCE_CR.format(
            ns=ns, kind=kind, json=json, selects=selects, extra=extra)})


def budget_of(result, server: str = "db"):
    return next(b for b in result.budgets if b.server == server)


@pytest.mark.parametrize("kind", ["postgres", "grafana-postgresql-datasource"])
def test_an_operator_data_source_is_the_grafana_pods_times_the_default_pool(tmp_path, kind):
    """2 replicas (spec.deployment.spec.replicas, Recreate: no surge) x 100, the
    max_open_conns_default of Grafana 11.3.0: 200 > 47, where db printed 'peak 0'."""
    operator_tree(tmp_path, kind=kind)
    result = run_check([str(tmp_path)], CheckOptions())
    budget = budget_of(result)
    (c,) = budget.contributions
    assert c.who == "grafana" and c.total == 200 and not c.unknown
    assert [f.value for f in c.factors] == [2, 100]
    assert c.factors[0].source.path == "monitoring/grafana.yaml"
    assert "max_open_conns_default 100" in (c.factors[1].source.default or "")
    assert not budget.fits and not budget.peak_is_floor
    assert any(f.code == "PA104" for f in result.findings)


def test_the_data_source_s_max_open_conns_is_its_pool(tmp_path):
    operator_tree(tmp_path, json="      maxOpenConns: 10\n")
    result = run_check([str(tmp_path)], CheckOptions())
    budget = budget_of(result)
    assert budget.peak == 20 and budget.fits
    (c,) = budget.contributions
    assert c.factors[1].source.path == "monitoring/datasource.yaml"
    assert c.factors[1].source.line == line_no(tmp_path / "monitoring/datasource.yaml",
                                               "maxOpenConns: 10")


def test_grafana_before_9_5_1_opens_a_pool_with_no_limit(tmp_path):
    """9.4.7 starts jsonData from MaxOpenConns 0: database/sql without a limit (PA102);
    9.5.1 has the 100 of [sql_datasources]."""
    operator_tree(tmp_path, version="9.4.7")
    result = run_check([str(tmp_path)], CheckOptions())
    assert budget_of(result).unbounded_clients == ["grafana"]
    assert any(f.code == "PA102" for f in result.findings)
    operator_tree(tmp_path, version="9.5.1")
    result = run_check([str(tmp_path)], CheckOptions())
    assert budget_of(result).peak == 200 and not budget_of(result).unbounded_clients


@pytest.mark.parametrize(("version", "unbounded"), [("11.6.0", True), ("12.4.0", False)])
def test_max_open_conns_zero_is_no_limit_until_pgx_then_unknown(tmp_path, version, unbounded):
    operator_tree(tmp_path, version=version, json="      maxOpenConns: 0\n")
    result = run_check([str(tmp_path)], CheckOptions())
    budget = budget_of(result)
    if unbounded:
        assert budget.unbounded_clients == ["grafana"] and not budget.unknown_clients
    else:
        assert budget.unknown_clients == ["grafana"] and not budget.unbounded_clients
        (finding,) = [f for f in result.findings if f.code == "PA106"]
        assert "12.4.0" in finding.message


def test_a_data_source_no_grafana_here_selects_counts_with_pods_unknown(tmp_path):
    """Selected Grafana absent (another label), or in another namespace without
    allowCrossNamespaceImport: one pod of 100, the peak a floor (PA106), never 0."""
    for kwargs in ({"selects": "other"}, {"grafana_ns": "grafana"}):
        operator_tree(tmp_path, **kwargs)
        result = run_check([str(tmp_path)], CheckOptions())
        budget = budget_of(result)
        assert budget.unknown_clients == ["teslamate"] and budget.peak_is_floor
        (c,) = budget.contributions
        assert c.total == 100 and c.unknown
        (finding,) = [f for f in result.findings if f.code == "PA106"]
        assert "no Grafana CR of the repository matches" in finding.message


def test_allow_cross_namespace_import_reaches_a_grafana_of_another_namespace(tmp_path):
    operator_tree(tmp_path, grafana_ns="grafana", extra="  allowCrossNamespaceImport: true\n")
    result = run_check([str(tmp_path)], CheckOptions())
    assert budget_of(result).peak == 200 and not budget_of(result).unknown_clients


GRAFANA_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: grafana, namespace: default}}
spec:
  replicas: 3
  strategy: {{type: Recreate}}
  template:
    metadata: {{labels: {{app: grafana}}}}
    spec:
      containers:
        - name: grafana
          image: docker.io/grafana/grafana:{tag}
          env:
            - {{name: DB_HOST, value: db}}
          volumeMounts:
            - {{name: datasources, mountPath: {path}}}
      volumes:
        - name: datasources
          configMap: {{name: grafana-datasources}}
"""

DATASOURCES_CM = """
apiVersion: v1
kind: ConfigMap
metadata: {{name: grafana-datasources, namespace: default}}
data:
  datasources.yaml: |
    apiVersion: 1
    datasources:
      - name: Prometheus
        type: prometheus
        url: http://prometheus:9090
      - name: App
        type: grafana-postgresql-datasource
        url: {url}
        jsonData:
          database: app
{json}"""


@pytest.mark.parametrize(("path", "counted"), [
    ("/etc/grafana/provisioning/datasources", True), ("/etc/grafana/dashboards", False)])
def test_a_provisioning_file_mounted_into_grafana_is_read(tmp_path, path, counted):
    """3 pods x maxOpenConns 5 of the data source in the ConfigMap mounted at Grafana's
    data sources folder (its url `${DB_HOST}:5432` from the container's env); the
    Prometheus one is no PostgreSQL client, and the same file mounted anywhere else is
    not read by Grafana."""
    write(tmp_path, {"db.yaml": DB,
                     "grafana.yaml": GRAFANA_DEPLOYMENT.format(tag="11.2.0", path=path),
                     "cm.yaml": DATASOURCES_CM.format(
                         url="${DB_HOST}:5432", json="          maxOpenConns: 5\n")})
    result = run_check([str(tmp_path)], CheckOptions())
    budget = budget_of(result)
    if not counted:  # linked by its DB_HOST alone (hosts.host_variable_route): unknown
        assert all(c.unknown and not c.factors[1:] for c in budget.contributions)
        assert not any("Grafana data source" in f.label for c in budget.contributions
                       for f in c.factors)
        return
    (c,) = budget.contributions
    assert c.who == "grafana" and c.total == 15 and budget.fits
    assert c.factors[-1].source.path == "cm.yaml"
    assert c.factors[-1].source.line == line_no(tmp_path / "cm.yaml", "maxOpenConns: 5")


def test_a_host_from_a_secret_not_held_here_places_the_client_nowhere(tmp_path):
    """`${DB_HOST}` of a Secret the repository does not hold: where the data source
    connects is unknown, every server's peak a floor, with a notice."""
    grafana = GRAFANA_DEPLOYMENT.format(tag="11.2.0", path="/etc/grafana/provisioning/"
                                        "datasources").replace(
        "- {name: DB_HOST, value: db}",
        "- {name: DB_HOST, valueFrom: {secretKeyRef: {name: gone, key: host}}}")
    write(tmp_path, {"db.yaml": DB, "grafana.yaml": grafana,
                     "cm.yaml": DATASOURCES_CM.format(url="${DB_HOST}:5432", json="")})
    result = run_check([str(tmp_path)], CheckOptions())
    budget = budget_of(result)
    assert budget.peak_is_floor and "grafana" in budget.unplaced_clients
    assert any("Grafana data source 'App'" in n and "not held here" in n
               for n in result.notices)


SIDECAR_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: grafana, namespace: monitoring}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: grafana}}
    spec:
      containers:
        - name: grafana-sc-datasources
          image: quay.io/kiwigrid/k8s-sidecar:1.30.0
          env:
            - {name: LABEL, value: grafana_datasource}
            - {name: LABEL_VALUE, value: "1"}
            - {name: FOLDER, value: /etc/grafana/provisioning/datasources}
            - {name: RESOURCE, value: both}
            - {name: NAMESPACE, value: ALL}
          volumeMounts:
            - {name: sc-datasources-volume, mountPath: /etc/grafana/provisioning/datasources}
        - name: grafana
          image: docker.io/grafana/grafana:12.3.1
          volumeMounts:
            - {name: sc-datasources-volume, mountPath: /etc/grafana/provisioning/datasources}
      volumes:
        - {name: sc-datasources-volume, emptyDir: {}}
"""

LABELLED = """
apiVersion: v1
kind: Secret
metadata:
  name: {name}
  namespace: apps
  labels: {{grafana_datasource: "{value}"}}
stringData:
  {name}.yaml: |
    apiVersion: 1
    datasources:
      - name: {name}
        type: postgres
        url: db.default.svc:5432
        user: reader
"""


def test_a_sidecar_copies_labelled_files_into_grafana_and_others_have_pods_unknown(tmp_path):
    """The chart's sidecar (LABEL grafana_datasource, LABEL_VALUE 1, NAMESPACE ALL,
    RESOURCE both) puts `reports` into Grafana's folder: 2 pods x 100. `audit`, labelled
    0, is read by no Grafana pod here: a client of one pod, its peak a floor."""
    write(tmp_path, {"db.yaml": DB, "grafana.yaml": SIDECAR_DEPLOYMENT,
                     "reports.yaml": LABELLED.format(name="reports", value="1"),
                     "audit.yaml": LABELLED.format(name="audit", value="0")})
    result = run_check([str(tmp_path)], CheckOptions())
    budget = budget_of(result)
    totals = {c.who: c.total for c in budget.contributions}
    assert totals == {"grafana": 200, "audit": 100}
    assert budget.unknown_clients == ["audit"] and budget.peak_is_floor
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert "labelled grafana_datasource" in finding.message
    assert finding.location.path == "audit.yaml"


def test_without_the_shared_volume_the_sidecar_feeds_no_grafana(tmp_path):
    """A sidecar writing into a volume Grafana does not mount there: the file is read
    by no Grafana pod of the repository (pods unknown)."""
    alone = SIDECAR_DEPLOYMENT.replace(
        "        - name: grafana\n          image: docker.io/grafana/grafana:12.3.1\n"
        "          volumeMounts:\n            - {name: sc-datasources-volume, mountPath: "
        "/etc/grafana/provisioning/datasources}\n",
        "        - name: grafana\n          image: docker.io/grafana/grafana:12.3.1\n")
    assert alone != SIDECAR_DEPLOYMENT
    write(tmp_path, {"db.yaml": DB, "grafana.yaml": alone,
                     "reports.yaml": LABELLED.format(name="reports", value="1")})
    result = run_check([str(tmp_path)], CheckOptions())
    assert budget_of(result).unknown_clients == ["reports"]


GRAFANA_RELEASE = """
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: grafana, namespace: monitoring}
spec:
  interval: 1h
  chart:
    spec:
      chart: grafana
      version: 8.5.1
      sourceRef: {kind: HelmRepository, name: grafana, namespace: flux-system}
  values:
    datasources:
      datasources.yaml:
        apiVersion: 1
        datasources:
          - name: TeslaMate
            type: postgres
            access: proxy
            url: db.default.svc.cluster.local:5432
            database: teslamate
"""


def test_a_grafana_chart_release_not_rendered_counts_its_data_sources(tmp_path):
    """billimek/k8s-gitops before the operator: the chart's `datasources:` value on the
    server, 100 a pod (chart 8.5.1 ships Grafana 9.5.1 or later), pods unknown (PA106);
    a [[workloads]] declaration of the release's name gives them."""
    write(tmp_path, {"db.yaml": DB, "monitoring/grafana.yaml": GRAFANA_RELEASE})
    result = run_check([str(tmp_path)], CheckOptions())
    budget = budget_of(result)
    (c,) = budget.contributions
    assert c.who == "grafana" and c.total == 100 and c.unknown
    assert budget.unknown_clients == ["grafana"]
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert finding.location.path == "monitoring/grafana.yaml"
    assert 'name = "grafana" replicas = N' in finding.message
    write(tmp_path, {".pool-advisor.toml": '[[workloads]]\nname = "grafana"\nreplicas = 2\n'})
    result = run_check([str(tmp_path)], CheckOptions())
    budget = budget_of(result)
    assert budget.peak == 200 and not budget.unknown_clients
    assert len([c for c in result.findings if c.code == "PA106"]) == 0


def _read(node: dict, release: GrafanaRelease, default: DefaultSetting | None = None,
          env: dict | None = None) -> Found:
    out = Found()
    read_datasource(node, lambda *k: Source(path="ds.yaml", key=".".join(map(str, k))),
                    _expand_with(env), release, default, "test", out)
    return out


def test_the_default_setting_and_a_quoted_number():
    """GF_SQL_DATASOURCES_MAX_OPEN_CONNS_DEFAULT=20 is the pool of a data source with no
    maxOpenConns; a quoted maxOpenConns is a JSON string Grafana's int does not take."""
    node = {"type": "postgres", "name": "a", "url": "db:5432"}
    found = _read(node, GrafanaRelease((11, 0, 0), True),
                  DefaultSetting("20", Source(path="env", key="GF_SQL")))
    (pool,) = found.pools
    assert pool.size.value == 20 and pool.route.host == "db" and pool.route.port == 5432
    found = _read({**node, "jsonData": {"maxOpenConns": "10"}}, GrafanaRelease((11, 0, 0), True))
    assert not found.pools and "not a number Grafana reads" in found.unknown[0]
    assert found.routes[0].host == "db"


def test_a_null_max_open_conns_leaves_the_release_s_default():
    """`maxOpenConns:` with no value (bcgov/sso-dashboard's grafana values) is JSON null,
    which Go's json.Unmarshal leaves at the default: no limit on Grafana 9.3.2."""
    node = {"type": "postgres", "name": "a", "url": "db:5432", "jsonData": {"maxOpenConns": None}}
    (pool,) = _read(node, GrafanaRelease((9, 3, 2), True)).pools
    assert pool.bound == "unbounded" and pool.size.value == 0
    (pool,) = _read(node, GrafanaRelease((10, 4, 3), True)).pools
    assert pool.bound == "default" and pool.size.value == 100


def test_values_expand_as_grafana_does():
    expand = _expand_with({"H": "db", "P": "5432"})
    assert expand("$H:${P}", "url") == "db:5432"
    assert expand("$$H", "url") == "$H"
    assert expand("$__env{H}", "url") == "db"
    assert expand("$__file{/run/h}", "url") is None
    assert expand("$MISSING", "url") is None


@pytest.mark.parametrize(("image", "number", "exact"), [
    ("grafana/grafana:12.3.1", (12, 3, 1), True),
    ("docker.io/grafana/grafana-oss:11.0.0-ubuntu", (11, 0, 0), True),
    ("grafana/grafana:11.3", (11, 3, 0), False),
    ("grafana/grafana:latest", None, False),
    ("grafana/grafana", None, False)])
def test_the_release_an_image_tag_names(image, number, exact):
    found = image_release(image)
    assert (found.number, found.exact) == (number, exact)


# ------------------------------------------------- one bad object leaves the others read

SECOND_DATASOURCE = """
apiVersion: grafana.integreatly.org/v1beta1
kind: GrafanaDatasource
metadata: {{name: other, namespace: monitoring}}
spec:
{spec}  datasource:
    name: Other
    type: postgres
    url: {url}
"""


def crashes(result) -> list:
    return [f for f in result.findings if f.code == "PA901"]


def other_tree(tmp_path, spec: str, url: str = "db.default.svc:5432",
               grafana: str | None = None) -> None:
    operator_tree(tmp_path, json="      maxOpenConns: 10\n")
    if grafana is not None:
        write(tmp_path, {"monitoring/grafana.yaml": grafana})
    write(tmp_path, {"monitoring/other.yaml": SECOND_DATASOURCE.format(spec=spec, url=url)})


def test_a_selector_that_is_no_label_selector_leaves_the_other_data_sources_read(tmp_path):
    """`matchLabels: [a, b]` crashed _selects (AttributeError) and dropped every
    GrafanaDatasource client: now that one goes to Grafanas not known (1 pod x 100, a
    floor, PA106 saying why) and teslamate is still 2 pods x 10."""
    other_tree(tmp_path, "  instanceSelector:\n    matchLabels: [a, b]\n")
    result = run_check([str(tmp_path)], CheckOptions())
    assert not crashes(result)
    budget = budget_of(result)
    totals = {c.who: c.total for c in budget.contributions}
    assert totals == {"grafana": 20, "other": 100}
    assert budget.unknown_clients == ["other"] and budget.peak_is_floor
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert "matchLabels is not a map" in finding.message


@pytest.mark.parametrize("spec", [
    "  instanceSelector:\n    matchExpressions: {key: a}\n",
    "  instanceSelector:\n    matchExpressions: [{key: a, operator: In, values: 7}]\n"])
def test_match_expressions_of_the_wrong_shape_are_no_selector(tmp_path, spec):
    other_tree(tmp_path, spec)
    result = run_check([str(tmp_path)], CheckOptions())
    assert not crashes(result)
    assert {c.who: c.total for c in budget_of(result).contributions} == {
        "grafana": 20, "other": 100}


def test_values_from_that_is_no_list_leaves_a_dollar_value_unknown(tmp_path):
    """`valuesFrom: 7` crashed _values_from (TypeError): now nothing is substituted, so
    a url with `${host}` is a value not held here (placed nowhere, a notice) and one
    without is read as written."""
    spec = "  instanceSelector: {matchLabels: {dashboards: grafana}}\n  valuesFrom: 7\n"
    other_tree(tmp_path, spec)
    result = run_check([str(tmp_path)], CheckOptions())
    assert not crashes(result) and budget_of(result).peak == 220  # 2 pods x (10 + 100)
    other_tree(tmp_path, spec, url="'${host}:5432'")
    result = run_check([str(tmp_path)], CheckOptions())
    assert not crashes(result) and budget_of(result).peak_is_floor
    assert any("Grafana data source 'Other'" in n and "not held here" in n
               for n in result.notices)


def test_an_infinite_max_surge_is_no_surge_and_no_crash(tmp_path):
    """`maxSurge: "inf%"`: float('inf') has no integer (OverflowError, which `except
    ValueError` let through): the surge is not read, the pods are."""
    grafana = GRAFANA_CR.format(ns="monitoring", version="11.3.0").replace(
        "strategy: {type: Recreate}", 'strategy: {rollingUpdate: {maxSurge: "inf%"}}')
    other_tree(tmp_path, "  instanceSelector: {matchLabels: {dashboards: grafana}}\n",
               grafana=grafana)
    result = run_check([str(tmp_path)], CheckOptions())
    assert not crashes(result) and budget_of(result).peak == 220  # no surge


def test_the_operator_deployment_s_surge_is_capped_at_its_replicas(tmp_path):
    """D1: `maxSurge: 5` over the CR's 2 replicas counted 7 pods; Kubernetes runs at
    most 2 + 2 (NewRSNewReplicas), as for any Deployment."""
    grafana = GRAFANA_CR.format(ns="monitoring", version="11.3.0").replace(
        "strategy: {type: Recreate}", "strategy: {rollingUpdate: {maxSurge: 5}}")
    other_tree(tmp_path, "  instanceSelector: {matchLabels: {dashboards: grafana}}\n",
               grafana=grafana)
    result = run_check([str(tmp_path)], CheckOptions())
    assert not crashes(result) and budget_of(result).peak == 440  # 4 pods x (10 + 100)
    surges = [f for c in budget_of(result).contributions for f in c.factors
              if "surge" in f.label]
    assert surges and all("maxSurge 5, capped at replicas 2" in f.label for f in surges)


@pytest.mark.parametrize("url", ["'db.default.svc:²'", "'db.default.svc:123456'"])
def test_a_port_of_no_ascii_digits_is_an_invalid_url(tmp_path, url):
    """"²".isdigit() is true but int() refuses it (ValueError); Grafana's Atoi refuses
    it too: the data source does not connect (a notice), the others are read."""
    other_tree(tmp_path, "  instanceSelector: {matchLabels: {dashboards: grafana}}\n",
               url=url)
    result = run_check([str(tmp_path)], CheckOptions())
    assert not crashes(result) and budget_of(result).peak == 20
    assert any("Grafana data source 'Other'" in n and "invalid port" in n
               for n in result.notices)


def test_a_crash_on_one_data_source_or_grafana_is_its_own_problem(tmp_path, monkeypatch):
    """Each GrafanaDatasource and each Grafana CR is read under its own guard: a crash
    is a PA901 at that object, and the other data sources are still counted."""
    import advisor.link.grafana_datasources as gd

    values_from = gd._values_from

    def crash_on_other(ds, index):
        if ds.name == "other":
            raise RuntimeError("boom")
        return values_from(ds, index)

    monkeypatch.setattr(gd, "_values_from", crash_on_other)
    other_tree(tmp_path, "  instanceSelector: {matchLabels: {dashboards: grafana}}\n")
    result = run_check([str(tmp_path)], CheckOptions())
    (problem,) = crashes(result)
    assert problem.location.path == "monitoring/other.yaml" and "boom" in problem.message
    assert {c.who: c.total for c in budget_of(result).contributions} == {"grafana": 20}
    monkeypatch.undo()

    pods = gd._cr_pods

    def crash_on_grafana(g, peaks, default_ns):
        if g.name == "grafana":
            raise RuntimeError("bust")
        return pods(g, peaks, default_ns)

    monkeypatch.setattr(gd, "_cr_pods", crash_on_grafana)
    write(tmp_path, {"monitoring/other.yaml": SECOND_DATASOURCE.format(
        spec="  instanceSelector: {matchLabels: {dashboards: other}}\n",
        url="db.default.svc:5432")})
    result = run_check([str(tmp_path)], CheckOptions())
    (problem,) = crashes(result)
    assert problem.location.path == "monitoring/grafana.yaml" and "bust" in problem.message
    assert {c.who: c.total for c in budget_of(result).contributions} == {"other": 100}


def test_a_tag_of_more_digits_than_int_takes_names_no_release():
    """int() of more than 4,300 digits raises ValueError (Python 3.11): the digit runs
    are bounded, so such a tag names no release."""
    assert image_release("grafana/grafana:" + "1" * 5000 + ".0.0").number is None
    assert image_release("grafana/grafana:" + "1" * 10 + ".0.0").number is None
    assert image_release("grafana/grafana:v123456789.1").number == (123456789, 1, 0)


GRAFANA_OWN_DATABASE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: grafana, namespace: default}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: grafana}}
    spec:
      containers:
        - name: grafana
          image: grafana/grafana:11.2.0
          env:
            - {name: GF_DATABASE_URL, value: "postgres://grafana@db:5432/grafana"}
            - {name: GF_DATABASE_MAX_OPEN_CONN, value: "7"}
          volumeMounts:
            - {name: ds, mountPath: /etc/grafana/provisioning/datasources}
      volumes:
        - name: ds
          configMap: {name: grafana-datasources}
"""


def test_a_crash_reading_provisioned_data_sources_keeps_grafana_s_own_pool(
        tmp_path, monkeypatch):
    """clients.py read a Grafana pod's provisioning files unguarded: a crash there
    (`url: "db:²"` did) dropped the whole workload, Grafana's own [database] pool too.
    Now the crash is a PA901 at the workload, and the 2 pods x 7 are still counted."""
    import advisor.link.clients as clients

    def crash(*_args):
        raise RuntimeError("boom")

    write(tmp_path, {"db.yaml": DB, "grafana.yaml": GRAFANA_OWN_DATABASE,
                     "cm.yaml": DATASOURCES_CM.format(url="db:5432", json="")})
    monkeypatch.setattr(clients, "_grafana_datasource_pools", crash)
    result = run_check([str(tmp_path)], CheckOptions())
    (problem,) = crashes(result)
    assert problem.location.path == "grafana.yaml" and "boom" in problem.message
    (c,) = budget_of(result).contributions
    assert c.who == "grafana" and c.total == 14
