"""A `sh -c` script's command followed to what the process becomes: its `exec` (or
last) command, through the image's entrypoint script's function when it names one,
with the variables the script exports before it (audit 6 on getredash/contrib-helm-chart:
behind `args: [/bin/sh, -c, "...export REDASH_DATABASE_URL=...; exec
/app/bin/docker-entrypoint server"]` the server's 4 gunicorn workers were 1 process)."""

from __future__ import annotations

from advisor.model import Container, EnvVar, Source
from advisor.read.apps import scan_app_dir
from advisor.read.apps.base import StackContext
from advisor.read.apps.cmdline import command_line
from advisor.read.fs import Root

ENTRYPOINT = """\
#!/bin/bash
set -e

worker() {
  echo "Starting worker..."

  export WORKERS_COUNT=${WORKERS_COUNT:-2}
  exec supervisord -c worker.conf
}

server() {
  TIMEOUT=${APP_TIMEOUT:-60}
  exec /usr/local/bin/gunicorn -b 0.0.0.0:5000 -w${WEB_WORKERS:-4} app.wsgi:app --timeout $TIMEOUT
}

case "$1" in
  worker)
    shift
    worker
    ;;
  server)
    shift
    server
    ;;
  *)
    exec "$@"
    ;;
esac
"""

DOCKERFILE = """\
FROM python:3.12-slim
WORKDIR /app
COPY . /app
ENTRYPOINT ["/app/bin/docker-entrypoint"]
CMD ["server"]
"""

WRAPPER = """\
if [ -n "${REDIS_PASSWORD}" ]; then
  export REDIS_URL="redis://:${REDIS_PASSWORD}@redis:6379/0"
else
  export REDIS_URL="redis://redis:6379/0"
fi
export DATABASE_URL="postgresql://${DB_USER}:${DB_PASSWORD}@${DB_HOST}:5432/app"
exec /app/bin/docker-entrypoint {arg}
"""


def _app(tmp_path, files=None):
    for name, text in {"Dockerfile": DOCKERFILE, "bin/docker-entrypoint": ENTRYPOINT,
                       **(files or {})}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return scan_app_dir(Root.of(tmp_path), "")


def _container(env=None, command=(), args=(), secret=()):
    return Container(
        name="app", command=tuple(command), args=tuple(args),
        env=tuple(EnvVar(name=k, value=None if k in secret else v,
                         source=Source(path="k8s/app.yaml", line=20 + i, key=k),
                         secret=k in secret, from_ref="secret:db/password" if k in secret
                         else None)
                  for i, (k, v) in enumerate((env or {}).items())),
        source=Source(path="k8s/app.yaml", line=5))


def _processes(app, **kw):
    ctx = StackContext(container=_container(**kw), app=app, profile=None, node_cpus=4)
    return ctx.processes(), ctx.notices


DB_ENV = {"DB_USER": "app", "DB_PASSWORD": "", "DB_HOST": "db"}


def test_args_script_exec_of_the_entrypoint_is_its_function(tmp_path):
    """The chart's args under the image's ENTRYPOINT: the script's `exec
    /app/bin/docker-entrypoint server` is the entrypoint's server(), gunicorn -w4."""
    app = _app(tmp_path)
    info, notices = _processes(app, env=DB_ENV, secret={"DB_PASSWORD"},
                               args=("/bin/sh", "-c", WRAPPER.replace("{arg}", "server")))
    assert info.server == "gunicorn" and info.processes.value == 4
    assert info.processes.source.label() == "bin/docker-entrypoint:13"
    assert any("bin/docker-entrypoint:13" in n and "ENTRYPOINT runs the manifest's args" in n
               for n in notices), notices
    # the container's env still sets the count the function reads
    info, _ = _processes(app, env={**DB_ENV, "WEB_WORKERS": "6"},
                         args=("/bin/sh", "-c", WRAPPER.replace("{arg}", "server")))
    assert info.processes.value == 6
    assert info.processes.source.label() == "k8s/app.yaml:23"


def test_command_script_and_an_export_before_the_exec(tmp_path):
    """`command: [sh, -c, ...]` (no ENTRYPOINT involved): an `export` in the script is
    the env of the entrypoint it execs, cited at the script."""
    app = _app(tmp_path)
    script = "export WEB_WORKERS=3 && exec /app/bin/docker-entrypoint server"
    info, _ = _processes(app, command=("sh", "-c", script))
    assert info.processes.value == 3
    assert info.processes.source.path == "k8s/app.yaml"
    # a shell variable that is not exported does not reach the entrypoint's process
    info, _ = _processes(app, command=("sh", "-c",
                                       "WEB_WORKERS=3; exec /app/bin/docker-entrypoint server"))
    assert info.processes.value == 4


def test_exports_are_the_env_of_a_server_that_reads_it():
    """gunicorn reads WEB_CONCURRENCY from its environment: exported by the script, or
    given to the command alone; a value from a Secret leaves the count unknown."""
    ctx = StackContext(container=_container(command=(
        "/bin/sh", "-c", "set -e\nexport WEB_CONCURRENCY=5\nexec gunicorn app:app")),
        app=None, profile=None)
    assert ctx.processes().processes.value == 5
    ctx = StackContext(container=_container(command=(
        "/bin/sh", "-c", "cd /app && WEB_CONCURRENCY=7 gunicorn app:app")),
        app=None, profile=None)
    assert ctx.processes().processes.value == 7
    ctx = StackContext(container=_container(env={"N": "x"}, secret={"N"}, command=(
        "/bin/sh", "-c", "export WEB_CONCURRENCY=$N; exec gunicorn app:app")),
        app=None, profile=None)
    info = ctx.processes()
    assert "WEB_CONCURRENCY" in info.hidden[0]  # unknown (PA106), not the default


def test_exec_ends_the_script_and_branches_are_not_followed():
    """The first top-level `exec` replaces the shell (what follows never runs); an
    export inside an `if` branch is not known to run; a heredoc's lines are input."""
    ctx = StackContext(container=_container(command=(
        "sh", "-c", 'if [ -n "$X" ]; then\n  export WEB_CONCURRENCY=9\nfi\n'
                    "export WEB_CONCURRENCY=3\nexec gunicorn app:app\n"
                    "export WEB_CONCURRENCY=8\n")), app=None, profile=None)
    assert ctx.processes().processes.value == 3
    cmd = command_line(ctx.container, None, [])
    assert [(e.name, e.value) for e in cmd.env] == [("WEB_CONCURRENCY", "3")]
    ctx = StackContext(container=_container(command=(
        "sh", "-c", "psql <<'SQL'\nexport WEB_CONCURRENCY=4\nSQL\nexec gunicorn app:app")),
        app=None, profile=None)
    assert ctx.processes().processes.value == 1


def test_without_the_application_source_the_entrypoint_function_is_not_known():
    """The chart's repository alone has no bin/docker-entrypoint: the script's `exec
    /app/bin/docker-entrypoint server` names no server read here (one process; the
    client's connections are unknown without its source anyway). What the script
    exports is still read: DATABASE_URL (not REDIS_URL, set in a branch), unknown when
    it reads a Secret."""
    ctx = StackContext(container=_container(env=DB_ENV, secret={"DB_PASSWORD"}, args=(
        "/bin/sh", "-c", WRAPPER.replace("{arg}", "server"))), app=None, profile=None)
    cmd = command_line(ctx.container, None, [])
    assert [(e.name, e.value, e.secret) for e in cmd.env] == [("DATABASE_URL", None, True)]
    assert ctx.processes().processes is None
    ctx = StackContext(container=_container(env=DB_ENV, args=(
        "/bin/sh", "-c", WRAPPER.replace("{arg}", "server"))), app=None, profile=None)
    (url,) = command_line(ctx.container, None, []).env
    assert url.value == "postgresql://app:@db:5432/app"


def test_an_unclosed_heredoc_is_the_rest_of_the_script_and_a_shift_is_no_heredoc():
    """bash reads an unclosed heredoc to the end of the script (it was scanned to the
    end again for each such line: 20,000 lines took 17 s); `$((1 << N))` is arithmetic."""
    import time

    from advisor.read.apps.cmdline import top_level_lines

    script = "cat <<EOF\n" * 20_000 + "exec gunicorn app\n"
    started = time.perf_counter()
    assert top_level_lines(script) == [(1, "cat <<EOF")]
    assert time.perf_counter() - started < 2
    shift = "x=$((1 << SIZE))\nexec gunicorn app\n"
    assert [line for _, line in top_level_lines(shift)][-1] == "exec gunicorn app"


def test_each_word_of_a_script_names_the_variable_its_own_text_came_from():
    """`--loglevel="${LOG}" --concurrency="${N:-1}"`: the concurrency is N's, cited at N's
    line; it was LOG's, the script's first variable (audit 6a D6, DefectDojo's
    entrypoint-celery-worker.sh). Kubelet's `$(X)` in the script too; every word of an
    unquoted value of several words is the variable's; a word of the script's own text
    names none."""
    script = ('exec celery -A app worker --loglevel="${LOG}" --concurrency="${N:-1}" '
              "-Q $(QUEUE) $OPTS")
    c = _container({"LOG": "INFO", "N": "8", "QUEUE": "q1", "OPTS": "--max-tasks 5"},
                   command=("sh", "-c", script))
    words = {w.text: w.from_env for w in command_line(c, None, []).words}
    assert words["--loglevel=INFO"] == "LOG"
    assert words["--concurrency=8"] == "N"
    assert words["q1"] == "QUEUE"
    assert (words["--max-tasks"], words["5"]) == ("OPTS", "OPTS")
    assert (words["celery"], words["-Q"]) == (None, None)
    ctx = StackContext(container=c, app=None, profile=None)
    term = ctx.processes().processes
    assert (term.value, term.source.line) == (8, 21)  # N's line (_container)
