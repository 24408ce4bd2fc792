"""The app's launcher scripts followed to the command that starts the server (audit 7b
D1, D2, D5): a chain of scripts (`CMD ./boot.sh` -> `exec ./serve.sh` -> gunicorn), a
server sent to the background before `exec nginx`, a script with no `.sh`; and when
no server command is found, a notice says one process was assumed (never a quiet 1)."""

from __future__ import annotations

import pytest

from advisor.model import Container, EnvVar, Source
from advisor.read.apps import scan_app_dir
from advisor.read.apps.base import StackContext
from advisor.read.fs import Root

SERVE = """\
#!/bin/bash
exec gunicorn site.wsgi:application \\
    --bind 0.0.0.0:8000 \\
    --workers ${WEB_PROCS:-1}
"""


def _app(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return scan_app_dir(Root.of(tmp_path), "")


def _processes(app, env=None, command=()):
    c = Container(name="web", command=tuple(command), env=tuple(
        EnvVar(name=k, value=v, source=Source(path="k8s/web.yaml", line=30 + i, key=k))
        for i, (k, v) in enumerate((env or {}).items())),
        source=Source(path="k8s/web.yaml", line=5))
    ctx = StackContext(container=c, app=app, profile=None, node_cpus=4)
    return ctx.processes(), ctx.notices


def _dockerfile(cmd):
    return f"FROM python:3.12\nWORKDIR /srv\nCOPY . .\nCMD {cmd}\n"


@pytest.mark.parametrize("launch", [
    "./checks.sh && exec ./serve.sh",
    "./checks.sh\nsh serve.sh",
    "bash -e ./serve.sh",
    ". ./serve.sh",
    "source serve.sh",
])
def test_a_chain_of_two_scripts_is_followed_to_the_server(tmp_path, launch):
    """Dockerfile CMD -> boot.sh -> serve.sh -> gunicorn: the workers the env gives."""
    app = _app(tmp_path, {"Dockerfile": _dockerfile('["./boot.sh"]'),
                          "boot.sh": f"#!/bin/bash\n{launch}\n",
                          "checks.sh": "#!/bin/bash\npython manage.py migrate\n",
                          "serve.sh": SERVE})
    info, notices = _processes(app, {"WEB_PROCS": "6"})
    assert info.server == "gunicorn" and info.processes.value == 6
    assert info.processes.source.label() == "k8s/web.yaml:30"
    assert any("serve.sh:2 (the command runs boot.sh, which runs serve.sh, which starts it)"
               in n for n in notices), notices


def test_a_cycle_of_scripts_and_a_chain_too_deep_end_with_a_notice(tmp_path):
    app = _app(tmp_path, {"Dockerfile": _dockerfile('["./a.sh"]'),
                          "a.sh": "#!/bin/sh\n./b.sh\n", "b.sh": "#!/bin/sh\n./a.sh\n"})
    info, notices = _processes(app)
    assert info.processes is None and info.unfound
    assert any("a.sh -> b.sh (followed from the command) starts no server read here" in n
               and "one process per pod assumed" in n for n in notices), notices
    files = {f"s{i}.sh": f"#!/bin/sh\nexec ./s{i + 1}.sh\n" for i in range(8)}
    app = _app(tmp_path / "deep", {**files, "s8.sh": SERVE,
                                   "Dockerfile": _dockerfile('["./s0.sh"]')})
    info, notices = _processes(app, {"WEB_PROCS": "6"})
    assert info.processes is None and "starts no server" in info.unfound


NGINX_FRONT = """\
#!/bin/bash
python manage.py migrate
exec gunicorn site.wsgi:application \\
    --workers 3 \\
    --log-file=/var/log/app.log &
tail -n 0 -f /var/log/*.log &
exec nginx -g 'daemon off;'
"""


def test_a_server_sent_to_the_background_before_exec_nginx_is_counted(tmp_path):
    app = _app(tmp_path, {"ops/run.sh": NGINX_FRONT})
    info, notices = _processes(app, command=("sh", "/usr/local/bin/run.sh"))
    assert info.server == "gunicorn" and info.processes.value == 3
    assert any("ops/run.sh:3" in n and "starts it in the background" in n
               for n in notices), notices
    # two servers side by side are not combined: unknown, never one of them
    both = NGINX_FRONT.replace("exec nginx -g 'daemon off;'", "exec celery -A site worker")
    app = _app(tmp_path / "both", {"ops/run.sh": both})
    info, _ = _processes(app, command=("sh", "/usr/local/bin/run.sh"))
    assert info.hidden and "not combined" in info.hidden[0]


RUN = """\
#!/usr/bin/env sh
set -e
bundle exec rails db:prepare
bundle exec puma -C config/puma.rb
"""


@pytest.mark.parametrize("cmd", ['["./deploy/launch"]', '["/srv/deploy/launch"]',
                                 "deploy/launch"])
def test_a_script_with_no_extension_is_followed(tmp_path, cmd):
    """`CMD ["./deploy/launch"]` (a shell shebang, no `.sh`): Puma's threads, not the
    pool; a file of that path that is no shell script is not followed."""
    app = _app(tmp_path, {"Dockerfile": _dockerfile(cmd), "deploy/launch": RUN,
                          "config/puma.rb": "threads 4, 4\n"})
    info, notices = _processes(app)
    assert info.server == "puma" and info.threads.value == 4
    assert any("deploy/launch:4" in n for n in notices), notices
    app = _app(tmp_path / "py", {"Dockerfile": _dockerfile(cmd),
                                 "deploy/launch": "#!/usr/bin/env python3\nimport os\n",
                                 "config/puma.rb": "threads 4, 4\n"})
    info, notices = _processes(app)
    assert info.server == "" and "deploy/launch" in info.unfound


def test_a_server_command_not_found_is_said_never_a_quiet_one(tmp_path):
    """A script the command runs that is not in the source, or no command at all: one
    process assumed, and a notice says so; a command read that starts no server (a
    migration) is one process, read."""
    app = _app(tmp_path, {"requirements.txt": "Django==5.0\n"})
    info, notices = _processes(app, command=("./docker/start",))
    assert info.processes is None and "docker/start" in info.unfound
    assert any("web: the command that starts the server was not found (the script "
               "./docker/start it runs is not in the application source): one process "
               "per pod assumed" in n for n in notices), notices
    info, notices = _processes(app)
    assert "no command" in info.unfound and any("one process per pod assumed" in n
                                                 for n in notices)
    info, notices = _processes(app, command=("python", "manage.py", "migrate"))
    assert not info.unfound and not notices


START_SERVER = """\
#!/usr/bin/env bash
set -o errexit
WORKER_COUNT="${GUNICORN_WORKER_COUNT:-5}"
export THREADS=2
python manage.py collectstatic --noinput
./serve-child.sh
gunicorn site.wsgi --bind 0.0.0.0:8000 --workers $WORKER_COUNT &
nginx -g "daemon off;"
"""


@pytest.mark.parametrize(("env", "workers"), [({}, 5), ({"GUNICORN_WORKER_COUNT": "7"}, 7)])
def test_a_variable_the_script_sets_expands_its_later_commands(tmp_path, env, workers):
    """Audit 25 D2 (DrDroidLab/PlayBooks start-server.sh): `WORKER_COUNT="${X:-5}"` then
    `--workers $WORKER_COUNT` runs 5 workers (7 with X=7), not gunicorn's default 1. A
    script it runs inherits only what it exports."""
    app = _app(tmp_path, {"Dockerfile": _dockerfile('["./start-server.sh"]'),
                          "start-server.sh": START_SERVER,
                          "serve-child.sh": "#!/bin/bash\necho $WORKER_COUNT $THREADS\n"})
    info, _notices = _processes(app, env)
    assert info.server == "gunicorn" and info.processes.value == workers


@pytest.mark.parametrize("program", ["/opt/venv/bin/gunicorn", "/usr/local/bin/gunicorn",
                                     ".venv/bin/gunicorn"])
def test_a_virtualenv_program_a_script_runs_is_the_server(tmp_path, program):
    """Audit 34 (denialAll/DJANGO-K8S, Charlie-Bell/Django-K8S): entrypoint.sh runs
    `/opt/venv/bin/gunicorn ...`, the virtualenv the Dockerfile made; it was taken for a
    script missing from the source, so 'one process per pod assumed' hid that an envFrom
    Secret may set WEB_CONCURRENCY. It is gunicorn, read as gunicorn."""
    app = _app(tmp_path, {"Dockerfile": _dockerfile('["/srv/entrypoint.sh"]'),
                          "entrypoint.sh": "#!/bin/bash\ncd /srv/\n"
                                           f"{program} site.wsgi:application -w 3\n"})
    info, notices = _processes(app)
    assert info.server == "gunicorn" and info.processes.value == 3, notices
    assert any("entrypoint.sh:3" in n for n in notices), notices
    # a missing script of the app is still said missing
    app = _app(tmp_path, {"Dockerfile": _dockerfile('["/srv/entrypoint.sh"]'),
                          "entrypoint.sh": "#!/bin/bash\n/srv/scripts/serve\n"})
    info, notices = _processes(app)
    assert not info.server and "/srv/scripts/serve" in (info.unfound or ""), notices
