"""Applications run from their published images, sized by env or their documented
default (advisor/read/apps/images.py): which images are which application."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.model import EnvVar, Source
from advisor.read.apps import pools_for_container
from tests.apphelpers import container
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write


def _pools(image: str, env: dict[str, str] | None = None, command: tuple[str, ...] = ()):
    return pools_for_container(replace(container(env or {}, command=command), image=image))


def _client_pools(root, name: str):
    topo = scan([str(root)], CheckOptions()).topology
    (client,) = [c for c in topo.clients if c.name == name]
    return client.pools


def _budgets(root):
    result = run_check([str(root)], CheckOptions())
    return result, {b.server: b for b in result.budgets}


@pytest.mark.parametrize(("image", "label"), [
    ("quay.io/keycloak/keycloak:26.0", "Keycloak db-pool-max-size"),
    ("keycloak/keycloak:25.0.6", "Keycloak db-pool-max-size"),
    ("docker.io/bitnami/keycloak:26.1.0-debian-12-r0", "Keycloak db-pool-max-size"),
    ("registry.redhat.io/rhbk/keycloak-rhel9:26.0", "Keycloak db-pool-max-size"),
    ("mattermost/mattermost-team-edition:9.11.1", "Mattermost SqlSettings.MaxOpenConns"),
    ("mattermost/mattermost-enterprise-edition:10.5", "Mattermost SqlSettings.MaxOpenConns"),
    ("goharbor/harbor-core:v2.11.1", "Harbor core POSTGRESQL_MAX_OPEN_CONNS"),
    ("postgrest/postgrest:v12.2.0", "PostgREST db-pool"),
])
def test_published_images_are_their_application(image, label):
    # Keycloak's published image without KC_DB runs its default dev-file (H2) database
    env = {"KC_DB": "postgres"} if "keycloak" in image else None
    pool = _pools(image, env).pools[0]  # PostgREST's second is its LISTEN connection
    assert pool.label == label


@pytest.mark.parametrize("image", [
    "ghcr.io/padminisys/keycloak-config:latest",  # a Python job calling Keycloak's REST API
    "registry.redhat.io/rhbk/keycloak-rhel9-operator:26.0",
    "quay.io/keycloak/keycloak-operator:26.0",
    "mattermost/mattermost-operator:v1.22.0",
    "mattermost/mattermost-push-proxy:6.2.0",
    "ghcr.io/acme/postgrest-docs:1",
])
def test_an_image_named_after_an_application_is_not_it(image):
    """Audit F: keycloak-ops' keycloak-config job (FROM python, requests only) got
    Keycloak's db-pool-max-size 100 (PA104) because 'keycloak' was in its name."""
    assert _pools(image).pools == []


def test_the_applications_own_env_still_names_it_in_another_image():
    (pool,) = _pools("ghcr.io/acme/sso:1", {"KC_DB": "postgres"}).pools
    assert pool.label == "Keycloak db-pool-max-size" and pool.size.value == 100


# n8n: DB_POSTGRESDB_POOL_SIZE, default 2 from n8n 1.18.0 (@n8n/config database.config.ts);
# before it no setting, TypeORM passed no max: pg-pool's 10 (n8n-io/n8n#7772)
N8N_POOL_DEFAULT = 2
PG_POOL_MAX = 10


def test_n8n_postgres_pool_is_its_default_or_its_variable():
    """Audit F: theepicsaxguy/homelab's n8n (n8nio/n8n:2.26.0, DB_TYPE=postgresdb, no
    DB_POSTGRESDB_POOL_SIZE) was unknown (PA106); its documented default is 2."""
    postgres = {"DB_TYPE": "postgresdb", "DB_POSTGRESDB_HOST": "n8n-db-rw"}
    (pool,) = _pools("n8nio/n8n:2.26.0", postgres).pools
    assert (pool.size.value, pool.bound) == (N8N_POOL_DEFAULT, "default")
    assert "database.config.ts" in pool.size.source.default
    (pool,) = _pools("docker.n8n.io/n8nio/n8n:1.64.0",
                     {**postgres, "DB_POSTGRESDB_POOL_SIZE": "8"}).pools
    assert pool.size.value == 8 and pool.size.source.key == "DB_POSTGRESDB_POOL_SIZE"
    # a version before the setting: pg-pool's 10, whatever the variable says
    (pool,) = _pools("n8nio/n8n:1.17.1", {**postgres, "DB_POSTGRESDB_POOL_SIZE": "8"}).pools
    assert pool.size.value == PG_POOL_MAX and "before 1.18.0" in pool.size.source.default
    # SQLite (DB_TYPE unset): no PostgreSQL pool
    assert _pools("n8nio/n8n:2.26.0", {"N8N_PORT": "5678"}).pools == []


# Grafana: [database] max_open_conn, passed to database/sql SetMaxOpenConns; unset it is
# 0, no limit (pkg/services/sqlstore database_config.go MustInt(0), conf/defaults.ini)
def grafana_chart(ini: str, env: str = "", replicas: int = 3) -> str:
    """The shape of the grafana-community/helm-charts grafana chart: grafana.ini rendered
    into a ConfigMap and mounted at /etc/grafana/grafana.ini (subPath), the admin
    password from a Secret, a chown init container, the image with no command."""
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: grafana}}
data:
  grafana.ini: |
    [analytics]
    check_for_updates = true
{ini}    [paths]
    data = /var/lib/grafana/
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: grafana}}
spec:
  replicas: {replicas}
  template:
    spec:
      initContainers:
        - name: init-chown-data
          image: docker.io/library/busybox:1.31.1
          command: ["chown", "-R", "472:472", "/var/lib/grafana"]
      containers:
        - name: grafana
          image: docker.io/grafana/grafana:13.2.0
          env:
            - name: GF_SECURITY_ADMIN_PASSWORD
              valueFrom: {{secretKeyRef: {{name: grafana, key: admin-password}}}}
            - {{name: GF_PATHS_DATA, value: /var/lib/grafana/}}
{env}          volumeMounts:
            - {{name: config, mountPath: /etc/grafana/grafana.ini, subPath: grafana.ini}}
      volumes:
        - name: config
          configMap: {{name: grafana}}
"""


GRAFANA_PG = "    [database]\n    type = postgres\n    host = db:5432\n    name = grafana\n"


def test_grafana_on_postgresql_is_unbounded_by_default(tmp_path):
    """grafana-community/helm-charts grafana 12.11.1 (Grafana 13.2.0), grafana.ini
    [database] type postgres: a client of unknown size (3 + 1 pods, '>= 4, unknown');
    max_open_conn unset is 0, database/sql without a limit: unbounded, PA102."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/grafana.yaml": grafana_chart(GRAFANA_PG)})
    result = run_check([str(tmp_path)], CheckOptions())
    (pool,) = _client_pools(tmp_path, "grafana")
    assert pool.bound == "unbounded" and "database_config.go" in pool.size.source.default
    assert pool.route is not None and (pool.route.host, pool.route.port) == ("db", 5432)
    assert [f.code for f in result.findings if f.code == "PA102"] == ["PA102"]


def test_grafana_max_open_conn_from_grafana_ini_then_its_env(tmp_path):
    ini = GRAFANA_PG + "    max_open_conn = 30\n"
    write(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=300"),
                     "k8s/grafana.yaml": grafana_chart(ini)})
    (pool,) = _client_pools(tmp_path, "grafana")
    assert (pool.size.value, pool.bound) == (30, "fixed")
    assert (pool.size.source.path, pool.size.source.line) == ("k8s/grafana.yaml", 13)
    _, budgets = _budgets(tmp_path)
    assert budgets["db"].peak == (3 + 1) * 30  # replicas + the rolling update's surge
    # GF_DATABASE_MAX_OPEN_CONN over grafana.ini (Grafana's env override of a key)
    env = "            - {name: GF_DATABASE_MAX_OPEN_CONN, value: \"12\"}\n"
    write(tmp_path, {"k8s/grafana.yaml": grafana_chart(ini, env)})
    (pool,) = _client_pools(tmp_path, "grafana")
    assert pool.size.value == 12 and pool.size.source.key == "GF_DATABASE_MAX_OPEN_CONN"
    # a value from a Secret: unknown, not grafana.ini's 30
    env = ("            - name: GF_DATABASE_MAX_OPEN_CONN\n"
           "              valueFrom: {secretKeyRef: {name: grafana-db, key: max}}\n")
    write(tmp_path, {"k8s/grafana.yaml": grafana_chart(ini, env)})
    assert _client_pools(tmp_path, "grafana") == []


@pytest.mark.parametrize(("env", "size", "bound"), [
    ({"GF_DATABASE_TYPE": "postgres", "GF_DATABASE_HOST": "db:5432"}, 0, "unbounded"),
    ({"GF_DATABASE_URL": "postgres://grafana@db:5432/grafana",
      "GF_DATABASE_MAX_OPEN_CONN": "25"}, 25, "fixed"),
    ({"GF_DATABASE_TYPE": "postgres", "GF_DATABASE_MAX_OPEN_CONN": "0"}, 0, "unbounded"),
])
def test_grafana_env_only(env, size, bound):
    (pool,) = _pools("grafana/grafana-enterprise:12.3.1", env).pools
    assert (pool.size.value, pool.bound) == (size, bound)


@pytest.mark.parametrize("env", [
    {"GF_SERVER_ROOT_URL": "https://grafana.example.com"},  # SQLite, Grafana's default
    {"GF_DATABASE_TYPE": "mysql", "GF_DATABASE_HOST": "mysql:3306"},
    {"GF_DATABASE_URL": "mysql://grafana@mysql:3306/grafana"},
])
def test_grafana_on_another_database_has_no_postgresql_pool(env):
    assert _pools("grafana/grafana:11.6.0", env).pools == []


def test_grafana_image_renderer_is_not_grafana():
    env = {"GF_DATABASE_TYPE": "postgres"}
    assert _pools("grafana/grafana-image-renderer:v4.0.10", env).pools == []


# Gitea: [database] MAX_OPEN_CONNS, passed to database/sql SetMaxOpenConns; unset it is 0,
# no limit (modules/setting/database.go MustInt(0))
def gitea_chart(database: str, env: str = "") -> str:
    """The shape of the Gitea chart (gitea.com/gitea/helm-chart, 12.x): gitea.config as
    a Secret <release>-inline-config, one key per app.ini section of KEY=VALUE lines,
    mounted into the init container init-app-ini at /env-to-ini-mounts/inlines/, which
    writes app.ini onto the data volume; the rootless image runs with no command and
    deployment.env in its env; replicas 1 with maxSurge 100%."""
    return f"""
apiVersion: v1
kind: Secret
metadata: {{name: gitea-inline-config}}
type: Opaque
stringData:
  _generals_: ""
  cache: |-
    ADAPTER=memory
  database: |-
{database}
  server: |-
    HTTP_PORT=3000
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: gitea}}
spec:
  replicas: 1
  strategy:
    type: RollingUpdate
    rollingUpdate: {{maxSurge: "100%", maxUnavailable: 0}}
  template:
    spec:
      initContainers:
        - name: init-directories
          image: "docker.gitea.com/gitea:1.25.2-rootless"
          command: ["/usr/sbinx/init_directory_structure.sh"]
        - name: init-app-ini
          image: "docker.gitea.com/gitea:1.25.2-rootless"
          command: ["/usr/sbinx/config_environment.sh"]
          env:
            - {{name: GITEA_APP_INI, value: /data/gitea/conf/app.ini}}
{env}          volumeMounts:
            - {{name: inline-config-sources, mountPath: /env-to-ini-mounts/inlines/}}
        - name: configure-gitea
          image: "docker.gitea.com/gitea:1.25.2-rootless"
          command: ["/usr/sbinx/configure_gitea.sh"]
      containers:
        - name: gitea
          image: "docker.gitea.com/gitea:1.25.2-rootless"
          env:
            - {{name: SSH_LISTEN_PORT, value: "2222"}}
            - {{name: GITEA_APP_INI, value: /data/gitea/conf/app.ini}}
{env}      volumes:
        - name: inline-config-sources
          secret: {{secretName: gitea-inline-config}}
"""


GITEA_PG = "    DB_TYPE=postgres\n    HOST=db:5432\n    NAME=gitea\n    USER=gitea"


def test_gitea_chart_on_postgresql_is_unbounded_by_default(tmp_path):
    """The Gitea chart 12.x (Gitea 1.25.2) with gitea.config.database on an external
    PostgreSQL: a client of unknown size ('>= 2, unknown'); MAX_OPEN_CONNS unset is 0,
    database/sql without a limit: unbounded, PA102."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/gitea.yaml": gitea_chart(GITEA_PG)})
    result = run_check([str(tmp_path)], CheckOptions())
    (pool,) = _client_pools(tmp_path, "gitea")
    assert pool.bound == "unbounded" and "database.go" in pool.size.source.default
    assert pool.route is not None and (pool.route.host, pool.route.dbname) == ("db", "gitea")
    assert [f.code for f in result.findings if f.code == "PA102"] == ["PA102"]


def test_gitea_max_open_conns_from_the_charts_config_then_the_env(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=300"),
                     "k8s/gitea.yaml": gitea_chart(GITEA_PG + "\n    MAX_OPEN_CONNS=40")})
    (pool,) = _client_pools(tmp_path, "gitea")
    assert (pool.size.value, pool.bound) == (40, "fixed")
    assert (pool.size.source.path, pool.size.source.line) == ("k8s/gitea.yaml", 15)
    _, budgets = _budgets(tmp_path)
    assert budgets["db"].peak == (1 + 1) * 40  # maxSurge 100%: a second pod in a rollout
    # deployment.env's GITEA__database__MAX_OPEN_CONNS: the image's start applies it last
    env = "            - {name: GITEA__database__MAX_OPEN_CONNS, value: \"15\"}\n"
    write(tmp_path, {"k8s/gitea.yaml": gitea_chart(GITEA_PG + "\n    MAX_OPEN_CONNS=40", env)})
    (pool,) = _client_pools(tmp_path, "gitea")
    assert pool.size.value == 15 and pool.size.source.key == "GITEA__database__MAX_OPEN_CONNS"


@pytest.mark.parametrize(("env", "size", "bound"), [
    ({"GITEA__database__DB_TYPE": "postgres", "GITEA__database__HOST": "db:5432"},
     0, "unbounded"),
    ({"GITEA__DATABASE__DB_TYPE": "postgres", "GITEA__DATABASE__MAX_OPEN_CONNS": "25"},
     25, "fixed"),
    ({"DB_TYPE": "postgres", "DB_HOST": "db:5432"}, 0, "unbounded"),  # first start's app.ini
])
def test_gitea_env_only(env, size, bound):
    (pool,) = _pools("gitea/gitea:1.24.6", env).pools
    assert (pool.size.value, pool.bound) == (size, bound)


@pytest.mark.parametrize("env", [
    {"GITEA__server__ROOT_URL": "https://git.example.com"},  # SQLite
    {"GITEA__database__DB_TYPE": "mysql", "GITEA__database__HOST": "mysql:3306"},
])
def test_gitea_on_another_database_has_no_postgresql_pool(env):
    assert _pools("gitea/gitea:1.24.6", env).pools == []


def test_gitea_max_open_conns_from_a_secret_is_unknown():
    env = {"GITEA__database__DB_TYPE": "postgres"}
    got = pools_for_container(replace(container(env), image="gitea/gitea:1.24.6", env=(
        *container(env).env, EnvVar(name="GITEA__database__MAX_OPEN_CONNS", value=None,
                                    source=Source(path="k8s/app.yaml", line=20), secret=True))))
    assert got.pools == [] and "MAX_OPEN_CONNS" in got.unknown[0]


# Metabase: MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE, c3p0's maxPoolSize, default 15
# (src/metabase/app_db/connection_pool_setup.clj application-db-connection-pool-props)
METABASE_POOL_DEFAULT = 15


def metabase_chart(env: str = "", db_type: str = "postgres") -> str:
    """The shape of pmint93/helm-charts' metabase chart 2.26 (Metabase v0.59.6): the
    image with no command, MB_DB_TYPE and broken-out MB_DB_HOST/PORT/DBNAME, the user
    and password from the chart's own <release>-database Secret, extraEnv appended."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: metabase}}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: metabase
          image: "metabase/metabase:v0.59.6.x"
          env:
          - {{name: MB_JETTY_HOST, value: "0.0.0.0"}}
          - {{name: MB_JETTY_PORT, value: "3000"}}
          - {{name: MB_DB_TYPE, value: "{db_type}"}}
          - {{name: MB_DB_HOST, value: "db"}}
          - {{name: MB_DB_PORT, value: "5432"}}
          - {{name: MB_DB_DBNAME, value: "metabase"}}
          - name: MB_DB_USER
            valueFrom: {{secretKeyRef: {{name: metabase-database, key: username}}}}
{env}"""


def test_metabase_on_postgresql_holds_c3p0s_15(tmp_path):
    """pmint93/helm-charts metabase 2.26.0 (v0.59.6) on PostgreSQL, replicas 2: a client
    of unknown size ('>= 3') since a JDBC URL stopped standing for HikariCP; Metabase's
    application DB pool is c3p0 with maxPoolSize 15: (2 + 1) x 15 = 45."""
    write(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=300"),
                     "k8s/metabase.yaml": metabase_chart()})
    (pool,) = _client_pools(tmp_path, "metabase")
    assert (pool.size.value, pool.bound) == (METABASE_POOL_DEFAULT, "default")
    assert "connection_pool_setup.clj" in pool.size.source.default
    assert pool.route is not None and (pool.route.host, pool.route.dbname) == ("db", "metabase")
    _, budgets = _budgets(tmp_path)
    assert budgets["db"].peak == (2 + 1) * METABASE_POOL_DEFAULT
    env = ("          - name: MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE\n"
           "            value: \"30\"\n")
    write(tmp_path, {"k8s/metabase.yaml": metabase_chart(env)})
    (pool,) = _client_pools(tmp_path, "metabase")
    assert pool.size.value == 30 and pool.size.source.line == 22  # the value's line
    # H2 (the chart's default database.type) or MySQL: no PostgreSQL pool
    write(tmp_path, {"k8s/metabase.yaml": metabase_chart(db_type="mysql")})
    assert _client_pools(tmp_path, "metabase") == []


@pytest.mark.parametrize(("env", "size"), [
    ({"MB_DB_CONNECTION_URI": "jdbc:postgresql://db:5432/metabase"}, METABASE_POOL_DEFAULT),
    # the URI's subprotocol wins over MB_DB_TYPE (app_db/env.clj env->db-type)
    ({"MB_DB_TYPE": "mysql", "MB_DB_CONNECTION_URI": "postgres://db:5432/metabase",
      "MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE": "8"}, 8),
])
def test_metabase_env_only(env, size):
    (pool,) = _pools("metabase/metabase-enterprise:v1.56.3", env).pools
    assert pool.size.value == size


@pytest.mark.parametrize("env", [
    {"MB_SITE_URL": "https://bi.example.com"},  # H2, Metabase's default
    {"MB_DB_TYPE": "postgres", "MB_DB_CONNECTION_URI": "mysql://mysql:3306/metabase"},
    {"MB_DB_TYPE": "postgres", "MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE": "0"},
])
def test_metabase_without_a_postgresql_pool_of_known_size(env):
    got = _pools("metabase/metabase:v0.59.6.x", env)
    assert got.pools == []
    assert bool(got.unknown) == ("MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE" in env)


# Hasura v2: a metadata pool of HASURA_GRAPHQL_PG_STRIPES x HASURA_GRAPHQL_PG_CONNECTIONS
# (default 1 x 50, ServeOptions soConnParams; App.hs initialiseAppEnv initPGPool) and,
# with HASURA_GRAPHQL_DATABASE_URL, the default source's pool (one stripe, 50)
HASURA_CONNECTIONS = 50


def hasura_manifest(env: str = "") -> str:
    """hasura/graphql-engine install-manifests/kubernetes/deployment.yaml (v2.48.16),
    its DATABASE_URL pointed at the fixture's server."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: hasura}}
spec:
  replicas: 1
  template:
    spec:
      containers:
      - image: hasura/graphql-engine:v2.48.16
        name: hasura
        env:
        - name: HASURA_GRAPHQL_DATABASE_URL
          value: postgres://username:password@db:5432/dbname
        - name: HASURA_GRAPHQL_ENABLE_CONSOLE
          value: "true"
{env}"""


def test_hasura_holds_a_metadata_and_a_default_source_pool(tmp_path):
    """Hasura's own install manifest: a client of unknown size ('>= 2'); v2 opens the
    metadata pool (1 stripe x 50) and the default source's pool (50) on the one
    database: (1 + 1 surge) x 100 = 200."""
    write(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=500"),
                     "k8s/hasura.yaml": hasura_manifest()})
    pools = _client_pools(tmp_path, "hasura")
    assert [(p.label.split(" (")[0], p.size.value) for p in pools] == [
        ("Hasura metadata pool", HASURA_CONNECTIONS),
        ("Hasura default source pool", HASURA_CONNECTIONS)]
    _, budgets = _budgets(tmp_path)
    assert budgets["db"].peak == (1 + 1) * 2 * HASURA_CONNECTIONS
    env = ("        - {name: HASURA_GRAPHQL_PG_CONNECTIONS, value: \"20\"}\n"
           "        - {name: HASURA_GRAPHQL_PG_STRIPES, value: \"2\"}\n")
    write(tmp_path, {"k8s/hasura.yaml": hasura_manifest(env)})
    metadata, source = _client_pools(tmp_path, "hasura")
    assert (metadata.per_pod(), source.per_pod()) == (2 * 20, 20)  # stripes: metadata only


def test_hasura_metadata_database_apart_and_v1():
    env = {"HASURA_GRAPHQL_METADATA_DATABASE_URL": "postgres://hasura@meta:5432/metadata"}
    (pool,) = _pools("hasura/graphql-engine:v2.40.0.cli-migrations-v3", env).pools
    assert pool.route is not None and pool.route.host == "meta"
    assert pool.size.value == HASURA_CONNECTIONS
    got = _pools("hasura/graphql-engine:v1.3.3", {
        "HASURA_GRAPHQL_DATABASE_URL": "postgres://hasura@db:5432/app"})
    assert got.pools == [] and any("not read" in n for n in got.notices)


# Miniflux 2: DATABASE_MAX_CONNS, default 20 (internal/config/options.go
# defaultDatabaseMaxConns; internal/database/database.go SetMaxOpenConns)
MINIFLUX_DEFAULT = 20
# Atuin's sync server: sqlx max_connections(100), not configurable
# (crates/atuin-server-postgres/src/lib.rs)
ATUIN_POOL = 100


@pytest.mark.parametrize(("image", "env", "size", "bound"), [
    ("ghcr.io/miniflux/miniflux:2.2.1-distroless",
     {"DATABASE_URL": "postgres://miniflux@db:5432/miniflux"}, MINIFLUX_DEFAULT, "default"),
    ("miniflux/miniflux:2.0.51", {"DATABASE_URL": "postgres://miniflux@db:5432/miniflux",
                                  "DATABASE_MAX_CONNS": "8"}, 8, "fixed"),
])
def test_miniflux_holds_database_max_conns(image, env, size, bound):
    (pool,) = _pools(image, env).pools
    assert (pool.label, pool.size.value, pool.bound) == ("Miniflux DATABASE_MAX_CONNS",
                                                        size, bound)
    assert pool.processes is None  # one Go process
    if bound == "default":
        assert "defaultDatabaseMaxConns" in pool.size.source.default


def test_atuin_server_holds_a_pool_of_100_and_its_client_none():
    env = {"ATUIN_DB_URI": "postgres://atuin@db:5432/atuin", "ATUIN_PORT": "8888"}
    (pool,) = pools_for_container(replace(
        container(env, args=("server", "start")), image="ghcr.io/atuinsh/atuin:18.3.0")).pools
    assert (pool.label, pool.size.value, pool.bound) == ("Atuin server sqlx pool", ATUIN_POOL,
                                                        "fixed")
    assert "max_connections(100)" in pool.size.source.default
    assert (pool.route.host, pool.route.dbname) == ("db", "atuin")
    # not the server (a client's sync): no pool; a sqlite db_uri: no PostgreSQL
    assert _pools("ghcr.io/atuinsh/atuin:18.3.0", env).pools == []
    sqlite = {"ATUIN_DB_URI": "sqlite:///config/atuin.db"}
    assert pools_for_container(replace(container(sqlite, args=("server", "start")),
                                       image="ghcr.io/atuinsh/atuin:18.13.0")).pools == []


@pytest.mark.parametrize(("tag", "pools"), [("18.12.0", 2), ("18.11.2", 1)])
def test_atuin_read_replica_pool_from_18_12(tag, pools):
    env = {"ATUIN_DB_URI": "postgres://atuin@db:5432/atuin",
           "ATUIN_READ_DB_URI": "postgres://atuin@db-ro:5432/atuin"}
    found = pools_for_container(replace(container(env, args=("server", "start")),
                                        image=f"ghcr.io/atuinsh/atuin:{tag}")).pools
    assert len(found) == pools
    assert [p.route.host for p in found] == ["db", "db-ro"][:pools]


ATUIN_MINIFLUX = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: atuin}
spec:
  strategy: {type: RollingUpdate}
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/atuinsh/atuin:18.3.0
          args: [server, start]
          env:
            - {name: ATUIN_DB_URI, value: "postgres://atuin@db:5432/atuin"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: miniflux}
spec:
  strategy: {type: RollingUpdate}
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/miniflux/miniflux:2.2.1-distroless
          env:
            - {name: DATABASE_URL, value: "postgres://miniflux@db:5432/miniflux"}
"""


def test_atuin_and_miniflux_overrun_a_100_connection_server(tmp_path):
    """bjw-s/home-ops' two apps (app-template, strategy RollingUpdate, 1 replica) at its
    Crunchy cluster: each was a client of unknown size; (1 + 1) x 100 + (1 + 1) x 20 =
    240, OVER 97 (audit l)."""
    write(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=100"), "k8s/apps.yaml": ATUIN_MINIFLUX})
    result, budgets = _budgets(tmp_path)
    assert budgets["db"].peak == 2 * ATUIN_POOL + 2 * MINIFLUX_DEFAULT
    assert not budgets["db"].fits and not budgets["db"].peak_is_floor
    assert not [f for f in result.findings if f.code == "PA106"]


# Vaultwarden: DATABASE_MAX_CONNS, default 10 (src/config.rs database_max_conns;
# src/db/mod.rs Pool::builder().max_size), 1.17.0 on
VAULTWARDEN_DEFAULT = 10
VW_URL = {"DATABASE_URL": "postgresql://vaultwarden@vw-db:5432/vaultwarden"}


@pytest.mark.parametrize(("image", "env", "size", "bound"), [
    ("vaultwarden/server:1.32.7", VW_URL, VAULTWARDEN_DEFAULT, "default"),
    ("ghcr.io/dani-garcia/vaultwarden:1.37.2-alpine", VW_URL, VAULTWARDEN_DEFAULT,
     "default"),
    ("docker.io/vaultwarden/server:latest", {**VW_URL, "DATABASE_MAX_CONNS": "4"}, 4,
     "fixed"),
    ("bitwardenrs/server-postgresql:1.20.0", {"DATABASE_URL": "postgres://vw@vw-db/vw"},
     VAULTWARDEN_DEFAULT, "default"),
])
def test_vaultwarden_holds_database_max_conns(image, env, size, bound):
    (pool,) = _pools(image, env).pools
    assert (pool.label, pool.size.value, pool.bound) == ("Vaultwarden DATABASE_MAX_CONNS",
                                                        size, bound)
    assert pool.processes is None and pool.route.host.startswith("vw-db")
    if bound == "default":
        assert "database_max_conns" in pool.size.source.default


def test_vaultwarden_sqlite_other_servers_and_old_tags_open_no_postgres_pool():
    # SQLite by default, MySQL by its URL
    assert _pools("vaultwarden/server:1.32.7").pools == []
    assert _pools("vaultwarden/server:1.32.7", {"DATABASE_URL": "mysql://vw@db/vw"}).pools == []
    # another image whose last name is "server" is not Vaultwarden
    assert _pools("ghcr.io/acme/server:1.0", VW_URL).pools == []
    got = _pools("bitwardenrs/server-postgresql:1.16.3", VW_URL)
    assert got.pools == [] and any("not read" in n for n in got.notices)
    # a size in a file, or out of 1..256 (config.rs refuses to start): unknown
    for env in ({"DATABASE_MAX_CONNS_FILE": "/run/secrets/conns"}, {"DATABASE_MAX_CONNS": "0"}):
        got = _pools("vaultwarden/server:1.32.7", {**VW_URL, **env})
        assert got.pools == [] and got.unknown


VAULTWARDEN_APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: vaultwarden}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/dani-garcia/vaultwarden:1.37.2
          env:
            - {name: DATABASE_URL, value: "postgresql://vaultwarden@db:5432/vaultwarden"}
"""


def test_vaultwarden_counts_at_its_server(tmp_path):
    """It was a client of unknown size: 2 pods (+1 in a rolling update) x 10."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/vw.yaml": VAULTWARDEN_APP})
    result, budgets = _budgets(tmp_path)
    assert budgets["db"].peak == 3 * VAULTWARDEN_DEFAULT and budgets["db"].fits
    assert not [f for f in result.findings if f.code == "PA106"]


# Sonarr/Radarr/Prowlarr/Lidarr: ConnectionStringFactory.cs sets no Max Pool Size:
# Npgsql's default MaxPoolSize 100, one pool for the main and one for the log database
NPGSQL_MAX_POOL_SIZE = 100


@pytest.mark.parametrize(("image", "prefix", "app"), [
    ("lscr.io/linuxserver/sonarr:4.0.19.2979-ls290", "SONARR", "Sonarr"),
    ("ghcr.io/home-operations/radarr:6.0.3.10276", "Radarr", "Radarr"),
    ("ghcr.io/hotio/prowlarr:release-2.3.5.5323", "PROWLARR", "Prowlarr"),
    ("linuxserver/lidarr:latest", "LIDARR", "Lidarr"),
])
def test_arr_apps_hold_two_npgsql_pools_of_100(image, prefix, app):
    env = {f"{prefix}__POSTGRES__HOST": "arr-db", f"{prefix}__POSTGRES__USER": "arr",
           f"{prefix}__POSTGRES__PASSWORD": "secret"}
    main, log = _pools(image, env).pools
    assert [(p.label, p.size.value, p.bound) for p in (main, log)] == [
        (f"{app} Npgsql pool (main database)", NPGSQL_MAX_POOL_SIZE, "fixed"),
        (f"{app} Npgsql pool (log database)", NPGSQL_MAX_POOL_SIZE, "fixed")]
    assert [(p.route.host, p.route.dbname) for p in (main, log)] == [
        ("arr-db", f"{app.lower()}-main"), ("arr-db", f"{app.lower()}-log")]
    assert "MaxPoolSize 100" in main.size.source.default and main.processes is None


def test_arr_log_database_off_own_names_sqlite_and_old_tags():
    env = {"SONARR__POSTGRES__HOST": "db", "Sonarr__Postgres__MainDb": "tv",
           "SONARR__LOG__DBENABLED": "False"}
    (main,) = _pools("ghcr.io/home-operations/sonarr:4.0.15.2941", env).pools
    assert main.route.dbname == "tv"
    # before 4.0.4.1616 Log:DbEnabled is not read: the log database opens
    assert len(_pools("linuxserver/sonarr:4.0.2.1183", env).pools) == 2
    # no Postgres host: SQLite
    assert _pools("linuxserver/sonarr:4.0.19.2979", {"SONARR__LOG__DBENABLED": "false"}
                  ).pools == []
    got = _pools("linuxserver/radarr:4.1.0.6175", {"RADARR__POSTGRES__HOST": "db"})
    assert got.pools == [] and any("reads no Radarr__Postgres__" in n for n in got.notices)


def test_arr_database_from_a_secret_not_held_is_said_not_known():
    """Aviator-Coding/home-ops: SONARR__POSTGRES__MAINDB from an ExternalSecret's Secret
    printed 'note: database None'."""
    env = {"SONARR__POSTGRES__HOST": "db", "SONARR__LOG__DBENABLED": "False"}
    hidden = EnvVar(name="SONARR__POSTGRES__MAINDB", value=None, secret=True,
                    source=Source(path="k8s/app.yaml", line=20, key="SONARR__POSTGRES__MAINDB"))
    base = container(env)
    (main,) = pools_for_container(replace(
        base, image="ghcr.io/home-operations/sonarr:4.0.19.2979", env=(*base.env, hidden))
    ).pools
    assert "None" not in main.note
    assert main.note == ("database not known: set from a reference not held here "
                         "(k8s/app.yaml:20)")
    # named, or its default: as before
    (main,) = _pools("ghcr.io/home-operations/sonarr:4.0.19.2979", env).pools
    assert main.note == "database sonarr-main (PostgresMainDb default)"


@pytest.mark.parametrize("image", ["ghcr.io/onedr0p/sonarr-develop:4.0.9.2244",
                                   "ghcr.io/onedr0p/radarr-develop:5.11.0.9244",
                                   "ghcr.io/onedr0p/prowlarr-nightly:1.25.0.4759"])
def test_arr_builds_of_another_channel_are_the_same_application(image):
    """onedr0p/home-ops at 412535d1 ran ghcr.io/onedr0p/{sonarr,radarr,prowlarr}-develop:
    each was a client of unknown size (1 per pod) where it holds two pools of 100."""
    app = image.rsplit("/", 1)[-1].split("-", 1)[0].upper()
    got = _pools(image, {f"{app}__POSTGRES__HOST": "db"})
    assert [p.size.value for p in got.pools] == [100, 100]
    assert _pools("ghcr.io/acme/sonarr-exporter:1", {"SONARR__POSTGRES__HOST": "db"}
                  ).pools == []  # another program named after it


SONARR_APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: sonarr}
spec:
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/home-operations/sonarr:4.0.19.2979
          env:
            - {name: SONARR__POSTGRES__HOST, value: db}
            - {name: SONARR__POSTGRES__USER, value: sonarr}
"""


def test_sonarr_overruns_a_50_connection_server(tmp_path):
    """It was a client of unknown size: one pod, two Npgsql pools of 100 = 200."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/sonarr.yaml": SONARR_APP})
    result, budgets = _budgets(tmp_path)
    assert budgets["db"].peak == 2 * NPGSQL_MAX_POOL_SIZE and not budgets["db"].fits
    assert not [f for f in result.findings if f.code == "PA106"]


# Synapse: each psycopg2 database of homeserver.yaml is a Twisted adbapi ConnectionPool
# of args.cp_max, default 5 (twisted/enterprise/adbapi.py ConnectionPool.max)
SYNAPSE_CP_MAX = 5


def synapse_app(database: str, kind: str = "configMap", image: str =
                "ghcr.io/element-hq/synapse:v1.163.2") -> str:
    """homeserver.yaml in a ConfigMap (or Secret) mounted at /data; a main process
    Deployment and a generic worker's with the same file and its own, /w/worker.yaml."""
    data = "stringData" if kind == "secret" else "data"
    ref = "secret: {secretName: synapse}" if kind == "secret" else "configMap: {name: synapse}"
    return f"""
apiVersion: v1
kind: {"Secret" if kind == "secret" else "ConfigMap"}
metadata: {{name: synapse}}
{data}:
  homeserver.yaml: |
    server_name: chat.example.org
    report_stats: false
{database}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: synapse}}
spec:
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: synapse
          image: {image}
          volumeMounts:
            - {{name: config, mountPath: /data/homeserver.yaml, subPath: homeserver.yaml}}
      volumes:
        - name: config
          {ref}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: synapse-worker}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: worker
          image: {image}
          args: [run, --config-path, /data/homeserver.yaml, --config-path, /w/worker.yaml]
          volumeMounts:
            - {{name: config, mountPath: /data/homeserver.yaml, subPath: homeserver.yaml}}
            - {{name: worker, mountPath: /w}}
      volumes:
        - name: config
          {ref}
        - name: worker
          configMap: {{name: synapse-worker}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: synapse-worker}}
data:
  worker.yaml: |
    worker_app: synapse.app.generic_worker
    worker_name: worker1
"""


SYNAPSE_PG = """    database:
      name: psycopg2
      args:
        user: synapse
        host: db
        database: synapse
"""


def test_synapse_adbapi_pool_defaults_to_cp_max_5(tmp_path):
    """The main process and each worker: one pool of cp_max 5: (1 + 2) x 5 = 15."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/synapse.yaml": synapse_app(SYNAPSE_PG)})
    (pool,) = _client_pools(tmp_path, "synapse")
    assert (pool.label, pool.size.value, pool.bound) == ("Synapse database.args.cp_max",
                                                        SYNAPSE_CP_MAX, "default")
    assert "adbapi.py" in pool.size.source.default
    assert (pool.route.host, pool.route.dbname) == ("db", "synapse")
    result, budgets = _budgets(tmp_path)
    assert budgets["db"].peak == 3 * SYNAPSE_CP_MAX
    assert not [f for f in result.findings if f.code == "PA106"]


def test_synapse_cp_max_from_a_secret_and_sqlite(tmp_path):
    set_max = SYNAPSE_PG + "        cp_min: 5\n        cp_max: 10\n"
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/synapse.yaml": synapse_app(set_max, kind="secret")})
    (pool,) = _client_pools(tmp_path, "synapse-worker")
    assert (pool.size.value, pool.bound) == (10, "fixed")
    assert (pool.size.source.path, pool.size.source.line) == ("k8s/synapse.yaml", 16)
    _, budgets = _budgets(tmp_path)
    assert budgets["db"].peak == 3 * 10
    # SQLite (the default name): no PostgreSQL pool
    sqlite = "    database:\n      args: {database: /data/homeserver.db}\n"
    write(tmp_path, {"k8s/synapse.yaml": synapse_app(sqlite)})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    assert not [c for c in topo.clients if c.name.startswith("synapse")]


# Paperless-ngx: /init (s6) runs granian ASGI workers (GRANIAN_WORKERS or
# PAPERLESS_WEBSERVER_WORKERS, default 1), Celery's PAPERLESS_TASK_WORKERS children
# (default 1) and document_consumer in one container; Django under ASGI is unbounded
# unless PAPERLESS_DB_POOLSIZE (2.18+) or PAPERLESS_DB_OPTIONS pool.max_size (3.0+)
PAPERLESS_PG = {"PAPERLESS_DBHOST": "paperless-db", "PAPERLESS_REDIS": "redis://redis:6379"}


def _by_label(pools):
    return {p.label: p for p in pools}


def test_paperless_webserver_is_unbounded_without_a_pool():
    got = _by_label(_pools("ghcr.io/paperless-ngx/paperless-ngx:2.20.3", PAPERLESS_PG).pools)
    assert set(got) == {"Paperless-ngx webserver (granian ASGI) Django connections",
                        "Paperless-ngx Celery worker child", "Paperless-ngx document_consumer"}
    web = got["Paperless-ngx webserver (granian ASGI) Django connections"]
    assert web.bound == "unbounded" and web.processes.value == 1
    assert got["Paperless-ngx Celery worker child"].processes.value == 1
    assert {p.route.host for p in got.values()} == {"paperless-db"}
    assert {p.route.dbname for p in got.values()} == {"paperless"}


def test_paperless_pool_size_bounds_each_process():
    env = {**PAPERLESS_PG, "PAPERLESS_DB_POOLSIZE": "4", "PAPERLESS_WEBSERVER_WORKERS": "2",
           "PAPERLESS_TASK_WORKERS": "3", "PAPERLESS_CONSUMER_DISABLE": "true"}
    got = _pools("paperlessngx/paperless-ngx:2.18.4", env).pools
    assert sorted((p.size.value, p.processes.value if p.processes else 1, p.bound)
                  for p in got) == [(1, 3, "fixed"), (4, 2, "fixed")]
    # GRANIAN_WORKERS wins over PAPERLESS_WEBSERVER_WORKERS (svc-webserver/run)
    got = _by_label(_pools("ghcr.io/paperless-ngx/paperless-ngx:3.0.5",
                           {**env, "GRANIAN_WORKERS": "5",
                            "PAPERLESS_DB_OPTIONS": "pool.max_size=6,connect_timeout=5"}).pools)
    web = got["Paperless-ngx webserver (granian ASGI) Django connections (psycopg pool "
              "max_size)"]
    assert (web.size.value, web.processes.value) == (6, 5)
    assert web.size.source.key == "PAPERLESS_DB_OPTIONS pool.max_size"
    # before 2.18.0 no PAPERLESS_DB_POOLSIZE: unbounded
    (web, *_) = _pools("ghcr.io/paperless-ngx/paperless-ngx:2.17.1", env).pools
    assert web.bound == "unbounded"


def test_paperless_sqlite_mariadb_and_old_tags():
    image = "ghcr.io/paperless-ngx/paperless-ngx:2.20.3"
    assert _pools(image, {"PAPERLESS_REDIS": "redis://redis:6379"}).pools == []
    assert _pools(image, {**PAPERLESS_PG, "PAPERLESS_DBENGINE": "mariadb"}).pools == []
    got = _pools("ghcr.io/paperless-ngx/paperless-ngx:2.14.7", PAPERLESS_PG)
    assert got.pools == [] and any("not read" in n for n in got.notices)
    # the image running another program (a document_exporter Job): not this count
    assert _pools(image, PAPERLESS_PG, command=("document_exporter", "/export")).pools == []


PAPERLESS_APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: paperless}
spec:
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/paperless-ngx/paperless-ngx:2.20.3
          env:
            - {name: PAPERLESS_DBHOST, value: db}
            - {name: PAPERLESS_DB_POOLSIZE, value: "8"}
            - {name: PAPERLESS_WEBSERVER_WORKERS, value: "2"}
            - {name: PAPERLESS_TASK_WORKERS, value: "2"}
"""


def test_paperless_counts_every_process_at_its_server(tmp_path):
    """One pod: 2 granian workers x 8 + 2 Celery children + the consumer = 19."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/paperless.yaml": PAPERLESS_APP})
    result, budgets = _budgets(tmp_path)
    assert budgets["db"].peak == 2 * 8 + 2 * 1 + 1
    assert not [f for f in result.findings if f.code == "PA106"]


@pytest.mark.parametrize("command", [("/harbor/harbor_core", "-mode=migrate"),
                                     ("/harbor/harbor_core", "--mode", "migrate")])
def test_harbor_core_migrate_mode_is_a_migration_not_the_serving_pool(command):
    """goharbor/harbor-helm's pre-upgrade hook runs `harbor_core -mode=migrate`: it was
    counted at the serving pool (POSTGRESQL_MAX_OPEN_CONNS 900); migrate mode runs the
    migrations one after the other and exits (src/core/main.go)."""
    env = {"POSTGRESQL_MAX_OPEN_CONNS": "900", "POSTGRESQL_HOST": "harbor-db"}
    (pool,) = _pools("goharbor/harbor-core:v2.13.0", env, command).pools
    assert (pool.label, pool.size.value) == ("Harbor core -mode=migrate", 2)
    (serving,) = _pools("goharbor/harbor-core:v2.13.0", env, ("/harbor/harbor_core",)).pools
    assert serving.size.value == 900


@pytest.mark.parametrize(("image", "env", "why"), [
    # a Secret's value: not held here
    ("postgrest/postgrest:v12.2.0", {"PGRST_DB_POOL": None},
     "PostgREST db-pool is set by PGRST_DB_POOL (k8s/app.yaml:9) from a secret or "
     "reference whose value is not in the repository"),
    ("mattermost/mattermost-team-edition:11.6.1", {"MM_SQLSETTINGS_MAXOPENCONNS": None},
     "Mattermost SqlSettings.MaxOpenConns is set by MM_SQLSETTINGS_MAXOPENCONNS "
     "(k8s/app.yaml:9) from a secret or reference whose value is not in the repository"),
    # not a number the application reads
    ("n8nio/n8n:2.26.0", {"DB_TYPE": "postgresdb", "DB_POSTGRESDB_POOL_SIZE": "ten"},
     "n8n DB_POSTGRESDB_POOL_SIZE at k8s/app.yaml:11 is 'ten', not a number "
     "pool-advisor can read"),
])
def test_a_stack_s_size_not_read_is_unknown_not_dropped(image, env, why):
    """A size variable from a Secret, or not a number, was a notice ('not a number we
    can read') and no pool: the application counted as opening nothing, a silent zero
    wherever it connects. Now its size is unknown (PA106)."""
    c = container({k: v for k, v in env.items() if v is not None})
    hidden = tuple(EnvVar(name=k, source=Source(path="k8s/app.yaml", line=9),
                          from_ref=f"secret:app/{k}", secret=True)
                   for k, v in env.items() if v is None)
    found = pools_for_container(replace(c, image=image, env=c.env + hidden))
    assert found.pools == []
    assert found.unknown == [why]
    assert not [n for n in found.notices if "not a number we can read" in n]
