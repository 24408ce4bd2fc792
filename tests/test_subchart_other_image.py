"""A workload of a vendored subchart that runs another image than its parent chart's own
workload is not given the repository root's application (audit 25 D7, Sajeyks/Django-Helm:
charts/freeradius's sajeyks/radius beside the chart's sajeyks/hello-world was made a
Django client of no known host, a phantom that turned every budget into a floor)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")

APP = {
    "requirements.txt": "sqlalchemy==2.0.36\npsycopg2-binary==2.9.9\n",
    "Dockerfile": 'FROM python:3.12-slim\nCOPY . /app\nCMD ["python", "/app/app.py"]\n',
    "app.py": ('import os\nfrom sqlalchemy import create_engine\n'
               'engine = create_engine(os.environ.get("DATABASE_URL"), pool_size=4, '
               'max_overflow=0)\n'),
}
PARENT = """apiVersion: v2
name: site
version: 0.1.0
dependencies:
  - name: radius
    version: 0.1.0
    repository: file://./charts/radius
"""
WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-site}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: site
          image: acme/hello-site:v11
          env:
            - {name: DATABASE_URL, value: "postgresql://app@{{ .Release.Name }}-db:5432/app"}
"""
DB = """apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}-db}
spec:
  selector: {app: db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: {{ .Release.Name }}-db}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - {name: postgres, image: "postgres:16.2"}
"""
RADIUS = """apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-radius}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: radius
          image: {{ .Values.image }}
"""


def _check(tmp_path: Path, radius_image: str):
    write(tmp_path, {**APP, "deploy/Chart.yaml": PARENT, "deploy/values.yaml": "{}\n",
                     "deploy/templates/web.yaml": WEB, "deploy/templates/db.yaml": DB,
                     "deploy/charts/radius/Chart.yaml": "apiVersion: v2\nname: radius\n"
                                                         "version: 0.1.0\n",
                     "deploy/charts/radius/values.yaml": f"image: {radius_image}\n",
                     "deploy/charts/radius/templates/deployment.yaml": RADIUS})
    return run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))


def test_a_subchart_of_another_image_is_not_the_root_application(tmp_path):
    result = _check(tmp_path, "acme/radius:v1.5")
    (budget,) = result.budgets
    assert budget.peak == 8 and not budget.unplaced_clients  # the site's 2 x 4 only
    assert any("release-radius: application source not inferred: it is rendered from a "
               "subchart (deploy/charts/radius/templates/deployment.yaml) and runs "
               "acme/radius:v1.5, while the parent chart's own release-site runs "
               "acme/hello-site:v11" in n for n in result.notices)


def test_a_subchart_of_the_parent_s_image_still_takes_the_root(tmp_path):
    result = _check(tmp_path, "acme/hello-site:worker")
    assert any("Deployment/release-radius: application source inferred as ./" in n
               for n in result.notices)
