"""Spilo run as a plain workload (no Zalando operator): max_connections and shared_buffers
as configure_spilo.py sets them from the container's memory limit (advisor/facts/spilo.py),
for the image itself and for an image the repository builds FROM it (twentyhq/twenty's
twenty-postgres-spilo shape); SPILO_CONFIGURATION's parameters win."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.facts.spilo import spilo_max_connections, spilo_shared_buffers_mb
from tests.tree_helpers import write


def spilo(image: str, memory: str | None, env: str = "") -> str:
    limits = f"""
          resources:
            limits: {{memory: {memory}}}""" if memory else ""
    return f"""
apiVersion: v1
kind: Service
metadata: {{name: crm-db}}
spec:
  selector: {{app: crm-db}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: crm-db}}
spec:
  strategy: {{type: Recreate}}
  template:
    metadata: {{labels: {{app: crm-db}}}}
    spec:
      containers:
        - name: db
          image: {image}
          env:
            - {{name: SPILO_PROVIDER, value: local}}{env}{limits}
"""


def budgets(root: Path):
    result = run_check([str(root)], CheckOptions())
    return result, {b.server: b for b in result.budgets}


def test_formula_matches_configure_spilo():
    # min(max(100, int(MB / 30)), 1000); shared_buffers int(MB / 5) in a pod
    assert [spilo_max_connections(mb) for mb in (1024, 3000, 3030, 8192, 40000)] == \
        [100, 100, 101, 273, 1000]
    assert spilo_shared_buffers_mb(1024) == 204


def test_plain_spilo_reads_its_memory_limit(tmp_path):
    write(tmp_path, {"k8s/db.yaml": spilo("ghcr.io/zalando/spilo-16:3.3-p2", "8Gi")})
    _, found = budgets(tmp_path)
    b = found["crm-db"]
    assert b.max_connections.value == 273
    src = b.max_connections.source
    assert "configure_spilo.py" in src.default and "8192 MB memory limit (k8s/db.yaml:" \
        in src.default
    assert b.version.value == 16
    (buffers,) = [t for t in b.memory.terms if "shared_buffers" in t.label]
    assert buffers.value == 1638 * 1048576 and "/ 5" in buffers.source.default


def test_plain_spilo_without_a_limit_is_at_least_100(tmp_path):
    write(tmp_path, {"k8s/db.yaml": spilo("registry.opensource.zalan.do/acid/spilo-15:3.0-p1",
                                          None)})
    _, found = budgets(tmp_path)
    b = found["crm-db"]
    assert b.max_connections.value == 100
    assert "at least 100" in b.max_connections.source.default


def test_image_built_from_spilo(tmp_path):
    # the repository's own image, FROM spilo-${POSTGRES_VERSION} (ARG default 15)
    write(tmp_path, {
        "k8s/db.yaml": spilo("acme/crm-postgres-spilo:latest", "12Gi"),
        "crm-postgres-spilo/Dockerfile": (
            "ARG POSTGRES_VERSION=15\nARG SPILO_VERSION=3.2-p1\n"
            "FROM ghcr.io/zalando/spilo-${POSTGRES_VERSION}:${SPILO_VERSION}\n"
            "RUN apt update\n")})
    result, found = budgets(tmp_path)
    b = found["crm-db"]
    assert b.max_connections.value == 409  # 12288 MB / 30
    assert b.version.value == 15
    assert any("runs Spilo" in n for n in result.notices)


def test_spilo_configuration_wins(tmp_path):
    env = """
            - name: SPILO_CONFIGURATION
              value: |
                bootstrap:
                  dcs:
                    postgresql:
                      parameters:
                        max_connections: 250"""
    write(tmp_path, {"k8s/db.yaml": spilo("ghcr.io/zalando/spilo-16:3.3-p2", "1Gi", env)})
    _, found = budgets(tmp_path)
    b = found["crm-db"]
    assert b.max_connections.value == 250
    assert b.max_connections.source.path == "k8s/db.yaml"
    text = (tmp_path / "k8s/db.yaml").read_text().splitlines()
    line = b.max_connections.source.line  # the variable's value
    assert "name: SPILO_CONFIGURATION" in text[line - 2] and "value: |" in text[line - 1]


def test_spilo_configuration_not_yaml_is_a_notice(tmp_path):
    env = """
            - {name: PATRONI_CONFIGURATION, value: "[a, b"}"""
    write(tmp_path, {"k8s/db.yaml": spilo("ghcr.io/zalando/spilo-16:3.3-p2", "1Gi", env)})
    result, found = budgets(tmp_path)
    assert found["crm-db"].max_connections.value == 100
    assert any("PATRONI_CONFIGURATION" in n and "not a YAML mapping" in n
               for n in result.notices)
