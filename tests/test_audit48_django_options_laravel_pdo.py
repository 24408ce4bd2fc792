"""Audit 48: hazards missed on Django and Laravel applications behind a transaction-mode
PgBouncer.

D1 (AI4Bharat/Chat-Arena-Backend@2447d41): a Django DATABASES entry whose OPTIONS carry
libpq's `options` ("-c statement_timeout=30000") sends the `options` startup parameter
(Django passes OPTIONS to psycopg's connect()): PgBouncer before 1.20 refuses it, 1.20+
takes `-c` only of the parameters it tracks. It was not read, so no PA410.

D2 (Arafatmollik1/laravel-starter-bun, ihrauto/ihrauto-crm): Laravel's pgsql connection
opens PDO without PDO::ATTR_EMULATE_PREPARES, so pdo_pgsql prepares every statement under
the name pdo_stmt_N of its connection: behind PgBouncer < 1.21 (or max_prepared_statements
= 0) another client's pdo_stmt_00000001 collides. config/database.php was not read, so no
PA405.

The reproductions are written in the applications' shape (a backend/<project>/settings.py
with a read replica added when DB_READ_HOST is set; Laravel's config/database.php with its
connections array and `'default' => env('DB_CONNECTION', 'sqlite')`), not copied."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.model import EnvVar, Location, Source, SqlHazard
from advisor.read.sql.drivers import laravel_database, laravel_skeleton, resolve_laravel
from advisor.read.sql.extract import is_sql_candidate, scan_text
from tests.tree_helpers import write

pytest.importorskip("pglast")

BOUNCER_INI = """\
[databases]
arena_db = host=db port=5432 dbname=arena

[pgbouncer]
pool_mode = transaction
listen_addr = 0.0.0.0
listen_port = 6432
auth_type = md5
auth_file = /etc/pgbouncer/userlist.txt
max_client_conn = 1000
default_pool_size = 25
ignore_startup_parameters = extra_float_digits
"""

SETTINGS = """\
import os

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.getenv("DB_NAME"),
        "HOST": os.getenv("DB_HOST"),
        "PORT": os.getenv("DB_PORT"),
        "CONN_MAX_AGE": 600,
        "OPTIONS": {
            "connect_timeout": 10,
            "options": "-c statement_timeout=30000",
        },
    }
}

if os.getenv("DB_READ_HOST"):
    DATABASES["read_replica"] = {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.getenv("DB_READ_HOST"),
        "OPTIONS": {
            "connect_timeout": 10,
            "options": "-c statement_timeout=30000",
        },
    }
"""


def _check(root: Path):
    return run_check([str(root)], CheckOptions(cache=False, root=root))


def _pa4(result) -> list[tuple[str, int | None, str]]:
    return [(f.location.path, f.location.line, f.code) for f in result.findings
            if f.code.startswith("PA4")]


def test_django_options_startup_parameter_is_pa410(tmp_path):
    write(tmp_path, {"pgbouncer/pgbouncer.ini": BOUNCER_INI,
                     "backend/arena_backend/settings.py": SETTINGS,
                     "backend/manage.py": "import os\n"})
    found = _pa4(_check(tmp_path))
    assert found == [("backend/arena_backend/settings.py", 12, "PA410"),
                     ("backend/arena_backend/settings.py", 23, "PA410")]
    # OPTIONS without libpq `options` (or with it empty) sends no startup parameter
    safe = SETTINGS.replace('"options": "-c statement_timeout=30000",', '"options": "",')
    write(tmp_path, {"backend/arena_backend/settings.py": safe})
    assert _pa4(_check(tmp_path)) == []


def test_django_options_assigned_later_and_psycopg_connect_keyword():
    text = ('import os\nDATABASES = {"default": {"ENGINE": "django.db.backends.postgresql"}}\n'
            'DATABASES["default"]["OPTIONS"] = {"options": "-c search_path=app"}\n')
    hazards, _ = scan_text("app/settings.py", text, "python")
    assert [(h.kind, h.detail, h.location.line) for h in hazards
            if h.kind == "startup-parameter"] == [
        ("startup-parameter", "options: -c search_path=app", 3)]
    text = ('import psycopg2\n\n\ndef conn(dsn):\n'
            '    return psycopg2.connect(dsn, options="-c lock_timeout=5s")\n')
    hazards, _ = scan_text("jobs/export.py", text, "python")
    assert [(h.detail, h.location.line) for h in hazards] == [("options: -c lock_timeout=5s", 5)]


DATABASE_PHP = """\
<?php

use Illuminate\\Support\\Str;

return [

    'default' => env('DB_CONNECTION', 'sqlite'),

    'connections' => [

        'sqlite' => [
            'driver' => 'sqlite',
            'database' => env('DB_DATABASE', database_path('database.sqlite')),
        ],

        'mysql' => [
            'driver' => 'mysql',
            'host' => env('DB_HOST', '127.0.0.1'),
            'options' => extension_loaded('pdo_mysql') ? array_filter([
                PDO::MYSQL_ATTR_SSL_CA => env('MYSQL_ATTR_SSL_CA'),
            ]) : [],
        ],

        'pgsql' => [
            'driver' => 'pgsql',
            'url' => env('DB_URL'),
            'host' => env('DB_HOST', '127.0.0.1'),
            'port' => env('DB_PORT', '5432'),
            'charset' => env('DB_CHARSET', 'utf8'),
            'prefix' => '',
            'search_path' => 'public',
            'sslmode' => 'prefer',
        ],

    ],
];
"""
LARAVEL_BOUNCER = """\
[databases]
* = host = postgres port=5432 user=laravel password=laravel dbname=laravel

[pgbouncer]
listen_addr = 0.0.0.0
auth_type = any
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 25
ignore_startup_parameters = extra_float_digits
"""
COMPOSER = '{"require": {"php": "^8.2", "laravel/framework": "^12.0"}}\n'


def test_laravel_pgsql_connection_is_pa405_behind_a_transaction_pooler(tmp_path):
    write(tmp_path, {"composer.json": COMPOSER, "config/database.php": DATABASE_PHP,
                     "docker/pgbouncer/pgbouncer.ini": LARAVEL_BOUNCER})
    result = _check(tmp_path)
    assert _pa4(result) == [("config/database.php", 25, "PA405")]
    [finding] = [f for f in result.findings if f.code == "PA405"]
    assert "pdo_stmt_N" in finding.message and "else 'sqlite'" in finding.message
    assert "the route is assumed" in finding.message  # no workload of the repository read
    # emulated prepares (or pdo_pgsql's disable-prepares) send no named statement
    for option in ("PDO::ATTR_EMULATE_PREPARES => true,",
                   "PDO::PGSQL_ATTR_DISABLE_PREPARES => true,",
                   "Pdo\\Pgsql::ATTR_DISABLE_PREPARES => env('DB_DISABLE_PREPARES', true),"):
        safe = DATABASE_PHP.replace("'sslmode' => 'prefer',",
                                    f"'sslmode' => 'prefer',\n            'options' => [{option}],")
        write(tmp_path, {"config/database.php": safe})
        assert _pa4(_check(tmp_path)) == [], option
    # PgBouncer 1.21+ with max_prepared_statements tracks them: a standalone ini that sets
    # it runs on a PgBouncer that has it (1.18 would not start), as a ConfigMap's ini does
    write(tmp_path, {"config/database.php": DATABASE_PHP, "docker/pgbouncer/pgbouncer.ini":
                     LARAVEL_BOUNCER + "max_prepared_statements = 200\n"})
    result = _check(tmp_path)
    assert _pa4(result) == [] and "PA209" not in {f.code for f in result.findings}
    write(tmp_path, {"docker/pgbouncer/pgbouncer.ini":
                     LARAVEL_BOUNCER + "max_prepared_statements = 0\n"})
    [finding] = [f for f in _check(tmp_path).findings if f.code == "PA405"]
    assert "max_prepared_statements = 0 (docker/pgbouncer/pgbouncer.ini:11) turns" in \
        finding.message


def test_laravel_reader_reads_only_pgsql_connections_of_config_database_php():
    assert is_sql_candidate("config/database.php") and is_sql_candidate("database.php")
    assert not is_sql_candidate("app/Models/database.php")
    mysql_only = DATABASE_PHP.replace("'driver' => 'pgsql',", "'driver' => 'mysql',")
    assert laravel_database("config/database.php", mysql_only) == []
    commented = DATABASE_PHP.replace("'driver' => 'pgsql',", "// 'driver' => 'pgsql',")
    assert laravel_database("config/database.php", commented) == []
    old_style = ("<?php\nreturn array(\n  'default' => 'pgsql',\n  'connections' => array(\n"
                 "    'main' => array(\n      'driver' => 'pgsql',\n      'host' => 'db',\n"
                 "    ),\n  ),\n);\n")
    [h] = scan_text("config/database.php", old_style, "laravel-database")[0]
    assert h.location.line == 6 and "'main'" in h.detail
    assert h.detail.endswith("the default connection: 'pgsql'")  # written, no env read


def _hazard(client_id: str | None) -> SqlHazard:
    [h] = laravel_database("config/database.php", DATABASE_PHP)
    return SqlHazard(kind=h.kind, detail=h.detail, origin=h.origin, client_id=client_id,
                     location=Location(path="config/database.php", line=25))


def _env(name: str, value: str | None) -> EnvVar:
    return EnvVar(name=name, value=value, source=Source(path="k8s/shop.yaml", line=9))


def test_a_workload_on_another_connection_opens_no_pdo_pgsql_statement():
    h = _hazard("shop")
    assert resolve_laravel([h], {"shop": [_env("DB_CONNECTION", "pgsql")]}) == [h]
    assert resolve_laravel([h], {"shop": [_env("DB_CONNECTION", "mysql")]}) == []
    assert resolve_laravel([h], {"shop": []}) == []  # the file's default: sqlite
    assert resolve_laravel([h], {"shop": [_env("DB_CONNECTION", None)]}) == [h]  # a Secret
    unmapped = _hazard(None)
    assert resolve_laravel([unmapped], {}) == [unmapped]  # route assumed, said by the rule


def test_a_standalone_ini_that_sets_a_newer_key_runs_on_a_pgbouncer_that_has_it(tmp_path):
    """PgBouncer stops at start-up on an unknown parameter, so a standalone pgbouncer.ini
    (no image says its version) that sets max_prepared_statements runs on 1.21 or later,
    as a ConfigMap's ini already was read (version_floor)."""
    write(tmp_path, {"pgbouncer/pgbouncer.ini": BOUNCER_INI + "max_prepared_statements = 100\n"})
    assert "PA209" not in {f.code for f in _check(tmp_path).findings}
    [pooler] = scan([str(tmp_path)], CheckOptions(cache=False, root=tmp_path)).topology.poolers
    assert (pooler.version.major, pooler.version.minor, pooler.version.floor) == (1, 21, True)
    assert "because max_prepared_statements is set (pgbouncer/pgbouncer.ini:13)" in \
        pooler.version.source.label()


def test_a_pgbouncer_ini_template_is_read_with_its_placeholders_unknown(tmp_path):
    """AI4Bharat's pgbouncer/pgbouncer.ini is copied as a template and rendered by
    envsubst in its entrypoint: `port=${DB_PORT}` is no refusal (PA209 error) that drops
    the `pool_mode = transaction` written below it."""
    template = BOUNCER_INI.replace("host=db port=5432 dbname=arena",
                                   "host=${DB_HOST} port=${DB_PORT} dbname=${DB_NAME}")
    write(tmp_path, {"pgbouncer/pgbouncer.ini": template,
                     "backend/arena_backend/settings.py": SETTINGS,
                     "backend/manage.py": "import os\n"})
    result = _check(tmp_path)
    [said] = [f for f in result.findings if f.code == "PA209"]
    assert said.severity.value == "warning" and "template placeholders" in said.message
    assert "port=${DB_PORT}" in said.message
    found = [f for f in result.findings if f.code == "PA410"]
    assert len(found) == 2 and all("in transaction mode" in f.message for f in found)
    # %(VAR)s (ihrauto/ihrauto-crm's reference ini) likewise
    write(tmp_path, {"pgbouncer/pgbouncer.ini": template.replace("${DB_PORT}", "%(DB_PORT)s")})
    assert [f.severity.value for f in _check(tmp_path).findings if f.code == "PA209"] == \
        ["warning"]



BOUNCER_K8S = """
---
apiVersion: v1
kind: Service
metadata: {name: pgbouncer}
spec:
  selector: {app: pgbouncer}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pgbouncer}
spec:
  template:
    metadata: {labels: {app: pgbouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:v1.18.0-p0
          env:
            - {name: DB_HOST, value: pg}
            - {name: POOL_MODE, value: transaction}
"""


def test_a_laravel_workload_through_the_pooler_is_an_error_unless_it_uses_mysql(tmp_path):
    """The php-fpm shop of tests/test_apps_laravel.py, sent through a transaction-mode
    PgBouncer 1.18 with the Laravel 12 config/database.php above."""
    from tests.test_apps_laravel import APP, K8S

    shop = K8S.replace("{name: DB_HOST, value: pg}", "{name: DB_HOST, value: pgbouncer}")
    app = {f"app/{k}": v for k, v in {**APP, "config/database.php": DATABASE_PHP}.items()}
    write(tmp_path, {"k8s/all.yaml": shop + BOUNCER_K8S, **app})
    [finding] = [f for f in _check(tmp_path).findings if f.code.startswith("PA4")]
    assert (finding.code, finding.severity.value, finding.location.path) == \
        ("PA405", "error", "app/config/database.php")
    assert "not mapped to a workload" not in finding.message
    write(tmp_path, {"k8s/all.yaml": shop.replace("value: pgsql}", "value: mysql}")
                     + BOUNCER_K8S})
    assert _pa4(_check(tmp_path)) == []


SKELETON_DOCKERFILE = """\
FROM composer:2 AS laravel-build

WORKDIR /app

RUN composer create-project --prefer-dist --no-interaction laravel/laravel .

COPY src/routes/web.php routes/web.php

FROM php:8.4-fpm AS runtime
RUN docker-php-ext-install -j"$(nproc)" pdo pdo_pgsql pgsql
COPY --from=laravel-build /app /var/www/html
"""


def test_a_laravel_skeleton_created_in_the_dockerfile_is_its_database_php(tmp_path):
    """jotyprokash/Laravel-Postgres-HA-Infrastructure's shape: no config/database.php in the
    repository; docker/Dockerfile creates the skeleton and copies a few files over it."""
    write(tmp_path, {"docker/Dockerfile": SKELETON_DOCKERFILE,
                     "config/pgbouncer.ini": LARAVEL_BOUNCER,
                     "src/routes/web.php": "<?php\n"})
    assert _pa4(_check(tmp_path)) == [("docker/Dockerfile", 5, "PA405")]
    # the repository's own config/database.php is what is judged, not the skeleton's
    write(tmp_path, {"src/config/database.php": DATABASE_PHP.replace(
        "'sslmode' => 'prefer',", "'options' => [PDO::ATTR_EMULATE_PREPARES => true],")})
    assert _pa4(_check(tmp_path)) == []
    # no pdo_pgsql in the image, or no skeleton: nothing
    assert laravel_skeleton("Dockerfile", SKELETON_DOCKERFILE.replace(" pdo_pgsql", "")) == []
    assert laravel_skeleton("Dockerfile", "FROM php:8.4-fpm\nRUN docker-php-ext-install "
                            "pdo_pgsql\n# composer create-project laravel/laravel .\n") == []
    [h] = laravel_skeleton("Dockerfile", SKELETON_DOCKERFILE)
    mapped = SqlHazard(kind=h.kind, detail=h.detail, origin=h.origin, client_id="shop",
                       location=h.location)
    assert resolve_laravel([mapped], {"shop": [_env("DB_CONNECTION", "pgsql")]}) == [mapped]
    assert resolve_laravel([mapped], {"shop": []}) == []  # the skeleton's default: sqlite
