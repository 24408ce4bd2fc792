"""A known client in a PostgreSQL server's own pod (advisor/link/sidecars.py): the
Prometheus PostgreSQL exporter sidecar connects to 127.0.0.1, which in that pod is the
server; each server pod runs its own and connects to its own pod's server, so an
instance's budget sees one pod's. Before, a server pod's other containers were no client
of anything: the exporter was counted nowhere and nothing said so."""

from __future__ import annotations

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

EXPORTER = """
        - name: metrics
          image: quay.io/prometheuscommunity/postgres-exporter:v0.15.0
          env:
            - {name: DATA_SOURCE_URI, value: "127.0.0.1:5432/postgres?sslmode=disable"}
            - {name: DATA_SOURCE_USER, value: postgres}
"""


def _server(replicas: int, more: str) -> str:
    return f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db}}
spec:
  replicas: {replicas}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.2
          args: ["-c", "max_connections=50"]
{more}"""


def _check(tmp_path, files: dict[str, str]):
    write(tmp_path, files)
    return run_check([str(tmp_path)], CheckOptions())


def test_exporter_sidecar_is_one_pods_worth_on_its_own_server(tmp_path):
    result = _check(tmp_path, {"db.yaml": _server(3, EXPORTER)})
    (budget,) = result.budgets
    (c,) = budget.contributions
    assert c.who == "db/metrics"
    # 1 server pod per instance (not the 3 replicas) x (1 DSN + the collector's)
    assert budget.peak == 1 * 2
    assert c.factors[0].value == 1 and "1 of 3" in c.factors[0].source.default


def test_unknown_sidecar_naming_a_database_is_an_unknown_client_not_none(tmp_path):
    """A container of the server's pod whose program no reader knows: not counted (a
    log shipper); but one whose env names a database connects (paveletto99/
    rust-microservices-sandbox deploys its Rust service in the server's pod, PG_HOST=
    127.0.0.1): its connections are unknown (PA106, a floor), never none. Before, the
    server "fit" with peak 0 (audit 40 R6)."""
    other = """
        - name: shipper
          image: fluent/fluent-bit:2.2
        - name: custom
          image: acme/db-janitor:1.0
          env:
            - {name: DATABASE_URL, value: "postgresql://u@localhost:5432/app"}
"""
    result = _check(tmp_path, {"db.yaml": _server(1, other)})
    (budget,) = result.budgets
    assert budget.peak == 1 and budget.unknown_clients == ["db/custom"]
    assert not budget.fits
    assert any("container custom" in n and "no reader knows" in n
               and "its connections are unknown" in n for n in result.notices)
    assert any(f.code == "PA106" and "db/custom" in f.message for f in result.findings)
    assert not any("shipper" in n for n in result.notices)
    assert not any("container shipper" in n for n in result.notices)


def test_exporter_with_a_hidden_dsn_is_unknown_not_zero(tmp_path):
    hidden = """
        - name: metrics
          image: quay.io/prometheuscommunity/postgres-exporter:v0.15.0
          env:
            - name: DATA_SOURCE_NAME
              valueFrom: {secretKeyRef: {name: exporter-dsn, key: dsn}}
"""
    result = _check(tmp_path, {"db.yaml": _server(1, hidden)})
    (budget,) = result.budgets
    assert budget.unknown_clients == ["db/metrics"]


def test_pgbouncer_sidecar_stays_a_pooler_and_an_exporter_at_its_port_goes_through_it(
        tmp_path):
    more = """
        - name: pgbouncer
          image: edoburu/pgbouncer:1.22.0
          env:
            - {name: DATABASE_URL, value: "postgresql://app:pw@127.0.0.1:5432/app"}
        - name: metrics
          image: quay.io/prometheuscommunity/postgres-exporter:v0.15.0
          env:
            - {name: DATA_SOURCE_URI, value: "127.0.0.1:6432/app?sslmode=disable"}
"""
    files = {"db.yaml": _server(1, more)}
    write(tmp_path, files)
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (pooler,) = topo.poolers
    (client,) = topo.clients  # the PgBouncer container is no client
    assert client.name == "db/metrics"
    assert (client.target_kind, client.target_id) == ("pooler", pooler.id)


def test_bitnami_primary_and_read_replicas_with_metrics(tmp_path):
    """The Bitnami chart's shape (bitnami/charts bitnami/postgresql templates/primary/
    statefulset.yaml, read/statefulset.yaml with metrics.enabled): a `metrics` container
    with DATA_SOURCE_URI 127.0.0.1:5432 in each StatefulSet's pod."""
    def sts(name: str, component: str, replicas: int) -> str:
        return f"""
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {name}
  labels: {{app.kubernetes.io/name: postgresql, app.kubernetes.io/instance: rel,
           app.kubernetes.io/component: {component}}}
spec:
  replicas: {replicas}
  template:
    spec:
      containers:
        - name: postgresql
          image: docker.io/bitnami/postgresql:17.6.0-debian-12-r4
        - name: metrics
          image: docker.io/bitnami/postgres-exporter:0.17.1-debian-12-r16
          env:
            - {{name: DATA_SOURCE_URI, value: "127.0.0.1:5432/postgres?sslmode=disable"}}
            - name: DATA_SOURCE_PASS
              valueFrom: {{secretKeyRef: {{name: rel-postgresql, key: postgres-password}}}}
            - {{name: DATA_SOURCE_USER, value: postgres}}
"""
    result = _check(tmp_path, {"primary.yaml": sts("rel-postgresql-primary", "primary", 1),
                               "read.yaml": sts("rel-postgresql-read", "read", 3)})
    by_name = {b.server: b for b in result.budgets}
    primary, read = by_name["rel-postgresql-primary"], by_name["rel-postgresql-read"]
    assert [c.who for c in primary.contributions] == ["rel-postgresql-primary/metrics"]
    assert primary.peak == 2
    # 3 read pods' exporters, spread over the 3 instances: 2 each
    assert read.total_peak == 6 and read.peak == 2


def test_zalando_sidecars_count_on_the_primary_and_its_replicas(tmp_path):
    """Zalando `postgresql` spec.sidecars (postgres-operator docs/user.md "Sidecar
    Support"): a container in each of the numberOfInstances pods, given POSTGRES_USER;
    the primary sees its own pod's exporter, the replicas theirs (spread over them)."""
    result = _check(tmp_path, {"pg.yaml": """
        apiVersion: acid.zalan.do/v1
        kind: postgresql
        metadata: {name: acid-main}
        spec:
          teamId: acid
          numberOfInstances: 3
          postgresql: {version: "16"}
          sidecars:
            - name: exporter
              image: quay.io/prometheuscommunity/postgres-exporter:v0.15.0
              env:
                - {name: DATA_SOURCE_URI, value: "localhost/postgres?sslmode=require"}
                - {name: DATA_SOURCE_USER, value: "$(POSTGRES_USER)"}
            - name: logs
              image: fluent/fluent-bit:2.2
        """})
    by_name = {b.server: b for b in result.budgets}
    primary, replicas = by_name["acid-main"], by_name["acid-main replicas"]
    assert [c.who for c in primary.contributions] == ["acid-main/exporter"]
    assert primary.peak == 2
    assert replicas.total_peak == 2 * 2 and replicas.peak == 2
    clients = scan([str(tmp_path)], CheckOptions()).topology.clients
    (client,) = [c for c in clients if c.name == "acid-main/exporter"]
    assert client.route.user == "postgres"  # the operator's POSTGRES_USER, expanded


def test_crunchy_pgmonitor_exporter_is_a_sidecar_of_each_instance(tmp_path):
    """PGO's spec.monitoring.pgmonitor.exporter adds postgres_exporter to each instance
    pod with DATA_SOURCE_URI localhost:<spec.port>/postgres (internal/controller/
    postgrescluster/pgmonitor.go)."""
    cluster = """
        apiVersion: postgres-operator.crunchydata.com/v1beta1
        kind: PostgresCluster
        metadata: {name: hippo}
        spec:
          postgresVersion: 16
          instances:
            - {name: instance1, replicas: 1}
        """
    result = _check(tmp_path, {"pg.yaml": cluster + """  monitoring:
            pgmonitor:
              exporter:
                image: registry.example/crunchydata/crunchy-postgres-exporter:ubi9-0.17.1-2534
        """})
    (budget,) = result.budgets
    assert [c.who for c in budget.contributions] == ["hippo/exporter"]
    assert budget.peak == 2
    (client,) = scan([str(tmp_path)], CheckOptions()).topology.clients
    assert "pgmonitor.go" in client.pools[0].note


def test_a_sidecar_naming_the_servers_service_brings_every_pod(tmp_path):
    """Not localhost: each of the 3 pods' exporters connects through the Service, not to
    its own pod, so the server set sees all 3."""
    via_service = EXPORTER.replace("127.0.0.1:5432", "db:5432")
    service = """---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
"""
    result = _check(tmp_path, {"db.yaml": _server(3, via_service) + service})
    (budget,) = result.budgets
    assert budget.peak == 3 * 2
