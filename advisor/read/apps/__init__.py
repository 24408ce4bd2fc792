"""Application connection pools: which pools a container's processes open, how big
each is, and where every number was written (or which library default applied).

    app = scan_app_dir(root, "services/checkout")      # I/O: read the source files
    found = pools_for_container(container, app)        # pure
    found.pools  -> [Pool(label="HikariCP maximumPoolSize", size=20 (application.yml:7))]

One small module per stack; each reader takes a StackContext and returns Pools.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from msgspec import Struct, field
from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import ConfigProblem, Container, Frozen, NodeCpus, Pool, Record, Route, Source
from advisor.read.apps.base import InitWriter, StackContext
from advisor.read.apps.source import AppFile, AppSource, mounted_app_file, scan_app_dir
from advisor.read.apps.urls import route_from_env, route_from_url

if TYPE_CHECKING:
    from advisor.read.apps.cmdline import Word
    from advisor.read.apps.podfiles import ContainerFiles

__all__ = [
    "AppFile",
    "AppPools",
    "AppSource",
    "mounted_app_file",
    "pools_for_container",
    "route_from_env",
    "route_from_url",
    "scan_app_dir",
]

Reader = Callable[[StackContext], list[Pool]]
INTERNAL_ERROR = "internal error"  # advisor.guard.INTERNAL: the CLI exits 2 on it


class StackReader(Struct, frozen=True):
    """A stack's reader, imported only when the container or its app source has what
    the stack reads (file kinds, env prefixes): `check` stays fast for the others."""

    name: str
    target: str  # "module:function" under advisor.read.apps
    kinds: tuple[str, ...] = ()
    env_prefixes: tuple[str, ...] = ()
    arg_markers: tuple[str, ...] = ()  # e.g. "--spring." anywhere in command/args
    image_markers: tuple[str, ...] = ()  # in the image reference (keycloak, mattermost)

    def wanted(self, container: Container, app: AppSource | None,
               env_names: tuple[str, ...] | None = None) -> bool:
        """`env_names`: the container's env names upper-cased, when the caller asks
        every reader about one container (made once, not once per reader)."""
        if self.image_markers and any(m in container.image.lower()
                                      for m in self.image_markers):
            return True
        if app is not None and self.kinds and app.of_kind(*self.kinds):
            return True
        if self.env_prefixes:
            if env_names is None:
                env_names = tuple(e.name.upper() for e in container.env)
            for name in env_names:
                if name.startswith(self.env_prefixes):
                    return True
        if not self.arg_markers:
            return False
        words = (*container.command, *container.args)
        return any(m in w for m in self.arg_markers for w in words)

    def load(self) -> Reader:
        module, _, func = self.target.partition(":")
        return getattr(importlib.import_module(f"advisor.read.apps.{module}"), func)


_PY = ("python", "gunicorn-conf")
READERS: tuple[StackReader, ...] = (
    StackReader("hikari", "hikari:hikari_pools", ("spring-config", "build", "java"), ("SPRING_",),
                ("--spring.", "-Dspring.")),
    # Spring Boot's R2DBC ConnectionFactory pool (apps/r2dbc.py)
    StackReader("r2dbc", "r2dbc:r2dbc_pools", ("spring-config",), ("SPRING_R2DBC_",),
                ("--spring.r2dbc.", "-Dspring.r2dbc.")),
    StackReader("sqlalchemy", "sqlalchemy:sqlalchemy_pools", _PY),
    StackReader("django", "django:django_pools", _PY),
    StackReader("psycopg_pool", "psycopg_pool:psycopg_pools", _PY),
    StackReader("asyncpg", "asyncpg:asyncpg_pools", _PY),
    StackReader("node-postgres", "node_pg:node_pg_pools", ("js",)),
    StackReader("postgres.js", "postgresjs:postgresjs_pools", ("js",)),
    StackReader("sequelize", "sequelize:sequelize_pools", ("js",)),
    StackReader("knex", "knex:knex_pools", ("js",)),
    StackReader("typeorm", "typeorm:typeorm_pools", ("js",)),
    StackReader("pg-boss", "pgboss:pgboss_pools", ("js",)),
    # Backstage's backend: a knex pool per plugin (apps/backstage.py)
    StackReader("backstage", "backstage:backstage_pools", ("backstage-config",),
                arg_markers=("packages/backend",), image_markers=("backstage",)),
    StackReader("prisma", "prisma:prisma_pools", ("prisma",)),
    StackReader("pgx", "pgx:pgx_pools", ("go",)),
    StackReader("database/sql", "go_sql:go_sql_pools", ("go",)),
    StackReader("rails", "rails:rails_pools", ("database-yml",)),
    StackReader("npgsql", "npgsql:npgsql_pools", ("appsettings", "csharp"),
                ("CONNECTIONSTRINGS__",)),
    StackReader("ecto", "ecto:ecto_pools", ("elixir",)),
    # Rust: sqlx, deadpool-postgres, r2d2 (diesel) pools in the crate's sources
    StackReader("rust", "rust:rust_pools", ("rust",)),
    # Laravel: one PDO connection per php-fpm child or Octane worker (apps/laravel.py)
    StackReader("laravel", "laravel:laravel_pools", ("composer",)),
    # Symfony with Doctrine: one DBAL connection per PHP process (apps/symfony.py)
    StackReader("symfony", "symfony:symfony_pools", ("composer",)),
    StackReader("quarkus", "quarkus:quarkus_pools", ("spring-config", "build")),
    # Dropwizard: each DataSourceFactory of its `server <config.yml>` file (apps/dropwizard.py)
    StackReader("dropwizard", "dropwizard:dropwizard_pools", ("build",)),
    # Vert.x's reactive client: PoolOptions maxSize per pool the code creates (apps/vertx.py)
    StackReader("vertx", "vertx:vertx_pools", ("build",)),
    StackReader("temporal", "temporal:temporal_pools", ("temporal-config",)),
    # apache/airflow 2: components by command, options from AIRFLOW__* env and airflow.cfg
    StackReader("airflow", "airflow:airflow_pools", ("airflow-cfg",), ("AIRFLOW__",),
                image_markers=("airflow",)),
    # Applications run from their own images, configured by env (Keycloak, Mattermost,
    # Harbor, PostgREST, n8n, Mastodon, SonarQube, Zammad, Grafana, Gitea, Forgejo, Metabase,
    # Hasura, Miniflux, Atuin, Vaultwarden, Sonarr, Radarr, Prowlarr, Lidarr, Synapse,
    # Paperless-ngx, Prefect, Zitadel, Supabase Auth, Storage and postgres-meta, Windmill,
    # Coder, Dify's api and plugin daemon, Unleash, Sentry, TeslaMate, Piped's backend,
    # Matrix Authentication Service, Twenty, Langfuse's web and worker,
    # Nextcloud, Apache Superset, Kong, Concourse, Redash):
    # advisor/read/apps/images.py, which matches the image's name exactly. Markers
    # repeated there (ENV_PREFIXES, the names of STACKS, GRAFANA_NAMES, GITEA_NAMES,
    # FORGEJO_NAMES, METABASE_NAMES, HASURA_NAMES, VAULTWARDEN_IMAGES, ARR_APPS,
    # SYNAPSE_NAMES, PAPERLESS_IMAGES, dify.py and unleash.py's images).
    StackReader("images", "images:image_pools", (),
                ("KC_DB", "MM_SQLSETTINGS_", "POSTGRESQL_MAX_OPEN_CONNS",
                 "HARBOR_DATABASE_MAX_OPEN_CONNS", "PGRST_DB_", "DB_POSTGRESDB_"),
                image_markers=("keycloak", "mattermost", "harbor-core", "harbor-jobservice",
                               "harbor-exporter", "postgrest", "mastodon", "n8n", "sonarqube",
                               "zammad", "grafana", "gitea", "forgejo", "metabase",
                               "graphql-engine", "miniflux", "atuin", "vaultwarden",
                               "bitwardenrs", "sonarr", "radarr", "prowlarr", "lidarr",
                               "synapse", "paperless-ngx", "prefect", "zitadel",
                               "gotrue", "supabase/auth",
                               "storage-api", "postgres-meta", "windmill-labs/windmill",
                               "coder/coder", "dify-api", "dify-plugin-daemon",
                               "unleash-server", "unleash-enterprise", "sentry",
                               "teslamate", "1337kavin/piped",
                               "matrix-authentication-service", "twentycrm/twenty",
                               "langfuse/langfuse", "nextcloud", "apache/superset",
                               "kong", "concourse/concourse", "redash/redash")),
    # GitLab's Cloud Native images as its chart runs them (webservice, sidekiq, toolbox,
    # exporter): a pool per database its mounted database.yml names, sized from the
    # env by Gitlab::Database.default_pool_size (advisor/read/apps/gitlab.py)
    StackReader("gitlab", "gitlab:gitlab_pools",
                image_markers=("gitlab-webservice", "gitlab-sidekiq", "gitlab-toolbox",
                               "gitlab-exporter", "gitlab-geo-logcursor")),
    # Sourcegraph's services (sourcegraph/frontend, worker, precise-code-intel-worker,
    # gitserver, repo-updater): a dbconn pool per database, SRC_PGSQL_MAX_OPEN (default 30)
    # each; the frontend's DSNs from its PG* env, the others' served by the frontend
    # (advisor/read/apps/sourcegraph.py)
    StackReader("sourcegraph", "sourcegraph:sourcegraph_pools",
                image_markers=("sourcegraph/frontend", "sourcegraph/worker",
                               "sourcegraph/precise-code-intel-worker",
                               "sourcegraph/gitserver", "sourcegraph/repo-updater")),
    # Pgpool-II (bitnami/pgpool, pgpool/pgpool): num_init_children x max_pool to each
    # backend, from its env and a mounted pgpool.conf (advisor/read/apps/pgpool.py)
    StackReader("pgpool", "pgpool:pgpool_pools", image_markers=("pgpool",)),
    # The Prometheus PostgreSQL exporter: one connection per DSN it scrapes, + the
    # collector's during a scrape (advisor/read/apps/pgexporter.py)
    StackReader("postgres_exporter", "pgexporter:pgexporter_pools",
                image_markers=("postgres-exporter", "postgres_exporter")),
)


# Images whose readers read the configuration files the container sees in its pod
# (StackContext.pod_files, advisor/read/apps/podfiles.py): Synapse (apps/synapse.py),
# Matrix Authentication Service (apps/mas.py) and GitLab's webservice, sidekiq and
# toolbox (apps/gitlab.py: their database.yml template), Apache Superset (apps/superset.py:
# its superset_config.py), by the image's repository name;
# Backstage by its command (reads_pod_files).
POD_FILE_IMAGES = frozenset({"synapse", "matrix-authentication-service",
                             "gitlab-webservice-ee", "gitlab-webservice-ce",
                             "gitlab-sidekiq-ee", "gitlab-sidekiq-ce",
                             "gitlab-toolbox-ee", "gitlab-toolbox-ce", "superset"})


def reads_pod_files(container: Container, app: AppSource | None = None) -> bool:
    """Also Backstage's backend (`node packages/backend --config /app/...`), whatever its
    image: its --config files are mounted from ConfigMaps (apps/backstage.py); and a
    Dropwizard application with dropwizard-db (`app`: its source), whose `server
    <config.yml>` file a ConfigMap may be mounted at (apps/dropwizard.py)."""
    from advisor.read.apps.locate import image_name

    if image_name(container.image).lower() in POD_FILE_IMAGES or any(
            "packages/backend" in w for w in (*container.command, *container.args)):
        return True
    if app is None or not any("io.dropwizard" in f.text for f in app.of_kind("build")):
        return False
    from advisor.read.apps.dropwizard import db_module

    return db_module(app.of_kind("build")) is not None


class AppPools(Record, kw_only=True):
    pools: list[Pool] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    problems: list[ConfigProblem] = field(default_factory=list)
    # Pools whose size is set where its value cannot be read (StackContext.unknown): why
    unknown: list[str] = field(default_factory=list)
    # Why some of its connections lead where the repository does not say
    # (StackContext.unrouted, Pool.route_unknown)
    unrouted: list[str] = field(default_factory=list)
    # A reader decided the container is no PostgreSQL client (Temporal's schema tool with
    # its mysql8 plugin): a host variable naming a server's Service does not make it one
    no_postgres: bool = False
    # connection variables only a CLI of the application opens (Prisma's directUrl):
    # name -> where that is said; the running program opens nothing on them
    cli_only: dict[str, str] = field(default_factory=dict)
    # The container runs a Celery monitor (`celery flower`, `celery events`): it runs no
    # task, so it opens none of the application's pools ("" when not)
    monitor: str = ""

    @property
    def default_applied(self) -> list[Pool]:
        return [p for p in self.pools if p.bound == "default"]

    @property
    def unbounded(self) -> list[Pool]:
        return [p for p in self.pools if p.bound == "unbounded"]

    @property
    def cpu_dependent(self) -> list[Pool]:
        return [p for p in self.pools if p.bound == "cpu"]

    def per_pod(self) -> float:
        return sum(p.per_pod() for p in self.pools)


# Schema migration tools hold one connection while they run (per database they touch):
# a migration Job is one term, not the application's serving pools. Rails' db:prepare
# creates or loads the schema when the database is new, then migrates, one step after
# the other on the migration connection (rails/rails activerecord/lib/active_record/
# tasks/database_tasks.rb prepare_all: initialize_database, then migrate).
_MIGRATION_WORDS = (("alembic", "upgrade"), ("manage.py", "migrate"), ("flyway", "migrate"),
                    ("liquibase", "update"), ("rake", "db:migrate"), ("rails", "db:migrate"),
                    ("rake", "db:prepare"), ("rails", "db:prepare"),
                    ("mix", "ecto.migrate"), ("knex", "migrate:latest"),
                    ("prisma", "migrate"), ("sequelize", "db:migrate"), ("migrate", "up"),
                    ("goose", "up"), ("dotnet", "ef"), ("typeorm", "migration:run"),
                    # sqlx-cli: migrate and database create/drop/reset/setup open one
                    # connection at a time (launchbadge/sqlx v0.8.6 sqlx-cli/src/migrate.rs
                    # `crate::connect(connect_opts)`, database.rs reset: drop, create, then
                    # migrate::run); diesel_cli and sea-orm-cli likewise run migrations
                    ("sqlx", "migrate"), ("sqlx", "database"), ("diesel", "migration"),
                    ("diesel", "database"), ("sea-orm-cli", "migrate"))


# Images of proxies and agents that run next to an application in its pod.
_SIDECAR_IMAGES = ("cloud-sql-proxy", "cloudsql-proxy", "cloud-sql-connectors", "istio/proxy",
                   "proxyv2", "envoy", "linkerd", "datadog", "fluent-bit", "fluentd",
                   "otel/opentelemetry-collector", "opentelemetry-collector", "vault",
                   "nginx", "oauth2-proxy", "pgbouncer", "odyssey", "pgcat", "pgpool",
                   "prometheus", "exporter", "jaeger", "busybox", "alpine/git")


def _not_the_app(container: Container) -> bool:
    image = container.image.lower()
    return any(marker in image for marker in _SIDECAR_IMAGES)


def _migration_pool(ctx: StackContext, segments: list[list[Word]]) -> Pool | None:
    from advisor.model import Source, Term

    if not segments or ctx.processes().server:
        return None  # a server process runs (perhaps after migrating): its pools count
    words = [w.text.rsplit("/", 1)[-1] for w in segments[-1]]
    for tool, action in _MIGRATION_WORDS:
        if tool in words and any(w.startswith(action) for w in words):
            where = segments[-1][0].source
            held = _rails_lock_connection(ctx) if tool in ("rake", "rails") else None
            count, why = (2, held[1]) if held else (1, Source.default_of(
                "a schema migration holds one connection at a time", key=tool))
            ctx.notices.append(f"{ctx.container.name}: runs {tool} {action} "
                               f"({where.label()}): counted as {count} connection"
                               f"{'s' if count > 1 else ''}")
            return Pool(label=f"migration ({tool} {action})",
                        size=Term(label=f"{tool} {action} connections", value=count,
                                  source=why),
                        note="migration tool: one connection while it runs" if not held
                        else f"Rails {held[0]}: the migrator's advisory lock holds a "
                             "connection of its own", migration=True)
    return None


def _temporal_sql_tool(ctx: StackContext, segments: list[list[Word]]) -> list[Pool] | None:
    """Temporal's schema tool (apps/temporal.py): one connection, to the server its
    SQL_* env or flags name, when its plugin is PostgreSQL's ([] for another plugin: no
    client of a PostgreSQL server); None when the container runs no such command (or a
    server process runs too: its pools count)."""
    if not any(w.text.endswith("temporal-sql-tool") for seg in segments for w in seg):
        return None
    from advisor.read.apps.temporal import SQL_TOOL, is_postgres_plugin, sql_tool_pool, sql_tool_run

    found = sql_tool_run(ctx, segments)
    if found is None or ctx.processes().server:
        return None
    run, route = found
    what = f"{SQL_TOOL} {', '.join(run.commands)} ({run.where.label()})"
    if not is_postgres_plugin(run.plugin):
        ctx.notices.append(f"{ctx.container.name}: runs {what} with the {run.plugin} plugin "
                           f"({run.plugin_source.label()}): not a PostgreSQL client")
        return []
    ctx.notices.append(f"{ctx.container.name}: runs {what}: counted as 1 connection")
    return [sql_tool_pool(run, route)]


# ActiveRecord's Migrator took its advisory lock on a connection of its own, kept for
# the whole run, from Rails 6.1 (rails/rails#38235, #39758: with_advisory_lock_connection
# establishes a new pool) until 7.1 (rails/rails#46224 "Remove extra advisory lock
# connection": the lock is back on the migration's connection).
_RAILS_LOCK_CONNECTION = ((6, 1), (7, 1))
_GEMFILE_AR = lazy(r"    activerecord \((\d+)\.(\d+)[.\d]*\)$")


def _rails_lock_connection(ctx: StackContext) -> tuple[str, Source] | None:
    """(Rails version, where it is read) when the container's db:migrate holds a second
    connection for the advisory lock: the app's Gemfile.lock, else Mastodon's image tag."""
    first, last = _RAILS_LOCK_CONNECTION
    for f in ctx.files("deps"):
        if not f.rel.endswith("Gemfile.lock"):
            continue
        for n, line in enumerate(f.text.splitlines(), 1):
            m = _GEMFILE_AR.match(line)
            if m:
                version = (int(m.group(1)), int(m.group(2)))
                if not first <= version < last:
                    return None
                return f"{version[0]}.{version[1]}", f.cite(n, "activerecord")
    from advisor.read.apps.images import mastodon_rails

    return mastodon_rails(ctx.container.image)


# PostgreSQL's client programs: the connections one run holds at once (libpq programs
# open one; `-j N` runs N jobs: pg_dump opens N + 1 (its documentation), pg_restore's
# leader disconnects before its N workers start (pg_backup_archiver.c, "This runs
# PRE_DATA items and then disconnects"), vacuumdb and reindexdb open N; pg_basebackup
# streams the WAL over a second connection unless told `-X fetch` or `-X none`;
# pgbench opens one per client, `-c N`, 1 by default). A script that runs several runs
# them one after another: the most any one of them holds.
_CLIENT_PROGRAMS = frozenset({"psql", "pg_isready", "pg_dump", "pg_dumpall", "pg_restore",
                              "pg_basebackup", "vacuumdb", "reindexdb", "clusterdb",
                              "createdb", "dropdb", "createuser", "dropuser", "pgbench"})
_JOBS_PROGRAMS = {"pg_dump": 1, "pg_restore": 0, "vacuumdb": 0, "reindexdb": 0}  # + leader


class _Run(Frozen, kw_only=True):
    """One client program's run in a command line: what it holds, where it was read, the
    host its options name (lowercase; None: PGHOST or the default)."""

    program: str
    count: int
    source: Source
    host: str | None


def _runs_at_once(words: list[Word]) -> list[list[_Run]] | None:
    """The client programs of a command line, as the sets that hold their connections
    at the same moment: the programs of one pipeline (`pg_dump | psql`: both ends are
    connected at once) with those backgrounded by `&` before it and not yet waited for
    (`wait`). Runs separated by `;`, `&&`, `||` or a newline follow one another. None
    when a count is not a number."""
    from advisor.read.apps.cmdline import is_background

    sets: list[list[_Run]] = []
    pipeline: list[_Run] = []
    background: list[_Run] = []
    for i, word in enumerate(words):
        text = word.text
        ends = text in (";", "&&", "||", "wait") or (
            word.line_end and text not in _SEPARATORS)
        if text == "&" and is_background(words, i):
            background = background + pipeline
            ends = True
        elif text == "wait":
            background = []
        elif (program := text.rsplit("/", 1)[-1]) in _CLIENT_PROGRAMS:
            args = _program_args(words[i + 1:]) if not word.line_end else []
            count = _program_connections(program, args)
            if count is None:
                return None
            host = _option_text(args, "-h", "--host")
            pipeline.append(_Run(program=program, count=count, source=word.source,
                                 host=host.lower() if host else None))
        if ends:
            if pipeline:
                sets.append(background + pipeline if text != "&" else background)
            pipeline = []
    if pipeline:
        sets.append(background + pipeline)
    return sets


def _program_args(rest: list[Word]) -> list[str]:
    """A program's arguments: the words up to the next program, shell separator or the
    end of its line."""
    args: list[str] = []
    for w in rest:
        if w.text.rsplit("/", 1)[-1] in _CLIENT_PROGRAMS or w.text in _SEPARATORS:
            break
        args.append(w.text)
        if w.line_end:
            break
    return args


_SEPARATORS = frozenset({";", "&&", "||", "|", "|&", "&"})


def _held_at_once(runs: list[_Run]) -> int:
    """What runs that hold connections at once hold to one server: the programs naming
    one host, with those naming none (PGHOST or the default may be that host)."""
    hosts = {r.host for r in runs if r.host is not None} or {None}
    return max(sum(r.count for r in runs if r.host in (host, None)) for host in hosts)


def _client_program_pool(ctx: StackContext, line: list[Word],
                         segments: list[list[Word]]) -> Pool | None:
    """One pool for a container that runs PostgreSQL's client programs and no server
    (a psql Job, a pg_dump CronJob): what the busiest moment holds (programs run at once
    add up, programs run one after another do not), or None when a count is not a
    number (its `-j` from an env var the repository does not set)."""
    from advisor.model import Source, Term

    sets = _runs_at_once(line)
    if sets is None or not sets or ctx.processes().server:
        return None  # a server process runs too: its pools count
    busiest = max(sets, key=_held_at_once)
    count = _held_at_once(busiest)
    where = busiest[0].source
    program = " + ".join(dict.fromkeys(r.program for r in busiest))
    names = list(dict.fromkeys(r.program for s in sets for r in s))
    route = _programs_route(_program_calls([w for segment in segments for w in segment]))
    held = f"{count} connection{'s' if count != 1 else ''}"
    together = len(busiest) > 1
    what = (f"{program} run together (a pipeline or `&`): {held} at once" if together
            else f"{program} holds {held} at once")
    if ctx.container.role != "init":
        ctx.notices.append(f"{ctx.container.name}: runs PostgreSQL client program"
                           f"{'s' if len(names) > 1 else ''} {', '.join(names)} "
                           f"({where.label()}): counted as {held}, what {program} "
                           f"{'hold' if together else 'holds'} at once")
    notes = []
    if together:
        notes.append(f"{program} run at once: their connections add up")
    if len(sets) > 1:
        notes.append(f"client programs run one after another ({', '.join(names)}): the "
                     f"most {program} {'hold' if together else 'holds'}")
    return Pool(label=f"{program} connections",
                size=Term(label=f"{program} connections", value=count,
                          source=Source.default_of(
                              f"{what} (PostgreSQL client program)", key=program)),
                note="; ".join(notes), route=route)


# libpq's connection options, as every client program takes them (psql --help: "-h,
# --host=HOSTNAME", "-p, --port=PORT", "-U, --username=USERNAME"; psql, pg_dump, pgbench,
# vacuumdb also "-d, --dbname=DBNAME", which pg_dumpall and pg_isready give other meanings
# or none, so the database is read from psql's only)
_CONN_OPTIONS = (("host", "-h", "--host"), ("port", "-p", "--port"),
                 ("user", "-U", "--username"))


def _program_calls(words: list[Word]) -> list[tuple[Word, str, list[Word]]]:
    """Each client program `words` run: (its word, its name, its arguments: the words
    up to the next client program)."""
    calls: list[tuple[Word, str, list[Word]]] = []
    for i, word in enumerate(words):
        program = word.text.rsplit("/", 1)[-1]
        if program not in _CLIENT_PROGRAMS:
            continue
        rest = words[i + 1:]
        end = next((j for j, w in enumerate(rest)
                    if w.text.rsplit("/", 1)[-1] in _CLIENT_PROGRAMS), len(rest))
        calls.append((word, program, rest[:end]))
    return calls


def _programs_route(calls: list[tuple[Word, str, list[Word]]]) -> Route | None:
    """Where the client program `calls` connect when their options name a host
    (`psql -h postgres -U app -d messages`, `pg_dump --host=db`, `-hdb`): the one host
    they all name, or None when none names one or two name different hosts (a dump from
    one server restored into another is not one route)."""
    from advisor.read.apps.urls import route_from_parts

    found: list[Route] = []
    for word, program, args in calls:
        texts = [w.text for w in args]
        parts = {name: _option_text(texts, short, long) for name, short, long in _CONN_OPTIONS}
        if not parts["host"]:
            continue
        at = next((w for w in args if parts["host"] in w.text), word)
        dbname = _option_text(texts, "-d", "--dbname") if program == "psql" else None
        if dbname is not None and ("=" in dbname or "://" in dbname):
            dbname = None  # a connection string: route_from_args reads a URL whole
        route = route_from_parts(parts["host"], parts["port"], dbname, parts["user"],
                                 replace(at.source, key=f"{program} host"))
        if route is not None:
            found.append(route)
    hosts = {(r.host or "").lower() for r in found}
    return found[0] if len(hosts) == 1 else None


def _program_connections(program: str, args: list[str]) -> int | None:
    """The connections one run of `program` with `args` holds at once."""
    if program == "pgbench":
        return _option(args, "-c", "--client", 1)
    if program == "pg_basebackup":
        method = _option_text(args, "-X", "--wal-method")
        return 1 if method in ("fetch", "f", "none", "n") else 2
    if program in _JOBS_PROGRAMS:
        jobs = _option(args, "-j", "--jobs", 1)
        if jobs is None:
            return None
        return jobs + _JOBS_PROGRAMS[program] if jobs > 1 else 1
    return 1


def _option_text(args: list[str], short: str, long: str) -> str | None:
    for i, arg in enumerate(args):
        if arg in (short, long):
            return args[i + 1] if i + 1 < len(args) else None
        if arg.startswith(long + "="):
            return arg.split("=", 1)[1]
        if arg.startswith(short) and len(arg) > len(short) and not arg.startswith("--"):
            return arg[len(short):]
    return None


def _option(args: list[str], short: str, long: str, default: int) -> int | None:
    """An integer option's value; `default` when it is absent, None when not a number."""
    text = _option_text(args, short, long)
    if text is None:
        return default
    return int(text) if text.isdigit() else None


_JS_KINDS = frozenset({"js", "prisma"})
_PYTHON_PROGRAM = lazy(r"python[\d.]*$")


def _runs_python(jobs: list[tuple[list[Word], bool]]) -> str:
    """The Python interpreter the container's process is (`python -m app.main`), as
    written, or "" when it is another program, or when a program sent to the
    background beside it (`node server.js &`) is not Python."""
    last = jobs[-1][0] if jobs else []
    firsts = [last, *(words for words, bg in jobs if bg)]
    if not all(_PYTHON_PROGRAM.match(w[0].text.rsplit("/", 1)[-1]) for w in firsts if w):
        return ""
    first = last[0].text.rsplit("/", 1)[-1] if last else ""
    return f"{first}, {last[0].source.label()}" if first else ""


def pools_for_container(container: Container, app: AppSource | None = None, *,
                        profile: str | None = None,
                        node_cpus: int | NodeCpus | None = None,
                        pod_files: ContainerFiles | None = None,
                        init_writers: tuple[InitWriter, ...] = ()) -> AppPools:
    """Every pool the container's processes open, from its env/args and its app source.
    `profile` (e.g. a Spring profile from configuration) beats what the env says.
    `node_cpus` sizes CPU-derived defaults (pgx, Prisma, cpu_count() workers); without
    it 4 CPUs are assumed and the pool says so (bound="cpu", cpus term). `pod_files`:
    the files the container sees in its pod (POD_FILE_IMAGES). `init_writers`: the pod's
    init containers that write the configuration file it reads (Gitea's app.ini)."""
    if app is not None and _not_the_app(container):
        # a proxy/agent sidecar: the app's source files are not its settings; Pgpool-II's
        # own pgpool.conf, mounted into its pod, is
        if "pgpool" in container.image.lower():
            from advisor.read.apps.pgpool import own_files

            app = own_files(app)
        else:
            app = None
    ctx = StackContext(container=container, app=app, profile=profile, node_cpus=node_cpus,
                       pod_files=pod_files, init_writers=init_writers)
    from advisor.read.apps.cmdline import command_line, dockerfile_doubt

    # one read of the command line for both (a call per container of every check)
    line = command_line(ctx.container, ctx.app, [])
    segments = line.segments()
    if (doubt := dockerfile_doubt(ctx.container, ctx.app)) is not None:
        ctx.notices.append(doubt)  # said once, whether or not its processes are asked
    schema_tool = _temporal_sql_tool(ctx, segments)
    if schema_tool is not None:
        return AppPools(pools=schema_tool, notices=ctx.notices, problems=ctx.problems,
                        no_postgres=not schema_tool)
    migration = _migration_pool(ctx, segments)
    client_program = (_client_program_pool(ctx, list(line.words), segments)
                      if migration is None else None)
    if client_program is not None and container.role == "init":
        # `until pg_isready ...` before the application starts: gone by the peak
        ctx.notices.append(f"init container {container.name}: {client_program.label} not "
                           "counted at peak (it exits before the application containers "
                           "start)")
        return AppPools(notices=ctx.notices, problems=ctx.problems)
    migration = migration or client_program
    if migration is not None:
        return AppPools(pools=[migration], notices=ctx.notices, problems=ctx.problems)
    pools: list[Pool] = []
    env_names = tuple(e.name.upper() for e in container.env)
    python_process = _runs_python(line.jobs())
    skipped: list[str] = []
    for reader in READERS:
        if not reader.wanted(container, app, env_names):
            continue
        if python_process and reader.kinds and set(reader.kinds) <= _JS_KINDS:
            # a Python interpreter runs no JavaScript: a package.json of the source is
            # another program's (a JS sub-project, a test server)
            skipped.append(reader.name)
            continue
        try:
            pools.extend(reader.load()(ctx))
        except Exception as exc:
            # A reader bug must not hide the other findings: report it where it happened,
            # as advisor.guard does (PA901 error, exit 2), and leave the container's size
            # unknown, never the other readers' sum as if complete.
            from advisor.guard import crash_text

            where = app.directory if app is not None else container.name
            ctx.problem(container.source, f"{INTERNAL_ERROR} reading {reader.name} pool "
                        f"settings of {where or '.'} ({crash_text(exc)}); please report "
                        "this", fatal=True, program="pool-advisor")
            ctx.unknown.append(f"{reader.name} pool settings not read (internal error)")
            pools = []
            break
    # (a Celery monitor runs a Python stack, whose pools asked for the processes: a
    # container whose readers did not, a JVM or Go pool, is none)
    if pools and container.role != "init" and (read := ctx.processes_read()) is not None \
            and (monitor := celery_monitor(read.server)) is not None:
        # Flower and `celery events` run no task: the application's framework pools are
        # never opened (larsrinn/kubernetes_django's flower, with no database host in its
        # env, made every server "cannot tell, may connect here")
        ctx.notices.append(monitor_note(container.name, monitor, pools))
        return AppPools(notices=ctx.notices, problems=ctx.problems, monitor=monitor)
    if skipped:
        ctx.notices.append(f"{container.name}: runs Python ({python_process}): the source's "
                           f"JavaScript ({', '.join(skipped)}) is not its process, not counted")
    if pools and app is not None and all(p.label.startswith("pg-boss") for p in pools):
        from advisor.read.apps.pgboss import beside_main_stack

        pools = beside_main_stack(ctx, pools)
    problems = list(app.problems) if app is not None else []
    notices = list(app.notices) if app is not None else []
    if container.role == "init" and pools:
        # init containers exit before the app containers start: no share of the peak
        ctx.notices.append(f"init container {container.name}: "
                           f"{', '.join(p.label for p in pools)} not counted at peak (it "
                           "exits before the application containers start)")
        pools = []
    unknown = ctx.unknown
    if container.role == "init" and unknown:
        # nor does a pool whose size is not read: an unknown that never counts would
        # leave the workload's connections unknown (chatwoot's `sh -c` init containers)
        ctx.notices.append(f"init container {container.name}: pool size not read "
                           f"({'; '.join(unknown)}), not needed: it exits before the "
                           "application containers start")
        unknown = []
    # an init container's connections are not counted at peak, wherever they go
    unrouted = ctx.unrouted if container.role != "init" else []
    cli_only: dict[str, str] = {}
    if app is not None and container.role != "init" and ctx.files("prisma"):
        # not for a `prisma migrate deploy` container (returned above): it uses them
        from advisor.read.apps.prisma import cli_only_variables

        cli_only = cli_only_variables(ctx)
    if app is not None and container.role != "init":
        cli_only.update(_goose_variables(ctx, list(line.words)))
    return AppPools(pools=pools, notices=notices + ctx.notices, problems=problems + ctx.problems,
                    unknown=unknown, unrouted=unrouted, cli_only=cli_only)


# goose's CLI reads its database from GOOSE_DBSTRING (pressly/goose@8f0ae059
# cmd/goose/main.go loadEnvConfig: dbstring envOr("GOOSE_DBSTRING", "")); the library an
# application imports does not (it is given a *sql.DB). Code languages whose source would
# name the variable if the application read it itself.
_GOOSE_VARS = ("GOOSE_DBSTRING",)
_CODE_KINDS = ("python", "js", "go", "ruby", "elixir", "csharp", "rust", "java")


def _goose_variables(ctx: StackContext, words: list[Word]) -> dict[str, str]:
    """GOOSE_DBSTRING -> why, when the container's command does not run goose and the
    application's code never names the variable: only `goose up` (run by hand or by a
    Makefile) opens it, the running program holds no connection there
    (0xdbb/task-manager's ConfigMap: DB_URL to its in-cluster server, GOOSE_DBSTRING to
    a Neon database, /app/main reads DB_URL only)."""
    names = [n for n in _GOOSE_VARS if ctx.env(n) is not None]
    if not names or any(w.text.rsplit("/", 1)[-1] == "goose" for w in words):
        return {}
    code = [f.text for f in ctx.files(*_CODE_KINDS)]
    return {n: "goose's own variable (pressly/goose cmd/goose/main.go loadEnvConfig), "
               "which only the goose CLI opens (goose up/status), and the application's "
               "code never reads"
            for n in names if not any(n in text for text in code)}


def celery_monitor(server: str) -> str | None:
    """"flower" / "events" for a container whose server is a Celery monitor
    (processes.detect_processes: `celery -A app flower`), else None."""
    return server.removeprefix("celery-") if server in ("celery-flower", "celery-events") \
        else None


def monitor_note(container: str, monitor: str, pools: list[Pool]) -> str:
    what = (f"the application's {', '.join(sorted({p.label for p in pools}))} is never "
            "opened" if pools else "the database its env names is not connected to")
    return (f"{container}: runs Celery {monitor}, which runs no task (mher/flower "
            f"flower/command.py; celery events): {what}, not counted")


def no_database_library(container: Container, app: AppSource | None) -> str | None:
    """Why the application this container runs is no database client, when its
    dependency files name no database library (identify.names_no_database_library)."""
    if app is None or _not_the_app(container):
        return None
    from advisor.read.apps.identify import names_no_database_library

    return names_no_database_library(StackContext(container=container, app=app,
                                                  profile=None))


def default_pools_for_container(container: Container, app: AppSource | None, route: object,
                                *, node_cpus: int | NodeCpus | None = None
                                ) -> AppPools:
    """For a container that connects (`route`) but whose pools no reader found: the
    default pool of the stack its URL scheme or dependency files identify, or none."""
    from advisor.read.apps.identify import identified_pools

    if app is not None and _not_the_app(container):
        app = None
    ctx = StackContext(container=container, app=app, profile=None, node_cpus=node_cpus)
    pools = identified_pools(ctx, route)  # type: ignore[arg-type]
    # whether or not a stack is identified: a monitor given the database's env (from the
    # ConfigMap its workers share) still connects to nothing
    if container.role != "init" and not any(
            p.label.startswith("Celery database result backend") for p in pools) and \
            (monitor := celery_monitor(ctx.processes().server)) is not None:
        ctx.notices.append(monitor_note(container.name, monitor, pools))
        return AppPools(notices=ctx.notices, problems=ctx.problems, monitor=monitor)
    return AppPools(pools=pools, notices=ctx.notices, problems=ctx.problems)
