"""Twenty from its image, twentycrm/twenty (twentyhq/twenty's helm chart and k8s
manifests: the server and the worker were clients of unknown size, 1 per pod): per
process the core DataSource's pool and the workspace DataSource's, each
PG_POOL_MAX_CONNECTIONS (default 10), and a replica's when PG_DATABASE_REPLICA_URL is
set; PG_ENABLE_POOL_SHARING=false and 0.x images are unknown, never a default."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, deployment, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")
URL = "postgres://twenty:pw@db:5432/twenty"
IMAGE = "twentycrm/twenty:v1.14.0"


def pools_of(tmp_path, name: str):
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    return next(c for c in topo.clients if c.name == name)


def test_server_and_worker_defaults(tmp_path):
    write(tmp_path, {
        "k8s/db.yaml": DB,
        "k8s/server.yaml": deployment("server", IMAGE, {"PG_DATABASE_URL": URL}),
        "k8s/worker.yaml": deployment("worker", IMAGE, {"PG_DATABASE_URL": URL},
                                      command='["yarn", "worker:prod"]')})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.peak == 2 * 20 + 2 * 20 and not budget.unknown_clients
    client = pools_of(tmp_path, "worker")
    core, workspace = client.pools
    assert (core.size.value, workspace.size.value) == (10, 10)
    assert core.bound == workspace.bound == "default"
    assert "config-variables.ts" in workspace.size.source.default
    assert "typeorm.module.ts" in core.size.source.default
    assert workspace.route.host == "db"


@pytest.mark.parametrize("value, core, workspace", [("25", 25, 25), ("4", 10, 4)])
def test_pg_pool_max_connections(tmp_path, value, core, workspace):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/server.yaml": deployment(
        "server", IMAGE, {"PG_DATABASE_URL": URL, "PG_POOL_MAX_CONNECTIONS": value})})
    client = pools_of(tmp_path, "server")
    assert [p.size.value for p in client.pools] == [core, workspace]
    assert client.pools[1].size.source.key == "PG_POOL_MAX_CONNECTIONS"
    assert client.pools[1].size.source.path == "k8s/server.yaml"
    if core == 10:  # older images: the core DataSource sets no poolSize
        assert "max(4, 10)" in client.pools[0].note


def test_replica_pool_goes_to_the_replica(tmp_path):
    replica = POSTGRES_DB.replace("name: db", "name: replica").replace("app: db", "app: replica")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/replica.yaml": replica,
                     "k8s/server.yaml": deployment("server", IMAGE, {
                         "PG_DATABASE_URL": URL,
                         "PG_DATABASE_REPLICA_URL": "postgres://twenty:pw@replica/twenty"})})
    budgets = {b.server: b for b in run_check([str(tmp_path)],
                                              CheckOptions(cache=False)).budgets}
    assert budgets["db"].peak == 2 * 20
    assert budgets["replica"].peak == 2 * 10


@pytest.mark.parametrize("env, why", [
    ({"PG_ENABLE_POOL_SHARING": "false"}, "is false"),
    ({"PG_ENABLE_POOL_SHARING": None}, "Secret"),
    ({"PG_POOL_MAX_CONNECTIONS": None}, "PG_POOL_MAX_CONNECTIONS"),
    ({"PG_POOL_MAX_CONNECTIONS": "ten"}, "not a number"),
])
def test_unknown_never_a_default(tmp_path, env, why):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/server.yaml": deployment(
        "server", IMAGE, {"PG_DATABASE_URL": URL, **env})})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == ["server"] and budget.peak == 2
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert why in finding.message


def test_zero_x_images_are_not_read(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/server.yaml": deployment(
        "server", "twentycrm/twenty:v0.33.0", {"PG_DATABASE_URL": URL})})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients == ["server"]


def test_postgres_spilo_image_is_not_twenty(tmp_path):
    # twentycrm/twenty-postgres-spilo holds the "twentycrm/twenty" marker: not the app
    from advisor.read.apps.twenty import is_twenty

    assert is_twenty("docker.io/twentycrm/twenty:latest")
    assert not is_twenty("twentycrm/twenty-postgres-spilo:3.3-p2")
