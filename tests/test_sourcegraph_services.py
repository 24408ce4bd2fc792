"""Sourcegraph's services (audit 50, item 3; shape of sourcegraph/deploy-sourcegraph's
base/, written here in our own words): the frontend opens one dbconn pool per database
its PG* env names, SRC_PGSQL_MAX_OPEN each (default 30, internal/database/dbconn/open.go);
the worker and precise-code-intel-worker set no database env, their DSNs are served by
the frontend (conftypes.ServiceConnections). Before: the frontend was a floor of 1 a pod
and the workers were neither counted nor named."""

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.sourcegraph import sourcegraph_service
from tests.tree_helpers import write

DB = """
apiVersion: v1
kind: Service
metadata: {name: NAME}
spec:
  selector: {app: NAME}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME}
spec:
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers:
        - name: pgsql
          image: index.docker.io/sourcegraph/postgresql-16:6.2.1106
          args: ["-c", "max_connections=100"]
"""
FRONTEND = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: sourcegraph-frontend}
spec:
  replicas: 2
  strategy: {rollingUpdate: {maxSurge: 2, maxUnavailable: 0}}
  template:
    spec:
      containers:
        - name: frontend
          image: index.docker.io/sourcegraph/frontend:6.2.1106
          args: [serve]
          env:
            - {name: PGHOST, value: pgsql}
            - {name: PGDATABASE, value: sg}
            - {name: CODEINTEL_PGHOST, value: codeintel-db}
"""
WORKER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  template:
    spec:
      containers:
        - name: worker
          image: index.docker.io/sourcegraph/worker:6.2.1106
          env: [{name: PRECISE_CODE_INTEL_UPLOAD_BACKEND, value: blobstore}]
"""


def _run(tmp_path, frontend: str = FRONTEND):
    write(tmp_path, {"base/pgsql.yaml": DB.replace("NAME", "pgsql"),
                     "base/codeintel-db.yaml": DB.replace("NAME", "codeintel-db"),
                     "base/frontend.yaml": frontend, "base/worker.yaml": WORKER})
    result = run_check([str(tmp_path)], CheckOptions())
    return result, {b.server: b for b in result.budgets}


def test_the_frontend_and_the_worker_it_serves_are_counted(tmp_path):
    result, budgets = _run(tmp_path)
    for name in ("pgsql", "codeintel-db"):
        b = budgets[name]
        by = {c.who: c.total for c in b.contributions}
        # frontend: (2 + maxSurge 2) x 30; worker: (1 + 25% surge rounded up 1) x 30
        assert by == {"sourcegraph-frontend": 120, "worker": 60}, b
        assert b.unplaced_clients == [] and not b.peak_is_floor, b
        assert b.peak == 180 and not b.fits
    assert any("Sourcegraph worker takes its database DSNs from the frontend" in n
               for n in result.notices), result.notices
    assert any("Deployment/worker: its database DSNs are served by Sourcegraph's frontend "
               "sourcegraph-frontend" in n for n in result.notices), result.notices
    assert not [f for f in result.findings if f.code == "PA106"
                and "sourcegraph-frontend" in f.message], result.findings


def test_a_worker_without_its_frontend_is_named_where_it_may_connect(tmp_path):
    # no sourcegraph/frontend in the run: the worker's DSNs are served from elsewhere
    result, budgets = _run(tmp_path, FRONTEND.replace("sourcegraph/frontend",
                                                      "acme/frontend"))
    for b in budgets.values():
        assert "worker" in b.unplaced_clients and b.peak_is_floor, b
    assert any("Sourcegraph worker takes its database DSNs from the frontend" in n
               for n in result.notices), result.notices


def test_sourcegraph_service_is_pure():
    assert sourcegraph_service("index.docker.io/sourcegraph/frontend:6.2.1106@sha256:ab") \
        == "frontend"
    assert sourcegraph_service("sourcegraph/precise-code-intel-worker:5.0") \
        == "precise-code-intel-worker"
    assert sourcegraph_service("acme/frontend:1") is None
    assert sourcegraph_service("sourcegraph/searcher:6.2") is None  # no database
    assert sourcegraph_service("sourcegraph/postgresql-16:6.2") is None
