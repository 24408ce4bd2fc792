"""Operator resources and charts -> Servers, Poolers and service names, every number at
its resource line; PA110 on the standbys they produce."""

from __future__ import annotations

import re

import pytest

from advisor.model import EnvVar, Location, Source, Topology
from advisor.read.fs import Root
from advisor.read.sources.k8s import k8s_objects
from advisor.read.sources.operators import operator_entities
from advisor.read.sources.operators.common import host_forms, quantity
from advisor.read.sources.operators.containers import (
    bitnami_pgbouncer_databases,
    settings_from_bitnami_pgbouncer_env,
    settings_from_postgres_args,
)
from advisor.rule_context import RuleContext
from advisor.rules import load_rules
from tests.deploy_helpers import FIXTURES, REPO, line_no


def load(folder: str):
    root = FIXTURES / folder
    objects = []
    for path in sorted(root.rglob("*.yaml")):
        found, problems = k8s_objects(path.read_text(), path.relative_to(root).as_posix())
        assert not problems
        objects += found
    return root, objects


def server(entities, ident):
    return next(s for s in entities.servers if s.id == ident)


def pooler(entities, ident):
    return next(p for p in entities.poolers if p.id == ident)


def test_cnpg_cluster_and_poolers():
    root, objects = load("cnpg")
    e = operator_entities(objects)
    cluster = root / "k8s" / "cluster.yaml"
    primary = server(e, "cnpg:shop/orders-db")
    standby = server(e, "cnpg:shop/orders-db/replicas")
    assert primary.role == "primary" and primary.instances.value == 1
    assert standby.role == "standby" and standby.primary_id == primary.id
    assert standby.instances.value == 2  # instances: 3 = 1 primary + 2 replicas
    assert standby.instances.source.line == line_no(cluster, "instances: 3")
    mc = primary.settings["max_connections"]
    assert (mc.value, mc.source.path, mc.source.line) == (
        200, "k8s/cluster.yaml", line_no(cluster, 'max_connections: "200"'))
    assert primary.settings["shared_buffers"].value == 131072  # 1GB in 8kB pages
    assert primary.version.value == 16  # imageName tag
    assert primary.memory_limit.value == 4 * 1024**3
    rw = pooler(e, "cnpg-pooler:shop/orders-db-pooler-rw")
    assert rw.server_id == primary.id and rw.replicas.value == 2
    assert rw.settings["default_pool_size"].value == 25
    assert rw.settings["pool_mode"].value == "transaction"
    ro = pooler(e, "cnpg-pooler:shop/orders-db-pooler-ro")
    assert ro.server_id == standby.id
    assert e.services["orders-db-pooler-rw"] == ("pooler", rw.id)
    assert e.services["orders-db-pooler-ro.shop.svc.cluster.local"] == ("pooler", ro.id)
    assert e.services["orders-db-rw.shop"] == ("server", primary.id)
    assert e.services["orders-db-ro"] == ("server", standby.id)
    assert any("orders-db-r reaches every instance" in n for n in e.notices)


def test_cnpg_numbers_must_be_strings_and_names_must_exist():
    text = """apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: db
spec:
  instances: 1
  postgresql:
    parameters:
      max_connections: 300
      max_conections: "10"
      work_mem: "4mb"
"""
    objects, _ = k8s_objects(text, "c.yaml")
    e = operator_entities(objects)
    messages = [(p.location.line, p.message) for p in e.problems]
    assert (9, "CloudNativePG spec.postgresql.parameters needs string values: "
            "`max_connections: 300` is refused by the API server (write it quoted)") in messages
    assert (10, 'unrecognized configuration parameter "max_conections"') in messages
    assert any(line == 11 and 'invalid value for parameter "work_mem": "4mb"' in m
               for line, m in messages)
    assert e.services["db-ro"][1] == "cnpg:db"  # one instance: -ro falls back to it


def test_zalando_pooler_divides_max_db_connections():
    root, objects = load("zalando")
    e = operator_entities(objects)
    path = root / "k8s" / "postgresql.yaml"
    primary = server(e, "zalando:shop/acid-orders")
    assert primary.settings["max_connections"].value == 150
    assert server(e, "zalando:shop/acid-orders/replicas").instances.value == 1
    p = pooler(e, "zalando-pooler:shop/acid-orders-pooler")
    assert p.server_id == primary.id
    assert p.replicas.value == 3
    s = p.settings
    # 90 maxDBConnections // 3 pods = 30 per pod; pool 30 // 2 = 15; reserve 15 // 2 = 7;
    # the image's pgbouncer.ini.tmpl comments min_pool_size out: PgBouncer's 0
    assert (s["max_db_connections"].value, s["default_pool_size"].value,
            s["reserve_pool_size"].value) == (30, 15, 7)
    assert "min_pool_size" not in s
    assert s["max_db_connections"].source.line == line_no(path, "maxDBConnections: 90")
    assert s["max_client_conn"].value == 10000
    assert e.services["acid-orders-pooler.shop"] == ("pooler", p.id)
    assert e.services["acid-orders-repl"] == ("server", "zalando:shop/acid-orders/replicas")


def test_zalando_defaults_when_only_enabled():
    text = """apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: acid-min
spec:
  numberOfInstances: 1
  postgresql:
    version: "16"
  enableConnectionPooler: true
"""
    objects, _ = k8s_objects(text, "m.yaml")
    e = operator_entities(objects)
    [p] = e.poolers
    # default 60 // default 2 pods = 30 per pod, 15 pool, 7 reserve
    assert p.replicas.value == 2 and p.replicas.source.default
    assert p.settings["max_db_connections"].value == 30
    assert p.settings["default_pool_size"].value == 15
    assert p.settings["pool_mode"].value == "transaction"


def test_crunchy_cluster_and_pgbouncer():
    root, objects = load("crunchy")
    e = operator_entities(objects)
    path = root / "k8s" / "hippo.yaml"
    primary = server(e, "crunchy:zoo/hippo")
    assert primary.settings["max_connections"].value == 300
    assert primary.settings["max_connections"].source.line == line_no(path, "max_connections")
    assert primary.version.value == 16
    assert server(e, "crunchy:zoo/hippo/replicas").instances.value == 1
    p = pooler(e, "crunchy-pooler:zoo/hippo-pgbouncer")
    assert p.replicas.value == 2 and p.server_id == primary.id
    assert p.settings["default_pool_size"].value == 30
    assert [(d.name, d.host) for d in p.databases] == [("*", "hippo-primary")]
    assert e.services["hippo-pgbouncer.zoo.svc"] == ("pooler", p.id)


def test_bitnami_chart_values_give_primary_and_read_replicas():
    from advisor.read.render.helm import render_chart

    root = FIXTURES / "bitnami-values"
    for use_engine in (True, False):
        if use_engine:
            pytest.importorskip("helm_python")
        r = render_chart(Root.of(root), "charts/shop", values_files=["values-prod.yaml"],
                         release="shop", namespace="shop", use_engine=use_engine)
        e = operator_entities(r.objects, root=Root.of(root))
        prod = root / "charts" / "shop" / "values-prod.yaml"
        primary = server(e, "bitnami-postgresql:shop/shop-postgresql-primary")
        read = server(e, "bitnami-postgresql:shop/shop-postgresql-read")
        mc = primary.settings["max_connections"]
        assert (mc.value, mc.source.path, mc.source.line) == (
            500, "charts/shop/values-prod.yaml", line_no(prof := prod, "max_connections = 500"))
        assert read.role == "standby" and read.primary_id == primary.id
        assert read.instances.value == 2
        assert read.instances.source.line == line_no(prof, "replicaCount: 2")
        assert read.settings["max_connections"].value == 200
        assert e.services["shop-postgresql-primary"] == ("server", primary.id)


def test_bitnami_pgbouncer_env():
    env = tuple(EnvVar(name=n, value=v, source=Source(path="d.yaml", line=i))
                for i, (n, v) in enumerate([("PGBOUNCER_POOL_MODE", "transaction"),
                                            ("PGBOUNCER_DEFAULT_POOL_SIZE", "5"),
                                            ("PGBOUNCER_MAX_CLIENT_CONN", ""),
                                            ("POSTGRESQL_HOST", "postgres"),
                                            ("PGBOUNCER_DATABASE", "web")], start=10))
    s = settings_from_bitnami_pgbouncer_env(env)
    assert s["pool_mode"].value == "transaction" and s["pool_mode"].source.line == 10
    assert s["default_pool_size"].value == 5
    assert "max_client_conn" not in s  # empty: the image leaves PgBouncer's default
    assert s["ignore_startup_parameters"].value == "extra_float_digits"
    assert s["listen_port"].value == 6432 and s["listen_port"].source.default
    [db] = bitnami_pgbouncer_databases(env, Location(path="d.yaml"))
    assert (db.name, db.host, db.port, db.dbname) == ("web", "postgres", 5432, "web")


def test_postgres_container_args_each_at_its_line():
    root, objects = load("sidecar-pgbouncer")
    sts = next(o for o in objects if o.kind == "StatefulSet")
    settings, problems = settings_from_postgres_args(
        sts, ("spec", "template", "spec", "containers", 0))
    assert not problems
    path = root / "k8s" / "postgres.yaml"
    assert settings["max_connections"].value == 60
    assert settings["max_connections"].source.line == line_no(path, "max_connections=60")
    assert settings["shared_buffers"].value == 65536


def test_host_forms_and_quantities():
    assert host_forms("db", "ns") == ["db", "db.ns", "db.ns.svc", "db.ns.svc.cluster.local"]
    assert host_forms("db", None) == ["db"]
    assert quantity("2Gi") == 2 * 1024**3 and quantity("500m") == 0.5
    assert quantity("1G") == 1e9 and quantity("x") is None


def _blocks(page: str, heading: str) -> dict[str, str]:
    section = page.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    out = {}
    for block in re.findall(r"```[a-z]*\n(.*?)```", section, re.S):
        first, _, rest = block.partition("\n")
        out[first.removeprefix("# file:").strip()] = rest
    return out


def _pa110(files: dict[str, str]):
    objects = []
    for path, text in files.items():
        found, _ = k8s_objects(text, path)
        objects += found
    e = operator_entities(objects)
    registry = load_rules()
    r = registry.resolve("standby-below-primary")
    return list(r.func(Topology(servers=e.servers), RuleContext()))


def test_pa110_rule_page_bad_triggers_and_good_does_not():
    page = (REPO / "rules" / "PA110-standby-below-primary.md").read_text()
    [finding] = _pa110(_blocks(page, "Bad"))
    assert finding.code == "PA110" and finding.severity == "error"
    assert finding.location.path == "k8s/postgresql.yaml"
    assert finding.location.line == 15  # max_connections = 200 in the read ConfigMap
    assert "max_connections = 200" in finding.message and "500" in finding.message
    assert finding.fix.replacement.new == "500"
    assert _pa110(_blocks(page, "Good")) == []


def test_pa110_default_on_standby_counts_as_default():
    from advisor.model import Server, Setting, Term

    def srv(ident, role, settings, primary=None):
        return Server(id=ident, name=ident, version=Term(label="v", value=15,
                                                         source=Source(default="x")),
                      instances=Term(label="n", value=1, source=Source(default="x")),
                      location=Location(path=f"{ident}.yaml", line=1), role=role,
                      primary_id=primary, settings=settings)
    wal = Setting(name="max_wal_senders", raw="20", value=20,
                  source=Source(path="p.yaml", line=4))
    topo = Topology(servers=[srv("p", "primary", {"max_wal_senders": wal}),
                             srv("s", "standby", {}, "p")])
    registry = load_rules()
    [f] = registry.resolve("PA110").func(topo, RuleContext())
    # the standby runs with PostgreSQL 15's default max_wal_senders 10 < 20
    assert "max_wal_senders = 10 (default: PostgreSQL 15 default)" in f.message
    assert f.location.path == "s.yaml" and f.related[0].location.line == 4


def test_pooler_config_from_env_bitnami_and_edoburu():
    from advisor.read.sources.operators.containers import pooler_config_from_env

    def env(*pairs):
        return tuple(EnvVar(name=n, value=v, source=Source(path="p.yaml", line=i))
                     for i, (n, v) in enumerate(pairs, start=1))

    settings, [db] = pooler_config_from_env(env(("PGBOUNCER_DEFAULT_POOL_SIZE", "7"),
                                                ("POSTGRESQL_HOST", "db")))
    assert settings["default_pool_size"].value == 7 and db.host == "db"
    assert db.location.line == 2
    settings, [db] = pooler_config_from_env(env(("DB_HOST", "pg.prod"), ("DB_PORT", "6543"),
                                                ("POOL_MODE", "transaction"),
                                                ("MAX_DB_CONNECTIONS", "40")))
    assert (db.name, db.host, db.port) == ("*", "pg.prod", 6543)
    assert settings["pool_mode"].value == "transaction"
    assert settings["max_db_connections"].value == 40
    assert settings["max_db_connections"].source.line == 4
    settings, [db] = pooler_config_from_env(env(("DATABASE_URL",
                                                 "postgres://app@main-db:5432/shop"),))
    assert (db.name, db.host, db.dbname) == ("shop", "main-db", "shop")
    assert pooler_config_from_env(env(("FOO", "1"))) == ({}, [])


def test_crunchy_databases_and_users_override():
    text = """apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata:
  name: hippo
spec:
  postgresVersion: 15
  instances:
    - name: a
    - name: b
      replicas: 2
  proxy:
    pgBouncer:
      config:
        databases:
          app: host=hippo-primary port=5432 dbname=app pool_size=12 max_db_connections=40
        users:
          batch: pool_mode=session max_user_connections=5
"""
    objects, _ = k8s_objects(text, "h.yaml")
    e = operator_entities(objects)
    # instances: a (default 1) + b (2) = 3 pods: 1 primary, 2 replicas
    assert server(e, "crunchy:hippo/replicas").instances.value == 2
    [p] = e.poolers
    assert p.replicas.value == 1 and p.replicas.source.default  # PGO default
    [db] = p.databases
    assert (db.name, db.host, db.pool_size.value, db.max_db_connections.value) == (
        "app", "hippo-primary", 12, 40)
    assert db.location.line == 15
    [u] = p.users
    assert (u.name, u.pool_mode.value, u.max_user_connections.value) == ("batch", "session", 5)


CNPG_POOLER = """apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-rw}
spec:
  cluster: {name: pg}
  instances: 3
  type: rw
  pgbouncer:
    poolMode: transaction
"""


@pytest.mark.parametrize(("strategy", "expected"), [
    ("", (1, "CloudNativePG leaves the pooler Deployment's strategy")),
    ("  deploymentStrategy: {type: Recreate}\n", None),
    ("  deploymentStrategy:\n    rollingUpdate: {maxSurge: 2}\n", (2, None)),
    ("  deploymentStrategy:\n    rollingUpdate: {maxSurge: 50%}\n", (2, None)),
])
def test_operator_poolers_roll_out_with_kubernetes_surge(strategy, expected):
    """A pooler Deployment an operator makes rolls out like any other: CloudNativePG
    copies spec.deploymentStrategy (else none: Kubernetes' 25%), Zalando sets none,
    PGO sets RollingUpdate with maxUnavailable 0 and no maxSurge (25%). While it rolls,
    the new PgBouncer pods open their pools beside the old ones."""
    objects, _ = k8s_objects(CNPG_POOLER + strategy, "p.yaml")
    (p,) = operator_entities(objects).poolers
    if expected is None:
        assert p.surge is None
        return
    value, why = expected
    assert p.surge.value == value
    if why:
        assert p.surge.source.default and why in p.surge.source.default
    else:
        assert p.surge.source.line is not None and not p.surge.source.default


def test_zalando_and_crunchy_poolers_surge_by_the_kubernetes_default():
    _, objects = load("zalando")
    p = pooler(operator_entities(objects), "zalando-pooler:shop/acid-orders-pooler")
    assert p.surge.value == 1 and "Zalando operator sets no strategy" in p.surge.source.default
    _, objects = load("crunchy")
    p = pooler(operator_entities(objects), "crunchy-pooler:zoo/hippo-pgbouncer")
    assert p.replicas.value == 2 and p.surge.value == 1
    assert "maxUnavailable 0 and no maxSurge" in p.surge.source.default


@pytest.mark.parametrize(("resources", "expected", "said"), [
    ("  resources:\n    limits: {memory: 4Gi}\n", 136, "4096 MB memory limit (m.yaml:"),
    ("  resources:\n    limits: {memory: 1Gi}\n", 100, "1024 MB memory limit"),
    ("  resources:\n    limits: {memory: 64Gi}\n", 1000, "65536 MB memory limit"),
    ("", 100, "the operator's default_memory_limit as shipped"),
])
def test_zalando_max_connections_is_spilos_when_the_spec_sets_none(resources, expected, said):
    """Spilo writes max_connections = min(max(100, memory limit MB / 30), 1000) into
    Patroni's bootstrap parameters (configure_spilo.py) unless spec.postgresql.parameters
    sets one; autovacuum_max_workers 5."""
    text = ("apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata:\n  name: acid-min\n"
            "spec:\n  numberOfInstances: 1\n  postgresql:\n    version: \"16\"\n" + resources)
    objects, _ = k8s_objects(text, "m.yaml")
    (s,) = operator_entities(objects).servers
    assert s.settings["max_connections"].value == expected
    assert said in s.settings["max_connections"].source.default
    assert s.settings["autovacuum_max_workers"].value == 5
    given = text.replace('    version: "16"\n', '    version: "16"\n    parameters:\n'
                         '      max_connections: "250"\n')
    objects, _ = k8s_objects(given, "m.yaml")
    (s,) = operator_entities(objects).servers
    assert s.settings["max_connections"].value == 250  # the spec's parameter wins


ZALANDO_SECTION = """apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: acid-e
spec:
  numberOfInstances: 2
  postgresql:
    version: "17"
  connectionPooler: SECTION
"""


@pytest.mark.parametrize(("section", "poolers"), [("{}", 1), ("{mode: session}", 1), ("", 0)])
def test_zalando_a_connection_pooler_section_enables_it(section, poolers):
    """connection_pooler.go needMasterConnectionPoolerWorker: the section, even `{}`, starts
    the pooler when enableConnectionPooler is not set; `connectionPooler:` with nothing
    is null, no section (audit E: `{}` was read as no pooler, 66 connections missed)."""
    objects, _ = k8s_objects(ZALANDO_SECTION.replace("SECTION", section), "z.yaml")
    e = operator_entities(objects)
    assert len(e.poolers) == poolers


def test_zalando_pooler_image_ends_idle_transactions(tmp_path):
    """The operator's pooler image writes idle_transaction_timeout = 600
    (pooler/pgbouncer.ini.tmpl): PA504 does not fire for a Zalando pooler as shipped
    (audit E: a false warning, exit 1, on the operator's own minimal example)."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions

    text = ZALANDO_SECTION.replace("SECTION", "{}")
    objects, _ = k8s_objects(text, "z.yaml")
    [p] = operator_entities(objects).poolers
    setting = p.settings["idle_transaction_timeout"]
    assert setting.value == 600 and "pgbouncer.ini.tmpl" in setting.source.default
    (tmp_path / "z.yaml").write_text(text)
    codes = [f.code for f in run_check([str(tmp_path)], CheckOptions()).findings]
    assert "PA504" not in codes


CNPG_RO = """apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: pg}
spec:
  instances: 3
  imageName: ghcr.io/cloudnative-pg/postgresql:16
---
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-ro}
spec:
  cluster: {name: pg}
  instances: 3
  type: ro
  deploymentStrategy: {type: Recreate}
  pgbouncer:
    poolMode: transaction
    parameters: {default_pool_size: "SIZE"}
"""


@pytest.mark.parametrize(("size", "pa105"), [("20", False), ("40", True)])
def test_a_read_only_pooler_is_weighed_per_replica(tmp_path, size, pa105):
    """3 PgBouncer pods x 2 pools of default_pool_size (the clients' and the auth_query
    pool of (postgres, cnpg_pooler_pgbouncer), which the lookups run on the same -ro
    host) on the two replicas behind pg-ro: PA105 weighs each replica's share, as the
    budget does (audit E: '100 server connections > 97' while the same budget said 50
    per instance and fits). 3 x (20 + 20) = 120, 60 each; 3 x (40 + 40) = 240, 120 each
    > 97."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions

    (tmp_path / "pg.yaml").write_text(CNPG_RO.replace("SIZE", size))
    found = [f for f in run_check([str(tmp_path)], CheckOptions()).findings
             if f.code == "PA105"]
    assert bool(found) == pa105
    if pa105:
        # no client in the repository: one pair is a floor (audit 8a D4)
        assert found[0].message.startswith("pg-ro: at least 240 server connections (120 on "
                                           "each of 2 instances) > 97 usable on pg replicas")


def test_an_operator_cluster_not_read_is_said(tmp_path):
    """A Kubegres cluster is not read: a PA901 warning names it (exit 1), never a silent
    'no PostgreSQL server found' and exit 0 (audit E: percona-helm-charts' pg-db; session
    21: StackGres' and Kubegres' examples exited 0 with a notice)."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions

    (tmp_path / "pg.yaml").write_text(
        "apiVersion: kubegres.reactive-tech.io/v1\nkind: Kubegres\nmetadata: {name: pg}\n"
        "spec:\n  replicas: 3\n  image: postgres:16.2\n")
    result = run_check([str(tmp_path)], CheckOptions())
    assert result.budgets == []
    (finding,) = [f for f in result.findings if f.code == "PA901"]
    assert finding.severity.value == "warning" and finding.location.label() == "pg.yaml:1"
    assert finding.message.startswith("Kubegres/pg is a PostgreSQL cluster of Kubegres, "
                                      "which this tool does not read")
    from tests.cli_helpers import run_cli

    done = run_cli("check", str(tmp_path), "--no-cache")
    assert done.returncode == 1 and "PA901" in done.stdout, done.stdout + done.stderr


PGO_DATABASES = """apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata: {name: hippo}
spec:
  postgresVersion: 16
  instances: [{name: a, replicas: 3}]
  proxy:
    pgBouncer:
      replicas: 2
      config:
        global: {pool_mode: transaction}
        databases:
          app: "host=HOST port=5432 dbname=app pool_size=40"
"""


@pytest.mark.parametrize(("host", "where"), [
    ("hippo-replicas", "hippo replicas"), ("hippo-primary", "hippo"), ("db.example.com", None)])
def test_pgo_database_entries_lead_where_their_host_says(tmp_path, host, where):
    """PGO's config.databases replaces the `*` entry to the primary: each entry connects
    where its host says (audit E: an entry to hippo-replicas was charged to the primary,
    'OVER by 13' where 64 per replica fits); a host the repository lacks is said."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions

    (tmp_path / "pg.yaml").write_text(PGO_DATABASES.replace("HOST", host))
    result = run_check([str(tmp_path)], CheckOptions())
    charged = [b.server for b in result.budgets
               if any(c.who == "hippo-pgbouncer" for c in b.contributions)]
    assert charged == ([where] if where else [])
    if where is None:
        assert any(n.startswith("hippo-pgbouncer: its database entries lead to no server of "
                                "the repository (db.example.com)") for n in result.notices)


def test_a_cluster_over_its_memory_limit_is_one_pa301_for_primary_and_standbys(tmp_path):
    """theepicsaxguy/homelab: each CloudNativePG Cluster of 2 instances gave two PA301
    at one line, for its primary and its replicas, which share settings and limit."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions

    (tmp_path / "db.yaml").write_text(
        "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: photos}\n"
        "spec:\n  instances: 2\n  imageName: ghcr.io/cloudnative-pg/postgresql:17.7\n"
        "  resources:\n    limits: {memory: 1Gi}\n"
        "  postgresql:\n    parameters: {max_connections: '100', work_mem: '4MB'}\n")
    result = run_check([str(tmp_path)], CheckOptions(select=["PA301"]))
    assert len(result.budgets) == 2
    (f,) = [f for f in result.findings if f.code == "PA301"]
    assert f.message.startswith("photos (and photos replicas): worst-case memory ")


# Patroni (patroni/config.py _process_postgresql_parameters) drops a max_connections below
# 25 from its dynamic configuration and runs PostgreSQL with its default 100; both the
# Zalando operator (bootstrap.dcs) and PGO (the DCS) put the parameters there.
ZALANDO_LOW = """apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: acid-low
  namespace: shop
spec:
  numberOfInstances: 1
  postgresql:
    version: "17"
    parameters:
      max_connections: "{mc}"
      max_wal_senders: "2"
  resources:
    limits:
      memory: 12Gi
  connectionPooler:
    numberOfInstances: 2
"""


def test_zalando_max_connections_below_patroni_floor_runs_patroni_default():
    objects, _ = k8s_objects(ZALANDO_LOW.format(mc=10), "acid.yaml")
    e = operator_entities(objects)
    primary = server(e, "zalando:shop/acid-low")
    mc = primary.settings["max_connections"]
    # Patroni's default 100, not the 10 written, nor Spilo's 12288 MB / 30 = 409 (the
    # operator's value replaced Spilo's before Patroni dropped it)
    assert mc.value == 100 and mc.source.path is None
    assert "acid.yaml:11" in mc.source.default and "minimum 25" in mc.source.default
    assert primary.settings["max_wal_senders"].value == 10  # floor 3
    assert any("max_connections = 10" in n and "defaulting to 100" in n for n in e.notices)
    # at the floor and above the value stands, at its line
    objects, _ = k8s_objects(ZALANDO_LOW.format(mc=25), "acid.yaml")
    mc = server(operator_entities(objects), "zalando:shop/acid-low").settings["max_connections"]
    assert (mc.value, mc.source.line) == (25, 11)


def test_crunchy_config_parameters_over_patroni_section():
    text = """apiVersion: postgres-operator.crunchydata.com/v1
kind: PostgresCluster
metadata:
  name: shop
spec:
  postgresVersion: 17
  config:
    parameters:
      max_connections: 300
  patroni:
    dynamicConfiguration:
      postgresql:
        parameters:
          max_connections: 200
          work_mem: 8MB
  instances:
    - name: set1
"""
    objects, _ = k8s_objects(text, "pc.yaml")
    primary = server(operator_entities(objects), "crunchy:shop")
    mc = primary.settings["max_connections"]
    # PGO generatePostgresParameters: config.parameters over the Patroni section
    assert (mc.value, mc.source.path, mc.source.line) == (300, "pc.yaml", 9)
    assert primary.settings["work_mem"].value == 8192  # the Patroni section's own, kB


def test_crunchy_max_connections_below_patroni_floor():
    text = """apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata:
  name: shop
spec:
  postgresVersion: 16
  patroni:
    dynamicConfiguration:
      postgresql:
        parameters:
          max_connections: 20
  instances:
    - name: set1
"""
    objects, _ = k8s_objects(text, "pc.yaml")
    e = operator_entities(objects)
    mc = server(e, "crunchy:shop").settings["max_connections"]
    assert mc.value == 100 and "pc.yaml:11" in mc.source.default
    assert any(n.startswith("crunchy: ") and "defaulting to 100" in n for n in e.notices)


ZALANDO_JDBC = """apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: acid-shop
  namespace: shop
spec:
  numberOfInstances: 2
  postgresql:
    version: "17"
  connectionPooler:
    numberOfInstances: 2{image}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: {{app: orders}}
  template:
    metadata:
      labels: {{app: orders}}
    spec:
      containers:
        - name: orders
          image: example.org/orders:1.0
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://acid-shop-pooler.shop:5432/orders
"""


def test_zalando_default_pooler_image_tracks_prepared_statements(tmp_path):
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions

    objects, _ = k8s_objects(ZALANDO_JDBC.format(image=""), "shop.yaml")
    p = pooler(operator_entities(objects), "zalando-pooler:shop/acid-shop-pooler")
    # the operator's image (pooler/pgbouncer.ini.tmpl), PgBouncer built from the newest tag
    assert (p.version.major, p.version.minor) == (1, 25) and p.version.source.default
    mps = p.settings["max_prepared_statements"]
    assert mps.value == 200 and "pgbouncer.ini.tmpl" in mps.source.default
    assert p.settings["ignore_startup_parameters"].value == "extra_float_digits,options"
    # pgjdbc's prepareThreshold 5 through it in transaction mode: tracked, no PA405
    (tmp_path / "shop.yaml").write_text(ZALANDO_JDBC.format(image=""))
    r = run_check([tmp_path], CheckOptions(root=tmp_path))
    assert "PA405" not in {f.code for f in r.findings}
    # an image of the user's own: version and template unknown, PA405 stands
    own = "\n    dockerImage: example.org/pgbouncer:custom"
    objects, _ = k8s_objects(ZALANDO_JDBC.format(image=own), "shop.yaml")
    p = pooler(operator_entities(objects), "zalando-pooler:shop/acid-shop-pooler")
    assert "max_prepared_statements" not in p.settings
    (tmp_path / "shop.yaml").write_text(ZALANDO_JDBC.format(image=own))
    r = run_check([tmp_path], CheckOptions(root=tmp_path))
    assert "PA405" in {f.code for f in r.findings}


CNPG_IMAGES = """apiVersion: postgresql.cnpg.io/v1
kind: ImageCatalog
metadata:
  name: shop-images
  namespace: shop
spec:
  images:
    - major: 17
      image: ghcr.io/cloudnative-pg/postgresql:17.6
  componentImages:
    - key: bouncer
      image: ghcr.io/cloudnative-pg/pgbouncer:1.24.1
---
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: pg
  namespace: shop
spec:
  instances: 1
  imageCatalogRef:
    {{apiGroup: postgresql.cnpg.io, kind: ImageCatalog, name: shop-images, major: 17}}
---
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata:
  name: pg-rw
  namespace: shop
spec:
  cluster: {{name: pg}}
  instances: 2
  type: rw
  pgbouncer:
    poolMode: transaction
{pgbouncer}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
  namespace: shop
spec:
  replicas: 1
  selector:
    matchLabels: {{app: orders}}
  template:
    metadata:
      labels: {{app: orders}}
    spec:
      containers:
        - name: orders
          image: example.org/orders:1.0
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://pg-rw.shop:5432/app
"""


@pytest.mark.parametrize(("pgbouncer", "expect"), [
    # CloudNativePG 1.30 PgBouncerSpec.ImageCatalogRef: the catalog's component image
    ("    imageCatalogRef: {apiGroup: postgresql.cnpg.io, kind: ImageCatalog, "
     "name: shop-images, key: bouncer}", (1, 24, "spec.yaml", 12)),
    # PgBouncerSpec.Image
    ("    image: ghcr.io/cloudnative-pg/pgbouncer:1.25.1", (1, 25, "spec.yaml", 35)),
])
def test_cnpg_pooler_image_from_spec_or_catalog(pgbouncer, expect, tmp_path):
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions

    text = CNPG_IMAGES.format(pgbouncer=pgbouncer)
    objects, _ = k8s_objects(text, "spec.yaml")
    p = pooler(operator_entities(objects), "cnpg-pooler:shop/pg-rw")
    v = p.version
    assert (v.major, v.minor, v.source.path, v.source.line) == expect
    # max_prepared_statements defaults to 200 from 1.24: pgjdbc's prepared statements
    # through the transaction pooler are tracked, no PA405
    (tmp_path / "spec.yaml").write_text(text)
    r = run_check([tmp_path], CheckOptions(root=tmp_path))
    assert "PA405" not in {f.code for f in r.findings}


# --- auth_query pools (src/client.c start_auth_query; tests/test_pgbouncer_auth_oracle) ---


def _auth_parts(p):
    from advisor.facts.pgbouncer import server_side_max

    budget = server_side_max(p, None)
    return budget, {part.who: part for db in budget.parts for part in db.parts
                    if "auth_query lookups" in part.note}


def test_cnpg_pooler_auth_pool_is_postgres_as_cnpg_pooler_pgbouncer():
    text = """apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-rw, namespace: shop}
spec:
  cluster: {name: pg}
  instances: 2
  pgbouncer:
    image: ghcr.io/cloudnative-pg/pgbouncer:1.25.1
    parameters: {default_pool_size: "30"}
"""
    objects, _ = k8s_objects(text, "pooler.yaml")
    [p] = operator_entities(objects).poolers
    s = p.settings
    assert (s["auth_user"].value, s["auth_dbname"].value) == ("cnpg_pooler_pgbouncer",
                                                              "postgres")
    assert "PGBouncerPoolerUserName" in s["auth_user"].source.default
    assert "PoolerAuthDBName" in s["auth_dbname"].source.default
    budget, parts = _auth_parts(p)
    # the clients' pool (the * fallback) and the lookups' (postgres, cnpg_pooler_pgbouncer),
    # both default_pool_size 30, reserve 0: 2 pods x 60
    assert list(parts) == ["postgres/cnpg_pooler_pgbouncer"]
    assert parts["postgres/cnpg_pooler_pgbouncer"].total == 30
    assert "auth_dbname postgres" in parts["postgres/cnpg_pooler_pgbouncer"].note
    assert budget.total == 2 * 60
    # an auth query Secret of the user's own: its username, at that line
    objects, _ = k8s_objects(text + "    authQuerySecret: {name: pooler-auth}\n",
                             "pooler.yaml")
    [p] = operator_entities(objects).poolers
    assert p.settings["auth_user"].source.line == 10


def test_zalando_auth_pool_is_postgres_as_pooler_capped_per_database():
    root, objects = load("zalando")
    p = pooler(operator_entities(objects), "zalando-pooler:shop/acid-orders-pooler")
    # pooler/pgbouncer.ini.tmpl: `*` and `postgres` with auth_user=$PGUSER, auth_dbname
    # postgres; max_db_connections 30 per pod caps each database on its own
    assert [(d.name, d.auth_user.value) for d in p.databases] == [("*", "pooler"),
                                                                  ("postgres", "pooler")]
    assert p.settings["auth_dbname"].value == "postgres"
    budget, parts = _auth_parts(p)
    assert parts["postgres/pooler"].total == 15 + 7
    assert budget.total == 3 * (22 + 22)
    # spec.connectionPooler.user names the pooler user; a dockerImage of one's own has
    # its own template: no lookups known
    text = (root / "k8s" / "postgresql.yaml").read_text()
    objects, _ = k8s_objects(text.replace("connectionPooler:",
                                          "connectionPooler:\n    user: bouncer", 1),
                             "p.yaml")
    p = pooler(operator_entities(objects), "zalando-pooler:shop/acid-orders-pooler")
    assert list(_auth_parts(p)[1]) == ["postgres/bouncer"]
    objects, _ = k8s_objects(text.replace("connectionPooler:",
                                          "connectionPooler:\n    dockerImage: my/pgb:1", 1),
                             "p.yaml")
    p = pooler(operator_entities(objects), "zalando-pooler:shop/acid-orders-pooler")
    assert _auth_parts(p)[1] == {}


def test_crunchy_auth_pool_is_each_client_database_as_crunchypgbouncer():
    root, objects = load("crunchy")
    p = pooler(operator_entities(objects), "crunchy-pooler:zoo/hippo-pgbouncer")
    assert p.settings["auth_user"].value == "_crunchypgbouncer"
    assert "auth_dbname" not in p.settings
    from advisor.facts.pgbouncer import server_side_max

    budget = server_side_max(p, [("shop", "app"), ("shop", "etl"), ("crm", "app")])
    pools = {part.who: part.total for db in budget.parts for part in db.parts}
    # one lookup pool per client database, in that database (PGO sets no auth_dbname)
    assert pools == {"shop/app": 30, "shop/etl": 30, "crm/app": 30,
                     "shop/_crunchypgbouncer": 30, "crm/_crunchypgbouncer": 30}
    assert budget.total == 2 * 150
    # config.global's auth_user wins over PGO's
    text = (root / "k8s" / "hippo.yaml").read_text()
    assert "        global:\n" in text
    objects, _ = k8s_objects(text.replace("        global:\n",
                                          "        global:\n          auth_user: lookup\n", 1),
                             "h.yaml")
    p = pooler(operator_entities(objects), "crunchy-pooler:zoo/hippo-pgbouncer")
    assert (p.settings["auth_user"].value, p.settings["auth_user"].source.path) == (
        "lookup", "h.yaml")


@pytest.mark.parametrize(("image", "version"), [
    ("registry.developers.crunchydata.com/crunchydata/crunchy-pgbouncer:ubi8-1.23-0", (1, 23)),
    ("registry.developers.crunchydata.com/crunchydata/crunchy-pgbouncer:ubi9-1.24-1", (1, 24)),
    ("registry.developers.crunchydata.com/crunchydata/crunchy-pgbouncer:centos8-1.15-3",
     (1, 15)),
    ("docker.io/bitnami/pgbouncer:1.22.1-debian-12-r3", (1, 22)),
    ("ghcr.io/cloudnative-pg/pgbouncer:v1.25.1", (1, 25)),
])
def test_a_pgbouncer_image_tag_names_its_version(image, version):
    """Crunchy's tags put the base image first (ubi8-1.23-0): read as no version, PGO's
    pgBouncer was taken for 1.18 (before prepared-statement tracking, 1.21)."""
    from advisor.read.sources.operators.common import bouncer_version

    (obj,), _ = k8s_objects(f"kind: X\nmetadata: {{name: x}}\nspec: {{image: '{image}'}}\n",
                            "x.yaml")
    found = bouncer_version(obj, ("spec", "image"))
    assert (found.major, found.minor) == version


CNPG_SCALED_POOLER = """apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-rw, namespace: shop}
spec:
  cluster: {name: pg}
  instances: INSTANCES
  pgbouncer:
    poolMode: transaction
---
SCALER
"""

HPA_ON_POOLER = """apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: pg-rw-hpa, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: postgresql.cnpg.io/v1, kind: Pooler, name: pg-rw}
  minReplicas: 4
  maxReplicas: 12
"""

KEDA_ON_POOLER = """apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: pg-rw-keda, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: postgresql.cnpg.io/v1, kind: Pooler, name: pg-rw}
  maxReplicaCount: 30
"""


@pytest.mark.parametrize(("instances", "scaler", "pods", "surge", "said"), [
    # below the HPA's minimum: the HPA raises it (minReplicas, line 15 of the text)
    (2, HPA_ON_POOLER, 4, 1, "raised to its minimum"),
    # within the bounds: the HPA cannot scale a Pooler on metrics, so not 12
    (6, HPA_ON_POOLER, 6, 2, "within its bounds (4 to 12)"),
    # above the maximum: lowered to it
    (20, HPA_ON_POOLER, 12, 3, "lowered to its maximum"),
    # an HPA leaves a target at 0 alone
    (0, HPA_ON_POOLER, 0, 0, "left at 0"),
    # KEDA: its HPA's minimum is 1 without minReplicaCount, and KEDA activates a 0
    (0, KEDA_ON_POOLER, 1, 1, "raised to its minimum"),
    (3, KEDA_ON_POOLER, 3, 1, "within its bounds (1 to 30)"),
])
def test_an_autoscaled_pooler_moves_only_into_its_autoscalers_bounds(
        instances, scaler, pods, surge, said):
    """A Pooler's scale subresource (specpath .spec.instances) serves no selector, so an
    HPA (or the one KEDA makes) targeting it computes no metric ("the HPA target's scale
    is missing a selector"): it only moves spec.instances into [minReplicas,
    maxReplicas]. The pods are counted so, with the rollout surge of that count, and a
    notice says why the maximum is not reached (audit 6b D3 counted it at its maximum)."""
    text = CNPG_SCALED_POOLER.replace("INSTANCES", str(instances)).replace("SCALER", scaler)
    objects, _ = k8s_objects(text, "p.yaml")
    e = operator_entities(objects)
    (p,) = e.poolers
    assert p.replicas.value == pods
    assert (p.surge.value if p.surge else 0) == surge
    if pods > instances and scaler is HPA_ON_POOLER:
        assert p.replicas.source.line == 15 and not p.replicas.source.default
    elif pods > instances:
        assert "minReplicas 1" in p.replicas.source.default
    [notice] = [n for n in e.notices if "is scaled by" in n]
    assert said in notice and "missing a selector" in notice
    assert notice.endswith(f"it would reach {12 if scaler is HPA_ON_POOLER else 30}")


@pytest.mark.parametrize("scaler", [
    # no API group: the HPA looks Pooler up in the core group, KEDA assumes apps/v1
    HPA_ON_POOLER.replace("apiVersion: postgresql.cnpg.io/v1, ", ""),
    # another namespace's Pooler of that name
    HPA_ON_POOLER.replace("namespace: shop", "namespace: other"),
    # another kind
    HPA_ON_POOLER.replace("kind: Pooler", "kind: Cluster"),
])
def test_an_autoscaler_of_something_else_leaves_the_pooler_as_written(scaler):
    text = CNPG_SCALED_POOLER.replace("INSTANCES", "2").replace("SCALER", scaler)
    objects, _ = k8s_objects(text, "p.yaml")
    e = operator_entities(objects)
    (p,) = e.poolers
    assert p.replicas.value == 2 and p.replicas.source.line == 6
    assert not [n for n in e.notices if "is scaled by" in n]


def test_cnpg_writes_its_own_defaults_where_the_parameters_do_not():
    """CloudNativePG writes max_worker_processes 32 unless spec.postgresql.parameters
    sets it (CnpConfigurationSettings.GlobalDefaultSettings; audit 6b D10: PostgreSQL's 8
    was printed); a parameter given wins."""
    text = ("apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: db}\n"
            "spec:\n  instances: 1\n  postgresql:\n    parameters:\n"
            "      max_parallel_workers: \"4\"\n")
    objects, problems = k8s_objects(text, "k8s/db.yaml")
    assert not problems
    (primary,) = operator_entities(objects).servers
    workers = primary.settings["max_worker_processes"]
    assert workers.value == 32 and "CloudNativePG default" in (workers.source.default or "")
    assert primary.settings["max_parallel_workers"].value == 4


ZALANDO_CLUSTER_ONLY = """apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: acid-shop
  namespace: shop
spec:
  numberOfInstances: 2
  postgresql:
    version: "16"
  enableConnectionPooler: true
"""

ZALANDO_OPERATOR_CRD = """apiVersion: acid.zalan.do/v1
kind: OperatorConfiguration
metadata:
  name: postgresql-operator-configuration
  namespace: postgres-operator
configuration:
  postgres_pod_resources:
    default_memory_limit: 6Gi
  connection_pooler:
    connection_pooler_number_of_instances: 1
    connection_pooler_max_db_connections: 200
    connection_pooler_mode: session
    connection_pooler_user: bouncer
"""

ZALANDO_OPERATOR_CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: postgres-operator
  namespace: postgres-operator
data:
  connection_pooler_number_of_instances: "3"
  connection_pooler_max_db_connections: "240"
"""


def test_zalando_pooler_and_memory_defaults_come_from_the_operator_configuration():
    """A manifest that leaves the pooler's size out runs the operator configuration's
    (operator_config.go importConfigurationFromCRD at v2.0.1): 200 // max(1, 2) pods =
    100 per pod, pool 50, reserve 25, session mode, auth_user `bouncer`; and Spilo sizes
    max_connections from its default_memory_limit: 6144 MB / 30 = 204. Shipped defaults
    (60 // 2 = 30, 100) undercounted both."""
    objects, _ = k8s_objects(ZALANDO_CLUSTER_ONLY + "---\n" + ZALANDO_OPERATOR_CRD, "m.yaml")
    e = operator_entities(objects)
    p = pooler(e, "zalando-pooler:shop/acid-shop-pooler")
    assert p.replicas.value == 2  # CRD-based: util.MaxInt32(1, 2)
    s = p.settings
    assert (s["max_db_connections"].value, s["default_pool_size"].value,
            s["reserve_pool_size"].value) == (100, 50, 25)
    assert s["pool_mode"].value == "session"
    whole = ZALANDO_CLUSTER_ONLY + "---\n" + ZALANDO_OPERATOR_CRD
    assert s["pool_mode"].source.line == line_no_text(whole, "connection_pooler_mode")
    assert p.databases[0].auth_user.value == "bouncer"
    primary = server(e, "zalando:shop/acid-shop")
    assert primary.settings["max_connections"].value == 204
    assert "6144 MB memory limit" in primary.settings["max_connections"].source.default


def test_zalando_configmap_configuration_and_the_manifest_over_it():
    objects, _ = k8s_objects(ZALANDO_CLUSTER_ONLY + "---\n" + ZALANDO_OPERATOR_CONFIGMAP,
                             "m.yaml")
    p = operator_entities(objects).poolers[0]
    # ConfigMap-based: no floor of 2; 240 // 3 = 80 per pod
    assert p.replicas.value == 3 and p.settings["max_db_connections"].value == 80
    assert p.settings["pool_mode"].value == "transaction"  # not configured: shipped
    given = ZALANDO_CLUSTER_ONLY.replace("  enableConnectionPooler: true\n",
                                         "  connectionPooler:\n    numberOfInstances: 2\n"
                                         "    maxDBConnections: 60\n")
    objects, _ = k8s_objects(given + "---\n" + ZALANDO_OPERATOR_CONFIGMAP, "m.yaml")
    p = operator_entities(objects).poolers[0]
    assert p.replicas.value == 2 and p.settings["max_db_connections"].value == 30


def line_no_text(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


ZALANDO_OPERATOR_HELMRELEASE = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: postgres-operator
  namespace: database
spec:
  chart:
    spec:
      chart: postgres-operator
      version: 1.14.0
      sourceRef: {kind: HelmRepository, name: zalando}
  values:
    configConnectionPooler:
      connection_pooler_max_db_connections: 120
    configPostgresPodResources:
      default_memory_limit: 4Gi
"""


def test_zalando_operator_configuration_from_its_helmrelease_values():
    """The chart not rendered (a remote chart): its values configConnectionPooler and
    configPostgresPodResources are the operator's configuration (configTarget
    OperatorConfigurationCRD by default): 120 // 2 = 60 per pod; 4096 MB / 30 = 136."""
    objects, _ = k8s_objects(ZALANDO_CLUSTER_ONLY + "---\n" + ZALANDO_OPERATOR_HELMRELEASE,
                             "m.yaml")
    e = operator_entities(objects)
    p = e.poolers[0]
    assert p.replicas.value == 2 and p.settings["max_db_connections"].value == 60
    assert server(e, "zalando:shop/acid-shop").settings["max_connections"].value == 136


PGO_CLUSTER = """apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata:
  name: hippo
spec:
  postgresVersion: 16
  instances:
    - name: a
  proxy:
    pgBouncer:
      replicas: 2
"""


@pytest.mark.parametrize(("install", "expected", "floor"), [
    # a Flux OCIRepository of the pgo chart (the chart's version is the operator's)
    ("""apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: pgo
spec:
  ref:
    tag: 5.8.5
  url: oci://registry.developers.crunchydata.com/crunchydata/pgo
""", (1, 24), False),
    # a HelmRelease of the pgo chart from a HelmRepository
    ("""apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: crunchy-postgres-operator
spec:
  chart:
    spec:
      chart: pgo
      version: 5.8.7
""", (1, 25), False),
    # the operator's own Deployment (kustomize install)
    ("""apiVersion: apps/v1
kind: Deployment
metadata:
  name: pgo
spec:
  template:
    spec:
      containers:
        - name: operator
          image: registry.developers.crunchydata.com/crunchydata/postgres-operator:ubi8-5.7.9-0
""", (1, 24), False),
    # 5.6/5.7 before 5.7.9: 1.22 or 1.23, at least 1.22
    ("""apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: pgo
spec:
  chart:
    spec:
      chart: pgo
      version: 5.7.2
""", (1, 22), True),
])
def test_crunchy_pgbouncer_version_from_the_pgo_release(install, expected, floor):
    """proxy.pgBouncer names no image: PgBouncer's version is that of the image the
    installed PGO release runs (its RELATED_IMAGE_PGBOUNCER), cited there, not the generic
    Debian 1.18 assumption (audit 13c D3: PGO 5.8.5 runs 1.24, where
    max_prepared_statements is on by default)."""
    objects, _ = k8s_objects(PGO_CLUSTER + "---\n" + install, "k.yaml")
    [p] = operator_entities(objects).poolers
    assert (p.version.major, p.version.minor) == expected
    assert not p.version.assumed and p.version.floor is floor
    assert p.version.source.path == "k.yaml" and p.version.source.line > 12
    assert ("at least" in p.version.cite()) is floor


def test_crunchy_pgbouncer_version_image_or_unknown_release():
    """The cluster's own image wins over the release; an unknown or older release keeps
    the named assumption."""
    image = "registry.developers.crunchydata.com/crunchydata/crunchy-pgbouncer:ubi8-1.21-3"
    objects, _ = k8s_objects(PGO_CLUSTER + f"      image: {image}\n" + """---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: pgo
spec:
  ref:
    tag: 5.8.5
  url: oci://registry.developers.crunchydata.com/crunchydata/pgo
""", "k.yaml")
    [p] = operator_entities(objects).poolers
    assert (p.version.major, p.version.minor) == (1, 21)
    for install in ("", """---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: pgo
spec:
  chart:
    spec:
      chart: pgo
      version: 5.3.1
"""):
        objects, _ = k8s_objects(PGO_CLUSTER + install, "k.yaml")
        [p] = operator_entities(objects).poolers
        assert p.version.assumed
