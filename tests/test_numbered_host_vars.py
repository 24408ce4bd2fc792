"""Numbered database hosts (POSTGRES_HOST_0, POSTGRES_HOST_1, each beside its
POSTGRES_PORT_<n>): one per shard, as iiacoban42/online-store's order, payment and stock
Pods connect to the Bitnami releases its script installs (audit 14 D1). Before, no host
rule read a name ending in a number: each Pod was 'not counted in any budget' (a notice)
and every shard printed 'fits, peak 0 (no client ... connects to it)', exit 0. Now each
Pod is a client of unknown size of every shard it names (PA106, floors)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.link.hosts import host_variable_route, service_host_routes
from advisor.model import EnvVar, Source
from tests.tree_helpers import write

SHARD = """\
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {s}
spec:
  serviceName: {s}
  replicas: 1
  selector:
    matchLabels: {{app: {s}}}
  template:
    metadata:
      labels: {{app: {s}}}
    spec:
      containers:
        - name: pg
          image: postgres:16
---
apiVersion: v1
kind: Service
metadata:
  name: {s}
spec:
  selector: {{app: {s}}}
  ports: [{{port: 5432}}]
"""

POD = """\
---
apiVersion: v1
kind: Pod
metadata:
  name: cart-pod-{i}
  labels: {{component: cart}}
spec:
  containers:
    - name: cart
      image: someone/cartservice:v2
      env:
        - {{name: POSTGRES_HOST_0, value: shard-a}}
        - {{name: POSTGRES_HOST_1, value: shard-b}}
        - {{name: POSTGRES_PORT_0, value: "5432"}}
        - {{name: POSTGRES_PORT_1, value: "5432"}}
"""


def _env(**values: str) -> list[EnvVar]:
    return [EnvVar(name=k, value=v, source=Source(path="k8s/a.yaml", line=1))
            for k, v in values.items()]


def test_a_numbered_host_is_a_host_with_its_numbered_siblings():
    hosts = {"shard-a": ("default", "0"), "shard-b": ("default", "1")}
    env = _env(POSTGRES_HOST_0="shard-a", POSTGRES_PORT_0="6432", POSTGRES_HOST_1="shard-b",
               POSTGRES_PORT_1="5432")
    route = host_variable_route(env, hosts, "default")
    assert route is not None and route.host == "shard-a" and route.port == 6432
    further = service_host_routes(env, hosts, "default")
    assert [(r.host, r.port) for r in further] == [("shard-a", 6432), ("shard-b", 5432)]


def test_unnumbered_host_variables_are_unchanged():
    hosts = {"db": ("default", "0")}
    env = _env(POSTGRES_HOST="db", POSTGRES_PORT="5432")
    route = host_variable_route(env, hosts, "default")
    assert route is not None and (route.host, route.port) == ("db", 5432)
    assert service_host_routes(env, hosts, "default") == []


def test_pods_given_numbered_hosts_count_on_every_shard(tmp_path):
    write(tmp_path, {"k8s/db.yaml": SHARD.format(s="shard-a") + SHARD.format(s="shard-b"),
                     "k8s/app.yaml": POD.format(i=0) + POD.format(i=1)})
    r = run_check([tmp_path])
    assert {b.server for b in r.budgets} == {"shard-a", "shard-b"}
    for b in r.budgets:
        assert not b.fits, b.server  # never "fits, peak 0" from a client not read
        assert sorted(b.unknown_clients) == ["cart-pod-0", "cart-pod-1"], b.server
    assert len([f for f in r.findings if f.code == "PA106"]) == 4
