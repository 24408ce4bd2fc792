"""A pool read from an application's code whose host the repository does not name is
no silent zero (audit of session 20 on real repositories: testdrivenio/node-kubernetes
and flask-vue-kubernetes printed `fits, peak 0 (no client or pooler connects to it)`
beside a notice that the pool was read): it may connect to any server here, so each
peak is a floor. And a JavaScript template literal URL whose user and password are
`${...}` still names its host (node-kubernetes' knexfile.js)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

DB = """
apiVersion: v1
kind: Service
metadata: {name: postgres}
spec:
  selector: {app: postgres}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: postgres}
spec:
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers:
        - {name: postgres, image: "postgres:14-alpine"}
"""
NODE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: node}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: node
          image: gcr.io/acme/todos:v0.0.1
          env:
            - {name: NODE_ENV, value: development}
            - {name: PORT, value: "3000"}
"""
PACKAGE = '{"name": "todos", "dependencies": {"knex": "^3.1.0", "pg": "^8.11.0"}}\n'
KNEXFILE = """\
const POSTGRES_USER = process.env.POSTGRES_USER;
const POSTGRES_PASSWORD = process.env.POSTGRES_PASSWORD;
const DATABASE_URL = `postgresql://${POSTGRES_USER}:${POSTGRES_PASSWORD}@HOST:5432/todos`

module.exports = {
  development: {
    client: 'pg',
    connection: DATABASE_URL,
    pool: { min: 2, max: 7 },
  },
};
"""
KNEX_JS = """\
const environment = process.env.NODE_ENV || 'development';
const config = require('../../knexfile')[environment];
module.exports = require('knex')(config);
"""
DOCKERFILE = "FROM node:20-alpine\nWORKDIR /usr/src/app\nCOPY . .\nCMD [\"npm\", \"start\"]\n"


def _check(tmp_path, host: str):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/node.yaml": NODE, "package.json": PACKAGE,
                     "knexfile.js": KNEXFILE.replace("HOST", host), "src/db/knex.js": KNEX_JS,
                     "Dockerfile": DOCKERFILE})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    return result, budget


def test_template_literal_url_with_unknown_credentials_names_its_host(tmp_path):
    _, budget = _check(tmp_path, "postgres")
    assert budget.peak == 7 and not budget.peak_is_floor
    (c,) = budget.contributions
    assert c.who == "node"


def test_a_pool_read_with_no_host_makes_every_peak_a_floor(tmp_path):
    # the host itself is a value not known here: the pool is read, where it goes is not
    result, budget = _check(tmp_path, "${POSTGRES_HOST}")
    assert budget.peak == 0 and budget.peak_is_floor, budget
    assert budget.unplaced_clients == ["node"]
    assert not budget.fits
    assert any("may connect to any server here" in n for n in result.notices)


# DB, its pod given its password from a Secret
SERVER_WITH_SECRET = DB.replace(
    '        - {name: postgres, image: "postgres:14-alpine"}\n',
    "        - name: postgres\n"
    '          image: "postgres:14-alpine"\n'
    "          env:\n"
    "            - name: POSTGRES_PASSWORD\n"
    "              valueFrom: {secretKeyRef: {name: postgres-credentials, key: password}}\n")


def flask(secret: str) -> str:
    """flask-vue-kubernetes' shape: the app is given the server's credentials and its
    host is in its own code (a config class), whose folder is not found."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: flask}}
spec:
  replicas: 1
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: flask
          image: mjhea0/flask-kubernetes:latest
          env:
            - {{name: APP_SETTINGS, value: project.config.DevelopmentConfig}}
            - name: POSTGRES_USER
              valueFrom: {{secretKeyRef: {{name: {secret}, key: user}}}}
"""


def test_the_server_s_credentials_link_a_workload_whose_host_is_not_read(tmp_path):
    write(tmp_path, {"k8s/db.yaml": SERVER_WITH_SECRET,
                     "k8s/flask.yaml": flask("postgres-credentials")})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.unknown_clients == ["flask"] and budget.peak_is_floor and not budget.fits
    assert any("comes from Secret postgres-credentials, which also gives server "
               "Deployment/postgres its credentials" in n for n in result.notices)
    # another Secret: nothing links it, and it opens nothing read
    write(tmp_path, {"k8s/flask.yaml": flask("mail-credentials")})
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    assert budget.unknown_clients == [] and budget.peak == 0


ERB_WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: <%= replicas %>
  template:
    spec:
      containers:
        - name: web
          image: acme/web:<%= current_sha %>
          env:
            - name: DATABASE_URL
              value: <%= database_url %>
"""


def test_an_erb_template_of_a_workload_makes_every_peak_a_floor(tmp_path):
    """krane's config/deploy/*.yaml.erb (rubygems.org): the deployment is in templates
    this tool does not render, so a server beside them cannot be said to fit."""
    write(tmp_path, {"k8s/db.yaml": DB, "config/deploy/web.yaml.erb": ERB_WEB,
                     "config/database.yml.erb": "production:\n  pool: 5\n"})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.unplaced_clients == ["config/deploy/web.yaml.erb (ERB template, not "
                                       "rendered)"]
    assert budget.peak_is_floor and not budget.fits
    assert any(n.startswith("ERB template config/deploy/web.yaml.erb holds Deployment")
               for n in result.notices)


@pytest.mark.parametrize("name", ["deploy/web.yaml.tpl", "k8s/web.yml.j2",
                                  "k8s/web.yaml.template", "config/kubernetes/prod/web.tpl"])
def test_a_manifest_template_of_a_workload_makes_every_peak_a_floor(tmp_path, name):
    """Manifests kept as envsubst or Jinja templates (audit 13e N4: gal-projects'
    k8s/*.yaml.tpl; ministryofjustice's config/kubernetes/*/deployment.tpl, audit 20) are
    not read and were not said: the server beside them said fits."""
    write(tmp_path, {"k8s/db.yaml": DB, name: ERB_WEB.replace("<%= ", "${").replace(
        " %>", "}")})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.unplaced_clients == [f"{name} (manifest template, not rendered)"]
    assert budget.peak_is_floor and not budget.fits
    assert any(n.startswith(f"manifest template {name} holds Deployment")
               for n in result.notices)


def test_a_template_in_a_chart_is_the_chart_s(tmp_path):
    """Helm renders every file of a chart's templates/ whatever its suffix: such a file
    is not a template left unrendered."""
    write(tmp_path, {"k8s/db.yaml": DB, "chart/Chart.yaml": "apiVersion: v2\nname: c\n"
                     "version: 0.1.0\n", "chart/templates/web.yaml.tpl": "{{- /* x */ -}}\n"
                     + ERB_WEB.replace("<%= ", "{{ .Values.").replace(" %>", " }}")})
    result = run_check([str(tmp_path)], CheckOptions())
    assert result.budgets
    assert not any("template, not rendered" in c for b in result.budgets
                   for c in b.unplaced_clients)
    assert not any("template chart/templates" in n for n in result.notices)


TRADER_STACK = """
apiVersion: v1
kind: Secret
metadata: {name: app-secret}
stringData: {POSTGRES_USER: app, POSTGRES_PASSWORD: change-me, EXCHANGE_KEY: x}
---
apiVersion: v1
kind: Service
metadata: {name: postgres}
spec:
  selector: {app: postgres}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: postgres}
spec:
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers:
        - name: postgres
          image: "postgres:16-alpine"
          envFrom: [{secretRef: {name: app-secret}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: trader}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: trader
          image: acme/trader:local
          envFrom: [{secretRef: {name: app-secret}}]
"""


@pytest.mark.parametrize(("requirements", "client"), [
    ("requests==2.32.3\nschedule==1.2.2\n", False),
    ("requests==2.32.3\npsycopg2-binary==2.9.9\n", True)])
def test_shared_credentials_do_not_make_an_app_without_a_database_library_a_client(
        tmp_path, requirements, client):
    """shinjbin/jaybee-lab's shape: every Deployment takes the app Secret by envFrom, the
    server's credentials among its keys; the trader's requirements name no database
    library, so those credentials do not make it a client of unknown size (the budget
    was a floor, 'cannot tell', where the overlay alone said it fits)."""
    write(tmp_path, {"k8s/all.yaml": TRADER_STACK,
                     "trader/requirements.txt": requirements,
                     "trader/main.py": "import requests\n",
                     "trader/Dockerfile": 'FROM python:3.12\nCMD ["python", "main.py"]\n'})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert (budget.unknown_clients == ["trader"]) is client
    assert budget.peak_is_floor is client
    assert any("trader/requirements.txt names no database library (requests, schedule)"
               in n for n in result.notices) is not client
