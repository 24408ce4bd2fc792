"""A client whose database address is a `host:port` value of its own naming, and whose
source folder is named like its chart, not its workload (audit H, session 17:
aws-containers/retail-store-sample-app's orders chart printed 'fits, peak 0' for its
PostgreSQL with the HPA at 10 pods of HikariCP's 10)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.rule_pages import write_tree

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId>
  <artifactId>orders</artifactId>
  <version>0.1.0</version>
  <dependencies>
    <dependency>
      <groupId>com.zaxxer</groupId>
      <artifactId>HikariCP</artifactId>
    </dependency>
    <dependency>
      <groupId>org.postgresql</groupId>
      <artifactId>postgresql</artifactId>
    </dependency>
  </dependencies>
</project>
"""

SERVER = """apiVersion: v1
kind: Service
metadata:
  name: shop-orders-postgresql
spec:
  selector:
    app: orders-db
  ports:
    - port: 5432
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: shop-orders-postgresql
spec:
  replicas: 1
  template:
    metadata:
      labels:
        app: orders-db
    spec:
      containers:
        - name: postgres
          image: postgres:16.1
"""

CLIENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop-orders
  labels:
    app.kubernetes.io/name: orders
    app.kubernetes.io/instance: shop
spec:
  replicas: 9
  template:
    metadata:
      labels:
        app.kubernetes.io/name: orders
        app.kubernetes.io/instance: shop
    spec:
      containers:
        - name: orders
          image: registry.example/store-orders:1.0
          env:
            - name: STORE_ORDERS_PERSISTENCE_ENDPOINT
              value: {endpoint}
            - name: STORE_ORDERS_CACHE_ADDRESS
              value: redis:6379
"""


def _tree(tmp_path, endpoint="shop-orders-postgresql:5432"):
    write_tree(tmp_path, {
        "deploy/db.yaml": SERVER,
        "deploy/orders.yaml": CLIENT.format(endpoint=endpoint),
        "src/orders/pom.xml": POM,
        "src/orders/Dockerfile": "FROM eclipse-temurin:21-jre\nCOPY target/app.jar /app.jar\n",
        "src/cart/Dockerfile": "FROM node:22\n",
        "src/cart/package.json": "{}\n",
    })
    return run_check([str(tmp_path / "deploy")], CheckOptions(root=tmp_path))


def test_a_host_port_value_links_and_the_chart_name_finds_the_source(tmp_path):
    (budget,) = _tree(tmp_path).budgets
    (orders,) = budget.contributions
    assert orders.who == "shop-orders"
    # (9 + 3 surge) pods x HikariCP's default 10
    assert orders.total == 120 and budget.peak == 120 and not budget.peak_is_floor


def test_a_bare_name_or_loopback_value_is_not_taken_for_the_database(tmp_path):
    for endpoint in ("shop-orders-postgresql", "localhost:5432"):
        result = _tree(tmp_path, endpoint)
        (budget,) = result.budgets
        assert budget.contributions == [], endpoint
