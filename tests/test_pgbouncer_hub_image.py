"""Audit 36 N5: pgbouncer/pgbouncer (Docker Hub) is built by aztek-io's
pgbouncer-container, not by the PgBouncer project: its entrypoint.sh (as merged into
sportsru/docker-pgbouncer at cd08ecb) writes [databases] from DATABASES_* and
[pgbouncer] from PGBOUNCER_<KEY>, and exits without DATABASES_HOST or DATABASES_RAW.
edoburu's names (DATABASE_URL, POOL_MODE) given to it configure nothing. Its `latest`
version is not known: the usual assumption (1.18) stays, and says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

pytest.importorskip("pglast")

BOUNCER = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: pgbouncer}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: pgbouncer}}}}
  template:
    metadata: {{labels: {{app: pgbouncer}}}}
    spec:
      containers:
        - name: pgbouncer
          image: pgbouncer/pgbouncer:latest
          env:
{env}
---
apiVersion: v1
kind: Service
metadata: {{name: pgbouncer}}
spec:
  selector: {{app: pgbouncer}}
  ports: [{{port: 5432}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: api}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: api}}}}
  template:
    metadata: {{labels: {{app: api}}}}
    spec:
      containers:
        - name: api
          image: shop/api:1.0
          env:
            - {{name: PGURL, value: "postgresql://app@pgbouncer:5432/shop"}}
"""

APP = "import asyncpg\n\n\nasync def pool(dsn):\n    return await asyncpg.create_pool(dsn)\n"


def _check(tmp_path: Path, env: str):
    write(tmp_path, {"k8s/all.yaml": BOUNCER.format(env=env),
                     "api/Dockerfile": 'FROM python:3.12\nCOPY . .\nCMD ["python", "-m", "api"]\n',
                     "api/requirements.txt": "asyncpg==0.30.0\n", "api/db.py": APP})
    result = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    return ([f for f in result.findings if f.code.startswith("PA4")],
            [n for n in result.notices if "pgbouncer/pgbouncer image" in n])


def test_edoburu_names_configure_nothing_and_the_entrypoint_exits(tmp_path):
    env = ("            - {name: DATABASE_URL, value: 'postgresql://u:p@postgres:5432/shop'}\n"
           "            - {name: POOL_MODE, value: transaction}")
    found, notices = _check(tmp_path, env)
    assert found == []  # the pooler never runs: no transaction mode to break on
    assert any("exits unless DATABASES_HOST or DATABASES_RAW is set" in n for n in notices)
    assert any("POOL_MODE (k8s/all.yaml:15) -> PGBOUNCER_POOL_MODE" in n for n in notices)


def test_its_own_names_are_read(tmp_path):
    env = ("            - {name: DATABASES_HOST, value: postgres}\n"
           "            - {name: PGBOUNCER_POOL_MODE, value: transaction}")
    found, notices = _check(tmp_path, env)
    assert notices == []
    [pa405] = [f for f in found if f.code == "PA405"]
    assert "PgBouncer 1.18 (default: assumed" in pa405.message
    assert "([pgbouncer], k8s/all.yaml:15)" in pa405.message
