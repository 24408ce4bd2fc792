"""Vert.x's reactive PostgreSQL client (apps/vertx.py): a pool per PgPool.pool(...) the
code creates, of PoolOptions().setMaxSize(n) or the default 4 (vertx-sql-client
PoolOptions.java DEFAULT_MAX_SIZE at 3.9.16 to 5.0.0). Before: 'no pool of a known
stack', PA106, peak a floor."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

K8S = """
apiVersion: v1
kind: Service
metadata: {name: orders-db}
spec:
  selector: {app: orders-db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: orders-db}
spec:
  template:
    metadata: {labels: {app: orders-db}}
    spec:
      containers:
        - {name: postgres, image: "postgres:16"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: orders}
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: orders
          image: acme/orders:1.0
          env:
            - {name: DB_HOST, value: orders-db}
"""
POM = ("<project><dependencies><dependency><groupId>io.vertx</groupId>"
       "<artifactId>vertx-pg-client</artifactId><version>4.5.10</version></dependency>"
       "</dependencies></project>\n")


def _code(options: str, extra: str = "") -> str:
    return ("package org.acme;\npublic class Db {\n"
            "  static Pool create(Vertx vertx) {\n"
            "    PgConnectOptions connect = new PgConnectOptions()"
            ".setHost(System.getenv(\"DB_HOST\")).setDatabase(\"orders\");\n"
            f"    PoolOptions poolOptions = new PoolOptions(){options};\n"
            f"{extra}"
            "    return PgPool.pool(vertx, connect, poolOptions);\n  }\n}\n")


def check(tmp_path, code: str):
    write(tmp_path, {"pom.xml": POM, "src/main/java/org/acme/Db.java": code,
                     "Dockerfile": "FROM eclipse-temurin:17\nCOPY target/app.jar /app.jar\n"
                                   'CMD ["java", "-jar", "/app.jar"]\n',
                     "k8s/all.yaml": K8S})
    return run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))


@pytest.mark.parametrize(("options", "peak", "fits"), [
    (".setMaxSize(40)", 120, False),  # 3 x 40 = 120 > 97: OVER by 23
    ("", 12, True),  # 3 x 4 (DEFAULT_MAX_SIZE) = 12
])
def test_pool_options_max_size_or_the_default_4(tmp_path, options, peak, fits):
    (budget,) = check(tmp_path, _code(options)).budgets
    assert budget.unknown_clients == [] and budget.peak == peak and budget.fits is fits


def test_several_verticle_instances_are_unknown_not_one_pool(tmp_path):
    """setInstances(n): each instance creates its own (unshared) pool: not one pool."""
    result = check(tmp_path, _code(".setMaxSize(5)", "    new DeploymentOptions()"
                                                     ".setInstances(4);\n"))
    (budget,) = result.budgets
    assert budget.unknown_clients == ["orders"]
    assert any("Vert.x PoolOptions maxSize" in f.message
               for f in result.findings if f.code == "PA106")


def test_a_size_not_read_is_unknown_not_the_default(tmp_path):
    result = check(tmp_path, _code(".setMaxSize(config.getInteger(\"pool\"))"))
    (budget,) = result.budgets
    assert budget.unknown_clients == ["orders"]


def test_a_pooled_client_is_a_pool_too(tmp_path):
    """PgPool.client(vertx, connect, options): a pooled SqlClient of maxSize 40."""
    code = _code(".setMaxSize(40)").replace("PgPool.pool(", "PgPool.client(")
    (budget,) = check(tmp_path, code).budgets
    assert budget.peak == 120 and not budget.fits
