"""Argo Rollouts peaks: a traffic-routed canary beside its full stable ReplicaSet, a
Rollout running a Deployment's template (workloadRef), Argo's own defaults cited."""

from __future__ import annotations

import textwrap

import pytest

from advisor.budget.arith import formula
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.sources.k8s import k8s_objects
from advisor.read.workloads import base_replicas, surge
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write


def rollout(strategy: str, replicas: str = "replicas: 8") -> object:
    text = textwrap.dedent("""
        apiVersion: argoproj.io/v1alpha1
        kind: Rollout
        metadata: {name: shop}
        spec:
          REPLICAS
          strategy:
            STRATEGY
          template: {spec: {containers: [{name: a, image: x}]}}
        """).replace("REPLICAS", replicas).replace(
        "STRATEGY", textwrap.indent(textwrap.dedent(strategy).strip(), " " * 4).lstrip())
    (obj,), problems = k8s_objects(text, "r.yaml")
    assert problems == []
    return obj


ROUTED = """
canary:
  trafficRouting: {nginx: {stableIngress: shop}}
  steps:
"""


@pytest.mark.parametrize(("steps", "peak", "extra"), [
    # the canary reaches full weight after the last step, beside the full stable
    ("    - setWeight: 20\n    - pause: {}\n    - setWeight: 50\n", 8, 8),
    ("    []\n", 8, 8),  # no steps: straight to full weight
    ("    - setWeight: 33\n", 10, 10),
    ("    - setWeight: 10\n", 20, 20),  # under an HPA: its maximum, doubled
])
def test_a_traffic_routed_canary_doubles_the_replicas(steps, peak, extra):
    found = surge(rollout(ROUTED + steps), peak)
    assert found is not None and found.value == extra
    assert "surge" in found.label and "traffic routing" in found.label
    assert found.source.line == 9  # the trafficRouting key


def test_a_set_canary_scale_above_the_replicas_is_the_canary_peak():
    obj = rollout(ROUTED + "    - setCanaryScale: {replicas: 12}\n    - setWeight: 5\n")
    assert surge(obj, 8).value == 12
    weighted = rollout(ROUTED + "    - setCanaryScale: {weight: 150}\n")
    assert surge(weighted, 8).value == 12  # ceil(8 x 150 / 100)


def test_min_pods_per_replica_set_raises_the_canary():
    obj = rollout(ROUTED.replace("canary:\n", "canary:\n  minPodsPerReplicaSet: 3\n")
                  + "    - setWeight: 10\n", replicas="replicas: 2")
    assert surge(obj, 2).value == 3


def test_dynamic_stable_scale_sizes_the_stable_for_the_lower_weight():
    obj = rollout(ROUTED.replace("canary:\n", "canary:\n  dynamicStableScale: true\n")
                  + "    - setWeight: 20\n    - setWeight: 50\n")
    # 50 -> 100: canary 10 beside the stable still at 50% (5): 15 pods of 10
    found = surge(obj, 10)
    assert found.value == 5 and "setWeight 50 to 100" in found.label
    # no steps: 0 -> 100, the stable at full until traffic leaves it
    assert surge(rollout(ROUTED.replace("canary:\n", "canary:\n  dynamicStableScale: true\n")
                         + "    []\n"), 10).value == 10


def test_a_basic_canary_keeps_max_surge_and_cites_argo_defaults():
    obj = rollout("canary:\n  steps:\n  - setWeight: 33\n", replicas="")
    found = surge(obj, 10)
    # Argo >= 1.2 never exceeds replicas + maxSurge (canary.go maxReplicaCountAllowed)
    assert found.value == 3
    assert found.source.default == "Argo Rollouts default: maxSurge 25%"
    assert base_replicas(obj).source.default == "Argo Rollouts default: spec.replicas unset"


def test_a_preview_replica_count_is_added_to_the_replicas():
    found = surge(rollout("blueGreen: {activeService: shop, previewReplicaCount: 2}"), 8)
    assert found.value == 2 and "surge" in found.label  # the report shows it as "+ 2"


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: REPLICAS
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: app
          image: acme/api:1.0
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/app"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE, value: "2"}
"""

REF_ROLLOUT = """
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: api}
spec:
  replicas: 6
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: api SCALE}
  strategy:
    blueGreen: {activeService: api}
"""


def test_a_rollout_runs_the_template_its_workload_ref_names(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/deployment.yaml": DEPLOYMENT.replace("REPLICAS", "0"),
                     "k8s/rollout.yaml": REF_ROLLOUT.replace(" SCALE", "")})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    # (0 + 0) x 2 for the Deployment scaled to 0, (6 + 6 preview) x 2 for the Rollout
    assert budget.peak == 24 and budget.peak <= budget.usable
    texts = [formula(c) for c in budget.contributions]
    assert any(t.startswith("(6 (Rollout replicas") and "blue-green" in t for t in texts)


def test_workload_ref_peak_is_over_and_the_advice_counts_the_rollouts_pods(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB.replace("max_connections=50", "max_connections=20"),
                     "k8s/deployment.yaml": DEPLOYMENT.replace("REPLICAS", "0"),
                     "k8s/rollout.yaml": REF_ROLLOUT.replace(" SCALE", "")})
    result = run_check([str(tmp_path)], CheckOptions())
    (finding,) = [f for f in result.findings if f.code == "PA101"]
    assert "peak 24 connections > 17 usable" in finding.message
    # the share is the Rollout's 12 pods', not the same-named Deployment's 0
    assert "over 12 pods allows 1 per process" in finding.detail
    assert "over 0 pods" not in finding.detail


def test_workload_ref_scale_down_keeps_the_deployment_as_written(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/deployment.yaml": DEPLOYMENT.replace("REPLICAS", "4"),
                     "k8s/rollout.yaml": REF_ROLLOUT.replace(" SCALE", ", scaleDown: onsuccess")})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.peak == (4 + 1) * 2 + (6 + 6) * 2
    assert any("scaleDown onsuccess" in n for n in result.notices)


def test_a_workload_ref_the_repository_does_not_hold_is_said(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/rollout.yaml": REF_ROLLOUT.replace(" SCALE", "")})
    result = run_check([str(tmp_path)], CheckOptions())
    assert any("Rollout/api: its pod template is Deployment/api" in n
               for n in result.notices)


def test_a_rollout_and_its_deployment_of_one_name_are_told_apart(tmp_path):
    # the same name in one namespace: each shown as Kind/name, not "0 (api) + 24 (api)"
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/deployment.yaml": DEPLOYMENT.replace("REPLICAS", "0"),
                     "k8s/rollout.yaml": REF_ROLLOUT.replace(" SCALE", "")})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert sorted(c.who for c in budget.contributions) == ["Deployment/api", "Rollout/api"]
