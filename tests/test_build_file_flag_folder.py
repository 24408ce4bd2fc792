"""audit 14 D4 (YonathanGuez/to_do_8200AC): a README's sections each say `docker build -t
IMAGE -f Dockerfile.prod .`, one for the server and one for the client; the root holds no
Dockerfile.prod (server/ and client/ both do). Docker reads a local build's -f file from
the folder it runs in (docker/cli context.go GetContextFromLocalDir), so neither build is
the root's. Before, both images were taken as built at the root: the client's pod got the
server's source and Pool, and became a client "which may connect here" (cannot tell
instead of fits). Written in our own words, in the repository's shape."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.read.apps.locate import scan_build_hints
from advisor.read.fs import Root
from tests.tree_helpers import write

README = """\
# Shop

## Server

    docker build -t localhost:5000/shop-api:latest -f Dockerfile.prod .

## Client

    docker build -t localhost:5000/shop-web:latest -f Dockerfile.prod .
"""

DB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "postgres:16"}]
---
apiVersion: v1
kind: Service
metadata: {name: shopdb}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
"""

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers:
        - name: main
          image: localhost:5000/%s:latest
%s"""
ENV = "          env: [{name: PGHOST, value: shopdb}]\n"

API = {"api/Dockerfile.prod": "FROM node:20\nCOPY . .\nCMD [\"node\", \"index.js\"]\n",
       "api/package.json": '{"name": "shop-api", "dependencies": {"pg": "^8.11.0"}}\n',
       "api/index.js": 'const { Pool } = require("pg");\nconst pool = new Pool({ max: 4 });\n'
                       'module.exports = () => pool.query("SELECT 1");\n'}
WEB = {"web/Dockerfile.prod": "FROM node:20 AS build\nCOPY . .\nRUN npm run build\n"
                              "FROM nginx:1.27\nCOPY --from=build /build /usr/share/nginx/html\n",
       "web/package.json": '{"name": "shop-web", "dependencies": {"react": "^18.0.0"}}\n'}


def _contexts(tmp_path) -> list[tuple[str, str]]:
    return [(i, d) for i, d, _ in scan_build_hints(Root.of(tmp_path)).contexts]


def test_a_build_whose_f_file_is_not_where_it_runs_is_not_that_folder_s(tmp_path):
    write(tmp_path, {"README.md": README, **API, **WEB})
    assert _contexts(tmp_path) == []  # the root holds no Dockerfile.prod; two folders do


def test_the_one_folder_holding_the_f_file_is_where_it_runs(tmp_path):
    write(tmp_path, {"README.md": README, **API, "web/package.json": WEB["web/package.json"]})
    assert _contexts(tmp_path) == [("localhost:5000/shop-api:latest", "api"),
                                   ("localhost:5000/shop-web:latest", "api")]


def test_an_f_file_at_the_root_keeps_the_root(tmp_path):
    write(tmp_path, {"README.md": README, "Dockerfile.prod": "FROM node:20\n", **API})
    assert [d for _, d in _contexts(tmp_path)] == ["", ""]


def test_a_cd_s_folder_must_hold_the_f_file(tmp_path):
    write(tmp_path, {"README.md": "cd web\ndocker build -t shop-web -f Dockerfile.prod .\n"
                     "cd api\ndocker build -t shop-api -f docker/Dockerfile .\n", **API, **WEB})
    assert _contexts(tmp_path) == [("shop-web", "web")]  # api/docker/Dockerfile: none


def test_the_client_pod_gets_no_server_pool(tmp_path):
    write(tmp_path, {"README.md": README, **API, **WEB, "backup/Dockerfile": "FROM alpine\n",
                     "k8s/db.yaml": DB,
                     "k8s/api.yaml": DEPLOY % ("api", "api", "api", "shop-api", ENV),
                     "k8s/web.yaml": DEPLOY % ("web", "web", "web", "shop-web", "")})
    (b,) = run_check([tmp_path]).budgets
    assert b.fits and b.peak == 8 and not b.unplaced_clients  # (1 + 1 surge) x 4
