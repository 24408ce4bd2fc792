"""A workload's source is the one folder whose package.json name is its name or its
image's (audit 46 D3). s21aht/kubernetes: Deployment todo-backend runs
s21aht/todo-backend:latest, built from application/to-do/backend/ (package.json "name":
"todo-backend", `new Pool` without max) beside application/to-do/frontend/, each with a
Dockerfile: no folder is named like the workload, so none was inferred and the server
said "peak >= 3, cannot tell" (PA106). By hand: (2 replicas + 1 surge) x 10 (pg-pool
default max) = 30 <= 97. The shape below is written for this test, after that layout."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: todo-{part}, namespace: todo-app}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: todo-{part}}}}}
  template:
    metadata: {{labels: {{app: todo-{part}}}}}
    spec:
      containers:
        - name: todo-{part}
          image: someone/todo-{part}:latest
          env: [{{name: PG_HOST, value: postgres}}{extra}]
"""

SHAPE = {
    "application/to-do/backend/package.json":
        '{"name": "todo-backend", "main": "server.js", "dependencies": {"pg": "^8.11.0"}}',
    "application/to-do/backend/Dockerfile": 'FROM node:18\nCOPY . .\nCMD ["node", "server.js"]\n',
    "application/to-do/backend/server.js": "const pool = require('./db')\n",
    "application/to-do/backend/db.js":
        "const { Pool } = require('pg');\nconst pool = new Pool({\n  host: process.env.PG_HOST,"
        "\n  port: 5432,\n});\nmodule.exports = pool;\n",
    "application/to-do/frontend/package.json":
        '{"name": "todo-frontend", "dependencies": {"next": "14.0.0"}}',
    "application/to-do/frontend/Dockerfile": 'FROM node:18\nCOPY . .\nCMD ["npm", "start"]\n',
    "k8s/services/backend.yaml": DEPLOY.format(part="backend", extra=""),
    "k8s/postgres.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: postgres, namespace: todo-app}
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
metadata: {name: postgres, namespace: todo-app}
spec:
  selector: {app: postgres}
  ports: [{port: 5432}]
""",
}


def test_the_folder_whose_package_is_named_like_the_image_is_the_source(tmp_path):
    write(tmp_path, SHAPE)
    r = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    (budget,) = r.budgets
    assert budget.unknown_clients == []  # was ["todo-backend"], peak >= 3
    assert budget.peak == 30  # (2 + 1 surge) x 10
    assert any("application/to-do/backend/" in n and "package.json name" in n
               for n in r.notices)


def test_two_folders_of_that_package_name_are_no_answer(tmp_path):
    write(tmp_path, {**SHAPE, "application/old/backend/package.json":
                     '{"name": "@acme/todo-backend", "dependencies": {"pg": "8.0.0"}}',
                     "application/old/backend/Dockerfile": "FROM node:18\n"})
    r = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    (budget,) = r.budgets
    assert budget.unknown_clients == ["todo-backend"]


def test_a_command_line_package_of_the_images_name_is_not_its_source(tmp_path):
    """triggerdotdev/trigger.dev: packages/cli-v3/package.json is the npm package
    trigger.dev (a "bin", no Dockerfile), as the image ghcr.io/triggerdotdev/trigger.dev
    is named: it was taken as the webapp's source (found while fixing D3)."""
    write(tmp_path, {
        **{k: v for k, v in SHAPE.items() if k.startswith("k8s/postgres")},
        "package.json": '{"name": "acmedotdev", "private": true, "workspaces": ["apps/*", '
                        '"packages/*"]}',
        "apps/webapp/package.json": '{"name": "webapp", "dependencies": {"pg": "8.13.1"}}',
        "apps/webapp/db.js": "const { Pool } = require('pg')\nmodule.exports = new Pool({ "
                             "connectionString: process.env.DATABASE_URL, max: 6 })\n",
        "packages/cli/package.json": '{"name": "acme.dev", "bin": {"acme": "dist/cli.js"}, '
                                     '"dependencies": {"pg": "8.13.1"}}',
        "packages/cli/src/db.js": "const { Pool } = require('pg')\n"
                                  "module.exports = new Pool({ max: 40 })\n",
        "k8s/webapp.yaml": DEPLOY.format(part="webapp", extra="").replace(
            "someone/todo-webapp:latest", "ghcr.io/acme/acme.dev:v4"),
    })
    r = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    assert not any("packages/cli/" in n and "inferred" in n for n in r.notices)
    (budget,) = r.budgets
    assert budget.peak != 3 * 40
