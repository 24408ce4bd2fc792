"""edoburu/pgbouncer's entrypoint.sh writes a [pgbouncer] key only from the unprefixed
upper-case name (edoburu/docker-pgbouncer entrypoint.sh@v1.25.1-p0:124-127: POOL_MODE,
MAX_CLIENT_CONN, DEFAULT_POOL_SIZE). Given Bitnami's PGBOUNCER_* names, as in
peacewalker122/url-shortener@40c07f9b k8s/pgbouncer-deployment.yaml (edoburu
v1.25.1-p0 with DB_HOST and PGBOUNCER_POOL_MODE=transaction), it runs PgBouncer's
defaults: session mode, max_client_conn 100. The env names alone made it a Bitnami
container: a transaction pooler, a false PA504 and max_client_conn 500 (audit 36 D3)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.sources.operators.containers import image_env_style
from tests.tree_helpers import POSTGRES_DB, write

BOUNCER = """
apiVersion: v1
kind: Service
metadata: {name: bouncer}
spec:
  selector: {app: bouncer}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bouncer}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: bouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: IMAGE
          env:
            - {name: DB_HOST, value: db}
            - {name: DB_NAME, value: app}
            - {name: POSTGRESQL_HOST, value: db}
            - {name: PGBOUNCER_DATABASE, value: app}
            - {name: PGBOUNCER_POOL_MODE, value: transaction}
            - {name: PGBOUNCER_MAX_CLIENT_CONN, value: "500"}
"""


def _check(tmp_path, image):
    root = write(tmp_path, {"k8s/db.yaml": POSTGRES_DB,
                            "k8s/bouncer.yaml": BOUNCER.replace("IMAGE", image)})
    return run_check([str(root)], CheckOptions(cache=False))


def test_edoburu_given_bitnami_names_runs_its_defaults(tmp_path):
    result = _check(tmp_path, "edoburu/pgbouncer:v1.25.1-p0")
    assert [f.code for f in result.findings if f.code == "PA504"] == []  # session mode
    (notice,) = [n for n in result.notices if "edoburu/pgbouncer image's entrypoint" in n]
    assert "PGBOUNCER_POOL_MODE (k8s/bouncer.yaml:26) -> POOL_MODE" in notice
    assert "PGBOUNCER_MAX_CLIENT_CONN (k8s/bouncer.yaml:27) -> MAX_CLIENT_CONN" in notice
    text = "\n".join(f.message for f in result.findings)
    assert "500" not in text


def test_bitnami_image_with_the_same_env_is_a_transaction_pooler(tmp_path):
    result = _check(tmp_path, "bitnami/pgbouncer:1.24.1")
    (pa504,) = [f for f in result.findings if f.code == "PA504"]
    assert "transaction mode" in pa504.message


@pytest.mark.parametrize(("image", "style"), [
    ("edoburu/pgbouncer:v1.25.1-p0", "edoburu"),
    ("docker.io/edoburu/pgbouncer", "edoburu"),
    ("registry.example.com:5000/bitnami/pgbouncer:1.24.1@sha256:ab", "bitnami"),
    ("bitnamilegacy/pgbouncer:1.24.1", "bitnami"),
    ("example/pgbouncer:1.24.1", ""),
    ("pgbouncer", ""),
])
def test_image_env_style(image, style):
    assert image_env_style(image) == style
