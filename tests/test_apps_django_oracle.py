"""The Django reader against real Django (the `test` extra): the fixture's settings are
loaded by Django itself in a subprocess with the container env, and each alias's host and
psycopg pool max_size (the pool is built, never opened) must match."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container

FIXTURE = Path(__file__).parent / "fixtures_apps" / "django"
ENV = {"DJANGO_SETTINGS_MODULE": "mysite.settings.production", "DB_HOST": "mysite-db-rw",
       "DB_REPLICA_HOST": "mysite-db-ro"}
MEASURE = r"""
import json
from django.conf import settings
from django.db import connections
out = {}
for alias in settings.DATABASES:
    c = connections[alias]
    pool = c.pool
    out[alias] = [c.settings_dict["HOST"], pool.max_size if pool is not None else None]
print(json.dumps(out))
"""


def _django(root: Path, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", MEASURE], cwd=root, capture_output=True,
                         text=True, timeout=60, env={"PATH": "/usr/bin:/bin",
                                                     "PYTHONPATH": str(root), **env})
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout)


def test_fixture_matches_real_django():
    pytest.importorskip("django")
    pytest.importorskip("psycopg_pool")
    real = _django(FIXTURE, ENV)
    found = pools_for_container(container(ENV, command=("gunicorn", "mysite.wsgi")),
                                scan_app_dir(Root.of(FIXTURE), ""))
    ours = {p.label.split()[1]: [p.route.host, int(p.size.value) if "pool" in p.label
                                 else None] for p in found.pools}
    assert ours == real
    assert found.problems == []


def test_persistent_connections_with_pool_are_refused_like_django(tmp_path):
    pytest.importorskip("django")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "settings.py").write_text(
        "DATABASES = {'default': {'ENGINE': 'django.db.backends.postgresql', 'HOST': 'pg',\n"
        "    'CONN_MAX_AGE': 60, 'OPTIONS': {'pool': True}}}\n")
    env = {"DJANGO_SETTINGS_MODULE": "app.settings"}
    assert "Pooling doesn't support persistent connections" in _django(tmp_path, env)["error"]
    found = pools_for_container(container(env), scan_app_dir(Root.of(tmp_path), ""))
    (problem,) = found.problems
    assert "Pooling doesn't support persistent connections" in problem.message
    assert problem.fatal and problem.location.label() == "app/settings.py:2"
