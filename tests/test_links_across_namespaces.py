"""Links a real repository makes that were missed (audit of session 20): a KEDA
ScaledObject that says `namespace: default` scales the Deployment that says none
(AvilPage/keda-postgresql-demo), a libpq keyword/value connection string in a variable
of any name names its host (the same demo), and a client of another namespace reaches a
Service written with no namespace by its short name (argoproj/argo-workflows'
quick-start, applied with `kubectl apply -n argo`). Each had left a server at "fits,
peak 0"."""

from __future__ import annotations

import shutil

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

DB = """
apiVersion: v1
kind: Service
metadata: {name: postgres-service}
spec:
  selector: {app: postgres}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: postgres}
spec:
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers:
        - {name: postgres, image: "postgres:13"}
"""


def consumer(namespace: str = "") -> str:
    ns = f", namespace: {namespace}" if namespace else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: task-consumer{ns}}}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: consumer
          image: acme/consumer:1
          env:
            - name: POSTGRES_CONNECTION_STRING
              value: "host=postgres-service dbname=taskdb user=taskuser password=x"
            - {{name: DB_POOL_SIZE, value: "1"}}
"""


SCALER = """
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: consumer-scaler, namespace: default}
spec:
  scaleTargetRef: {name: task-consumer}
  maxReplicaCount: 50
"""


def test_keyword_value_string_and_a_default_namespace_scaler(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/consumer.yaml": consumer(),
                     "k8s/scaler.yaml": SCALER})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    (c,) = [c for c in budget.contributions if c.who == "task-consumer"]
    # 50 pods (KEDA) + 13 surge (25% of 50, rounded up), each at least one connection
    assert c.total >= 63, c
    assert any(f.label.startswith("KEDA") and f.value == 50 for f in c.factors)
    assert not budget.fits


ARGO_SERVER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: argo-server, namespace: argo}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: argo-server
          image: acme/server:1
          env:
            - {name: DATABASE_URL, value: "postgresql://argo@postgres-service:5432/argo"}
            - {name: DB_POOL_SIZE, value: "1"}
"""


def test_a_namespaceless_service_of_the_same_build_is_reached_from_its_namespace(tmp_path):
    """One kustomize build (argo-workflows' quick-start): argo-server says namespace argo,
    the postgres component says none, and the build is applied with `kubectl apply -n
    argo`. Plain manifests keep their namespaces apart
    (test_linking's bare-name test: bank-of-anthos' staging pods)."""
    if shutil.which("kubectl") is None and shutil.which("kustomize") is None:
        pytest.skip("kubectl or kustomize is needed to build the overlay")
    write(tmp_path, {"quick-start/db.yaml": DB, "quick-start/server.yaml": ARGO_SERVER,
                     "quick-start/kustomization.yaml":
                         "resources:\n  - db.yaml\n  - server.yaml\n"})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert [c.who for c in budget.contributions] == ["argo-server"]
    assert not [f for f in result.findings if f.code == "PA107"]
    assert any("is written with no namespace by the same build" in n
               for n in result.notices), result.notices
    # the same files as plain manifests (no kustomization): not linked, PA107
    (tmp_path / "quick-start" / "kustomization.yaml").unlink()
    result = run_check([str(tmp_path)], CheckOptions())
    assert result.budgets[0].contributions == []
    assert [f for f in result.findings if f.code == "PA107"]
