"""A Flask app whose database URL is an f-string in a config class (the shape of
testdrivenio/flask-vue-kubernetes' project/config.py, written here in our own words):
the literal host of `f'postgresql://{USER}:{PASSWORD}@db-host:5432/shop'` is known though
its user and password are not; the config class `app.config.from_object` loads gives
SQLALCHEMY_DATABASE_URI. And a pool that names no host, in a workload given the
credentials Secret a server's pod is given, is linked to that server as a workload whose
pools are not read is (it was left out of every budget when its source was declared)."""

from __future__ import annotations

import ast
from pathlib import Path

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.model import Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.pyeval import PyScope, module_names
from advisor.read.apps.urls import route_from_url
from advisor.read.fs import Root
from tests.apphelpers import container, product
from tests.tree_helpers import write


def _names(code: str, env: dict | None = None) -> dict:
    scope = PyScope(path="settings.py", env={v.name: v for v in container(env or {}).env},
                    cpus=2)
    return {k: v.value for k, v in module_names(ast.parse(code), scope).items()}


def test_an_fstring_puts_in_known_fields_and_leaves_the_others_as_placeholders():
    names = _names("import os\nUSER = os.getenv('APP_DB_USER')\nHOST = 'db-host'\nPORT = 6432\n"
                   "A = f'postgresql://{USER}:{os.environ.get(\"APP_DB_PASS\")}@db-host/shop'\n"
                   "B = f'postgresql://app@{HOST}:{PORT}/shop'\n"
                   "C = f'{PORT:05d}'\n"
                   "D = f'postgresql://app@{lookup()}/shop'\n",
                   env={"APP_DB_USER": "shopper"})
    assert names["A"] == "postgresql://shopper:${os.environ.get('APP_DB_PASS')}@db-host/shop"
    assert names["B"] == "postgresql://app@db-host:6432/shop"
    assert names["C"] == "${PORT}"  # a format spec is not applied here
    assert names["D"] == "postgresql://app@${lookup()}/shop"


def test_a_placeholder_is_no_user_name_and_no_host():
    route = route_from_url("postgresql://${USER}:${PASS}@db-host:5432/shop", Source(path="x"))
    assert (route.host, route.port, route.dbname, route.user) == ("db-host", 5432, "shop", None)
    assert route_from_url("postgresql://app@${lookup()}/shop", Source(path="x")) is None


CONFIG = """\
import os

DB_USER = os.environ.get('APP_DB_USER')
DB_PASS = os.environ.get('APP_DB_PASS')
URL = f'postgresql://{DB_USER}:{DB_PASS}@HOST:5432/shop'


class Base:
    DEBUG = False
    SQLALCHEMY_TRACK_MODIFICATIONS = False


class Dev(Base):
    SQLALCHEMY_DATABASE_URI = URL


class Prod(Base):
    SQLALCHEMY_DATABASE_URI = URL
"""
APP = """\
import os

from flask import Flask
from flask_sqlalchemy import SQLAlchemy

db = SQLAlchemy()


def make_app():
    app = Flask(__name__)
    app.config.from_object(os.getenv('SHOP_CONFIG'))
    db.init_app(app)
    return app
"""


def _pools(tmp_path: Path, files: dict[str, str], env: dict | None = None):
    write(tmp_path, files)
    return pools_for_container(container(env or {}, command=("gunicorn", "shop:app")),
                               scan_app_dir(Root.of(tmp_path), "")).pools


def test_the_config_classes_fstring_url_gives_the_pool_its_route(tmp_path):
    pools = _pools(tmp_path, {"shop/config.py": CONFIG.replace("HOST", "db-host"),
                              "shop/__init__.py": APP})
    assert product(pools) == "1 x 15 = 15"
    r = pools[0].route
    assert (r.host, r.port, r.dbname, r.user) == ("db-host", 5432, "shop", None)
    assert (r.source.path, r.source.line) == ("shop/config.py", 5)


def test_the_class_from_object_loads_is_the_one_read(tmp_path):
    config = CONFIG.replace("HOST", "db-host").replace(
        "    SQLALCHEMY_DATABASE_URI = URL\n\n\nclass Prod",
        "    SQLALCHEMY_DATABASE_URI = 'sqlite:///dev.db'\n\n\nclass Prod")
    files = {"shop/config.py": config, "shop/__init__.py": APP}
    (pool,) = _pools(tmp_path, files, env={"SHOP_CONFIG": "shop.config.Prod"})
    assert pool.route.host == "db-host"
    # Dev is SQLite: no PostgreSQL pool
    assert _pools(tmp_path, files, env={"SHOP_CONFIG": "shop.config.Dev"}) == []
    # which class is loaded is not known and the classes disagree: no URL is taken
    (pool,) = _pools(tmp_path, files)
    assert pool.route is None


def test_a_class_inherits_its_bases_url(tmp_path):
    config = CONFIG.replace("HOST", "db-host").replace(
        "class Base:\n", "class Base:\n    SQLALCHEMY_DATABASE_URI = URL\n").replace(
        "class Prod(Base):\n    SQLALCHEMY_DATABASE_URI = URL\n",
        "class Prod(Base):\n    DEBUG = False\n")
    (pool,) = _pools(tmp_path, {"shop/config.py": config, "shop/__init__.py": APP},
                     env={"SHOP_CONFIG": "shop.config.Prod"})
    assert pool.route.host == "db-host"


SERVER = """
apiVersion: v1
kind: Service
metadata: {name: db-host}
spec:
  selector: {app: db}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: "postgres:15"
          env:
            - name: POSTGRES_PASSWORD
              valueFrom: {secretKeyRef: {name: db-login, key: password}}
"""


def shop(secret: str) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: shop}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: shop
          image: acme/shop-api:1.0
          env:
            - {{name: SHOP_CONFIG, value: shop.config.Dev}}
            - name: APP_DB_USER
              valueFrom: {{secretKeyRef: {{name: {secret}, key: user}}}}
"""


DECLARED = '[[workloads]]\nname = "shop"\nsource = "services/api"\n'


def _check(tmp_path: Path, host: str, secret: str = "db-login"):
    write(tmp_path, {"deploy/db.yaml": SERVER, "deploy/shop.yaml": shop(secret),
                     ".pool-advisor.toml": DECLARED,
                     "services/api/shop/config.py": CONFIG.replace("HOST", host),
                     "services/api/shop/__init__.py": APP,
                     "services/api/requirements.txt": "Flask-SQLAlchemy\ngunicorn\n",
                     "services/api/Dockerfile": 'FROM python:3.12\nCMD ["gunicorn", "shop:app"]\n'})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    return result, budget


def test_a_declared_source_s_fstring_host_links_its_pool(tmp_path):
    _, budget = _check(tmp_path, "db-host")
    # 2 pods x 1 gunicorn worker x (pool_size 5 + max_overflow 10)
    assert budget.peak == 30 and not budget.peak_is_floor
    (c,) = budget.contributions
    assert c.who == "shop"


def test_a_pool_with_no_host_links_to_the_server_whose_credentials_it_shares(tmp_path):
    result, budget = _check(tmp_path, "{lookup_host()}")
    assert budget.peak == 30 and not budget.peak_is_floor and budget.unplaced_clients == []
    assert any("shop: opens Flask-SQLAlchemy pool_size + max_overflow on no host it names; "
               "APP_DB_USER" in n and "also gives server Deployment/db its credentials: "
               "linked to it" in n for n in result.notices), result.notices
    # another Secret: nothing links it, so it may connect to any server (a floor)
    result, budget = _check(tmp_path, "{lookup_host()}", secret="mail-login")
    assert budget.peak == 0 and budget.peak_is_floor and budget.unplaced_clients == ["shop"]


# raptor103/kubernetes-docker-flask-postgres-sqlalchemy-gunicorn-tutorial shape: the URI is
# in a Python file with another extension that app.config.from_pyfile executes
PYFILE_APP = """\
from flask import Flask
from flask_sqlalchemy import SQLAlchemy

app = Flask(__name__)
app.config.from_pyfile('settings.cfg')
db = SQLAlchemy()
db.init_app(app)
"""


def test_from_pyfile_config_gives_the_uri(tmp_path):
    """Audit 34: the URI in config.cfg (from_pyfile) was not read, so the workload
    'names no database host' and the server's peak was a floor (cannot tell, exit 0);
    it is 2 pods x 15 = 30 on that server."""
    write(tmp_path, {
        "web/app.py": PYFILE_APP,
        "web/settings.cfg": "SQLALCHEMY_DATABASE_URI = 'postgresql+psycopg2://u:p@db:5432/x'\n",
        "web/requirements.txt": "flask\nflask-sqlalchemy\npsycopg2-binary\n",
        "k8s/db.yaml": """
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: postgres, image: "postgres:16"}]
""",
        "k8s/web.yaml": """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - {name: web, image: me/web:1, command: [gunicorn, -w, "1", "app:app"]}
"""})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.peak == 30 and not budget.unplaced_clients, budget
