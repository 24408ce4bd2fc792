"""Mastodon run from its image in the shape mastodon/chart renders (audit K): the
streaming server's cluster workers before 4.2, tootctl commands, and the db:migrate
hooks (advisor/read/apps/images.py, advisor/read/apps/__init__.py)."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.model import Pool
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=200")
STREAMING_POOL = 10  # streaming/index.js pg.Pool max without DB_POOL


def env_configmap(cluster: str | None) -> str:
    """The chart's configmap-env.yaml: every container reads it by envFrom."""
    line = f'  STREAMING_CLUSTER_NUM: "{cluster}"\n' if cluster is not None else ""
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: mastodon-env}}
data:
  DB_HOST: db
  DB_PORT: "5432"
  NODE_ENV: "production"
{line}"""


def streaming(image: str, replicas: int = 1) -> str:
    """deployment-streaming.yaml: `node ./streaming`, Recreate so no surge is added."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: mastodon-streaming}}
spec:
  replicas: {replicas}
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: mastodon-streaming
          image: {image}
          command:
            - node
            - ./streaming
          envFrom:
            - configMapRef: {{name: mastodon-env}}
"""


def pools_of(root: Path, name: str) -> list[Pool]:
    topo = scan([str(root)], CheckOptions()).topology
    (client,) = [c for c in topo.clients if c.name == name]
    return client.pools


def peak(root: Path, options: CheckOptions | None = None) -> float:
    result = run_check([str(root)], options or CheckOptions())
    return {b.server: b for b in result.budgets}["db"].peak


def test_streaming_before_4_2_runs_streaming_cluster_num_workers_each_with_a_pool(tmp_path):
    """Audit K finding 1: v4.1.9 with streaming.workers=4 was 2 x 10 (57 'fits');
    throng forks STREAMING_CLUSTER_NUM workers and each makes its own pg.Pool."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/env.yaml": env_configmap("4"),
                     "k8s/streaming.yaml": streaming("ghcr.io/mastodon/mastodon:v4.1.9", 2)})
    (pool,) = pools_of(tmp_path, "mastodon-streaming")
    assert pool.processes is not None and pool.processes.value == 4
    assert pool.processes.source.path == "k8s/env.yaml"
    assert peak(tmp_path) == 2 * 4 * STREAMING_POOL


def test_streaming_cluster_num_unset_is_node_cpus_but_one(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/env.yaml": env_configmap(None),
                     "k8s/streaming.yaml": streaming("tootsuite/mastodon:v4.0.2")})
    (pool,) = pools_of(tmp_path, "mastodon-streaming")
    assert pool.bound == "default" and pool.cpu_formula is not None
    assert pool.processes is not None and pool.processes.value == 4 - 1  # 4 CPUs assumed
    result = run_check([str(tmp_path)], CheckOptions())
    assert [f for f in result.findings if f.code == "PA103"]
    # "0" is falsy in `+STREAMING_CLUSTER_NUM || ...`: the CPU default again
    write(tmp_path, {"k8s/env.yaml": env_configmap("0")})
    (pool,) = pools_of(tmp_path, "mastodon-streaming")
    assert pool.processes is not None and pool.processes.value == 3


def test_streaming_from_4_2_and_the_streaming_image_is_one_process(tmp_path):
    for image in ("ghcr.io/mastodon/mastodon:v4.2.0", "ghcr.io/mastodon/mastodon-streaming:v4.3.2",
                  "ghcr.io/mastodon/mastodon:latest"):
        write(tmp_path, {"k8s/db.yaml": DB, "k8s/env.yaml": env_configmap("4"),
                         "k8s/streaming.yaml": streaming(image)})
        (pool,) = pools_of(tmp_path, "mastodon-streaming")
        assert pool.processes is None, image
        assert peak(tmp_path) == STREAMING_POOL


def test_streaming_before_4_1_reads_no_db_pool(tmp_path):
    """DB_POOL came to streaming in 4.1.0 (mastodon#23470): before, max 10."""
    env = env_configmap("2") + "  DB_POOL: \"3\"\n"
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/env.yaml": env,
                     "k8s/streaming.yaml": streaming("tootsuite/mastodon:v4.0.2")})
    assert peak(tmp_path) == 2 * STREAMING_POOL
    write(tmp_path, {"k8s/streaming.yaml": streaming("tootsuite/mastodon:v4.1.0")})
    assert peak(tmp_path) == 2 * 3


def tootctl(kind: str, command: str) -> str:
    """cronjob-media-remove.yaml / job-deploy-search.yaml: bin/tootctl as the command."""
    spec = f"""
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: tootctl
          image: ghcr.io/mastodon/mastodon:v4.6.3
          command: {command}
          envFrom:
            - configMapRef: {{name: mastodon-env}}
"""
    if kind == "CronJob":
        indented = "".join(f"      {line}\n" if line else "\n" for line in spec.splitlines())
        return f"""
apiVersion: batch/v1
kind: CronJob
metadata: {{name: mastodon-media-remove}}
spec:
  schedule: "0 0 * * 0"
  jobTemplate:
    spec:
{indented}"""
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: mastodon-tootctl}}
spec:
{spec}"""


def test_tootctl_is_one_process_with_its_concurrency_plus_one(tmp_path):
    """Audit K finding 6: the media-remove CronJob was counted as Puma, 2 workers x 5
    = 10; tootctl is one process, and media remove resets its pool to --concurrency
    (default 5) + 1 (lib/mastodon/cli/helper.rb reset_connection_pools!)."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/env.yaml": env_configmap(None),
                     "k8s/media.yaml": tootctl("CronJob", "[bin/tootctl, media, remove]")})
    (pool,) = pools_of(tmp_path, "mastodon-media-remove")
    assert pool.processes is None and pool.size.value == 5 + 1
    assert peak(tmp_path) == 6
    write(tmp_path, {"k8s/media.yaml": tootctl(
        "CronJob", "[bin/tootctl, media, remove, --concurrency, '8']")})
    (pool,) = pools_of(tmp_path, "mastodon-media-remove")
    assert pool.size.value == 8 + 1 and pool.size.source.path == "k8s/media.yaml"


def test_tootctl_without_a_parallel_command_keeps_the_rails_pool(tmp_path):
    env = env_configmap(None) + '  DB_POOL: "3"\n'
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/env.yaml": env, "k8s/admin.yaml": tootctl(
        "Job", "[bin/tootctl, accounts, create, admin, --email, a@b.c]")})
    (pool,) = pools_of(tmp_path, "mastodon-tootctl")
    assert pool.processes is None and pool.size.value == 3


def migrate_job(image: str) -> str:
    """_db-migrate.tpl: `bundle exec rake db:migrate` in a pre-upgrade hook Job."""
    return f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: mastodon-db-pre-migrate
  annotations: {{helm.sh/hook: pre-upgrade}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: mastodon-db-pre-migrate
          image: {image}
          command: [bundle, exec, rake, db:migrate]
          envFrom:
            - configMapRef: {{name: mastodon-env}}
"""


def test_db_migrate_holds_two_connections_on_rails_6_1_to_7_0(tmp_path):
    """Audit K finding 7: ActiveRecord's Migrator took its advisory lock on a connection
    of its own from Rails 6.1 (rails/rails#38235, #39758) until 7.1 (#46224): Mastodon
    4.0 to 4.2 (Rails 6.1, 7.0) hold 2; 4.3 and later (Rails 7.1+) hold 1."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/env.yaml": env_configmap(None),
                     "k8s/migrate.yaml": migrate_job("ghcr.io/mastodon/mastodon:v4.1.9")})
    assert peak(tmp_path) == 2
    write(tmp_path, {"k8s/migrate.yaml": migrate_job("ghcr.io/mastodon/mastodon:v4.6.3")})
    assert peak(tmp_path) == 1


def test_db_prepare_job_counts_as_a_migration(tmp_path):
    """Audit h5: the chart's db-prepare Job (`bundle exec rails db:prepare`, a
    pre-install hook) was counted as the web's 2 Puma workers x 5 = 10. It creates or
    loads the schema, then migrates (database_tasks.rb prepare_all): as db:migrate, 1
    connection, 2 on Rails 6.1 to 7.0 (its Migrator's advisory lock connection)."""
    job = migrate_job("ghcr.io/mastodon/mastodon:v4.6.3").replace(
        "[bundle, exec, rake, db:migrate]", "[bundle, exec, rails, db:prepare]")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/env.yaml": env_configmap(None),
                     "k8s/migrate.yaml": job})
    assert peak(tmp_path) == 1
    write(tmp_path, {"k8s/migrate.yaml": job.replace("v4.6.3", "v4.2.10")})
    assert peak(tmp_path) == 2


def test_db_migrate_reads_activerecord_from_the_gemfile_lock():
    from msgspec.structs import replace

    from advisor.read.apps import AppFile, AppSource, pools_for_container
    from tests.apphelpers import container

    job = replace(container(command=("bundle", "exec", "rails", "db:migrate")),
                  image="registry.example.com/shop:1.0")
    for version, held in (("7.0.8.4", 2), ("7.1.3", 1), ("6.0.6", 1), ("6.1.7.10", 2)):
        lock = f"GEM\n  remote: https://rubygems.org/\n  specs:\n    activerecord ({version})\n"
        app = AppSource(root="/repo", directory="", files=(AppFile(
            path="Gemfile.lock", rel="Gemfile.lock", kind="deps", text=lock),))
        (pool,) = pools_for_container(job, app).pools
        assert pool.size.value == held, version
        if held == 2:
            assert (pool.size.source.path, pool.size.source.line) == ("Gemfile.lock", 4)


REPLICA = """
apiVersion: v1
kind: Service
metadata: {name: db-replica}
spec:
  selector: {app: db-replica}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db-replica}
spec:
  template:
    metadata: {labels: {app: db-replica}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.2
          args: ["-c", "max_connections=200"]
"""


def web(image: str, replica_env: str) -> str:
    """A Mastodon web Deployment (Puma, 2 workers x 5 threads by default) whose env
    names a read replica (theepicsaxguy/homelab's kustomization: REPLICA_DB_HOST and
    REPLICA_DB_NAME through envFrom)."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: mastodon-web}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: web
          image: {image}
          command: [bundle, exec, puma, -C, config/puma.rb]
          env:
            - {{name: DB_HOST, value: db}}
            - {{name: DB_NAME, value: mastodon}}
{replica_env}"""


def test_read_replica_gets_the_same_pools_from_4_2(tmp_path):
    """Mastodon 4.2+ opens a second pool of the primary's size in every web and Sidekiq
    process on the replica (application_record.rb connects_to reading: :replica when
    REPLICA_DB_NAME or REPLICA_DATABASE_URL is set; database.yml's replica takes the
    default pool): the replica server was left at 0."""
    replica_env = ("            - {name: REPLICA_DB_HOST, value: db-replica}\n"
                   "            - {name: REPLICA_DB_NAME, value: mastodon}\n")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/replica.yaml": REPLICA,
                     "k8s/web.yaml": web("ghcr.io/mastodon/mastodon:v4.3.2", replica_env)})
    budgets = {b.server: b for b in run_check([str(tmp_path)], CheckOptions()).budgets}
    per_pod = 2 * 5  # Puma workers x threads (pool 5)
    assert budgets["db"].peak == 2 * per_pod
    assert budgets["db-replica"].peak == 2 * per_pod
    # REPLICA_DB_HOST alone does not switch reads to it; before 4.2 nothing reads them
    write(tmp_path, {"k8s/web.yaml": web("ghcr.io/mastodon/mastodon:v4.3.2", replica_env.split(
        "\n")[0] + "\n")})
    budgets = {b.server: b for b in run_check([str(tmp_path)], CheckOptions()).budgets}
    assert (budgets["db"].peak, budgets["db-replica"].peak) == (2 * per_pod, 0)
    write(tmp_path, {"k8s/web.yaml": web("ghcr.io/mastodon/mastodon:v4.1.9", replica_env)})
    budgets = {b.server: b for b in run_check([str(tmp_path)], CheckOptions()).budgets}
    assert (budgets["db"].peak, budgets["db-replica"].peak) == (2 * per_pod, 0)


def test_read_replica_url_names_its_host(tmp_path):
    replica_env = ("            - {name: REPLICA_DATABASE_URL, "
                   "value: 'postgresql://mastodon@db-replica:5432/mastodon'}\n")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/replica.yaml": REPLICA,
                     "k8s/web.yaml": web("ghcr.io/mastodon/mastodon:v4.2.0", replica_env)})
    budgets = {b.server: b for b in run_check([str(tmp_path)], CheckOptions()).budgets}
    assert budgets["db-replica"].peak == budgets["db"].peak == 2 * 2 * 5
