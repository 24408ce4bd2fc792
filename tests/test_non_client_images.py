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
