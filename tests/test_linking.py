"""Linking as the cluster resolves it (issue 12 items 3 and 4): host forms of objects
without a namespace, configuration files read from Secrets and projected volumes,
operator-made Secrets, PgBouncer `*` fallbacks, and which containers are servers."""

from __future__ import annotations

import base64
import textwrap
from pathlib import Path

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.model import Container, Source
from advisor.read.workloads import is_postgres_container, postgres_arguments
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write


def web(host: str, size: int = 7, replicas: int = 3, extra: str = "") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: app
          image: acme/web:1
          env:
            - {{name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://{host}:5432/shop"}}
            - {{name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "{size}"}}
{extra}"""


def budget_of(root: Path, **options):
    result = run_check([str(root)], CheckOptions(**options))
    return result, {b.server: b for b in result.budgets}


@pytest.mark.parametrize("host", ["db", "db.default", "db.default.svc",
                                  "db.default.svc.cluster.local", "DB.default.svc.cluster.local."])
def test_host_forms_of_objects_without_namespace(tmp_path, host):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": web(host)})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 3 * 7, result.notices


def test_namespace_option_is_where_unnamespaced_objects_live(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": web("db.shop.svc.cluster.local")})
    _, budgets = budget_of(tmp_path, namespace="shop")
    assert budgets["db"].peak == 21
    write(tmp_path, {"k8s/web.yaml": web("db.default.svc")})
    result, budgets = budget_of(tmp_path, namespace="shop")
    assert budgets["db"].peak == 0  # db lives in shop, not default
    (unlinked,) = [f for f in result.findings if f.code == "PA107"]
    assert "'db.default.svc'" in unlinked.message
    assert not [f for f in result.findings if f.code == "PA106"]  # in no budget: PA107's


def test_other_namespace_does_not_match(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": web("db.other.svc")})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 0
    assert any("'db.other.svc'" in f.message for f in result.findings if f.code == "PA107")


def _in(namespace: str, manifest: str) -> str:
    """`manifest` (web's) with the namespace written out."""
    meta = f"metadata: {{name: web, namespace: {namespace}}}"
    return manifest.replace("metadata: {name: web}", meta)


def test_a_bare_name_is_looked_up_in_the_pods_namespace_only(tmp_path):
    """Cluster DNS resolves `db` as db.<the pod's namespace>: a pod of staging does not
    reach the Service db of the default namespace (where a manifest without a
    namespace is applied) by its bare name (audit: bank-of-anthos's staging overlays
    were charged to the quickstart's ledger-db)."""
    staging = _in("staging", web("db"))
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": staging})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 0
    assert any("'db'" in f.message for f in result.findings if f.code == "PA107")
    # in the default namespace, written out or not, it does
    write(tmp_path, {"k8s/web.yaml": _in("default", web("db"))})
    assert budget_of(tmp_path)[1]["db"].peak == 21
    # and a Service of the pod's own namespace is the one reached
    staging_db = DB.replace("metadata: {name: db}", "metadata: {name: db, namespace: staging}")
    write(tmp_path, {"k8s/web.yaml": staging, "k8s/staging-db.yaml": staging_db})
    _, budgets = budget_of(tmp_path)
    assert {b.server_id: b.peak for b in budgets.values()} == {
        "StatefulSet/db": 0, "StatefulSet/staging/db": 21}


def _config_client(namespace: str | None) -> str:
    client = _in(namespace, web("unused")) if namespace else web("unused")
    return client.replace(
        '          env:\n            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://'
        'unused:5432/shop"}\n', "          envFrom: [{configMapRef: {name: db-config}}]\n"
        "          env:\n")


def _config_map(namespace: str | None) -> str:
    meta = f"{{name: db-config, namespace: {namespace}}}" if namespace else "{name: db-config}"
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {meta}
data: {{SPRING_DATASOURCE_URL: "jdbc:postgresql://db.default.svc:5432/shop"}}
"""


@pytest.mark.parametrize(("pod", "config", "peak"), [
    ("staging", None, 0), ("staging", "staging", 21), (None, None, 21),
    (None, "default", 21), ("default", None, 21), ("staging", "default", 0)])
def test_env_from_reads_the_configmap_of_the_pods_namespace(tmp_path, pod, config, peak):
    """A pod reads the ConfigMaps of its own namespace; one without a namespace is
    where kubectl applies it, the default namespace, and no other (audit:
    bank-of-anthos's staging pods read the quickstart's ledger-db-config)."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": _config_client(pod),
                     "k8s/config.yaml": _config_map(config)})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == peak, result.notices
    if not peak:
        assert any("names no database host" in n for n in result.notices)


INI = """[databases]
shop = host=db port=5432 dbname=shop
[pgbouncer]
pool_mode = transaction
default_pool_size = 9
"""


def bouncer(volume: str) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: pgbouncer}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    metadata: {{labels: {{app: pgbouncer}}}}
    spec:
      containers:
        - name: pgbouncer
          image: bitnami/pgbouncer:1.22.1
          volumeMounts: [{{name: cfg, mountPath: /etc/pgbouncer}}]
      volumes:
        - name: cfg
{textwrap.indent(volume, "          ")}
---
apiVersion: v1
kind: Service
metadata: {{name: pgbouncer}}
spec:
  selector: {{app: pgbouncer}}
"""


@pytest.mark.parametrize("how", ["data", "stringData", "projected"])
def test_pgbouncer_ini_from_secret_and_projected_volume(tmp_path, how):
    if how == "data":
        secret = ("apiVersion: v1\nkind: Secret\nmetadata: {name: cfg}\ndata:\n"
                  f"  pgbouncer.ini: {base64.b64encode(INI.encode()).decode()}\n")
        volume = "secret: {secretName: cfg}\n"
    elif how == "stringData":
        secret = ("apiVersion: v1\nkind: Secret\nmetadata: {name: cfg}\nstringData:\n"
                  "  pgbouncer.ini: |\n" + textwrap.indent(INI, "    "))
        volume = "secret: {secretName: cfg}\n"
    else:
        secret = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata:\n"
                  "  pgbouncer.ini: |\n" + textwrap.indent(INI, "    "))
        volume = ("projected:\n  sources:\n    - secret: {name: users}\n"
                  "    - configMap: {name: cfg}\n")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/secret.yaml": secret,
                     "k8s/bouncer.yaml": bouncer(volume), "k8s/web.yaml": web("pgbouncer")})
    result, budgets = budget_of(tmp_path)
    b = budgets["db"]
    # pgbouncer: 2 pods x default_pool_size 9 (reserve_pool_size default 0) = 18
    assert b.peak == 2 * 9, result.notices
    pooler = next(c for c in b.contributions if c.kind == "pooler")
    size = pooler.parts[0].parts[0].factors[0]
    if how == "stringData":
        assert (size.source.path, size.source.line) == ("k8s/secret.yaml", 10)
    elif how == "data":  # base64: the key's line, not line 5 + the ini's 5 (of 5 lines)
        assert (size.source.path, size.source.line) == ("k8s/secret.yaml", 5)


def test_service_of_an_application_does_not_lead_to_its_named_alike_pooler(tmp_path):
    # A pooler is its workload (or `<workload>#<container>`); `web` is not `web-pgbouncer`
    # although one id starts with the other.
    cfg = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata:\n"
           "  pgbouncer.ini: |\n" + textwrap.indent(INI, "    "))
    pooler = bouncer("configMap: {name: cfg}\n").replace("name: pgbouncer}", "name: web-pgbouncer}")
    app = web("web-pgbouncer").replace(
        "  template:\n    spec:", "  template:\n    metadata: {labels: {app: web}}\n    spec:")
    app += ("---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
            "spec:\n  selector: {app: web}\n")
    worker = web("web").replace("name: web}", "name: worker}")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/cfg.yaml": cfg, "k8s/bouncer.yaml": pooler,
                     "k8s/web.yaml": app, "k8s/worker.yaml": worker})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    targets = {c.name: (c.target_kind, c.target_id) for c in topo.clients}
    assert targets["web"] == ("pooler", "Deployment/web-pgbouncer")
    assert targets["worker"][1] is None, targets


def test_postgresql_conf_from_secret(tmp_path):
    conf = "max_connections = 40\n"
    write(tmp_path, {
        "k8s/db.yaml": DB.replace('args: ["-c", "max_connections=50"]',
                                  'args: ["-c", "config_file=/etc/pg/postgresql.conf"]\n'
                                  "          volumeMounts: [{name: conf, mountPath: /etc/pg}]")
        + "      volumes:\n        - name: conf\n          secret: {secretName: pgconf}\n",
        "k8s/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: pgconf}\n"
        f"data:\n  postgresql.conf: {base64.b64encode(conf.encode()).decode()}\n",
    })
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].max_connections.value == 40


CNPG = """
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: pg, namespace: shop}
spec:
  instances: 1
  postgresql:
    parameters: {max_connections: "100"}
  bootstrap:
    initdb: {database: orders, owner: orders_app}
"""


def secret_client(env: str) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: api, namespace: shop}}
spec:
  replicas: 4
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: api
          image: acme/api:1
{textwrap.indent(env, "          ")}
"""


def test_cnpg_app_secret_links_a_client_by_secret_key_ref(tmp_path):
    env = ("env:\n"
           "  - name: SPRING_DATASOURCE_URL\n"
           "    valueFrom: {secretKeyRef: {name: pg-app, key: jdbc-uri}}\n"
           "  - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: '5'}\n")
    write(tmp_path, {"k8s/pg.yaml": CNPG, "k8s/api.yaml": secret_client(env)})
    result, budgets = budget_of(tmp_path)
    assert budgets["pg"].peak == 4 * 5, result.notices


def test_cnpg_pooler_counts_the_pair_the_client_names(tmp_path):
    pooler = """
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-pooler, namespace: shop}
spec:
  cluster: {name: pg}
  instances: 3
  pgbouncer:
    poolMode: transaction
    parameters: {default_pool_size: "12"}
"""
    env = ("env:\n"
           "  - {name: DB_HOST, value: pg-pooler}\n"
           "  - name: DB_USER\n"
           "    valueFrom: {secretKeyRef: {name: pg-app, key: username}}\n"
           "  - name: DB_NAME\n"
           "    valueFrom: {secretKeyRef: {name: pg-app, key: dbname}}\n")
    write(tmp_path, {"k8s/pg.yaml": CNPG + "---" + pooler,
                     "k8s/api.yaml": secret_client(env)})
    _result, budgets = budget_of(tmp_path)
    contribution = next(c for c in budgets["pg"].contributions if c.kind == "pooler")
    # one pool (orders, orders_app) from the Secret the operator makes, and the
    # auth_query pool of cnpg_pooler_pgbouncer: in postgres, the template's auth_dbname,
    # which the operator's default PgBouncer (1.23 at the oldest, no image here) reads;
    # (3 pods + 1 surge) x (12 + 12)
    assert [p.who for p in contribution.parts] == ["orders", "postgres"]
    assert [p.who for p in contribution.parts[0].parts] == ["orders/orders_app"]
    assert [p.who for p in contribution.parts[1].parts] == ["postgres/cnpg_pooler_pgbouncer"]
    assert contribution.total == (3 + 1) * (12 + 12)


def test_star_only_pooler_without_a_client_counts_one_pair_as_a_floor(tmp_path):
    pooler = """
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-pooler, namespace: shop}
spec:
  cluster: {name: pg}
  instances: 2
"""
    write(tmp_path, {"k8s/pg.yaml": CNPG + "---" + pooler})
    result, budgets = budget_of(tmp_path)
    contribution = next(c for c in budgets["pg"].contributions if c.kind == "pooler")
    # (2 pods + 1 surge) x default_pool_size 20 (PgBouncer default), never 0, and as
    # much for the auth_query pool (postgres, cnpg_pooler_pgbouncer)
    assert contribution.total == (2 + 1) * (20 + 20)
    assert "assumed one pair" in contribution.note
    # no client names its pairs: each further pair is a pool more (audit 8a D4)
    assert contribution.unknown and not budgets["pg"].fits
    assert any("no client in the repository connects to it" in n for n in result.notices)


def test_clients_of_a_star_pooler_whose_pairs_are_unknown_make_the_peak_a_floor(tmp_path):
    """Behind a `*` pooler each (database, user) is a pool of its own. Two apps whose
    user and database come from Secrets not in the repository may be two pools where
    one is counted (drag0n141/home-ops: 22 apps on one CloudNativePG pooler, counted as
    one pool): the peak is a floor, the pooler named. Two workloads reading the same
    Secret line share their pair: no floor."""
    pooler = """
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-pooler, namespace: shop}
spec:
  cluster: {name: pg}
  instances: 1
  deploymentStrategy: {type: Recreate}
"""
    def app(name: str, secret: str) -> str:
        env = ("env:\n"
               "  - name: DATABASE_URL\n"
               f"    valueFrom: {{secretKeyRef: {{name: {secret}, key: url}}}}\n"
               "  - {name: DB_HOST, value: pg-pooler}\n")
        return secret_client(env).replace("name: api,", f"name: {name},")

    write(tmp_path, {"k8s/pg.yaml": CNPG + "---" + pooler,
                     "k8s/a.yaml": app("a", "a-db"), "k8s/b.yaml": app("b", "b-db")})
    _result, budgets = budget_of(tmp_path)
    b = budgets["pg"]
    assert b.peak_is_floor and not b.fits
    assert b.unknown_pairs == ["pg-pooler: (database, user) of 2 clients unknown (a, b)"]
    # a single app behind the pooler is the one pair assumed: no floor
    (tmp_path / "k8s" / "b.yaml").unlink()
    _result, budgets = budget_of(tmp_path)
    assert budgets["pg"].unknown_pairs == [] and budgets["pg"].fits


def test_a_service_written_to_select_an_operators_pods_leads_to_its_cluster(tmp_path):
    """A Service that selects CloudNativePG's own instance labels (cnpg.io/cluster +
    cnpg.io/instanceRole: primary) leads to that cluster's primary, though no workload of
    the repository runs those pods (tscibilia/home-ops: cetranscript and gatus were PA107,
    'its pods run no image read as PostgreSQL')."""
    service = """
apiVersion: v1
kind: Service
metadata: {name: pgsql, namespace: shop}
spec:
  selector: {cnpg.io/cluster: pg, cnpg.io/instanceRole: primary}
  ports: [{port: 5432}]
"""
    env = ("env:\n"
           "  - {name: DATABASE_URL, value: 'postgres://app@pgsql.shop.svc:5432/orders'}\n"
           "  - {name: PG_POOL_MAX, value: '5'}\n")
    write(tmp_path, {"k8s/pg.yaml": CNPG + "---" + service,
                     "k8s/api.yaml": secret_client(env)})
    result, budgets = budget_of(tmp_path)
    assert "api" in [c.who for c in budgets["pg"].contributions], result.notices
    assert not [f for f in result.findings if f.code == "PA107"]


CRUNCHY = """
apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata: {name: hippo}
spec:
  postgresVersion: 16
  instances: [{replicas: 1}]
  users:
    - {name: rhino, databases: [zoo]}
  proxy:
    pgBouncer:
      replicas: 2
      config:
        global: {default_pool_size: "8"}
"""


@pytest.mark.parametrize("how", ["uri", "envFrom", "host"])
def test_crunchy_pguser_secret(tmp_path, how):
    if how == "uri":
        env = ("env:\n  - name: DATABASE_URL\n"
               "    valueFrom: {secretKeyRef: {name: hippo-pguser-rhino, key: pgbouncer-uri}}\n")
    elif how == "envFrom":
        env = "envFrom:\n  - secretRef: {name: hippo-pguser-rhino}\n"
    else:  # Keycloak's split variables, as in the Crunchy Keycloak example
        env = ("env:\n  - {name: KC_DB, value: postgres}\n"
               "  - name: KC_DB_URL_HOST\n"
               "    valueFrom: {secretKeyRef: {name: hippo-pguser-rhino, key: host}}\n")
    write(tmp_path, {"k8s/pg.yaml": CRUNCHY,
                     "k8s/api.yaml": secret_client(env).replace("namespace: shop", "")})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    topo_targets = {c.name: (c.target_kind, c.target_id) for c in topo.clients}
    if how == "uri":
        assert topo_targets["api"] == ("pooler", "crunchy-pooler:hippo-pgbouncer")
        pooler = topo.poolers[0]
        assert pooler.pairs == [("zoo", "rhino")]
    else:
        assert topo_targets["api"] == ("server", "crunchy:hippo")


def test_zalando_credentials_secret_gives_the_user(tmp_path):
    zalando = """
apiVersion: acid.zalan.do/v1
kind: postgresql
metadata: {name: acid-shop}
spec:
  numberOfInstances: 1
  postgresql: {version: "16"}
  users: {shop_owner: []}
  enableConnectionPooler: true
"""
    env = ("env:\n  - {name: DB_HOST, value: acid-shop-pooler}\n"
           "  - {name: DB_NAME, value: shop}\n"
           "  - name: DB_USER\n    valueFrom: {secretKeyRef: "
           "{name: shop-owner.acid-shop.credentials.postgresql.acid.zalan.do, key: username}}\n")
    write(tmp_path, {"k8s/pg.yaml": zalando,
                     "k8s/api.yaml": secret_client(env).replace("namespace: shop", "")})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    pooler = next(p for p in topo.poolers if p.name == "acid-shop-pooler")
    assert pooler.pairs == [("shop", "shop_owner")]


def ctr(image: str, command=(), args=(), role="main") -> Container:
    return Container(name="c", image=image, command=tuple(command), args=tuple(args),
                     role=role, source=Source(path="x.yaml"))


@pytest.mark.parametrize("image", [
    "postgres:16", "docker.io/library/postgres:15-alpine", "bitnami/postgresql:16.2.0",
    "postgis/postgis:16-3.4", "timescale/timescaledb:2.14.2-pg16",
    "timescale/timescaledb-ha:pg16", "supabase/postgres:15.1.1.78",
    "ghcr.io/cloudnative-pg/postgresql:16.3",
    "registry.developers.crunchydata.com/crunchydata/crunchy-postgres:ubi8-16.2-0",
    "ghcr.io/zalando/spilo-16:3.2-p2", "pgvector/pgvector:pg16",
    "quay.io/fedora/postgresql-16@sha256:" + "c" * 64, "quay.io/sclorg/postgresql-15-c9s",
    "registry.redhat.io/rhel9/postgresql-16", "centos/postgresql-96-centos7"])
def test_postgresql_distributions_are_servers(image):
    assert is_postgres_container(ctr(image))


@pytest.mark.parametrize("image", [
    "ghcr.io/zalando/postgres-operator:v1.12.2", "postgrest/postgrest:v12.0.2",
    "supabase/postgres-meta:v0.80.0", "quay.io/prometheuscommunity/postgres-exporter:v0.15.0",
    "prometheuscommunity/pgbouncer-exporter:v0.7.0", "bitnami/postgres-exporter:0.15.0",
    "postgres-backup-s3:latest", "bitnami/postgresql-client:16", "postgresql-16-exporter:1"])
def test_programs_named_like_postgres_are_not_servers(image):
    assert not is_postgres_container(ctr(image))


def test_init_and_tool_containers_are_not_servers():
    assert not is_postgres_container(ctr("postgres:16", role="init"))
    assert not is_postgres_container(ctr("postgres:16", command=["pg_isready", "-h", "db"]))
    assert not is_postgres_container(ctr("postgres:16", command=["sh", "-c"], args=[
        "until pg_isready -h postgres; do sleep 1; done"]))
    assert not is_postgres_container(ctr("postgres:16", command=["pg_dump", "-h", "db"]))
    assert is_postgres_container(ctr("alpine:3", command=["/usr/local/bin/postgres"]))


def test_dash_c_is_a_setting_only_for_postgres_itself():
    assert postgres_arguments(ctr("postgres:16", args=["-c", "max_connections=5"])) == [
        "-c", "max_connections=5"]
    assert postgres_arguments(ctr("postgres:16", args=["postgres", "-c", "a=1"])) == ["-c", "a=1"]
    assert postgres_arguments(ctr("postgres:16", command=["docker-entrypoint.sh"], args=[
        "postgres", "-c", "a=1"])) == ["-c", "a=1"]
    assert postgres_arguments(ctr("postgres:16", command=["bash", "-c"], args=[
        "exec docker-entrypoint.sh postgres -c max_connections=300"])) == [
        "-c", "max_connections=300"]
    assert postgres_arguments(ctr("postgres:16", command=["bash", "-c"], args=[
        "psql -c 'select 1'"])) is None


def test_init_container_pod_stays_a_client(tmp_path):
    extra = ("      initContainers:\n"
             "        - name: wait-for-db\n"
             "          image: postgres:16\n"
             "          command: [sh, -c, 'until pg_isready -h db; do sleep 1; done']\n")
    text = web("db").replace("      containers:", extra + "      containers:")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": text})
    _result, budgets = budget_of(tmp_path)
    assert list(budgets) == ["db"]
    assert budgets["db"].peak == 21


def test_sidecar_exporter_and_postgrest_leave_one_server(tmp_path):
    extra = """
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: rest}
spec:
  template:
    spec:
      containers:
        - name: postgrest
          image: postgrest/postgrest:v12.0.2
        - name: exporter
          image: quay.io/prometheuscommunity/postgres-exporter:v0.15.0
"""
    write(tmp_path, {"k8s/db.yaml": DB + extra})
    _, budgets = budget_of(tmp_path)
    assert list(budgets) == ["db"]


def objects_of(text: str):
    from advisor.read.sources.k8s import k8s_objects

    found, problems = k8s_objects(textwrap.dedent(text), "ops.yaml")
    assert not problems
    return found


def test_operator_secrets_names_and_keys():
    from advisor.read.sources.operators import operator_secrets

    made = {m.name: m for m in operator_secrets(objects_of(CNPG + "---" + CRUNCHY + """
---
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: own}
spec:
  bootstrap:
    initdb: {database: x, secret: {name: own-credentials}}
---
apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata: {name: plain, namespace: ops}
spec:
  postgresVersion: 16
"""), "default")}
    app = made["pg-app"].data
    assert (app["user"], app["dbname"], app["host"], app["port"]) == (
        "orders_app", "orders", "pg-rw", "5432")
    assert app["uri"] == "postgresql://orders_app@pg-rw.shop:5432/orders"
    assert app["fqdn-uri"] == "postgresql://orders_app@pg-rw.shop.svc.cluster.local:5432/orders"
    assert "password" not in app  # never a secret value, not even a made-up one
    assert made["pg-superuser"].data["user"] == "postgres"
    assert "own-app" not in made  # bootstrap.initdb.secret: the user's own Secret
    rhino = made["hippo-pguser-rhino"].data
    assert rhino["host"] == "hippo-primary.default.svc"  # no namespace: default
    assert rhino["pgbouncer-uri"] == "postgresql://rhino@hippo-pgbouncer.default.svc:5432/zoo"
    # PGO's default user and database are named like the cluster
    assert made["plain-pguser-plain"].data["dbname"] == "plain"
    assert made["plain-pguser-plain"].data["host"] == "plain-primary.ops.svc"
    assert "pgbouncer-host" not in made["plain-pguser-plain"].data
    src = made["pg-app"].source
    assert (src.path, src.line) == ("ops.yaml", 4) and "CloudNativePG" in src.default


def test_operator_services_of_unnamespaced_cluster_live_in_namespace_option(tmp_path):
    cluster = CNPG.replace("metadata: {name: pg, namespace: shop}", "metadata: {name: pg}")
    write(tmp_path, {"k8s/pg.yaml": cluster,
                     "k8s/web.yaml": web("pg-rw.staging.svc.cluster.local")})
    _, budgets = budget_of(tmp_path, namespace="staging")
    assert budgets["pg"].peak == 21
    _, budgets = budget_of(tmp_path)
    assert budgets["pg"].peak == 0  # pg-rw lives in default without --namespace


def test_harbor_db_server(tmp_path):
    harbor = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: harbor-database}
spec:
  template:
    spec:
      containers:
        - name: database
          image: goharbor/harbor-db:v2.11.1
          env:
            - {name: POSTGRES_MAX_CONNECTIONS, value: "300"}
"""
    write(tmp_path, {"k8s/db.yaml": harbor})
    _, budgets = budget_of(tmp_path)
    b = budgets["harbor-database"]
    assert b.max_connections.value == 300 and b.max_connections.source.line == 12
    assert b.version.value == 15  # v2.11.1 is Harbor's version, not PostgreSQL's
    write(tmp_path, {"k8s/db.yaml": harbor.replace(
        '          env:\n            - {name: POSTGRES_MAX_CONNECTIONS, value: "300"}\n', "")})
    _, budgets = budget_of(tmp_path)
    b = budgets["harbor-database"]
    assert b.max_connections.value == 1024 and "harbor-db" in b.max_connections.source.default


@pytest.mark.parametrize("host", ["db-0.db", "db-0.db.default.svc.cluster.local"])
def test_statefulset_pod_dns_name_resolves_through_its_service(tmp_path, host):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": web(host)})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 21


def test_pod_dns_needs_an_ordinal(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": web("api.db")})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 0


def test_an_object_defined_twice_is_counted_once(tmp_path):
    # a folder of alternative samples: two Clusters of one name, as `kubectl apply -f`
    # would leave one; the Pooler is not counted once per copy
    pooler = """
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-pooler, namespace: shop}
spec:
  cluster: {name: pg}
  instances: 2
"""
    write(tmp_path, {"k8s/a-pg.yaml": CNPG,
                     "k8s/b-pg.yaml": CNPG.replace('"100"', '"150"'),
                     "k8s/pooler.yaml": pooler})
    result, budgets = budget_of(tmp_path)
    assert len(result.budgets) == 1
    b = budgets["pg"]
    assert b.max_connections.value == 150  # the last applied (b-pg.yaml)
    assert b.peak == (2 + 1) * (20 + 20)  # 2 pods + 1 surge, once (with the auth pool)
    assert any("Cluster shop/pg is defined 2 times" in n for n in result.notices)


def mounted(config: str) -> str:
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: app-config}}
data:
  settings.yaml: |
{textwrap.indent(config, "    ")}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: worker}}
spec:
  template:
    spec:
      containers:
        - name: worker
          image: example/worker:1
          volumeMounts: [{{name: cfg, mountPath: /etc/app}}]
      volumes:
        - name: cfg
          configMap: {{name: app-config}}
"""


def test_host_in_a_mounted_config_file_links_the_client(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/worker.yaml": mounted(
        "persistence:\n  sql:\n    connectAddr: \"db:5432\"\n    maxConns: 20\n")})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (client,) = topo.clients
    assert (client.target_kind, client.target_id) == ("server", "StatefulSet/db")
    # the route's source is the line of the file inside the ConfigMap
    assert (client.route.source.path, client.route.source.line) == ("k8s/worker.yaml", 9)


def test_a_word_on_another_line_of_a_mounted_file_does_not_link(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/worker.yaml": mounted(
        "title: db\nlabels: [db]\n")})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    assert topo.clients == []


# web() with its pool size taken from a Secret that is not in the repository
SECRET_SIZED_WEB = web("db").replace(
    '            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "7"}',
    "            - name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE\n"
    "              valueFrom: {secretKeyRef: {name: web-secrets, key: pool}}")


def test_a_pool_size_from_a_secret_not_in_the_repository_leaves_the_budget_a_floor(tmp_path):
    """Never a default where the size is set but unreadable: the client is unknown
    (PA106, with the variable that sets it), the budget a floor, never "fits"."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": SECRET_SIZED_WEB})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == ["web"] and not budget.fits
    # web's pods count one connection each, the least they hold: its pools are not known
    assert budget.peak == 3
    (pa106,) = [f for f in result.findings if f.code == "PA106"]
    assert "SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE (k8s/web.yaml:15) from a secret" \
        in pa106.message
    assert not [f for f in result.findings if f.code == "PA104"]  # no default applied
    # declared connections are what the user knows: they count
    (tmp_path / ".pool-advisor.toml").write_text(
        '[[workloads]]\nname = "web"\nconnections = 5\n')
    declared = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert declared.budgets[0].unknown_clients == [] and declared.budgets[0].peak == 15


# The shared PostgreSQL manifest with sclorg's image in place of postgres:16.2 and its
# -c max_connections (the image takes settings from POSTGRESQL_* variables instead).
SCLORG_DB = DB.replace(
    '          image: postgres:16.2\n          args: ["-c", "max_connections=50"]\n',
    "          image: quay.io/fedora/postgresql-16@sha256:{digest}\n"
    "          env:\n"
    "            - {name: POSTGRESQL_ADMIN_PASSWORD, value: password}\n"
    "{extra}")
assert "postgres:16.2" not in SCLORG_DB


@pytest.mark.parametrize(("extra", "usable"), [
    ("", 97),  # the image's run script: POSTGRESQL_MAX_CONNECTIONS defaults to 100
    ('            - {name: POSTGRESQL_MAX_CONNECTIONS, value: "40"}\n', 37)])
def test_an_sclorg_image_is_a_server_with_its_max_connections_variable(tmp_path, extra, usable):
    """sclorg's PostgreSQL images (quay.io/fedora/postgresql-16, as Argo Workflows' quick
    start runs) are servers: their major from the repository name, max_connections from
    POSTGRESQL_MAX_CONNECTIONS (sclorg/postgresql-container: default 100, written into
    its generated postgresql.conf)."""
    db = SCLORG_DB.replace("{extra}", extra).replace("{digest}", "06d5" * 16)
    write(tmp_path, {"k8s/db.yaml": db,
                     "k8s/web.yaml": web("db", size=7, replicas=3)})
    _, budgets = budget_of(tmp_path, cache=False)
    budget = budgets["db"]
    assert budget.version.value == 16
    assert budget.usable == usable and budget.peak == 21


PREFIXED_HOST = """apiVersion: apps/v1
kind: Deployment
metadata: {name: events}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: events
          image: posthog/posthog:1
          env:
            - {name: POSTHOG_POSTGRES_HOST, value: THE_HOST}
            - {name: POSTHOG_POSTGRES_PORT, value: "5432"}
            - {name: POSTHOG_DB_NAME, value: posthog}
"""


def test_an_apps_own_host_variable_links_a_rendered_workload(tmp_path):
    """POSTHOG_POSTGRES_HOST names the server: the workload is its client (of unknown
    size here: no source), not dropped. A host that is no server or pooler of the
    repository, named by a variable that says POSTGRES, is a server the repository
    lacks (PA107: docker-zulip's SETTING_REMOTE_POSTGRES_HOST=pg.example.com gave no
    finding at all); a DB_HOST one is no evidence (it may name MySQL or Redis), and the
    workload stays out."""
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/events.yaml": PREFIXED_HOST.replace("THE_HOST", "db")})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].unknown_clients == ["events"]
    write(tmp_path, {"k8s/events.yaml": PREFIXED_HOST.replace("THE_HOST", "cache")})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].unknown_clients == [] and budgets["db"].peak == 0
    (unlinked,) = [f for f in result.findings if f.code in ("PA106", "PA107")]
    assert unlinked.code == "PA107" and "connects to host 'cache'" in unlinked.message
    generic = PREFIXED_HOST.replace("POSTHOG_POSTGRES_", "POSTHOG_DB_")
    write(tmp_path, {"k8s/events.yaml": generic.replace("THE_HOST", "cache")})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].unknown_clients == [] and budgets["db"].peak == 0
    assert not [f for f in result.findings if f.code in ("PA106", "PA107")]
    for value in ("localhost", "${DB_HOST}", "{{ .Values.host }}"):
        write(tmp_path, {"k8s/events.yaml": PREFIXED_HOST.replace("THE_HOST", repr(value))})
        result, _budgets = budget_of(tmp_path)
        assert not [f for f in result.findings if f.code in ("PA106", "PA107")], value


def test_zulips_postgresql_image_is_a_server(tmp_path):
    """zulip/zulip-postgresql (docker-zulip's compose and chart) is library/postgres
    with a dictionary added: a server, read as postgres' image is (it was none, and a
    client of it 'no PostgreSQL server found')."""
    from advisor.read.workloads import is_postgres_image

    assert is_postgres_image("zulip/zulip-postgresql:14")
    assert is_postgres_image("docker.io/zulip/zulip-postgresql:14@sha256:ab")
    assert not is_postgres_image("zulip/docker-zulip:9.0")
    write(tmp_path, {"k8s/db.yaml": (
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  template:\n"
        "    spec:\n      containers:\n        - name: db\n"
        "          image: zulip/zulip-postgresql:14\n"
        "          args: [\"-c\", \"max_connections=20\"]\n")})
    _result, budgets = budget_of(tmp_path)
    assert budgets["db"].usable == 17


def test_a_compose_file_that_runs_postgresql_is_said_not_read(tmp_path):
    """Compose deployments are not budgeted: a compose file running PostgreSQL or
    PgBouncer is named in a notice, never a silent 'no PostgreSQL server found' (audit B:
    getsentry/self-hosted, netbox-docker, docker-zulip)."""
    write(tmp_path, {"docker-compose.yml": """
        services:
          postgres:
            image: postgres:14.24-bookworm
          pgbouncer:
            image: edoburu/pgbouncer:v1.25.2-p0
          pgbouncer-exporter:
            image: prometheuscommunity/pgbouncer-exporter:v0.10.2
          web:
            build: .
            environment:
              DATABASE_URL: postgres://app@pgbouncer:5432/app
        """})
    result, budgets = budget_of(tmp_path)
    assert budgets == {}
    # no server budgeted at all: a PA901 warning at the server, not a notice (audit 10a D3)
    assert not [n for n in result.notices if n.startswith("docker compose:")]
    (finding,) = result.findings
    assert (finding.code, finding.severity.value, finding.location.label()) == (
        "PA901", "warning", "docker-compose.yml:3")
    assert finding.message.startswith(
        "docker compose runs postgres (postgres:14.24-bookworm), pgbouncer "
        "(edoburu/pgbouncer:v1.25.2-p0), which this tool does not read")
    assert result.unbudgeted == ["postgres (docker-compose.yml)"]


MISSING_SECRET = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: memos, namespace: apps}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: memos
          image: neosmemo/memos:0.22
          env:
            - name: DATABASE_URL
              valueFrom: {secretKeyRef: {name: database-memos, key: POSTGRES_URL}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: other, namespace: apps}
spec:
  template:
    spec:
      containers:
        - name: other
          image: example/other:1
          envFrom:
            - secretRef: {name: database-other}
            - secretRef: {name: api-keys}
"""


def test_a_connection_from_a_secret_the_repository_lacks_is_unknown(tmp_path):
    """DATABASE_URL from a Secret made where it is deployed (ahgraber/homelab-gitops-k3s:
    ext-postgres-operator's database-<app>, eight apps): where the pods connect is not
    known, so every server's peak is a floor, never 'peak 0, fits'; a Secret whose name
    says nothing of a database (api-keys) is no such evidence."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/apps.yaml": MISSING_SECRET})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].unplaced_clients == ["memos", "other"]
    assert budgets["db"].peak == 0 and not budgets["db"].fits
    memos, other = [n for n in result.notices if n.startswith("Deployment/apps/")]
    assert "DATABASE_URL (secret:database-memos/POSTGRES_URL, k8s/apps.yaml:13) is " \
           "unknown here: Secret database-memos is not in the repository" in memos
    assert other.startswith("Deployment/apps/other: takes its variables from Secret "
                            "database-other (k8s/apps.yaml:")
    write(tmp_path, {"k8s/apps.yaml": MISSING_SECRET.replace("database-other", "app-env")})
    _result, budgets = budget_of(tmp_path)
    assert budgets["db"].unplaced_clients == ["memos"]


def test_the_json_summary_tells_over_from_cannot_tell(tmp_path):
    """A floor within what is usable is no verdict: `over` counts only a peak past
    `usable`, `cannot_tell` the floors within it (audit C: sourcegraph's summary said 23
    servers over where none was)."""
    from advisor.report.json import to_dict

    write(tmp_path, {"k8s/db.yaml": DB, "k8s/apps.yaml": MISSING_SECRET})
    result, _budgets = budget_of(tmp_path)
    summary = to_dict(result)["summary"]
    assert (summary["servers"], summary["over"], summary["cannot_tell"]) == (1, 0, 1)
    write(tmp_path, {"k8s/apps.yaml": web("db", replicas=40)})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].peak > budgets["db"].usable
    summary = to_dict(result)["summary"]
    assert (summary["over"], summary["cannot_tell"]) == (1, 0)


def test_a_second_pg_family_under_a_prefix_is_a_further_route(tmp_path):
    """Sourcegraph's frontend names its main database by PGHOST and its code-intel one by
    CODEINTEL_PGHOST: both are where it connects (codeintel-db was 'peak 0, fits' with
    the frontend's pods on it, audit C); sourcegraph/postgresql-16-codeinsights is a
    PostgreSQL 16 server (it was none)."""
    from advisor.read.workloads import is_postgres_image

    assert is_postgres_image("index.docker.io/sourcegraph/postgresql-16-codeinsights:6.2@sha256:5")
    assert not is_postgres_image("sourcegraph/postgres_exporter:6.2")
    # its images before postgresql-16 (deploy-sourcegraph 2019-2023: no budget at all)
    assert is_postgres_image("index.docker.io/sourcegraph/postgres-12.6:3.30.0@sha256:5")
    assert is_postgres_image("sourcegraph/postgres-12-alpine:4.5.0")
    assert not is_postgres_image("prometheuscommunity/postgres-exporter:v0.15.0")
    assert not is_postgres_image("postgres-operator:v1.12.0")
    codeintel = DB.replace("name: db", "name: codeintel-db").replace(
        "app: db", "app: codeintel-db")
    assert "codeintel-db" in codeintel
    frontend = web("db").replace(
        '            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "7"}',
        '            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "7"}\n'
        '            - {name: CODEINTEL_PGHOST, value: codeintel-db}\n'
        '            - {name: CODEINTEL_PGPORT, value: "5432"}\n'
        '            - {name: CODEINTEL_PGDATABASE, value: sg}')
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/codeintel.yaml": codeintel,
                     "k8s/web.yaml": frontend})
    _result, budgets = budget_of(tmp_path)
    # the HikariCP pool (3 x 7) is the main route's; what the second route opens is not
    # said, so that budget is a floor, never 'peak 0, fits'
    assert [(c.who, c.total) for c in budgets["db"].contributions] == [("web", 21)]
    assert budgets["codeintel-db"].unknown_clients == ["web"]
    assert not budgets["codeintel-db"].fits


def _posthog_like(name: str, env: str) -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  template:
    spec:
      containers:
        - name: {name}
          image: example/analytics:1
          env:
{textwrap.indent(textwrap.dedent(env), " " * 12)}"""


BITNAMI_BOUNCER = """apiVersion: apps/v1
kind: Deployment
metadata: {name: bouncer}
spec:
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: bouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: bitnami/pgbouncer:1.18.0
          env:
            - {name: POSTGRESQL_HOST, value: db}
            - {name: POSTGRESQL_USERNAME, value: postgres}
            - {name: PGBOUNCER_DATABASE, value: posthog}
---
apiVersion: v1
kind: Service
metadata: {name: bouncer}
spec:
  selector: {app: bouncer}
"""

SPLIT_FAMILY = """\
- {name: POSTHOG_POSTGRES_HOST, value: bouncer}
- {name: POSTHOG_POSTGRES_PORT, value: "6543"}
- {name: POSTHOG_DB_USER, value: postgres}
- {name: POSTHOG_DB_NAME, value: posthog}
"""


def test_an_apps_user_and_database_under_another_database_word_complete_its_route(tmp_path):
    """PostHog's settings (posthog/settings/data_stores.py postgres_config) read
    POSTHOG_POSTGRES_HOST and _PORT beside POSTHOG_DB_USER and POSTHOG_DB_NAME: one
    application's prefix, two database words. Its clients behind a PgBouncer are one
    (database, user) pair, not 'unknown, each may be a pool more' (PostHog's
    charts-clickhouse said 'cannot tell' where 2 x 20 fits)."""
    from advisor.link.hosts import host_variable_route
    from advisor.model import EnvVar

    def env(**values: str) -> list[EnvVar]:
        return [EnvVar(name=k, value=v, source=Source(path="k8s/a.yaml", line=1))
                for k, v in values.items()]

    host_map = {"bouncer.default": ("pooler", "0")}
    route = host_variable_route(env(POSTHOG_POSTGRES_HOST="bouncer", POSTHOG_DB_USER="postgres",
                                    POSTHOG_DB_NAME="posthog"), host_map, "default")
    assert (route.host, route.user, route.dbname) == ("bouncer", "postgres", "posthog")
    # the host's own family wins; another application's DB_ family is no sibling
    route = host_variable_route(env(POSTHOG_POSTGRES_HOST="bouncer", POSTHOG_POSTGRES_USER="app",
                                    POSTHOG_DB_USER="postgres", OTHER_DB_NAME="x",
                                    DB_NAME="y"), host_map, "default")
    assert (route.user, route.dbname) == ("app", None)
    # a family with a host of its own is that host's: POSTHOG_DB_* is the other server's
    route = host_variable_route(env(POSTHOG_POSTGRES_HOST="bouncer", POSTHOG_DB_HOST="mysql",
                                    POSTHOG_DB_USER="root"), host_map, "default")
    assert route.user is None
    # a bare prefix has no application part to share: POSTGRES_HOST takes DB_USER only
    # as the container's one database host (lone_host_parts), not beside DB_HOST
    route = host_variable_route(env(POSTGRES_HOST="bouncer", DB_USER="root", DB_HOST="x"),
                                host_map, "default")
    assert route.user is None

    write(tmp_path, {"k8s/db.yaml": DB, "k8s/bouncer.yaml": BITNAMI_BOUNCER,
                     "k8s/web.yaml": _posthog_like("web", SPLIT_FAMILY),
                     "k8s/worker.yaml": _posthog_like("worker", SPLIT_FAMILY)})
    _result, budgets = budget_of(tmp_path)
    assert budgets["db"].unknown_pairs == []
    # an unrelated application's DB_ family gives the pair of neither
    other = SPLIT_FAMILY.replace("POSTHOG_DB_", "BILLING_DB_")
    write(tmp_path, {"k8s/worker.yaml": _posthog_like("worker", other)})
    _result, budgets = budget_of(tmp_path)
    assert budgets["db"].unknown_pairs == [
        "bouncer: (database, user) of 1 client unknown (worker)"]


BARE_HOST_POOLER = """
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-pooler, namespace: shop}
spec:
  cluster: {name: pg}
  instances: 1
  deploymentStrategy: {type: Recreate}
  pgbouncer:
    poolMode: transaction
    parameters: {default_pool_size: "10"}
"""


def _bare_host_app(name: str, db: str, extra: str = "") -> str:
    env = ("env:\n"
           "  - {name: POSTGRES_HOST, value: pg-pooler.shop.svc.cluster.local}\n"
           "  - {name: POSTGRES_PORT, value: '5432'}\n"
           f"  - {{name: DB_NAME, value: {db}}}\n"
           f"  - {{name: DB_USER, value: {db}_service}}\n" + extra)
    return secret_client(env).replace("name: api,", f"name: {name},")


def test_a_lone_bare_host_takes_db_name_and_db_user_beside_it(tmp_path):
    """saasodoo (tariron/saasodoo 791e6d1): every service reads POSTGRES_HOST from a
    shared ConfigMap and DB_NAME from its own, behind one CNPG pooler. Each service's
    database is a pool of its own; the pooler's pairs were 'unknown, each may be a pool
    more' and the server 'cannot tell' (audit5 D2)."""
    from advisor.link.hosts import host_variable_route
    from advisor.model import EnvVar

    def env(**values: str) -> list[EnvVar]:
        return [EnvVar(name=k, value=v, source=Source(path="k8s/a.yaml", line=1))
                for k, v in values.items()]

    host_map = {"bouncer.default": ("pooler", "0"), "db.default": ("server", "db")}
    route = host_variable_route(env(POSTGRES_HOST="bouncer", DB_USER="root", DB_NAME="x"),
                                host_map, "default")
    assert (route.user, route.dbname) == ("root", "x")
    # a second variable whose value is a server of the repository: DB_NAME may be its
    route = host_variable_route(env(POSTGRES_HOST="bouncer", DB_NAME="x", REPLICA="db"),
                                host_map, "default")
    assert route.dbname is None

    write(tmp_path, {"k8s/pg.yaml": CNPG + "---" + BARE_HOST_POOLER,
                     "k8s/a.yaml": _bare_host_app("a", "admin"),
                     "k8s/b.yaml": _bare_host_app("b", "billing")})
    _result, budgets = budget_of(tmp_path)
    b = budgets["pg"]
    assert b.unknown_pairs == [] and not b.peak_is_floor
    contribution = next(c for c in b.contributions if c.kind == "pooler")
    assert [p.who for p in contribution.parts] == ["admin", "billing", "postgres"]
    assert [p.who for p in contribution.parts[0].parts] == ["admin/admin_service"]
    assert contribution.total == 3 * 10
    # a second database host in each container (DB_HOST would have DB_NAME as its own):
    # neither DB_NAME is read as the pooler's
    for name, db in (("a", "admin"), ("b", "billing")):
        write(tmp_path, {f"k8s/{name}.yaml": _bare_host_app(
            name, db, "  - {name: REPORTS_DB_HOST, value: warehouse}\n")})
    _result, budgets = budget_of(tmp_path)
    assert budgets["pg"].unknown_pairs == [
        "pg-pooler: (database, user) of 2 clients unknown (a, b)"]


def test_a_database_address_variable_links_like_a_host_one():
    """Authelia 4.38 reads storage.postgres.address from AUTHELIA_STORAGE_POSTGRES_ADDRESS
    (`host` or `tcp://host:port`): it was no host variable, so a workload given only it
    was dropped with a notice and its server said 'fits, peak 0' (audit 13c D2)."""
    from advisor.link.hosts import host_variable_route
    from advisor.model import EnvVar

    def env(**values: str) -> list[EnvVar]:
        return [EnvVar(name=k, value=v, source=Source(path="k8s/a.yaml", line=1))
                for k, v in values.items()]

    host_map = {"postgres-primary.database": ("server", "0")}
    route = host_variable_route(env(AUTHELIA_STORAGE_POSTGRES_ADDRESS="postgres-primary.database"
                                    ".svc", AUTHELIA_STORAGE_POSTGRES_DATABASE="authelia",
                                    AUTHELIA_STORAGE_POSTGRES_USERNAME="authelia"),
                                host_map, "security")
    assert (route.host, route.dbname, route.user) == (
        "postgres-primary.database.svc", "authelia", "authelia")
    route = host_variable_route(env(AUTHELIA_STORAGE_POSTGRES_ADDRESS="tcp://postgres-primary"
                                    ".database:5432"), host_map, "security")
    assert (route.host, route.port) == ("postgres-primary.database", 5432)
    # an address that is not a database's is not one: SMTP_ADDRESS, LISTEN_ADDRESS
    assert host_variable_route(env(SMTP_ADDRESS="postgres-primary.database"), {}, "x") is None
