"""Settings that build DATABASE_URL themselves before django-environ reads it (audit 34
D9, StefanKjartansson/django-k8s-gcp-skeleton shape, written here in our own words):
`os.environ.setdefault("DATABASE_URL", "postgres://%s:%s@%s/%s" % parts)` with `parts =
tuple([os.environ.get(n) for n in [...]])`, then `DATABASES = {"default": env.db()}`.
The pod sets DB_HOST and the rest, not DATABASE_URL: the URL the settings put in the env
is the one env.db() reads (django-environ 0.4.5 environ/environ.py Env.db_url: `self.get_
value(var, default=default)` reads os.environ), so the alias is PostgreSQL at DB_HOST,
not "a URL helper with no DATABASE_URL; engine unknown" with the client dropped."""

import ast
from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.pyeval import PyScope, module_names
from advisor.read.fs import Root
from tests.apphelpers import container

SETTINGS = '''import os

import environ

if os.environ.get("DATABASE_URL") is None:
    parts = tuple([os.environ.get(name)
                   for name in ["DB_USER", "DB_PASS", "DB_HOST", "DB_NAME"]])
    if None in parts:
        raise RuntimeError("database settings missing")
    os.environ.setdefault("DATABASE_URL", "postgres://%s:%s@%s/%s" % parts)

env = environ.Env(DEBUG=(bool, False))
SECRET_KEY = env("SECRET_KEY")
DATABASES = {
    "default": env.db(),
}
'''
MANAGE = '''import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
'''


def test_printf_formatting_of_a_comprehension_keeps_the_known_host():
    scope = PyScope(path="s.py", env={v.name: v for v in container(
        {"DB_HOST": "shopdb:5432", "DB_USER": None, "DB_NAME": "shop"}).env}, cpus=2)
    names = module_names(ast.parse(
        "import os\nparts = tuple([os.environ.get(n) for n in ['DB_USER', 'DB_HOST', 'DB_NAME']])\n"
        "URL = 'postgres://%s@%s/%s' % parts\nPCT = '%(h)s:%d%%' % {'h': 'x'}\n"), scope)
    assert names["URL"].value == "postgres://${DB_USER}@shopdb:5432/shop"
    assert names["PCT"].value == "x:${arg0}%"


def test_the_url_the_settings_put_in_the_env_is_the_alias_s(tmp_path: Path):
    for name, text in {"manage.py": MANAGE, "shop/__init__.py": "", "shop/settings.py": SETTINGS,
                       "requirements.txt": "Django==2.0.8\ndjango-environ==0.4.5\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = pools_for_container(
        container({"DB_HOST": "shopdb:5432", "DB_NAME": "shop", "DB_USER": None,
                   "DB_PASS": None}, command=("python", "manage.py", "runserver", "0:8000")),
        scan_app_dir(Root.of(tmp_path), ""))
    (pool,) = found.pools
    assert pool.bound == "unbounded" and pool.route is not None, pool
    assert pool.route.host == "shopdb" and pool.route.dbname == "shop" and pool.route.port == 5432
    assert not any("engine unknown" in n for n in found.notices), found.notices
