"""Helm rendering with the real engine (helm-python-sdk), values tracing, fallback."""

from __future__ import annotations

import os
import shutil
import textwrap

import pytest

from advisor.read.fs import Root
from advisor.read.render import field_source, text_origin
from advisor.read.render.helm import render_chart
from advisor.read.sources.k8s import get
from tests.deploy_helpers import FIXTURES, by_ref, line_no

helm = pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")

PROD = FIXTURES / "helm-chart-prod"
API = PROD / "charts" / "api"


def render_prod(**kw):
    return render_chart(Root.of(PROD), "charts/api", values_files=["values-prod.yaml"],
                        release="orders", namespace="shop", **kw)


def test_prod_values_render_with_release_namespace_and_tgz_subchart():
    r = render_prod()
    assert not r.problems
    refs = sorted(o.ref for o in r.objects)
    assert "Deployment/shop/orders-api" in refs
    assert "Deployment/shop/orders-worker" in refs  # from charts/worker-0.1.0.tgz
    assert "HorizontalPodAutoscaler/shop/orders-api" in refs
    # helm.sh/hook: test pods are not part of the deployment
    assert not any(o.kind == "Pod" for o in r.objects)
    assert any("skipped Helm test hooks" in n for n in r.notices)
    api = by_ref(r.objects, "Deployment/shop/orders-api")
    assert get(api.body, "spec", "replicas") is None  # autoscaling.enabled: true in prod
    image = get(api.body, "spec", "template", "spec", "containers", 0, "image")
    assert image == "ghcr.io/acme/orders-api:2.14.1"


def test_numbers_from_values_files_are_reported_at_the_values_line():
    r = render_prod()
    prod_values = API / "values-prod.yaml"
    hpa = by_ref(r.objects, "HorizontalPodAutoscaler/shop/orders-api")
    assert get(hpa.body, "spec", "maxReplicas") == 12
    src = field_source(hpa, "spec", "maxReplicas")
    assert (src.path, src.line) == ("charts/api/values-prod.yaml",
                                    line_no(prod_values, "maxReplicas: 12"))
    cm = by_ref(r.objects, "ConfigMap/shop/orders-api-db")
    assert cm.body["data"]["SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE"] == "15"
    src = field_source(cm, "data", "SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE")
    assert (src.path, src.line) == ("charts/api/values-prod.yaml",
                                    line_no(prod_values, "poolSize: 15"))
    # A URL assembled from three values keys: reported at the host's line (first part).
    src = field_source(cm, "data", "SPRING_DATASOURCE_URL")
    assert (src.path, src.line) == ("charts/api/values.yaml",
                                    line_no(API / "values.yaml", "host: orders-db"))
    assert "database.port" in src.key and "part of" in src.key


def test_subchart_values_overridden_by_parent_values_file():
    r = render_prod()
    worker = by_ref(r.objects, "Deployment/shop/orders-worker")
    assert get(worker.body, "spec", "replicas") == 4
    src = field_source(worker, "spec", "replicas")
    assert (src.path, src.line) == ("charts/api/values-prod.yaml",
                                    line_no(API / "values-prod.yaml", "replicaCount: 4"))
    env = get(worker.body, "spec", "template", "spec", "containers", 0, "env")
    names = [e["name"] for e in env]
    pool = names.index("SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE")
    src = field_source(worker, "spec", "template", "spec", "containers", 0, "env", pool,
                       "value")
    assert src.path == "charts/api/values-prod.yaml"
    url = names.index("SPRING_DATASOURCE_URL")
    src = field_source(worker, "spec", "template", "spec", "containers", 0, "env", url, "value")
    # not overridden: the default inside the packaged subchart
    assert src.path == "charts/api/charts/worker-0.1.0.tgz#worker/values.yaml"
    assert src.line == 10


def test_template_positions_for_literal_fields():
    r = render_prod()
    hpa = by_ref(r.objects, "HorizontalPodAutoscaler/shop/orders-api")
    assert hpa.path == "charts/api/templates/hpa.yaml"
    loc = hpa.location("spec", "scaleTargetRef", "kind")
    assert loc.line == line_no(API / "templates" / "hpa.yaml", "kind: Deployment")
    api = by_ref(r.objects, "Deployment/shop/orders-api")
    loc = api.location("spec", "template", "spec", "containers", 0, "envFrom")
    assert loc.line == line_no(API / "templates" / "deployment.yaml", "envFrom:")


def test_set_values_win_and_are_reported_as_set():
    r = render_prod(set_values=["autoscaling.maxReplicas=20"])
    hpa = by_ref(r.objects, "HorizontalPodAutoscaler/shop/orders-api")
    assert get(hpa.body, "spec", "maxReplicas") == 20
    src = field_source(hpa, "spec", "maxReplicas")
    assert src.path == "--set" and "autoscaling.maxReplicas=20" in src.key



def test_set_flags_are_parsed_into_one_map_as_helm_does(tmp_path):
    """`--set env[0].name=A --set env[0].value=b` is one list item with both keys, as
    Helm parses every --set into one map (strvals.ParseInto); merged flag by flag, the
    second list replaced the first and a schema asking for `name` failed the render
    (audit A, Airflow's chart). Each key is still reported at the flag that wrote it."""
    app = _chart(tmp_path)
    (app / "templates" / "env.yaml").write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: env
        data:
          {{- range .Values.env }}
          {{ required "name" .name }}: {{ .value | quote }}
          {{- end }}
        """))
    r = render_chart(Root.of(tmp_path), "app", release="r1",
                     set_values=["env[0].name=POOL_SIZE", "env[0].value=12",
                                 "replicaCount=3"])
    assert not r.problems, r.problems
    cm = by_ref(r.objects, "ConfigMap/env")
    assert cm.body["data"] == {"POOL_SIZE": "12"}
    deployment = by_ref(r.objects, "Deployment/r1-app")
    src = field_source(deployment, "spec", "replicas")
    assert src.path == "--set" and src.key == "values: replicaCount (--set replicaCount=3)"
    src = field_source(cm, "data", "POOL_SIZE")
    assert src.path == "--set" and src.key == "values: env.0.value (--set env[0].value=12)"

def _chart(tmp_path, name="app"):
    chart = helm.Chart.create(name, str(tmp_path))
    chart.close()
    return tmp_path / name


def test_directory_subchart_config_text_and_derived_values(tmp_path):
    app = _chart(tmp_path)
    sub_parent = app / "charts"
    (sub_parent / "db" / "templates").mkdir(parents=True)
    (sub_parent / "db" / "Chart.yaml").write_text("apiVersion: v2\nname: db\nversion: 1.0.0\n")
    (sub_parent / "db" / "values.yaml").write_text(textwrap.dedent("""\
        replicaCount: 1
        conf: |
          listen_addresses = '*'
          max_connections = 150
        standbys: 2
        """))
    (sub_parent / "db" / "templates" / "config.yaml").write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {{ .Release.Name }}-db-conf
        data:
          postgresql.conf: |
            {{- .Values.conf | nindent 4 }}
          instances: {{ add .Values.standbys 1 | quote }}
        """))
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.problems, r.problems
    cm = by_ref(r.objects, "ConfigMap/r1-db-conf")
    assert cm.path == "app/charts/db/templates/config.yaml"
    text = cm.body["data"]["postgresql.conf"]
    assert "max_connections = 150" in text
    values = sub_parent / "db" / "values.yaml"
    src = field_source(cm, "data", "postgresql.conf", text_line=2)
    assert (src.path, src.line) == ("app/charts/db/values.yaml",
                                    line_no(values, "max_connections = 150"))
    assert text_origin(cm, "data", "postgresql.conf") == ("app/charts/db/values.yaml",
                                                          line_no(values, "conf: |"))
    # arithmetic in the template: traced as derived from the key tested alone
    src = field_source(cm, "data", "instances")
    assert cm.body["data"]["instances"] == "3"
    assert (src.path, src.line) == ("app/charts/db/values.yaml", line_no(values, "standbys"))
    assert "derived" in src.key


def test_a_test_hook_that_does_not_render_is_left_out_not_the_chart(tmp_path):
    """`helm create`'s templates/tests/ hold test hooks, never deployed; one that reads a
    subchart's values from a charts/ folder git ignores (trigger.dev's test-redis) must
    not make the chart's real objects unread. A failure elsewhere still is one."""
    app = _chart(tmp_path)
    (app / "templates" / "tests" / "test-redis.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n"
        '    "helm.sh/hook": test\nspec:\n  containers:\n    - name: t\n'
        "      image: redis\n      args: [{{ .Values.redis.master.service.ports.redis }}]\n")
    r = render_chart(Root.of(tmp_path), "app")
    assert not r.problems, r.problems
    assert by_ref(r.objects, "Deployment/release-app") is not None
    assert any("rendered without templates/tests/" in n and "test-redis.yaml" in n
               for n in r.notices), r.notices
    assert (app / "templates" / "tests" / "test-redis.yaml").is_file()  # nothing moved


def test_render_error_is_a_problem_at_the_template_line(tmp_path):
    app = _chart(tmp_path)
    (app / "templates" / "broken.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n"
        "  a: {{ required \"database.password is required\" .Values.database.password }}\n")
    r = render_chart(Root.of(tmp_path), "app")
    assert r.objects == []
    [p] = r.problems
    assert p.fatal and p.location.path == "app/templates/broken.yaml"
    assert p.location.line == 6
    assert "database.password" in p.message


def test_symlink_out_of_root_is_refused(tmp_path):
    outside = tmp_path / "outside.yaml"
    outside.write_text("secret: 1\n")
    inside = tmp_path / "repo"
    inside.mkdir()
    app = _chart(inside)
    os.symlink(outside, app / "templates" / "leak.yaml")
    r = render_chart(Root.of(inside), "app")
    assert r.objects == []
    assert "outside the scanned root" in r.problems[0].message


def test_missing_values_file_is_fatal():
    r = render_chart(Root.of(PROD), "charts/api", values_files=["values-nope.yaml"])
    assert r.objects == [] and r.problems[0].fatal
    assert "not found" in r.problems[0].message


def test_values_only_reading_without_engine():
    r = render_prod(use_engine=False, set_values=["worker.replicaCount=6"])
    [notice] = r.notices
    assert "NOT rendered" in notice and "replicaCount" in notice
    hpa = by_ref(r.objects, "HorizontalPodAutoscaler/shop/orders-api")
    assert get(hpa.body, "spec", "maxReplicas") == 12
    src = field_source(hpa, "spec", "maxReplicas")
    assert (src.path, src.line) == ("charts/api/values-prod.yaml",
                                    line_no(API / "values-prod.yaml", "maxReplicas: 12"))
    worker = by_ref(r.objects, "Deployment/shop/orders-worker")
    assert get(worker.body, "spec", "replicas") == 6
    assert field_source(worker, "spec", "replicas").path == "--set"
    env = get(worker.body, "spec", "template", "spec", "containers", 0, "env")
    assert {"name": "SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE", "value": "5"} in env


def test_without_the_engine_installed_the_fallback_says_why(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "helm_python", None)  # import now raises ImportError
    r = render_prod()
    [notice] = r.notices
    assert "the Helm engine is not installed" in notice and "NOT rendered" in notice
    assert by_ref(r.objects, "HorizontalPodAutoscaler/shop/orders-api")


def test_disabled_bitnami_dependency_is_not_read():
    root = FIXTURES / "bitnami-values"
    r = render_chart(Root.of(root), "charts/shop", values_files=["values-prod.yaml"],
                     set_values=["postgresql.enabled=false"], release="shop")
    assert not [o for o in r.objects if o.kind == "StatefulSet"]


def test_a_bitnami_postgresql_10_dependency_is_read_from_its_legacy_values(tmp_path):
    """bitnami/postgresql before 11.0 (DolphinScheduler pins 10.3.18, not vendored): its
    values are postgresqlUsername, postgresqlMaxConnections, replication.*; the server is
    PostgreSQL 11 (the chart's appVersion) named like its Service, not missing."""
    app = _chart(tmp_path)
    chart = (app / "Chart.yaml").read_text()
    (app / "Chart.yaml").write_text(chart + "dependencies:\n  - name: postgresql\n"
                                    "    version: 10.3.18\n    repository: https://x.invalid\n"
                                    "    condition: postgresql.enabled\n")
    (app / "values.yaml").write_text((app / "values.yaml").read_text() + textwrap.dedent("""\
        postgresql:
          enabled: true
          postgresqlUsername: root
          postgresqlDatabase: scheduler
          postgresqlMaxConnections: 250
          replication:
            enabled: true
            readReplicas: 2
        """))
    r = render_chart(Root.of(tmp_path), "app", release="ds")
    primary = by_ref(r.objects, "StatefulSet/ds-postgresql")
    assert get(primary.body, "spec", "template", "spec", "containers", 0, "image") == \
        "docker.io/bitnami/postgresql:11"
    env = get(primary.body, "spec", "template", "spec", "containers", 0, "env")
    assert env == [{"name": "POSTGRESQL_MAX_CONNECTIONS", "value": "250"}]
    src = field_source(primary, "spec", "template", "spec", "containers", 0, "env", 0, "value")
    assert (src.path, src.line) == ("app/values.yaml",
                                    line_no(app / "values.yaml", "postgresqlMaxConnections"))
    read = by_ref(r.objects, "StatefulSet/ds-postgresql-read")
    assert get(read.body, "spec", "replicas") == 2
    # the PostgreSQL major it assumes, and why (the chart version's appVersion)
    assert any("Bitnami postgresql 10.3.18" in n and "PostgreSQL 11: Bitnami postgresql chart "
               "10.3.18" in n for n in r.notices)


def test_a_bitnami_dependencys_name_override_names_its_server(tmp_path):
    """`postgresql.nameOverride: postgres` (OpenMeter's chart): the Service and the
    StatefulSet are <release>-postgres, the host its clients name; the server was
    <release>-postgresql, and every client unlinked."""
    app = _chart(tmp_path)
    chart = (app / "Chart.yaml").read_text()
    (app / "Chart.yaml").write_text(chart + "dependencies:\n  - name: postgresql\n"
                                    "    version: 16.1.2\n    repository: oci://x.invalid\n")
    (app / "values.yaml").write_text((app / "values.yaml").read_text() + textwrap.dedent("""\
        postgresql:
          nameOverride: postgres
          auth: {database: meter}
        """))
    r = render_chart(Root.of(tmp_path), "app", release="openmeter")
    assert by_ref(r.objects, "StatefulSet/openmeter-postgres") is not None
    r = render_chart(Root.of(tmp_path), "app", release="shop")
    assert by_ref(r.objects, "StatefulSet/shop-postgres") is not None


def _count_renders(monkeypatch):
    from advisor.read.render import helm_trace

    calls = []
    real = helm_trace.ChartRenderer.render

    def render(self, values):
        calls.append(values)
        return real(self, values)

    monkeypatch.setattr(helm_trace.ChartRenderer, "render", render)
    return calls


def test_scaffold_chart_is_traced_in_one_render(tmp_path, monkeypatch):
    # `helm create`: autoscaling, ingress and httpRoute are off, so their keys (1, 80,
    # "/", "http": values found all over the output) never show up; the render with
    # the sentinels of numbers and strings differs from the baseline by the sentinels
    # only, so each group is read from it and nothing is tried again.
    app = _chart(tmp_path)
    (app / "values-prod.yaml").write_text("replicaCount: 3\nservice:\n  port: 8080\n")
    calls = _count_renders(monkeypatch)
    r = render_chart(Root.of(tmp_path), "app", values_files=["values-prod.yaml"],
                     release="r1")
    assert not r.problems, r.problems
    assert len(calls) == 2  # the baseline, the numbers and strings together
    deployment = by_ref(r.objects, "Deployment/r1-app")
    assert get(deployment.body, "spec", "replicas") == 3
    src = field_source(deployment, "spec", "replicas")
    assert (src.path, src.line, src.key) == ("app/values-prod.yaml", 1,
                                             "values: replicaCount")
    service = by_ref(r.objects, "Service/r1-app")
    src = field_source(service, "spec", "ports", 0, "port")
    assert (src.path, src.line) == ("app/values-prod.yaml", 3)
    src = field_source(deployment, "spec", "template", "spec", "containers", 0, "image")
    assert (src.path, src.key) == ("app/values.yaml", "values: image.repository (part of)")


def test_a_value_under_a_branch_another_sentinel_flips_is_still_traced(tmp_path):
    app = _chart(tmp_path)
    (app / "values.yaml").write_text("shards: 2\nreplicas: 7\nport: 5\n")
    shutil.rmtree(app / "templates")
    (app / "templates").mkdir()
    (app / "templates" / "db.yaml").write_text(textwrap.dedent("""\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {{ .Release.Name }}-db
        spec:
          {{- if eq (int .Values.shards) 2 }}
          replicas: {{ .Values.replicas }}
          {{- else }}
          replicas: 1
          {{- end }}
          template:
            spec:
              containers:
                - name: db
                  image: postgres:16
                  ports:
                    - containerPort: {{ .Values.port }}0
        """))
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.problems, r.problems
    db = by_ref(r.objects, "Deployment/r1-db")
    assert get(db.body, "spec", "replicas") == 7
    src = field_source(db, "spec", "replicas")
    assert (src.path, src.line, src.key) == ("app/values.yaml", 2, "values: replicas")
    # the sentinel lands inside a longer number: not verbatim, found tested alone
    src = field_source(db, "spec", "template", "spec", "containers", 0, "ports", 0,
                       "containerPort")
    assert (src.path, src.line, src.key) == ("app/values.yaml", 3, "values: port (derived)")


def test_a_charts_entry_that_matches_no_chart_is_said(tmp_path):
    """[[charts]] path written from another folder (aws-containers/retail-store: the
    entry matched nothing and the chart was rendered with its defaults, without a
    word): a notice names it; the entry that matches is used as before."""
    from advisor.engine.check import CheckOptions, run_check

    tree = tmp_path / "repo"
    shutil.copytree(PROD, tree)
    config = tree / ".pool-advisor.toml"
    config.write_text(config.read_text() + '\n[[charts]]\npath = "src/orders/chart"\n')
    result = run_check([str(tree)], CheckOptions())
    said = [n for n in result.notices if n.startswith("configuration: [[charts]]")]
    assert said == ["configuration: [[charts]] path 'src/orders/chart' (src/orders/chart in "
                    "the repository) is no Helm chart among the paths checked; its values, "
                    "release and namespace are not used"]


def test_a_long_helm_error_keeps_its_cause():
    """Helm says the cause last, after a chain of includes: a long error keeps its start
    and its end (audit A: temporalio/helm-charts' PA901 was cut before 'wrong type for
    value')."""
    from advisor.read.render.helm_values import short_error

    chain = "\n  ".join(f'a/templates/_helpers.tpl:{n}:4 executing "a.step{n}" at <include '
                        f'"a.step{n + 1}" $>: error calling include:' for n in range(12))
    text = short_error(Exception(f"a/templates/x.yaml:1:25 {chain}\n  at <$config>: wrong "
                                 "type for value; expected map[string]interface {}; got "
                                 "string"))
    assert len(text) < 600 and "\n" not in text
    assert text.startswith("a/templates/x.yaml:1:25 a/templates/_helpers.tpl:0:4")
    assert text.endswith("wrong type for value; expected map[string]interface {}; got string")
    assert short_error(Exception("short\n  one")) == "short one"
