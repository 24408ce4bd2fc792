"""Rails.env and the ERB of a Rails app read the image's Dockerfile ENV below the
manifest's env (cmdline.process_env, rails_env): Rails 8's generated Dockerfile sets
`ENV RAILS_ENV="production"`, and a manifest that does not repeat it runs production
(audit 12b: we-promise/sure's shape read the development section of database.yml)."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write

DOCKERFILE = """\
FROM ruby:3.4-slim AS base
WORKDIR /rails
ENV RAILS_ENV="production" \\
    BUNDLE_DEPLOYMENT="1"

FROM base
COPY . .
CMD ["./bin/rails", "server"]
"""
# Rails 8's generated shape: development one database, production four (solid_*)
DATABASE_YML = """\
default: &default
  adapter: postgresql
  host: <%= ENV.fetch("DB_HOST") { "localhost" } %>
  pool: <%= ENV.fetch("RAILS_MAX_THREADS") { 3 } %>

development:
  <<: *default
  database: app_development

production:
  primary: &primary_production
    <<: *default
    database: app_production
  queue:
    <<: *primary_production
    database: app_production_queue
    migrations_paths: db/queue_migrate
"""
PUMA_RB = """\
threads_count = ENV.fetch("RAILS_MAX_THREADS") { 3 }
threads threads_count, threads_count
port ENV.fetch("PORT") { 3000 }
"""
GEMS = "gem 'rails'\ngem 'puma'\ngem 'solid_queue'\n"


def web(env: str = "") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: web
          image: example/app:1
          env:
            - {{name: DB_HOST, value: db}}
            - {{name: WEB_CONCURRENCY, value: "4"}}{env}
"""


def tree(root: Path, env: str = "", dockerfile: str = DOCKERFILE) -> Path:
    return write(root, {"Dockerfile": dockerfile, "config/database.yml": DATABASE_YML,
                        "config/puma.rb": PUMA_RB, "Gemfile": GEMS,
                        "k8s/db.yaml": DB.replace("max_connections=50", "max_connections=200"),
                        "k8s/web.yaml": web(env)})


def peak_and_labels(root: Path) -> tuple[int | None, list[str]]:
    result = run_check([str(root)], CheckOptions())
    (budget,) = [b for b in result.budgets if b.server == "db"]
    topo = scan([str(root)], CheckOptions()).topology
    labels = [p.label for c in topo.clients for p in c.pools]
    return budget.peak, labels


def test_the_dockerfile_s_rails_env_picks_the_database_yml_section(tmp_path):
    """No RAILS_ENV in the manifest: the image's production, two pools per process
    (primary and queue): 2 pods x 4 workers x (3 + 3) = 48, not the development 24."""
    peak, labels = peak_and_labels(tree(tmp_path))
    assert peak == 2 * 4 * (3 + 3)
    assert any("production.queue" in label for label in labels)
    assert not any("development" in label for label in labels)


def test_the_manifest_s_rails_env_wins_over_the_image_s(tmp_path):
    env = '\n            - {name: RAILS_ENV, value: development}'
    peak, labels = peak_and_labels(tree(tmp_path, env))
    assert peak == 2 * 4 * 3
    assert any("development" in label for label in labels)


def test_the_dockerfile_s_rails_max_threads_sizes_pool_and_threads(tmp_path):
    """`ENV RAILS_MAX_THREADS=8` in the image: database.yml's ERB and puma.rb read 8,
    not their fallback 3 (2 pods x 4 workers x (8 + 8))."""
    dockerfile = DOCKERFILE.replace('BUNDLE_DEPLOYMENT="1"',
                                    'BUNDLE_DEPLOYMENT="1" RAILS_MAX_THREADS=8')
    peak, _ = peak_and_labels(tree(tmp_path, dockerfile=dockerfile))
    assert peak == 2 * 4 * (8 + 8)


def test_the_env_is_the_dockerfile_s_that_builds_the_image(tmp_path):
    """Two Dockerfiles: the folder's own builds a development image, `app.Dockerfile`
    (named for the image example/app) the one the manifest runs: its production counts,
    as its CMD does (pick_dockerfile), not the shallowest file's development."""
    root = tree(tmp_path, dockerfile=DOCKERFILE.replace('"production"', '"development"'))
    (root / "app.Dockerfile").write_text(DOCKERFILE)
    peak, labels = peak_and_labels(root)
    assert peak == 2 * 4 * (3 + 3)
    assert any("production.queue" in label for label in labels)
