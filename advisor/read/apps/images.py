"""Applications deployed from their published images with env only: the pool is an
env variable of the image's own configuration, or the application's documented
default. One JVM / Go / Haskell process per container (pools are not per worker).

Defaults, each read in the application's own source:
- Keycloak (Quarkus distribution) `db-pool-max-size`, env KC_DB_POOL_MAX_SIZE, default
  100: keycloak/keycloak quarkus/config-api .../DatabaseOptions.java
  (`DB_POOL_MAX_SIZE = new OptionBuilder<>("db-pool-max-size", ...).defaultValue(100)`).
  The command line (`kc.sh start --db-pool-max-size=25`, or `... 25`) wins over the env:
  quarkus/runtime .../configuration/ConfigArgsConfigSource.java has ordinal 600,
  KcEnvConfigSource.java 500; parseConfigArgs takes `--key=value` or the next argument.
- Keycloak's legacy (WildFly) image, jboss/keycloak and quay.io/keycloak/keycloak before
  17 or tagged -legacy (17.0.1-legacy ... 18.0.2-legacy): no pool variable. Its
  datasource KeycloakDS is added with no max-pool-size (keycloak/keycloak-containers
  server/tools/cli/databases/postgres/change-database.cli, run by docker-entrypoint.sh
  when DB_VENDOR=postgres), so WildFly's default applies: 20, wildfly/wildfly
  connector .../subsystems/common/pool/Constants.java (MAX_POOL_SIZE default
  `Defaults.MAX_POOL_SIZE`), IronJacamar org.jboss.jca.common.api.metadata.Defaults
  (`MAX_POOL_SIZE = Integer.valueOf(20)`).
- SonarQube (sonarqube, sonarsource/sonarqube) `sonar.jdbc.maxActive`, default 60:
  SonarSource/sonarqube server/sonar-process .../ProcessProperties.java
  (`JDBC_MAX_ACTIVE("sonar.jdbc.maxActive", "60")`), HikariCP's maximumPoolSize
  (sonar-db-core DefaultDatabase.java `SONAR_JDBC_MAX_ACTIVE, "maximumPoolSize"`). Read
  from conf/sonar.properties, then the env SONAR_JDBC_MAXACTIVE, then `-Dkey=value`
  arguments, each over the one before (sonar-main AppSettingsLoaderImpl.reloadProperties:
  loadPropertiesFromEnvironment, then CommandLineParser.parseArguments; the variable's
  name is SettingFormatter.fromJavaPropertyToEnvVariable). Two processes of a pod open
  that pool each: the web server (sonar-webserver PlatformLevel1) and the Compute Engine
  (sonar-ce ComputeEngineContainerImpl.populateLevel1) both add DefaultDatabase. The
  Data Center search nodes (`-datacenter-search` tags) run Elasticsearch only.
- Mattermost SqlSettings.MaxOpenConns, env MM_SQLSETTINGS_MAXOPENCONNS, default 300:
  mattermost/mattermost server/public/model/config.go SqlSettings.SetDefaults
  (`s.MaxOpenConns = NewPointer(300)`).
- Harbor core `POSTGRESQL_MAX_OPEN_CONNS`, default "0": goharbor/harbor
  src/lib/config/metadata/metadatalist.go (`EnvKey: "POSTGRESQL_MAX_OPEN_CONNS",
  DefaultValue: "0"`), passed to Go database/sql SetMaxOpenConns: 0 is no limit.
- PostgREST `db-pool`, env PGRST_DB_POOL, default 10: PostgREST/postgrest
  src/PostgREST/Config.hs (`fromMaybe 10 <$> optInt "db-pool"`).
- n8n with DB_TYPE=postgresdb (else SQLite), env DB_POSTGRESDB_POOL_SIZE, default 2:
  n8n-io/n8n packages/@n8n/config/src/configs/database.config.ts
  (`@Env('DB_POSTGRESDB_POOL_SIZE') poolSize: number = 2`, PostgresConfig), given to
  TypeORM as `poolSize`, pg-pool's `max`. The setting came in n8n 1.18.0 (n8n-io/n8n#7772,
  packages/cli/src/config/schema.ts `poolSize: {default: 2, env:
  'DB_POSTGRESDB_POOL_SIZE'}`); before, TypeORM passed no max: pg-pool's 10.
- Grafana (grafana/grafana, grafana/grafana-enterprise, grafana/grafana-oss) [database]
  `max_open_conn`, default 0: grafana/grafana pkg/services/sqlstore/database_config.go
  readConfig (`dbCfg.MaxOpenConn = sec.Key("max_open_conn").MustInt(0)`), conf/defaults.ini
  (`max_open_conn =`, "default is 0 (mean not set)"); sqlstore.go gives it to the xorm
  engine (`engine.SetMaxOpenConns(ss.dbCfg.MaxOpenConn)`), Go database/sql: 0 is no
  limit. PostgreSQL when `url`'s scheme is postgres, else when `type = postgres` (readConfig
  reads `url` first; defaults.ini `type = sqlite3`). Each key from grafana.ini (the charts'
  ConfigMap at /etc/grafana/grafana.ini), under GF_DATABASE_<KEY> (Grafana's env override
  of every key). Recent sources also open a unified-storage engine with the same
  settings (pkg/storage/unified/sql/db/dbimpl newResourceDBProvider, getEngine): from
  which release is not verified here, so it is named in the pool's note, not counted.
- Gitea (gitea/gitea, docker.gitea.com/gitea, -rootless tags) [database] MAX_OPEN_CONNS,
  default 0: go-gitea/gitea modules/setting/database.go loadDBSetting
  (`Database.MaxOpenConns = sec.Key("MAX_OPEN_CONNS").MustInt(0)`), models/db
  engine_init.go (`SetMaxOpenConns(setting.Database.MaxOpenConns)`): 0 is no limit.
  PostgreSQL when DB_TYPE is postgres. Read from a mounted app.ini, then the section
  files the Gitea chart's init container writes app.ini from (its Secret
  <release>-inline-config at /env-to-ini-mounts/inlines/, then additionalConfigSources:
  helm-chart scripts/init-containers/config/config_environment.sh), then that init
  container's own GITEA__database__KEY (gitea.additionalConfigFromEnvs: the script
  reloads the variables it started with over the section files before
  environment-to-ini) when the application container reads the app.ini it writes (the
  same GITEA_APP_INI on the same volume, the chart's data volume at /data; else the
  setting is unknown, never the default), then the container's
  GITEA__database__KEY, which the image's start writes into app.ini last
  (docker/rootless/usr/local/bin/docker-setup.sh `environment-to-ini`; the section's
  case does not matter, modules/setting/config_env.go decodeEnvSectionKey). The legacy
  DB_TYPE env fills the app.ini of a first start (docker-setup.sh's template). Read at
  go-gitea/gitea 01da3d4d7e (database.go), 00c93ca8a1 (config_env.go: prefix GITEA__ only).
- Forgejo (code.forgejo.org/forgejo/forgejo, codeberg.org/forgejo/forgejo, -rootless
  tags), Gitea's fork, read the same way (its chart, forgejo-helm, renders gitea.config
  into the same <release>-inline-config section files, exported as FORGEJO__ variables
  by its init container). MAX_OPEN_CONNS is 100 from Forgejo 8.0.0: commit f23fd221e4
  "Limit database max connections by default" (forgejo#3383, release-notes/8.0.0/3383.md)
  changed `MustInt(0)` to `MustInt(100)`; the branches v8.0 to v13.0/forgejo (b5e91db9c9)
  have 100, v7.0/forgejo (10343f761a) and v1.21 keep 0 (project-mirrors/forgejo-as-gitea-
  fork). Its env is FORGEJO__SECTION__KEY or GITEA__SECTION__KEY (config_env.go
  `EnvConfigKeyPrefixGitea = "^(FORGEJO|GITEA)__"`, since v1.20, fe9659a579),
  applied by environment-to-ini in the order of the process's environment: Kubernetes
  does not keep an order (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go
  makeEnvironmentVariables appends them `for k, v := range tmpEnv`), so two names for one
  key that disagree leave it unknown.
- Metabase (metabase/metabase, metabase/metabase-enterprise) application database pool,
  c3p0, env MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE, default 15: metabase/metabase
  src/metabase/app_db/connection_pool_setup.clj application-db-connection-pool-props
  (`"maxPoolSize" (or (config/config-int :mb-application-db-max-connection-pool-size)
  15)`, "15 is the c3p0 default"); earlier src/metabase/db/connection_pool_setup.clj
  merged maxPoolSize only when set, leaving c3p0's default 15 (resources/c3p0.properties
  sets initialPoolSize and minPoolSize only). PostgreSQL when MB_DB_CONNECTION_URI's
  (jdbc:) subprotocol is postgresql/postgres, else when MB_DB_TYPE is postgres (h2 by
  default): app_db/env.clj env->db-type. Recent sources add a Quartz job-store pool
  (MB_QUARTZ_MAX_CONNECTION_POOL_SIZE, 5) and an audit pool (MB_AUDIT_DB_MAX_CONNECTION_
  POOL_SIZE, 5) on the same database (connection_pool_setup.clj): from which release is
  not verified here, so they are named in the pool's note, not counted.
- Hasura GraphQL Engine v2 (hasura/graphql-engine): HASURA_GRAPHQL_PG_CONNECTIONS, default
  50, per stripe, HASURA_GRAPHQL_PG_STRIPES, default 1 (server/src-lib Hasura/Server/Init
  pgConnsEnv "Maximum number of Postgres connections that can be opened per stripe
  (default: 50)", pgStripesEnv; the ServeOptions test "Default == 1, 50, 180, 600"). Its
  metadata pool is `PG.initPGPool bciMetadataConnInfo ... soConnParams` (App.hs
  initialiseAppEnv), on HASURA_GRAPHQL_METADATA_DATABASE_URL else
  HASURA_GRAPHQL_DATABASE_URL (initBasicConnectionInfo); pg-client initPGPool is
  resource-pool's createPool stripes x conns. With HASURA_GRAPHQL_DATABASE_URL the default
  source has its own pool (mkPgSourceResolver: PG.defaultConnParams, one stripe, cpConns
  max_connections, defaultPostgresPoolSettings 50), whose max_connections the first start
  writes into the metadata from HASURA_GRAPHQL_PG_CONNECTIONS (envVarsMovedToMetadata).
  Hasura v1 (one pool) is not read.
- Mastodon (mastodon/mastodon): config/database.yml
  `pool: <%= ENV["DB_POOL"] || ENV['MAX_THREADS'] || 5 %>`; config/puma.rb workers
  `ENV.fetch('WEB_CONCURRENCY') { 2 }`, threads `ENV.fetch('MAX_THREADS') { 5 }`;
  Sidekiq `-c N`; streaming/database.js `max: parseIntFromEnvValue(env.DB_POOL, 10, ...)`.
  Streaming before 4.2 (CHANGELOG 4.2.0: "Remove clustering from streaming API",
  mastodon#24655): streaming/index.js forks `numWorkers = +process.env.STREAMING_CLUSTER_NUM
  || (env === 'development' ? 1 : Math.max(os.cpus().length - 1, 1))` workers with throng,
  each `startWorker` making its own `new pg.Pool` with `max: process.env.DB_POOL || 10`
  (4.1.x); before 4.1.0 (mastodon#23470, CHANGELOG 4.1.0) `max: 10`, no DB_POOL.
  Rails processes hold at most one connection per thread (advisor/read/apps/rails.py).
- Miniflux 2 (ghcr.io/miniflux/miniflux, miniflux/miniflux, -distroless tags): one Go
  database/sql pool, DATABASE_MAX_CONNS, default 20: miniflux/v2 internal/config/options.go
  (2.2.1: `defaultDatabaseMaxConns = 20`, parser.go `parseInt(value,
  defaultDatabaseMaxConns)`), internal/database/database.go `db.SetMaxOpenConns(
  maxConnections)`; config/config.go from 2.0.1 on (`c.getInt("DATABASE_MAX_CONNS",
  defaultDatabaseMaxConns)`, 20), every 2.x tag. PostgreSQL only (DATABASE_URL).
- Atuin's sync server (ghcr.io/atuinsh/atuin, run as `atuin server start`): one sqlx
  pool of 100, not configurable: atuinsh/atuin crates/atuin-server-postgres/src/lib.rs
  `PgPoolOptions::new().max_connections(100)` (v18.3.0 Postgres::new; v15.0.0
  atuin-server/src/database.rs; every tag has that one value), on ATUIN_DB_URI (the
  server settings' db_uri, `Environment::with_prefix("atuin")`, settings.rs). From
  v18.12.0 a second pool of 100 opens on ATUIN_READ_DB_URI when it is set (lib.rs
  `read_pool`, `settings.read_db_uri`): counted, on its own route. A sqlite:// db_uri
  is no PostgreSQL pool. The client commands of the same image open none.
- Vaultwarden (vaultwarden/server, ghcr.io/dani-garcia/vaultwarden, bitwardenrs/server
  before its rename): one r2d2 pool of DATABASE_MAX_CONNS, default 10: dani-garcia/
  vaultwarden src/config.rs (1.37.2: `database_max_conns: u32, false, def, 10;`, checked
  between 1 and 256), src/db/mod.rs DbPool::from_config (`Pool::builder()
  .max_size(max_conns)`); the same line from 1.17.0 (before it init_pool gave r2d2 no
  size: not read here). The variable is the key upper-cased (make_config! @getenv), or
  <KEY>_FILE, a file's text (util.rs get_env_str_value); a data/config.json key wins
  over the env (Config::load "config file overwrites env"), and the admin page does not
  write this one (not editable). PostgreSQL when DATABASE_URL starts postgresql: or
  postgres: (DbConnType::from_url), SQLite by default.
- Sonarr, Radarr, Prowlarr, Lidarr (linuxserver, hotio, home-operations images): with
  <App>__Postgres__Host set (the env, AddEnvironmentVariables, bound to the section
  <App>:Postgres: src/NzbDrone.Core/Datastore/PostgresOptions.cs, NzbDrone.Host
  Bootstrap.cs), ConnectionStringFactory.cs GetPostgresConnectionString builds an
  NpgsqlConnectionStringBuilder of Database, Host, Username, Password, Port and Enlist
  only, for the main database and for the log database (PostgresMainDb "<app>-main",
  PostgresLogDb "<app>-log", ConfigFileProvider.cs): two Npgsql pools of MaxPoolSize's
  default, 100 (npgsql/npgsql src/Npgsql/NpgsqlConnectionStringBuilder.cs `[DefaultValue
  (100)] MaxPoolSize`, v7.0.9/v7.0.10 as Sonarr 4.0.19.2979 and Lidarr 2.14.5.4824 ship,
  v9.0.3 as Radarr 6.0.3.10276 and Prowlarr 2.3.5.5323), not configurable by env. The
  log database's is not opened when <App>__Log__DbEnabled is false (Bootstrap.cs
  logDbEnabled, AddDummyLogDatabase). PostgresOptions came in Sonarr 4.0.0.741, Radarr
  4.2.0.6438, Prowlarr 0.4.2.1879, Lidarr 1.1.2.2935; Log:DbEnabled in Sonarr 4.0.4.1616,
  Radarr 5.5.3.8819, Prowlarr 1.17.2.4511, Lidarr 2.8.1.4482. Without the env variable
  the database is SQLite unless config.xml (not in the repository) names a PostgresHost.
- Nextcloud's official image (apache: Apache prefork MaxRequestWorkers PHP processes;
  fpm: PHP-FPM pm.max_children; one PDO connection each): advisor/read/apps/nextcloud.py;
  Langfuse's web and worker images (one Prisma client each): advisor/read/apps/langfuse.py;
  Apache Superset (apache/superset: gunicorn workers, Celery children, beat, the init
  Job, an engine per process): advisor/read/apps/superset.py; Concourse's web node
  (concourse/concourse `web`: api and backend pools, gc, worker, lock, LISTEN and auth
  storage connections): advisor/read/apps/concourse.py.
- Synapse (matrixdotorg/synapse, ghcr.io/element-hq/synapse): advisor/read/apps/synapse.py,
  from the configuration files its command line names; Matrix Authentication Service:
  advisor/read/apps/mas.py; Mattermost's database config store (MM_CONFIG a database
  DSN) and its MySQL setups: advisor/read/apps/mattermost.py.
- Paperless-ngx (ghcr.io/paperless-ngx/paperless-ngx, paperlessngx/paperless-ngx), from
  2.15.0: its ENTRYPOINT /init (s6-overlay) runs in one container the webserver
  (docker/rootfs/etc/s6-overlay/s6-rc.d/svc-webserver/run: `granian --interface asginl
  ... paperless.asgi:application`, GRANIAN_WORKERS=${GRANIAN_WORKERS:-
  ${PAPERLESS_WEBSERVER_WORKERS:-1}}), the Celery worker (svc-worker: `celery --app
  paperless worker`, prefork, CELERY_WORKER_CONCURRENCY = PAPERLESS_TASK_WORKERS, default
  1: src/paperless/settings), the consumer (svc-consumer: `manage.py document_consumer`,
  not when PAPERLESS_CONSUMER_DISABLE is set), the scheduler (svc-scheduler: celery beat,
  CELERY_BEAT_SCHEDULE_FILENAME, a file: no database) and, only with
  PAPERLESS_ENABLE_FLOWER, flower (no database). PostgreSQL when PAPERLESS_DBHOST is set
  (and PAPERLESS_DBENGINE is not mariadb, or from 3.0 not sqlite/mariadb):
  settings.py _parse_db_settings (2.18.0), settings/custom.py parse_db_settings (3.0.5).
  Django under an ASGI server holds one connection per request in flight (see
  advisor/read/apps/django.py): a webserver worker is unbounded unless a psycopg pool
  caps it, PAPERLESS_DB_POOLSIZE (from 2.18.0: `"pool": {"min_size": 1, "max_size":
  int(os.getenv("PAPERLESS_DB_POOLSIZE"))}` when > 0) or, from 3.0, PAPERLESS_DB_OPTIONS
  `pool.max_size=N` over it (parse_dict_from_str). A Celery child and the consumer run
  one thread each: one connection.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from advisor.model import Container, CpuFormula, EnvVar, Pool, Source, Term
from advisor.read.apps.base import (
    InitWriter,
    StackContext,
    image_is,
    option_value,
    option_values,
    tag_version,
)
from advisor.read.apps.coder import coder_pools, is_coder
from advisor.read.apps.concourse import concourse_pools, is_concourse
from advisor.read.apps.dify import (
    dify_api_pools,
    is_dify_api,
    is_plugin_daemon,
    plugin_daemon_pools,
)
from advisor.read.apps.kong import is_kong, kong_pools
from advisor.read.apps.langfuse import is_langfuse, langfuse_pools
from advisor.read.apps.mas import MAS_NAMES, mas_pools
from advisor.read.apps.nextcloud import is_nextcloud, nextcloud_pools
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.piped import is_piped_backend, piped_pools
from advisor.read.apps.processes import puma_workers_label
from advisor.read.apps.redash import is_redash, redash_pools
from advisor.read.apps.sentry import is_sentry, sentry_pools
from advisor.read.apps.source import AppFile
from advisor.read.apps.supabase import (
    gotrue_pools,
    is_gotrue,
    is_postgres_meta,
    is_storage,
    postgres_meta_pools,
    storage_pools,
)
from advisor.read.apps.superset import is_superset, superset_pools
from advisor.read.apps.synapse import SYNAPSE_NAMES, synapse_pools
from advisor.read.apps.twenty import is_twenty, twenty_pools
from advisor.read.apps.unleash import is_unleash, unleash_pools
from advisor.read.apps.windmill import is_windmill, windmill_pools
from advisor.read.apps.zammad import NAMES as ZAMMAD_NAMES
from advisor.read.apps.zammad import zammad_pools

N8N_POOL_SIZE = 2  # database.config.ts PostgresConfig.poolSize (n8n 1.18.0+)
# IronJacamar Defaults.MAX_POOL_SIZE, WildFly's datasource default (legacy Keycloak)
WILDFLY_MAX_POOL_SIZE = 20
KEYCLOAK_WILDFLY = "Keycloak (WildFly) KeycloakDS max-pool-size"
KEYCLOAK_WILDFLY_DEFAULT = (
    "Keycloak legacy (WildFly) image: KeycloakDS sets no max-pool-size (keycloak-containers "
    "change-database.cli at 88b2f48, 18.0.2), WildFly default 20 (IronJacamar "
    "Defaults.MAX_POOL_SIZE at 487223a3c9)")
N8N_POOL_BEFORE_1_18 = 10  # pg-pool's max when TypeORM passes none
MINIFLUX_MAX_CONNS = 20  # internal/config/options.go defaultDatabaseMaxConns
ATUIN_POOL = 100  # atuin-server-postgres lib.rs PgPoolOptions max_connections(100)
ATUIN = "Atuin server sqlx pool"
ATUIN_NAMES = ("atuin",)
TESLAMATE_POOL_SIZE = 10  # teslamate-org/teslamate v4.1.1 config/runtime.exs:137


MATTERMOST = "Mattermost SqlSettings.MaxOpenConns"


class ImageStack(Struct, frozen=True):
    label: str
    # The published images' repository names, the last path component of the image
    # (quay.io/keycloak/keycloak, bitnami/keycloak: "keycloak"), matched whole: a name
    # that only contains one (ghcr.io/padminisys/keycloak-config, a Python job calling
    # Keycloak's REST API) is another program.
    names: tuple[str, ...]
    env: tuple[str, ...]  # variables that set the pool, first wins
    default: int | None  # None: no default known -> unknown; 0 -> unbounded
    default_text: str = ""
    trigger_env: tuple[str, ...] = ()  # env names that identify the stack without the image
    # (variable, value) without which the application uses no PostgreSQL (n8n's DB_TYPE)
    requires: tuple[str, str] | None = None
    # (version, pool size, why) for image tags before `version`, which read no variable
    before: tuple[tuple[int, int], int, str] | None = None
    # a command-line option that sets the pool and wins over `env` (Keycloak's
    # --db-pool-max-size: its CLI config source is ordered before the env's)
    option: str = ""
    # (variable, values) that choose another database than PostgreSQL when set so
    # (Keycloak's KC_DB=dev-mem: an in-memory H2, no connection to any server)
    other_engine: tuple[str, tuple[str, ...]] | None = None
    # (option, engine, images): in these published images, the engine used when neither
    # other_engine's variable nor this option is set (Keycloak's `db` defaults to
    # dev-file, an H2 file in the container: no PostgreSQL connection). A custom image
    # may build another in (`kc.sh build --db=postgres`), so only the images named.
    unset_engine: tuple[str, str, tuple[str, ...]] | None = None


STACKS: tuple[ImageStack, ...] = (
    # quay.io/keycloak/keycloak, keycloak/keycloak, bitnami/keycloak; Red Hat's build
    # registry.redhat.io/rhbk/keycloak-rhel9
    ImageStack("Keycloak db-pool-max-size", ("keycloak", "keycloak-rhel9"),
               ("KC_DB_POOL_MAX_SIZE",), 100,
               "Keycloak default db-pool-max-size 100 (quarkus/config-api DatabaseOptions.java "
               "at f6a2b334d1)",
               ("KC_DB", "KC_DB_URL", "KC_DB_URL_HOST"), option="--db-pool-max-size",
               # the `db` option's other vendors (Keycloak 26 DatabaseOptions.DB and
               # Database.Vendor: dev-file and dev-mem are H2)
               other_engine=("KC_DB", ("dev-file", "dev-mem", "h2", "mariadb", "mssql",
                                       "mysql", "oracle", "tidb")),
               # DatabaseOptions.DB `.defaultValue("dev-file")` (keycloak/keycloak@f6a2b334d1
               # quarkus/config-api/.../config/DatabaseOptions.java:22-27, :25; the same in
               # the newer DatabaseOptions that adds named datasources)
               unset_engine=("--db", "dev-file", ("quay.io/keycloak/keycloak",
                                                  "docker.io/keycloak/keycloak",
                                                  "keycloak/keycloak"))),
    # mattermost/mattermost-team-edition, mattermost/mattermost-enterprise-edition (not
    # mattermost-operator or mattermost-push-proxy, which hold no database pool)
    ImageStack(MATTERMOST,
               ("mattermost-team-edition", "mattermost-enterprise-edition", "mattermost"),
               ("MM_SQLSETTINGS_MAXOPENCONNS",), 300,
               "Mattermost default SqlSettings.MaxOpenConns 300 (server/public/model/config.go "
               "at 33b68c603c)",
               ("MM_SQLSETTINGS_DATASOURCE",)),
    # goharbor/harbor-core, bitnami/harbor-core, ... (harbor-db is the server)
    ImageStack("Harbor core POSTGRESQL_MAX_OPEN_CONNS", ("harbor-core", "harbor-jobservice"),
               ("POSTGRESQL_MAX_OPEN_CONNS",), 0,
               "Harbor default POSTGRESQL_MAX_OPEN_CONNS 0 = database/sql without a limit "
               "(src/lib/config/metadata/metadatalist.go at c50c7ddd6e)"),
    ImageStack("Harbor exporter HARBOR_DATABASE_MAX_OPEN_CONNS", ("harbor-exporter",),
               ("HARBOR_DATABASE_MAX_OPEN_CONNS",), None),
    # postgrest/postgrest, bitnami/postgrest
    ImageStack("PostgREST db-pool", ("postgrest",), ("PGRST_DB_POOL",), 10,
               "PostgREST default db-pool 10 (src/library/PostgREST/Config.hs at "
               "4834678902681402a5)",
               ("PGRST_DB_URI",)),
    # n8nio/n8n, docker.n8n.io/n8nio/n8n
    ImageStack("n8n DB_POSTGRESDB_POOL_SIZE", ("n8n",), ("DB_POSTGRESDB_POOL_SIZE",),
               N8N_POOL_SIZE, "n8n 1.18+ default DB_POSTGRESDB_POOL_SIZE 2 "
               "(@n8n/config database.config.ts PostgresConfig.poolSize)",
               ("DB_POSTGRESDB_HOST",), requires=("DB_TYPE", "postgresdb"),
               before=((1, 18), N8N_POOL_BEFORE_1_18,
                       "n8n before 1.18.0: no DB_POSTGRESDB_POOL_SIZE, TypeORM passes no "
                       "max: pg-pool default 10 (n8n-io/n8n#7772)")),
    # ghcr.io/miniflux/miniflux, miniflux/miniflux (2.x; -distroless tags)
    ImageStack("Miniflux DATABASE_MAX_CONNS", ("miniflux",), ("DATABASE_MAX_CONNS",),
               MINIFLUX_MAX_CONNS, "Miniflux 2.x default DATABASE_MAX_CONNS 20 "
               "(internal/config/options.go defaultDatabaseMaxConns, 2.2.1)"),
    # teslamate/teslamate: one Ecto repo, TeslaMate.Repo (lib/teslamate/application.ex;
    # DatabaseCheck starts and stops it before, the entrypoint's migrate eval exits before)
    ImageStack("TeslaMate DATABASE_POOL_SIZE", ("teslamate",), ("DATABASE_POOL_SIZE",),
               TESLAMATE_POOL_SIZE, "TeslaMate default DATABASE_POOL_SIZE 10 (config/"
               "runtime.exs `pool_size: System.get_env(\"DATABASE_POOL_SIZE\", \"10\")`, "
               "v4.1.1)"),
)
ENV_PREFIXES = ("KC_DB", "MM_SQLSETTINGS_", "POSTGRESQL_MAX_OPEN_CONNS",
                "HARBOR_DATABASE_MAX_OPEN_CONNS", "PGRST_DB_", "DB_POSTGRESDB_")
# ghcr.io/mastodon/mastodon, tootsuite/mastodon, ghcr.io/mastodon/mastodon-streaming
MASTODON_NAMES = ("mastodon", "mastodon-streaming")


def _repo_name(image: str) -> str:
    ref = image.split("@", 1)[0].lower()
    return ref.rsplit("/", 1)[-1].split(":", 1)[0]


def image_stack(ctx: StackContext) -> ImageStack | None:
    name = _repo_name(ctx.container.image)
    names = {e.name for e in ctx.container.env}
    for stack in STACKS:
        if name in stack.names:
            return stack
    for stack in STACKS:
        if names & set(stack.env) or names & set(stack.trigger_env):
            return stack
    return None


def _int_env(ctx: StackContext, name: str) -> tuple[int, Source] | None:
    n = parse_int(ctx.env_value(name))
    return (n, ctx.env_source(name)) if n is not None else None


# A command that starts SonarQube: the image's entrypoint, its jar, or java
_SONAR_RUNS = re.compile(r"docker/entrypoint\.sh|sonar-application|sonarqube\.jar|"
                         r"(?:^|[\s/])java(?:\s|$)")
SONAR_MAX_ACTIVE = 60  # ProcessProperties.java JDBC_MAX_ACTIVE default
SONAR = "SonarQube sonar.jdbc.maxActive"
SONAR_KEY = "sonar.jdbc.maxActive"
SONAR_PROCESSES = Term(
    label="SonarQube processes with a pool (web server, Compute Engine)", value=2,
    source=Source.default_of("SonarQube: the web server and the Compute Engine each add "
                             "DefaultDatabase (PlatformLevel1; sonar-ce "
                             "ComputeEngineContainerImpl.populateLevel1 at 2e9eeb4eb9)",
                             key="processes"))


def _sonar_properties_value(ctx: StackContext) -> tuple[str, Source] | None:
    """sonar.jdbc.maxActive in a sonar.properties the pod mounts: the last entry, as
    Properties.load keeps it."""
    from advisor.read.apps.javaprops import PropError, parse_properties

    found = None
    for f in ctx.files("sonar-properties"):
        try:
            docs = parse_properties(f.text)
        except PropError as exc:
            ctx.problem(f.cite(exc.line), exc.message)
            continue
        for entry in (e for doc in docs for e in doc if e.key == SONAR_KEY):
            found = entry.value, f.cite(entry.line, SONAR_KEY, SONAR_KEY)
    return found


def sonarqube_pools(ctx: StackContext) -> list[Pool]:
    """SonarQube's web server and Compute Engine, one sonar.jdbc.maxActive pool each."""
    tag = ctx.container.image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    if "search" in tag:
        return []  # a Data Center search node: Elasticsearch, no database
    if ctx.container.command and not _SONAR_RUNS.search(" ".join(ctx.container.command)):
        # the image running another program: a chart's curl test Pod, the init
        # container that writes conf/sonar.properties with sh
        return []
    given = option_value(ctx, "-D" + SONAR_KEY)
    if given is None and (var := ctx.env("SONAR_JDBC_MAXACTIVE")) is not None:
        if var.value is None:
            ctx.hidden_size(SONAR, "SONAR_JDBC_MAXACTIVE", ctx.env_source(var.name))
            return []
        given = var.value, ctx.env_source(var.name)
    given = given or _sonar_properties_value(ctx)
    if given is None:
        pool = ctx.pool(SONAR, SONAR_MAX_ACTIVE, Source.default_of(
            "SonarQube default sonar.jdbc.maxActive 60 (sonar-process ProcessProperties.java "
            "at 4380a1d159)",
            key=SONAR_KEY), bound="default", per_process=False,
            note="sonar.jdbc.maxActive unset (sonar.properties, SONAR_JDBC_MAXACTIVE, -D)")
        return [replace(pool, processes=SONAR_PROCESSES)]
    n = parse_int(given[0])
    if n is None or n < 1:
        # HikariCP refuses a maximumPoolSize below 1; a value not read is not a default
        ctx.unknown.append(f"{SONAR} at {given[1].label()} is {given[0]!r}, not a pool "
                           "size pool-advisor can read")
        return []
    return [replace(ctx.pool(SONAR, n, given[1], per_process=False),
                    processes=SONAR_PROCESSES)]


def _keycloak_wildfly(image: str) -> bool:
    """Keycloak's legacy WildFly distribution: every jboss/keycloak (its last tag was
    16.1.1), and keycloak/keycloak before 17 or tagged -legacy (17.0.1-legacy)."""
    ref = image.split("@", 1)[0].lower()
    repo, colon, tag = ref.rpartition(":")
    if not colon or "/" in tag:
        repo, tag = ref, ""  # no tag (a registry's :port is not one)
    if repo.endswith("jboss/keycloak"):
        return True
    if not repo.endswith("keycloak/keycloak"):
        return False
    version = tag_version(image)
    return tag.endswith("-legacy") or (version is not None and version < (17, 0))


def keycloak_wildfly_pools(ctx: StackContext) -> list[Pool]:
    """The legacy image's one datasource, KeycloakDS, when DB_VENDOR is postgres (else
    H2 or another database: no PostgreSQL pool)."""
    vendor = ctx.env("DB_VENDOR")
    if vendor is not None and vendor.value is None:
        ctx.hidden_size(KEYCLOAK_WILDFLY, "DB_VENDOR", ctx.env_source("DB_VENDOR"))
        return []
    if vendor is None and (hidden := ctx.env_from_hidden("DB_VENDOR")) is not None:
        ctx.env_from_unknown(KEYCLOAK_WILDFLY, "whether Keycloak uses PostgreSQL and where",
                             ("DB_VENDOR",), hidden)
        return []
    if vendor is None or vendor.value.strip().lower() != "postgres":
        return []
    tag = ctx.container.image.rsplit(":", 1)[-1]
    return [ctx.pool(KEYCLOAK_WILDFLY, WILDFLY_MAX_POOL_SIZE, Source.default_of(
        KEYCLOAK_WILDFLY_DEFAULT, key="max-pool-size"), bound="default", per_process=False,
        note=f"image tag {tag} is the WildFly distribution: it reads no "
             "KC_DB_POOL_MAX_SIZE or --db-pool-max-size")]


STREAMING_POOL = 10  # streaming's pg.Pool max without DB_POOL (every version)
STREAMING_CLUSTER = CpuFormula(per_cpu=1, plus=-1, floor=1, applies_to="processes",
                               text="Math.max(os.cpus().length - 1, 1)")


def _streaming_size(ctx: StackContext, version: tuple[int, int] | None) -> Pool:
    """One streaming process's pg.Pool: `max` 10, DB_POOL from 4.1.0 (mastodon#23470)."""
    if version is not None and version < (4, 1):
        return ctx.pool("Mastodon streaming pg pool max", STREAMING_POOL, Source.default_of(
            "Mastodon before 4.1.0 streaming/index.js: pg.Pool max: 10, no DB_POOL "
            "(added by mastodon#23470)", key="max"), bound="default", per_process=False)
    got = _int_env(ctx, "DB_POOL")
    if got:
        return ctx.pool("Mastodon streaming pg pool max (DB_POOL)", got[0], got[1],
                        per_process=False)
    return ctx.pool("Mastodon streaming pg pool max", STREAMING_POOL, Source.default_of(
        "Mastodon 4.1.0+ streaming: pg.Pool max DB_POOL, default 10 (streaming/database.js "
        "at 0eca55c2cf)", key="DB_POOL"),
        bound="default", per_process=False)


def mastodon_streaming_pool(ctx: StackContext, name: str) -> Pool:
    """The streaming server. Before 4.2 (mastodon#24655 removed clustering) it forks
    STREAMING_CLUSTER_NUM workers with throng, else max(CPUs - 1, 1) (1 when NODE_ENV is
    development), and each worker makes its own pg.Pool; the master makes none."""
    # the mastodon-streaming image exists from 4.3 only: one process whatever its tag
    version = tag_version(ctx.container.image) if name == "mastodon" else None
    pool = _streaming_size(ctx, version)
    if version is None or version >= (4, 2):
        return pool
    var = ctx.env("STREAMING_CLUSTER_NUM")
    if var is not None and var.value is None:
        ctx.hidden_size("Mastodon streaming cluster workers", var.name,
                        ctx.env_source(var.name))
        return pool
    label = "Mastodon streaming cluster workers (STREAMING_CLUSTER_NUM)"
    # `+process.env.STREAMING_CLUSTER_NUM || ...`: 0, empty or not a number -> the default
    n = parse_int(var.value) if var is not None else None
    if n is not None and n > 0:
        return replace(pool, processes=Term(label=label, value=n,
                                            source=ctx.env_source(var.name)))
    tag = ctx.container.image.rsplit(":", 1)[-1]
    if ctx.env_value("NODE_ENV") == "development":
        return replace(pool, processes=Term(label=label, value=1, source=ctx.env_source(
            "NODE_ENV")))
    # os.cpus() counts the node's CPUs, not the container's CPU limit
    return replace(pool, processes=Term(
        label=label, value=STREAMING_CLUSTER.at(ctx.cpus), source=Source.default_of(
            "Mastodon before 4.2 streaming/index.js: numWorkers = "
            "+STREAMING_CLUSTER_NUM || Math.max(os.cpus().length - 1, 1)",
            key="STREAMING_CLUSTER_NUM")),
        bound="cpu" if pool.bound == "fixed" else pool.bound, cpu_formula=STREAMING_CLUSTER,
        cpus=ctx.cpus_term(), node=ctx.node,
        note=f"image tag {tag}: STREAMING_CLUSTER_NUM unset, one worker per node CPU but one")


TOOTCTL_CONCURRENCY = 5  # `option :concurrency, default: 5` of the parallel commands
# tootctl commands that run parallelize_with_progress or call reset_connection_pools!
# themselves (lib/mastodon/cli/media.rb remove, refresh; search.rb deploy)
_TOOTCTL_PARALLEL = (("media", "remove"), ("media", "refresh"), ("search", "deploy"))


def tootctl_pool(ctx: StackContext, words: list[str], size: int, pool_src: Source, *,
                 fixed: bool) -> Pool:
    """One tootctl process (a CronJob's `bin/tootctl media remove`), no Puma: a parallel
    command resets the pool to --concurrency + 1 (lib/mastodon/cli/helper.rb
    reset_connection_pools!: `config['pool'] = options[:concurrency] + 1`), the threads and
    the main one; another command keeps the Rails pool, DB_POOL || MAX_THREADS || 5."""
    start = words.index("tootctl") + 1
    rest = words[start:]
    sources = ctx.container.word_sources
    conc: tuple[int, Source] | None = None
    for i, w in enumerate(rest):
        if w in ("-c", "--concurrency") and i + 1 < len(rest):
            value, at = rest[i + 1], start + i + 1
        elif w.startswith("--concurrency="):
            value, at = w.split("=", 1)[1], start + i
        else:
            continue
        n = parse_int(value)
        if n is not None:
            where = sources[at] if len(sources) == len(words) else ctx.container.source
            conc = n, replace(where, key="tootctl --concurrency")
    label = f"tootctl {' '.join(rest[:2])}"
    if conc is None and tuple(rest[:2]) not in _TOOTCTL_PARALLEL:
        return ctx.pool(f"Mastodon {label} Rails pool", size, pool_src,
                        bound="fixed" if fixed else "default", per_process=False,
                        note="one tootctl process with the Rails pool")
    n, src = conc or (TOOTCTL_CONCURRENCY, Source.default_of(
        f"Mastodon lib/mastodon/cli: {label} --concurrency default 5 (cli/media.rb at "
        "03a6d09c8c)", key="concurrency"))
    return ctx.pool(f"Mastodon {label} pool (--concurrency + 1)", n + 1, src,
                    bound="fixed" if conc else "default", per_process=False,
                    note=f"{n} worker threads + the main one (helper.rb "
                         "reset_connection_pools!)")


def mastodon_rails(image: str) -> tuple[str, Source] | None:
    """Rails 6.1 or 7.0 under a Mastodon image v4.0 to v4.2 (4.2.0 shipped on 2023-09-21,
    before Rails 7.1.0; the Rails 7 update mastodon#24241 was reverted from 4.1,
    mastodon#25667); 4.3 runs Rails 7.1 (mastodon#32542): (Rails, the tag as source)."""
    if _repo_name(image) != "mastodon":
        return None
    version = tag_version(image)
    if version is None or not (4, 0) <= version < (4, 3):
        return None
    rails = "6.1" if version < (4, 2) else "7.0"
    return rails, Source.default_of(
        f"Mastodon {version[0]}.{version[1]} runs Rails {rails}: ActiveRecord::Migrator "
        "with_advisory_lock_connection holds the lock on a second connection (Rails 6.1 "
        "to 7.0, rails/rails#38235, removed by #46224 in 7.1)", key="db:migrate")


def mastodon_pools(ctx: StackContext) -> list[Pool]:
    """Mastodon run from its image with env only (its own files are in the image)."""
    if ctx.files("database-yml"):
        return []  # its source is in the repository: the Rails reader reads it

    name = _repo_name(ctx.container.image)
    words = [w.rsplit("/", 1)[-1] for w in (*ctx.container.command, *ctx.container.args)]
    default = "mastodon default"
    if name == "mastodon-streaming" or any("streaming" in w for w in words):
        return [mastodon_streaming_pool(ctx, name)]
    pool = _int_env(ctx, "DB_POOL") or _int_env(ctx, "MAX_THREADS")
    pool_src = pool[1] if pool else Source.default_of(
        "Mastodon config/database.yml: DB_POOL || MAX_THREADS || 5 (at 0f2e8476e0)",
        key="pool")
    size = pool[0] if pool else 5
    if "tootctl" in words:
        return [tootctl_pool(ctx, words, size, pool_src, fixed=pool is not None)]
    if "sidekiq" in words:
        conc = None
        conc_src = Source.default_of("Sidekiq 7.x/8.x default concurrency 5", key="concurrency")
        for i, w in enumerate(words[:-1]):
            if w in ("-c", "--concurrency"):
                conc = parse_int(words[i + 1])
                conc_src = ctx.container.word_sources[i + 1] \
                    if len(ctx.container.word_sources) == len(words) \
                    else replace(ctx.container.source, key="sidekiq -c")
        threads = conc or 5
        db_pool = _int_env(ctx, "DB_POOL")
        version = tag_version(ctx.container.image)
        if db_pool is None and (version is None or version >= (4, 2)):
            # Mastodon 4.2+ (mastodon/mastodon#26488): in a Sidekiq process the pool is
            # DB_POOL || Sidekiq's concurrency || 5, not MAX_THREADS
            pool = conc and (conc, conc_src)
            size = threads
            assumed = "" if version else " (the image tag names no version: 4.2+ assumed)"
            pool_src = conc_src if conc else Source.default_of(
                "Mastodon 4.2+ config/database.yml: DB_POOL || Sidekiq concurrency "
                f"(5 by default) in Sidekiq{assumed}", key="pool")
        n = min(size, threads)
        # The pool and the concurrency move together (advise): the one not counted is
        # carried along so that shrinking one shrinks the other.
        pool_term = Term(label="Mastodon Rails pool (DB_POOL)", value=size, source=pool_src)
        conc_term = Term(label="Sidekiq concurrency (-c)", value=threads, source=conc_src)
        counted = ctx.pool("Mastodon Sidekiq Rails pool", n, pool_src if n == size else
                           conc_src, bound="fixed" if pool or conc else "default",
                           per_process=False,
                           note=f"pool {size} vs Sidekiq concurrency {threads}: one "
                                "connection per thread, never more than the pool")
        moves = [] if conc_src == pool_src else [conc_term if n == size else pool_term]
        return _with_replica(ctx, [replace(counted, moves_with=moves)])
    workers = _int_env(ctx, "WEB_CONCURRENCY")
    threads = _int_env(ctx, "MAX_THREADS")
    n_threads = threads[0] if threads else 5
    n = min(size, n_threads)
    processes = Term(label="Puma workers (WEB_CONCURRENCY)" if not workers or workers[0] > 0
                     else puma_workers_label(workers[0]) + " (WEB_CONCURRENCY)",
                     value=max(workers[0], 1) if workers else 2,
                     source=workers[1] if workers else Source.default_of(
                         f"{default}: config/puma.rb WEB_CONCURRENCY 2 (at 04c259a875)",
                         key="workers"))
    threads_term = Term(label="Puma max threads (MAX_THREADS)", value=n_threads,
                        source=threads[1] if threads else Source.default_of(
                            f"{default}: config/puma.rb MAX_THREADS 5 (at 04c259a875)",
                            key="MAX_THREADS"))
    pool_term = Term(label="Mastodon Rails pool (DB_POOL)", value=size, source=pool_src)
    pool_obj = ctx.pool("Mastodon web Rails pool", n,
                        pool_src if n == size else threads_term.source,
                        bound="fixed" if pool else "default", per_process=False,
                        note=f"pool {size} vs {n_threads} Puma threads: one connection per "
                             "thread, never more than the pool")
    moves = [] if threads_term.source == pool_src else \
        [threads_term if n == size else pool_term]
    min_threads = _int_env(ctx, "MIN_THREADS")
    if min_threads is not None:
        # Puma refuses to start with min threads above max: it moves down with them
        moves.append(Term(label="Puma min threads (MIN_THREADS)", value=min_threads[0],
                          source=min_threads[1]))
    return _with_replica(ctx, [replace(pool_obj, processes=processes, moves_with=moves)])


def _with_replica(ctx: StackContext, pools: list[Pool]) -> list[Pool]:
    """Mastodon 4.2+ reads from a replica when REPLICA_DB_NAME or REPLICA_DATABASE_URL
    is set (app/models/application_record.rb: `connects_to database: { writing:
    :primary, reading: ENV['REPLICA_DB_NAME'] || ENV['REPLICA_DATABASE_URL'] ? :replica
    : :primary }`); config/database.yml's `replica` entry takes the same `pool` as the
    primary (`<<: *default`), so each process opens a second pool of that size there:
    host REPLICA_DB_HOST, else DB_HOST (docs.joinmastodon.org admin/scaling
    #read-replicas: REPLICA_DB_HOST, _PORT, _NAME, _USER, or REPLICA_DATABASE_URL)."""
    from advisor.read.apps.urls import route_from_parts, route_from_url

    if ctx.env("REPLICA_DB_NAME") is None and ctx.env("REPLICA_DATABASE_URL") is None:
        return pools
    version = tag_version(ctx.container.image)
    if version is not None and version < (4, 2):
        return pools  # before 4.2 the variables are read by nothing
    url = ctx.env("REPLICA_DATABASE_URL")
    hidden: Setting | None = None  # the replica's URL or host, from a Secret not held
    if url is not None and url.value is None:
        route, hidden = None, Setting(None, ctx.env_source("REPLICA_DATABASE_URL"))
    elif url is not None and url.value:
        route = route_from_url(url.value, ctx.env_source("REPLICA_DATABASE_URL"))
    else:
        def first(*names: str) -> tuple[str | None, str]:
            for name in names:
                var = ctx.env(name)
                if var is not None:
                    return var.value, name
            return None, names[-1]

        host, host_var = first("REPLICA_DB_HOST", "DB_HOST")
        port, _ = first("REPLICA_DB_PORT", "DB_PORT")
        dbname, _ = first("REPLICA_DB_NAME", "DB_NAME")
        user, _ = first("REPLICA_DB_USER", "DB_USER")
        route = None
        if host is not None or ctx.env(host_var) is None:
            route = route_from_parts(host or "localhost", port, dbname, user,
                                     ctx.env_source(host_var))
        else:
            hidden = Setting(None, ctx.env_source(host_var))
    assumed = "" if version else " (the image tag names no version: 4.2+ assumed)"
    replica = [replace(p, label=f"{p.label} (read replica)", route=route,
                       note=f"{p.note}; the same pool again on the replica{assumed}")
               for p in pools]
    if hidden is not None:
        # its URL or host from a Secret not held here: the replica pools connect where
        # the repository does not say, not to the primary nor in no budget
        return pools + _route_not_held(ctx, replica, "Mastodon read replica pool", hidden)
    if route is None:
        ctx.notices.append(f"{ctx.container.name}: Mastodon reads from a replica "
                           "(REPLICA_DB_NAME or REPLICA_DATABASE_URL set) whose host is not "
                           "known here: those connections are in no budget")
        return pools
    return pools + replica


class Setting(Struct, frozen=True):
    """A setting's value as the application reads it, and where it is written; value
    None: set from a Secret or reference the repository does not hold."""

    value: str | None
    source: Source
    # value None for another reason than a reference not held here: why (said as unknown)
    why: str = ""


def _env_setting(ctx: StackContext, name: str) -> Setting | None:
    var = ctx.env(name)
    return None if var is None else Setting(var.value, ctx.env_source(name))


def _route_not_held(ctx: StackContext, pools: list[Pool], label: str,
                    where: Setting | None) -> list[Pool]:
    """`pools`, marked as connecting where the repository does not say when `where`
    (the setting naming their database) is not held here (StackContext.hidden_route):
    never the URL another variable of the container names. Said even for no pools
    (their size not read either)."""
    if where is None or where.value is not None:
        return pools
    return ctx.hidden_route(pools, label, where.source.key or "its database setting",
                            where.source)


def _ini_setting(f: AppFile, section: str, key: str, shown: str) -> Setting | None:
    from advisor.read.apps.goini import parse_ini

    found = parse_ini(f.text).get(section, {}).get(key)
    return None if found is None else Setting(found.value, f.cite(found.line, shown, key))


def _max_open_conns(ctx: StackContext, label: str, given: Setting | None, key: str,
                    default_text: str, note: str = "", default: int = 0) -> list[Pool]:
    """Go database/sql SetMaxOpenConns(n): n <= 0 is no limit (unbounded, PA102).
    `default`: the application's value when `key` is unset (0: no limit)."""
    if given is None and default > 0:
        return [ctx.pool(label, default, Source.default_of(default_text, key=key),
                         bound="default", per_process=False,
                         note="; ".join(n for n in (f"{key} unset", note) if n))]
    if given is None:
        return [ctx.pool(label, 0, Source.default_of(default_text, key=key),
                         bound="unbounded", per_process=False,
                         note=f"{key} unset: {default_text}")]
    if given.value is None:
        if given.why:
            ctx.unknown.append(given.why)
        else:
            ctx.hidden_size(label, given.source.key or key, given.source)
        return []
    n = parse_int(given.value)
    if n is None:
        ctx.unknown.append(f"{label} at {given.source.label()} is {given.value!r}, not a "
                           "pool size pool-advisor can read")
        return []
    if n <= 0:
        return [ctx.pool(label, 0, given.source, bound="unbounded", per_process=False,
                         note=f"{key}={n}: database/sql without a limit")]
    return [ctx.pool(label, n, given.source, per_process=False, note=note)]


GRAFANA = "Grafana [database] max_open_conn"
GRAFANA_NAMES = ("grafana", "grafana-enterprise", "grafana-oss")
GRAFANA_DEFAULT = ("Grafana default [database] max_open_conn 0 = database/sql without a "
                   "limit (sqlstore database_config.go MustInt(0) at a8dd3a999e; "
                   "conf/defaults.ini)")
# Grafana's own source opens, for its unified storage, a second engine with the same
# [database] settings (pkg/storage/unified/sql/db/dbimpl newResourceDBProvider, getEngine);
# from which release it does is not verified here
GRAFANA_SECOND_ENGINE = (
    "recent Grafana also opens a unified-storage engine with these [database] settings "
    "(storage/unified/sql/db/dbimpl): not counted, its first release not verified")


def _grafana_setting(ctx: StackContext, key: str) -> Setting | None:
    """[database] `key`: GF_DATABASE_<KEY> over grafana.ini (Grafana's env override)."""
    env = _env_setting(ctx, "GF_DATABASE_" + key.upper())
    if env is not None:
        return env
    found = None
    for f in ctx.files("grafana-ini"):
        found = _ini_setting(f, "database", key, f"database.{key}") or found
    return found


def _runs_other(ctx: StackContext, servers: tuple[str, ...]) -> bool:
    """The image runs another program than its server: a command none of `servers`
    is in (the image's entrypoint runs the server when there is no command)."""
    if not ctx.container.command:
        return False
    line = " ".join((*ctx.container.command, *ctx.container.args))
    return not any(s in line for s in servers)


def grafana_pools(ctx: StackContext) -> list[Pool]:
    """Grafana's one database/sql pool (sqlstore's xorm engine, SetMaxOpenConns) when
    its [database] is PostgreSQL: `url`'s scheme, else `type` (sqlite3 by default)."""
    from advisor.read.apps.urls import route_from_parts, route_from_url

    if ctx.container.role == "init" or _runs_other(ctx, ("run.sh", "grafana-server",
                                                         "grafana server")):
        return []
    url = _grafana_setting(ctx, "url")
    kind = url if url is not None and url.value != "" else _grafana_setting(ctx, "type")
    if kind is not None and kind.value is None:
        ctx.unknown.append(f"{GRAFANA}: Grafana's database "
                           f"{'url' if kind is url else 'type'} is set from a reference "
                           f"not held here ({kind.source.label()}): whether it uses "
                           "PostgreSQL is not known")
        return []
    db_type = (kind.value or "") if kind is not None else "sqlite3"
    if kind is url:
        db_type = db_type.partition("://")[0]
    if db_type.strip().lower() != "postgres":
        # the env overrides grafana.ini; `url` wins over `type` when set: a variable
        # unset here that an envFrom Secret not held may set decides instead
        url_env = ctx.env("GF_DATABASE_URL")
        names = ("GF_DATABASE_URL",) if url_env is not None and url_env.value else \
            ("GF_DATABASE_URL", "GF_DATABASE_TYPE")
        if (hidden := ctx.env_from_hidden(*names)) is not None:
            ctx.env_from_unknown(GRAFANA, "whether Grafana's database is PostgreSQL, and "
                                 "where", names, hidden)
        return []  # SQLite (the default) or MySQL
    route = None
    host = None
    if url is not None and url.value:
        route = route_from_url(url.value, url.source)
    elif (host := _grafana_setting(ctx, "host")) is not None and host.value:
        name, user = _grafana_setting(ctx, "name"), _grafana_setting(ctx, "user")
        route = route_from_parts(host.value, None, name.value if name else None,
                                 user.value if user else None, host.source)
    given = _grafana_setting(ctx, "max_open_conn")
    pools = _max_open_conns(ctx, GRAFANA, given, "max_open_conn", GRAFANA_DEFAULT,
                            note=GRAFANA_SECOND_ENGINE)
    if route is None:
        return _route_not_held(ctx, pools, GRAFANA, host)
    return [replace(p, route=route) for p in pools]


GITEA = "Gitea [database] MAX_OPEN_CONNS"
GITEA_NAMES = ("gitea",)
GITEA_DEFAULT = ("Gitea default [database] MAX_OPEN_CONNS 0 = database/sql without a limit "
                 "(modules/setting/database.go MustInt(0), go-gitea/gitea at 01da3d4d7e)")
FORGEJO = "Forgejo [database] MAX_OPEN_CONNS"
# code.forgejo.org/forgejo/forgejo, codeberg.org/forgejo/forgejo (and -rootless tags)
FORGEJO_NAMES = ("forgejo",)
FORGEJO_MAX_OPEN_CONNS = 100  # Forgejo 8.0.0+, modules/setting/database.go MustInt(100)
FORGEJO_DEFAULT = ("Forgejo 8.0.0+ default [database] MAX_OPEN_CONNS 100 (modules/setting/"
                   "database.go MustInt(100), forgejo#3383; v13.0/forgejo at b5e91db9c9)")
FORGEJO_BEFORE_8 = ("Forgejo before 8.0.0 default [database] MAX_OPEN_CONNS 0 = database/sql "
                    "without a limit (modules/setting/database.go MustInt(0), v7.0/forgejo at "
                    "10343f761a)")


class Forge(Struct, frozen=True):
    """Gitea or its fork Forgejo: the same [database] reading, their own env prefixes and
    MAX_OPEN_CONNS default."""

    name: str  # "Gitea", "Forgejo"
    label: str
    prefixes: tuple[str, ...]  # env prefixes config_env.go takes (GITEA__, FORGEJO__)
    default: int  # MAX_OPEN_CONNS unset; 0 is no limit
    default_text: str
    note: str = ""


GITEA_FORGE = Forge("Gitea", GITEA, ("GITEA",), 0, GITEA_DEFAULT)


def _forgejo_major(image: str) -> int | None:
    """The major version of a Forgejo tag (`13.0.3-rootless`, `13-rootless`, `11`,
    `1.21.11-2`); None for another tag (latest, a digest)."""
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    m = re.match(r"v?(\d{1,4})(?:[.-]|$)", tag)
    return int(m.group(1)) if m else None


def forgejo_forge(image: str) -> Forge:
    """Forgejo 8.0.0 changed the default from 0 to 100 (forgejo#3383, release-notes/8.0.0);
    v7.0 and the 1.x releases before it keep 0. Both prefixes since 1.20 (config_env.go
    EnvConfigKeyPrefixGitea `^(FORGEJO|GITEA)__`, "[BRANDING] parse FORGEJO__*")."""
    major = _forgejo_major(image)
    prefixes = ("FORGEJO", "GITEA")
    if major is not None and major < 8:
        return Forge("Forgejo", FORGEJO, prefixes, 0, FORGEJO_BEFORE_8)
    note = "" if major is not None else \
        "the image tag names no version: Forgejo 8.0.0+ assumed"
    return Forge("Forgejo", FORGEJO, prefixes, FORGEJO_MAX_OPEN_CONNS, FORGEJO_DEFAULT,
                 note=note)


def _gitea_env(ctx: StackContext, forge: Forge, key: str) -> Setting | None:
    """<PREFIX>__database__KEY of the container itself (_forge_env)."""
    return _forge_env(ctx.container.env, forge, key)


def _forge_env(env: Iterable[EnvVar], forge: Forge, key: str) -> Setting | None:
    """<PREFIX>__database__KEY (the section's case does not matter: config_env.go
    decodeEnvSectionKey lower-cases it), or <PREFIX>__database__KEY__FILE (a file's text,
    not held here). environment-to-ini applies the variables in the order of the
    process's environment, which Kubernetes does not keep (kubelet_pods.go
    makeEnvironmentVariables appends them from a map): two names for one key that
    disagree leave it unknown (None, with why)."""
    found: dict[str, Setting] = {}
    for var in env:  # one name given twice: the last (kubelet's map)
        prefix, _, rest = var.name.partition("__")
        section, _, name = rest.partition("__")
        if prefix not in forge.prefixes or section.lower() != "database":
            continue
        if name == key:
            found[var.name] = Setting(var.value, replace(var.source, key=var.name))
        elif name == key + "__FILE":
            found[var.name] = Setting(None, replace(var.source, key=var.name))
    if len({(s.value, (s.source.key or "").endswith("__FILE")) for s in found.values()}) > 1:
        first = next(iter(found.values()))
        return Setting(None, first.source, why=(
            f"{forge.label}: {', '.join(sorted(found))} disagree, and {forge.name} applies "
            "them in the order of the container's environment, which Kubernetes does not "
            "keep (kubelet makeEnvironmentVariables)"))
    return next(iter(found.values()), None)


def _gitea_setting(ctx: StackContext, forge: Forge, key: str) -> Setting | None:
    """[database] `key` as the container's Gitea or Forgejo reads it: a mounted app.ini,
    then the section files the chart's init container writes app.ini from (its inline
    config, then additionalConfigSources), then that init container's own
    <PREFIX>__database__KEY (config_environment.sh exports the section files, then
    reloads the variables it was started with over them, then runs environment-to-ini:
    gitea/helm-chart scripts/init-containers/config/config_environment.sh), when this
    container reads the app.ini it writes (unknown when not), then the container's own
    <PREFIX>__database__KEY, which the image's start applies last (docker-setup.sh, s6
    setup: environment-to-ini)."""
    from advisor.read.apps.goini import parse_env_to_ini

    found = None
    for f in ctx.files("gitea-app-ini"):
        found = _ini_setting(f, "database", key, f"database.{key}") or found
    sections = sorted((f for f in ctx.files("gitea-env-to-ini") if f.name == "database"),
                      key=lambda f: ("/additionals/" in f"/{f.rel}", f.rel))
    for f in sections:
        value = parse_env_to_ini(f.text).get(key)
        if value is not None:
            found = Setting(value.value, f.cite(value.line, f"database.{key}", key))
    for writer in ctx.init_writers:
        given = _forge_env(writer.env, forge, key)
        if given is not None and not writer.shared:
            given = Setting(None, given.source, why=(
                f"{forge.label}: {given.source.key} is set in init container "
                f"{writer.container} ({given.source.label()}), whose script writes it into "
                f"{writer.path or 'its app.ini'}; {writer.why}"))
        found = given or found
    return _gitea_env(ctx, forge, key) or found


# The app.ini the image reads without GITEA_APP_INI: the rootless image's
# /etc/gitea/app.ini, the root image's /data/gitea/conf/app.ini (Dockerfile.rootless and
# Dockerfile ENV GITEA_APP_INI, go-gitea/gitea)
_APP_INI_ROOTLESS = "/etc/gitea/app.ini"
_APP_INI_ROOT = "/data/gitea/conf/app.ini"


def _app_ini_path(c: Container) -> str | None:
    """Where the container's Gitea reads (or its init script writes) app.ini: GITEA_APP_INI,
    else the image's; None when GITEA_APP_INI's value is not held here."""
    var = next((e for e in reversed(c.env) if e.name == "GITEA_APP_INI"), None)
    if var is not None:
        ok = var.value is not None and var.value.startswith("/") and "$" not in var.value
        return posixpath.normpath(var.value) if ok and var.value else None
    tag = c.image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    return _APP_INI_ROOTLESS if "rootless" in tag else _APP_INI_ROOT


def _volume_at(w: Any, container: str, path: str) -> tuple[str, str] | None:
    """(volume, path inside it) holding `path` in the container: its deepest mount at or
    above it; None when no volume holds it (the container's own filesystem)."""
    mounts = w.mounts.get(container, [])
    subs = w.sub_paths.get(container, [])
    best = None
    for i, (vol, at) in enumerate(mounts):
        at = posixpath.normpath(at) if at.startswith("/") else ""
        if at and (path == at or path.startswith(at.rstrip("/") + "/")) and \
                (best is None or len(at) > len(best[1])):
            best = (vol, at, subs[i] if i < len(subs) else "")
    if best is None:
        return None
    vol, at, sub = best
    return vol, posixpath.join(sub.strip("/"), path[len(at):].strip("/")).strip("/")


_WRITES_APP_INI = ("config_environment.sh", "environment-to-ini")


def forge_init_writers(w: Any, c: Container) -> tuple[InitWriter, ...]:
    """The init containers of the workload `w` (advisor.read.workloads.Workload) that
    write app.ini from their env (the Gitea and Forgejo charts' init-app-ini runs
    config_environment.sh, whose last step is environment-to-ini), for the running
    container `c`: each with whether `c` reads the file it writes (the same path on the
    same volume; a file in an init container's own filesystem is gone with it)."""
    if c.role == "init":
        return ()
    out = []
    for init in w.containers:
        words = (*init.command, *init.args)
        if init.role != "init" or not any(m in word for word in words
                                          for m in _WRITES_APP_INI):
            continue
        env = tuple(e for e in init.env if e.name.partition("__")[0] in ("GITEA", "FORGEJO"))
        if not env:
            continue
        written, read = _app_ini_path(init), _app_ini_path(c)
        held = _volume_at(w, init.name, written) if written else None
        why = ""
        if written is None or read is None:
            why = "GITEA_APP_INI is set from a reference not held here, so whether " \
                  f"{c.name} reads that file is not known"
        elif written != read:
            why = f"{c.name} reads {read}"
        elif held is None:
            why = (f"{written} is on no volume of {init.name} (its own filesystem, gone when "
                   f"it exits), so {c.name} does not read it")
        elif _volume_at(w, c.name, read) != held:
            why = f"{c.name} does not mount the volume {held[0]} holding it at {read}"
        out.append(InitWriter(container=init.name, env=env, path=written, shared=not why,
                              why=why))
    return tuple(out)


def gitea_pools(ctx: StackContext) -> list[Pool]:
    return forge_pools(ctx, GITEA_FORGE)


def forgejo_pools(ctx: StackContext) -> list[Pool]:
    return forge_pools(ctx, forgejo_forge(ctx.container.image))


def forge_pools(ctx: StackContext, forge: Forge) -> list[Pool]:
    """Gitea's or Forgejo's one xorm engine (models/db engine_init.go SetMaxOpenConns)
    when its [database] DB_TYPE is postgres."""
    from advisor.read.apps.urls import route_from_parts

    if ctx.container.role == "init":
        # the charts' config_environment.sh writes the init container's own <PREFIX>__
        # variables into app.ini: read for the container that reads it (init_writers)
        return []
    if _runs_other(ctx, ("entrypoint", "s6-svscan", "gitea web", "forgejo web")):
        return []  # the chart's init containers (scripts), a `gitea admin` Job
    kind = _gitea_setting(ctx, forge, "DB_TYPE")
    if kind is None and (legacy := _env_setting(ctx, "DB_TYPE")) is not None:
        kind = legacy  # the image's first start writes app.ini from DB_TYPE (docker-setup.sh)
    if kind is not None and kind.value is None:
        why = kind.why or f"is set from a reference not held here ({kind.source.label()})"
        ctx.unknown.append(f"{forge.label}: {forge.name}'s [database] DB_TYPE: {why}: "
                           "whether it uses PostgreSQL is not known")
        return []
    if kind is None or (kind.value or "").strip().lower() != "postgres":
        # the container's <PREFIX>__database__DB_TYPE is applied last (environment-to-
        # ini), the legacy DB_TYPE only without an app.ini setting: unset here, an envFrom
        # Secret not held may set them (section and key in any case: decodeEnvSectionKey)
        if _gitea_env(ctx, forge, "DB_TYPE") is None:
            names = (*(f"{p}__database__DB_TYPE" for p in forge.prefixes),
                     *(("DB_TYPE",) if kind is None else ()))
            if (hidden := ctx.env_from_hidden(*names, fold_case=True)) is not None:
                ctx.env_from_unknown(forge.label, f"whether {forge.name}'s database is "
                                     "PostgreSQL, and where", names, hidden)
        return []  # SQLite, MySQL, MSSQL
    route = None
    if (host := _gitea_setting(ctx, forge, "HOST")) is not None and host.value:
        name, user = _gitea_setting(ctx, forge, "NAME"), _gitea_setting(ctx, forge, "USER")
        route = route_from_parts(host.value, None, name.value if name else None,
                                 user.value if user else None, host.source)
    pools = _max_open_conns(ctx, forge.label, _gitea_setting(ctx, forge, "MAX_OPEN_CONNS"),
                            "MAX_OPEN_CONNS", forge.default_text, default=forge.default,
                            note=forge.note)
    if route is None:
        return _route_not_held(ctx, pools, forge.label, host)
    return [replace(p, route=route) for p in pools]


METABASE = "Metabase application DB c3p0 maxPoolSize"
METABASE_NAMES = ("metabase", "metabase-enterprise")
METABASE_POOL = 15  # connection_pool_setup.clj maxPoolSize, c3p0's own default
METABASE_DEFAULT = ("Metabase default MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE 15 "
                    "(app_db/connection_pool_setup.clj maxPoolSize at a0a2cc4d60; c3p0's "
                    "default maxPoolSize 15 where it was not written)")
METABASE_MORE = (
    "recent Metabase also opens a Quartz job-store pool (MB_QUARTZ_MAX_CONNECTION_POOL_SIZE, "
    "5) and an audit pool (MB_AUDIT_DB_MAX_CONNECTION_POOL_SIZE, 5) on the application "
    "database (connection_pool_setup.clj): not counted, their first release not verified")


def _metabase_db_type(uri: str) -> str:
    """app_db/env.clj raw-connection-string->type: the (jdbc:) subprotocol of
    MB_DB_CONNECTION_URI, postgresql read as postgres."""
    m = re.match(r"(?:jdbc:)?([^:]+):", uri.strip())
    kind = m.group(1).lower() if m else ""
    return "postgres" if kind == "postgresql" else kind


def metabase_pools(ctx: StackContext) -> list[Pool]:
    """Metabase's application database pool (c3p0) when that database is PostgreSQL:
    MB_DB_CONNECTION_URI's subprotocol, else MB_DB_TYPE (h2 by default): env.clj
    env->db-type."""
    from advisor.read.apps.urls import route_from_parts, route_from_url

    if ctx.container.role == "init" or _runs_other(ctx, ("run_metabase", "metabase.jar")):
        return []
    uri = _env_setting(ctx, "MB_DB_CONNECTION_URI")
    kind = _env_setting(ctx, "MB_DB_TYPE")
    decides = uri if uri is not None and uri.value != "" else kind
    if decides is not None and decides.value is None:
        # the URI's subprotocol wins over MB_DB_TYPE: one not held here decides
        ctx.unknown.append(f"{METABASE}: Metabase's {decides.source.key} is set "
                           f"from a reference not held here ({decides.source.label()}): "
                           "whether its application database is PostgreSQL is not known")
        return []
    if decides is None:
        db_type = "h2"
    elif decides is uri:
        db_type = _metabase_db_type(uri.value or "")
    else:
        db_type = (decides.value or "").strip().lower()
    if db_type != "postgres":
        # unset here, an envFrom Secret not held may set the URI (which wins) or the type
        names = ("MB_DB_CONNECTION_URI",) if uri is not None and decides is uri else \
            ("MB_DB_CONNECTION_URI", "MB_DB_TYPE")
        if (hidden := ctx.env_from_hidden(*names)) is not None:
            ctx.env_from_unknown(METABASE, "whether Metabase's application database is "
                                 "PostgreSQL, and where", names, hidden)
        return []  # H2 (the default) or MySQL
    route = None
    host = None
    if uri is not None and uri.value:
        route = route_from_url(uri.value, uri.source)
    elif (host := _env_setting(ctx, "MB_DB_HOST")) is not None and host.value:
        route = route_from_parts(host.value, ctx.env_value("MB_DB_PORT"),
                                 ctx.env_value("MB_DB_DBNAME"), ctx.env_value("MB_DB_USER"),
                                 host.source)
    given = _env_setting(ctx, "MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE")
    if given is None:
        pool = ctx.pool(METABASE, METABASE_POOL, Source.default_of(
            METABASE_DEFAULT, key="MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE"),
            bound="default", per_process=False,
            note=f"MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE unset; {METABASE_MORE}")
    elif given.value is None:
        ctx.hidden_size(METABASE, "MB_APPLICATION_DB_MAX_CONNECTION_POOL_SIZE", given.source)
        return _route_not_held(ctx, [], METABASE, host)
    elif (n := parse_int(given.value)) is None or n < 1:
        # config-int of a value that is no positive number: not a size we can say
        ctx.unknown.append(f"{METABASE} at {given.source.label()} is {given.value!r}, not a "
                           "pool size pool-advisor can read")
        return _route_not_held(ctx, [], METABASE, host)
    else:
        pool = ctx.pool(METABASE, n, given.source, per_process=False, note=METABASE_MORE)
    if route is None:
        return _route_not_held(ctx, [pool], METABASE, host)
    return [replace(pool, route=route)]


HASURA_NAMES = ("graphql-engine",)  # hasura/graphql-engine (and its .cli-migrations tags)
HASURA_CONNECTIONS = 50  # ServeOptions soConnParams cpConns (HASURA_GRAPHQL_PG_CONNECTIONS)
HASURA_METADATA = "Hasura metadata pool (HASURA_GRAPHQL_PG_CONNECTIONS per stripe)"
HASURA_SOURCE = "Hasura default source pool (max_connections)"
HASURA_SOURCE_NOTE = (
    "the first start writes HASURA_GRAPHQL_PG_CONNECTIONS into the metadata as the default "
    "source's max_connections (envVarsMovedToMetadata); a value changed there since is not "
    "in the repository")


def _option_setting(ctx: StackContext, option: str) -> Setting | None:
    given = option_value(ctx, option)
    return Setting(given[0], given[1]) if given is not None else None


def hasura_pools(ctx: StackContext) -> list[Pool]:
    """Hasura GraphQL Engine v2: the metadata database's pool, HASURA_GRAPHQL_PG_STRIPES
    stripes of HASURA_GRAPHQL_PG_CONNECTIONS each, on HASURA_GRAPHQL_METADATA_DATABASE_URL
    or else HASURA_GRAPHQL_DATABASE_URL; and, with HASURA_GRAPHQL_DATABASE_URL, the
    default source's pool, one stripe of max_connections."""
    from advisor.read.apps.urls import route_from_url

    if ctx.container.role == "init" or _runs_other(ctx, ("graphql-engine", "docker-entrypoint")):
        return []
    version = tag_version(ctx.container.image)
    if version is not None and version < (2, 0):
        ctx.notices.append(f"{ctx.container.name}: Hasura {version[0]}.{version[1]} (before "
                           "v2's metadata and source pools) is not read by pool-advisor")
        return []
    # `graphql-engine --database-url URL serve` (the Cloud SQL example): the option is
    # the variable's (Hasura's CLI options and HASURA_GRAPHQL_* env are one setting; the
    # option wins, Server/Init withOptions)
    source_url = _option_setting(ctx, "--database-url") or \
        _env_setting(ctx, "HASURA_GRAPHQL_DATABASE_URL")
    metadata_url = _option_setting(ctx, "--metadata-database-url") or \
        _env_setting(ctx, "HASURA_GRAPHQL_METADATA_DATABASE_URL")
    if source_url is None and metadata_url is None:
        return []

    def route_of(url: Setting | None):
        return route_from_url(url.value, url.source) if url is not None and url.value else None

    def placed(pool: Pool, url: Setting | None) -> Pool:
        # a URL set from a Secret not held here: where the pool connects is not known
        # (the metadata database apart from HASURA_GRAPHQL_DATABASE_URL's)
        (pool,) = _route_not_held(ctx, [pool], pool.label, url)
        return pool

    conns = ctx.env_int(HASURA_METADATA, "HASURA_GRAPHQL_PG_CONNECTIONS", least=1)
    stripes = ctx.env_int(HASURA_METADATA, "HASURA_GRAPHQL_PG_STRIPES", least=1)
    if conns is False or stripes is False:
        _route_not_held(ctx, [], HASURA_METADATA, metadata_url or source_url)
        return _route_not_held(ctx, [], HASURA_SOURCE, source_url)
    size, size_src = conns or (HASURA_CONNECTIONS, Source.default_of(
        "Hasura v2 default HASURA_GRAPHQL_PG_CONNECTIONS 50 (Server/Init/Arg/Command/"
        "Serve.hs pgConnsOption at 212be2677e)", key="HASURA_GRAPHQL_PG_CONNECTIONS"))
    bound = "fixed" if conns else "default"
    metadata = ctx.pool(HASURA_METADATA, size, size_src, bound=bound, per_process=False,
                        route=route_of(metadata_url or source_url),
                        note="App.hs initialiseAppEnv: PG.initPGPool of the metadata "
                             "database with soConnParams")
    if stripes is not None and stripes[0] != 1:
        metadata = replace(metadata, processes=Term(
            label="HASURA_GRAPHQL_PG_STRIPES (sub-pools of HASURA_GRAPHQL_PG_CONNECTIONS "
                  "each)", value=stripes[0], source=stripes[1]))
    pools = [placed(metadata, metadata_url or source_url)]
    if source_url is not None:
        pools.append(placed(ctx.pool(
            HASURA_SOURCE, size, size_src, bound=bound, per_process=False,
            route=route_of(source_url),
            note=f"one stripe (PG.defaultConnParams); {HASURA_SOURCE_NOTE}"), source_url))
    return pools


def _set_pool(ctx: StackContext, stack: ImageStack, name: str, value: str | None,
              source: Source) -> list[Pool]:
    """The pool `name` (a variable or an option) sets to `value`: unknown (PA106) when
    its value is not held here (a Secret's) or is no number, never dropped as if the
    application opened nothing (the server's peak read as complete)."""
    if value is None:
        ctx.hidden_size(stack.label, name, source)
        return []
    n = parse_int(value)
    if n is None:
        ctx.unknown.append(f"{stack.label} at {source.label()} is {value!r}, not a number "
                           "pool-advisor can read")
        return []
    if n <= 0:
        return [ctx.pool(stack.label, 0, source, bound="unbounded", per_process=False,
                         note=f"{name}={n}: no limit")]
    return [ctx.pool(stack.label, n, source, per_process=False)]


def atuin_pools(ctx: StackContext) -> list[Pool]:
    """Atuin's sync server (`atuin server start`): one sqlx pool of 100 on ATUIN_DB_URI,
    and from v18.12.0 one more on ATUIN_READ_DB_URI when that is set."""
    from advisor.read.apps.urls import route_from_url

    words = [*ctx.container.command, *ctx.container.args]
    if ctx.container.role == "init" or "server" not in words:
        return []  # the client commands of the image: no database pool
    db = _env_setting(ctx, "ATUIN_DB_URI")
    if db is not None and db.value and db.value.strip().lower().startswith("sqlite"):
        return []
    size = Source.default_of("Atuin server: PgPoolOptions::new().max_connections(100), "
                             "not configurable (atuin-server-postgres lib.rs, v18.3.0; "
                             "every tag from v15.0.0)", key="max_connections")
    pools = _route_not_held(ctx, [ctx.pool(
        ATUIN, ATUIN_POOL, size, bound="fixed", per_process=False,
        route=route_from_url(db.value, db.source) if db is not None and db.value else None)],
        ATUIN, db)
    read = _env_setting(ctx, "ATUIN_READ_DB_URI")
    version = tag_version(ctx.container.image)
    if read is not None and (version is None or version >= (18, 12)):
        # a replica's URL from a Secret: not the primary's (ATUIN_DB_URI), not known
        pools += _route_not_held(ctx, [ctx.pool(
            f"{ATUIN} (read replica)", ATUIN_POOL, size, bound="fixed", per_process=False,
            route=route_from_url(read.value, read.source) if read.value else None,
            note="v18.12.0+: read_pool on ATUIN_READ_DB_URI (lib.rs)"
            + ("" if version is not None else "; the image tag says no version: counted"))],
            f"{ATUIN} (read replica)", read)
    return pools


VAULTWARDEN = "Vaultwarden DATABASE_MAX_CONNS"
VAULTWARDEN_MAX_CONNS = 10  # src/config.rs database_max_conns default (1.17.0+)
VAULTWARDEN_DEFAULT = ("Vaultwarden 1.17.0+ default DATABASE_MAX_CONNS 10 (src/config.rs "
                       "database_max_conns; db/mod.rs Pool::builder().max_size; 1.37.2)")
# the images' paths (the last component alone, "server", names many programs)
VAULTWARDEN_IMAGES = ("vaultwarden/server", "dani-garcia/vaultwarden", "bitwardenrs/server",
                      "bitwardenrs/server-postgresql")


def _is_vaultwarden(image: str) -> bool:
    return image_is(image, VAULTWARDEN_IMAGES)


def _vaultwarden_env(ctx: StackContext, name: str) -> Setting | None:
    """NAME or NAME_FILE (a file's text, not held here: util.rs get_env_str_value)."""
    found = _env_setting(ctx, name)
    if found is None and (file := _env_setting(ctx, name + "_FILE")) is not None:
        return Setting(None, file.source)
    return found


def vaultwarden_pools(ctx: StackContext) -> list[Pool]:
    """Vaultwarden's one r2d2 pool (DbPool::from_config) when DATABASE_URL is
    PostgreSQL's."""
    from advisor.read.apps.urls import route_from_url

    if ctx.container.role == "init" or _runs_other(ctx, ("vaultwarden", "bitwarden_rs",
                                                         "start.sh")):
        return []
    url = _vaultwarden_env(ctx, "DATABASE_URL")
    if url is None:
        names = ("DATABASE_URL", "DATABASE_URL_FILE")
        if (hidden := ctx.env_from_hidden(*names)) is not None:
            ctx.env_from_unknown(VAULTWARDEN, "whether Vaultwarden uses PostgreSQL and where",
                                 names, hidden)
        return []  # SQLite in the data folder (config.rs database_url's default)
    if url.value is None:
        ctx.unknown.append(f"{VAULTWARDEN}: Vaultwarden's DATABASE_URL is set from a "
                           f"reference not held here ({url.source.label()}): whether it "
                           "uses PostgreSQL is not known")
        return []
    if not url.value.strip().lower().startswith(("postgresql:", "postgres:")):
        return []  # SQLite or MySQL
    version = tag_version(ctx.container.image)
    if version is not None and version < (1, 17):
        ctx.notices.append(f"{ctx.container.name}: Vaultwarden {version[0]}.{version[1]} "
                           "(before DATABASE_MAX_CONNS, 1.17.0) is not read by pool-advisor")
        return []
    route = route_from_url(url.value, url.source)
    note = ("a database_max_conns in data/config.json, not in the repository, would win "
            "over the env (Config::load)")
    given = _vaultwarden_env(ctx, "DATABASE_MAX_CONNS")
    if given is None:
        pool = ctx.pool(VAULTWARDEN, VAULTWARDEN_MAX_CONNS, Source.default_of(
            VAULTWARDEN_DEFAULT, key="DATABASE_MAX_CONNS"), bound="default",
            per_process=False, note=f"DATABASE_MAX_CONNS unset; {note}")
    elif given.value is None:
        ctx.hidden_size(VAULTWARDEN, given.source.key or "DATABASE_MAX_CONNS", given.source)
        return []
    elif (n := parse_int(given.value)) is None or not 1 <= n <= 256:
        # config.rs refuses to start outside 1..256
        ctx.unknown.append(f"{VAULTWARDEN} at {given.source.label()} is {given.value!r}, not "
                           "a pool size Vaultwarden starts with (1 to 256)")
        return []
    else:
        pool = ctx.pool(VAULTWARDEN, n, given.source, per_process=False, note=note)
    return [replace(pool, route=route) if route is not None else pool]


NPGSQL_MAX_POOL_SIZE = 100  # Npgsql NpgsqlConnectionStringBuilder [DefaultValue(100)]
# image name -> (the app's name, the version with <App>__Postgres__* env (PostgresOptions),
# the version with <App>__Log__DbEnabled)
ARR_APPS: dict[str, tuple[str, tuple[int, ...], tuple[int, ...]]] = {
    "sonarr": ("Sonarr", (4, 0, 0, 741), (4, 0, 4, 1616)),
    "radarr": ("Radarr", (4, 2, 0, 6438), (5, 5, 3, 8819)),
    "prowlarr": ("Prowlarr", (0, 4, 2, 1879), (1, 17, 2, 4511)),
    "lidarr": ("Lidarr", (1, 1, 2, 2935), (2, 8, 1, 4482)),
}


def _tag_release(image: str) -> tuple[int, ...] | None:
    """Every number of a tag's version (`4.0.19.2979-ls290`, `release-4.0.19.2979`,
    `version-4.0.19.2979`); None for a tag without one (latest, develop)."""
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    m = re.search(r"(?:^|[-v])(\d+(?:\.\d+)+)", tag)
    return tuple(int(n) for n in m.group(1).split(".")) if m else None


def _dotnet_env(ctx: StackContext, key: str) -> Setting | None:
    """The configuration key `A:B:C` from the env `A__B__C` (.NET configuration keys are
    case-insensitive); the last such variable."""
    wanted = key.replace(":", "__").lower()
    found = None
    for var in ctx.container.env:
        if var.name.lower() == wanted:
            found = Setting(var.value, ctx.env_source(var.name))
    return found


# Builds of the same application under another image name: onedr0p's and home-operations'
# ghcr.io/onedr0p/sonarr-develop, hotio's -nightly/-testing channels named as images.
_ARR_CHANNELS = ("-develop", "-nightly", "-testing", "-preview")


def arr_app(image: str) -> str | None:
    """The ARR_APPS key an image runs (sonarr for ghcr.io/onedr0p/sonarr-develop)."""
    name = _repo_name(image)
    for suffix in _ARR_CHANNELS:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name if name in ARR_APPS else None


def arr_pools(ctx: StackContext) -> list[Pool]:
    """Sonarr/Radarr/Prowlarr/Lidarr on PostgreSQL: one Npgsql pool of 100 for the main
    database and one for the log database (unless Log:DbEnabled is false)."""
    from advisor.read.apps.urls import route_from_parts

    app, since, log_since = ARR_APPS[arr_app(ctx.container.image) or ""]
    if ctx.container.role == "init":
        return []
    host = _dotnet_env(ctx, f"{app}:Postgres:Host")
    version = _tag_release(ctx.container.image)
    if host is None and (version is None or version >= since) and (hidden := ctx.env_from_hidden(
            f"{app}__Postgres__Host", fold_case=True)) is not None:
        # an envFrom Secret not held here may set it: SQLite is not known, nor is
        # PostgreSQL (two Npgsql pools of 100), nor where
        ctx.env_from_unknown(f"{app} Npgsql pools", f"whether {app} uses PostgreSQL and "
                             "where", (f"{app.upper()}__POSTGRES__HOST",), hidden)
        return []
    if host is None or host.value == "":
        return []  # SQLite (or a config.xml PostgresHost the repository does not hold)
    if version is not None and version < since:
        ctx.notices.append(f"{ctx.container.name}: {app} {'.'.join(map(str, version))} "
                           f"reads no {app}__Postgres__* env (from "
                           f"{'.'.join(map(str, since))}): its database is not known")
        return []
    port = _dotnet_env(ctx, f"{app}:Postgres:Port")
    user = _dotnet_env(ctx, f"{app}:Postgres:User")
    size = Source.default_of(
        f"{app}: ConnectionStringFactory.cs sets no Max Pool Size, Npgsql's default "
        "MaxPoolSize 100 (NpgsqlConnectionStringBuilder [DefaultValue(100)], Npgsql "
        "v7.0.9 to v9.0.3)",
        key="Max Pool Size")
    databases = [("main", "MainDb")]
    enabled = _dotnet_env(ctx, f"{app}:Log:DbEnabled") \
        if version is None or version >= log_since else None
    if enabled is not None and enabled.value is None:
        ctx.notices.append(f"{ctx.container.name}: {app}__Log__DbEnabled is set from a "
                           f"reference not held here ({enabled.source.label()}): the log "
                           "database's pool is counted")
    # bool.Parse: "false" in any case turns the log database off
    if enabled is None or (enabled.value or "").strip().lower() != "false":
        databases.append(("log", "LogDb"))
    pools = []
    for kind, key in databases:
        named = _dotnet_env(ctx, f"{app}:Postgres:{key}")
        dbname = named.value if named is not None else f"{app.lower()}-{kind}"
        route = route_from_parts(host.value, port.value if port else None, dbname,
                                 user.value if user else None, host.source) \
            if host.value else None
        pool = ctx.pool(f"{app} Npgsql pool ({kind} database)", NPGSQL_MAX_POOL_SIZE, size,
                        bound="fixed", per_process=False,
                        note=_arr_db_note(named, dbname, key))
        pools += [replace(pool, route=route)] if route is not None else \
            _route_not_held(ctx, [pool], pool.label, host)
    return pools


def _arr_db_note(named: Setting | None, dbname: str | None, key: str) -> str:
    """The database an *arr pool opens: the env's, the default name, or, for an env set
    from a Secret not held here, that (Aviator-Coding's printed 'database None')."""
    if named is None:
        return f"database {dbname} (Postgres{key} default)"
    if named.value is None:
        why = named.why or "set from a reference not held here"
        return f"database not known: {why} ({named.source.label()})"
    return f"database {dbname}"


PAPERLESS_IMAGES = ("paperless-ngx/paperless-ngx", "paperlessngx/paperless-ngx")
PAPERLESS_WEB = "Paperless-ngx webserver (granian ASGI) Django connections"


PREFECT_NAMES = ("prefect",)  # prefecthq/prefect (2.x and 3.x tags)
PREFECT_POOL = "Prefect server SQLAlchemy pool"
PREFECT_AT = "PrefectHQ/prefect at ce79dd3d6c"
# src/prefect/settings/models/server/database.py SQLAlchemySettings: each setting, then
# the older alias; Field defaults pool_size 5, max_overflow 10 (earlier 3.x releases left
# them None, and SQLAlchemy's QueuePool gave the same 5 and 10)
_PREFECT_SETTINGS = (
    ("pool_size", ("PREFECT_SERVER_DATABASE_SQLALCHEMY_POOL_SIZE",
                   "PREFECT_SQLALCHEMY_POOL_SIZE"), 5),
    ("max_overflow", ("PREFECT_SERVER_DATABASE_SQLALCHEMY_MAX_OVERFLOW",
                      "PREFECT_SQLALCHEMY_MAX_OVERFLOW"), 10),
)


def _prefect_processes(ctx: StackContext, command: str) -> Term:
    """The processes one container runs, each with its own engine (configurations.py
    AsyncPostgresConfiguration.engine caches one per event loop)."""
    if command == "services":
        # cli/server.py start_services: "Start all enabled Prefect services in one
        # process", asyncio.run(_run_all_services()): the services and the docket
        # worker (background_workers.py, a task in the same loop) share one engine
        return Term(label="Prefect services processes (prefect server services start)",
                    value=1, source=Source.default_of(
                        "prefect server services start: every enabled service in one "
                        "process and event loop (src/prefect/cli/server.py start_services, "
                        f"_server_utils.py _run_all_services; {PREFECT_AT})",
                        key="services start"))
    workers = option_value(ctx, "--workers")
    count = parse_int(workers[0]) if workers is not None else None
    if workers is not None and count:
        return Term(label="Prefect server processes (--workers)", value=count,
                    source=workers[1])
    return Term(label="Prefect server processes (--workers)", value=1,
                source=Source.default_of(
                    "prefect server start --workers default 1 (src/prefect/cli/server.py "
                    f"start; {PREFECT_AT})", key="--workers"))


def prefect_pools(ctx: StackContext) -> list[Pool]:
    """`prefect server start` (the API: `--workers` uvicorn processes, default 1, each
    its own app and engine: cli/_server_utils.py _run_in_foreground uvicorn.run(...,
    workers=workers); cli server.py `workers: int = 1`), `prefect server services start`
    (one process): each process a SQLAlchemy pool of pool_size + max_overflow, or no
    limit when max_overflow is negative (SQLAlchemy QueuePool: -1 is no overflow limit;
    Prefect passes the setting to create_async_engine as it is). A Prefect worker or
    flow run talks to the API, not the database: no pool."""
    words = [w for word in (*ctx.container.command, *ctx.container.args)
             for w in word.split()]
    if "prefect" not in [w.rsplit("/", 1)[-1] for w in words] or "server" not in words:
        return []
    after = words[words.index("server") + 1:]
    if not after or after[0] not in ("start", "services"):
        return []  # `prefect server database upgrade`: a migration, not the server
    parts: list[Term] = []
    for setting, names, default in _PREFECT_SETTINGS:
        found = next(((n, ctx.env(n)) for n in names if ctx.env(n) is not None), None)
        if found is not None and found[1].value is None:
            ctx.hidden_size(PREFECT_POOL, found[0], ctx.env_source(found[0]))
            return []
        value = parse_int(found[1].value) if found is not None else None
        parts.append(Term(label=f"{setting} ({found[0]})", value=value,
                          source=ctx.env_source(found[0])) if value is not None else Term(
            label=setting, value=default, source=Source.default_of(
                f"Prefect default {setting} {default} (src/prefect/settings/models/server/"
                f"database.py SQLAlchemySettings; {PREFECT_AT})", key=names[0])))
    processes = _prefect_processes(ctx, after[0])
    note = " + ".join(f"{t.label} {t.value:g} ({t.source.label()})" for t in parts)
    overflow = parts[1]
    if overflow.value < 0:
        pool = ctx.pool(PREFECT_POOL, 0, overflow.source, bound="unbounded", per_process=False,
                        note=f"max_overflow {overflow.value:g}: SQLAlchemy QueuePool opens "
                             f"connections without a limit; {note}")
        return [replace(pool, processes=processes)]
    size = sum(t.value for t in parts)
    fixed = all(not t.source.default for t in parts)
    pool = ctx.pool(PREFECT_POOL, size, parts[0].source if fixed else Source.default_of(
        " + ".join(f"{t.label} {t.value:g}" for t in parts) + " (Prefect defaults where "
        f"not set; src/prefect/settings/models/server/database.py, {PREFECT_AT})",
        key=_PREFECT_SETTINGS[0][1][0]),
        bound="fixed" if fixed else "default", per_process=False,
        size_label="Prefect pool_size + max_overflow", note=note)
    # the size is the sum of the two settings: advise moves them, each where it is set
    return [replace(pool, processes=processes, parts=parts)]


ZITADEL_NAMES = ("zitadel",)  # ghcr.io/zitadel/zitadel
ZITADEL_POOL = "Zitadel Database.postgres.MaxOpenConns"
ZITADEL_ENV = "ZITADEL_DATABASE_POSTGRES_MAXOPENCONNS"
# zitadel/zitadel cmd/defaults.yaml (at 001144819d): `MaxOpenConns: 10 #
# ZITADEL_DATABASE_POSTGRES_MAXOPENCONNS`, a cap over all of its pools
ZITADEL_DEFAULT = 10


def _zitadel_config_value(ctx: StackContext) -> tuple[int, Source] | None:
    """MaxOpenConns from the config files the command names (`--config
    /config/zitadel-config-yaml`, mounted from the chart's ConfigMap), the last one that
    sets it; keys as viper reads them (case-insensitive)."""
    from advisor.read.sources.k8s import load_yaml_stream

    named = [value.strip("/") for value, _where in option_values(ctx, "--config")]
    found = None
    for f in ctx.files("zitadel-config"):
        if f.rel.strip("/") not in named:
            continue
        docs, _ = load_yaml_stream(f.text, f.path)
        for doc, _line in docs:
            value = _lower_keys(doc)
            for key in ("database", "postgres", "maxopenconns"):
                value = value.get(key) if isinstance(value, dict) else None
            number = parse_int(str(value)) if value is not None else None
            if number is not None:
                lines = f.text.splitlines()
                at = next((n for n, line in enumerate(lines, 1)
                           if line.strip().lower().startswith("maxopenconns:")), None)
                found = number, f.cite(at, "Database.postgres.MaxOpenConns", "MaxOpenConns")
    return found


def _lower_keys(value: object) -> object:
    if isinstance(value, dict):
        return {str(k).lower(): _lower_keys(v) for k, v in value.items()}
    return value


def zitadel_pools(ctx: StackContext) -> list[Pool]:
    """Zitadel (Go, one process): Database.postgres.MaxOpenConns from the env (viper:
    the env wins over a config file), then the `--config` files, else 10."""
    var = ctx.env(ZITADEL_ENV)
    if var is not None and var.value is None:
        ctx.hidden_size(ZITADEL_POOL, ZITADEL_ENV, ctx.env_source(ZITADEL_ENV))
        return []
    number = parse_int(var.value) if var is not None else None
    if number is not None:
        return [ctx.pool(ZITADEL_POOL, number, ctx.env_source(ZITADEL_ENV),
                         per_process=False)]
    given = _zitadel_config_value(ctx)
    if given is not None:
        return [ctx.pool(ZITADEL_POOL, given[0], given[1], per_process=False)]
    return [ctx.pool(ZITADEL_POOL, ZITADEL_DEFAULT, Source.default_of(
        "Zitadel default MaxOpenConns 10 (cmd/defaults.yaml at 001144819d)", key=ZITADEL_ENV),
        bound="default", per_process=False,
        note=f"{ZITADEL_ENV} and Database.postgres.MaxOpenConns unset")]


def _is_paperless(image: str) -> bool:
    return image_is(image, PAPERLESS_IMAGES)


def _paperless_pool_max(ctx: StackContext, version: tuple[int, int] | None
                        ) -> tuple[int, Source] | bool | None:
    """The psycopg pool's max_size of each process: (n, where), None when there is no
    pool, False when it cannot be read (said in ctx.unknown)."""
    found: tuple[str | None, Source] | None = None
    if version is None or version >= (2, 18):
        size = _env_setting(ctx, "PAPERLESS_DB_POOLSIZE")
        if size is not None:
            found = size.value, size.source
            if size.value is not None and (version is not None and version < (3, 0)) and \
                    (parse_int(size.value) or 0) <= 0:
                found = None  # 2.x: `int(...) > 0`, else no pool
    options = _env_setting(ctx, "PAPERLESS_DB_OPTIONS")
    if options is not None and (version is None or version >= (3, 0)):
        if options.value is None:
            found = None, options.source
        else:
            for pair in options.value.split(","):
                key, eq, value = pair.partition("=")
                if eq and key.strip() == "pool.max_size":
                    found = value.strip(), replace(options.source,
                                                   key="PAPERLESS_DB_OPTIONS pool.max_size")
    if found is None:
        return None
    if found[0] is None:
        ctx.hidden_size(PAPERLESS_WEB, found[1].key or "PAPERLESS_DB_POOLSIZE", found[1])
        return False
    n = parse_int(found[0])
    if n is None or n < 1:
        ctx.unknown.append(f"{PAPERLESS_WEB} at {found[1].label()} is {found[0]!r}, not a "
                           "pool size pool-advisor can read")
        return False
    return n, found[1]


def paperless_pools(ctx: StackContext) -> list[Pool]:
    """The processes /init starts in the one container: the webserver's granian
    workers, the Celery worker's children and the consumer."""
    from advisor.read.apps.urls import route_from_parts

    if ctx.container.role == "init" or _runs_other(ctx, ("/init",)):
        return []  # another program of the image (a `document_exporter` Job)
    version = tag_version(ctx.container.image)
    host = _env_setting(ctx, "PAPERLESS_DBHOST")
    raw_engine = ctx.env_value("PAPERLESS_DBENGINE")
    v3 = version is None or version >= (3, 0)
    # 3.0+ (settings/custom.py parse_db_settings at v3.0.5 8fb73b27): PAPERLESS_DBENGINE,
    # one of sqlite, postgresql, mariadb as written (get_choice_from_env), decides;
    # PostgreSQL without PAPERLESS_DBHOST then connects to libpq's default host (HOST
    # None). 2.x (settings.py at v2.18.4 1b18c141): PostgreSQL when PAPERLESS_DBHOST is
    # not empty, MariaDB instead when PAPERLESS_DBENGINE == "mariadb"; no other value read
    if v3 and raw_engine not in (None, "sqlite", "postgresql", "mariadb"):
        ctx.notices.append(f"{ctx.container.name}: Paperless-ngx PAPERLESS_DBENGINE "
                           f"{raw_engine!r} is not sqlite, postgresql or mariadb: its "
                           "settings raise ValueError and it does not start")
        return []
    other = raw_engine == "mariadb" or (v3 and raw_engine == "sqlite")
    by_engine = v3 and raw_engine == "postgresql"
    if host is None and not by_engine and not other and (hidden := ctx.env_from_hidden(
            "PAPERLESS_DBHOST", *(("PAPERLESS_DBENGINE",) if v3 else ()))) is not None:
        # PostgreSQL when PAPERLESS_DBHOST is in the environment (or, 3.0+,
        # PAPERLESS_DBENGINE says so): an envFrom Secret not held here may set them, so
        # SQLite is not known
        ctx.env_from_unknown(
            "Paperless-ngx Django connections", "whether Paperless-ngx uses PostgreSQL and "
            "where", ("PAPERLESS_DBHOST", *(("PAPERLESS_DBENGINE",) if v3 else ())), hidden)
        return []
    if (host is None and not by_engine) or other or \
            (host is not None and host.value == "" and not v3):
        return []  # SQLite (the default) or MariaDB
    if version is not None and version < (2, 15):
        ctx.notices.append(f"{ctx.container.name}: Paperless-ngx {version[0]}.{version[1]} "
                           "(before its granian webserver, 2.15.0) is not read by "
                           "pool-advisor")
        return []
    pool_max = _paperless_pool_max(ctx, version)
    if pool_max is False:
        return _route_not_held(ctx, [], PAPERLESS_WEB, host)
    route = route_from_parts(host.value, ctx.env_value("PAPERLESS_DBPORT"),
                             ctx.env_value("PAPERLESS_DBNAME") or "paperless",
                             ctx.env_value("PAPERLESS_DBUSER") or "paperless",
                             host.source) if host is not None and host.value else None

    def count(names: tuple[str, ...], label: str, default_text: str) -> Term | None:
        for name in names:
            var = ctx.env(name)
            if var is None:
                continue
            if var.value is None:
                ctx.hidden_size(label, name, ctx.env_source(name))
                return None
            n = parse_int(var.value)
            if n is None or n < 1:
                ctx.unknown.append(f"{label} at {ctx.env_source(name).label()} is "
                                   f"{var.value!r}, not a count pool-advisor can read")
                return None
            return Term(label=label, value=n, source=ctx.env_source(name))
        return Term(label=label, value=1, source=Source.default_of(default_text,
                                                                   key=names[-1]))

    web = count(("GRANIAN_WORKERS", "PAPERLESS_WEBSERVER_WORKERS"),
                "granian workers (GRANIAN_WORKERS, PAPERLESS_WEBSERVER_WORKERS)",
                "Paperless-ngx 2.15.0+ svc-webserver/run: GRANIAN_WORKERS:-"
                "PAPERLESS_WEBSERVER_WORKERS:-1")
    tasks = count(("PAPERLESS_TASK_WORKERS",), "Celery worker processes "
                  "(PAPERLESS_TASK_WORKERS)", "Paperless-ngx settings (2.18.0, 3.0.5): "
                  "CELERY_WORKER_CONCURRENCY = PAPERLESS_TASK_WORKERS, default 1")
    if web is None or tasks is None:
        return _route_not_held(ctx, [], PAPERLESS_WEB, host)
    if pool_max is None:
        web_pool = ctx.pool(PAPERLESS_WEB, 0, Source.default_of(
            "Paperless-ngx 2.15.0+ (granian ASGI), Django: one connection per request in "
            "flight (asgiref ThreadSensitiveContext per request)", key="PAPERLESS_DB_POOLSIZE"),
            bound="unbounded", per_process=False,
            note="no psycopg pool (PAPERLESS_DB_POOLSIZE, PAPERLESS_DB_OPTIONS "
                 "pool.max_size) and nothing bounds the requests in flight")
    else:
        web_pool = ctx.pool(f"{PAPERLESS_WEB} (psycopg pool max_size)", pool_max[0],
                            pool_max[1], per_process=False)
    one = Source.default_of("Paperless-ngx 2.15.0+: one thread, one Django connection "
                            "(CONN_MAX_AGE 0)", key="connections")
    pools = [replace(web_pool, processes=web),
             replace(ctx.pool("Paperless-ngx Celery worker child", 1, one, bound="fixed",
                              per_process=False), processes=tasks)]
    if ctx.env("PAPERLESS_CONSUMER_DISABLE") is None:
        pools.append(ctx.pool("Paperless-ngx document_consumer", 1, one, bound="fixed",
                              per_process=False))
    if route is None:
        return _route_not_held(ctx, pools, "Paperless-ngx", host)
    return [replace(p, route=route) for p in pools]


def _named(names: frozenset[str] | tuple[str, ...] | set[str] | str
           ) -> Callable[[str], bool]:
    """An image test by the repository's last name (`names`: one or several)."""
    wanted = {names} if isinstance(names, str) else set(names)
    return lambda image: _repo_name(image) in wanted


# Applications whose pools a reader of their own reads (one a known image), in order:
# the first whose test takes the image reads it.
_IMAGE_READERS: tuple[tuple[Callable[[str], bool], Callable[[StackContext], list[Pool]]],
                      ...] = (
    (_named(ATUIN_NAMES), atuin_pools),
    (_is_vaultwarden, vaultwarden_pools),
    (lambda image: arr_app(image) is not None, arr_pools),
    (_named(SYNAPSE_NAMES), synapse_pools),
    (_named(MAS_NAMES), mas_pools),
    (_is_paperless, paperless_pools),
    (_named(ZAMMAD_NAMES), zammad_pools),
    (_named(MASTODON_NAMES), mastodon_pools),
    (_named(PREFECT_NAMES), prefect_pools),
    (_named(ZITADEL_NAMES), zitadel_pools),
    (_named("sonarqube"), sonarqube_pools),
    (_named(GRAFANA_NAMES), grafana_pools),
    (_named(GITEA_NAMES), gitea_pools),
    (_named(FORGEJO_NAMES), forgejo_pools),
    (_named(METABASE_NAMES), metabase_pools),
    (_named(HASURA_NAMES), hasura_pools),
    (_keycloak_wildfly, keycloak_wildfly_pools),
    (is_gotrue, gotrue_pools),
    (is_storage, storage_pools),
    (is_postgres_meta, postgres_meta_pools),
    (is_windmill, windmill_pools),
    (is_kong, kong_pools),
    (is_coder, coder_pools),
    (is_dify_api, dify_api_pools),
    (is_plugin_daemon, plugin_daemon_pools),
    (is_unleash, unleash_pools),
    (is_sentry, sentry_pools),
    (is_piped_backend, piped_pools),
    (is_twenty, twenty_pools),
    (is_langfuse, langfuse_pools),
    (is_nextcloud, nextcloud_pools),
    (is_superset, superset_pools),
    (is_concourse, concourse_pools),
    (is_redash, redash_pools),
)


def _harbor_migrate(ctx: StackContext) -> bool:
    """`-mode=migrate` (or `--mode migrate`, Go's flag package takes both) on the line."""
    words = [*ctx.container.command, *ctx.container.args]
    for i, word in enumerate(words):
        flag = word.lstrip("-")
        if word.startswith("-") and flag.lower() == "mode=migrate":
            return True
        if word.startswith("-") and flag == "mode" and i + 1 < len(words):
            return words[i + 1].lower() == "migrate"
    return False


POSTGREST_LISTENER = "PostgREST schema-cache listener (db-channel-enabled)"


def _postgrest_listener(ctx: StackContext) -> Pool | None:
    """PostgREST v8.0.0+ LISTENs for schema-cache reloads on a connection of its own,
    outside db-pool (AppState/Reload.hs runListener: `SQL.acquire`, then `SQL.listen`),
    when db-channel-enabled, default true (Config.hs `fromMaybe True <$> optBool
    "db-channel-enabled"`; PGRST_DB_CHANNEL_ENABLED, read as coerceBool does)."""
    version = tag_version(ctx.container.image) \
        if _repo_name(ctx.container.image) == "postgrest" else None
    if version is not None and version < (8, 0):
        return None
    var = ctx.env("PGRST_DB_CHANNEL_ENABLED")
    if var is not None and var.value is not None:
        letters = "".join(ch for ch in var.value if ch.isalpha()).lower()
        if letters == "false" or (not letters and parse_int(var.value.strip()) == 0):
            return None
        source = ctx.env_source("PGRST_DB_CHANNEL_ENABLED")
    else:
        source = Source.default_of(
            "PostgREST v8+ default db-channel-enabled true: one LISTEN connection outside "
            "db-pool (AppState/Reload.hs runListener; Config.hs at 4834678902681402a5)",
            key="PGRST_DB_CHANNEL_ENABLED")
    return ctx.pool(POSTGREST_LISTENER, 1, source, bound="fixed", per_process=False,
                    note="PGRST_DB_CHANNEL_ENABLED=false closes it")


def image_pools(ctx: StackContext) -> list[Pool]:
    image = ctx.container.image
    for takes, read in _IMAGE_READERS:
        if takes(image):
            return read(ctx)
    stack = image_stack(ctx)
    if stack is None:
        return []
    if "harbor-core" in stack.names and _harbor_migrate(ctx):
        # the chart's pre-install/upgrade hook: `harbor_core -mode=migrate` runs the schema
        # and data migrations one after the other and exits (src/core/main.go main:
        # dao.InitDatabase, migration.Migrate, os.Exit(0)): the ORM's one connection in
        # use at a time, and golang-migrate's own (src/common/dao/pgsql.go NewMigrator
        # `migrate.New(srcURL, dbURL)`), not the serving pool of POSTGRESQL_MAX_OPEN_CONNS
        return [ctx.pool("Harbor core -mode=migrate", 2, Source.default_of(
            "Harbor -mode=migrate: one ORM connection at a time + golang-migrate's own "
            "(src/core/main.go, src/common/dao/pgsql.go NewMigrator at c50c7ddd6e)",
            key="-mode=migrate"),
            bound="fixed", per_process=False,
            note="a migration run, not the serving pool")]
    if stack.label == MATTERMOST:
        from advisor.read.apps.mattermost import mattermost_pools

        version = tag_version(ctx.container.image) \
            if _repo_name(ctx.container.image) in stack.names else None
        return mattermost_pools(ctx, lambda: _stack_pools(ctx, stack), version,
                                option_value)
    pools = _stack_pools(ctx, stack)
    if stack.names == ("postgrest",) and pools:
        listener = _postgrest_listener(ctx)
        if listener is not None:
            pools.append(replace(listener, route=pools[0].route))
    return pools


def _unset_engine(ctx: StackContext, stack: ImageStack) -> str | None:
    """Why the program uses its default engine, not PostgreSQL: its published image,
    and nothing that chooses the database set in the env (none of the stack's variables,
    no envFrom source not held that may set them) or on the command line; else None."""
    if stack.unset_engine is None or stack.other_engine is None:
        return None
    option, engine, images = stack.unset_engine
    repo = ctx.container.image.split("@", 1)[0].lower()
    head, colon, tag = repo.rpartition(":")
    repo = head if colon and "/" not in tag else repo
    names = (stack.other_engine[0], *stack.trigger_env)
    if repo not in images or option_value(ctx, option) is not None \
            or any(ctx.env(n) is not None for n in names) or ctx.env_from_hidden(*names):
        return None
    return (f"{ctx.container.name}: {stack.label.split()[0]} with no {names[0]} in its env "
            f"and no {option} option uses its default database {engine}, not PostgreSQL: "
            "no connection counted")


def _stack_pools(ctx: StackContext, stack: ImageStack) -> list[Pool]:
    """The pool of an application STACKS describes: its variable or option, else its
    default (unknown when none is known)."""
    if stack.other_engine is not None:
        name, others = stack.other_engine
        var = ctx.env(name)
        if var is not None and (var.value or "").strip().lower() in others:
            return []  # gwarrior01/kubernetes-for-developers' Keycloak: KC_DB=dev-mem
        if var is None and (why := _unset_engine(ctx, stack)) is not None:
            ctx.notices.append(why)
            return []
    if stack.requires is not None:
        name, wanted = stack.requires
        var = ctx.env(name)
        if var is not None and var.value is None:
            ctx.hidden_size(stack.label, name, ctx.env_source(name))
            return []
        if var is None and (hidden := ctx.env_from_hidden(name)) is not None:
            ctx.env_from_unknown(stack.label, "whether it uses PostgreSQL and where",
                                 (name,), hidden)
            return []
        if var is None or var.value.strip().lower() != wanted:
            return []  # another database (n8n: SQLite unless DB_TYPE=postgresdb)
    # the tag is the application's version only in its own image
    version = tag_version(ctx.container.image) \
        if _repo_name(ctx.container.image) in stack.names else None
    if stack.before is not None and version is not None and version < stack.before[0]:
        return [ctx.pool(stack.label, stack.before[1], Source.default_of(
            stack.before[2], key=stack.env[0]), bound="default", per_process=False,
            note=f"image tag {ctx.container.image.rsplit(':', 1)[-1]} reads no {stack.env[0]}")]
    given = option_value(ctx, stack.option) if stack.option else None
    if given is not None:
        return _set_pool(ctx, stack, stack.option, given[0], given[1])
    for var in stack.env:
        found = ctx.env(var)
        if found is None:
            continue
        return _set_pool(ctx, stack, var, found.value, ctx.env_source(var))
    if stack.default is None:
        ctx.notices.append(f"{ctx.container.name}: {stack.label} not set in its env and "
                           "its default is not known to pool-advisor")
        return []
    source = Source.default_of(stack.default_text, key=stack.env[0])
    if stack.default == 0:
        return [ctx.pool(stack.label, 0, source, bound="unbounded", per_process=False,
                         note=f"{stack.env[0]} unset: {stack.default_text}")]
    return [ctx.pool(stack.label, stack.default, source, bound="default", per_process=False,
                     note=f"{stack.env[0]} unset in the container env")]
