"""supervisord's programs as processes (advisor/read/apps/supervisord.py): Redash's
worker runs `supervisord -c worker.conf` with numprocs=%(ENV_WORKERS_COUNT)s copies of
`manage.py rq worker` (audit 6 on getredash/contrib-helm-chart: 1 process per pod where
the chart's adhoc worker runs 2)."""

from __future__ import annotations

from advisor.engine.check import scan
from advisor.engine.options import CheckOptions
from tests.test_apps_shell_follow import _app, _processes
from tests.tree_helpers import POSTGRES_DB, write

WORKER_CONF = """\
[supervisord]
nodaemon=true

[program:worker]
command=./manage.py rq worker %(ENV_QUEUES)s
process_name=%(program_name)s-%(process_num)s
numprocs=%(ENV_WORKERS_COUNT)s
directory=/app

[eventlistener:worker_healthcheck]
serverurl=AUTO
command=./manage.py rq healthcheck
events=TICK_60
"""


def test_numprocs_from_the_env_with_the_entrypoint_default(tmp_path):
    """worker() exports WORKERS_COUNT=${WORKERS_COUNT:-2} before `exec supervisord -c
    worker.conf`: 2 when the container does not set it, its own value when it does; the
    event listener is no copy of the program."""
    app = _app(tmp_path, {"worker.conf": WORKER_CONF})
    info, notices = _processes(app, args=("worker",), env={"QUEUES": "queries"})
    assert info.server == "supervisord" and info.processes.value == 2
    assert info.processes.source.label() == "bin/docker-entrypoint:7"
    assert any("eventlistener:worker_healthcheck" in n for n in notices), notices
    info, _ = _processes(app, args=("worker",), env={"WORKERS_COUNT": "3"})
    assert info.processes.value == 3
    assert info.processes.source.label() == "k8s/app.yaml:20"


def test_numprocs_unknown_when_its_variable_is_not_known(tmp_path):
    """From a Secret: unknown (PA106). Not set at all (no entrypoint default): supervisord
    refuses the file; unknown, not 1."""
    app = _app(tmp_path, {"worker.conf": WORKER_CONF})
    info, _ = _processes(app, args=("worker",), env={"WORKERS_COUNT": "4"},
                         secret={"WORKERS_COUNT"})
    assert info.processes is None and "WORKERS_COUNT" in info.hidden[0]
    info, _ = _processes(app, command=("supervisord", "-c", "/app/worker.conf"))
    assert info.processes is None and "ENV_WORKERS_COUNT" in info.hidden[0]
    info, _ = _processes(app, command=("supervisord", "-c", "/etc/other.conf"))
    assert info.processes is None and "not in the application source" in info.hidden[0]


def test_programs_servers_and_non_clients(tmp_path):
    """numprocs copies of a gunicorn program with -w 3 are 2 x 3 processes; nginx and a
    program with autostart=false are not counted; plain programs add up."""
    conf = """\
[supervisord]
environment=COPIES="2"

[program:web]
command=gunicorn -w 3 app.wsgi:app
numprocs=%(ENV_COPIES)s
process_name=web-%(process_num)s

[program:nginx]
command=/usr/sbin/nginx -g "daemon off;"

[program:backfill]
command=python backfill.py
autostart=false
"""
    app = _app(tmp_path, {"supervisord.conf": conf})
    info, notices = _processes(app, command=("supervisord", "-n"))
    assert info.server == "gunicorn" and info.processes.value == 6
    assert info.processes.source.label() == "supervisord.conf:2"
    assert any("runs nginx" in n for n in notices) and any("autostart" in n for n in notices)
    plain = conf.replace("gunicorn -w 3 app.wsgi:app", "python consumer.py").replace(
        "autostart=false", "numprocs=3")
    app = _app(tmp_path, {"supervisord.conf": plain})
    info, _ = _processes(app, command=("supervisord", "-n"))
    assert info.processes.value == 5 and "web 2 + backfill 3" in info.processes.label


def test_included_files_and_programs_not_combined(tmp_path):
    """[include] files relative to the including file; a gunicorn program beside a
    celery one: their processes are not combined, so unknown."""
    conf = "[supervisord]\nnodaemon=true\n\n[include]\nfiles = conf.d/*.conf\n"
    app = _app(tmp_path, {
        "deploy/supervisord.conf": conf,
        "deploy/conf.d/web.conf": "[program:web]\ncommand=gunicorn -w 2 app:app\n",
        "deploy/conf.d/jobs.conf": "[program:jobs]\ncommand=celery -A app worker -c 4\n"})
    info, _ = _processes(app, command=("supervisord", "-c", "deploy/supervisord.conf"))
    assert info.processes is None and "[program:jobs] (celery)" in info.hidden[0]
    (tmp_path / "deploy/conf.d/jobs.conf").unlink()
    app = _app(tmp_path)
    info, _ = _processes(app, command=("supervisord", "-c", "deploy/supervisord.conf"))
    assert info.server == "gunicorn" and info.processes.value == 2
    conf = conf.replace("conf.d/*.conf", "/etc/supervisor/missing/*.conf")
    app = _app(tmp_path, {"deploy/supervisord.conf": conf})
    info, _ = _processes(app, command=("supervisord", "-c", "deploy/supervisord.conf"))
    assert info.processes is None and "not in the application source" in info.hidden[0]


CHART_LIKE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: redash-adhocworker}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: adhocworker
          image: redash/redash:25.8.0
          args:
            - /bin/sh
            - -c
            - |
              export DATABASE_URL="postgresql://app:pw@db:5432/app"
              exec /app/bin/docker-entrypoint worker
          env:
            - {name: DATABASE_URL, value: "postgresql://app:pw@db:5432/app"}
            - {name: WORKERS_COUNT, value: "2"}
            - {name: QUEUES, value: queries}
"""


def test_the_chart_shape_end_to_end(tmp_path):
    """The Redash chart's worker Deployment with the app source beside it: 2 pods x 2
    rq workers, each its own SQLAlchemy pool."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/worker.yaml": CHART_LIKE})
    _app(tmp_path / "redash", {
        "worker.conf": WORKER_CONF,
        "requirements.txt": "SQLAlchemy==2.0.30\npsycopg2-binary==2.9.9\n",
        "app/db.py": "from sqlalchemy import create_engine\n"
                     "import os\nengine = create_engine(os.environ['DATABASE_URL'], "
                     "pool_size=3, max_overflow=0)\n"})
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    client = next(c for c in topo.clients if c.name == "redash-adhocworker")
    (pool,) = client.pools
    assert pool.processes.value == 2 and pool.size.value == 3


def test_the_config_copied_into_the_image_is_found_by_its_name(tmp_path):
    """`supervisord -c /etc/supervisor/conf.d/supervisord.conf` with the repository's
    docker/supervisord.conf (the only one of that name) copied there."""
    conf = "[supervisord]\nnodaemon=true\n\n[program:jobs]\ncommand=python jobs.py\nnumprocs=3\n" \
           "process_name=jobs-%(process_num)s\n"
    app = _app(tmp_path, {"docker/supervisord.conf": conf})
    info, _ = _processes(app, command=("supervisord", "-n", "-c",
                                       "/etc/supervisor/conf.d/supervisord.conf"))
    assert info.processes.value == 3
    assert info.processes.source.label() == "docker/supervisord.conf:6"
