"""audit 14 D5 (thaddavis/express_api_backed_by_postgres_db): node-postgres `new
pg.Client(url)` was not read, so its server said "no client read connects". A Client owns
one connection (pg lib/client.js: one Connection made in the constructor, and a Client
connected once cannot connect again), so one made at module load is 1 per process; one
made per request is one per request in flight, unbounded; one made in another function
is as many as its calls, not read. Written in our own words, in the repository's shape."""

from __future__ import annotations

from advisor.engine.check import run_check
from tests.tree_helpers import write

DB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: postgres, namespace: db}
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
metadata: {name: postgres, namespace: db}
spec:
  selector: {app: postgres}
  ports: [{port: 6000, targetPort: 5432}]
"""

API = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: express, namespace: api}
spec:
  replicas: 2
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: express}}
  template:
    metadata: {labels: {app: express}}
    spec:
      containers: [{name: express, image: "acme/express-api:v3"}]
"""

HEAD = ("const express = require('express')\nconst pg = require('pg')\n"
        "const app = express()\nconst url = 'postgres://u:p@postgres.db:6000/shop'\n")


def _check(tmp_path, server_js: str, extra: dict[str, str] | None = None):
    write(tmp_path, {"db/k8s/db.yaml": DB, "api/k8s/deployment.yaml": API,
                     "api/Dockerfile": "FROM node:20\nCOPY src .\nCMD [\"node\", \"server.js\"]\n",
                     "api/src/package.json": '{"name": "src", "dependencies": '
                                             '{"express": "^4.18.0", "pg": "^8.8.0"}}\n',
                     "api/src/server.js": server_js, **(extra or {})})
    (b,) = run_check([tmp_path]).budgets
    return b


def test_a_client_made_at_module_load_is_one_connection(tmp_path):
    b = _check(tmp_path, HEAD + "const client = new pg.Client(url)\n"
               "client.connect()\napp.get('/', (req, res) => client.query('SELECT 1'))\n"
               "app.listen(5000)\n")
    assert b.peak == 3 and b.fits  # (2 + 1 surge) x 1


def test_a_client_connected_in_a_function_run_at_once_is_one(tmp_path):
    b = _check(tmp_path, "import { Client } from 'pg'\nlet client\n"
               "(async () => {\n  client = new Client({ connectionString: "
               "'postgres://u:p@postgres.db:6000/shop' })\n  await client.connect()\n})()\n")
    assert b.peak == 3 and b.fits


def test_a_client_made_per_request_is_unbounded(tmp_path):
    b = _check(tmp_path, HEAD + "app.get('/items', async (req, res) => {\n"
               "  const client = new pg.Client(url)\n  await client.connect()\n"
               "  res.json((await client.query('SELECT 1')).rows)\n  await client.end()\n})\n")
    assert not b.fits and b.unbounded_clients


def test_a_client_made_in_another_function_is_unknown(tmp_path):
    b = _check(tmp_path, HEAD + "function connect() {\n  return new pg.Client(url)\n}\n"
               "module.exports = connect\n")
    # its size is not read, so where it connects is not placed either: a floor
    assert not b.fits and b.unplaced_clients == ["express"] and b.peak == 0


def test_another_library_s_client_is_not_pg_s(tmp_path):
    b = _check(tmp_path, HEAD + "const { Client } = require('@elastic/elasticsearch')\n"
               "const es = new Client({ node: 'http://es:9200' })\n"
               "const pool = new pg.Pool({ connectionString: url, max: 4 })\n")
    assert b.peak == 12 and b.fits  # only the Pool: (2 + 1) x 4


def test_a_client_made_in_a_typescript_method_is_unknown(tmp_path):
    # `async start(): Promise<void> {`: a method's body after its return type
    listener = ("import pg from 'pg'\nexport class Listener {\n  private c?: pg.Client\n"
                "  async start(): Promise<void> {\n    this.c = new pg.Client({ "
                "connectionString: 'postgres://u:p@postgres.db:6000/shop' })\n"
                "    await this.c.connect()\n  }\n}\n")
    b = _check(tmp_path, HEAD + "app.listen(5000)\n", {"api/src/listener.ts": listener})
    assert not b.fits and b.unplaced_clients == ["express"]


def test_a_known_pool_beside_an_unknown_client_is_the_floor(tmp_path):
    """A Pool of 20 read beside a Client whose count is not (made in a method): the pod's
    connections are unknown, but at least the Pool's 20, not 1 (FCFColin/backtest-
    platform's api: its floor fell from 13 pods x 20 = 260 to 13 x 1)."""
    listener = ("import pg from 'pg'\nexport class Listener {\n  private c?: pg.Client\n"
                "  async start(): Promise<void> {\n    this.c = new pg.Client({ "
                "connectionString: 'postgres://u:p@postgres.db:6000/shop' })\n"
                "    await this.c.connect()\n  }\n}\n")
    b = _check(tmp_path, HEAD + "const pool = new pg.Pool({ connectionString: url, max: 20 })\n"
               "app.listen(5000)\n", {"api/src/listener.ts": listener})
    (c,) = b.contributions
    assert c.unknown and c.total == (2 + 1) * 20 and b.peak_is_floor and not b.fits
    assert "counted as the pools read, 20 (" in c.note
