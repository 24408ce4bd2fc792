"""A published program's pods are not the application a folder named like them holds
(audit of session 20 on aws-containers/retail-store-sample-app: the orders chart labels
its RabbitMQ and MySQL StatefulSets app.kubernetes.io/name=orders, like src/orders, and
they were read as the orders application: a HikariCP pool of 10 on RabbitMQ)."""

from __future__ import annotations

import pytest

from advisor.engine.check import scan
from advisor.engine.options import CheckOptions
from advisor.link.clients import _published_program
from tests.tree_helpers import write

APP_YML = """\
spring:
  datasource:
    url: jdbc:postgresql://orders-db:5432/orders
    hikari:
      maximum-pool-size: 7
"""
POM = "<project><dependencies><dependency><artifactId>HikariCP</artifactId>" \
      "</dependency></dependencies></project>\n"


def statefulset(name: str, image: str) -> str:
    return f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: {name}}}
spec:
  template:
    metadata:
      labels: {{app.kubernetes.io/name: orders}}
    spec:
      containers:
        - {{name: main, image: "{image}"}}
"""


@pytest.mark.parametrize("image", ["public.ecr.aws/docker/library/rabbitmq:3-management",
                                   "mysql:8.0", "docker.io/library/redis:7"])
def test_an_official_program_image_is_not_read_as_the_app(tmp_path, image):
    write(tmp_path, {"src/orders/src/main/resources/application.yml": APP_YML,
                     "src/orders/pom.xml": POM,
                     "k8s/broker.yaml": statefulset("orders-broker", image)})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    assert not [c for c in topo.clients if c.name == "orders-broker"]


def test_runtimes_and_own_images_still_are():
    assert _published_program("rabbitmq:3-management")
    assert _published_program("public.ecr.aws/docker/library/mysql:8.0")
    assert not _published_program("python:3.12")  # runs the repository's code
    assert not _published_program("eclipse-temurin:21-jre")
    assert not _published_program("ghcr.io/acme/orders:1.0")


def test_no_application_folder_parses_no_image(tmp_path, monkeypatch):
    """Without application folders or build contexts no workload's source is inferred,
    and the images are not looked at to say so (linking asks it of every workload)."""
    import advisor.link.clients as clients

    def refuse(image: str) -> bool:
        raise AssertionError(f"image {image} parsed with no application folder")

    monkeypatch.setattr(clients, "_published_program", refuse)
    write(tmp_path, {"k8s/db.yaml": statefulset("orders-rabbitmq", "rabbitmq:3-management")})
    topo = scan([tmp_path], CheckOptions(cache=False)).topology
    assert not [p for p in topo.problems if "AssertionError" in p.message]
