"""Argo Workflows' own pools: the workflow-controller and argo-server read the
workflow-controller-configmap through the API (never mounted) and open a database/sql
pool per postgresql section (persistence on every pod; synchronization on the
controller's leader, and on the server with enableAPI). The quick-start/postgres
install showed peak 0 where four pools are open."""

from __future__ import annotations

from advisor.engine.check import CheckOptions, run_check
from tests.tree_helpers import POSTGRES_DB, write

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata: {name: workflow-controller-configmap}
data:
  persistence: |
    archive: true
    connectionPool:
      maxIdleConns: 10
      maxOpenConns: PERSIST
    postgresql:
      host: db
      port: 5432
      database: argo
      tableName: argo_workflows
      userNameSecret: {name: argo-postgres, key: username}
  synchronization: |
    enableAPI: true
    connectionPool:
      maxOpenConns: 4
    postgresql:
      host: db
      port: 5432
      database: argo
      userNameSecret: {name: argo-postgres, key: username}
---
apiVersion: v1
kind: Secret
metadata: {name: argo-postgres}
stringData: {username: argo}
"""

CONTROLLER = """apiVersion: apps/v1
kind: Deployment
metadata: {name: workflow-controller}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: workflow-controller
          image: quay.io/argoproj/workflow-controller:v3.7.0
          command: [workflow-controller]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: argo-server}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: argo-server
          image: quay.io/argoproj/argocli:v3.7.0
          args: [server]
"""


def test_controller_and_server_pools_from_the_configmap(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/config.yaml": CONFIGMAP.replace(
        "PERSIST", "5"), "k8s/argo.yaml": CONTROLLER})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    # controller: (2 + 1 surge) pods x persistence 5, plus the leader's sync pool 4 once;
    # server: 1 pod x (persistence 5 + sync 4, enableAPI)
    assert budget.peak == 3 * 5 + 4 + (5 + 4), result.notices
    assert budget.unknown_clients == []
    sync = [c for c in budget.contributions if "leader" in c.who or any(
        "leader" in f.label for f in c.factors)]
    assert sync, [c.who for c in budget.contributions]


def test_an_unset_limit_is_unbounded_and_disabled_api_opens_no_server_sync_pool(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB,
                     "k8s/config.yaml": CONFIGMAP.replace("      maxOpenConns: PERSIST\n", "")
                     .replace("enableAPI: true", "enableAPI: false"),
                     "k8s/argo.yaml": CONTROLLER})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    pa102 = [f for f in result.findings if f.code == "PA102"]
    assert sorted(f.message.split(":")[0] for f in pa102) == ["argo-server",
                                                              "workflow-controller"]
    assert all("Argo Workflows persistence is unbounded" in f.message for f in pa102)
    # the controller's leader still opens its sync pool of 4; the server none. The
    # unbounded persistence pools make the peak a floor: never "fits". Each pod's
    # unbounded pool counts as at least 1 (it was 0): (2 + 1 surge) controllers + the
    # leader's 4 + 1 server
    (budget,) = result.budgets
    assert budget.peak == 3 + 4 + 1 and not budget.fits and budget.peak_is_floor
    assert budget.unbounded_clients == ["workflow-controller", "argo-server"]
    from advisor.budget.arith import peak_text

    assert peak_text(budget) == ("peak >= 8 (2 clients unbounded: workflow-controller, "
                                 "argo-server)")
