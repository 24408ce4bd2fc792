"""Audit 13f N5: a base file that every kustomize overlay builds gave one finding per
overlay for the same line (IsraelIyonsi/eaas: three PA504 on its pgbouncer ini's
pool_mode line). The same finding is reported once, naming the overlays, with a
fingerprint that does not depend on which overlays have it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.engine.overlay_findings import merged_across_overlays
from advisor.model import Finding, Location, Severity
from tests.tree_helpers import write

BASE = {
    "deploy/base/kustomization.yaml": "resources: [bouncer.yaml, db.yaml, api.yaml]\n",
    "deploy/base/bouncer.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata: {name: bouncer-ini}
data:
  pgbouncer.ini: |
    [databases]
    shop = host=shop-db port=5432 dbname=shop

    [pgbouncer]
    listen_port = 6432
    pool_mode = transaction
    default_pool_size = 10
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bouncer}
spec:
  replicas: 1
  selector: {matchLabels: {app: bouncer}}
  template:
    metadata: {labels: {app: bouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:v1.23.1-p3
          volumeMounts: [{name: ini, mountPath: /etc/pgbouncer}]
      volumes: [{name: ini, configMap: {name: bouncer-ini}}]
---
apiVersion: v1
kind: Service
metadata: {name: bouncer}
spec:
  selector: {app: bouncer}
  ports: [{port: 6432}]
""",
    "deploy/base/db.yaml": """\
apiVersion: v1
kind: Service
metadata: {name: shop-db}
spec:
  selector: {app: shop-db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: shop-db}
spec:
  serviceName: shop-db
  replicas: 1
  selector: {matchLabels: {app: shop-db}}
  template:
    metadata: {labels: {app: shop-db}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.4
          args: ["-c", "max_connections=100"]
""",
    "deploy/base/api.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: ghcr.io/example/api:1.0
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://bouncer:6432/shop"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "5"}
""",
}


def _overlay(replicas: int) -> str:
    return f"resources: [../../base]\nreplicas:\n  - name: api\n    count: {replicas}\n"


@pytest.mark.skipif(not (shutil.which("kubectl") or shutil.which("kustomize")),
                    reason="kubectl (kustomize) not installed")
def test_the_same_line_in_three_overlays_is_one_finding(tmp_path: Path) -> None:
    write(tmp_path, {**BASE, "deploy/overlays/dev/kustomization.yaml": _overlay(1),
                     "deploy/overlays/staging/kustomization.yaml": _overlay(2),
                     "deploy/overlays/prod/kustomization.yaml": _overlay(6)})
    result = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    # each overlay is still budgeted apart
    assert sorted(b.server for b in result.budgets) == [
        "shop-db [deploy/overlays/dev]", "shop-db [deploy/overlays/prod]",
        "shop-db [deploy/overlays/staging]"]
    [pa504] = [f for f in result.findings if f.code == "PA504"]  # was three
    assert (pa504.location.path, pa504.location.line) == ("deploy/base/bouncer.yaml", 11)
    assert pa504.message.startswith("bouncer pools in transaction mode")
    assert pa504.message.endswith("(the same in the overlays deploy/overlays/dev, "
                                  "deploy/overlays/prod, deploy/overlays/staging)")
    assert "[deploy/overlays" not in pa504.fix.description
    assert pa504.subject == "Deployment/bouncer"  # no "deploy/overlays/dev|"
    # the same finding with one overlay fewer keeps its fingerprint (--base, --new-only)
    write(tmp_path, {"deploy/overlays/staging/kustomization.yaml": "resources: []\n"})
    fewer = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    [again] = [f for f in fewer.findings if f.code == "PA504"]
    assert again.fingerprint == pa504.fingerprint
    assert again.message.endswith("(the same in the overlays deploy/overlays/dev, "
                                  "deploy/overlays/prod)")


def _finding(label: str, peak: int) -> Finding:
    return Finding(code="PA111", name="n", severity=Severity.warning,
                   message=f"db [{label}]: {peak} connections", subject=f"{label}|db",
                   location=Location(path="db.yaml", line=3))


def test_findings_that_differ_by_more_than_the_overlay_stay_apart() -> None:
    overlays = ["o/a", "o/b", "o/c"]
    shared = Finding(code="PA111", name="n", severity=Severity.warning, message="x",
                     location=Location(path="other.yaml"))
    found = merged_across_overlays(
        [_finding("o/a", 10), shared, _finding("o/b", 20), _finding("o/c", 10)], overlays)
    assert [f.message for f in found] == [
        "db: 10 connections (the same in the overlays o/a, o/c)", "x",
        "db [o/b]: 20 connections"]
    # one overlay only: unchanged
    assert merged_across_overlays([_finding("o/a", 10)], overlays) == [_finding("o/a", 10)]
