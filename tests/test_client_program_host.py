"""A psql / pg_dump Job names its server with libpq's options (`-h HOST`, `--host=HOST`,
`-hHOST`) or PGHOST: read as the client's host like a URL's, so the Job is linked to its
server and the budget is not a floor "cannot tell" (audit 10d D4: atakurt/messagingApp's
init Job, `command: ["psql"]`, `args: ["-h", "postgres", "-U", "postgres", ...]`)."""

from __future__ import annotations

import pytest

from advisor.engine.check import CheckOptions, run_check

DB = """\
apiVersion: v1
kind: Service
metadata: {name: postgres}
spec:
  selector: {app: postgres}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: postgres}
spec:
  serviceName: postgres
  replicas: 1
  selector: {matchLabels: {app: postgres}}
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers:
        - {name: postgres, image: "postgres:17.0"}
---
apiVersion: v1
kind: Service
metadata: {name: other}
spec:
  selector: {app: other}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: other}
spec:
  serviceName: other
  replicas: 1
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: other}}
    spec:
      containers:
        - {name: postgres, image: "postgres:17.0"}
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: init-data}
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: psql
          image: postgres:17.0
%s
"""


def _budgets(tmp_path, container: str):
    (tmp_path / "db.yaml").write_text(DB)
    (tmp_path / "job.yaml").write_text(JOB % container)
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    return {b.server: b for b in result.budgets}


@pytest.mark.parametrize("container", [
    '          command: ["psql"]\n'
    '          args: ["-h", "postgres", "-U", "app", "-d", "messages", "-f", "/s/init.sql"]',
    '          command: ["psql", "--host=postgres", "--username=app", "messages"]',
    '          command: ["psql", "-hpostgres", "-Uapp"]',
    '          command: ["sh", "-c", "pg_dump -h postgres -U app shop | gzip > /b/shop.gz"]',
    '          command: ["psql", "-f", "/s/init.sql"]\n'
    '          env: [{name: PGHOST, value: postgres}, {name: PGUSER, value: app}]',
])
def test_a_client_program_s_host_links_the_job(tmp_path, container):
    budgets = _budgets(tmp_path, container)
    linked = budgets["postgres"]
    assert [c.who for c in linked.contributions] == ["init-data"]
    assert linked.fits and not linked.unplaced_clients
    assert not budgets["other"].contributions and budgets["other"].fits


def test_two_programs_to_two_hosts_are_not_one_route(tmp_path):
    """A dump from one server restored into another: not put on either (it may connect
    to both), so every budget is a floor, as before."""
    budgets = _budgets(tmp_path, '          command: ["sh", "-c", "pg_dump -h other app | '
                                 'psql -h postgres app"]')
    assert budgets["postgres"].unplaced_clients == ["init-data"]
    assert budgets["other"].unplaced_clients == ["init-data"]
