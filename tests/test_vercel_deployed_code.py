"""Audit 36 N3: a Next.js + Prisma app that a monorepo's root vercel.json builds
(`cd web/app && npm run build`) runs on Vercel, which reaches no cluster-internal
PgBouncer: its Prisma datasource is not checked against the cluster's pooler. The same
app built into a workload of the repository still is."""

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
          env:
            - {name: DB_HOST, value: postgres}
            - {name: POOL_MODE, value: transaction}
---
apiVersion: v1
kind: Service
metadata: {name: pgbouncer}
spec:
  selector: {app: pgbouncer}
  ports: [{port: 5432}]
"""

API = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: shop/api:1.0
          env:
            - {name: DATABASE_URL, valueFrom: {secretKeyRef: {name: api, key: url}}}
"""

SCHEMA = """\
datasource db {
  provider = "postgresql"
  url      = env("DATABASE_URL")
}
"""


def _pa4(tmp_path: Path, files: dict[str, str]) -> tuple[list, list]:
    write(tmp_path, {"k8s/pgbouncer.yaml": BOUNCER, "k8s/api.yaml": API,
                     "api/Cargo.toml": '[package]\nname = "api"\n',
                     "api/Dockerfile": "FROM rust:1.80\nCOPY . .\nCMD [\"./api\"]\n",
                     "web/app/package.json": '{"dependencies": {"@prisma/client": "5.22.0"}}',
                     "web/app/prisma/schema.prisma": SCHEMA, **files})
    result = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    return ([(f.code, f.location.path) for f in result.findings if f.code.startswith("PA4")],
            [n for n in result.notices if "Vercel" in n])


def test_code_vercel_deploys_is_not_checked_against_the_cluster_pooler(tmp_path):
    found, notices = _pa4(tmp_path, {
        "vercel.json": '{\n  "buildCommand": "cd web/app && npm run build"\n}\n'})
    assert found == []
    [notice] = notices
    assert notice.startswith("web/app/ (Vercel: vercel.json:2): deployed by Vercel")


def test_without_vercel_json_the_same_code_is_checked(tmp_path):
    found, notices = _pa4(tmp_path, {})
    assert found == [("PA405", "web/app/prisma/schema.prisma")] and notices == []
