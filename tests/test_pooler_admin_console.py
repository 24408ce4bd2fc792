"""A PgBouncer pod's own metrics exporter, which reads SHOW STATS from the admin console
(database `pgbouncer`), is no client of the server behind it; PA210 says that clients of
unknown size make its client count a floor; PgBouncer's version is read from a tag
that carries it after other words (audit A, Airflow's chart: release-pgbouncer was a
PA106 of its own pooler, PA210 said '0 client connections', and PgBouncer 1.23.1 was
assumed 1.18)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.link.poolers import _bouncer_version
from advisor.model import Container, Source
from tests.test_topology import BOUNCER
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write

EXPORTER = """
        - name: metrics-exporter
          image: prometheuscommunity/pgbouncer-exporter:v0.10.2
          env:
            - {name: PGBOUNCER_EXPORTER_CONNECTION_STRING,
               value: "postgres://stats@127.0.0.1:6432/pgbouncer?sslmode=disable"}
"""


def _unsized(name: str) -> str:
    """An app behind the bouncer whose pool size no file says."""
    return f"""
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: {name}}}
        spec:
          replicas: 1
          strategy: {{type: Recreate}}
          template:
            spec:
              containers:
                - name: app
                  image: acme/{name}:1
                  env:
                    - {{name: DATABASE_URL, value: "postgres://app@bouncer:6432/shop"}}
        """


def _tree(tmp_path):
    bouncer = BOUNCER.replace("          volumeMounts: [{name: ini, mountPath: /etc/pgbouncer}]\n",
                              "          volumeMounts: [{name: ini, mountPath: /etc/pgbouncer}]"
                              "\n" + EXPORTER.strip("\n") + "\n")
    assert "metrics-exporter" in bouncer
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/bouncer.yaml": bouncer,
                     "k8s/api.yaml": _unsized("api"), "k8s/jobs.yaml": _unsized("jobs")})
    return run_check([str(tmp_path)], CheckOptions())


def test_the_exporter_of_the_admin_console_is_no_client(tmp_path):
    result = _tree(tmp_path)
    (budget,) = result.budgets
    # the server sees the bouncer's pool only: 1 replica x default_pool_size 10
    assert [c.who for c in budget.contributions] == ["bouncer/pgbouncer"]
    assert budget.peak == 10
    # the apps behind it are of unknown size; the bouncer's own pod is no client at all
    unknown = [f.message.split(":")[0] for f in result.findings if f.code == "PA106"]
    assert unknown == ["api", "jobs"]
    (notice,) = [n for n in result.notices if "admin console" in n]
    assert notice.startswith("bouncer: connects to PgBouncer's admin console (database "
                             "'pgbouncer' of bouncer/pgbouncer, k8s/bouncer.yaml:")


def test_single_pgbouncer_says_its_client_count_is_a_floor(tmp_path):
    (single,) = [f for f in _tree(tmp_path).findings if f.code == "PA210"]
    assert "carries 2 workloads (api, jobs), >= 2 (2 of the workloads of unknown size) " \
           "client connections at peak" in single.message


@pytest.mark.parametrize(("image", "minor"), [
    ("apache/airflow:airflow-pgbouncer-2025.03.05-1.23.1", 23),
    ("bitnami/pgbouncer:1.23.1-debian-12-r5", 23),
    ("edoburu/pgbouncer:v1.24.0-p1", 24),
    ("example/pgbouncer:latest", 18),  # not said: the default model, 1.18
    ("example/pgbouncer:2025.03.05", 18),
    ("example/pgbouncer:11.2", 18),
])
def test_pgbouncer_version_from_the_image_tag(image, minor):
    version = _bouncer_version(Container(name="p", image=image, source=Source(path="x.yaml")))
    assert (version.major, version.minor) == (1, minor)
    assert (version.source.key == f"image {image}") == (minor != 18)


@pytest.mark.parametrize(("image", "policy", "minor"), [
    ("edoburu/pgbouncer:latest", "", 24),  # Always, Kubernetes' default for :latest
    ("docker.io/edoburu/pgbouncer", "Always", 24),
    ("edoburu/pgbouncer:latest", "IfNotPresent", 18),  # an old pull may stay
    ("bitnami/pgbouncer:latest", "", 18),  # its latest's history not checked here
])
def test_a_latest_pgbouncer_pulled_at_every_start(image, policy, minor):
    version = _bouncer_version(Container(name="p", image=image, pull_policy=policy,
                                         source=Source(path="x.yaml")))
    assert (version.minor, version.floor) == (minor, minor == 24)
