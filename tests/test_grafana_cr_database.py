"""advisor.link.grafana_cr_database: a grafana-operator Grafana CR whose [database]
(spec.config.database, under the grafana container's GF_DATABASE_* env) is PostgreSQL on
a server of the repository is a client there: its Deployment's pods x max_open_conn.
The tree is in the shape of a home-ops repository: a shared CloudNativePG Cluster in
namespace database, Grafana in observability."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

CLUSTER = """
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: shared-pg, namespace: database}
spec:
  instances: 3
  imageName: ghcr.io/cloudnative-pg/postgresql:17.4
  postgresql:
    parameters: {max_connections: "60"}
"""

GRAFANA = """
apiVersion: grafana.integreatly.org/v1beta1
kind: Grafana
metadata: {name: dashboards, namespace: observability}
spec:
  config:
    database:
      type: %s
      host: "shared-pg-rw.database.svc.cluster.local:5432"
      name: dashboards
%s
  deployment:
    spec:
      replicas: 2
      strategy: {type: Recreate}
      template:
        spec:
          containers:
            - name: grafana
              env:
                - name: GF_DATABASE_USER
                  valueFrom:
                    secretKeyRef: {name: dashboards-pg, key: user}
%s
"""


def _run(tmp_path, kind="postgres", config="", env=""):
    write(tmp_path, {"db/cluster.yaml": CLUSTER,
                     "observability/grafana.yaml": GRAFANA % (kind, config, env)})
    result = run_check([str(tmp_path)], CheckOptions())
    return result, next(b for b in result.budgets if b.server == "shared-pg")


def test_a_grafana_cr_database_without_max_open_conn_is_unbounded(tmp_path):
    """max_open_conn unset is Grafana's 0, no limit: PA102, 2 pods counted at least 1
    each; it printed 'fits, peak 0' and no findings (audit 11a: tscibilia/home-ops)."""
    result, rw = _run(tmp_path)
    assert not rw.fits and rw.peak == 2 and rw.unbounded_clients == ["dashboards"]
    (finding,) = [f for f in result.findings if f.code == "PA102"]
    assert finding.location.path == "observability/grafana.yaml"


@pytest.mark.parametrize(("config", "env", "peak"), [
    ("      max_open_conn: 20", "", 40),
    # the container's env wins over spec.config (Grafana's env override)
    ("      max_open_conn: 20", "                - {name: GF_DATABASE_MAX_OPEN_CONN, "
     "value: \"35\"}", 70),
])
def test_a_grafana_cr_database_pool_is_pods_times_max_open_conn(tmp_path, config, env, peak):
    _result, rw = _run(tmp_path, config=config, env=env)
    assert rw.peak == peak and not rw.peak_is_floor
    assert rw.fits == (peak <= 57)


@pytest.mark.parametrize("kind", ["sqlite3", "mysql"])
def test_a_grafana_cr_database_of_another_kind_is_no_client(tmp_path, kind):
    _result, rw = _run(tmp_path, kind=kind)
    assert rw.fits and rw.peak == 0
