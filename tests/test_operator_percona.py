"""The Percona Operator for PostgreSQL v2: its copy of PGO's PostgresCluster
(upstream.pgv2.percona.com) read as Crunchy's, and its PerconaPGCluster read through the
same code with what the operator changes (advisor.read.sources.operators.percona).
Audit h4: deploy/cr.yaml (3 instances, PgBouncer 3 replicas) was a notice and "no
findings (no PostgreSQL server found)", exit 0, where the hand budget is 4 x 40 = 160 >
97 usable, OVER by 63 (95 and 65 since Patroni's 2 superuser sessions are subtracted, audit
8b D1); its examples' upstream PostgresCluster was dropped silently."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.read.sources.k8s import k8s_objects
from advisor.read.sources.operators import NOT_READ_OPERATORS, operator_entities, operator_secrets
from tests.cli_helpers import run_cli
from tests.tree_helpers import write

# A PerconaPGCluster as its CR is written: no max_connections (Patroni's 100), PostgreSQL
# 18, 3 instances, PgBouncer 3 replicas with PgBouncer's own pool sizes.
PERCONA = """\
apiVersion: pgv2.percona.com/v2
kind: PerconaPGCluster
metadata:
  name: ledger
  namespace: pg
spec:
  crVersion: 3.1.0
  image: docker.io/percona/percona-distribution-postgresql:18.1-1
  postgresVersion: 18
  instances:
    - name: main
      replicas: 3
      dataVolumeClaimSpec:
        accessModes: [ReadWriteOnce]
        resources:
          requests:
            storage: 5Gi
  proxy:
    pgBouncer:
      replicas: 3
      image: docker.io/percona/percona-pgbouncer:1.25.1-1
  backups:
    pgbackrest:
      image: docker.io/percona/percona-pgbackrest:2.57.0-1
      repos:
        - name: repo1
          schedules:
            full: "0 1 * * 0"
  pmm:
    enabled: false
    image: docker.io/percona/pmm-client:3.4.1
"""

# The same cluster in PGO's shape, under either API group
PGO = """\
apiVersion: GROUP/v1beta1
kind: PostgresCluster
metadata:
  name: ledger
  namespace: pg
spec:
  postgresVersion: 17
  instances:
    - name: a
      replicas: 2
    - name: b
      replicas: 1
  patroni:
    dynamicConfiguration:
      postgresql:
        parameters:
          max_connections: 150
  users:
    - name: teller
      databases: [ledger]
  proxy:
    pgBouncer:
      replicas: 2
      config:
        global:
          pool_mode: transaction
          default_pool_size: "25"
"""

CRUNCHY_GROUP = "postgres-operator.crunchydata.com"
PERCONA_GROUP = "upstream.pgv2.percona.com"


def client(host: str, *, env: str | None = None) -> str:
    """A Deployment of 5 pods, each with a HikariCP pool of 10 to `host` as teller, or
    with `env` as its environment."""
    env = env or (
        f"- {{name: SPRING_DATASOURCE_URL, value: 'jdbc:postgresql://{host}:5432/ledger'}}\n"
        "- {name: SPRING_DATASOURCE_USERNAME, value: teller}\n"
        "- {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: '10'}\n")
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: api, namespace: pg}}
spec:
  replicas: 5
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: api
          image: acme/api:1
          env:
{textwrap.indent(env, "            ")}"""


def budgets_of(root: Path):
    result = run_check([str(root)], CheckOptions())
    return result, {b.server: b for b in result.budgets}


def entities(text: str):
    objects, problems = k8s_objects(text, "pg.yaml")
    assert not problems
    return operator_entities(objects)


def made(text: str, namespace: str = "default"):
    objects, _ = k8s_objects(text, "pg.yaml")
    return {m.name: m for m in operator_secrets(objects, namespace)}


# --- Percona's upstream PostgresCluster is Crunchy's ----------------------------------


def test_upstream_postgrescluster_gives_the_crunchy_budget(tmp_path):
    def summary(group: str):
        root = tmp_path / group
        write(root, {"pg.yaml": PGO.replace("GROUP", group),
                     "api.yaml": client("ledger-pgbouncer.pg.svc")})
        result, budgets = budgets_of(root)
        return (sorted((name, b.usable, b.peak, [c.who for c in b.contributions])
                       for name, b in budgets.items()),
                sorted((f.code, f.message) for f in result.findings))

    crunchy, percona = summary(CRUNCHY_GROUP), summary(PERCONA_GROUP)
    assert percona == crunchy
    budgets = dict((name, (usable, peak)) for name, usable, peak, _ in percona[0])
    # usable 150 - 3 - 2 (Patroni's superuser sessions); 2 pgBouncer pods + 1 surge, each
    # 25 for (ledger, teller) and 25 for its auth_query pool (_crunchypgbouncer in ledger):
    # 3 x 50 = 150 > 145 (api's 5 x 10 = 50 connections ask for more than 25 a process:
    # its clients' bound is not lower)
    assert budgets == {"ledger": (145, 150), "ledger replicas": (145, 0)}


def test_upstream_postgrescluster_is_read_where_crunchys_is():
    e = entities(PGO.replace("GROUP", PERCONA_GROUP))
    assert [s.id for s in e.servers] == ["crunchy:pg/ledger", "crunchy:pg/ledger/replicas"]
    assert [s.instances.value for s in e.servers] == [1, 2]
    (p,) = e.poolers
    assert p.id == "crunchy-pooler:pg/ledger-pgbouncer"
    assert p.settings["auth_user"].value == "_crunchypgbouncer"
    assert e.services["ledger-pgbouncer.pg.svc"] == ("pooler", p.id)
    secret = made(PGO.replace("GROUP", PERCONA_GROUP))["ledger-pguser-teller"]
    assert secret.data["pgbouncer-host"] == "ledger-pgbouncer.pg.svc"
    assert "Percona operator" in secret.source.default


# --- PerconaPGCluster -----------------------------------------------------------------


def test_perconapgcluster_over_by_65_through_the_cli(tmp_path):
    """3 PgBouncer pods + 1 surge (the Deployment is RollingUpdate, maxUnavailable 0, no
    maxSurge), each 20 for the one assumed pair + 20 for the auth pool: 160 > 95 (100 - 3
    - Patroni's 2 superuser sessions)."""
    write(tmp_path, {"k8s/ledger.yaml": PERCONA})
    out = run_cli("check", str(tmp_path), "--no-cache")
    assert out.returncode == 1, out.stdout + out.stderr
    text = out.stdout
    assert "server ledger (PostgreSQL 18, spec.postgresVersion" in text
    # no client in the repository: the one pair is an assumption, so a floor (audit 8a D4)
    assert "OVER by at least 65" in text
    assert "95 usable = 100 (max_connections, default: " in text
    assert "- 2 (Patroni's superuser sessions, default: " in text
    assert "(3 (PgBouncer pods, " in text and "+ 1 (rolling-update surge" in text
    assert "x 40 (server connections per PgBouncer process" in text
    assert "PA101 [error] ledger: peak at least 160 connections > 95 usable, over by at " \
           "least 65" in text
    assert "does not read" not in text and "no PostgreSQL server found" not in text
    assert "Traceback" not in out.stderr


def test_perconapgcluster_servers_pooler_and_services():
    e = entities(PERCONA)
    primary, replicas = e.servers
    assert (primary.id, primary.instances.value, primary.version.value) == (
        "percona:pg/ledger", 1, 18)
    assert (replicas.id, replicas.role, replicas.instances.value) == (
        "percona:pg/ledger/replicas", "standby", 2)
    assert "max_connections" not in primary.settings  # written by no one: Patroni's 100
    (p,) = e.poolers
    assert (p.id, p.name, p.replicas.value, p.surge.value) == (
        "percona-pooler:pg/ledger-pgbouncer", "ledger-pgbouncer", 3, 1)
    assert "Percona operator's pgBouncer Deployment" in p.surge.source.default
    assert p.version.text == "1.25"  # percona/percona-pgbouncer:1.25.1-1
    assert [(d.name, d.host) for d in p.databases] == [("*", "ledger-primary")]
    assert e.services["ledger-primary.pg.svc"] == ("server", primary.id)
    assert e.services["ledger-replicas.pg"] == ("server", replicas.id)
    assert e.services["ledger-pgbouncer"] == ("pooler", p.id)
    assert e.claimed == ["PerconaPGCluster/pg/ledger"]
    assert not e.notices


def test_perconapgcluster_is_no_longer_an_operator_not_read():
    assert ("PerconaPGCluster", "pgv2.percona.com") not in NOT_READ_OPERATORS
    assert ("SGCluster", "stackgres.io") in NOT_READ_OPERATORS


@pytest.mark.parametrize(("image", "version"), [
    # releases 2.4-2.7: the leading 2.6 is the operator's, PgBouncer's follows `pgbouncer`
    ("percona/percona-postgresql-operator:2.6.0-ppg16.8-pgbouncer1.24.0", "1.24"),
    ("percona/percona-pgbouncer:1.25.1-1", "1.25"),
    # no PgBouncer version (18 is PostgreSQL's, 2.3.0 the operator's): the assumed one
    ("perconalab/percona-postgresql-operator:main-pgbouncer18", "1.18"),
    ("percona/percona-postgresql-operator:2.3.0-ppg16-pgbouncer", "1.18"),
])
def test_pgbouncer_version_of_percona_images(image, version):
    text = PERCONA.replace("docker.io/percona/percona-pgbouncer:1.25.1-1", image)
    (p,) = entities(text).poolers
    assert p.version.text == version


def test_pgbouncer_of_no_replicas_is_none():
    """replicas: 0 disables PgBouncer (PGBouncerEnabled, K8SPG-1062): no pooler, no
    Service, no pgbouncer-* keys; in Percona's PostgresCluster too."""
    text = PERCONA.replace("      replicas: 3\n      image", "      replicas: 0\n      image")
    e = entities(text)
    assert not e.poolers and "ledger-pgbouncer" not in e.services
    assert "pgbouncer-host" not in made(text)["ledger-pguser-ledger"].data
    upstream = PGO.replace("GROUP", PERCONA_GROUP).replace("      replicas: 2\n      config",
                                                           "      replicas: 0\n      config")
    assert not entities(upstream).poolers


@pytest.mark.parametrize(("cr_version", "pods"), [("2.8.0", 1), ("3.1.0", 0), (None, 0)])
def test_old_cr_version_gets_a_pgbouncer_unasked(cr_version, pods):
    """PerconaPGCluster.Default gives a crVersion < 2.9.0 a pgBouncer of 1 replica; from
    2.9.0 (and the operator's own 3.1.0 when crVersion is missing) only when asked."""
    text = PERCONA.split("  proxy:\n")[0] + "  backups: {}\n"
    text = text.replace("  crVersion: 3.1.0\n",
                        f"  crVersion: {cr_version}\n" if cr_version else "")
    poolers = entities(text).poolers
    assert [p.replicas.value for p in poolers] == ([pods] if pods else [])
    if pods:
        assert "crVersion < 2.9.0" in poolers[0].replicas.source.default


# --- Linking -------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["ledger-pgbouncer.pg.svc", "ledger-pgbouncer",
                                  "ledger-pgbouncer.pg.svc.cluster.local"])
def test_client_of_the_pgbouncer_service_is_linked_to_the_pooler(tmp_path, host):
    write(tmp_path, {"k8s/ledger.yaml": PERCONA, "k8s/api.yaml": client(host)})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (api,) = [c for c in topo.clients if c.name == "api"]
    assert (api.target_kind, api.target_id) == ("pooler", "percona-pooler:pg/ledger-pgbouncer")
    (pooler,) = topo.poolers
    assert pooler.pairs == [("ledger", "teller")]
    result, budgets = budgets_of(tmp_path)
    assert [c.who for c in budgets["ledger"].contributions] == ["ledger-pgbouncer"]
    assert not [f for f in result.findings if f.code == "PA107"]


def test_client_of_the_primary_service_is_linked_to_the_server(tmp_path):
    write(tmp_path, {"k8s/ledger.yaml": PERCONA, "k8s/api.yaml": client("ledger-primary")})
    _, budgets = budgets_of(tmp_path)
    # 5 pods x 10 straight to the primary, beside the PgBouncer's 160
    assert budgets["ledger"].peak == 160 + 50


@pytest.mark.parametrize(("key", "target"), [
    ("pgbouncer-uri", ("pooler", "percona-pooler:pg/ledger-pgbouncer")),
    ("uri", ("server", "percona:pg/ledger")),
])
def test_pguser_secret_made_by_the_operator_is_resolved(tmp_path, key, target):
    users = "  users:\n    - name: teller\n      databases: [ledger]\n"
    env = ("- name: DATABASE_URL\n"
           f"  valueFrom: {{secretKeyRef: {{name: ledger-pguser-teller, key: {key}}}}}\n"
           "- {name: PG_POOL_MAX, value: '10'}\n")
    write(tmp_path, {"k8s/ledger.yaml": PERCONA + users,
                     "k8s/api.yaml": client("", env=env)})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (api,) = [c for c in topo.clients if c.name == "api"]
    assert (api.target_kind, api.target_id) == target


def test_pguser_secrets_of_a_perconapgcluster():
    """The users ToCrunchy gives the PostgresCluster: reserved ones dropped, PMM's monitor
    added, users[].secretName naming the Secret; none left: PGO's default user."""
    secrets = made(PERCONA + """\
  users:
    - name: teller
      databases: [ledger, audit]
      secretName: teller-credentials
    - name: monitor
""")
    assert sorted(secrets) == ["teller-credentials"]
    data = secrets["teller-credentials"].data
    assert (data["user"], data["dbname"], data["host"], data["port"]) == (
        "teller", "ledger", "ledger-primary.pg.svc", "5432")
    assert data["pgbouncer-uri"] == "postgresql://teller@ledger-pgbouncer.pg.svc:5432/ledger"
    # no users: PGO's default, the cluster's name for user and database
    (default,) = made(PERCONA).values()
    assert (default.name, default.data["dbname"]) == ("ledger-pguser-ledger", "ledger")
    # PMM on, no users: its monitor and the default user
    pmm = made(PERCONA.replace("  pmm:\n    enabled: false", "  pmm:\n    enabled: true"))
    assert sorted(pmm) == ["ledger-pguser-ledger", "ledger-pguser-monitor"]
    assert "dbname" not in pmm["ledger-pguser-monitor"].data


def test_exposed_services_of_a_perconapgcluster(tmp_path):
    text = PERCONA.replace("  postgresVersion: 18\n",
                           "  postgresVersion: 18\n  exposeReplicas:\n    type: LoadBalancer\n")
    write(tmp_path, {"k8s/ledger.yaml": text})
    _, budgets = budgets_of(tmp_path)
    assert budgets["ledger replicas"].exposed == [
        "PerconaPGCluster/pg/ledger exposeReplicas (type LoadBalancer, k8s/ledger.yaml:11)"]
    assert not budgets["ledger"].exposed


def test_a_service_selecting_the_percona_primary_pods(tmp_path):
    """Percona's pods carry PGO's labels, the leader's role `primary` (Patroni 4)."""
    service = """\
apiVersion: v1
kind: Service
metadata: {name: ledger-rw, namespace: pg}
spec:
  selector:
    postgres-operator.crunchydata.com/cluster: ledger
    postgres-operator.crunchydata.com/role: primary
"""
    write(tmp_path, {"k8s/ledger.yaml": PERCONA + "---\n" + service,
                     "k8s/api.yaml": client("ledger-rw")})
    _, budgets = budgets_of(tmp_path)
    assert "api" in [c.who for c in budgets["ledger"].contributions]


def test_the_fix_place_is_the_perconapgclusters_global_config():
    from advisor.rules._common import bouncer_key_place

    (p,) = entities(PERCONA).poolers
    assert bouncer_key_place(p, "idle_transaction_timeout") == (
        "spec.proxy.pgBouncer.config.global of PerconaPGCluster ledger")


# --- Read live: the PerconaPGCluster and the PostgresCluster it becomes --------------


def test_cluster_read_counts_the_perconapgcluster_once(tmp_path):
    """The API holds both the PerconaPGCluster and the upstream PostgresCluster the
    operator made of it (same name): one cluster, the files' budget."""
    pytest.importorskip("kubernetes")
    from ruamel.yaml import YAML

    from advisor.live.cluster import run_cluster_check
    from advisor.rules import load_rules
    from tests.fake_kube import fake_kube

    upstream = PGO.replace("GROUP", PERCONA_GROUP)
    docs = [YAML(typ="safe").load(PERCONA), YAML(typ="safe").load(upstream)]
    with fake_kube(docs, tmp_path) as kube:
        live = run_cluster_check(CheckOptions(), load_rules(), kubeconfig=str(kube.kubeconfig),
                                 context=None, namespaces=None)
    write(tmp_path / "files", {"ledger.yaml": PERCONA})
    files = run_check([str(tmp_path / "files")], CheckOptions())
    assert sorted((b.server, b.usable, b.peak) for b in live.budgets) == sorted(
        (b.server, b.usable, b.peak) for b in files.budgets) == [
        ("ledger", 95, 160), ("ledger replicas", 95, 0)]
