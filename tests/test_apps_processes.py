"""Processes per pod. gunicorn cases are checked against gunicorn's own configuration
loader (WSGIApplication.load_config: command line, GUNICORN_CMD_ARGS, gunicorn.conf.py,
WEB_CONCURRENCY), run in a subprocess in the app directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

from advisor.read.apps import scan_app_dir
from advisor.read.apps.base import StackContext
from advisor.read.fs import Root
from tests.apphelpers import container

CPUS = os.cpu_count() or 1

GUNICORN_CASES = [
    (["-w", "4", "app:app"], {}, None),
    (["-w4", "app:app"], {}, None),
    (["--workers=6", "--threads", "3", "app:app"], {}, None),
    (["app:app"], {"WEB_CONCURRENCY": "5"}, None),
    (["app:app"], {"GUNICORN_CMD_ARGS": "--workers 7 --threads 2"}, None),
    (["-w", "2", "app:app"], {"GUNICORN_CMD_ARGS": "--workers 7"}, None),  # CLI wins
    (["app:app"], {}, "workers = 3\nthreads = 4\n"),
    (["app:app"], {"WEB_CONCURRENCY": "9"}, "workers = 3\n"),  # conf beats WEB_CONCURRENCY
    (["app:app"], {"GUNICORN_CMD_ARGS": "-w 8"}, "workers = 3\n"),  # env args beat conf
    (["app:app"], {"GUNICORN_WORKERS": "6"},
     'import os\nworkers = int(os.environ.get("GUNICORN_WORKERS", "2"))\n'),
    (["app:app"], {}, 'import os\nworkers = int(os.environ.get("GUNICORN_WORKERS", "2"))\n'),
    (["app:app"], {}, "import multiprocessing\nworkers = multiprocessing.cpu_count() * 2 + 1\n"),
    (["-c", "deploy/gunicorn_prod.py", "app:app"], {}, "workers = 11\n"),
    (["app:app"], {}, None),
]


def _real_gunicorn(tmp: Path, args: list[str], env: dict[str, str]) -> tuple[int, int]:
    script = ("import sys, json; sys.argv = ['gunicorn'] + json.loads(sys.argv[1]);"
              "from gunicorn.app.wsgiapp import WSGIApplication;"
              "a = WSGIApplication('%(prog)s [OPTIONS] [APP_MODULE]');"
              "print(json.dumps([a.cfg.workers, a.cfg.threads]))")
    clean = {k: v for k, v in os.environ.items()
             if k not in ("WEB_CONCURRENCY", "GUNICORN_CMD_ARGS")}
    out = subprocess.run([sys.executable, "-c", script, json.dumps(args)], cwd=tmp,
                         env={**clean, **env}, capture_output=True, text=True, timeout=60,
                         check=True)
    workers, threads = json.loads(out.stdout)
    return workers, threads


@pytest.mark.parametrize(("args", "env", "conf"), GUNICORN_CASES)
def test_gunicorn_workers_match_real_gunicorn(tmp_path, args, env, conf):
    pytest.importorskip("gunicorn")
    if conf is not None:
        target = "deploy/gunicorn_prod.py" if "-c" in args else "gunicorn.conf.py"
        (tmp_path / target).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / target).write_text(conf)
    real = _real_gunicorn(tmp_path, args, env)
    app = scan_app_dir(Root.of(tmp_path), "")
    ctx = StackContext(container=container(env, command=("gunicorn", *args)), app=app,
                       profile=None, node_cpus=CPUS)
    info = ctx.processes()
    ours = (int(info.processes.value) if info.processes else 1,
            int(info.threads.value) if info.threads else 1)
    assert ours == real


def _info(env=None, command=(), args=(), files=None, tmp_path=None, node_cpus=None):
    app = None
    if files is not None:
        for name, text in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
        app = scan_app_dir(Root.of(tmp_path), "")
    ctx = StackContext(container=container(env or {}, command=command, args=args), app=app,
                       profile=None, node_cpus=node_cpus)
    return ctx.processes()


def test_gunicorn_cpu_count_config_is_cpu_dependent(tmp_path):
    info = _info(command=("gunicorn", "app:app"), tmp_path=tmp_path, node_cpus=16, files={
        "gunicorn.conf.py":
            "import multiprocessing\nworkers = multiprocessing.cpu_count() * 2 + 1\n"})
    assert info.processes.value == 33
    assert info.cpu_formula.per_cpu == 2 and info.cpu_formula.plus == 1


def test_shell_wrapped_commands_and_variables():
    info = _info({"WORKERS": "6"}, command=("/bin/sh", "-c"),
                 args=("cd /app && exec gunicorn -w ${WORKERS:-2} app:app",))
    assert info.server == "gunicorn" and info.processes.value == 6
    assert info.processes.source.key == "WORKERS"  # the env var that supplied it
    info = _info({}, command=("sh", "-c", "exec gunicorn -w ${WORKERS:-2} app:app"))
    assert info.processes.value == 2
    info = _info({}, command=("python", "-m", "gunicorn", "--workers", "3", "app:app"))
    assert info.processes.value == 3


def test_uvicorn_workers_env_forms():
    assert _info({"UVICORN_WORKERS": "4"}, command=("uvicorn", "m:app")).processes.value == 4
    assert _info({"WEB_CONCURRENCY": "3"}, command=("uvicorn", "m:app")).processes.value == 3
    assert _info({}, command=("uvicorn", "m:app", "--workers", "5")).processes.value == 5
    assert _info({}, command=("uvicorn", "m:app")).processes.value == 1


def test_celery_pools():
    info = _info({}, command=("celery", "-A", "p", "worker", "-c", "4"))
    assert info.processes.value == 4
    info = _info({}, command=("celery", "-A", "p", "worker", "-P", "gevent", "-c", "100"))
    assert info.processes is None and info.threads.value == 100
    info = _info({}, command=("celery", "-A", "p", "worker"), node_cpus=6)
    assert info.processes.value == 6 and info.cpu_formula is not None


@pytest.mark.parametrize("command", [("celery", "-A", "buoy_barn", "flower", "-l", "info"),
                                     ("celery", "--app=p", "events")])
def test_celery_monitors_run_no_pool_of_workers(command):
    """Audit 13a D6 (gulfofmaine/buoy_barn shape): `celery -A app flower` was read as a
    worker of cpu_count() children (4 connections a pod at 4 CPUs); Flower is one
    process watching the broker and runs no task."""
    info = _info({}, command=command, node_cpus=4)
    assert info.processes is None and info.cpu_formula is None
    assert info.server.startswith("celery-") and info.server != "celery-beat"



def test_celery_autoscale_maximum_replaces_concurrency():
    """`--autoscale=MAX,MIN` replaces --concurrency: the pool starts at MIN and grows to
    MAX (celery/worker/components.py Pool.__init__, worker/autoscale.py); Celery sorts
    the two numbers and reads one number N as N,0 (bin/worker.py Autoscale.convert).
    Audit 6a D1: DefectDojo's `--concurrency=$C --autoscale=$MAX,$MIN` counted C."""
    worker = ("celery", "-A", "p", "worker")
    for given in (("--concurrency=4", "--autoscale=20,2"), ("-c", "4", "--autoscale", "2,20"),
                  ("--autoscale=20",)):
        info = _info({}, command=(*worker, *given))
        assert info.processes.value == 20 and not info.hidden, given
        assert info.processes.source.key.startswith("--autoscale")
    # prefork named, and gevent/eventlet grow too (their pools have grow()): MAX
    info = _info({}, command=(*worker, "--pool=prefork", "-c", "4", "--autoscale=9,3"))
    assert info.processes.value == 9
    info = _info({}, command=(*worker, "-P", "gevent", "-c", "100", "--autoscale=50,5"))
    assert info.processes is None and info.threads.value == 50
    # the threads pool has no grow(): ThreadPoolExecutor(max_workers=MIN), never more
    info = _info({}, command=(*worker, "-P", "threads", "-c", "8", "--autoscale=10,3"))
    assert info.processes is None and info.threads.value == 3
    info = _info({}, command=(*worker, "-P", "threads", "--autoscale=10"))
    assert info.threads is None and "does not start" in info.hidden[0]
    # solo stays one process
    info = _info({}, command=(*worker, "-P", "solo", "--autoscale=10,3"))
    assert info.processes is None and info.threads is None and not info.hidden


def test_celery_autoscale_not_read_is_unknown_not_concurrency():
    """A MAX that is not read leaves the pool unknown (PA106), never --concurrency."""
    worker = ("celery", "-A", "p", "worker", "--concurrency=4")
    info = _info({}, command=("sh", "-c", " ".join(worker) + " --autoscale=${MAX},2"))
    assert info.processes is None and "--autoscale" in info.hidden[0]
    info = _info({}, command=(*worker, "--autoscale=a,b"))
    assert info.processes is None and "not read as MAX,MIN" in info.hidden[0]
    # the MAX from a Secret (no value here): not its fallback 8
    info = _info({"MAX": None}, command=("sh", "-c",
                                         " ".join(worker) + " --autoscale=${MAX:-8},2"))
    assert info.processes is None and "MAX" in info.hidden[0]
    # an array the script sets in a branch not decided may hold --autoscale
    info = _info({}, command=(*worker, "${EXTRA[@]}"))
    assert info.processes is None and "${EXTRA[@]}" in info.hidden[0]


_SENTRY_CONF = ("SENTRY_WEB_HOST = '0.0.0.0'\nSENTRY_WEB_PORT = 9000\n"
                "SENTRY_WEB_OPTIONS = {\n"
                "    'http': '%s:%s' % (SENTRY_WEB_HOST, SENTRY_WEB_PORT),\n"
                "    'workers': 3,\n}\n")


def test_sentry_web_is_uwsgi_workers_by_threads(tmp_path):
    """`sentry run web` runs uWSGI with Sentry's defaults, workers 1 and threads 2
    (sentry/services/http.py setdefault), SENTRY_WEB_OPTIONS over them, --workers over
    that and the pod's UWSGI_* env over all (env.setdefault). Audit G: the
    sentry-kubernetes chart's web (workers 3 in its sentry.conf.py) was 1 x 1."""
    web = ("sentry", "run", "web")
    info = _info(command=web)
    assert (info.processes.value, info.threads.value) == (1, 2)
    assert "Sentry default" in info.processes.source.default
    info = _info(command=web, tmp_path=tmp_path, files={"sentry.conf.py": _SENTRY_CONF})
    assert (info.processes.value, info.threads.value) == (3, 2)
    assert info.processes.source.label() == "sentry.conf.py:5"
    info = _info(command=(*web, "--workers", "8"), tmp_path=tmp_path,
                 files={"sentry.conf.py": _SENTRY_CONF})
    assert info.processes.value == 8 and info.processes.source.key.startswith("--workers")
    info = _info({"UWSGI_WORKERS": "5", "UWSGI_THREADS": "4"}, command=(*web, "-w", "8"))
    assert (info.processes.value, info.threads.value) == (5, 4)
    assert _info(command=("sentry", "run", "cron")).processes is None  # one process


def test_puma_cli_and_config(tmp_path):
    info = _info({}, command=("bundle", "exec", "puma", "-w", "3", "-t", "2:8"))
    assert (info.processes.value, info.threads.value) == (3, 8)
    info = _info({"WEB_CONCURRENCY": "auto"}, command=("puma",), node_cpus=8)
    assert info.processes.value == 8 and info.cpu_formula is not None
    info = _info({}, command=("bin/rails", "server"), tmp_path=tmp_path, files={
        "config/puma.rb": "threads 3, 6\nworkers 4\n"})
    assert (info.processes.value, info.threads.value) == (4, 6)
    assert info.processes.source.label() == "config/puma.rb:2"
    assert _info({}, command=("puma",)).processes.value == 1  # workers 0: single mode


def test_sidekiq_concurrency_forms():
    assert _info({}, command=("sidekiq", "-c", "20")).threads.value == 20
    assert _info({"RAILS_MAX_THREADS": "7"}, command=("sidekiq",)).threads.value == 7
    assert _info({}, command=("sidekiq",)).threads.value == 5
    info = _info({"SIDEKIQ_COUNT": "4"}, command=("sidekiqswarm",))
    assert info.processes.value == 4


def test_php_fpm_and_pm2(tmp_path):
    info = _info({}, command=("php-fpm",), tmp_path=tmp_path, files={
        "docker/php-fpm.d/www.conf": "[www]\npm = dynamic\npm.max_children = 24\n"})
    assert info.processes.value == 24
    assert info.processes.source.label() == "docker/php-fpm.d/www.conf:3"
    info = _info({}, command=("pm2-runtime", "app.js", "-i", "max"), node_cpus=12)
    assert info.processes.value == 12 and info.cpu_formula is not None
    assert _info({}, command=("pm2-runtime", "app.js", "-i", "3")).processes.value == 3


def test_node_cluster_and_procfile(tmp_path):
    info = _info({}, command=("node", "server.js"), tmp_path=tmp_path, node_cpus=4, files={
        "server.js": "const cluster = require('cluster');\nconst os = require('os');\n"
                     "if (cluster.isPrimary) { for (let i = 0; i < os.cpus().length; i++) "
                     "cluster.fork(); }\n",
        "Procfile": "web: gunicorn -w 3 app:app\nworker: celery -A app worker -c 2\n"})
    assert info.server == "node-cluster" and info.processes.value == 4
    app = scan_app_dir(Root.of(tmp_path), "")
    ctx = StackContext(container=replace(container(), name="worker"), app=app,
                       profile=None)
    assert ctx.processes().processes.value == 2 and ctx.processes().server == "celery"
    assert any("Procfile" in n for n in ctx.notices)


def test_a_later_stage_from_an_earlier_one_keeps_its_command(tmp_path):
    """`FROM release AS development`: a stage built FROM an earlier one inherits its
    ENTRYPOINT and CMD (DefectDojo's last stages build on `release`, whose ENTRYPOINT runs
    uWSGI: the web pods were 1 connection each, not 4 processes x 4 threads)."""
    dockerfile = ("FROM python:3.12 AS base\nFROM base AS release\n"
                  "CMD [\"gunicorn\", \"-w\", \"5\", \"app:app\"]\n"
                  "FROM release AS development\nRUN pip install debugpy\n"
                  "FROM development AS unittests\nRUN true\n")
    info = _info({}, command=(), tmp_path=tmp_path, files={"Dockerfile": dockerfile,
                                                           "requirements.txt": "flask\n"})
    assert info.server == "gunicorn" and info.processes.value == 5
    # FROM another image: that image's command is not known here
    info = _info({}, command=(), tmp_path=tmp_path, files={
        "Dockerfile": dockerfile + "FROM python:3.12-slim\nRUN true\n"})
    assert not info.server and info.processes is None


GATED_CLUSTER = (
    "import cluster from 'node:cluster';\nimport os from 'node:os';\n"
    "const ENABLE_CLUSTER = process.env.ENABLE_CLUSTER === \"1\";\n"
    "const WORKERS = os.availableParallelism();\n"
    "if (ENABLE_CLUSTER && cluster.isPrimary) {\n"
    "  for (let i = 0; i < WORKERS; i++) cluster.fork();\n}\n")


@pytest.mark.parametrize(("env", "server", "processes"), [
    ({}, "node", None),  # the gate's variable unset: one process
    ({"ENABLE_CLUSTER": "0"}, "node", None),
    ({"ENABLE_CLUSTER": "1"}, "node-cluster", 4),  # on: a worker per CPU
])
def test_a_node_cluster_gated_by_a_variable_forks_only_when_it_is_set(tmp_path, env, server,
                                                                      processes):
    """trigger.dev's webapp forks only when ENABLE_CLUSTER is "1" (server.ts); nothing
    sets it, so one process per pod, not os.availableParallelism() workers."""
    info = _info(env, command=("node", "server.js"), tmp_path=tmp_path, node_cpus=4,
                 files={"server.js": GATED_CLUSTER})
    assert info.server == server
    assert (info.processes.value if info.processes else None) == processes
    if not env:
        assert info.notes == ["server.js:3: the node cluster forks only when ENABLE_CLUSTER = "
                              "'1'; the container does not set it: one process per pod"]


@pytest.mark.parametrize("command", [
    ("alembic", "upgrade", "head"),
    ("python", "manage.py", "migrate", "--noinput"),
    ("sh", "-c", "cd /app && bundle exec rake db:migrate"),
    ("npx", "prisma", "migrate", "deploy"),
    ("flyway", "-url=jdbc:postgresql://db/app", "migrate"),
])
def test_migration_jobs_count_one_connection(command):
    from advisor.read.apps import pools_for_container

    # the sqlalchemy fixture's engine (pool 5 + 10) is the serving process's, not the Job's
    root = Path(__file__).parent / "fixtures_apps" / "sqlalchemy"
    found = pools_for_container(container(command=command), scan_app_dir(Root.of(root), ""))
    assert [(p.label.split(" (")[0], p.size.value) for p in found.pools] == [("migration", 1)]


def test_migrate_then_serve_counts_the_server():
    from advisor.read.apps import pools_for_container

    root = Path(__file__).parent / "fixtures_apps" / "django"
    found = pools_for_container(container(
        {"DJANGO_SETTINGS_MODULE": "mysite.settings.production"},
        command=("sh", "-c", "python manage.py migrate && exec gunicorn mysite.wsgi -w 2")),
        scan_app_dir(Root.of(root), ""))
    assert not any(p.label.startswith("migration") for p in found.pools)
    assert len(found.pools) == 2


def test_web_concurrency_without_a_server_command_is_noticed():
    ctx = StackContext(container=container({"WEB_CONCURRENCY": "4"}), app=None, profile=None)
    assert ctx.processes().processes is None
    assert any("WEB_CONCURRENCY=4" in n and "one process per pod assumed" in n
               for n in ctx.notices)


def test_gunicorn_default_is_cited_at_the_version_the_app_pins(tmp_path):
    """testdrivenio/flask-vue-kubernetes pins gunicorn==20.1.0 in requirements.txt: the
    workers default (1, else $WEB_CONCURRENCY, gunicorn 20.1.0 config.py:640) is cited
    there, not at the version pool-advisor read; the number is the same."""
    info = _info(command=("gunicorn", "-b", "0.0.0.0:5000", "manage:app"), tmp_path=tmp_path,
                 files={"requirements.txt": "Flask==1.1.2\ngunicorn==20.1.0\n"})
    assert info.processes.value == 1
    assert info.processes.source.label() == (
        "default: gunicorn 20.1.0 default (requirements.txt:2 pins gunicorn==20.1.0; "
        "no --workers, no WEB_CONCURRENCY)")
    assert _info({"WEB_CONCURRENCY": "3"}, command=("gunicorn", "app:app"), tmp_path=tmp_path,
                 files={"requirements.txt": "gunicorn==20.1.0\n"}).processes.value == 3
    # a range is no version: the version the default was read at
    info = _info(command=("gunicorn", "app:app"), tmp_path=tmp_path,
                 files={"requirements.txt": "gunicorn>=20\n"})
    assert info.processes.source.label() == (
        "default: gunicorn 27 default (no --workers, no WEB_CONCURRENCY)")


def test_gunicorn_before_19_does_not_read_web_concurrency(tmp_path):
    """WEB_CONCURRENCY is read from gunicorn 19.0 (benoitc/gunicorn a8ce74b2; 18.0
    config.py:499 `default = 1`): a pin before it keeps 1 worker and says so."""
    info = _info({"WEB_CONCURRENCY": "4"}, command=("gunicorn", "app:app"), tmp_path=tmp_path,
                 files={"requirements.txt": "gunicorn==18.0\n"})
    assert info.processes.value == 1
    assert info.processes.source.label() == (
        "default: gunicorn 18.0 default (requirements.txt:1 pins gunicorn==18.0; "
        "no --workers; WEB_CONCURRENCY is read from 19.0)")
    assert any("WEB_CONCURRENCY" in n and "18.0" in n for n in info.notes), info.notes
