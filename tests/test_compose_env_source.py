"""audit 14 D3 (noureldien2021/nodejs-postgres-app): the Deployment runs image
noureldien2023/nodejs-app, which no build command names; the root holds the only
Dockerfile and package.json (project "nodejs-postgres", a name unlike the image's), and
its compose file builds `.` as service `app` with DB_USER, DB_HOST, DB_DATABASE,
DB_PASSWORD and DB_PORT, the five variables the Deployment's container sets. Before, the
root was refused (image and project names disagree: another publisher's image) and the
pod's connections were unknown; the compose build whose environment the pod repeats is
the repository's own signal that it runs that build. Written in our own words, in the
repository's shape."""

from __future__ import annotations

from advisor.engine.check import run_check
from tests.tree_helpers import write

COMPOSE = """\
services:
  web:
    build: {context: ., dockerfile: Dockerfile}
    ports: ["8000:8000"]
    environment:
      - PGUSER=shop
      - PGHOST=db
      - PGDATABASE=shop
      - PGPORT=5432
  db:
    image: postgres:16
"""

DB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: postgres}
spec:
  replicas: 1
  selector: {matchLabels: {app: postgres}}
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers: [{name: postgres, image: "postgres:16"}]
---
apiVersion: v1
kind: Service
metadata: {name: postgres-service}
spec:
  selector: {app: postgres}
  ports: [{port: 5432}]
"""

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: storefront-deploy}
spec:
  replicas: 2
  selector: {matchLabels: {app: storefront}}
  template:
    metadata: {labels: {app: storefront}}
    spec:
      containers:
        - name: storefront
          image: someone2024/storefront:latest
          env:
%s"""
ENV = {"PGUSER": "shop", "PGHOST": "postgres-service", "PGDATABASE": "shop", "PGPORT": "5432"}

ROOT = {"Dockerfile": "FROM node:20\nCOPY . .\nCMD [\"node\", \"app.js\"]\n",
        "package.json": '{"name": "shop-postgres", "main": "app.js", '
                        '"dependencies": {"pg": "^8.11.0"}}\n',
        "app.js": "const { Pool } = require('pg')\nconst pool = new Pool({ max: 6 })\n"
                  "module.exports = () => pool.query('SELECT 1')\n",
        "docker-compose.yml": COMPOSE, "k8s/db.yaml": DB}


def _env(names) -> str:
    return "".join(f"            - {{name: {n}, value: \"{ENV[n]}\"}}\n" for n in names)


def test_a_pod_repeating_a_compose_build_s_environment_runs_that_build(tmp_path):
    write(tmp_path, {**ROOT, "k8s/app.yaml": APP % _env(ENV)})
    r = run_check([tmp_path])
    (b,) = r.budgets
    assert b.peak == 18 and b.fits  # (2 + 1 surge) x 6
    assert any("compose service web (docker-compose.yml:2)" in n for n in r.notices)


def test_a_pod_setting_only_some_of_them_is_not_taken_for_it(tmp_path):
    write(tmp_path, {**ROOT, "k8s/app.yaml": APP % _env(["PGHOST", "PGPORT"])})
    (b,) = run_check([tmp_path]).budgets
    assert not b.fits and b.unknown_clients == ["storefront-deploy"]
