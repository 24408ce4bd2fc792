"""A PgBouncer whose upstream is read nowhere (its DATABASE_URL from a Secret the
repository does not hold) may pool into any server here: no server "fits, peak 0".
Audit 51, PostHog/charts-clickhouse a1b6749b (2021): web, worker, plugins and beat went
through edoburu/pgbouncer with DATABASE_URL from a secretKeyRef, and the chart's
PostgreSQL said fits with peak 0. In that chart's shape."""

from pathlib import Path

from test_basecheck_submodule import SERVER

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions

PGBOUNCER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: posthog-pgbouncer
spec:
  replicas: 1
  selector:
    matchLabels: {role: pgbouncer}
  template:
    metadata:
      labels: {role: pgbouncer}
    spec:
      containers:
        - name: posthog-pgbouncer
          image: edoburu/pgbouncer:1.12.0
          env:
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef: {name: posthog, key: postgresql-url}
            - name: LISTEN_PORT
              value: "6543"
            - name: POOL_MODE
              value: transaction
---
apiVersion: v1
kind: Service
metadata:
  name: posthog-pgbouncer
spec:
  selector: {role: pgbouncer}
  ports: [{port: 6543}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: posthog-web
spec:
  replicas: 2
  selector:
    matchLabels: {role: web}
  template:
    metadata:
      labels: {role: web}
    spec:
      containers:
        - name: web
          image: eclipse-temurin:21
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://posthog-pgbouncer:6543/posthog?prepareThreshold=0
"""


def _budget(tmp_path: Path, pgbouncer: str):
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s/pgsql.yaml").write_text(SERVER)
    (tmp_path / "k8s/pgbouncer.yaml").write_text(pgbouncer)
    result = run_check([str(tmp_path / "k8s")], CheckOptions(root=tmp_path, cache=False))
    (budget,) = result.budgets
    return budget


def test_a_pgbouncer_whose_upstream_is_not_read_makes_the_peak_a_floor(tmp_path):
    budget = _budget(tmp_path, PGBOUNCER)
    assert budget.peak_is_floor and not budget.fits
    assert budget.unplaced_clients == ["posthog-pgbouncer"]


def test_a_pgbouncer_to_a_host_outside_the_repository_leaves_the_fit(tmp_path):
    # a managed database named in its URL: its connections go there, not here
    elsewhere = PGBOUNCER.replace(
        "              valueFrom:\n                secretKeyRef: {name: posthog, key: "
        "postgresql-url}",
        "              value: postgres://posthog@db.rds.example.com:5432/posthog")
    assert "rds.example.com" in elsewhere
    budget = _budget(tmp_path, elsewhere)
    assert budget.fits and budget.peak == 0 and not budget.unplaced_clients


def test_the_comment_headline_of_a_budget_that_cannot_tell_is_a_warning(tmp_path):
    # The PostHog pull request's comment said "❌ 5 warnings, 1 info" above a table whose
    # only server was "⚠️ cannot tell": no error, nothing over.
    from advisor.report.markdown import headline

    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s/pgsql.yaml").write_text(SERVER)
    (tmp_path / "k8s/pgbouncer.yaml").write_text(PGBOUNCER)
    result = run_check([str(tmp_path / "k8s")], CheckOptions(root=tmp_path, cache=False))
    assert not any(f.severity.value == "error" for f in result.findings), result.findings
    assert headline(result).startswith("⚠️"), headline(result)
