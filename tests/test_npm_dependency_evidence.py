"""The stack a package.json names is cited at its dependency's line, not at a script or
another key named like the library (audit 30 D4, sovannarapov/nestjs-k8s shape:
`"typeorm": "ts-node ... typeorm/cli"` in scripts was cited, package.json:21, for the
dependency on line 54)."""

from __future__ import annotations

from advisor.engine.check import CheckOptions, run_check
from tests.tree_helpers import POSTGRES_DB, write

PACKAGE = """{
  "name": "orders",
  "scripts": {
    "build": "nest build",
    "typeorm": "ts-node ./node_modules/typeorm/cli"
  },
  "jest": {
    "pg": "not a dependency"
  },
  "dependencies": {
    "@nestjs/typeorm": "^10.0.0",
    "typeorm": "^0.3.20",
    "pg": "^8.13.0"
  }
}
"""

APP = """apiVersion: apps/v1
kind: Deployment
metadata: {name: orders}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: orders
          image: acme/orders:1
          env:
            - {name: DB_HOST, value: db}
"""


def test_the_stack_is_cited_at_its_dependency_line(tmp_path):
    write(tmp_path, {"package.json": PACKAGE, "Dockerfile": "FROM node:20\n",
                     "k8s/db.yaml": POSTGRES_DB, "k8s/app.yaml": APP})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 20  # 2 pods x pg-pool's default 10
    (f,) = [f for f in result.findings if f.code == "PA104"]
    assert "stack identified by typeorm (package.json:12)" in f.message, f.message


def test_a_package_json_that_is_no_json_is_still_read_loosely(tmp_path):
    write(tmp_path, {"package.json": PACKAGE.replace('"pg": "^8.13.0"\n', '"pg": "^8.13.0",\n'),
                     "Dockerfile": "FROM node:20\n",
                     "k8s/db.yaml": POSTGRES_DB, "k8s/app.yaml": APP})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 20
