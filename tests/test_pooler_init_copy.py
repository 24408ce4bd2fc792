"""Audit 13f: a PgBouncer whose pgbouncer.ini an init container copies from a ConfigMap
into an emptyDir (the shape of a NestJS + Prisma search API on kind), and a Prisma
migration Job run through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

pytest.importorskip("pglast")

BOUNCER = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: bouncer-files, namespace: catalog}
data:
  pgbouncer.ini: |
    [databases]
    catalog = host=postgres-service port=5432 dbname=catalog

    [pgbouncer]
    listen_port = 6432
    pool_mode = transaction
    default_pool_size = 25
    max_db_connections = 40
    idle_transaction_timeout = 60
  userlist.txt: |
    "app" "secret"
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pgbouncer, namespace: catalog}
spec:
  replicas: 1
  selector: {matchLabels: {app: pgbouncer}}
  template:
    metadata: {labels: {app: pgbouncer}}
    spec:
      initContainers:
        - name: copy-config
          image: busybox:1.36
          command: ["/bin/sh", "-c", "cp /files-ro/* /files/ && chmod 640 /files/*"]
          volumeMounts:
            - {name: files-ro, mountPath: /files-ro}
            - {name: files, mountPath: /files}
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:v1.24.1-p0
          volumeMounts:
            - {name: files, mountPath: /etc/pgbouncer}
      volumes:
        - {name: files-ro, configMap: {name: bouncer-files}}
        - {name: files, emptyDir: {}}
---
apiVersion: v1
kind: Service
metadata: {name: pgbouncer-service, namespace: catalog}
spec:
  selector: {app: pgbouncer}
  ports: [{port: 6432}]
"""

POSTGRES = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: postgres, namespace: catalog}
spec:
  replicas: 1
  serviceName: postgres-service
  selector: {matchLabels: {app: postgres}}
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers:
        - name: postgres
          image: postgres:17.2
          args: ["-c", "max_connections=200"]
---
apiVersion: v1
kind: Service
metadata: {name: postgres-service, namespace: catalog}
spec:
  selector: {app: postgres}
  ports: [{port: 5432}]
"""

MIGRATE = """\
apiVersion: batch/v1
kind: Job
metadata: {name: schema-migrate, namespace: catalog}
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: migrate
          image: catalog/api:1.0
          command:
            - /bin/sh
            - -c
            - |
              npx prisma migrate deploy
              npx prisma generate
          env:
            - name: DATABASE_URL
              value: postgresql://app@pgbouncer-service:6432/catalog
"""


def _findings(root: Path) -> tuple[list[tuple[str, str, int | None]], list[str]]:
    result = run_check([str(root)], CheckOptions(cache=False, root=root))
    return (sorted((f.code, f.location.path, f.location.line) for f in result.findings
                   if f.code in ("PA403", "PA504")), result.notices)


def test_ini_copied_by_an_init_container_is_the_poolers(tmp_path):
    write(tmp_path, {"k8s/pgbouncer.yaml": BOUNCER, "k8s/migrate.yaml": MIGRATE,
                     "k8s/postgres.yaml": POSTGRES})
    found, notices = _findings(tmp_path)
    # transaction mode read from the copied ini (before: no ini, session mode assumed,
    # and the migration's lock was not even looked for)
    assert found == [("PA403", "k8s/migrate.yaml", 14)]
    assert any("init container copy-config copies it" in n for n in notices)
    # the init container that copies the pooler's files is no client of the server
    result = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    [budget] = result.budgets
    assert budget.unknown_clients == []
    assert budget.peak == 50  # (1 + 1 surge) x default_pool_size 25
    # the same without idle_transaction_timeout: PA504 on the copied ini's pool_mode line
    write(tmp_path, {"k8s/pgbouncer.yaml": BOUNCER.replace(
        "    idle_transaction_timeout = 60\n", "")})
    assert _findings(tmp_path)[0] == [("PA403", "k8s/migrate.yaml", 14),
                                      ("PA504", "k8s/pgbouncer.yaml", 11)]


def test_prisma_migrate_status_takes_no_lock(tmp_path):
    write(tmp_path, {"k8s/pgbouncer.yaml": BOUNCER,
                     "k8s/migrate.yaml": MIGRATE.replace("migrate deploy", "migrate status")})
    assert _findings(tmp_path)[0] == []
