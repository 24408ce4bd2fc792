"""One realistic project per deployment form, checked end to end with the engine
(`advisor.engine.check.run_check`); the expected budget is worked out by hand in each test.

Peak pods include the rolling-update surge the engine counts by default: maxSurge
25% of the peak, rounded up (Kubernetes rounds surge up), unless the workload sets it.
"""

from __future__ import annotations

import shutil

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.deploy_helpers import FIXTURES, line_no

helm = pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")


def budget(result, server_id):
    found = [b for b in result.budgets if b.server_id == server_id]
    assert found, f"{server_id} not in {[b.server_id for b in result.budgets]}"
    return found[0]


def contribution(b, who):
    return next(c for c in b.contributions if c.who == who)


def codes(result):
    return sorted({f.code for f in result.findings})


def test_helm_chart_with_prod_values():
    # Each fixture is a repository of its own: paths are relative to it.
    r = run_check([FIXTURES / "helm-chart-prod"], CheckOptions(root=FIXTURES / "helm-chart-prod"))
    b = budget(r, "StatefulSet/shop/orders-db")
    # usable = 300 max_connections (k8s/postgres.yaml) - 3 superuser_reserved = 297
    assert (b.max_connections.value, b.usable) == (300, 297)
    # orders-api: HPA maxReplicas 12 (values-prod.yaml) + surge ceil(12 x 25%) = 3
    #             -> 15 pods x HikariCP 15 (database.poolSize, values-prod.yaml) = 225
    # orders-worker (packaged subchart): replicaCount 4 (values-prod.yaml) + surge 1
    #             -> 5 pods x 5 (worker.env ...MAXIMUMPOOLSIZE, values-prod.yaml) = 25
    # peak = 225 + 25 = 250 <= 297
    assert b.peak == 250
    api = contribution(b, "orders-api")
    prod = FIXTURES / "helm-chart-prod" / "charts" / "api" / "values-prod.yaml"
    hpa, _surge, pool = api.factors
    assert (hpa.value, hpa.source.path, hpa.source.line) == (
        12, "charts/api/values-prod.yaml", line_no(prod, "maxReplicas: 12"))
    assert (pool.value, pool.source.line) == (15, line_no(prod, "poolSize: 15"))
    assert contribution(b, "orders-worker").total == 25
    assert "PA101" not in codes(r)


@pytest.mark.skipif(not (shutil.which("kubectl") or shutil.which("kustomize")),
                    reason="kubectl (kustomize) not installed")
def test_kustomize_prod_overlay():
    r = run_check([FIXTURES / "kustomize-overlays"],
                  CheckOptions(root=FIXTURES / "kustomize-overlays"))
    prod = budget(r, "StatefulSet/prod/postgres")
    # usable = 200 max_connections (overlays/prod/postgres-conf.yaml patch) - 3 = 197
    assert (prod.max_connections.value, prod.usable) == (200, 197)
    assert prod.max_connections.source.path == "overlays/prod/postgres-conf.yaml"
    api = next(c for c in prod.contributions
               if any(f.source.path == "overlays/prod/hpa.yaml" for f in c.factors))
    # api (prod): HPA maxReplicas 10 (overlays/prod/hpa.yaml) + maxSurge 1 (the overlay's
    # JSON patch) = 11 pods x HikariCP 12 (configMapGenerator merge in the overlay) = 132
    assert api.total == 132
    surge = api.factors[1]
    assert (surge.value, surge.source.path) == (1, "overlays/prod/kustomization.yaml")
    assert api.factors[2].source.path == "overlays/prod/kustomization.yaml"


@pytest.mark.skipif(not (shutil.which("kubectl") or shutil.which("kustomize")),
                    reason="kubectl (kustomize) not installed")
def test_kustomize_staging_overlay_uses_its_own_namespace():
    r = run_check([FIXTURES / "kustomize-overlays"])
    staging = budget(r, "StatefulSet/staging/postgres")
    # usable = 100 (base postgresql.conf) - 3 = 97
    # api (staging): replicas 1 (overlays/staging) + surge ceil(1 x 25%) = 1 -> 2 pods
    #                x HikariCP 10 (base configMapGenerator) = 20
    assert (staging.usable, staging.peak) == (97, 20)
    assert budget(r, "StatefulSet/prod/postgres").peak == 132


def test_cnpg_cluster_pooler_and_apps():
    r = run_check([FIXTURES / "cnpg"])
    primary = budget(r, "cnpg:shop/orders-db")
    # usable = 200 (spec.postgresql.parameters.max_connections) - 3 = 197
    # orders-db-pooler-rw: (2 PgBouncer pods + 1 surge: CloudNativePG leaves the
    # Deployment's strategy to Kubernetes, 25% rounded up) x default_pool_size 25 (one
    # pool: orders/orders_app, reserve 0), plus the auth_query pool of (postgres,
    # cnpg_pooler_pgbouncer), the same size (auth_dbname postgres) = 3 x (25 + 25) = 150
    assert (primary.usable, primary.peak) == (197, 150)
    replicas = budget(r, "cnpg:shop/orders-db/replicas")
    # the -ro side: orders-db-pooler-ro (1 pod + 1 surge) x (10 + 10 for its auth_query
    # pool) = 40, plus nightly-export CronJob straight to orders-db-ro: parallelism 1 x
    # HikariCP 4 = 4 -> 44 spread over the 2 standbys by the -ro Service: 22 per instance
    assert (replicas.usable, replicas.total_peak, replicas.peak) == (197, 44, 22)


def test_zalando_cluster_with_pooler():
    r = run_check([FIXTURES / "zalando"])
    b = budget(r, "zalando:shop/acid-orders")
    # usable = 150 - 3 - 2 (Patroni's superuser sessions, advisor.facts.patroni) = 145
    # acid-orders-pooler: 3 pods; maxDBConnections 90 // 3 = 30 per pod,
    # default_pool_size 30 // 2 = 15, reserve 15 // 2 = 7 -> one pool 15 + 7 = 22 <= 30,
    # and the auth_query pool of (postgres, pooler) (auth_dbname postgres, its own
    # max_db_connections 30): 22 -> (3 + 1 surge: the operator sets no strategy,
    # Kubernetes' 25%) x 44 = 176
    assert (b.usable, b.peak) == (145, 176)


def test_crunchy_cluster_with_pgbouncer():
    r = run_check([FIXTURES / "crunchy"])
    b = budget(r, "crunchy:zoo/hippo")
    # usable = 300 (patroni dynamicConfiguration) - 3 - 2 (Patroni's sessions) = 295
    # hippo-pgbouncer: (2 replicas + 1 surge: PGO sets no maxSurge) x default_pool_size
    # 30 (config.global) for the one assumed pair and the auth_query pool of (that
    # database, _crunchypgbouncer) = 3 x 60 = 180
    assert (b.usable, b.peak) == (295, 180)


def test_bitnami_values_primary_and_read_replicas():
    r = run_check([FIXTURES / "bitnami-values"], CheckOptions(root=FIXTURES / "bitnami-values"))
    primary = budget(r, "bitnami-postgresql:shop/shop-postgresql-primary")
    # usable = 500 (primary.extendedConfiguration, values-prod.yaml) - 3 = 497
    # shop: replicaCount 6 + surge ceil(6 x 25%) = 2 -> 8 pods x HikariCP 25 = 200
    assert (primary.usable, primary.peak) == (497, 200)
    read = budget(r, "bitnami-postgresql:shop/shop-postgresql-read")
    assert read.usable == 197  # 200 (readReplicas.extendedConfiguration) - 3
    [pa110] = [f for f in r.findings if f.code == "PA110"]
    assert pa110.location.path == "charts/shop/values-prod.yaml"
    assert pa110.location.line == line_no(
        FIXTURES / "bitnami-values" / "charts" / "shop" / "values-prod.yaml",
        "max_connections = 200")


def test_sidecar_pgbouncer():
    r = run_check([FIXTURES / "sidecar-pgbouncer"])
    b = budget(r, "StatefulSet/web/postgres")
    # usable = 60 (-c max_connections=60) - 3 = 57
    # a PgBouncer sidecar per api pod: 8 replicas + surge ceil(8 x 25%) = 2 -> 10 pods
    # x min(PGBOUNCER_DEFAULT_POOL_SIZE 5, PGBOUNCER_MAX_DB_CONNECTIONS 6) = 50 <= 57
    assert (b.usable, b.peak) == (57, 50)
    assert "PA101" not in codes(r)


def test_keda_scaled_objects():
    r = run_check([FIXTURES / "keda"])
    b = budget(r, "StatefulSet/jobs/jobs-db")
    # usable = 200 - 3 = 197
    # order-worker: maxReplicaCount 30 + surge ceil(30 x 25%) = 8 -> 38 x 5 = 190
    # importer: no maxReplicaCount -> KEDA default 100 + surge 25 -> 125 x 2 = 250
    # peak = 440 > 197: oversubscribed
    assert (b.usable, b.peak) == (197, 440)
    assert contribution(b, "importer").factors[0].source.default
    assert "PA101" in codes(r)


def test_bitnami_statefulsets_are_budgeted_once():
    r = run_check([FIXTURES / "bitnami-values"])
    # only the two servers operator_entities builds: primary and read replicas
    assert sorted(b.server_id for b in r.budgets) == [
        "bitnami-postgresql:shop/shop-postgresql-primary",
        "bitnami-postgresql:shop/shop-postgresql-read"]
