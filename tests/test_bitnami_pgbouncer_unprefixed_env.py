"""The Bitnami pgbouncer image reads only PGBOUNCER_* and POSTGRESQL_* variables
(bitnami/containers bitnami/pgbouncer/1/debian-12 pgbouncer-env.sh@043f89c8:26-95):
edoburu-style DEFAULT_POOL_SIZE / RESERVE_POOL_SIZE given to it are ignored and its
defaults run. The budget was right (20 a pool) but nothing said the variables were
ignored (audit 10d N6, atakurt/messagingApp@1f0fd87 k8s/pgbouncer.yaml: the author meant
80 + 40 a pool)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

BOUNCER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: bouncer}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: bouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: bitnami/pgbouncer:1.24.1
          env:
            - {name: POSTGRESQL_HOST, value: db}
            - {name: PGBOUNCER_DATABASE, value: app}
            - {name: DEFAULT_POOL_SIZE, value: "80"}
            - {name: RESERVE_POOL_SIZE, value: "40"}
            - {name: PGBOUNCER_POOL_MODE, value: transaction}
            - {name: POOL_MODE, value: session}
            - {name: MAX_USER_CONNECTIONS, value: "50"}
"""


def _check(tmp_path):
    root = write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/bouncer.yaml": BOUNCER})
    result = run_check([str(root)], CheckOptions(cache=False))
    return result, next(b for b in result.budgets if b.server == "db")


def test_unprefixed_variables_are_said_ignored_and_the_defaults_counted(tmp_path):
    result, db = _check(tmp_path)
    assert db.peak == 20  # default_pool_size 20, one pool, no surge: not 80 + 40
    (notice,) = [n for n in result.notices if "Bitnami pgbouncer image reads only" in n]
    assert "pgbouncer-env.sh@043f89c8:26-95" in notice
    assert "DEFAULT_POOL_SIZE=80 (k8s/bouncer.yaml:17) -> PGBOUNCER_DEFAULT_POOL_SIZE" in notice
    assert "RESERVE_POOL_SIZE=40 (k8s/bouncer.yaml:18) -> PGBOUNCER_RESERVE_POOL_SIZE" in notice
    # PGBOUNCER_POOL_MODE is set as well: POOL_MODE changes nothing, not named
    assert "POOL_MODE=session" not in notice
    assert "MAX_USER_CONNECTIONS (k8s/bouncer.yaml:21; the image has no variable for " \
        "max_user_connections" in notice
