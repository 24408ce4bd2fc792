"""Programs given a database env they never use are no clients (NON_CLIENT_IMAGES in
advisor/read/apps/cmdline.py)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

ML = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: immich-machine-learning}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: ml
          image: ghcr.io/immich-app/immich-machine-learning:v1.132.3
          env:
            - {name: DB_URL, value: "postgresql://immich@db:5432/immich"}
"""


def test_immich_machine_learning_opens_no_database_connection(tmp_path):
    """immich's machine-learning image reads no database setting (immich_ml/config.py),
    though a chart gives it DB_URL (sepffuzzball/fuzzlab counted it on immich's server
    as a client of unknown size)."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/ml.yaml": ML})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.contributions == [] and budget.unknown_clients == []
    assert any("immich-machine-learning" in n and "opens no PostgreSQL connection" in n
               for n in result.notices)


RAILS_APP = {
    "Gemfile": 'source "https://rubygems.org"\ngem "rails", "8.1.3"\ngem "pg"\n'
               'gem "prometheus_exporter", "2.3.0"\n',
    "config/database.yml": "production:\n  adapter: postgresql\n  url: <%= ENV['DATABASE_URL'] %>\n"
                           "  pool: 5\n",
}
METRICS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-metrics}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: app
          image: acme/app:1
          command: ['sh', '-c', "bundle exec prometheus_exporter --bind 0.0.0.0%s"]
          env:
            - name: DATABASE_URL
              valueFrom: {secretKeyRef: {name: rds-output, key: url}}
"""


def test_ruby_s_prometheus_exporter_opens_no_database_connection(tmp_path):
    """audit 20 (ministryofjustice/laa-court-data-adaptor): its metrics Deployment runs
    the gem's collector server (exe/prometheus_exporter requires only the gem, not
    Rails), yet its DATABASE_URL from a Secret made it a client of no known server, so
    the RDS budget was a floor (>= 75) where it fits (75 <= 97)."""
    write(tmp_path, {**RAILS_APP, "k8s/db.yaml": POSTGRES_DB, "k8s/metrics.yaml": METRICS % ""})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    (budget,) = result.budgets
    assert budget.unplaced_clients == [] and budget.unknown_clients == []
    assert any("runs prometheus_exporter" in n and "opens no PostgreSQL connection" in n
               for n in result.notices)


def test_prometheus_exporter_with_a_collector_file_may_load_the_app(tmp_path):
    # -a/--type-collector and -c/--collector load Ruby files (exe/prometheus_exporter:44-48)
    write(tmp_path, {**RAILS_APP, "k8s/db.yaml": POSTGRES_DB,
                     "k8s/metrics.yaml": METRICS % " -a lib/collector.rb"})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    assert not any("runs prometheus_exporter" in n and "opens no PostgreSQL connection" in n
                   for n in result.notices)
