"""Workload reading: replicas, autoscalers, surge rounding, env resolution, quantities."""

from __future__ import annotations

import textwrap

import pytest

from advisor.link.topology import _autoscaler_maxima
from advisor.read.sources.k8s import k8s_objects
from advisor.read.workloads import configmap_index, parse_quantity, surge, workloads


def objs(text: str):
    found, problems = k8s_objects(textwrap.dedent(text), "m.yaml")
    assert problems == []
    return found


DEPLOY = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: app
          image: acme/web:1
          envFrom:
            - configMapRef: {name: web-env}
          env:
            - name: POOL
              value: "7"
            - name: URL
              value: postgres://$(DB_HOST):5432/app
            - name: DB_PASSWORD
              valueFrom:
                secretKeyRef: {name: web-secret, key: password}
          resources:
            limits: {memory: 512Mi, cpu: 1500m}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-env
data:
  POOL: "3"
  DB_HOST: db.prod.svc
---
apiVersion: v1
kind: Secret
metadata:
  name: web-secret
data:
  password: aHVudGVyMg==
"""


def test_env_precedence_expansion_and_sources():
    found = objs(DEPLOY)
    (w,) = workloads(found, configmap_index(found))
    env = {e.name: e for e in w.containers[0].env}
    assert env["POOL"].value == "7"  # env beats envFrom
    assert env["POOL"].source.line == 19
    assert env["DB_HOST"].source.label() == "m.yaml:34"
    assert env["URL"].value == "postgres://db.prod.svc:5432/app"  # $(VAR) expansion
    assert env["DB_PASSWORD"].secret is True
    assert w.replicas.value == 3 and w.replicas.source.line == 7


def test_resource_limits_parsed():
    found = objs(DEPLOY)
    (w,) = workloads(found, configmap_index(found))
    c = w.containers[0]
    assert c.memory_limit.value == 512 * 2**20
    assert c.cpu_limit.value == pytest.approx(1.5)


@pytest.mark.parametrize("text,value", [
    ("2Gi", 2 * 2**30), ("512M", 512e6), ("500m", 0.5), ("1e9", 1e9), ("128974848", 128974848),
    ("1.5Gi", 1.5 * 2**30), ("bogus", None),
])
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("spec,peak,expected", [
    ("", 40, 10),                                      # default 25% of 40
    ("", 3, 1),                                        # 0.75 rounds up to 1
    ("strategy: {rollingUpdate: {maxSurge: 30%}}", 7, 3),  # 2.1 -> 3
    ("strategy: {rollingUpdate: {maxSurge: 2}}", 40, 2),
    ("strategy: {rollingUpdate: {maxSurge: 0}}", 40, None),
    ("strategy: {type: Recreate}", 40, None),
])
def test_surge_rounds_up_like_kubernetes(spec, peak, expected):
    (obj,) = objs(f"""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: web}}
        spec:
          {spec}
          template: {{spec: {{containers: [{{name: a, image: x}}]}}}}
        """)
    found = surge(obj, peak)
    assert (found.value if found else None) == expected


@pytest.mark.parametrize("api,spec,expected", [
    ("extensions/v1beta1", "", 1),  # its default maxSurge is 1, not 25% of 40
    ("extensions/v1beta1", "strategy: {rollingUpdate: {maxSurge: 30%}}", 12),
    ("extensions/v1beta1", "strategy: {type: Recreate}", None),
    ("apps/v1beta2", "", 10),
])
def test_an_extensions_v1beta1_deployment_surges_by_one(api, spec, expected):
    """Kubernetes before 1.16 served Deployments as extensions/v1beta1, whose
    RollingUpdateDeployment defaults maxSurge to 1 (API reference 1.5: "By default, a
    value of 1 is used"); apps/v1beta1 on default to 25% (Nor145/phoenixK8s)."""
    (obj,) = objs(f"""
        apiVersion: {api}
        kind: Deployment
        metadata: {{name: web}}
        spec:
          {spec}
          template: {{spec: {{containers: [{{name: a, image: x}}]}}}}
        """)
    found = surge(obj, 40)
    assert (found.value if found else None) == expected
    if found is not None and not spec:
        assert found.source.default is not None and "maxSurge" in found.source.default


@pytest.mark.parametrize("spec,peak,expected,label", [
    # ess-helm's Matrix Authentication Service: maxSurge 2 over 1 replica ran 3 pods
    ("strategy: {rollingUpdate: {maxSurge: 2}}", 1, 1,
     "rolling-update surge (maxSurge 2, capped at replicas 1: the new ReplicaSet never "
     "exceeds replicas, Kubernetes NewRSNewReplicas)"),
    ("strategy: {rollingUpdate: {maxSurge: 200%}}", 3, 3,
     "rolling-update surge (maxSurge 200% = 6, capped at replicas 3: the new ReplicaSet "
     "never exceeds replicas, Kubernetes NewRSNewReplicas)"),
    ("strategy: {rollingUpdate: {maxSurge: 100%}}", 3, 3,
     "rolling-update surge (maxSurge 100%, rounded up)"),
    ("strategy: {rollingUpdate: {maxSurge: 3}}", 3, 3, "rolling-update surge (maxSurge)"),
])
def test_surge_is_capped_at_the_replicas(spec, peak, expected, label):
    """D1: Kubernetes scales the new ReplicaSet to at most the replicas and the old ones
    only down (kubernetes@277391ee71 pkg/controller/deployment/util/deployment_util.go
    NewRSNewReplicas: "Do not exceed the number of desired replicas"), so a rollout
    runs replicas + min(maxSurge, replicas) pods; the label says what was written."""
    (obj,) = objs(f"""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: web}}
        spec:
          {spec}
          template: {{spec: {{containers: [{{name: a, image: x}}]}}}}
        """)
    found = surge(obj, peak)
    assert (found.value, found.label) == (expected, label)


@pytest.mark.parametrize("strategy,nodes,expected", [
    ("", 1, None),                                           # maxSurge defaults to 0
    ("updateStrategy: {rollingUpdate: {maxUnavailable: 2}}", 3, None),
    ("updateStrategy: {rollingUpdate: {maxSurge: 0}}", 3, None),
    ("updateStrategy: {type: OnDelete, rollingUpdate: {maxSurge: 1}}", 3, None),
    ("updateStrategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}", 3, 1),
    ("updateStrategy: {rollingUpdate: {maxSurge: 50%, maxUnavailable: 0}}", 3, 2),
    ("updateStrategy: {rollingUpdate: {maxSurge: 5, maxUnavailable: 0}}", 2, 2),  # 1/node
])
def test_a_daemonset_surges_only_with_a_written_max_surge(strategy, nodes, expected):
    """D1: a DaemonSet's maxSurge defaults to 0 (kubernetes@a79f3c787d
    pkg/apis/apps/v1/defaults.go SetDefaults_DaemonSet); written, it adds new pods
    beside old ones, at most one per node (@7e74f25fe7 pkg/controller/daemon/update.go
    rollingUpdate: "no more than two pods per node, one old, one new"). Its peak stays
    the node count (1 assumed, or [[workloads]] replicas)."""
    (obj,) = objs(f"""
        apiVersion: apps/v1
        kind: DaemonSet
        metadata: {{name: agent}}
        spec:
          {strategy}
          template: {{spec: {{containers: [{{name: a, image: x}}]}}}}
        """)
    found = surge(obj, nodes)
    assert (found.value if found else None) == expected
    if found is not None and expected == nodes and "5" in strategy:
        assert "capped at nodes 2: one new pod per node beside the old" in found.label


def test_hpa_v1_v2_and_keda_default():
    found = objs("""
        apiVersion: autoscaling/v1
        kind: HorizontalPodAutoscaler
        metadata: {name: a}
        spec:
          scaleTargetRef: {kind: Deployment, name: web}
          maxReplicas: 12
        ---
        apiVersion: autoscaling/v2
        kind: HorizontalPodAutoscaler
        metadata: {name: b}
        spec:
          scaleTargetRef: {kind: StatefulSet, name: db}
          maxReplicas: 5
        ---
        apiVersion: keda.sh/v1alpha1
        kind: ScaledObject
        metadata: {name: worker}
        spec:
          scaleTargetRef: {name: worker}
        """)
    maxima = _autoscaler_maxima(found)
    assert maxima[(None, "Deployment", "web")].value == 12
    assert maxima[(None, "Deployment", "web")].source.line == 7  # leading blank line
    assert maxima[(None, "StatefulSet", "db")].value == 5
    keda = maxima[(None, "Deployment", "worker")]
    assert keda.value == 100 and "KEDA default" in keda.source.label()


def test_job_parallelism_cronjob_and_native_sidecar():
    found = objs("""
        apiVersion: batch/v1
        kind: CronJob
        metadata: {name: report}
        spec:
          jobTemplate:
            spec:
              parallelism: 4
              template:
                spec:
                  initContainers:
                    - {name: bouncer, image: edoburu/pgbouncer:1.21.0, restartPolicy: Always}
                  containers:
                    - {name: job, image: acme/report:1}
        """)
    (w,) = workloads(found, configmap_index(found))
    assert w.replicas.value == 4
    assert [c.role for c in w.containers] == ["sidecar", "main"]


def test_alias_bomb_is_refused_with_location():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    prev = "a"
    for i in range(8):
        name = f"l{i}"
        bomb += f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]\n"
        prev = name
    bomb = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n" + "".join(
        "  " + line + "\n" for line in bomb.splitlines())
    found, problems = k8s_objects(bomb, "bomb.yaml")
    assert found == []
    assert problems and "alias" in problems[0].message
    assert problems[0].location.line == 1


def test_malformed_yaml_reports_line():
    found, problems = k8s_objects("apiVersion: v1\nkind: Pod\nspec:\n  x: [1\n", "bad.yaml")
    assert found == [] and problems[0].location.path == "bad.yaml"
    assert problems[0].location.line is not None


def test_argo_rollout_blue_green_doubles_pods_at_promotion():
    (obj,) = objs("""
        apiVersion: argoproj.io/v1alpha1
        kind: Rollout
        metadata: {name: web}
        spec:
          replicas: 6
          strategy:
            blueGreen: {activeService: web}
          template: {spec: {containers: [{name: a, image: x}]}}
        """)
    found = surge(obj, 6)
    assert found.value == 6 and "blue-green" in found.label


def _key_paths(node, at=()):
    """Every key path below `node` (mapping keys, list indexes), with the node there."""
    if isinstance(node, dict):
        items = list(node.items())
    elif isinstance(node, list):
        items = list(enumerate(node))
    else:
        return
    for k, v in items:
        yield (*at, k), v
        yield from _key_paths(v, (*at, k))


def test_source_in_is_source_walked_from_a_node_below_the_root():
    """Linking takes container and env sources from the container or env item it holds
    (source_in / line_in): the same Source as the walk from the document's root, for
    every node and every key below it, missing keys and rendered objects included."""
    from msgspec.structs import replace

    from advisor.model import Source

    (deploy,) = [o for o in objs(DEPLOY) if o.kind == "Deployment"]
    rendered = replace(deploy, value_sources={
        "spec.template.spec.containers.0.env.0.value": Source(path="values.yaml", line=3)})
    checked = 0
    for obj in (deploy, rendered):
        for at, base in [((), obj.body), *_key_paths(obj.body)]:
            if not isinstance(base, dict | list):
                continue
            below = [k for k, _ in _key_paths(base)] + [("missing",), (7,), ("env", 9)]
            for keys in below:
                for key in (None, "", "shown"):
                    assert obj.source_in(base, at, *keys, key=key) == \
                        obj.source(*at, *keys, key=key), (at, keys)
                    checked += 1
                assert obj.line_in(base, *keys) == obj.location(*at, *keys).line
    assert checked > 500
    traced = rendered.source_in(rendered.body["spec"], ("spec",), "template", "spec",
                                "containers", 0, "env", 0, "value")
    assert traced == Source(path="values.yaml", line=3)


def test_env_expansion_sees_only_earlier_variables():
    """$(VAR) expands from variables defined before it; a value without `$(` stays as
    written (it is not expanded at all), one naming a later variable keeps the text."""
    (deploy,) = workloads(objs("""
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
            - name: app
              image: acme/app:1
              env:
                - {name: A, value: "x"}
                - {name: B, value: "$(A)-$(C)"}
                - {name: C, value: "c"}
                - {name: D, value: "plain $ (A) text"}
        """), {})
    env = {e.name: e.value for e in deploy.containers[0].env}
    assert env == {"A": "x", "B": "x-$(C)", "C": "c", "D": "plain $ (A) text"}
