"""Laravel (advisor/read/apps/laravel.py): one PDO connection per php-fpm child or Octane
worker (audit 9b D8: a Laravel app on php-fpm was "no pool of a known stack", though the
tool applies this model to Nextcloud's image)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container
from tests.tree_helpers import write

COMPOSER = '{"name": "acme/shop",\n "require": {"php": "^8.2", "laravel/framework": "^11.0"}}\n'
DATABASE = """\
<?php
return [
    'default' => env('DB_CONNECTION', 'pgsql'),
    'connections' => ['pgsql' => ['driver' => 'pgsql', 'host' => env('DB_HOST')]],
];
"""
WWW = "[www]\npm = dynamic\npm.max_children = 12\npm.start_servers = 2\n"
DOCKERFILE = """\
FROM composer:2 AS deps
COPY . /app
FROM php:8.3-fpm
RUN docker-php-ext-install pdo_pgsql
COPY docker/www.conf /usr/local/etc/php-fpm.d/www.conf
COPY . /var/www
CMD ["php-fpm"]
"""
APP = {"composer.json": COMPOSER, "config/database.php": DATABASE,
       "docker/www.conf": WWW, "Dockerfile": DOCKERFILE}

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
metadata: {name: shop}
spec:
  replicas: 6
  template:
    spec:
      containers:
        - name: php
          image: acme/shop:1.0
          env:
            - {name: DB_CONNECTION, value: pgsql}
            - {name: DB_HOST, value: pg}
        - name: nginx
          image: nginx:1.27
"""


def _pools(tmp_path, files=None, env=None, args=()):
    write(tmp_path, files or APP)
    c = container({"DB_HOST": "pg", **(env or {})}, args=args)
    return pools_for_container(c, scan_app_dir(Root.of(tmp_path), ""))


def test_the_probe_fits_eight_pods_of_twelve_children(tmp_path):
    """6 replicas + 2 surge = 8 pods x 12 (app/docker/www.conf:3) = 96 <= 97: fits, and
    the nginx sidecar holds none."""
    write(tmp_path, {"k8s/all.yaml": K8S, **{f"app/{k}": v for k, v in APP.items()}})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 96 and budget.fits
    assert "PA106" not in {f.code for f in result.findings}


def test_the_images_www_conf_when_the_dockerfile_copies_none(tmp_path):
    files = {**APP, "Dockerfile": DOCKERFILE.replace(
        "COPY docker/www.conf /usr/local/etc/php-fpm.d/www.conf\n", "")}
    (pool,) = _pools(tmp_path, files).pools
    assert pool.processes is not None and pool.processes.value == 5
    assert pool.bound == "default" and "pm.max_children = 5" in pool.processes.source.default
    (pool,) = _pools(tmp_path).pools
    assert (pool.processes.value, pool.processes.source.label()) == (12, "docker/www.conf:3")


def test_octane_workers_and_artisan_commands(tmp_path):
    (pool,) = _pools(tmp_path, args=("php", "artisan", "octane:start", "--workers=8")).pools
    assert pool.processes.value == 8
    (pool,) = _pools(tmp_path, args=("php", "artisan", "octane:start")).pools
    assert pool.bound == "cpu" and pool.processes.value == 4
    assert "laravel/octane@0141ad01" in pool.processes.source.default
    (pool,) = _pools(tmp_path, args=("php", "artisan", "queue:work")).pools
    assert pool.processes is None and pool.per_pod() == 1


def test_mysql_is_no_pool_and_the_env_beats_config_database_php(tmp_path):
    assert _pools(tmp_path, env={"DB_CONNECTION": "mysql"}).pools == []
    files = {**APP, "config/database.php": DATABASE.replace("'pgsql'),", "'mysql'),")}
    found = _pools(tmp_path, files)
    assert found.pools == [] and found.unknown == []
    found = _pools(tmp_path, files, {"DB_CONNECTION": "pgsql"})
    assert len(found.pools) == 1


def test_an_image_not_php_fpm_is_unknown_not_five(tmp_path):
    files = {**APP, "Dockerfile": "FROM serversideup/php:8.3-fpm-nginx\nCOPY . /var/www\n"}
    found = _pools(tmp_path, files)
    assert found.pools == [] and "is not php:*-fpm" in found.unknown[0]


# Horizon (audit 12a D1): `artisan horizon` was one PHP process; it runs a horizon:work
# process per worker of each supervisor of config/horizon.php (laravel/horizon@d9c39ce4).
HORIZON = """\
<?php

use Illuminate\\Support\\Str;

return [
    'prefix' => env('HORIZON_PREFIX', Str::slug(env('APP_NAME', 'laravel'), '_').'_horizon:'),
    'defaults' => [
        'supervisor-1' => [
            'connection' => 'redis',
            'queue' => ['default'],
            'balance' => 'auto',
            'maxProcesses' => 1,
        ],
    ],
    'environments' => [
        'production' => [
            'supervisor-1' => [
                'maxProcesses' => 10, // one PDO connection each
            ],
        ],
        'local' => [
            'supervisor-1' => ['maxProcesses' => 3],
        ],
    ],
];
"""
HORIZON_APP = {**APP, "config/horizon.php": HORIZON}
HORIZON_CMD = ("php", "artisan", "horizon")


def test_horizon_runs_a_worker_process_per_max_processes(tmp_path):
    """2 pods x 10 workers (production, the framework's APP_ENV default) = 20 > 12: over,
    where `artisan horizon` counted 1 per pod (peak 2, fits)."""
    k8s = K8S.replace("image: postgres:16\n", "image: postgres:16\n"
                      "          args: [-c, max_connections=15]\n")
    k8s = k8s.replace("replicas: 6", "replicas: 2\n  strategy: {type: Recreate}").replace(
        "image: acme/shop:1.0\n", "image: acme/shop:1.0\n"
        "          command: [php, artisan, horizon]\n")
    write(tmp_path, {"k8s/all.yaml": k8s,
                     **{f"app/{k}": v for k, v in HORIZON_APP.items()}})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 20 and not budget.fits


def test_horizon_environment_and_supervisor_options(tmp_path):
    (pool,) = _pools(tmp_path, HORIZON_APP, args=HORIZON_CMD).pools
    assert pool.processes.value == 10 and pool.bound == "fixed"
    assert pool.processes.source.label() == "config/horizon.php:18"
    assert "environment production" in pool.processes.label
    (pool,) = _pools(tmp_path, HORIZON_APP, env={"APP_ENV": "local"}, args=HORIZON_CMD).pools
    assert pool.processes.value == 3
    (pool,) = _pools(tmp_path, HORIZON_APP, env={"APP_ENV": "local"},
                     args=(*HORIZON_CMD, "--environment=production")).pools
    assert pool.processes.value == 10
    # a supervisor only in `defaults` runs too (array_replace_recursive); `processes` is
    # maxProcesses' old name; a balancing supervisor keeps minProcesses on each queue
    staging = HORIZON.replace("'local' => [", """'staging' => [
            'supervisor-2' => ['queue' => ['a', 'b', 'c'], 'minProcesses' => 2,
                               'balance' => 'simple', 'maxProcesses' => 4],
            'supervisor-3' => ['processes' => env('HORIZON_WORKERS', 7)],
            'supervisor-4' => ['maxProcesses' => 0],
        ],
        'local' => [""")
    files = {**APP, "config/horizon.php": staging}
    (pool,) = _pools(tmp_path, files, env={"APP_ENV": "staging"}, args=HORIZON_CMD).pools
    assert pool.processes.value == 1 + 6 + 7
    (pool,) = _pools(tmp_path, files, env={"APP_ENV": "staging", "HORIZON_WORKERS": "2"},
                     args=HORIZON_CMD).pools
    assert pool.processes.value == 1 + 6 + 2


def test_horizon_not_read_is_unknown_not_one(tmp_path):
    found = _pools(tmp_path, args=HORIZON_CMD)
    assert found.pools == [] and "config/horizon.php" in found.unknown[0]
    found = _pools(tmp_path, HORIZON_APP, env={"APP_ENV": "testing"}, args=HORIZON_CMD)
    assert found.pools == [] and "no supervisors for the environment 'testing'" in \
        found.unknown[0]
    files = {**APP, "config/horizon.php": HORIZON.replace("10, //", "(int) $n, //")}
    found = _pools(tmp_path, files, args=HORIZON_CMD)
    assert found.pools == [] and "an expression" in found.unknown[0]


def test_octane_on_frankenphp_defaults_to_twice_the_cpus(tmp_path):
    """Audit 12a D2: FrankenPHP's worker count without --workers is 2 x the CPUs
    (php/frankenphp docs/performance.md), not Swoole's CPU count."""
    (pool,) = _pools(tmp_path, args=("php", "artisan", "octane:start",
                                     "--server=frankenphp")).pools
    assert pool.processes.value == 8 and pool.cpu_formula.per_cpu == 2
    assert "php/frankenphp@0f96cab7" in pool.processes.source.default
    (pool,) = _pools(tmp_path, env={"OCTANE_SERVER": "frankenphp"},
                     args=("php", "artisan", "octane:start")).pools
    assert pool.processes.value == 8
    octane = "<?php\nreturn [\n    'server' => env('OCTANE_SERVER', 'frankenphp'),\n];\n"
    (pool,) = _pools(tmp_path, {**APP, "config/octane.php": octane},
                     args=("php", "artisan", "octane:start")).pools
    assert pool.processes.value == 8
    (pool,) = _pools(tmp_path, env={"OCTANE_SERVER": "swoole"},
                     args=("php", "artisan", "octane:start")).pools
    assert pool.processes.value == 4
    (pool,) = _pools(tmp_path, args=("php", "artisan", "octane:start", "--server=frankenphp",
                                     "--workers=3")).pools
    assert pool.processes.value == 3


def test_the_php_fpm_stage_when_another_stage_is_last(tmp_path):
    """A Dockerfile built with --target for its php-fpm stage, a web server's stage last
    (audit 31 D2, api-platform's api/Dockerfile): the php-fpm stage's www.conf, not
    "the Dockerfile's image is not php:*-fpm"."""
    files = {**APP, "Dockerfile": DOCKERFILE + "FROM caddy:2 AS web\nCOPY public /srv\n"}
    (pool,) = _pools(tmp_path, files).pools
    assert (pool.processes.value, pool.processes.source.label()) == (12, "docker/www.conf:3")
