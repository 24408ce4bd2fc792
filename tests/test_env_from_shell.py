"""Shell fallbacks, `${WEB_WORKERS:-4}` / `${X-4}` / `$X`, and kubelet's `$(X)`, in a
container command or the image's entrypoint script, when the container takes a Secret
the repository does not hold whole (`envFrom`): the variable may be set there, so the
count is unknown (PA106, "may be set by the envFrom source", cited at it), never the
fallback. An explicit env entry, or a prefix that cannot form the name, keeps it known;
without such a source nothing changes. A variable set from a Secret (secretKeyRef) is
unknown the same way ("is set by"): its `:-4` is not what runs either."""

from __future__ import annotations

import pytest

from advisor.model import Container, EnvVar, Source
from advisor.read.apps import scan_app_dir
from advisor.read.apps.base import StackContext
from advisor.read.fs import Root

ENTRYPOINT = """\
#!/bin/bash
set -e

worker() {
  export WORKERS_COUNT=${WORKERS_COUNT:-2}
  exec supervisord -c worker.conf
}

server() {
  exec gunicorn -b 0.0.0.0:5000 -w${WEB_WORKERS:-4} app.wsgi:app
}

case "$1" in
  worker) shift; worker ;;
  server) shift; server ;;
  *) exec "$@" ;;
esac
"""

DOCKERFILE = """\
FROM python:3.12-slim
COPY . /app
ENTRYPOINT ["/app/bin/docker-entrypoint"]
CMD ["server"]
"""

MAY = "may be set by the envFrom source at k8s/app.yaml:30, whose keys are not in the " \
      "repository"


def _marker(prefix: str = "") -> EnvVar:
    return EnvVar(name=f"{prefix}*", source=Source(path="k8s/app.yaml", line=30),
                  from_ref="secret:app-env (not in repository)", secret=True)


def _info(*, env: dict[str, str] | None = None, extra: tuple[EnvVar, ...] = (),
          command: tuple[str, ...] = (), args: tuple[str, ...] = (), app=None):
    c = Container(name="app", command=command, args=args, source=Source(
        path="k8s/app.yaml", line=5), env=(*(EnvVar(name=k, value=v, source=Source(
            path="k8s/app.yaml", line=20 + i, key=k)) for i, (k, v) in enumerate(
                (env or {}).items())), *extra))
    return StackContext(container=c, app=app, profile=None, node_cpus=4).processes()


def test_an_entrypoint_function_fallback_is_not_taken_under_envfrom(tmp_path):
    for name, text in {"Dockerfile": DOCKERFILE, "bin/docker-entrypoint": ENTRYPOINT,
                       "requirements.txt": "gunicorn==23.0.0\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    app = scan_app_dir(Root.of(tmp_path), "")
    plain = _info(app=app)
    assert plain.processes.value == 4 and not plain.hidden, plain
    hidden = _info(app=app, extra=(_marker("WEB_"),))
    assert hidden.hidden == [f"gunicorn workers: WEB_WORKERS {MAY.replace('source', 'source with prefix WEB_')}"], hidden.hidden  # noqa: E501
    given = _info(app=app, env={"WEB_WORKERS": "6"}, extra=(_marker("WEB_"),))
    assert given.processes.value == 6 and not given.hidden, given
    other = _info(app=app, extra=(_marker("REDIS_"),))
    assert other.processes.value == 4 and not other.hidden, other


@pytest.mark.parametrize("script", [
    "exec bundle exec sidekiq -c ${SIDEKIQ_CONCURRENCY:-4}",
    "exec bundle exec sidekiq -c ${SIDEKIQ_CONCURRENCY-4}",
    "cd /app && bundle exec sidekiq --concurrency $SIDEKIQ_CONCURRENCY",
])
def test_a_command_script_fallback_is_not_taken_under_envfrom(script):
    plain = _info(command=("/bin/sh", "-c", script), env={"SIDEKIQ_CONCURRENCY": "4"})
    assert plain.threads.value == 4 and not plain.hidden, plain
    hidden = _info(command=("/bin/sh", "-c", script), env={"RAILS_MAX_THREADS": "5"},
                   extra=(_marker(),))
    assert hidden.hidden == [f"Sidekiq concurrency: SIDEKIQ_CONCURRENCY {MAY}"], hidden
    secret = EnvVar(name="SIDEKIQ_CONCURRENCY", source=Source(
        path="k8s/app.yaml", line=31, key="SIDEKIQ_CONCURRENCY"), from_ref="ref", secret=True)
    hidden = _info(command=("/bin/sh", "-c", script), env={"RAILS_MAX_THREADS": "5"},
                   extra=(secret,))
    assert hidden.hidden == ["Sidekiq concurrency is set by SIDEKIQ_CONCURRENCY "
                             "(k8s/app.yaml:31) from a secret or reference whose value is "
                             "not in the repository"], hidden


def test_a_fallback_with_no_envfrom_source_is_still_taken():
    info = _info(command=("/bin/sh", "-c", "exec bundle exec sidekiq -c ${SIDEKIQ_CONCURRENCY:-4}"))
    assert info.threads.value == 4 and not info.hidden, info


def test_kubelet_expands_envfrom_variables_too():
    """`$(WORKERS)` in args: kubelet expands it from every env entry, envFrom's too."""
    command = ("gunicorn", "-w", "$(WORKERS)", "--threads", "2", "app:app")
    hidden = _info(command=command, env={"GUNICORN_CMD_ARGS": "--timeout 30"},
                   extra=(_marker(),))
    assert f"gunicorn workers: WORKERS {MAY}" in hidden.hidden, hidden
    given = _info(command=command, env={"WORKERS": "3", "GUNICORN_CMD_ARGS": "--timeout 30"},
                  extra=(_marker(),))
    assert given.processes.value == 3 and not given.hidden, given


def test_an_exported_self_default_is_not_its_fallback_under_envfrom():
    """`export WEB_CONCURRENCY=${WEB_CONCURRENCY:-3}` before `exec gunicorn`: the process
    inherits the Secret's value when it has one, so the count is unknown, cited at the
    envFrom source; without it, 3 from the script."""
    script = "export WEB_CONCURRENCY=${WEB_CONCURRENCY:-3}\nexec gunicorn app:app"
    plain = _info(command=("/bin/sh", "-c", script))
    assert plain.processes.value == 3 and not plain.hidden, plain
    hidden = _info(command=("/bin/sh", "-c", script), extra=(_marker("WEB_"),))
    assert hidden.hidden == [f"gunicorn workers: WEB_CONCURRENCY "
                             f"{MAY.replace('source', 'source with prefix WEB_')}"], hidden


def test_pm2_and_sentry_web_counts_are_not_the_fallback_under_envfrom():
    pm2 = ("/bin/sh", "-c", "exec pm2-runtime start server.js -i ${PM2_INSTANCES:-2}")
    assert _info(command=pm2).processes.value == 2
    hidden = _info(command=pm2, extra=(_marker(),))
    assert hidden.processes is None and hidden.hidden == [
        f"PM2 instances: PM2_INSTANCES {MAY}"], hidden
    sentry = ("/bin/sh", "-c", "exec sentry run web -w ${SENTRY_WORKERS:-6}")
    assert _info(command=sentry).processes.value == 6
    hidden = _info(command=sentry, extra=(_marker("SENTRY_"),))
    assert f"Sentry web workers: SENTRY_WORKERS {MAY.replace('source', 'source with prefix SENTRY_')}" \
        in hidden.hidden, hidden  # noqa: E501
