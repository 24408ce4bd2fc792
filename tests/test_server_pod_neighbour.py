"""A program in the PostgreSQL pod that connects over loopback through a host variable no
URL reader knows is a client of that server, and a Service exposing only its port is no
exposure of the server (audit 46 D5). sqlpad/sqlpad's kubernetes-examples/postgres-k8s:
one Deployment runs postgres and sqlpad/sqlpad:5 (SQLPAD_CONNECTIONS__pgdemo__host=
localhost; sqlpad 5.8.4 opens a pg.Client per connection client and keeps it up to
idleTimeoutSeconds, server/lib/connection-client.js:97-99), and NodePort sqlpad-svc sends
port 3000 to sqlpad's containerPort 3000. The server said "peak >= 0 ... exposed outside
the cluster by Service/sqlpad/sqlpad-svc", a false reason; without it, "fits, peak 0".
The shape below is written for this test, after that example."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.link.hosts import ports_lead_elsewhere
from tests.tree_helpers import write

POD = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: sqlpad, namespace: sqlpad, labels: {{app: sqlpad}}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: sqlpad}}}}
  template:
    metadata: {{labels: {{app: sqlpad}}}}
    spec:
      containers:
      - name: postgres
        image: postgres
        env:
          - {{name: POSTGRES_USER, value: sqlpad}}
      - name: sqlpad
        image: sqlpad/sqlpad:5
        ports:
        - containerPort: 3000
        env:
          - {{name: SQLPAD_CONNECTIONS__pgdemo__driver, value: postgres}}
          - {{name: SQLPAD_CONNECTIONS__pgdemo__host, value: {host}}}
          - {{name: SQLPAD_CONNECTIONS__pgdemo__idleTimeoutSeconds, value: '86400'}}
---
apiVersion: v1
kind: Service
metadata: {{name: sqlpad-svc, namespace: sqlpad}}
spec:
  type: NodePort
  ports:
  - {{name: tcp-rule-sqlpad, port: 3000, protocol: TCP, targetPort: {target}}}
  selector: {{app: sqlpad}}
"""


def _check(tmp_path, host="localhost", target="3000"):
    write(tmp_path, {"kubernetes-examples/postgres-k8s/sqlpad-deployment.yml":
                     POD.format(host=host, target=target)})
    return run_check([str(tmp_path / "kubernetes-examples")],
                     CheckOptions(cache=False, root=tmp_path))


def test_the_neighbour_on_loopback_is_a_client_and_its_port_no_exposure(tmp_path):
    r = _check(tmp_path)
    (budget,) = r.budgets
    assert budget.unknown_clients == ["sqlpad/sqlpad"]  # was [] with peak >= 0
    assert budget.peak == 1
    assert budget.exposed == []  # was [Service/sqlpad/sqlpad-svc (type NodePort, ...)]
    assert any("leads to another container's port" in n for n in r.notices)


def test_a_service_to_postgres_port_is_still_an_exposure(tmp_path):
    r = _check(tmp_path, target="5432")
    (budget,) = r.budgets
    assert len(budget.exposed) == 1 and "sqlpad-svc" in budget.exposed[0]
    assert not any("leads to another container's port" in n for n in r.notices)


def test_ports_lead_elsewhere():
    assert ports_lead_elsewhere([{"port": 3000, "targetPort": 3000}], set(), {"3000"})
    assert ports_lead_elsewhere([{"port": 80, "targetPort": "http"}], set(), {"3000", "http"})
    # a port no container declares, the server's own, or PostgreSQL's: not elsewhere
    assert not ports_lead_elsewhere([{"port": 3000}], set(), {"8080"})
    assert not ports_lead_elsewhere([{"port": 3000}], {"3000"}, {"3000"})
    assert not ports_lead_elsewhere([{"port": 5432}], set(), {"5432"})
    assert not ports_lead_elsewhere([{"port": 3000}, {"port": 5432}], set(), {"3000"})
    assert not ports_lead_elsewhere([], set(), {"3000"})
