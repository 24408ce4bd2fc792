"""Ruby processes counted by what they run (advisor/read/apps/processes.py,
sidekiq_capsules.py, rails.py, locate.py): Sidekiq 7+ capsules add their threads to
the default capsule's; a rake / rails task holds one connection, not its pool; a gem's
own program (prometheus_exporter) loads no database.yml; a third-party image is not
given the repository's gem folder as its source."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write

DATABASE_YML = """\
production:
  adapter: postgresql
  host: db
  database: shop
  pool: 30
development:
  adapter: postgresql
  host: localhost
"""
GEMS = "gem 'rails'\ngem 'sidekiq'\ngem 'prometheus_exporter'\n"


def deployment(name: str, command: str, replicas: int = 1,
               image: str = "registry.example.com/shop/shop:1") -> str:
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
          image: {image}
          command: {command}
          env:
            - {{name: RAILS_ENV, value: production}}
"""


def cronjob(name: str, command: str) -> str:
    return f"""
apiVersion: batch/v1
kind: CronJob
metadata: {{name: {name}}}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: {name}
              image: registry.example.com/shop/shop:1
              command: {command}
              env:
                - {{name: RAILS_ENV, value: production}}
"""


def peak(root: Path) -> float:
    result = run_check([str(root)], CheckOptions())
    (budget,) = [b for b in result.budgets if b.server == "db"]
    return budget.peak


def tree(root: Path, files: dict[str, str]) -> Path:
    return write(root, {"config/database.yml": DATABASE_YML, "Gemfile": GEMS,
                        "k8s/db.yaml": DB.replace("max_connections=50", "max_connections=300"),
                        **files})


INITIALIZER = """\
Sidekiq.configure_client do |config|
  config.redis = { url: ENV["REDIS_URL"] }
end

Sidekiq.configure_server do |config|
  config.redis = { url: ENV["REDIS_URL"] }
  # reports run one at a time, apart from the rest
  config.capsule("reports") do |cap|
    cap.concurrency = 3
    cap.queues = %w[reports]
  end
  config.capsule(:mailers) { |cap| cap.concurrency = ENV.fetch("MAILER_THREADS", 2).to_i; """ \
    """cap.queues = %w[mail] }
end
"""


def test_sidekiq_capsules_add_their_threads(tmp_path):
    """Sidekiq 8.1.0 starts one Manager per capsule (launcher.rb:28-29), each with its
    capsule's concurrency of threads: default 5 + reports 3 + mailers 2 = 10 per
    process, not 5 (audit 7b D4: laa's report_capsule was left out, a wrong fits)."""
    tree(tmp_path, {"config/initializers/sidekiq.rb": INITIALIZER,
                    "k8s/worker.yaml": deployment("worker", "[bundle, exec, sidekiq]", 2)})
    assert peak(tmp_path) == 2 * (5 + 3 + 2)
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (worker,) = [c for c in topo.clients if c.name == "worker"]
    (pool,) = worker.pools
    assert pool.size.value == 10
    assert "capsule reports 3" in pool.size.label and "capsule mailers 2" in pool.size.label


def test_a_capsule_without_concurrency_takes_the_process_s(tmp_path):
    """A capsule whose block sets no concurrency takes config[:concurrency] (capsule.rb:37):
    -c 4 here, so 4 + 4; `config.concurrency = 6` in the initializer edits the default
    capsule only (config.rb:87-89): 6 + 4."""
    init = ("Sidekiq.configure_server do |config|\n"
            "  config.capsule('slow') do |cap|\n"
            "    cap.queues = %w[slow]\n"
            "  end\n"
            "end\n")
    tree(tmp_path, {"config/initializers/sidekiq.rb": init,
                    "k8s/worker.yaml": deployment("worker", "[bundle, exec, sidekiq, -c, '4']")})
    assert peak(tmp_path) == 4 + 4
    write(tmp_path, {"config/initializers/sidekiq.rb": init.replace(
        "Sidekiq.configure_server do |config|\n",
        "Sidekiq.configure_server do |config|\n  config.concurrency = 6\n")})
    assert peak(tmp_path) == 6 + 4


def test_capsules_of_sidekiq_yml_and_client_blocks(tmp_path):
    """sidekiq.yml's `:capsules:` (cli.rb:302-307) add theirs, and their `:concurrency:`
    is not the default capsule's; a capsule in a configure_client block runs no jobs."""
    yml = (":concurrency: 8\n"
           ":queues:\n  - default\n"
           ":capsules:\n"
           "  :single:\n"
           "    :concurrency: 1\n"
           "    :queues:\n      - single\n")
    client_only = ("Sidekiq.configure_client do |config|\n"
                   "  config.capsule('x') do |cap|\n"
                   "    cap.concurrency = 9\n"
                   "  end\n"
                   "end\n")
    tree(tmp_path, {"config/sidekiq.yml": yml, "config/initializers/sidekiq.rb": client_only,
                    "k8s/worker.yaml": deployment("worker", "[bundle, exec, sidekiq]")})
    assert peak(tmp_path) == 8 + 1


def test_rake_and_rails_tasks_hold_one_connection(tmp_path):
    """A rake / bin/rails task runs on one thread: one connection of its pool of 30
    (audit 7b D6: laa's 7 CronJobs were 7 x 25). `rails db:migrate && rails s` is the
    server's count; Solid Queue's supervisor runs threads: its pool."""
    tree(tmp_path, {
        "k8s/purge.yaml": cronjob("purge", "[bundle, exec, rake, 'purge:destroy']"),
        "k8s/mail.yaml": cronjob("mail", "[bin/rails, scheduled_mailings]"),
        "k8s/runner.yaml": cronjob("runner", "[bin/rails, runner, 'Report.send_all']")})
    assert peak(tmp_path) == 3
    write(tmp_path, {"k8s/web.yaml": deployment(
        "web", "[sh, -c, 'bundle exec rails db:seed && bundle exec rails s -t 3:3']"),
        "k8s/jobs.yaml": deployment("jobs", "[bin/rails, 'solid_queue:start']")})
    assert peak(tmp_path) == 3 + 3 + 30


def test_a_gem_program_loads_no_database_yml(tmp_path):
    """`bundle exec prometheus_exporter` runs the gem's own server, which never loads
    Rails: not a client of database.yml's development host (audit 7b D10: a false
    PA107 for 'localhost'). A script of the app's own (bin/custom) may load Rails."""
    tree(tmp_path, {"k8s/metrics.yaml": deployment(
        "metrics", "[sh, -c, 'bundle exec prometheus_exporter -b 0.0.0.0']").replace(
            "value: production", "value: development")})
    result = run_check([str(tmp_path)], CheckOptions())
    assert not [f for f in result.findings if f.code in ("PA106", "PA107")], \
        [f.message for f in result.findings]
    # a non-client program since audit 28 (cmdline.non_client_server): no database env
    # here, so nothing to say it is not counted, no client of an unknown server
    assert all(b.peak == 0 and not b.unplaced_clients for b in result.budgets)
    write(tmp_path, {"bin/custom": "#!/usr/bin/env ruby\n"
                                   "require_relative '../config/environment'\n",
                     "k8s/metrics.yaml": deployment("metrics", "[bundle, exec, custom]")})
    assert peak(tmp_path) == 30


def test_a_third_party_image_gets_no_gem_folder(tmp_path):
    """clamav/clamav-debian beside a Rails app whose only other folder is a gem
    (gems/ui/ui.gemspec) is not inferred to be built from that gem."""
    tree(tmp_path, {"package.json": '{"name": "shop"}\n',
                    "gems/ui/ui.gemspec": "Gem::Specification.new { |s| s.name = 'ui' }\n",
                    "gems/ui/Gemfile": "gemspec\n",
                    "gems/ui/lib/ui.rb": "module Ui; end\n",
                    "k8s/clamav.yaml": deployment("shop-clamav", "['/init-unprivileged']",
                                                  image="clamav/clamav-debian:stable")})
    result = run_check([str(tmp_path)], CheckOptions())
    assert not [n for n in result.notices if "gems/ui" in n], result.notices
