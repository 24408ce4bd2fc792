"""Unleash from its image (audit 6 h3 on Unleash/helm-charts: the server was a client of
unknown size, 1 per pod, and DATABASE_POOL_MAX=20 set in the chart's env hid a server
over by 3): one knex pool of DATABASE_POOL_MAX (default 4) per pod, 2 at start while
the migration holds its lock and db-migrate's connection."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")
IMAGE = "unleashorg/unleash-server:7.5.0"
DB_ENV = {"DATABASE_HOST": "db", "DATABASE_PORT": "5432", "DATABASE_USERNAME": "unleash",
          "DATABASE_NAME": "unleash"}


def deployment(name: str, image: str, env: dict[str, str | None], replicas: int = 2) -> str:
    """The unleash chart's shape: DATABASE_* env, a value or a Secret's (None)."""
    lines = "".join(
        f"            - {{name: {k}, value: \"{v}\"}}\n" if v is not None else
        f"            - {{name: {k}, valueFrom: {{secretKeyRef: {{name: s, key: {k}}}}}}}\n"
        for k, v in env.items())
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  template:
    spec:
      containers:
        - name: unleash
          image: {image}
          env:
{lines}"""


def pool_of(tmp_path, name: str = "unleash"):
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    (pool,) = next(c for c in topo.clients if c.name == name).pools
    return pool


def test_chart_defaults_two_replicas_and_a_surge_of_four(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/unleash.yaml": deployment("unleash", IMAGE,
                                                                       DB_ENV)})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.peak == (2 + 1) * 4 and not budget.unknown_clients
    pool = pool_of(tmp_path)
    assert pool.bound == "default" and pool.route.dbname == "unleash"


@pytest.mark.parametrize("env, size, bound", [
    ({"DATABASE_POOL_MAX": "20"}, 20, "fixed"),
    ({"DATABASE_POOL_MAX": " 12abc"}, 12, "fixed"),  # Number.parseInt
    ({"DATABASE_POOL_MAX": "many"}, 4, "default"),  # NaN: parseEnvVarNumber's default
    ({"DATABASE_POOL_MAX": ""}, 4, "default"),
    ({"DATABASE_POOL_MAX": "1"}, 2, "fixed"),  # the migration's lock + db-migrate
    ({"DATABASE_POOL_MAX": "1", "MIGRATION_LOCK": "false"}, 1, "fixed"),
    ({"DATABASE_POOL_MAX": "1", "DATABASE_DISABLE_MIGRATION": "true"}, 1, "fixed"),
])
def test_pool_max_as_unleash_reads_it(tmp_path, env, size, bound):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/unleash.yaml": deployment(
        "unleash", IMAGE, {**DB_ENV, **env})})
    pool = pool_of(tmp_path)
    assert (pool.size.value, pool.bound) == (size, bound)


def test_database_url_wins_over_database_host(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/unleash.yaml": deployment("unleash", IMAGE, {
        **DB_ENV, "DATABASE_HOST": "elsewhere", "DATABASE_POOL_MAX": "7",
        "DATABASE_URL": "postgres://unleash:x@db:5432/flags"})})
    pool = pool_of(tmp_path)
    assert (pool.route.host, pool.route.dbname) == ("db", "flags")
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.peak == 3 * 7


@pytest.mark.parametrize("image, env", [
    ("unleashorg/unleash-enterprise:7.5.0", {}),  # its source is not public
    (IMAGE, {"DATABASE_POOL_MAX": None}),  # a Secret's value
    ("unleashorg/unleash-server:3.17.6", {}),  # before v4's create-config.ts
])
def test_unknown_where_the_pool_is_not_read(tmp_path, image, env):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/unleash.yaml": deployment(
        "unleash", image, {**DB_ENV, **env})})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients == ["unleash"]
