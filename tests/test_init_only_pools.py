"""A pod whose only read pool is an init container's (a migration before the app starts)
and whose running container connects with pools not read: the init pool is not the
pod's count, the running container's connections are unknown (twentyhq/twenty's chart
before apps/twenty.py: the server was counted as the 1 connection of its migration)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: crm}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      initContainers:
        - name: run-migrations
          image: acme/crm:1
          command: ["sh", "-c", "npx -y typeorm migration:run -d dist/datasource"]
          env:
            - {name: PG_DATABASE_URL, value: "postgres://u:p@db/crm"}
      containers:
        - name: server
          image: acme/crm:1
          env:
            - {name: PG_DATABASE_URL, value: "postgres://u:p@db/crm"}
"""


def test_init_migration_is_not_the_pods_count(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/crm.yaml": APP})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == ["crm"] and budget.peak == 2
    assert any("only init containers' pools were read (migration (typeorm migration:run))"
               in n for n in result.notices)
    assert [f.code for f in result.findings if f.code == "PA106"] == ["PA106"]


def test_init_migration_alone_still_counts(tmp_path):
    # a Job-like pod whose running container does not connect: the init pool stays
    app = APP.replace('            - {name: PG_DATABASE_URL, value: "postgres://u:p@db/crm"}\n'
                      '"""', '"""')
    app = app.rsplit("          env:\n", 1)[0] + "          command: [\"sleep\", \"1\"]\n"
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/crm.yaml": app})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.peak == 2 * 1 and not budget.unknown_clients


def test_init_migration_and_running_pools_are_not_summed(tmp_path):
    # the running container's pool is read: the pod holds max(1, 20), not 1 + 20
    app = APP.replace("image: acme/crm:1\n          env:",
                      "image: twentycrm/twenty:v1.14.0\n          env:")
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB.replace("max_connections=50",
                                                        "max_connections=500"),
                     "k8s/crm.yaml": app})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 2 * 20
    assert any("migration (typeorm migration:run) of its init containers not counted" in n
               for n in result.notices)


def test_init_migration_to_another_server_still_counts_there(tmp_path):
    # the migration runs against db2, which the running server never connects to: while
    # it runs it is db2's connection, whatever the running container holds on db
    app = APP.replace("image: acme/crm:1\n          env:",
                      "image: twentycrm/twenty:v1.14.0\n          env:")
    app = app.replace("command: [\"sh\", \"-c\", \"npx -y typeorm migration:run -d "
                      "dist/datasource\"]\n          env:\n"
                      "            - {name: PG_DATABASE_URL, value: \"postgres://u:p@db/crm\"}",
                      "command: [\"sh\", \"-c\", \"npx -y typeorm migration:run -d "
                      "dist/datasource\"]\n          env:\n"
                      "            - {name: PG_DATABASE_URL, value: \"postgres://u:p@db2/crm\"}")
    assert "db2/crm" in app
    db2 = POSTGRES_DB.replace("name: db}", "name: db2}").replace("app: db}", "app: db2}")
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB.replace("max_connections=50",
                                                        "max_connections=500"),
                     "k8s/db2.yaml": db2, "k8s/crm.yaml": app})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    peaks = {b.server: b.peak for b in result.budgets}
    assert peaks == {"db": 2 * 20, "db2": 2 * 1}, peaks
    assert not any("of its init containers not counted" in n for n in result.notices)
