"""django-configurations settings (audit 13a N1) and the settings module found through
the Dockerfile's COPY into WORKDIR (N2). Trees written in the shape of
osstorres/django-k8s-pycon2024 (class-body DatabaseURLValue, Dev over Base) and
fighthealthinsurance (`@property def DATABASES` branching on PG_USE_POOL)."""

from __future__ import annotations

from advisor.model import Container, EnvVar, Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product
from tests.tree_helpers import write

MANAGE = """\
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")
    os.environ.setdefault("DJANGO_CONFIGURATION", "Dev")
"""

# pycon2024 shape: the base class a SQLite dict, the chosen class a DatabaseURLValue
URL_VALUE = """\
from pathlib import Path
from configurations import Configuration, values

BASE_DIR = Path(__file__).resolve().parent.parent


class Base(Configuration):
    DEBUG = True
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}}


class Dev(Base):
    DATABASES = values.DatabaseURLValue(
        "sqlite://:memory:",
        conn_max_age=600,
        conn_health_checks=True,
    )


class Pooled(Base):
    @property
    def DATABASES(self):
        return {"default": {"ENGINE": "django.db.backends.postgresql", "HOST": "pg",
                            "CONN_MAX_AGE": 0,
                            "OPTIONS": {"pool": {"min_size": 2, "max_size": 12}}}}


class Testing(Dev):
    CELERY_TASK_ALWAYS_EAGER = True
"""

# fighthealthinsurance shape: the pool only when a variable says so
BRANCHED = """\
import os
from configurations import Configuration


def _flag(name):
    return (os.getenv(name) or "0").lower() in ("1", "true")


class Base(Configuration):
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "x.db"}}


class Prod(Base):
    @property
    def DATABASES(self):
        options = {"connect_timeout": 10}
        if _flag("PG_USE_POOL"):
            options["pool"] = {"min_size": 2, "max_size": 40}
        return {"default": {"ENGINE": "django.db.backends.postgresql",
                            "HOST": os.getenv("PDBHOST"), "OPTIONS": options}}
"""

DOCKERFILE = """\
FROM python:3.12-alpine
WORKDIR /app
COPY . /app/
CMD ["gunicorn", "--workers", "2", "core.wsgi"]
"""


def _app(tmp_path, settings: str, manage: str = MANAGE):
    write(tmp_path, {"manage.py": manage, "core/__init__.py": "", "core/settings.py": settings,
                     "Dockerfile": DOCKERFILE, "pyproject.toml": "[tool.poetry.dependencies]\n"
                                                                 'django = "^5.1"\n'})
    return scan_app_dir(Root.of(tmp_path), "")


def _gunicorn(env: dict[str, str]):
    return container(env, command=("gunicorn", "--workers", "2", "core.wsgi"))


def test_class_body_database_url_value_is_read(tmp_path):
    """Dev's DatabaseURLValue (from DATABASE_URL) over Base's SQLite dict: PostgreSQL, a
    connection per worker; before, no DATABASES was read at all."""
    found = pools_for_container(
        _gunicorn({"DATABASE_URL": "postgres://u:p@pg:5432/core"}), _app(tmp_path, URL_VALUE))
    (pool,) = found.pools
    assert product(found.pools) == "2 x 1 = 2"
    assert pool.route is not None and pool.route.host == "pg"
    assert found.unknown == []


def test_inherited_database_url_value_and_its_default(tmp_path):
    # Testing inherits Dev's DatabaseURLValue; its default URL is SQLite: no PostgreSQL pool
    found = pools_for_container(_gunicorn({"DJANGO_CONFIGURATION": "Testing"}),
                                _app(tmp_path, URL_VALUE))
    assert found.pools == [] and found.unknown == []


def test_class_from_env_reads_its_property_pool(tmp_path):
    """DJANGO_CONFIGURATION=Pooled: the property's OPTIONS pool max_size 12 per process,
    never the Django default of one per thread."""
    found = pools_for_container(_gunicorn({"DJANGO_CONFIGURATION": "Pooled"}),
                                _app(tmp_path, URL_VALUE))
    (pool,) = found.pools
    assert product(found.pools) == "2 x 12 = 24"
    assert pool.size.source.path == "core/settings.py"


def test_class_name_from_a_secret_is_unknown(tmp_path):
    box = _gunicorn({"DATABASE_URL": "postgres://u:p@pg:5432/core"})
    box = Container(name=box.name, command=box.command, source=box.source, env=(
        *box.env, EnvVar(name="DJANGO_CONFIGURATION", value=None, secret=True, from_ref="ref",
                         source=Source(path="k8s/app.yaml", line=30,
                                       key="DJANGO_CONFIGURATION"))))
    found = pools_for_container(box, _app(tmp_path, URL_VALUE))
    assert found.pools == []
    (why,) = found.unknown
    assert "DJANGO_CONFIGURATION" in why and "django-configurations class" in why


def test_property_branching_on_an_unread_variable_is_unknown(tmp_path):
    """Prod.DATABASES adds an OPTIONS pool when PG_USE_POOL says so, through a helper not
    read here: the size is unknown (PA106), not one connection per worker."""
    found = pools_for_container(_gunicorn({"DJANGO_CONFIGURATION": "Prod", "PDBHOST": "pg"}),
                                _app(tmp_path, BRANCHED))
    assert found.pools == []
    (why,) = found.unknown
    assert "Prod.DATABASES" in why and "PG_USE_POOL" in why


def test_class_not_in_the_module_is_unknown(tmp_path):
    found = pools_for_container(_gunicorn({"DJANGO_CONFIGURATION": "Staging"}),
                                _app(tmp_path, BRANCHED))
    assert found.pools == [] and "'Staging'" in found.unknown[0]


def test_unknown_class_name_when_the_classes_disagree(tmp_path):
    # no env, no literal default: Base and Prod give different DATABASES
    found = pools_for_container(_gunicorn({"PDBHOST": "pg"}),
                                _app(tmp_path, BRANCHED, manage="import os\n"))
    assert found.pools == [] and "not set in the container's env" in found.unknown[0]


def test_unread_pool_key_makes_the_size_unknown(tmp_path):
    """Settings whose DATABASES is not read but which write an OPTIONS "pool": the
    default (one connection per thread) would be a number from something not read."""
    settings = ('import os\nfrom .local import build\n\nOPTIONS = {"connect_timeout": 5}\n'
                'if os.getenv("POOL"):\n    OPTIONS["pool"] = {"max_size": 30}\n'
                'DATABASES = build(OPTIONS)\n')
    write(tmp_path, {"core/settings.py": settings, "core/__init__.py": "",
                     "manage.py": 'import os\nos.environ.setdefault("DJANGO_SETTINGS_MODULE", '
                                  '"core.settings")\n'})
    found = pools_for_container(_gunicorn({}), scan_app_dir(Root.of(tmp_path), ""))
    assert found.pools == []
    assert 'OPTIONS "pool"' in found.unknown[0] and "core/settings.py:6" in found.unknown[0]


# tuanngominh shape: `COPY site .` into WORKDIR /code/server, settings at site/mysite/
COPY_SITE = """\
FROM python:3.8
WORKDIR /code/server
COPY pyproject.toml ./
COPY site .
CMD ["gunicorn", "mysite.wsgi"]
"""


def test_settings_module_found_through_the_dockerfile_copy(tmp_path):
    """DJANGO_SETTINGS_MODULE=mysite.settings is /code/server/mysite/settings.py in the
    image: site/mysite/settings.py (COPY site .), not app/mysite/settings.py, another
    project whose path also ends in mysite/settings.py (listed first)."""
    pooled = ('DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", '
              '"HOST": "pg", "OPTIONS": {"pool": {"max_size": 9}}}}\n')
    sample = ('DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", '
              '"HOST": "pg"}}\n')
    write(tmp_path, {"Dockerfile": COPY_SITE, "pyproject.toml": "[project]\nname = 'x'\n",
                     "app/mysite/__init__.py": "", "app/mysite/settings.py": sample,
                     "site/mysite/__init__.py": "", "site/mysite/settings.py": pooled})
    box = container({"DJANGO_SETTINGS_MODULE": "mysite.settings"},
                    command=("gunicorn", "mysite.wsgi"))
    found = pools_for_container(box, scan_app_dir(Root.of(tmp_path), ""))
    (pool,) = found.pools
    assert pool.size.source.path == "site/mysite/settings.py"
    assert product(found.pools) == "1 x 9 = 9"


def test_copy_of_a_source_folder_to_an_absolute_path(tmp_path):
    # `COPY src/ /code/` with WORKDIR /code: DJANGO_SETTINGS_MODULE=settings is src/settings.py
    docker = "FROM python:3.12\nWORKDIR /code\nCOPY src/ /code/\nCMD [\"gunicorn\", \"wsgi\"]\n"
    pooled = ('DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", '
              '"HOST": "pg", "OPTIONS": {"pool": {"max_size": 7}}}}\n')
    other = 'DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3"}}\n'
    write(tmp_path, {"Dockerfile": docker, "src/settings.py": pooled,
                     "lib/settings.py": other, "pyproject.toml": "[project]\nname = 'x'\n"})
    box = container({"DJANGO_SETTINGS_MODULE": "settings"}, command=("gunicorn", "wsgi"))
    found = pools_for_container(box, scan_app_dir(Root.of(tmp_path), ""))
    assert product(found.pools) == "1 x 7 = 7"


def test_class_named_by_the_image_env(tmp_path):
    # analytics_application shape: `ENV DJANGO_CONFIGURATION=...` in the Dockerfile, no
    # default in the modules; the manifest sets none
    app = _app(tmp_path, URL_VALUE, manage="import os\n")
    (tmp_path / "Dockerfile").write_text(DOCKERFILE.replace(
        "WORKDIR /app\n", "ENV DJANGO_CONFIGURATION=Pooled\nWORKDIR /app\n"))
    found = pools_for_container(_gunicorn({}), scan_app_dir(Root.of(tmp_path), ""))
    assert app is not None and product(found.pools) == "2 x 12 = 24"
