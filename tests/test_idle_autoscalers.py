"""Audit 24 (session 28): an autoscaler whose scaleTargetRef is no object read scales
nothing; a notice says so (audit 21 #2: it was ignored without a word)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, deployment, write

# --- an autoscaler that scales nothing --------------------------------------------------

HPA_POD = """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: backend-hpa}
spec:
  scaleTargetRef: {apiVersion: v1, kind: Pod, name: backend}
  minReplicas: 1
  maxReplicas: 8
"""


def test_an_autoscaler_whose_target_is_no_object_is_said(tmp_path):
    """erichsilveira/fiap-soft-arch-production-service@93969aeb's shape: the HPA scales
    `kind: Pod` backend; the Deployment is backend-deployment, 2 replicas. Kubernetes
    scales nothing: the budget's 2 pods are right, and a notice says why the HPA's 8 is
    in none (before: nothing said)."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/hpa.yaml": HPA_POD,
                     "k8s/app.yaml": deployment(
                         "backend-deployment", "acme/backend:1",
                         {"DATABASE_URL": "postgres://u:p@db:5432/app"}, replicas=2)})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    idle = [n for n in result.notices if "scales nothing" in n]
    assert idle == [
        "HorizontalPodAutoscaler backend-hpa (k8s/hpa.yaml:2) scales Pod backend, which no "
        "object read is (namespace default): it scales nothing, and its HPA maxReplicas 8 "
        "is in no budget (check scaleTargetRef's kind and name); Deployment "
        "backend-deployment (k8s/app.yaml:2) is counted with its own replicas, 2"]
    # an autoscaler of a workload that is there: no such notice
    write(tmp_path, {"k8s/hpa.yaml": HPA_POD.replace("apiVersion: v1, kind: Pod, name: backend",
                                                     "kind: Deployment, name: "
                                                     "backend-deployment")})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    assert not [n for n in result.notices if "scales nothing" in n]


KEDA_NAMED_WRONG = """
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: orders-scaler}
spec:
  scaleTargetRef: {name: order}
  triggers:
    - {type: cpu, metadata: {value: "60"}}
"""


def test_a_scaled_object_naming_no_workload_is_said(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/keda.yaml": KEDA_NAMED_WRONG,
                     "k8s/app.yaml": deployment(
                         "orders", "acme/orders:1",
                         {"DATABASE_URL": "postgres://u:p@db:5432/app"}, replicas=3)})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    (idle,) = [n for n in result.notices if "scales nothing" in n]
    assert idle.startswith("ScaledObject orders-scaler (k8s/keda.yaml:2) scales Deployment "
                           "order, which no object read is")
    assert "KEDA ScaledObject maxReplicaCount 100 is in no budget" in idle
    assert idle.endswith("Deployment orders (k8s/app.yaml:2) is counted with its own "
                         "replicas, 3")
