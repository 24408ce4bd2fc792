"""supabase/postgres runs `postgres -D /etc/postgresql` (supabase/postgres Dockerfile-17@
eeea0682, its CMD): the server reads the image's own /etc/postgresql/postgresql.conf, not
$PGDATA's. Unmounted, that file is not read and the tool says so (audit 10c: the
supabase-kubernetes chart's db was reported at "PostgreSQL 17 default" with no word that
the image's file was not read); mounted from a ConfigMap, it is read."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

DB = """
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: supabase/postgres:17.6.1.136
"""
MOUNT = """
          volumeMounts:
            - {name: conf, mountPath: /etc/postgresql/postgresql.conf, subPath: postgresql.conf}
      volumes:
        - name: conf
          configMap: {name: db-conf}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: db-conf}
data:
  postgresql.conf: |
    max_connections = 300
"""


def _run(tmp_path, text: str):
    root = write(tmp_path, {"k8s/db.yaml": text})
    result = run_check([str(root)], CheckOptions(cache=False))
    return result, next(b for b in result.budgets if b.server == "db")


OWN = "/etc/postgresql/postgresql.conf (the supabase/postgres image's own file"


def _unread(result) -> list[str]:
    return [f.message for f in result.findings if f.code == "PA901" and OWN in f.message]


def test_the_image_s_own_file_unmounted_is_said_not_read(tmp_path):
    result, db = _run(tmp_path, DB)
    (message,) = _unread(result)
    assert "Dockerfile-17@eeea0682" in message and "counted at PostgreSQL's defaults" in message
    assert db.usable == 97


def test_the_image_s_file_mounted_is_read(tmp_path):
    result, db = _run(tmp_path, DB + MOUNT)
    assert not _unread(result)
    assert db.usable == 297
