"""A server whose process (or thread) count a variable decides that its container does
not set, when an envFrom source whose keys the repository does not hold (a Secret not
in it, taken whole by `envFrom`) may set it: the count is unknown (PA106, naming the
variable and the source: "may be set by"), never the server's default. The source's
prefix must be able to form the name; an explicit `env` entry, or the command line
giving the count, keeps it known.

In the shape homelab repositories deploy Python/Ruby web apps with (bjw-s app-template:
plain `gunicorn app:app`, the app's settings in a Secret made where it is deployed).
Before, `gunicorn app:app` there was 1 worker labelled "no WEB_CONCURRENCY"."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from advisor.model import EnvVar, Source
from advisor.read.apps import scan_app_dir
from advisor.read.apps.base import StackContext
from advisor.read.fs import Root
from tests.apphelpers import container


def _marker(prefix: str = "") -> EnvVar:
    return EnvVar(name=f"{prefix}*", source=Source(path="k8s/app.yaml", line=30),
                  from_ref="secret:app-secret (not in repository)", secret=True)


HELD_SOURCE = "Secret app-secret (envFrom, k8s/app.yaml:30), not in the repository"


def _info(env: dict[str, str], command: tuple[str, ...], *, prefix: str | None = "",
          files: dict[str, str] | None = None, tmp_path=None):
    c = container(env, command=command)
    if prefix is not None:
        c = replace(c, env=(*c.env, _marker(prefix)))
    app = None
    if files:
        for name, text in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
        app = scan_app_dir(Root.of(tmp_path), "")
    return StackContext(container=c, app=app, profile=None, node_cpus=4).processes()


@pytest.mark.parametrize(("command", "names"), [
    (("gunicorn", "app:app"), "GUNICORN_CMD_ARGS"),
    (("uvicorn", "m:app"), "UVICORN_WORKERS or WEB_CONCURRENCY"),
    (("uwsgi", "--http", ":8000"), "UWSGI_PROCESSES or UWSGI_WORKERS"),
    (("puma",), "WEB_CONCURRENCY"),
    (("sidekiq",), "RAILS_MAX_THREADS"),
    (("sentry", "run", "web"), "UWSGI_WORKERS"),
])
def test_an_envfrom_source_not_held_leaves_the_count_unknown(command, names):
    info = _info({}, command)
    assert info.hidden, info
    assert info.hidden[0].endswith(f": {names} may be set by {HELD_SOURCE}")


def test_gunicorn_says_each_variable_that_may_set_its_workers():
    """GUNICORN_CMD_ARGS is over WEB_CONCURRENCY and the config file (gunicorn
    app/base.py load_config, read from 19.7.0): even an explicit WEB_CONCURRENCY may be
    overridden by it; threads too."""
    info = _info({}, ("gunicorn", "app:app"))
    assert info.hidden == [f"gunicorn workers: GUNICORN_CMD_ARGS may be set by {HELD_SOURCE}",
                           f"gunicorn threads: GUNICORN_CMD_ARGS may be set by {HELD_SOURCE}"]
    info = _info({"WEB_CONCURRENCY": "3"}, ("gunicorn", "app:app"))
    assert len(info.hidden) == 2
    # explicit GUNICORN_CMD_ARGS: WEB_CONCURRENCY may still be set by the Secret
    info = _info({"GUNICORN_CMD_ARGS": "--timeout 30"}, ("gunicorn", "app:app"))
    assert info.hidden == [f"gunicorn workers: WEB_CONCURRENCY may be set by {HELD_SOURCE}"]
    # a prefix that forms WEB_CONCURRENCY but not GUNICORN_CMD_ARGS
    info = _info({}, ("gunicorn", "app:app"), prefix="WEB_")
    assert info.hidden == ["gunicorn workers: WEB_CONCURRENCY may be set by Secret app-secret "
                           "(envFrom with prefix WEB_, k8s/app.yaml:30), not in the repository"]


def test_gunicorn_cmd_args_from_a_secret_is_unknown_not_ignored():
    c = container({}, command=("gunicorn", "app:app"))
    c = replace(c, env=(EnvVar(name="GUNICORN_CMD_ARGS", source=Source(path="k8s/app.yaml",
                                                                         line=12),
                               from_ref="secret:s/args (not in repository)", secret=True),))
    info = StackContext(container=c, app=None, profile=None).processes()
    assert len(info.hidden) == 2 and "GUNICORN_CMD_ARGS (k8s/app.yaml:12" in info.hidden[0]


@pytest.mark.parametrize(("env", "command", "prefix"), [
    # the command line gives the count: over every variable
    ({}, ("gunicorn", "-w", "3", "--threads", "2", "app:app"), ""),
    ({}, ("uvicorn", "m:app", "--workers", "2"), ""),
    ({}, ("uwsgi", "--processes", "2", "--threads", "1"), ""),
    ({}, ("puma", "-w", "2", "-t", "1:4"), ""),
    ({}, ("sidekiq", "-c", "10"), ""),
    # the env sets it explicitly
    ({"UVICORN_WORKERS": "2"}, ("uvicorn", "m:app"), ""),
    ({"WEB_CONCURRENCY": "2", "PUMA_MAX_THREADS": "4"}, ("puma",), ""),
    ({"RAILS_MAX_THREADS": "5"}, ("sidekiq",), ""),
    ({"GUNICORN_CMD_ARGS": "-w 2", "WEB_CONCURRENCY": "2"}, ("gunicorn", "app:app"), ""),
    # the prefix cannot form the name
    ({}, ("gunicorn", "app:app"), "APP_"),
    ({}, ("puma",), "DB_"),
    # no envFrom source not held
    ({}, ("gunicorn", "app:app"), None),
    ({}, ("uvicorn", "m:app"), None),
])
def test_no_unknown_when_the_count_is_known(env, command, prefix):
    info = _info(env, command, prefix=prefix)
    assert info.hidden == []


def test_gunicorn_before_19_7_does_not_read_gunicorn_cmd_args(tmp_path):
    info = _info({"WEB_CONCURRENCY": "2"}, ("gunicorn", "app:app"), tmp_path=tmp_path,
                 files={"requirements.txt": "gunicorn==19.6.0\n"})
    assert info.hidden == [] and info.processes.value == 2


def test_a_config_file_workers_leaves_only_gunicorn_cmd_args(tmp_path):
    info = _info({"GUNICORN_CMD_ARGS": "--timeout 5"}, ("gunicorn", "app:app"),
                 tmp_path=tmp_path, files={"gunicorn.conf.py": "workers = 3\n"})
    assert info.hidden == [] and info.processes.value == 3


def test_puma_threads_and_the_node_cluster(tmp_path):
    info = _info({"WEB_CONCURRENCY": "2"}, ("puma",))
    assert info.hidden == ["Puma max threads: PUMA_MAX_THREADS or MAX_THREADS may be set by "
                           + HELD_SOURCE]
    info = _info({}, ("node", "server.js"), tmp_path=tmp_path, files={"server.js": (
        "const cluster = require('cluster');\n"
        "const n = parseInt(process.env.WEB_CONCURRENCY || '1');\n"
        "if (cluster.isPrimary) { for (let i = 0; i < n; i++) cluster.fork(); }\n")})
    assert info.hidden == [f"node cluster workers: WEB_CONCURRENCY may be set by {HELD_SOURCE}"]
