"""A Celery worker started by a Django management command (`python manage.py
run_worker`): the worker's command line is read from the command's module
(<app>/management/commands/<name>.py), so its concurrency, or Celery's default of the
node's CPU count, applies; never one process (audit 7b D3: go-api's run_celery_prod)."""

from __future__ import annotations

from pathlib import Path

from advisor.read.apps import scan_app_dir
from advisor.read.apps.base import StackContext
from advisor.read.fs import Root
from tests.apphelpers import container

MANAGE = ("python", "/srv/app/manage.py", "run_worker")
SUBPROCESS = '''import shlex
import subprocess

from django.core.management.base import BaseCommand


def worker_cmd(queues, extra=None):
    cmd = f"celery -A proj worker -Q {queues} -l info"
    if extra:
        cmd = f"{cmd} {' '.join(extra)}"
    return cmd


class Command(BaseCommand):
    help = "Starts the celery worker"

    def handle(self, *args, **options):
        subprocess.call(shlex.split(worker_cmd(options["queues"], options["extra"])))
'''


def _ctx(tmp_path: Path, module: str, command=MANAGE, node_cpus=None) -> StackContext:
    files = {"manage.py": "import os\n", "jobs/__init__.py": "",
             "jobs/management/commands/run_worker.py": module}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return StackContext(container=container({}, command=command),
                        app=scan_app_dir(Root.of(tmp_path), ""), profile=None,
                        node_cpus=node_cpus)


def test_subprocess_worker_without_concurrency_is_the_node_cpus(tmp_path):
    ctx = _ctx(tmp_path, SUBPROCESS, node_cpus=6)
    info = ctx.processes()
    assert info.server == "celery" and info.processes.value == 6
    assert info.cpu_formula is not None and not info.hidden
    assert any("jobs/management/commands/run_worker.py:8" in n for n in ctx.notices)


def test_worker_main_list_with_concurrency(tmp_path):
    module = ("from django.core.management.base import BaseCommand\nfrom proj.celery "
              "import app\n\n\nclass Command(BaseCommand):\n    def handle(self, *a, **kw):\n"
              "        app.worker_main(['worker', '--loglevel=info', '--concurrency', '3'])\n")
    info = _ctx(tmp_path, module).processes()
    assert info.processes.value == 3 and info.cpu_formula is None
    assert info.processes.source.path == "jobs/management/commands/run_worker.py"


def test_computed_concurrency_is_unknown(tmp_path):
    module = ("import subprocess\n\n\ndef handle(n):\n"
              "    subprocess.run(['celery', '-A', 'proj', 'worker', '-c', str(n)])\n")
    info = _ctx(tmp_path, module).processes()
    assert info.processes is None and info.hidden
    assert "-c value is computed" in info.hidden[0]
    # a command that only sends a task is one process, as before
    other = tmp_path / "other"
    info = _ctx(other, "from proj.celery import app\n\n\ndef handle():\n"
                       "    app.send_task('proj.tasks.sync')\n").processes()
    assert info.server == "" and info.processes is None and not info.hidden


def test_pool_option_passed_to_the_command_is_unknown(tmp_path):
    info = _ctx(tmp_path, SUBPROCESS, command=(*MANAGE, "--extra", "--concurrency=2")
                ).processes()
    assert info.hidden and "not followed" in info.hidden[0]

