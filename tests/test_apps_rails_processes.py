"""Rails pools per process kind (advisor/read/apps/rails.py, rubyeval.py): a
database.yml whose ERB asks which process it runs in, evaluated once per container."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.model import EnvVar, Source
from advisor.read.apps.pyeval import Val
from advisor.read.apps.rubyeval import RubyScope, ruby_eval
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write


def budget_of(root: Path):
    result = run_check([str(root)], CheckOptions())
    return result, {b.server: b for b in result.budgets}


def pools_of(root: Path, name: str):
    topo = scan([str(root)], CheckOptions()).topology
    (client,) = [c for c in topo.clients if c.name == name]
    return client.pools


# chatwoot's config/database.yml shape: one pool line choosing by Sidekiq.server?
SIDEKIQ_TERNARY_YML = """\
default: &default
  adapter: postgresql
  host: <%= ENV.fetch('POSTGRES_HOST', 'localhost') %>
  pool: <%= Sidekiq.server? ? ENV.fetch('SIDEKIQ_CONCURRENCY', 10) : """ \
    """ENV.fetch('RAILS_MAX_THREADS', 5) %>

production:
  <<: *default
  database: app_production
"""
SIDEKIQ_YML = """\
---
:concurrency: <%= ENV.fetch("SIDEKIQ_CONCURRENCY", 10) %>
production:
  :concurrency: <%= ENV.fetch("SIDEKIQ_CONCURRENCY", 10) %>
"""


def app(name: str, args: str, replicas: int = 1) -> str:
    """A Deployment as chatwoot's chart renders web and worker: the image, args only,
    RAILS_ENV and RAILS_MAX_THREADS from values, POSTGRES_HOST the server."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: {name}
          image: chatwoot/chatwoot:v4.1.0
          args: {args}
          env:
            - {{name: POSTGRES_HOST, value: db}}
            - {{name: RAILS_ENV, value: production}}
            - {{name: RAILS_MAX_THREADS, value: "5"}}
"""


HPA = """
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: worker}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: worker}
  minReplicas: 2
  maxReplicas: 10
"""
MIGRATE = """
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      initContainers:
        - name: init-redis
          image: chatwoot/chatwoot:v4.1.0
          command: ["sh", "-c", "until getent hosts redis ; do sleep 2; done;"]
      containers:
        - name: db-migrate-job
          image: chatwoot/chatwoot:v4.1.0
          args: [bundle, exec, rails, "db:chatwoot_prepare"]
          env:
            - {name: POSTGRES_HOST, value: db}
            - {name: RAILS_ENV, value: production}
            - {name: RAILS_MAX_THREADS, value: "5"}
"""


def test_sidekiq_server_ternary_is_evaluated_per_process(tmp_path):
    """Audit: chatwoot's `pool: <%= Sidekiq.server? ? ENV.fetch('SIDEKIQ_CONCURRENCY',
    10) : ENV.fetch('RAILS_MAX_THREADS', 5) %>` was an expression not read: every
    client unknown (PA106), peak a floor. Sidekiq.server? is true in the sidekiq
    process only: the worker's pool is 10, the web's 5; a migration Job's init
    container (sh -c getent) holds no pool that counts, known or not."""
    db = DB.replace("max_connections=50", "max_connections=300")
    write(tmp_path, {"config/database.yml": SIDEKIQ_TERNARY_YML,
                     "config/sidekiq.yml": SIDEKIQ_YML,
                     "Gemfile": "gem 'rails'\ngem 'sidekiq'\n",
                     "k8s/db.yaml": db,
                     "k8s/web.yaml": app("web", "[bundle, exec, rails, s, -p, '3000']"),
                     "k8s/worker.yaml": app("worker",
                                            "[bundle, exec, sidekiq, -C, config/sidekiq.yml]", 2),
                     "k8s/hpa.yaml": HPA, "k8s/migrate.yaml": MIGRATE})
    result, budgets = budget_of(tmp_path)
    assert not [f for f in result.findings if f.code == "PA106"], \
        [f.message for f in result.findings if f.code == "PA106"]
    (web,) = pools_of(tmp_path, "web")
    assert web.size.value == 5 and web.size.source.key == "RAILS_MAX_THREADS"
    (worker,) = pools_of(tmp_path, "worker")
    assert worker.size.value == 10
    assert (worker.size.source.path, worker.size.source.line) == ("config/database.yml", 4)
    assert worker.size.source.key == "SIDEKIQ_CONCURRENCY (default)"
    # web 1 x 5 + worker (HPA) 10 x 10 + migrate 1 (a rails task's one thread, not
    # its pool of 5: tests/test_apps_ruby_processes.py)
    assert budgets["db"].peak == 5 + 10 * 10 + 1


def _eval(text: str, names: dict[str, Val], env: dict[str, str] | None = None):
    env_vars = {k: EnvVar(name=k, value=v, source=Source(path="k8s/a.yaml", line=1, key=k))
                for k, v in (env or {}).items()}
    return ruby_eval(text, RubyScope("config/database.yml", 4, env_vars, 4, names))


def test_ruby_ternary_forms():
    yes = {"Sidekiq.server?": Val(True, Source.default_of("sidekiq"))}
    no = {"Sidekiq.server?": Val(False, Source.default_of("puma"))}
    text = "Sidekiq.server? ? ENV.fetch('SIDEKIQ_CONCURRENCY', 10) : ENV.fetch('X', 5)"
    assert _eval(text, yes).value == 10 and _eval(text, no).value == 5
    assert _eval(text, yes, {"SIDEKIQ_CONCURRENCY": "25"}).value == "25"
    assert _eval(text, {}) is None  # the process is not known: neither branch
    # right-associative, and only nil and false are falsy
    assert _eval("nil ? 1 : 0 ? 2 : 3", {}).value == 2
    assert _eval("(Sidekiq.server? ? 4 : 6).to_i", no).value == 6
    assert _eval("Sidekiq.server? ? 4", yes) is None  # not Ruby: not read


PUMA_RB = """\
workers ENV.fetch("WEB_CONCURRENCY") { 2 }
threads ENV.fetch("RAILS_MAX_THREADS") { 5 }, ENV.fetch("RAILS_MAX_THREADS") { 5 }
"""


def test_a_declared_pool_size_keeps_the_puma_workers_read(tmp_path):
    """A [[workloads]] pool-size is one process's pool: 3 Puma workers (WEB_CONCURRENCY)
    x the declared 8, not 1 x 8 (the declaration dropped the workers read); a declared
    `processes` still wins over them."""
    yml = "production:\n  adapter: postgresql\n  host: db\n" \
          "  pool: <%= ENV.fetch('DB_POOL') { ENV.fetch('RAILS_MAX_THREADS', 5) } %>\n"
    web = app("web", "[bundle, exec, puma, -C, config/puma.rb]").replace(
        '            - {name: RAILS_MAX_THREADS, value: "5"}\n',
        '            - {name: RAILS_MAX_THREADS, value: "5"}\n'
        '            - {name: WEB_CONCURRENCY, value: "3"}\n')
    write(tmp_path, {"config/database.yml": yml, "config/puma.rb": PUMA_RB,
                     "Gemfile": "gem 'rails'\ngem 'puma'\n",
                     "k8s/db.yaml": DB.replace("max_connections=50", "max_connections=200"),
                     "k8s/web.yaml": web})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 3 * 5  # read: 3 workers x pool 5
    write(tmp_path, {".pool-advisor.toml": '[[workloads]]\nname = "web"\npool-size = 8\n'})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 3 * 8
    (pool,) = pools_of(tmp_path, "web")
    assert pool.processes is not None and pool.processes.source.key == "WEB_CONCURRENCY"
    write(tmp_path, {".pool-advisor.toml": '[[workloads]]\nname = "web"\npool-size = 8\n'
                                           'processes = 2\n'})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 2 * 8


def test_an_absolute_puma_config_path_is_the_folder_s_file(tmp_path):
    """`puma --config /app/config/puma.rb` in an image whose WORKDIR is /app reads the
    folder's config/puma.rb (rubygems.org's krane template): its RAILS_MAX_THREADS (10
    here) is the threads, not Puma's default 5."""
    yml = "production:\n  adapter: postgresql\n  host: db\n  pool: 30\n"
    web = app("web", "[bundle, exec, puma, --config, /app/config/puma.rb]").replace(
        '            - {name: RAILS_MAX_THREADS, value: "5"}\n',
        '            - {name: RAILS_MAX_THREADS, value: "10"}\n'
        '            - {name: WEB_CONCURRENCY, value: "8"}\n')
    write(tmp_path, {"config/database.yml": yml, "config/puma.rb": PUMA_RB,
                     "Gemfile": "gem 'rails'\ngem 'puma'\n",
                     "k8s/db.yaml": DB.replace("max_connections=50", "max_connections=200"),
                     "k8s/web.yaml": web})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 8 * 10  # 8 workers x 10 threads (the pool of 30 caps none)


RUN_SH = "#!/bin/sh\ncd /usr/src/app\n\nbundle exec bin/rails db:prepare && {server}\n"
THREADS_PUMA_RB = 'workers ENV.fetch("WORKERS", 0)\n' \
    'threads ENV.fetch("RAILS_MAX_THREADS", 5), ENV.fetch("RAILS_MAX_THREADS", 5)\n'


def _script_started(tmp_path: Path, server: str) -> float:
    """laa-submit-crime-forms' shape: the image's ENTRYPOINT runs run.sh, which prepares
    the database and then starts the server; 5 replicas, RAILS_MAX_THREADS 10."""
    web = app("web", "[]").replace("chatwoot/chatwoot:v4.1.0", "registry.example/forms:1") \
        .replace("          args: []\n", "").replace('value: "5"}', 'value: "10"}') \
        .replace("replicas: 1", "replicas: 5")
    write(tmp_path, {"config/database.yml": "production:\n  adapter: postgresql\n  host: db\n"
                     "  pool: <%= ENV.fetch('RAILS_MAX_THREADS') { 5 } %>\n",
                     "config/puma.rb": THREADS_PUMA_RB, "Gemfile": "gem 'rails'\ngem 'puma'\n",
                     "Dockerfile": "FROM ruby:3.4\nWORKDIR /usr/src/app\nCOPY . .\n"
                                   'ENTRYPOINT ["./run.sh"]\n',
                     "run.sh": RUN_SH.format(server=server),
                     "k8s/db.yaml": DB.replace("max_connections=50", "max_connections=200"),
                     "k8s/web.yaml": web})
    _, budgets = budget_of(tmp_path)
    return budgets["db"].peak


def test_the_server_a_script_starts_after_a_task_is_what_runs(tmp_path):
    """`rails db:prepare && pumactl -F config/puma.rb start` (laa-submit-crime-forms'
    run.sh): Puma runs on with 10 threads a pod (pumactl start runs Puma::CLI in its
    process, puma v8.0.2 lib/puma/control_cli.rb:297-316), not the task's one thread:
    5 x 10, not 5 x 1."""
    assert _script_started(tmp_path, "bundle exec pumactl -F config/puma.rb start") == 5 * 10
    assert _script_started(tmp_path, "bundle exec puma -C config/puma.rb") == 5 * 10
    assert _script_started(tmp_path, "bundle exec pumactl --config-file=config/puma.rb "
                                     "-C tcp://127.0.0.1:9293 start") == 5 * 10


def test_pumactl_start_words():
    from advisor.read.apps.cmdline import Word
    from advisor.read.apps.processes import _pumactl_start

    def words(line: str) -> list[Word]:
        return [Word(text=t, source=Source(path="run.sh", line=1)) for t in line.split()]

    started = _pumactl_start(words("-S tmp/state -F config/puma.rb -e production start"))
    assert started is not None
    assert [w.text for w in started] == ["--config", "config/puma.rb", "-e", "production"]
    assert _pumactl_start(words("-F config/puma.rb restart")) is None  # signals a server
    assert _pumactl_start(words("-C tcp://x:9293 status")) is None


def test_puma_threads_of_two_argument_fetches_are_read(tmp_path):
    """`threads ENV.fetch("RAILS_MAX_THREADS", 5), ENV.fetch("RAILS_MAX_THREADS", 5)`: the
    comma inside a fetch's parentheses does not split `threads`' arguments (the max was
    `5), ENV.fetch(...`, unread, and Puma's default 5 taken for RAILS_MAX_THREADS 10)."""
    assert _script_started(tmp_path, "bundle exec puma -C config/puma.rb") == 5 * 10
    write(tmp_path, {"config/puma.rb": 'threads ENV.fetch("RAILS_MAX_THREADS", 5), '
                                       'ENV.fetch("RAILS_MAX_THREADS", 5)\n'})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 5 * 10
    write(tmp_path, {"config/puma.rb": "threads(1, Integer(ENV.fetch('RAILS_MAX_THREADS', 5)))\n"})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 5 * 10
    # a form not evaluated is unknown (PA106), not Puma's default 5
    write(tmp_path, {"config/puma.rb": "threads 1, compute_threads(3)\n"})
    result, budgets = budget_of(tmp_path)
    assert any(f.code == "PA106" for f in result.findings)
