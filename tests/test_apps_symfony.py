"""Symfony with Doctrine (advisor/read/apps/symfony.py): one DBAL connection per PHP
process (audit 31 D1: a Symfony app whose DATABASE_URL is in the .env its image copies
was in no budget, so its server printed "fits, peak 0", exit 0)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container
from tests.tree_helpers import write

COMPOSER = ('{"name": "acme/api",\n "require": {"php": ">=8.2",\n'
            '  "doctrine/doctrine-bundle": "^2.12", "symfony/framework-bundle": "7.1.*"}}\n')
DOTENV = """\
###> symfony/framework-bundle ###
APP_ENV=dev
###< symfony/framework-bundle ###
# DATABASE_URL="mysql://app:secret@127.0.0.1:3306/app"
DATABASE_URL="postgresql://${DB_USER}:${DB_PASS}@pg:${DB_PORT}/app?serverVersion=16"
"""
WWW = "[www]\npm = dynamic\npm.max_children = 12\n"
FPM = """\
FROM php:8.3-fpm
RUN docker-php-ext-install pdo_pgsql
COPY docker/php/www.conf /usr/local/etc/php-fpm.d/www.conf
COPY . /srv/app
"""
NGINX = "FROM nginx:1.27\nCOPY docker/nginx/default.conf /etc/nginx/conf.d/default.conf\n"
APP = {"composer.json": COMPOSER, ".env": DOTENV, "docker/php/www.conf": WWW,
       "docker/php/Dockerfile": FPM, "docker/nginx/Dockerfile": NGINX}

K8S = """
apiVersion: v1
kind: Service
metadata: {name: pg}
spec:
  selector: {app: pg}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pg}
spec:
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers:
        - name: postgres
          image: postgres:16
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 8
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: php
          image: acme/api:1.0
        - name: nginx
          image: acme/api-nginx:1.0
"""


def _pools(tmp_path, files=None, env=None, args=()):
    write(tmp_path, files or APP)
    return pools_for_container(container(env, args=args), scan_app_dir(Root.of(tmp_path), ""))


def test_the_dotenv_database_url_links_eight_pods_of_twelve_children(tmp_path):
    """No env in the manifest: the .env the image copies names host pg. 8 pods x 12
    children (docker/php/www.conf:3) = 96 <= 97; the nginx Dockerfile is not the one
    whose php-fpm pools are read."""
    write(tmp_path, {"k8s/all.yaml": K8S, **APP})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 96 and budget.fits
    assert "PA106" not in {f.code for f in result.findings}


def test_php_fpm_children_not_known_is_a_floor_linked_where_the_dotenv_says(tmp_path):
    """Two php-fpm Dockerfiles that differ: which one runs is not known, but the pods
    still count on pg (a floor, PA106), not "fits, peak 0"."""
    files = {**APP, "docker/php/prod/Dockerfile": FPM.replace(
        "COPY docker/php/www.conf /usr/local/etc/php-fpm.d/www.conf\n", "")}
    write(tmp_path, {"k8s/all.yaml": K8S, **files})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == ["api"] and budget.peak == 8 and not budget.fits
    (pa106,) = [f for f in result.findings if f.code == "PA106"]
    assert "2 Dockerfiles build php-fpm images" in pa106.message


def test_the_route_and_which_dotenv_file_wins(tmp_path):
    (pool,) = _pools(tmp_path).pools
    assert pool.route.host == "pg" and pool.route.source.label() == ".env:5"
    assert pool.processes.value == 12 and pool.processes.source.label() == "docker/php/www.conf:3"
    prod = 'DATABASE_URL="pgsql://u:p@pg-prod/app"\n'
    files = {**APP, ".env.prod": prod}
    (pool,) = _pools(tmp_path, files).pools  # APP_ENV=dev (.env): .env.prod not read
    assert pool.route.host == "pg"
    (pool,) = _pools(tmp_path, files, env={"APP_ENV": "prod"}).pools
    assert (pool.route.host, pool.route.source.label()) == ("pg-prod", ".env.prod:1")
    # a real env variable is never overridden by a dotenv file
    (pool,) = _pools(tmp_path, files, env={"APP_ENV": "prod",
                                           "DATABASE_URL": "postgres://u@pg-env/app"}).pools
    assert pool.route.host == "pg-env"


def test_mysql_or_sqlite_is_no_pool_and_a_console_command_is_one_process(tmp_path):
    assert _pools(tmp_path, env={"DATABASE_URL": "mysql://u:p@db/app"}).pools == []
    assert _pools(tmp_path, env={"DATABASE_URL": "sqlite:///%kernel.project_dir%/d.db"}
                  ).pools == []
    (pool,) = _pools(tmp_path, args=("php", "bin/console", "messenger:consume", "async")).pools
    assert pool.processes is None and pool.per_pod() == 1


def test_frankenphp_is_unknown_with_the_floor_kept(tmp_path):
    files = {**APP, "docker/php/Dockerfile": "FROM dunglas/frankenphp:1-php8.4\n"
             'CMD ["frankenphp", "run", "--config", "/etc/frankenphp/Caddyfile"]\n'}
    found = _pools(tmp_path, files)
    assert "FrankenPHP" in found.unknown[0]
    (pool,) = found.pools
    assert pool.per_pod() == 1 and pool.route.host == "pg"
