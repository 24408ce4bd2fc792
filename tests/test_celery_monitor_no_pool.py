"""A Celery monitor (`celery -A proj flower`, `celery events`) runs no task, so it opens
none of the application's pools. larsrinn/kubernetes_django (audit 15 D2): its flower
Deployment runs the Django image with no database host in its env; the Django reader
gave it a pool with no route, "it may connect to any server here", and the server
printed "cannot tell, >= 15" instead of "fits 15 <= 97". Now Flower is no client (a
notice says why), whether its env names the database or not; a `db+` Celery result
backend is still counted (Flower's task-result API reads it)."""

from __future__ import annotations

from advisor.engine.check import run_check
from tests.tree_helpers import write

DB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: pg}
spec:
  replicas: 1
  selector: {matchLabels: {app: pg}}
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers: [{name: pg, image: "postgres:15"}]
---
apiVersion: v1
kind: Service
metadata: {name: pg-svc}
spec:
  selector: {app: pg}
  ports: [{port: 5432}]
"""


def _deploy(name: str, image: str, command: str, env: str) -> str:
    return f"""\
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: {name}
          image: {image}
          {command}
          env: [{env}]
"""


SETTINGS = """\
import os
DATABASES = {
    'default': {
        'ENGINE': 'django.db.backends.postgresql',
        'NAME': 'site',
        'HOST': os.getenv('DB_HOST'),
    }
}
"""

FLOWER = 'command: ["celery", "-A", "proj", "flower"]'


def _django_tree(tmp_path, flower_env: str):
    return write(tmp_path, {
        "k8s/db.yaml": DB,
        "k8s/apps.yaml": _deploy("web", "me/site:1", "", "{name: DB_HOST, value: pg-svc}")
        + _deploy("flower", "me/site:1", FLOWER, flower_env),
        "proj/settings.py": SETTINGS, "proj/__init__.py": "",
        "manage.py": "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', "
                     "'proj.settings')\n",
        "requirements.txt": "Django\ncelery\nflower\npsycopg2-binary\ngunicorn\n",
        "Dockerfile": "FROM python:3.11\nCOPY . .\nCMD gunicorn proj.wsgi\n"})


def _pg(r):
    (b,) = [b for b in r.budgets if b.server == "pg"]
    return b


def test_flower_without_a_database_host_is_no_client(tmp_path):
    r = run_check([_django_tree(tmp_path, "{name: REDIS_HOST, value: redis}")])
    b = _pg(r)
    assert b.fits and not b.unplaced_clients  # before: cannot tell, flower unplaced
    assert [c.who for c in b.contributions] == ["web"]
    assert any("runs Celery flower, which runs no task" in n for n in r.notices)


def test_flower_given_the_database_host_is_no_client_either(tmp_path):
    r = run_check([_django_tree(tmp_path, "{name: DB_HOST, value: pg-svc}")])
    assert [c.who for c in _pg(r).contributions] == ["web"]  # before: web and flower


def test_flower_of_an_image_not_built_here_with_a_database_url(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/apps.yaml": _deploy(
        "flower", "someorg/site:1", FLOWER,
        '{name: DATABASE_URL, value: "postgresql+psycopg2://u:p@pg-svc:5432/site"}')})
    b = _pg(run_check([tmp_path]))
    assert b.contributions == [] and b.fits  # before: 2 x SQLAlchemy QueuePool 15


def test_a_db_result_backend_is_still_counted_for_flower(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/apps.yaml": _deploy(
        "flower", "someorg/site:1", FLOWER,
        '{name: CELERY_RESULT_BACKEND, value: "db+postgresql://u:p@pg-svc:5432/r"}')})
    b = _pg(run_check([tmp_path]))
    assert [(c.who, c.total) for c in b.contributions] == [("flower", 2)]  # NullPool: 1


def test_flower_sharing_the_workers_configmap_of_an_image_not_read(tmp_path):
    # Andrey-Omelyanuk/dev-cluster's infobiz flower: `celery -A main flower`, envFrom
    # the ConfigMap that names the database for the API and the workers too
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/apps.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata: {name: back}
data: {DB_HOST: pg-svc, DB_NAME: site}
""" + _deploy("flower", "back", 'command: ["celery", "-A", "main", "flower"]', "")
        .replace("env: []", "envFrom: [{configMapRef: {name: back}}]")})
    r = run_check([tmp_path])
    b = _pg(r)
    assert b.contributions == [] and b.fits and not b.unknown_clients
    assert not [f for f in r.findings if f.code in ("PA106", "PA107")]
