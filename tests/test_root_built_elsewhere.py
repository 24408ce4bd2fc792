"""A published image beside a repository whose builds all run from sub-folders is not
the root's code (audit 39). benanaktaspusulait/keycloackkafkaevent's shape: a parent
pom.xml at the root, the service built from its module folder by compose, and a broker
StatefulSet of a vendor's image took the root (its Quarkus pool, no host read), which
made every peak a floor; skanehira/url-shortener's kibana took its Cargo workspace.
Our own tree, in their shape."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.locate import maybe_built_here
from tests.tree_helpers import write

PARENT_POM = """<project>
  <artifactId>events-parent</artifactId>
  <packaging>pom</packaging>
  <modules><module>events-service</module></modules>
  <dependencies>
    <dependency><groupId>io.quarkus</groupId><artifactId>quarkus-jdbc-postgresql</artifactId></dependency>
  </dependencies>
</project>
"""
MODULE_POM = PARENT_POM.replace("events-parent", "events-service").replace(
    "<packaging>pom</packaging>\n  <modules><module>events-service</module></modules>\n", "")
COMPOSE = """services:
  event-service:
    build: {context: ./events-service, dockerfile: src/main/docker/Dockerfile.jvm}
    image: localhost:5000/acme-event-service:latest
"""
K8S = """
apiVersion: v1
kind: Service
metadata: {name: postgres}
spec: {selector: {app: postgres}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: postgres}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers: [{name: postgres, image: "postgres:16"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: event-service}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: event-service
          image: localhost:5000/acme-event-service:latest
          env:
            - {name: QUARKUS_DATASOURCE_JDBC_URL, value: "jdbc:postgresql://postgres:5432/events"}
            - {name: QUARKUS_DATASOURCE_JDBC_MAX_SIZE, value: "5"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: broker}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - {name: broker, image: "registry.streamco.example/streamco/broker:v24"}
"""


def test_a_vendor_image_does_not_take_the_root_whose_builds_run_elsewhere(tmp_path):
    write(tmp_path, {"pom.xml": PARENT_POM, "docker-compose.yml": COMPOSE,
                     "events-service/pom.xml": MODULE_POM,
                     # Quarkus' layout: the Dockerfiles are in src/main/docker/
                     "events-service/src/main/docker/Dockerfile.jvm":
                         "FROM eclipse-temurin:21\n",
                     # the listener module is a jar Keycloak loads, not an image
                     "events-listener/pom.xml": MODULE_POM.replace("events-service",
                                                                   "events-listener"),
                     "events-service/src/main/resources/application.properties":
                         "quarkus.datasource.db-kind=postgresql\n",
                     "k8s/all.yaml": K8S})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.unplaced_clients == [] and not budget.peak_is_floor
    assert budget.peak == 10 and budget.fits  # 2 pods x max-size 5
    assert not any("broker: application source inferred" in n for n in result.notices)


def test_elastic_and_redpanda_registries_are_published():
    assert not maybe_built_here("docker.elastic.co/kibana/kibana:8.11.0")
    assert not maybe_built_here("docker.redpanda.com/redpandadata/redpanda:latest")
    assert not maybe_built_here("redpandadata/redpanda:v24.1.1")
