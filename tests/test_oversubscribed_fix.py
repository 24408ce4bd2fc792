"""PA101's fix names the largest term of the peak: a pooler making most of it, not a
small client beside it (audit 6b D10c: PostHog's PgBouncer under an HPA made 260 of 261,
and the fix named the 1-connection migrate Job)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions

DB = """apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: pg}
spec:
  instances: 1
  imageName: ghcr.io/cloudnative-pg/postgresql:17.2
  postgresql:
    parameters: {max_connections: "100"}
---
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-pooler}
spec:
  cluster: {name: pg}
  instances: 3
  deploymentStrategy: {type: Recreate}
  pgbouncer:
    poolMode: transaction
    parameters: {default_pool_size: "PGB_SIZE"}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: example/migrate:1
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://pg-rw:5432/app
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE
              value: "JOB_SIZE"
"""


@pytest.mark.parametrize(("pool", "job", "named"), [
    # 3 x (40 + 40 auth_query) = 240 from the pooler, 1 from the Job: the pooler
    ("40", "1", "lower pg-pooler's server side so the total fits in 97"),
    # 3 x (5 + 5) = 30 from the pooler, 90 from the Job: the Job
    ("5", "90", "route migrate through a transaction-mode PgBouncer"),
])
def test_the_fix_names_the_largest_term(tmp_path, pool, job, named):
    (tmp_path / "db.yaml").write_text(DB.replace("PGB_SIZE", pool).replace("JOB_SIZE", job))
    [pa101] = [f for f in run_check([str(tmp_path)], CheckOptions()).findings
               if f.code == "PA101"]
    assert pa101.fix.description.startswith(named)
