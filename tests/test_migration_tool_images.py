"""A Job running a published migration tool (flyway/flyway, liquibase/liquibase) is not
the repository's one application: toporischev/lesson6's sql-migrations Job took its
only folder, UserService, and was counted with that service's Npgsql pool of 100."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.read.apps.locate import maybe_built_here
from tests.tree_helpers import write

MAIN = """package main

import (
\t"database/sql"

\t_ "github.com/lib/pq"
)

func main() {
\tdb, _ := sql.Open("postgres", "postgres://u:p@db:5432/app")
\tdb.SetMaxOpenConns(7)
}
"""

K8S = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: pg, image: "postgres:16"}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrations}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrations
          image: IMAGE
          env:
            - {name: FLYWAY_URL, value: "jdbc:postgresql://db/app"}
"""


def test_migration_tool_images_are_published():
    assert not maybe_built_here("flyway/flyway:10")
    assert not maybe_built_here("liquibase/liquibase")


def test_a_flyway_job_does_not_take_the_only_application_folder(tmp_path):
    write(tmp_path, {"app/go.mod": "module example.com/app\n\nrequire github.com/lib/pq "
                                   "v1.10.9\n",
                     "app/main.go": MAIN,
                     "k8s/all.yaml": K8S.replace("IMAGE", "flyway/flyway")})
    (budget,) = run_check([tmp_path]).budgets
    (job,) = [c for c in budget.contributions if c.who == "migrations"]
    # its connections are not read (PA106, a floor of 1), not the Go service's 7
    assert (job.unknown, job.total) == (True, 1)
