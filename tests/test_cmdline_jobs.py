"""A command line split into its commands where the shell splits it: at an unquoted
newline of a `sh -c` script (a YAML block scalar's lines) and at `&`, not only at `&&`,
`;`, `||`, `|`. Before, `rails db:migrate\\npuma` was one command read as the migration,
a here-document's body was read as commands, and `gunicorn & celery` counted gunicorn's
workers only."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.model import Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.base import StackContext
from advisor.read.apps.cmdline import non_client_server, shell_command
from advisor.read.fs import Root
from tests.apphelpers import container


def _jobs(script: str) -> list[tuple[list[str], bool]]:
    line = shell_command(script, Source(path="k8s/app.yaml", line=3), {}, origin="manifest")
    return [([w.text for w in words], bg) for words, bg in line.jobs()]


@pytest.mark.parametrize("script, jobs", [
    ("cd /app\nexec gunicorn -w 4 app:app", [(["cd", "/app"], False),
                                              (["gunicorn", "-w", "4", "app:app"], False)]),
    ("a & b", [(["a"], True), (["b"], False)]),
    ("a &\nb", [(["a"], True), (["b"], False)]),
    ("a |& b", [(["a"], False), (["b"], False)]),
    # redirections, not the background
    ("a 2>&1 b", [(["a", "2>", "&", "1", "b"], False)]),
    ("a &>/dev/null\nb", [(["a", "&", ">/dev/null"], False), (["b"], False)]),
    ("a 2>&1 &\nb", [(["a", "2>", "&", "1"], True), (["b"], False)]),
    # the command goes on: after `&&` or `|` at a line's end, a backslash, in quotes
    ("a &&\nb", [(["a"], False), (["b"], False)]),
    ("a |\n  b", [(["a"], False), (["b"], False)]),
    ("exec a \\\n  -w 5 x", [(["a", "-w", "5", "x"], False)]),
    ("echo 'x\ny' z\nb", [(["echo", "x\ny", "z"], False), (["b"], False)]),
    # a comment ends at the newline, which still ends the command
    ("a  # first\nb", [(["a"], False), (["b"], False)]),
    # a here-document's body is input, not commands
    ("cat <<EOF > /tmp/x\ncelery worker -c 99\nEOF\nexec b",
     [(["cat", "<<EOF", ">", "/tmp/x"], False), (["b"], False)]),
    ("cat <<-'END'\n\tcelery worker\n\tEND\nb", [(["cat", "<<-END"], False), (["b"], False)]),
    ("X=1\nexec b", [(["b"], False)]),
])
def test_jobs_are_split_where_the_shell_splits(script, jobs):
    assert _jobs(script) == jobs


def _info(command, files=None, tmp_path=None, env=None):
    app = None
    if files is not None:
        for name, text in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
        app = scan_app_dir(Root.of(tmp_path), "")
    ctx = StackContext(container=container(env or {}, command=command), app=app,
                       profile=None, node_cpus=4)
    return ctx.processes()


def test_the_server_on_the_line_after_a_task_is_the_process():
    info = _info(("bash", "-c", "bundle exec rails db:migrate\nbundle exec puma -w 3"))
    assert info.server == "puma" and info.processes.value == 3
    info = _info(("sh", "-c", "bundle exec rake db:migrate\nbundle exec sidekiq -c 10\n"))
    assert info.server == "sidekiq" and info.threads.value == 10


def test_a_here_document_body_runs_no_server():
    info = _info(("sh", "-c", "cat <<EOF > /tmp/x.py\ncelery -A app worker --concurrency 99\n"
                              "EOF\nexec gunicorn -w 4 app:app"))
    assert info.server == "gunicorn" and info.processes.value == 4


def test_servers_run_at_once_add_up_their_processes():
    info = _info(("sh", "-c", "gunicorn -w 4 app:app & celery -A app worker -c 8"))
    assert info.processes.value == 12
    assert info.processes.label == "gunicorn workers 4 + Celery concurrency 8"
    # a redirection's `&` runs nothing beside it
    info = _info(("sh", "-c", "gunicorn -w 4 app:app 2>&1 | tee /tmp/log"))
    assert info.server == "gunicorn" and info.processes.value == 4


def test_servers_with_threads_run_at_once_are_not_combined():
    info = _info(("sh", "-c", "bundle exec sidekiq -c 10 & bundle exec puma -w 3"))
    assert info.processes is None and info.hidden
    assert "sidekiq (k8s/app.yaml:5), puma (k8s/app.yaml:5) at once" in info.hidden[0]


def test_a_migration_then_a_program_on_the_next_line_is_no_migration():
    root = Path(__file__).parent / "fixtures_apps" / "django"
    app = scan_app_dir(Root.of(root), "")
    env = {"DJANGO_SETTINGS_MODULE": "mysite.settings.production"}
    found = pools_for_container(container(env, command=(
        "/bin/bash", "-c", "python manage.py migrate\npython worker.py\n")), app)
    assert found.pools and not any(p.label.startswith("migration") for p in found.pools)
    found = pools_for_container(container(env, command=(
        "/bin/bash", "-c", "cd /app\npython manage.py migrate\n")), app)
    assert [p.label.split(" (")[0] for p in found.pools] == ["migration"]


def test_a_server_in_the_background_keeps_a_web_server_container_a_client():
    assert non_client_server(container(command=(
        "sh", "-c", "gunicorn -w 4 app:app &\nnginx -g 'daemon off;'"))) is None
    assert non_client_server(container(command=(
        "sh", "-c", "cd /etc/nginx\nnginx -g 'daemon off;'"))).text == "nginx"


def test_a_virtualenv_activated_on_its_own_line_is_no_missing_script(tmp_path):
    # `source venv/bin/activate` is now a command of its own (tandoor's init container):
    # venv writes that file when the image is built; it starts nothing
    info = _info(("sh", "-c", "set -e\nsource venv/bin/activate\npython manage.py migrate\n"
                              "echo Done"), tmp_path=tmp_path,
                 files={"manage.py": "import django\n", "requirements.txt": "django==4.2\n"})
    assert not info.unfound and info.processes is None
