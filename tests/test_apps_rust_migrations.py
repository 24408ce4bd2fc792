"""A Job that runs a Rust migration CLI (sqlx-cli, diesel_cli, sea-orm-cli) holds one
connection while it runs, not the service's pool: andregs/rust-auth-demo's migrations
Job (`sqlx migrate run && sqlx database reset -y`, its image built from the repository
root whose sqlx pool is 5) was counted as 5 (audit 40 R4)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.rule_pages import write_tree

DB = """\
apiVersion: v1
kind: Service
metadata: {name: postgres}
spec:
  selector: {app: postgres}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: postgres}
spec:
  replicas: 1
  selector: {matchLabels: {app: postgres}}
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.4
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: migrations}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrations
          image: acme/auth:1.0
          command: ["/bin/sh", "-c"]
          args:
            - |
              cd /app && SCRIPT
"""

DB_RS = """\
use sqlx::postgres::PgPoolOptions;

pub async fn connect(url: &str) -> sqlx::PgPool {
    PgPoolOptions::new().max_connections(5).connect(url).await.unwrap()
}
"""


@pytest.mark.parametrize("script", [
    "sqlx migrate run --database-url postgres://app:pw@postgres/auth",
    "sqlx migrate run --database-url postgres://app:pw@postgres/auth "
    "&& sqlx database reset -y --database-url postgres://app:pw@postgres/auth_tests",
    "diesel migration run --database-url postgres://app:pw@postgres/auth",
])
def test_a_rust_migration_cli_job_holds_one_connection(tmp_path, script):
    write_tree(tmp_path, {
        "k8s/db.yaml": DB,
        "k8s/job.yaml": JOB.replace("SCRIPT", script),
        "Cargo.toml": '[package]\nname = "auth"\nversion = "0.1.0"\n\n[dependencies]\n'
                      'sqlx = { version = "0.8.6", features = ["postgres"] }\n',
        "src/db.rs": DB_RS,
        ".pool-advisor.toml": '[[workloads]]\nname = "migrations"\nsource = "."\n',
    })
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    (c,) = budget.contributions
    assert c.who == "migrations" and budget.peak == 1
    assert any("runs sqlx" in n or "runs diesel" in n for n in result.notices)
