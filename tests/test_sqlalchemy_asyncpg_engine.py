"""Audit 13f: a SQLAlchemy asyncpg engine whose URL is in a Secret (known by its
connect_args), and asyncpg `server_settings` sent as startup parameters, behind a
PgBouncer in transaction mode (the shape of a FastAPI backend with its pooler's ini in a
ConfigMap)."""

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
metadata: {name: pgbouncer-config}
data:
  pgbouncer.ini: |
    [databases]
    school = host=postgres port=5432 dbname=school

    [pgbouncer]
    listen_port = 5432
    pool_mode = transaction
    default_pool_size = 20
    ignore_startup_parameters = extra_float_digits,options
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pgbouncer}
spec:
  replicas: 1
  selector: {matchLabels: {app: pgbouncer}}
  template:
    metadata: {labels: {app: pgbouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:1.22.1
          volumeMounts:
            - {name: ini, mountPath: /etc/pgbouncer/pgbouncer.ini, subPath: pgbouncer.ini}
      volumes:
        - {name: ini, configMap: {name: pgbouncer-config}}
---
apiVersion: v1
kind: Service
metadata: {name: pgbouncer-service}
spec:
  selector: {app: pgbouncer}
  ports: [{port: 5432}]
"""

BACKEND = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: school-backend}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: school-backend}}}}
  template:
    metadata: {{labels: {{app: school-backend}}}}
    spec:
      containers:
        - name: backend
          image: school/backend:1.0
          env:
            - {url}
"""

DATABASE_PY = """\
import os

from sqlalchemy.ext.asyncio import create_async_engine

engine = create_async_engine(
    os.environ["DATABASE_URL"],
    pool_size=5,
    connect_args={
        "statement_cache_size": 0,
        "server_settings": {"jit": "off"},
    },
)
"""


def _tree(tmp_path: Path, url: str) -> Path:
    write(tmp_path, {
        "k8s/pgbouncer.yaml": BOUNCER,
        "k8s/backend.yaml": BACKEND.format(url=url),
        "backend/Dockerfile": "FROM python:3.12-slim\nCOPY . /app\n"
                              'CMD ["uvicorn", "app.main:app"]\n',
        "backend/requirements.txt": "sqlalchemy==2.0.36\nasyncpg==0.30.0\n",
        "backend/database.py": DATABASE_PY,
    })
    return tmp_path


def _pa4(root: Path) -> list[tuple[str, str, int | None]]:
    result = run_check([str(root)], CheckOptions(cache=False, root=root))
    return sorted((f.code, f.location.path, f.location.line)
                  for f in result.findings if f.code.startswith("PA4"))


def test_engine_with_its_url_in_a_secret(tmp_path):
    root = _tree(tmp_path, "{name: DATABASE_URL, valueFrom: {secretKeyRef: "
                           "{name: backend-secrets, key: DATABASE_URL}}}")
    assert _pa4(root) == [("PA405", "backend/database.py", 5),
                          ("PA410", "backend/database.py", 10)]


def test_engine_whose_url_the_manifest_holds_is_one_pa405(tmp_path):
    url = "postgresql+asyncpg://app@pgbouncer-service:5432/school"
    assert _pa4(_tree(tmp_path, f"{{name: DATABASE_URL, value: '{url}'}}")) == [
        ("PA405", "k8s/backend.yaml", 14), ("PA410", "backend/database.py", 10)]
    safe = url + "?prepared_statement_cache_size=0"
    assert _pa4(_tree(tmp_path, f"{{name: DATABASE_URL, value: '{safe}'}}")) == [
        ("PA410", "backend/database.py", 10)]
