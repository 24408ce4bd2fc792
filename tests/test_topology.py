"""Topology linking: app source inference, routing through Services, sidecars, declared
servers and workloads."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write


def test_app_source_inferred_from_workload_name(tmp_path):
    write(tmp_path, {
        "k8s/db.yaml": DB,
        "k8s/app.yaml": """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: checkout}
            spec:
              replicas: 3
              strategy: {type: Recreate}
              template:
                spec:
                  containers:
                    - name: app
                      image: acme/checkout:1.0
                      env:
                        - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/shop"}
            """,
        "services/checkout/pom.xml": "<project/>\n",
        "services/checkout/src/main/resources/application.yml": """
            spring:
              datasource:
                hikari:
                  maximum-pool-size: 15
            """,
    })
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.peak == 3 * 15
    (c,) = budget.contributions
    size = c.factors[-1]
    assert size.source.path == "services/checkout/src/main/resources/application.yml"
    assert size.source.line == 5
    assert any("inferred as services/checkout/" in n for n in result.notices)
    # PostgreSQL 16 from the image: reserved_connections exists, default 0 (not listed)
    assert budget.version.value == 16 and budget.usable == 47


def test_declared_external_server_and_workload(tmp_path):
    write(tmp_path, {
        ".pool-advisor.toml": """
            [[servers]]
            name = "orders-rds"
            hosts = ["orders.abc.eu-west-1.rds.amazonaws.com"]
            max_connections = 400
            version = 16
            reserved_connections = 5
            headroom = 10

            [[workloads]]
            name = "reports"
            pool-size = 5
            processes = 4
            replicas = 2
            target = "orders-rds"
            """,
        "k8s/app.yaml": """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: web}
            spec:
              replicas: 10
              strategy: {type: Recreate}
              template:
                spec:
                  containers:
                    - name: app
                      image: acme/web:1
                      env:
                        - name: SPRING_DATASOURCE_URL
                          value: jdbc:postgresql://orders.abc.eu-west-1.rds.amazonaws.com/o
                        - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "30"}
            """,
    })
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.usable == 400 - 3 - 5 - 10
    assert budget.peak == 10 * 30 + 2 * 4 * 5
    assert [f.code for f in result.findings] == []


def test_sidecar_pgbouncer_is_a_pooler_per_pod(tmp_path):
    write(tmp_path, {
        "k8s/db.yaml": DB,
        "k8s/app.yaml": """
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: bouncer}
            data:
              pgbouncer.ini: |
                [databases]
                shop = host=db port=5432 dbname=shop
                [pgbouncer]
                pool_mode = transaction
                default_pool_size = 4
            ---
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: web}
            spec:
              replicas: 6
              strategy: {type: Recreate}
              template:
                spec:
                  containers:
                    - name: app
                      image: acme/web:1
                      env:
                        - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://localhost:6432/shop"}
                        - {name: SPRING_DATASOURCE_USERNAME, value: shop}
                        - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "20"}
                    - name: pgbouncer
                      image: edoburu/pgbouncer:1.21.0
                      volumeMounts: [{name: cfg, mountPath: /etc/pgbouncer}]
                  volumes:
                    - {name: cfg, configMap: {name: bouncer}}
            """,
    })
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    (c,) = budget.contributions
    assert c.kind == "pooler"
    assert budget.peak == 6 * 4  # 6 pods, each with its own PgBouncer of pool 4
    assert budget.usable == 47


def test_short_service_names_resolve_in_the_clients_namespace(tmp_path):
    def ns_files(ns: str, pool: int) -> dict[str, str]:
        return {
            f"{ns}/db.yaml": DB.replace("metadata: {name: db}",
                                        f"metadata: {{name: db, namespace: {ns}}}"),
            f"{ns}/app.yaml": f"""
                apiVersion: apps/v1
                kind: Deployment
                metadata: {{name: web, namespace: {ns}}}
                spec:
                  replicas: 2
                  strategy: {{type: Recreate}}
                  template:
                    spec:
                      containers:
                        - name: app
                          image: acme/web:1
                          env:
                            - {{name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db/x"}}
                            - {{name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "{pool}"}}
                """}
    write(tmp_path, {**ns_files("prod", 20), **ns_files("staging", 3)})
    result = run_check([str(tmp_path)], CheckOptions())
    peaks = {b.server: b.peak for b in result.budgets}
    assert peaks == {"prod/db": 40, "staging/db": 6}


def test_alternative_overlays_are_budgeted_apart(tmp_path):
    import shutil

    if shutil.which("kubectl") is None and shutil.which("kustomize") is None:
        import pytest

        pytest.skip("no kubectl or kustomize binary")
    app = """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          replicas: 2
          strategy: {type: Recreate}
          template:
            spec:
              containers:
                - name: app
                  image: acme/web:1
                  env:
                    - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db/x"}
                    - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "20"}
        """
    write(tmp_path, {
        "base/kustomization.yaml": "resources: [db.yaml, app.yaml]\n",
        "base/db.yaml": DB, "base/app.yaml": app,
        "overlays/small/kustomization.yaml": "resources: [../../base]\n",
        "overlays/big/kustomization.yaml": (
            "resources: [../../base]\nreplicas:\n  - name: web\n    count: 5\n"),
    })
    result = run_check([str(tmp_path)], CheckOptions())
    peaks = {b.server: b.peak for b in result.budgets}
    assert peaks == {"db [overlays/big]": 100, "db [overlays/small]": 40}
    big = next(b for b in result.budgets if b.server == "db [overlays/big]")
    assert big.contributions[0].factors[0].source.path == "overlays/big/kustomization.yaml"
    assert any(f.code == "PA101" and "[overlays/big]" in f.message for f in result.findings)


BOUNCER = """
apiVersion: v1
kind: Service
metadata: {name: bouncer}
spec:
  selector: {app: bouncer}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: bouncer-ini}
data:
  pgbouncer.ini: |
    [databases]
    shop = host=db port=5432 dbname=shop
    [pgbouncer]
    pool_mode = transaction
    default_pool_size = 10
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bouncer}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: bouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:1.18.0
          volumeMounts: [{name: ini, mountPath: /etc/pgbouncer}]
      volumes:
        - {name: ini, configMap: {name: bouncer-ini}}
"""


def _app(name: str, host: str, extra_env: str = "") -> str:
    return f"""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: {name}}}
        spec:
          replicas: 1
          strategy: {{type: Recreate}}
          template:
            spec:
              containers:
                - name: app
                  image: acme/{name}:1
                  env:
                    - {{name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://{host}/shop"}}
                    - {{name: SPRING_DATASOURCE_USERNAME, value: app}}
                    - {{name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "5"}}{extra_env}
        """


def test_sql_hazards_belong_to_the_workload_whose_source_holds_them(tmp_path):
    from advisor.config.settings import Settings
    from advisor.engine.repository import scan_paths
    from advisor.read.fs import Root

    write(tmp_path, {
        "k8s/db.yaml": DB,
        "k8s/bouncer.yaml": BOUNCER,
        "k8s/web.yaml": _app("web", "bouncer:5432"),
        "k8s/batch.yaml": _app("batch", "db:5432", """
                    - {name: PGOPTIONS, value: "-c statement_timeout=5s"}"""),
        "web/pom.xml": "<project/>\n",
        "web/db/migration/V1__init.sql": "SET search_path = shop;\nCREATE TABLE t (id int);\n",
        "batch/pom.xml": "<project/>\n",
        "batch/sql/V1__x.sql": "SET search_path = shop;\n",
    })
    topo = scan_paths(Root.of(tmp_path), [tmp_path], Settings(), CheckOptions())
    owners = {(h.location.path, h.kind): h.client_id for h in topo.sql_hazards}
    assert owners[("web/db/migration/V1__init.sql", "session-set")] == "Deployment/web"
    assert owners[("batch/sql/V1__x.sql", "session-set")] == "Deployment/batch"
    assert owners[("k8s/batch.yaml", "startup-parameter")] == "Deployment/batch"
    result = run_check([str(tmp_path)], CheckOptions())
    pa401 = [f for f in result.findings if f.code == "PA401"]
    # web goes through the transaction-mode PgBouncer; batch goes straight to the server
    assert [f.location.path for f in pa401] == ["web/db/migration/V1__init.sql"]
    assert not [f for f in result.findings if f.code == "PA410"]


def test_secret_values_are_never_printed(tmp_path):
    import base64

    from advisor.report.json import render as render_json
    from advisor.report.text import render as render_text
    from advisor.rules import load_rules

    url = "postgresql://app:hunter2-s3cret@db:5432/shop?options=-c%20search_path%3Dx"
    write(tmp_path, {
        "k8s/db.yaml": DB,
        "k8s/secret.yaml": f"""
            apiVersion: v1
            kind: Secret
            metadata: {{name: dburl}}
            data:
              DATABASE_URL: {base64.b64encode(url.encode()).decode()}
            """,
        "k8s/app.yaml": """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: web}
            spec:
              replicas: 2
              strategy: {type: Recreate}
              template:
                spec:
                  containers:
                    - name: app
                      image: acme/web:1
                      envFrom: [{secretRef: {name: dburl}}]
                      env:
                        - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "5"}
            """,
    })
    result = run_check([str(tmp_path)], CheckOptions())
    registry = load_rules()
    for text in (render_text(result, registry), render_json(result, registry),
                 repr(result)):
        assert "hunter2" not in text


def test_app_source_from_compose_build_context(tmp_path):
    write(tmp_path, {
        "k8s/db.yaml": DB,
        "k8s/app.yaml": """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: orders}
            spec:
              replicas: 2
              strategy: {type: Recreate}
              template:
                spec:
                  containers:
                    - name: app
                      image: ghcr.io/acme/orders-api:3.1
                      env:
                        - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db/o"}
            """,
        "docker-compose.yml": """
            services:
              api:
                image: ghcr.io/acme/orders-api
                build: ./code/backend
            """,
        "code/backend/src/main/resources/application.properties":
            "spring.datasource.hikari.maximum-pool-size=7\n",
    })
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.peak == 2 * 7
    assert any("code/backend/ (build context of" in n for n in result.notices), result.notices


_WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: acme/web:1
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/shop"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "5"}
"""

_HPA = """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 20
"""


@pytest.mark.parametrize(("hpa_at", "peak"), [
    ("extras/hpa/autoscaling/web.yaml", 1 * 5),  # the extras variant's own web: not kept
    ("kubernetes-manifests/hpa.yaml", 20 * 5),  # beside the web that is kept
    ("autoscaling/web.yaml", 20 * 5),  # as near the one kept as the other: applied
])
def test_an_autoscaler_scales_the_workload_of_its_own_folder(tmp_path, hpa_at, peak):
    """Two folders define the Deployment web (a variant under extras/, the quickstart
    under kubernetes-manifests/, the last applied and the one counted): an HPA of the
    variant's folder does not scale the quickstart's web (audit: bank-of-anthos's
    extras/postgres-hpa HPAs, userservice up to 50, were joined to the quickstart's
    userservice, which connects to accounts-db: 'OVER by 1133')."""
    write(tmp_path, {"kubernetes-manifests/db.yaml": DB,
                     "kubernetes-manifests/web.yaml": _WEB,
                     "extras/hpa/kubernetes-manifests/web.yaml": _WEB,
                     hpa_at: _HPA})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.peak == peak, result.notices
    apart = [n for n in result.notices if "not the one kept in its place" in n]
    assert bool(apart) == (peak == 5)
