"""audit 14 D2 (annachemicz/cpu_ram_monitoring): a README says `cd ./backend`, then
`docker build -t node-backend:latest .`; the folder is project/backend (its only folder of
that name with a Dockerfile), whose index.js opens `new Pool({host: "postgres", ...})`; the
Deployment's container has no env. Before, the build was taken as run at the README's
folder or the root, the backend's source was not found, and the server printed "fits,
peak 0 (no client ... connects to it)", exit 0. Now the `cd` is followed and the Pool's
own literal host is its route: 2 pods x 10 counted."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.read.apps.locate import scan_build_hints
from advisor.read.fs import Root
from tests.tree_helpers import write

DB = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: db
spec:
  replicas: 1
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
        - name: db
          image: postgres:16
---
apiVersion: v1
kind: Service
metadata:
  name: shopdb
spec:
  selector: {app: db}
  ports: [{port: 5432}]
"""

API = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: shop-api:latest
          imagePullPolicy: Never
"""

README = "Go to the backend folder:\n\ncd ./api\n\ndocker build -t shop-api:latest .\n"
DOCKERFILE = "FROM node:20-alpine\nCOPY server.js .\nCMD [\"node\", \"server.js\"]\n"
PACKAGE = '{"name": "shop-api", "dependencies": {"pg": "^8.11.0"}}\n'
SERVER = ('const { Pool } = require("pg");\n'
          'const pool = new Pool({ host: "%s", user: "shop", database: "shop", max: 7 });\n'
          'module.exports = () => pool.query("SELECT 1");\n')


def _app(folder: str, host: str = "shopdb") -> dict[str, str]:
    return {f"{folder}/Dockerfile": DOCKERFILE, f"{folder}/package.json": PACKAGE,
            f"{folder}/server.js": SERVER % host}


def test_a_readme_cd_names_where_the_build_runs(tmp_path):
    write(tmp_path, {"kubernetes/README.md": README, **_app("project/api"),
                     "other/Dockerfile": DOCKERFILE})
    hints = scan_build_hints(Root.of(tmp_path))
    assert [(i, d) for i, d, _ in hints.contexts] == [("shop-api:latest", "project/api")]


def test_a_cd_to_a_folder_not_known_drops_the_build(tmp_path):
    # two folders named api: where `cd ./api` went is not known, and `.` is not the root
    write(tmp_path, {"kubernetes/README.md": README, **_app("project/api"),
                     **_app("legacy/api")})
    hints = scan_build_hints(Root.of(tmp_path))
    assert hints.contexts == ()


def test_the_readme_built_pool_counts_on_the_server_its_literal_host_names(tmp_path):
    write(tmp_path, {"kubernetes/README.md": README, "kubernetes/db.yaml": DB,
                     "kubernetes/api.yaml": API % "api-deployment", **_app("project/api")})
    r = run_check([tmp_path])
    (b,) = r.budgets
    assert b.peak == 28 and b.fits  # (3 + 1 surge) x 7


DECLARED = '[[workloads]]\nname = "api"\nsource = "src/api"\n'


def test_a_pool_literal_host_is_its_route(tmp_path):
    # the source declared: only the literal host is new here
    write(tmp_path, {"kubernetes/db.yaml": DB, "kubernetes/api.yaml": API % "api",
                     ".pool-advisor.toml": DECLARED, **_app("src/api")})
    (b,) = run_check([tmp_path]).budgets
    assert b.peak == 28 and b.fits


def test_a_loopback_literal_host_is_no_route(tmp_path):
    write(tmp_path, {"kubernetes/db.yaml": DB, "kubernetes/api.yaml": API % "api",
                     ".pool-advisor.toml": DECLARED, **_app("src/api", host="localhost")})
    (b,) = run_check([tmp_path]).budgets
    assert not b.fits and b.unplaced_clients == ["api"]  # may connect here: a floor


def test_an_env_fallback_host_is_no_literal_route(tmp_path):
    # `const HOST = process.env.PGHOST || 'shopdb'` with PGHOST unset: a default of the
    # code, not where this deployment connects (a pod given no env may be another program)
    code = ('const { Pool } = require("pg");\n'
            'const HOST = process.env.PGHOST || "shopdb";\n'
            'const pool = new Pool({ host: HOST, max: 7 });\n')
    write(tmp_path, {"kubernetes/db.yaml": DB, "kubernetes/api.yaml": API % "api",
                     ".pool-advisor.toml": DECLARED, **_app("src/api"),
                     "src/api/server.js": code})
    (b,) = run_check([tmp_path]).budgets
    assert not b.fits and b.unplaced_clients == ["api"]
