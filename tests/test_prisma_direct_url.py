"""A Prisma app given its datasource's `directUrl` beside the pooled `url` (the shape of
a NestJS search API behind PgBouncer): Prisma Client opens no connection on directUrl,
only the Prisma CLI does (migrate, db push; prisma-engines psl Datasource::
load_direct_url), so the running app is no client of the server it names, while a Job
running `prisma migrate deploy` with the same env is."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

SCHEMA = """\
generator client {
  provider = "prisma-client-js"
}

datasource db {
  provider  = "postgresql"
  url       = env("DATABASE_URL")
  directUrl = env("DB_DIRECT")
}
"""

PODS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: example/api:1
          env:
            - {name: DATABASE_URL, value: "postgresql://app@bouncer:6432/shop?connection_limit=4"}
            - {name: DB_DIRECT, value: "postgresql://app@db:5432/shop"}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: migrate
          image: example/api:1
          command: ["npx", "prisma", "migrate", "deploy"]
          env:
            - {name: DATABASE_URL, value: "postgresql://app@bouncer:6432/shop"}
            - {name: DB_DIRECT, value: "postgresql://app@db:5432/shop"}
"""

BOUNCER = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: bouncer}
spec:
  replicas: 1
  selector: {matchLabels: {app: bouncer}}
  template:
    metadata: {labels: {app: bouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: bitnami/pgbouncer:1.23.1
          env:
            - {name: POSTGRESQL_HOST, value: db}
            - {name: PGBOUNCER_DATABASE, value: shop}
            - {name: PGBOUNCER_POOL_MODE, value: session}
            - {name: PGBOUNCER_DEFAULT_POOL_SIZE, value: "10"}
---
apiVersion: v1
kind: Service
metadata: {name: bouncer}
spec:
  selector: {app: bouncer}
  ports: [{port: 6432}]
"""

TREE = {
    "package.json": '{"name": "api", "dependencies": {"@prisma/client": "5.22.0"}}\n',
    "prisma/schema.prisma": SCHEMA,
    "Dockerfile": 'FROM node:20\nCOPY . .\nCMD ["node", "dist/main.js"]\n',
    "k8s/pods.yaml": PODS,
    "k8s/bouncer.yaml": BOUNCER,
    "k8s/db.yaml": ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n"
                    "  template:\n    metadata: {labels: {app: db}}\n    spec:\n"
                    "      containers: [{name: postgres, image: 'postgres:16.4'}]\n---\n"
                    "apiVersion: v1\nkind: Service\nmetadata: {name: db}\n"
                    "spec: {selector: {app: db}}\n"),
}


def test_direct_url_is_not_a_connection_of_the_running_app(tmp_path):
    write(tmp_path, TREE)
    result = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    [budget] = result.budgets
    whos = sorted(c.who for c in budget.contributions)
    # before: api's DB_DIRECT was a part of it on db, connections unknown (PA106)
    assert not any(w.startswith("api") for w in whos), whos
    assert "migrate" in whos  # prisma migrate deploy does open the direct URL
    assert not [f for f in result.findings if f.code == "PA106"
                and f.subject.startswith("Deployment/api")], result.findings
    assert any("DB_DIRECT" in n and "schema.prisma's directUrl (prisma/schema.prisma:8)"
               in n and "container api holds no connection on it" in n
               for n in result.notices), result.notices
