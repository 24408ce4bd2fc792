"""Peak pods from Job and KEDA mechanics (audit 6b, session 25): a Job runs no more pods
than completions remain (D8), a KEDA ScaledJob's Jobs are a workload of maxReplicaCount
Jobs x each Job's pods (D1: its pods were in no budget, "fits, peak 0"), and a
ScaledObject's paused-replicas holds its target above maxReplicaCount (D6)."""

from __future__ import annotations

import textwrap

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.link.topology import _autoscaler_maxima
from advisor.read.sources.k8s import k8s_objects
from advisor.read.workloads import configmap_index, workloads
from tests.tree_helpers import POSTGRES_DB, write


def objs(text: str):
    found, problems = k8s_objects(textwrap.dedent(text), "m.yaml")
    assert problems == []
    return found


def job(spec: str, kind: str = "Job") -> str:
    body = textwrap.indent(textwrap.dedent(spec).strip(), "  ")
    pod = """
  template:
    spec:
      containers:
        - {name: run, image: acme/run:1}
"""
    if kind == "CronJob":
        body = "  schedule: '0 * * * *'\n  jobTemplate:\n    spec:\n" + textwrap.indent(
            textwrap.dedent(spec).strip() + pod.replace("\n  ", "\n"), "      ")
        return f"apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: j}}\nspec:\n{body}\n"
    return f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\nspec:\n{body}{pod}"


@pytest.mark.parametrize(("kind", "spec", "pods", "label"), [
    ("Job", "parallelism: 40\ncompletions: 1", 1, "completions"),
    ("Job", "parallelism: 6\ncompletions: 2\ncompletionMode: Indexed", 2, "completions"),
    ("Job", "parallelism: 3\ncompletions: 5", 3, "parallelism"),
    ("Job", "parallelism: 4", 4, "parallelism"),  # completions unset: parallelism
    ("Job", "completions: 0", 0, "completions"),
    ("CronJob", "parallelism: 5\ncompletions: 2", 2, "completions"),
])
def test_a_job_runs_no_more_pods_than_completions(kind, spec, pods, label):
    (w,) = workloads(objs(job(spec, kind)), {})
    assert w.replicas.value == pods
    assert label in w.replicas.label
    if label == "completions":
        assert "below parallelism" in w.replicas.label
        assert w.replicas.source.key == "completions"


def scaled_job(spec: str = "", job_spec: str = "parallelism: 2",
               api: str = "keda.sh/v1alpha1") -> str:
    extra = textwrap.indent(textwrap.dedent(spec).strip(), "  ")
    inner = textwrap.indent(textwrap.dedent(job_spec).strip(), "    ")
    return f"""\
apiVersion: {api}
kind: ScaledJob
metadata: {{name: importer}}
spec:
{extra}
  jobTargetRef:
{inner}
    template:
      spec:
        containers:
          - name: importer
            image: acme/importer:2
            env:
              - {{name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/app"}}
              - {{name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE, value: "3"}}
  triggers:
    - {{type: rabbitmq, metadata: {{queueName: q, value: "1"}}}}
"""


@pytest.mark.parametrize(("spec", "job_spec", "pods"), [
    ("maxReplicaCount: 5", "parallelism: 2", 10),
    ("", "parallelism: 2", 200),  # KEDA's default maxReplicaCount 100
    ("maxReplicaCount: 5", "parallelism: 4\ncompletions: 1", 5),
    ("maxReplicaCount: 6\nminReplicaCount: 2", "parallelism: 1", 6),
    # maxReplicaCount unset: KEDA's 100 is counted beyond the minimum
    ("minReplicaCount: 3", "parallelism: 1", 103),
    # a minimum above the maximum: both are the maximum (scaledjob_types.go)
    ("maxReplicaCount: 4\nminReplicaCount: 9", "parallelism: 1", 8),
])
def test_a_scaled_job_is_a_workload_of_its_jobs_pods(spec, job_spec, pods):
    (w,) = workloads(objs(scaled_job(spec, job_spec)), {})
    assert w.kind == "ScaledJob"
    assert w.replicas.value == pods
    assert w.replicas.label.startswith("KEDA ScaledJob")
    (c,) = w.containers
    assert c.name == "importer"
    assert any(e.name == "SPRING_DATASOURCE_URL" for e in c.env)


def test_a_scaled_job_of_another_api_is_no_workload():
    assert workloads(objs(scaled_job(api="example.com/v1")), {}) == []


def test_a_scaled_job_no_longer_scales_a_job_of_its_name():
    found = objs(scaled_job("maxReplicaCount: 30") + "---\n" + job("parallelism: 1").replace(
        "name: j", "name: importer"))
    assert (None, "Job", "importer") not in _autoscaler_maxima(found)
    pods = {w.kind: w.replicas.value for w in workloads(found, configmap_index(found))}
    assert pods == {"ScaledJob": 60, "Job": 1}


def _budget(tmp_path, files: dict[str, str]):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, **files})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    return result, budget


def test_a_scaled_jobs_connections_are_in_its_servers_budget(tmp_path):
    # 100 Jobs (KEDA's default) x 1 pod x 3 connections = 300 > 47 usable
    result, budget = _budget(tmp_path, {"k8s/jobs.yaml": scaled_job(job_spec="parallelism: 1")})
    (c,) = budget.contributions
    assert c.who == "importer" and c.total == 300
    assert not budget.fits
    assert not [n for n in result.notices if "custom scalingStrategy" in n]


def test_a_custom_strategy_that_keeps_running_jobs_is_said(tmp_path):
    spec = """
        maxReplicaCount: 2
        scalingStrategy:
          strategy: custom
          customScalingQueueLengthDeduction: 0
          customScalingRunningJobPercentage: "0.5"
        """
    result, budget = _budget(tmp_path, {"k8s/jobs.yaml": scaled_job(spec, "parallelism: 1")})
    assert budget.contributions[0].total == 6
    assert [n for n in result.notices
            if "custom scalingStrategy" in n and "more than the 2 pods counted" in n]


PAUSED_APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: api
          image: acme/api:1
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/app"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE, value: "2"}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: api
  annotations:
    autoscaling.keda.sh/paused-replicas: "PAUSED"
spec:
  scaleTargetRef: {name: api}
  maxReplicaCount: 6
"""


@pytest.mark.parametrize(("paused", "pods", "label"), [
    ("30", 30, "paused-replicas"),  # held above the maximum
    ("3", 6, "maxReplicaCount"),  # unpaused, it scales up to the maximum again
    ("many", 6, "maxReplicaCount"),  # KEDA cannot parse it and scales nothing
])
def test_paused_replicas_above_the_maximum_is_the_peak(paused, pods, label):
    found = objs(PAUSED_APP.replace("PAUSED", paused))
    term = _autoscaler_maxima(found)[(None, "Deployment", "api")]
    assert term.value == pods
    assert label in term.label
    if label == "paused-replicas":
        assert term.source.line == 22


def test_paused_replicas_puts_a_deployment_over(tmp_path):
    # 30 pods x 2 = 60 > 47 usable; maxReplicaCount alone: 6 x 2 = 12, fits
    _result, budget = _budget(tmp_path, {"k8s/app.yaml": PAUSED_APP.replace("PAUSED", "30")})
    assert budget.contributions[0].total == 60
    assert not budget.fits
