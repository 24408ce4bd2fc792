"""Supabase's services from their images (audit of session 21 on
supabase-community/supabase-kubernetes: Auth, Storage and postgres-meta were clients of
unknown size, 1 per pod, and PostgREST's LISTEN connection was not counted; with the
chart's autoscalers on, the server is over while the tool said "cannot tell")."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, deployment, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")


def pools_of(tmp_path, name: str):
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    return next(c for c in topo.clients if c.name == name).pools


URL = "postgres://supabase_admin:x@db:5432/postgres"


@pytest.mark.parametrize("env, size, bound", [
    ({}, 0, "unbounded"),
    ({"GOTRUE_DB_MAX_POOL_SIZE": "0"}, 0, "unbounded"),
    ({"GOTRUE_DB_MAX_POOL_SIZE": "15"}, 15, "fixed"),
])
def test_auth_pool_is_unlimited_unless_max_pool_size(tmp_path, env, size, bound):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/auth.yaml": deployment(
        "auth", "supabase/gotrue:v2.177.0", {"GOTRUE_DB_DATABASE_URL": URL, **env})})
    (pool,) = pools_of(tmp_path, "auth")
    assert (pool.size.value, pool.bound) == (size, bound)
    if not env:
        assert "GOTRUE_DB_MAX_POOL_SIZE 0" in pool.size.source.label()


def test_auth_conn_percentage_is_a_share_of_the_server_not_known_here(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/auth.yaml": deployment(
        "auth", "public.ecr.aws/supabase/auth:v2.196.0",
        {"DATABASE_URL": URL, "GOTRUE_DB_CONN_PERCENTAGE": "30"})})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients == ["auth"]


def test_storage_pool_queue_and_workers(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/storage.yaml": deployment("storage", "supabase/storage-api:v1.60.4",
                                                    {"DATABASE_URL": URL}),
                     "k8s/storage2.yaml": deployment("storage2", "supabase/storage-api:v1.70.6", {
                         "DATABASE_URL": URL, "DATABASE_MAX_CONNECTIONS": "30",
                         "WORKERS_NUM": "4", "PG_QUEUE_ENABLE": "true"}, replicas=1)})
    (pool,) = pools_of(tmp_path, "storage")
    assert (pool.size.value, pool.bound) == (20, "default")
    main, queue = pools_of(tmp_path, "storage2")
    assert main.per_pod() == 4 * 8  # ceil(30 / 4) per worker
    assert (queue.size.value, queue.bound) == (4, "default")
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.peak == 2 * 20 + 1 * (32 + 4)


def test_storage_multi_tenant_is_unknown(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/storage.yaml": deployment(
        "storage", "supabase/storage-api:v1.60.4",
        {"DATABASE_URL": URL, "MULTI_TENANT": "true"})})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients == ["storage"]


def test_postgres_meta_opens_one_connection_per_request_with_no_limit(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/meta.yaml": deployment(
        "meta", "supabase/postgres-meta:v0.91.0",
        {"PG_META_DB_HOST": "db", "PG_META_DB_NAME": "postgres",
         "PG_META_DB_USER": "supabase_admin", "DATABASE_URL": URL})})
    (pool,) = pools_of(tmp_path, "meta")
    assert pool.bound == "unbounded"
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unbounded_clients == ["meta"]


@pytest.mark.parametrize("image, env, per_pod", [
    ("postgrest/postgrest:v12.2.3", {}, 11),
    ("postgrest/postgrest:v12.2.3", {"PGRST_DB_CHANNEL_ENABLED": "False"}, 10),
    ("postgrest/postgrest:v12.2.3", {"PGRST_DB_CHANNEL_ENABLED": "0"}, 10),
    ("postgrest/postgrest:v12.2.3", {"PGRST_DB_POOL": "20"}, 21),
    ("postgrest/postgrest:v7.0.1", {}, 10),  # the listener is v8.0.0's
])
def test_postgrest_listener_connection(tmp_path, image, env, per_pod):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/rest.yaml": deployment(
        "rest", image, {"PGRST_DB_URI": URL, **env})})
    assert sum(p.per_pod() for p in pools_of(tmp_path, "rest")) == per_pod


def test_storage_pool_url_from_a_secret_is_not_charged_to_database_url(tmp_path):
    """DATABASE_POOL_URL wins over DATABASE_URL (client.ts `databasePoolURL ||
    databaseURL`): set from a Secret, where the pool goes is not known, and it is not
    the server DATABASE_URL names: the pool is on no route (a part of the client no budget
    holds), the workload unplaced, so every server's peak is a floor (it was unknown on
    DATABASE_URL's server alone, and every other server's peak read as complete)."""
    manifest = deployment("storage", "supabase/storage-api:v1.60.4", {"DATABASE_URL": URL})
    manifest += ("            - name: DATABASE_POOL_URL\n"
                 "              valueFrom: {secretKeyRef: {name: pooler, key: url}}\n")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/storage.yaml": manifest})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients == ["storage"] and budget.peak == 2
    assert budget.unplaced_clients == ["storage"]
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    parts = {c.id: c for c in topo.clients}
    (pool,) = parts["Deployment/storage>unknown-database"].pools
    assert (pool.label, pool.size.value, pool.route) == (
        "Supabase Storage DATABASE_MAX_CONNECTIONS", 20, None)
    assert "DATABASE_POOL_URL (k8s/storage.yaml:15)" in pool.route_unknown
    assert parts["Deployment/storage"].pools == []
