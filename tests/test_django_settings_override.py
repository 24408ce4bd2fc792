"""Django settings that override the default alias in a Heroku-style block, and Poetry
dependency tables naming the stack (audit 7b D7: shynet's settings.py and pyproject.toml
gave "cannot tell" where one connection per gunicorn worker was readable)."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.base import StackContext
from advisor.read.apps.identify import DJANGO, identified_pools
from advisor.read.fs import Root
from tests.apphelpers import container, product

SETTINGS = '''import os
from urllib import parse as urlparse

if os.getenv("USE_SQLITE", "no") == "yes":
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "x.db"}}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("PG_NAME"),
            "HOST": os.environ.get("PG_HOST"),
        }
    }

if "DATABASE_URL" in os.environ:
    if "DATABASES" not in locals():
        DATABASES = {}
    url = urlparse.urlparse(os.environ["DATABASE_URL"])
    DATABASES["default"] = DATABASES.get("default", {})
    DATABASES["default"].update({"NAME": url.path[1:], "HOST": url.hostname})
'''


def _write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)


def _pools(tmp_path: Path, settings: str, env: dict[str, str]):
    _write(tmp_path, {"site/site/settings.py": settings,
                      "site/manage.py": "import os\nos.environ.setdefault("
                                        "'DJANGO_SETTINGS_MODULE', 'site.settings')\n"})
    return pools_for_container(container(env, command=("gunicorn", "site.wsgi", "-w", "3")),
                               scan_app_dir(Root.of(tmp_path), ""))


def test_override_block_skipped_when_the_env_lacks_its_variable(tmp_path):
    found = _pools(tmp_path, SETTINGS, {"PG_HOST": "pg-main", "PG_NAME": "site"})
    (pool,) = found.pools
    assert product(found.pools) == "3 x 1 = 3"
    assert pool.route.host == "pg-main"


def test_override_block_read_when_the_env_sets_its_variable(tmp_path):
    # the alias is kept (its ENGINE), its HOST now from the URL: one connection per
    # worker either way, never the alias dropped
    found = _pools(tmp_path, SETTINGS, {"PG_HOST": "pg-main",
                                        "DATABASE_URL": "postgres://u@pg-url:5432/site"})
    assert product(found.pools) == "3 x 1 = 3"


def test_update_with_read_values_sets_the_alias_keys(tmp_path):
    settings = ('import os\nDATABASES = {"default": {"ENGINE": "django.db.backends.postgresql",'
                ' "HOST": "pg-old"}}\nif "PG_REPLICA" not in os.environ:\n'
                '    DATABASES["default"].update({"HOST": os.environ["PG_HOST"], '
                '"CONN_MAX_AGE": 60})\n')
    found = _pools(tmp_path, settings, {"PG_HOST": "pg-new"})
    (pool,) = found.pools
    assert pool.route.host == "pg-new" and product(found.pools) == "3 x 1 = 3"


def test_poetry_dependency_table_identifies_django(tmp_path):
    _write(tmp_path, {"pyproject.toml": '[tool.poetry]\nname = "site"\n\n'
                                        '[tool.poetry.dependencies]\npython = "^3.9"\n'
                                        'Django = "^4"\npsycopg2-binary = "^2.9.2"\n'})
    ctx = StackContext(container=container(), app=scan_app_dir(Root.of(tmp_path), ""),
                       profile=None)
    (pool,) = identified_pools(ctx, None)
    assert pool.label == DJANGO.label and pool.bound == "default"
    assert "stack identified by Django (pyproject.toml:6)" in pool.note


def test_poetry_group_table_and_pep621_list(tmp_path):
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "svc"\ndependencies = [\n'
                                        '    "requests>=2",\n]\n\n'
                                        '[tool.poetry.group.db.dependencies]\n'
                                        'sqlalchemy = {version = "^2.0"}\n'})
    ctx = StackContext(container=container(), app=scan_app_dir(Root.of(tmp_path), ""),
                       profile=None)
    (pool,) = identified_pools(ctx, None)
    assert "stack identified by sqlalchemy (pyproject.toml:8)" in pool.note
