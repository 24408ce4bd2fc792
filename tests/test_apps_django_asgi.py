"""Django under an ASGI server (advisor/read/apps/django.py, processes.py): one
connection per request in flight, unbounded unless the server limits those."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps import default_pools_for_container, pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write

# makeplane/plane apps/api shape: settings from env, the API started by a script that
# runs gunicorn with Uvicorn workers on the ASGI application
SETTINGS = """\
import os
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("POSTGRES_DB"),
        "HOST": os.environ.get("POSTGRES_HOST"),
    }
}
"""
MANAGE = """\
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "api/settings")
"""
ENTRYPOINT = """\
#!/bin/bash
set -e
python manage.py wait_for_db
exec gunicorn -w "$GUNICORN_WORKERS" -k uvicorn.workers.UvicornWorker api.asgi:application \
--bind 0.0.0.0:8000 --max-requests 1200
"""
ENV = {"POSTGRES_HOST": "db", "POSTGRES_DB": "plane", "GUNICORN_WORKERS": "2",
       "DJANGO_SETTINGS_MODULE": "api.settings"}


def _found(tmp_path: Path, command: tuple[str, ...], env: dict[str, str] | None = None):
    write(tmp_path, {"api/settings.py": SETTINGS, "manage.py": MANAGE,
                     "api/__init__.py": "", "bin/docker-entrypoint-api.sh": ENTRYPOINT})
    return pools_for_container(container({**ENV, **(env or {})}, command=command),
                               scan_app_dir(Root.of(tmp_path), ""))


@pytest.mark.parametrize("command", [
    ("./bin/docker-entrypoint-api.sh",),
    ("gunicorn", "--worker-class=uvicorn_worker.UvicornWorker", "api.asgi:application"),
    ("daphne", "-b", "0.0.0.0", "api.asgi:application"),
    ("uvicorn", "api.asgi:application", "--workers", "2"),
])
def test_django_under_asgi_is_one_connection_per_request_unbounded(tmp_path, command):
    """Audit: plane's API (gunicorn -k uvicorn.workers.UvicornWorker) was 1 connection
    per process ('sync workers'); under ASGI each request's sync code runs in a thread
    of its own with its own connection, and nothing limits the requests in flight."""
    (pool,) = _found(tmp_path, command).pools
    assert pool.bound == "unbounded" and "request in flight" in pool.label
    assert "ASGI" in pool.note and "sync workers" not in pool.note


def test_uvicorn_limit_concurrency_bounds_it(tmp_path):
    found = _found(tmp_path, ("uvicorn", "api.asgi:application", "--workers", "3",
                              "--limit-concurrency", "25"))
    (pool,) = found.pools
    assert (pool.bound, pool.size.value, pool.processes.value) == ("fixed", 25, 3)
    assert pool.size.source.key.startswith("--limit-concurrency")
    (pool,) = _found(tmp_path, ("uvicorn", "api.asgi:application"),
                     {"UVICORN_LIMIT_CONCURRENCY": "12"}).pools
    assert pool.size.value == 12 and pool.size.source.key == "UVICORN_LIMIT_CONCURRENCY"
    # a WSGI application served by gunicorn's sync workers keeps one per thread
    (pool,) = _found(tmp_path, ("gunicorn", "--threads", "4", "api.wsgi:application")).pools
    assert (pool.bound, pool.size.value) == ("fixed", 4)


def test_asgi_django_in_a_budget_is_pa102(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/api.yaml": """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  template:
    spec:
      containers:
        - name: api
          image: makeplane/plane-backend:v1
          command: [./bin/docker-entrypoint-api.sh]
          env:
            - {name: POSTGRES_HOST, value: db}
            - {name: POSTGRES_DB, value: plane}
            - {name: GUNICORN_WORKERS, value: "1"}
            - {name: DJANGO_SETTINGS_MODULE, value: api.settings}
"""})
    _found(tmp_path, ())
    result = run_check([str(tmp_path)], CheckOptions())
    assert [f.code for f in result.findings if f.code == "PA102"] == ["PA102"]


# fighthealthinsurance shape, uvicorn started in the background by a script; settings
# whose DATABASES comes from elsewhere (a module not in the source), so not read
UNREAD = """\
import os
from site_db import *  # noqa
SECRET_KEY = os.getenv("SECRET_KEY", "")
"""
START = """\
#!/usr/bin/env bash
uvicorn web.asgi:application --workers "${UVICORN_WORKERS:-2}" &
nginx -g "daemon off;" &
wait
"""


def test_unread_settings_under_asgi_are_unbounded_not_one(tmp_path):
    """Audit 13a D1: settings the reader cannot read fall back to the stack's default,
    which counted 1 connection per uvicorn worker; under ASGI the default is one per
    request in flight, unbounded (PA102), as when the settings are read."""
    write(tmp_path, {"requirements.txt": "django==5.2.9\nuvicorn\n", "manage.py": MANAGE,
                     "web/settings.py": UNREAD, "web/__init__.py": "",
                     "scripts/start-server.sh": START})
    app, box = scan_app_dir(Root.of(tmp_path), ""), container(
        {"UVICORN_WORKERS": "1", "PDBHOST": "db"}, command=("scripts/start-server.sh",))
    assert pools_for_container(box, app).pools == []  # DATABASES not read
    (pool,) = default_pools_for_container(box, app, None).pools
    assert pool.bound == "unbounded" and "request in flight" in pool.label
    assert "no pool setting read" in pool.note and "ASGI (uvicorn)" in pool.note


@pytest.mark.parametrize("command", [
    ("./manage.py", "runserver", "0.0.0.0:8000"),
    ("python", "manage.py", "runserver", "0.0.0.0:8000"),
    ("sh", "-c", "python manage.py migrate && python manage.py runserver 0.0.0.0:8000"),
    ("django-admin", "--settings=api.settings", "runserver"),
])
def test_runserver_is_a_thread_per_request_unbounded(tmp_path, command):
    """Audit 13a D2 (tuanngominh/celery-django-kubernetes-experiment shape): the image's
    CMD `./manage.py runserver` was no server ('the script ./manage.py ... is not in
    the application source': one process, one connection); Django's development server
    is threaded by default, a thread and a connection per request in flight."""
    (pool,) = _found(tmp_path, command).pools
    assert pool.bound == "unbounded" and "request in flight" in pool.label
    assert "runserver" in pool.note and "ASGI" not in pool.note


def test_runserver_nothreading_is_one_connection(tmp_path):
    (pool,) = _found(tmp_path, ("python", "manage.py", "runserver", "--nothreading",
                                "0.0.0.0:8000")).pools
    assert (pool.bound, pool.size.value) == ("fixed", 1)


@pytest.mark.parametrize("command", [
    ("uv", "run", "granian", "--interface", "asgi", "--workers", "4", "api.asgi:application"),
    ("granian", "--interface=asginl", "--workers=4", "api.asgi:application"),
])
def test_granian_asgi_is_unbounded_per_worker(tmp_path, command):
    """Audit 13a D5 (gulfofmaine/buoy_barn shape, CMD `uv run granian --interface asgi
    --workers 4`): granian was no server ('starts no server read here': one process,
    one connection)."""
    (pool,) = _found(tmp_path, command).pools
    assert pool.bound == "unbounded" and pool.processes.value == 4
    assert "ASGI (granian)" in pool.note


def test_granian_wsgi_blocking_threads(tmp_path):
    # granian/server/common.py:168-174: backpressure 1024 // 4 workers = 256, // 2 = 128
    (pool,) = _found(tmp_path, ("granian", "--interface", "wsgi", "api.wsgi:application"),
                     {"GRANIAN_WORKERS": "4"}).pools
    assert (pool.bound, pool.processes.value, pool.size.value) == ("fixed", 4, 128)
    (pool,) = _found(tmp_path, ("granian", "--interface", "wsgi", "--blocking-threads", "2",
                                "api.wsgi:application")).pools
    assert (pool.processes.value, pool.size.value) == (1, 2)


# himdhiman/db-runcode-kubernetes-cluster shape: Django 3.2 + Channels under daphne
@pytest.mark.parametrize(("pin", "shared"), [
    ("Django==3.2.7", True), ("Django==3.1", True), ("django==4.0", False),
    ("Django==3.0.14", False), ("Django>=3.2,<4", False)])
def test_django_before_4_under_asgi_is_one_connection_per_process(tmp_path, pin, shared):
    """Audit 34: Django 3.2.7 under daphne was 'one connection per request in flight,
    unbounded' (PA102, cannot tell). Its ASGIHandler has no ThreadSensitiveContext (4.0
    added it), so asgiref runs every request's sync code in one process-wide thread:
    one connection per process. Django 3.0 and an unpinned range stay unbounded."""
    write(tmp_path, {"requirements.txt": f"{pin}\nchannels==3.0.4\n"})
    (pool,) = _found(tmp_path, ("daphne", "-b", "0.0.0.0", "api.asgi:application")).pools
    if shared:
        assert (pool.bound, pool.size.value) == ("fixed", 1)
        assert pool.size.source.path == "requirements.txt" and pool.size.source.line == 1
        assert "one shared thread" in pool.note
    else:
        assert pool.bound == "unbounded"
    # runserver is WSGI (a thread per request) whatever the Django version
    (pool,) = _found(tmp_path, ("python", "manage.py", "runserver", "0.0.0.0:8000")).pools
    assert pool.bound == "unbounded"


@pytest.mark.parametrize("port", ["", '\n        "PORT": os.getenv("POSTGRES_PORT", 5432),'])
def test_a_migrate_init_container_is_within_an_unbounded_runserver_pool(tmp_path, port):
    """Audit 34 (pasiol/django-k8s-demo): an init container's `manage.py migrate` (1)
    exits before runserver starts, whose unbounded pool holds at least that one: the
    pod's floor is 1, not 1 + 1 (an unbounded pool's per_pod() was 0, so the init pool
    was summed; and the settings' port 5432 was another server than no port)."""
    settings = SETTINGS.replace('"HOST": os.environ.get("POSTGRES_HOST"),',
                                '"HOST": os.environ.get("POSTGRES_HOST"),' + port)
    write(tmp_path, {"api/settings.py": settings, "manage.py": MANAGE, "api/__init__.py": "",
                     "k8s/db.yaml": DB, "k8s/api.yaml": """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    spec:
      initContainers:
        - name: migrate
          image: me/api:1
          command: [/bin/sh, -c, python manage.py migrate]
          env: [{name: POSTGRES_HOST, value: db},
                {name: DJANGO_SETTINGS_MODULE, value: api.settings}]
      containers:
        - name: api
          image: me/api:1
          command: [python, manage.py, runserver, 0.0.0.0:8000]
          env: [{name: POSTGRES_HOST, value: db},
                {name: DJANGO_SETTINGS_MODULE, value: api.settings}]
"""})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.peak == 3 and budget.unbounded_clients, budget
    assert any("of its init containers not counted at peak" in n for n in result.notices)
