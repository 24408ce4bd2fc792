"""Rails applications run from their published images, configured by env only
(advisor/read/apps/zammad.py): Zammad's POSTGRESQL_OPTIONS `pool=`, per process."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write

ZAMMAD_PUMA_MAX_THREADS = 30  # zammad config/puma.rb MAX_THREADS || 30
ZAMMAD_IMAGE_POOL = 50  # zammad Dockerfile ENV POSTGRESQL_OPTIONS=?pool=50


def budget_of(root: Path):
    result = run_check([str(root)], CheckOptions())
    return result, {b.server: b for b in result.budgets}


def pools_of(root: Path, name: str):
    topo = scan([str(root)], CheckOptions()).topology
    (client,) = [c for c in topo.clients if c.name == name]
    return client.pools


def zammad(name: str, command: str, options: str = '"pool=50"', env: str = "") -> str:
    """One Deployment as zammad-helm renders it: the image, its command, the env every
    Zammad container gets (POSTGRESQL_* from values.yaml zammadConfig.postgresql)."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: zammad-{name}}}
spec:
  replicas: 1
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: zammad-{name}
          image: ghcr.io/zammad/zammad:7.1.2-0013
          command: {command}
          env:
            - {{name: POSTGRESQL_HOST, value: db}}
            - {{name: POSTGRESQL_PORT, value: "5432"}}
            - {{name: POSTGRESQL_USER, value: zammad}}
            - {{name: POSTGRESQL_DB, value: zammad_production}}
            - {{name: POSTGRESQL_OPTIONS, value: {options}}}
{env}"""


PUMA = '["bundle", "exec", "puma", "-b", "tcp://[::]:3000", "-w", "0", "-e", "production"]'
SCHEDULER = '["bundle", "exec", "script/background-worker.rb", "start"]'
WEBSOCKET = '["bundle", "exec", "script/websocket-server.rb", "-b", "[::]", "-p", "6042", "start"]'
NGINX = "[/usr/sbin/nginx, -g, 'daemon off;']"


def test_zammad_pool_from_postgresql_options_in_each_rails_process(tmp_path):
    """Audit: zammad-helm (POSTGRESQL_OPTIONS pool=50) was four unknown clients (PA106,
    peak a floor of 7); its web server holds one connection per Puma thread (30, its
    config/puma.rb), its background worker and websocket server their whole pool of
    50, nginx none: 30 + 50 + 50 = 130."""
    db = DB.replace("max_connections=50", "max_connections=200")
    write(tmp_path, {"k8s/db.yaml": db, "k8s/rails.yaml": zammad("railsserver", PUMA),
                     "k8s/scheduler.yaml": zammad("scheduler", SCHEDULER),
                     "k8s/websocket.yaml": zammad("websocket", WEBSOCKET),
                     "k8s/nginx.yaml": zammad("nginx", NGINX)})
    result, budgets = budget_of(tmp_path)
    assert not [f for f in result.findings if f.code == "PA106"], result.findings
    assert budgets["db"].peak == ZAMMAD_PUMA_MAX_THREADS + 2 * ZAMMAD_IMAGE_POOL
    # the web server's threads are Zammad's default (PA104); nginx holds none, said not
    assert [f.message.split(":")[0] for f in result.findings if f.code == "PA104"] == \
        ["zammad-railsserver"]
    (web,) = pools_of(tmp_path, "zammad-railsserver")
    assert web.size.value == ZAMMAD_PUMA_MAX_THREADS and "config/puma.rb" in \
        web.size.source.default
    assert web.processes is not None and web.processes.value == 1  # -w 0: single mode
    assert [t.value for t in web.moves_with] == [ZAMMAD_IMAGE_POOL]  # the pool moves along
    (worker,) = pools_of(tmp_path, "zammad-scheduler")
    assert worker.size.value == 50 and worker.size.source.key == "POSTGRESQL_OPTIONS pool="
    assert (worker.size.source.path, worker.size.source.line) == ("k8s/scheduler.yaml", 19)


def test_zammad_pool_options_forks_and_defaults(tmp_path):
    """`?pool=N` or `pool=N` (database_url.rb adds the `?`); MAX_THREADS above the pool
    leaves the pool; forked background services are processes of their own; unset
    POSTGRESQL_OPTIONS is the image's ?pool=50, options without pool= Rails' 5."""
    env = "            - {name: MAX_THREADS, value: \"40\"}\n"
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/rails.yaml": zammad(
        "railsserver", PUMA, '"?pool=20&connect_timeout=5"', env)})
    (web,) = pools_of(tmp_path, "zammad-railsserver")
    assert web.size.value == 20 and web.size.source.key == "POSTGRESQL_OPTIONS pool="
    fork = "            - {name: ZAMMAD_PROCESS_DELAYED_JOBS_WORKERS, value: \"3\"}\n" \
           "            - {name: ZAMMAD_PROCESS_DELAYED_JOBS_WORKER_THREADS, value: \"8\"}\n"
    write(tmp_path, {"k8s/rails.yaml": zammad("scheduler", SCHEDULER, '"pool=10"', fork)})
    (worker,) = pools_of(tmp_path, "zammad-scheduler")
    assert worker.processes is not None and worker.processes.value == 1 + 3
    assert worker.per_pod() == 4 * 10
    write(tmp_path, {"k8s/rails.yaml": zammad("websocket", WEBSOCKET, '""')})
    (ws,) = pools_of(tmp_path, "zammad-websocket")
    assert (ws.size.value, ws.bound) == (5, "default")
    write(tmp_path, {"k8s/rails.yaml": zammad("websocket", WEBSOCKET).replace(
        '            - {name: POSTGRESQL_OPTIONS, value: "pool=50"}\n', "")})
    (ws,) = pools_of(tmp_path, "zammad-websocket")
    assert (ws.size.value, ws.bound) == (ZAMMAD_IMAGE_POOL, "default")
    assert "Dockerfile" in ws.size.source.default
    # the init Job's `rails r` (or zammad-init): one thread, one connection
    write(tmp_path, {"k8s/rails.yaml": zammad("init", '[bundle, exec, rails, r, "true"]')})
    (init,) = pools_of(tmp_path, "zammad-init")
    assert (init.size.value, init.bound) == (1, "fixed") and init.processes is None


def test_zammad_pool_from_a_secret_is_unknown(tmp_path):
    text = zammad("scheduler", SCHEDULER).replace(
        '- {name: POSTGRESQL_OPTIONS, value: "pool=50"}',
        "- {name: POSTGRESQL_OPTIONS, valueFrom: {secretKeyRef: {name: z, key: opts}}}")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/rails.yaml": text})
    result, _ = budget_of(tmp_path)
    assert [f for f in result.findings if f.code == "PA106"]
