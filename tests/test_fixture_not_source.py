"""A test suite's fixture project is never a deployed workload's source (audit 46 D2).
triggerdotdev/trigger.dev's chart labels every pod app.kubernetes.io/name: trigger, and
packages/cli-v3/e2e/fixtures/monorepo-react-email/packages/trigger/ is a fixture of the
CLI's end-to-end tests: it was taken as the source of the webapp, electric, clickhouse and
s2 workloads ("folder named like the workload or its image"), and its pools (none) gave
the reason for PA106. The shape below is written for this test, after that layout: a
fixture folder named like the pods' label, holding a pool of its own."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.locate import in_test_tree
from tests.tree_helpers import write

SHAPE = {
    "package.json": '{"name": "acme", "private": true, "workspaces": ["apps/*", "packages/*"]}',
    "apps/webapp/package.json": '{"name": "webapp", "dependencies": {"pg": "8.13.1"}}',
    "apps/webapp/db.js": "const { Pool } = require('pg')\n"
                         "module.exports = new Pool({ connectionString: process.env."
                         "DATABASE_URL, max: 7 })\n",
    "packages/cli/e2e/fixtures/monorepo-email/packages/trigger/package.json":
        '{"name": "trigger-fixture", "dependencies": {"pg": "8.13.1"}}',
    "packages/cli/e2e/fixtures/monorepo-email/packages/trigger/db.js":
        "const { Pool } = require('pg')\nmodule.exports = new Pool({ max: 50 })\n",
    "hosting/k8s/webapp.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trigger-webapp
  labels: {app.kubernetes.io/name: trigger, app.kubernetes.io/component: webapp}
spec:
  replicas: 2
  strategy: {type: Recreate}
  selector: {matchLabels: {app.kubernetes.io/name: trigger}}
  template:
    metadata: {labels: {app.kubernetes.io/name: trigger, app.kubernetes.io/component: webapp}}
    spec:
      containers:
        - name: webapp
          image: ghcr.io/acme/acme-webapp:v4
          env:
            - {name: DATABASE_URL, value: "postgresql://app@postgres:5432/app"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: postgres}
spec:
  serviceName: postgres
  selector: {matchLabels: {app: postgres}}
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers: [{name: postgres, image: "postgres:16.4"}]
---
apiVersion: v1
kind: Service
metadata: {name: postgres}
spec:
  selector: {app: postgres}
  ports: [{port: 5432}]
""",
}


def test_a_fixture_named_like_the_pods_label_is_not_their_source(tmp_path):
    write(tmp_path, SHAPE)
    r = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    assert not any("e2e/fixtures" in n for n in r.notices), \
        [n for n in r.notices if "e2e/fixtures" in n]
    (budget,) = r.budgets
    # was 2 pods x 50 (the fixture's Pool, db.js:2) = 100, "OVER by 3"; the workspace
    # root's application is apps/webapp, whose Pool is 7
    assert budget.peak == 14


def test_in_test_tree():
    assert in_test_tree("packages/cli/e2e/fixtures/x/packages/trigger", "hosting/k8s/a.yaml")
    assert in_test_tree("tests/app", "k8s/app.yaml")
    # a test's own deployment keeps its own fixture application
    assert not in_test_tree("e2e/app", "e2e/k8s/app.yaml")
    assert not in_test_tree("apps/webapp", "hosting/k8s/a.yaml")
    # the folder itself named test is not under a test tree (only its parents count)
    assert not in_test_tree("services/test", "k8s/a.yaml")
