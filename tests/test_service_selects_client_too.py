"""A server's Service whose selector also takes in a client's pods still leads the client
to the server (audit 39, mjreb/Codescene-kirolImplementation's shape: the base
kustomization's commonLabels app.kubernetes.io/name overwrote postgres-service's selector,
so it selects every pod; the app was dropped as 'a server's own pods are not its
clients' and the base said fits, peak 0). Our own tree."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

K8S = """
apiVersion: v1
kind: Service
metadata: {name: postgres-service}
spec:
  selector: {app.kubernetes.io/name: shop}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: postgres}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app.kubernetes.io/name: shop, app.kubernetes.io/component: database}}
    spec:
      containers: [{name: postgres, image: "postgres:15-alpine"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 4
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app.kubernetes.io/name: shop, app.kubernetes.io/component: backend}}
    spec:
      containers:
        - name: api
          image: ghcr.io/acme/api:1.0
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://postgres-service:5432/shop"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "30"}
"""


def test_a_client_its_server_s_service_also_selects_is_still_its_client(tmp_path):
    write(tmp_path, {"k8s/all.yaml": K8S})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.peak == 120 and not budget.fits  # 4 pods x 30 > 97
    assert not any("selecting its own pods" in n for n in result.notices)


BOUNCER = """
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pgbouncer}
spec:
  replicas: 1
  template:
    metadata: {labels: {app.kubernetes.io/name: shop, app.kubernetes.io/component: pooler}}
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:v1.24.1-p1
          env:
            - {name: DB_HOST, value: postgres-service}
            - {name: POOL_MODE, value: transaction}
"""


def test_a_service_selecting_a_server_and_a_pooler_is_said(tmp_path):
    # the same commonLabels put on a PgBouncer too (audit 45 D4: advise's PgBouncer added
    # to that kustomization): postgres-service selects the server and the PgBouncer, and
    # kube-proxy spreads its connections over both; which one is counted is said
    write(tmp_path, {"k8s/all.yaml": K8S + BOUNCER})
    result = run_check([str(tmp_path)], CheckOptions())
    (said,) = [n for n in result.notices if n.startswith("Service postgres-service selects")]
    assert "2 servers or poolers (Deployment/postgres, Deployment/pgbouncer)" in said, said
    assert "counted as connections to the first, Deployment/postgres" in said
