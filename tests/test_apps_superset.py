"""Apache Superset as its official chart renders it (advisor/read/apps/superset.py): the
web Deployment's gunicorn workers, the Celery worker's prefork children and beat, each
with its own metadata engine (QueuePool 5 + 10 unless superset_config.py's
SQLALCHEMY_ENGINE_OPTIONS says otherwise), and the init Job, a post-install hook.
Audit of real repositories: every Superset workload was a client of unknown size."""

from __future__ import annotations

from msgspec.structs import replace

from advisor.engine.check import scan
from advisor.engine.options import CheckOptions
from advisor.read.apps import pools_for_container
from tests.apphelpers import container, product
from tests.tree_helpers import POSTGRES_DB, write

IMAGE = "apache/superset:4.1.1"
DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")

CONFIG = """import os
SQLALCHEMY_DATABASE_URI = f"postgresql+psycopg2://{os.getenv('DB_USER')}@db:5432/superset"
class CeleryConfig:
    broker_url = "redis://redis:6379/0"
"""


def _chart(config: str = CONFIG, web_env: str = "", worker_command: str =
           "celery --app=superset.tasks.celery_app:app worker") -> str:
    indented = "\n".join("    " + line for line in config.splitlines())
    env = web_env or "[{name: SUPERSET_PORT, value: '8088'}]"
    pod = """      volumes:
        - name: superset-config
          secret: {secretName: superset-config}"""
    mounts = """          envFrom: [{secretRef: {name: superset-env}}]
          volumeMounts:
            - {name: superset-config, mountPath: /app/pythonpath, readOnly: true}"""
    return f"""
apiVersion: v1
kind: Secret
metadata: {{name: superset-env}}
stringData: {{DB_HOST: db, DB_PORT: "5432", DB_USER: superset, DB_NAME: superset}}
---
apiVersion: v1
kind: Secret
metadata: {{name: superset-config}}
stringData:
  superset_config.py: |
{indented}
  superset_init.sh: |
    superset db upgrade
    superset init
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: superset}}
spec:
  replicas: 2
  template:
    spec:
      initContainers:
        - name: wait-for-postgres
          image: apache/superset:dockerize
          command: [/bin/sh, -c, 'dockerize -wait "tcp://$DB_HOST:$DB_PORT" -timeout 120s']
      containers:
        - name: superset
          image: {IMAGE}
          command: [/bin/sh, -c, ". /app/pythonpath/superset_bootstrap.sh; /usr/bin/run-server.sh"]
          env: {env}
{mounts}
{pod}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: superset-worker}}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: superset
          image: {IMAGE}
          command: [/bin/sh, -c, ". /app/pythonpath/superset_bootstrap.sh; {worker_command}"]
{mounts}
{pod}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: superset-init-db
  annotations: {{"helm.sh/hook": "post-install,post-upgrade"}}
spec:
  template:
    spec:
      containers:
        - name: superset-init-db
          image: {IMAGE}
          command: [/bin/sh, -c, ". /app/pythonpath/superset_init.sh"]
{mounts}
{pod}
"""


def _clients(tmp_path, chart: str):
    root = write(tmp_path, {"k8s/db.yaml": DB, "k8s/superset.yaml": chart})
    topo = scan([str(root)], CheckOptions(cache=False)).topology
    return {c.name: c for c in topo.clients}


def test_chart_web_worker_and_init_job_are_sized(tmp_path):
    clients = _clients(tmp_path, _chart())
    web, worker, init = clients["superset"], clients["superset-worker"], \
        clients["superset-init-db"]
    # one gunicorn worker (run-server.sh default) x QueuePool 5 + 10
    assert product(web.pools) == "1 x 15 = 15"
    assert web.pools[0].bound == "default"
    assert "1917ac50" in web.pools[0].processes.source.default
    # Celery prefork: cpu_count() children (4 CPUs assumed), each its own engine
    assert product(worker.pools) == "4 x 15 = 60"
    assert worker.pools[0].bound == "cpu"
    # the init Job: one CLI process at a time (a Helm hook when the chart is rendered:
    # advisor/budget/hooks.py places it)
    assert product(init.pools) == "1 x 1 = 1"
    assert "superset_init.sh" in init.pools[0].label
    for c in (web, worker, init):
        assert c.target_id is not None and not c.unknown, c.name


def test_engine_options_and_worker_amount_are_read(tmp_path):
    config = CONFIG + ("SQLALCHEMY_ENGINE_OPTIONS = {\"pool_size\": 3, \"max_overflow\": 2}\n"
                       "class CeleryConfig:\n    worker_concurrency = 4\n")
    chart = _chart(config, web_env="[{name: SERVER_WORKER_AMOUNT, value: '4'}]")
    clients = _clients(tmp_path, chart)
    assert product(clients["superset"].pools) == "4 x 5 = 20"
    assert clients["superset"].pools[0].bound == "fixed"
    assert product(clients["superset-worker"].pools) == "4 x 5 = 20"


def test_command_line_concurrency_beats_the_config(tmp_path):
    config = CONFIG + "class CeleryConfig:\n    worker_concurrency = 4\n"
    chart = _chart(config, worker_command="celery --app=superset.tasks.celery_app:app "
                                          "worker -c 2")
    assert product(_clients(tmp_path, chart)["superset-worker"].pools) == "2 x 15 = 30"


def test_nullpool_is_one_connection_per_thread(tmp_path):
    config = CONFIG + ("from sqlalchemy.pool import NullPool\n"
                       "SQLALCHEMY_ENGINE_OPTIONS = {\"poolclass\": NullPool}\n")
    clients = _clients(tmp_path, _chart(config))
    assert product(clients["superset"].pools) == "1 x 20 = 20"  # 20 gthread threads
    assert product(clients["superset-worker"].pools) == "4 x 1 = 4"


def test_engine_options_from_a_secret_not_held_are_unknown(tmp_path):
    chart = _chart().replace("secretName: superset-config", "secretName: elsewhere")
    clients = _clients(tmp_path, chart)
    web = clients["superset"]
    assert not web.pools
    assert "superset_config.py" in web.unknown


def test_beat_flower_and_dockerize():
    beat = pools_for_container(replace(container(command=(
        "/bin/sh", "-c", "celery --app=superset.tasks.celery_app:app beat --pidfile "
        "/tmp/celerybeat.pid")), image=IMAGE))
    assert product(beat.pools) == "1 x 15 = 15"
    flower = pools_for_container(replace(container(command=(
        "/bin/sh", "-c", "celery --app=superset.tasks.celery_app:app flower")), image=IMAGE))
    assert not flower.pools and not flower.unknown
    image_cmd = pools_for_container(replace(container(), image=IMAGE))
    assert product(image_cmd.pools) == "1 x 15 = 15"  # the image's CMD: run-server.sh
    dockerize = pools_for_container(replace(container(command=(
        "dockerize", "-wait", "tcp://db:5432")), image="apache/superset:dockerize"))
    assert not dockerize.pools
