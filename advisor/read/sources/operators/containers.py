"""Plain PostgreSQL and PgBouncer containers configured by command line or environment
(no operator): `postgres -c` options, the Bitnami pgbouncer image and
edoburu/pgbouncer.

- Bitnami pgbouncer image (github.com/bitnami/containers bitnami/pgbouncer/1/
  debian-12 rootfs/opt/bitnami/scripts/pgbouncer-env.sh at 043f89c8, and
  libpgbouncer.sh): each
  non-empty PGBOUNCER_* variable below becomes the [pgbouncer] key next to it; the
  image's own defaults: listen_port 6432, auth_type scram-sha-256,
  ignore_startup_parameters extra_float_digits; [databases] gets
  `$PGBOUNCER_DATABASE = host=$POSTGRESQL_HOST port=$POSTGRESQL_PORT`.
"""

from __future__ import annotations

from advisor.model import (
    BouncerVersion,
    ConfigProblem,
    EnvVar,
    Location,
    PoolerDatabase,
    Setting,
    Source,
)
from advisor.read.sources.k8s import K8sObject, get
from advisor.read.sources.operators.common import bouncer_setting, source_at

# Bitnami pgbouncer image: variable -> pgbouncer.ini key (libpgbouncer.sh).
BITNAMI_PGBOUNCER_ENV: dict[str, str] = {
    "PGBOUNCER_PORT": "listen_port",
    "PGBOUNCER_LISTEN_ADDRESS": "listen_addr",
    "PGBOUNCER_AUTH_TYPE": "auth_type",
    "PGBOUNCER_AUTH_USER": "auth_user",
    "PGBOUNCER_AUTH_QUERY": "auth_query",
    "PGBOUNCER_STATS_USERS": "stats_users",
    "PGBOUNCER_POOL_MODE": "pool_mode",
    "PGBOUNCER_QUERY_WAIT_TIMEOUT": "query_wait_timeout",
    "PGBOUNCER_MAX_CLIENT_CONN": "max_client_conn",
    "PGBOUNCER_MAX_DB_CONNECTIONS": "max_db_connections",
    "PGBOUNCER_IDLE_TRANSACTION_TIMEOUT": "idle_transaction_timeout",
    "PGBOUNCER_SERVER_IDLE_TIMEOUT": "server_idle_timeout",
    "PGBOUNCER_SERVER_RESET_QUERY": "server_reset_query",
    "PGBOUNCER_DEFAULT_POOL_SIZE": "default_pool_size",
    "PGBOUNCER_MIN_POOL_SIZE": "min_pool_size",
    "PGBOUNCER_RESERVE_POOL_SIZE": "reserve_pool_size",
    "PGBOUNCER_RESERVE_POOL_TIMEOUT": "reserve_pool_timeout",
    "PGBOUNCER_IGNORE_STARTUP_PARAMETERS": "ignore_startup_parameters",
    "PGBOUNCER_LOG_CONNECTIONS": "log_connections",
    "PGBOUNCER_LOG_DISCONNECTIONS": "log_disconnections",
    "PGBOUNCER_LOG_POOLER_ERRORS": "log_pooler_errors",
    "PGBOUNCER_LOG_STATS": "log_stats",
    "PGBOUNCER_STATS_PERIOD": "stats_period",
    "PGBOUNCER_SERVER_ROUND_ROBIN": "server_round_robin",
    "PGBOUNCER_SERVER_FAST_CLOSE": "server_fast_close",
    "PGBOUNCER_MAX_PREPARED_STATEMENTS": "max_prepared_statements",
    "PGBOUNCER_APPLICATION_NAME_ADD_HOST": "application_name_add_host",
    "PGBOUNCER_SERVER_LIFETIME": "server_lifetime",
    "PGBOUNCER_SERVER_CONNECT_TIMEOUT": "server_connect_timeout",
    "PGBOUNCER_SERVER_LOGIN_RETRY": "server_login_retry",
    "PGBOUNCER_CLIENT_LOGIN_TIMEOUT": "client_login_timeout",
    "PGBOUNCER_AUTODB_IDLE_TIMEOUT": "autodb_idle_timeout",
    "PGBOUNCER_QUERY_TIMEOUT": "query_timeout",
    "PGBOUNCER_CLIENT_IDLE_TIMEOUT": "client_idle_timeout",
    "PGBOUNCER_CLIENT_TLS_SSLMODE": "client_tls_sslmode",
    "PGBOUNCER_SERVER_TLS_SSLMODE": "server_tls_sslmode",
}
BITNAMI_PGBOUNCER_DEFAULTS = {"listen_port": "6432", "auth_type": "scram-sha-256",
                              "ignore_startup_parameters": "extra_float_digits"}
BITNAMI_PGBOUNCER_WHO = "bitnami/pgbouncer image default (pgbouncer-env.sh)"


def settings_from_bitnami_pgbouncer_env(env: tuple[EnvVar, ...],
                                        version: BouncerVersion | None = None
                                        ) -> dict[str, Setting]:
    """[pgbouncer] settings the Bitnami pgbouncer image writes from its environment
    (non-empty PGBOUNCER_* variables; empty ones are skipped as the image skips
    them), plus the image's own defaults where the variable is not set. Parsed as the
    image's PgBouncer version does (a key added in 1.21 is dropped by an older table)."""
    version = version or BouncerVersion()
    settings: dict[str, Setting] = {}
    for key, value in BITNAMI_PGBOUNCER_DEFAULTS.items():
        setting = bouncer_setting(key, value, Source.default_of(BITNAMI_PGBOUNCER_WHO, key=key),
                                  version)
        if setting is not None:
            settings[key] = setting
    for var in env:
        key = BITNAMI_PGBOUNCER_ENV.get(var.name)
        if key is None or var.secret or var.value is None or not var.value.strip():
            continue
        setting = bouncer_setting(key, var.value, var.source, version)
        if setting is not None:
            settings[key] = setting
    return settings


# The Bitnami image's variables that say where its one entry leads (no credential)
_BITNAMI_UPSTREAM = frozenset({"PGBOUNCER_DATABASE", "POSTGRESQL_HOST", "POSTGRESQL_PORT",
                               "POSTGRESQL_DATABASE"})


def bitnami_pgbouncer_databases(env: tuple[EnvVar, ...], location: Location
                                ) -> list[PoolerDatabase]:
    """The one [databases] entry the Bitnami image writes. Its host, port and names from a
    Secret the repository holds are used as written ones (audit 54); nothing else of a
    Secret is read here."""
    values = {v.name: v.value for v in env if v.value is not None
              and (not v.secret or v.name in _BITNAMI_UPSTREAM)}
    name = values.get("PGBOUNCER_DATABASE") or "postgres"
    # set from a Secret or reference the repository does not hold: where it leads is not
    # known (no server's peak is then more than a floor), not the image's default host
    unheld = any(v.name == "POSTGRESQL_HOST" and v.value is None for v in env)
    host = None if unheld else values.get("POSTGRESQL_HOST") or "postgresql"
    try:
        port = int(values.get("POSTGRESQL_PORT") or 5432)
    except ValueError:
        port = 5432
    dbname = None if name == "*" else (values.get("POSTGRESQL_DATABASE") or name)
    return [PoolerDatabase(name=name, host=host, port=port, dbname=dbname, location=location)]


# --- plain postgres containers ---------------------------------------------------------------


def settings_from_postgres_args(obj: K8sObject, container_keys: tuple[str | int, ...],
                                version: int = 15) -> tuple[dict[str, Setting],
                                                            list[ConfigProblem]]:
    """`postgres -c max_connections=200 ...` in a container's command/args: each
    setting at the line of its own list item."""
    from advisor.read.sources.pgconf import parse_postgres_args_checked

    settings: dict[str, Setting] = {}
    problems: list[ConfigProblem] = []
    for part in ("command", "args"):
        items = get(obj.body, *container_keys, part)
        if not isinstance(items, list):
            continue
        words = [str(x) for x in items]
        for i in range(len(words)):
            # parse each option with its argument, so each Setting gets its own line
            if not words[i].startswith("-"):
                continue
            chunk = words[i:i + 2] if i + 1 < len(words) and not words[i + 1].startswith("-") \
                else words[i:i + 1]
            at = i + len(chunk) - 1  # the item holding name=value
            found, probs = parse_postgres_args_checked(chunk, source_at(obj, *container_keys,
                                                                        part, at), version)
            settings.update(found)
            problems.extend(probs)
    return settings, problems


# --- PgBouncer images configured by environment ------------------------------------------

EDOBURU_WHO = "edoburu/pgbouncer entrypoint.sh default"


# The images whose entrypoint reads one convention, whatever variables they are given
_STYLE_OF_IMAGE = {"edoburu/pgbouncer": "edoburu", "bitnami/pgbouncer": "bitnami",
                   "bitnamilegacy/pgbouncer": "bitnami", "pgbouncer/pgbouncer": "sections"}

# pgbouncer/pgbouncer on Docker Hub is no image of the PgBouncer project: it is built by
# gitlab.com/aztek-io/oss/containers/pgbouncer-container (.gitlab-ci.yml ORG: pgbouncer,
# REPO: pgbouncer, building the PgBouncer release current at each build with
# --build-arg PGBOUNCER_VERSION; its README: "created since pgbouncer does not have an
# official docker image"). Its entrypoint.sh, as merged into the fork
# sportsru/docker-pgbouncer at cd08ecb (2020-07-16, "Merge branch 'master' of
# https://gitlab.com/aztek-io/..."), writes `<SECTION>_<KEY>` variables: [databases]
# `${DATABASES_CLIENT_SIDE_DBNAME:-*} = host = ${DATABASES_HOST} port=${DATABASES_PORT:-5432}
# ...` (:48-61), [pgbouncer] from the PGBOUNCER_* names below (:74-158), and exits 1 when
# neither DATABASES_HOST nor DATABASES_RAW is set (:13-15); the upstream's own 2019 one
# (d8e77a2) already required DATABASES_HOST. Which PgBouncer its `latest` is, is not known
# here (the version stays the assumption every unversioned image gets).
SECTIONS_CITE = ("aztek-io pgbouncer-container entrypoint.sh, as in "
                 "sportsru/docker-pgbouncer@cd08ecb")
SECTIONS_WHO = f"pgbouncer/pgbouncer image default ({SECTIONS_CITE})"
_SECTIONS_KEYS = frozenset((
    "logfile", "pidfile", "listen_addr", "listen_port", "unix_socket_dir",
    "unix_socket_mode", "unix_socket_group", "user", "auth_file", "auth_hba_file",
    "auth_type", "auth_user", "auth_query", "pool_mode", "max_client_conn",
    "default_pool_size", "min_pool_size", "reserve_pool_size", "reserve_pool_timeout",
    "max_db_connections", "max_user_connections", "server_round_robin",
    "ignore_startup_parameters", "disable_pqexec", "application_name_add_host", "conffile",
    "job_name", "syslog", "syslog_ident", "syslog_facility", "log_connections",
    "log_disconnections", "log_pooler_errors", "stats_period", "verbose", "admin_users",
    "stats_users", "server_reset_query", "server_reset_query_always", "server_check_delay",
    "server_check_query", "server_lifetime", "server_idle_timeout",
    "server_connect_timeout", "server_login_retry", "client_login_timeout",
    "autodb_idle_timeout", "dns_max_ttl", "dns_nxdomain_ttl", "client_tls_sslmode",
    "client_tls_key_file", "client_tls_cert_file", "client_tls_ca_file",
    "client_tls_protocols", "client_tls_ciphers", "client_tls_ecdhcurve",
    "client_tls_dheparams", "server_tls_sslmode", "server_tls_ca_file",
    "server_tls_key_file", "server_tls_cert_file", "server_tls_protocols",
    "server_tls_ciphers", "query_timeout", "query_wait_timeout", "client_idle_timeout",
    "idle_transaction_timeout", "pkt_buf", "max_packet_size", "listen_backlog",
    "sbuf_loopcnt", "suspend_timeout", "tcp_defer_accept", "tcp_keepalive", "tcp_keepcnt",
    "tcp_keepidle", "tcp_keepintvl",
))  # fmt: skip
_SECTIONS_DEFAULTS = {"listen_addr": "0.0.0.0", "auth_type": "any",
                      "ignore_startup_parameters": "extra_float_digits",
                      "admin_users": "postgres"}


def image_env_style(image: str) -> str:
    """"edoburu" / "bitnami" / "sections" (pgbouncer/pgbouncer) for those images (any
    registry, tag or digest), else ""."""
    name = image.split("@", 1)[0]
    if ":" in name.rsplit("/", 1)[-1]:
        name = name.rsplit(":", 1)[0]
    parts = name.split("/")
    return _STYLE_OF_IMAGE.get("/".join(parts[-2:]), "") if len(parts) >= 2 else ""


def bouncer_env_style(env: tuple[EnvVar, ...], image: str = "") -> str:
    """Which image's convention configures a PgBouncer container by environment: the
    image's own when it is edoburu/pgbouncer or bitnami/pgbouncer (audit 36: edoburu
    given Bitnami's PGBOUNCER_POOL_MODE=transaction runs its default, session: its
    entrypoint.sh@v1.25.1-p0:124 writes pool_mode from POOL_MODE only); otherwise by
    the names: "bitnami" (PGBOUNCER_* variables), "edoburu" (DB_HOST or DATABASE_URL),
    else ""."""
    if style := image_env_style(image):
        return style
    names = {v.name for v in env}
    if any(n.startswith("PGBOUNCER_") for n in names) or "POSTGRESQL_HOST" in names:
        return "bitnami"
    return "edoburu" if names & {"DB_HOST", "DATABASE_URL"} else ""


def bouncer_env_variable(style: str, key: str) -> str | None:
    """The variable that sets [pgbouncer] `key` in an image configured by environment
    (the reverse of what the image's entrypoint writes), None when it has none."""
    if style == "bitnami":
        return next((name for name, k in BITNAMI_PGBOUNCER_ENV.items() if k == key), None)
    if style == "edoburu":
        from advisor.facts.pgbouncer import params

        return key.upper() if key in params(BouncerVersion(major=1, minor=99)) else None
    if style == "sections":
        return f"PGBOUNCER_{key.upper()}" if key in _SECTIONS_KEYS else None
    return None


def env_bouncer_keys(env: tuple[EnvVar, ...], image: str = "") -> list[tuple[str, EnvVar]]:
    """([pgbouncer] key, variable) for each variable an image configured by environment
    writes into its ini, known to any PgBouncer version (whether the image's version has
    the key is for the caller: advisor.facts.pgbouncer.version_floor, dropped_env_notices)."""
    from advisor.facts.pgbouncer import params

    style = bouncer_env_style(env, image)
    newest = params(BouncerVersion(major=1, minor=99))
    out: list[tuple[str, EnvVar]] = []
    for var in env:
        if var.secret or not var.value or not var.value.strip():
            continue
        if style == "bitnami":
            key = BITNAMI_PGBOUNCER_ENV.get(var.name)
        elif style == "edoburu" and var.name.isupper():
            key = var.name.lower()
        elif style == "sections" and var.name.startswith("PGBOUNCER_"):
            key = var.name.removeprefix("PGBOUNCER_").lower()
            key = key if key in _SECTIONS_KEYS else None
        else:
            key = None
        if key is not None and key in newest:
            out.append((key, var))
    return out


def dropped_env_notices(env: tuple[EnvVar, ...], version: BouncerVersion, who: str,
                        image: str = "") -> list[str]:
    """A notice per variable setting a [pgbouncer] key that `version` does not have: the
    setting is not used (an image whose entrypoint writes it would not start; one that
    does not, ignores it), and never dropped without a word."""
    from advisor.facts.pgbouncer import params

    known = params(version)
    return [f"{who}: {var.name} ({var.source.label()}) is ignored: {key} is not a setting of "
            f"{version.cite()} (the image's version; a version that has it would use it)"
            for key, var in env_bouncer_keys(env, image) if key not in known]


def edoburu_prefixed_notices(env: tuple[EnvVar, ...], who: str) -> list[str]:
    """A notice for Bitnami's PGBOUNCER_* names given to edoburu/pgbouncer, whose
    entrypoint.sh writes a [pgbouncer] key only from the unprefixed upper-case name
    (POOL_MODE, DEFAULT_POOL_SIZE): they are ignored and PgBouncer's defaults run."""
    from advisor.facts.pgbouncer import params

    newest = params(BouncerVersion(major=1, minor=99))
    names = {v.name for v in env}
    meant = [f"{v.name} ({v.source.label()}) -> {v.name.removeprefix('PGBOUNCER_')}"
             for v in env if v.name.startswith("PGBOUNCER_")
             and v.name.removeprefix("PGBOUNCER_").lower() in newest
             and v.name.removeprefix("PGBOUNCER_") not in names]
    if not meant:
        return []
    return [f"{who}: the edoburu/pgbouncer image's entrypoint.sh reads unprefixed names "
            f"(edoburu/docker-pgbouncer entrypoint.sh@v1.25.1-p0:124-127, POOL_MODE, "
            f"MAX_CLIENT_CONN, DEFAULT_POOL_SIZE...), so these Bitnami-style variables are "
            f"ignored and PgBouncer's defaults are counted for them: {', '.join(meant)}; "
            f"the name after each arrow was probably meant"]


# Where the Bitnami image says which variables it reads: its list (every one PGBOUNCER_*
# or POSTGRESQL_*; no unprefixed alias) and the PGBOUNCER_DEFAULT_POOL_SIZE it exports,
# which libpgbouncer.sh's pgbouncer_initialize writes as default_pool_size
BITNAMI_ENV_CITE = ("bitnami/containers bitnami/pgbouncer/1/debian-12/rootfs/opt/bitnami/"
                    "scripts/pgbouncer-env.sh@043f89c8:26-95 (the variables it reads), :142 "
                    "(PGBOUNCER_DEFAULT_POOL_SIZE)")


def bitnami_unprefixed_notices(env: tuple[EnvVar, ...], who: str) -> list[str]:
    """A notice for the variables named like a PgBouncer setting without the Bitnami
    image's PGBOUNCER_ prefix (edoburu/pgbouncer's names: DEFAULT_POOL_SIZE,
    POOL_MODE): the image reads none of them, so its defaults run, and the user
    probably meant the prefixed variable (atakurt/messagingApp's bitnami/pgbouncer:1.24.1
    with DEFAULT_POOL_SIZE 80 and RESERVE_POOL_SIZE 40 runs 20 and 0)."""
    from advisor.facts.pgbouncer import params

    newest = params(BouncerVersion(major=1, minor=99))
    names = {v.name for v in env}
    meant: list[str] = []
    none: list[str] = []
    for var in env:
        if var.name.startswith(("PGBOUNCER_", "POSTGRESQL_")) or not var.name.isupper():
            continue
        prefixed = f"PGBOUNCER_{var.name}"
        if prefixed not in BITNAMI_PGBOUNCER_ENV:
            key = var.name.lower()
            prefixed = bouncer_env_variable("bitnami", key) if key in newest else None
            if prefixed is None:
                if key in newest:
                    none.append(f"{var.name} ({var.source.label()}; the image has no "
                                f"variable for {key}: mount a pgbouncer.ini)")
                continue
        if prefixed in names:
            continue  # the prefixed one is set too: that is what runs
        shown = f"={var.value}" if var.value is not None and not var.secret else ""
        meant.append(f"{var.name}{shown} ({var.source.label()}) -> {prefixed}")
    if not meant and not none:
        return []
    return [f"{who}: the Bitnami pgbouncer image reads only PGBOUNCER_* and POSTGRESQL_* "
            f"variables ({BITNAMI_ENV_CITE}), so these are ignored and PgBouncer's defaults "
            f"are counted for them: {', '.join(meant + none)}"
            + ("; the PGBOUNCER_ name after each arrow was probably meant" if meant else "")]


def pooler_config_from_env(env: tuple[EnvVar, ...], version: BouncerVersion | None = None,
                           image: str = ""
                           ) -> tuple[dict[str, Setting], list[PoolerDatabase]]:
    """[pgbouncer] settings and [databases] entries of a PgBouncer container configured
    by environment: the Bitnami image (PGBOUNCER_* variables, see
    `settings_from_bitnami_pgbouncer_env`) or edoburu/pgbouncer (entrypoint.sh writes
    each set upper-case variable named like a [pgbouncer] key, e.g. POOL_MODE,
    DEFAULT_POOL_SIZE, MAX_DB_CONNECTIONS, as that key, `ignore_startup_parameters`
    defaulting to extra_float_digits, and `* = host=$DB_HOST port=$DB_PORT` or the
    host of DATABASE_URL as its database); `image` decides between them when it is one
    of the two."""
    style = bouncer_env_style(env, image)
    if style == "bitnami":
        where = next((v.source.location() for v in env if v.name == "POSTGRESQL_HOST"), None)
        first = next((v.source.location() for v in env if v.source.location()), None)
        location = where or first or Location(path="", line=None)
        return settings_from_bitnami_pgbouncer_env(env, version), bitnami_pgbouncer_databases(
            env, location)
    if style == "sections":
        return _sections(env, version or BouncerVersion())
    if style != "edoburu":
        return {}, []
    return _edoburu(env, version or BouncerVersion())


def _sections(env: tuple[EnvVar, ...], version: BouncerVersion
              ) -> tuple[dict[str, Setting], list[PoolerDatabase]]:
    """What pgbouncer/pgbouncer's entrypoint writes (SECTIONS_CITE); nothing when it
    exits for want of DATABASES_HOST / DATABASES_RAW (sections_notices says so)."""
    values = {v.name: v for v in env}
    host = values.get("DATABASES_HOST")
    if host is None and "DATABASES_RAW" not in values:
        return {}, []
    settings: dict[str, Setting] = {}
    for key, value in _SECTIONS_DEFAULTS.items():
        found = bouncer_setting(key, value, Source.default_of(SECTIONS_WHO, key=key), version)
        if found is not None:
            settings[key] = found
    for key, var in env_bouncer_keys(env, "pgbouncer/pgbouncer"):
        found = bouncer_setting(key, var.value or "", var.source, version)
        if found is not None:
            settings[key] = found
    if host is None or not host.value or host.secret:
        return settings, []  # DATABASES_RAW, or a host not held here: entries not known

    def plain(name: str) -> str | None:
        var = values.get(name)
        return var.value if var is not None and not var.secret and var.value else None

    try:
        port = int(plain("DATABASES_PORT") or 5432)
    except ValueError:
        port = 5432
    mode = values.get("DATABASES_POOL_MODE")
    pool_mode = bouncer_setting("pool_mode", mode.value, mode.source, version) \
        if mode is not None and mode.value and not mode.secret else None
    return settings, [PoolerDatabase(
        name=plain("DATABASES_CLIENT_SIDE_DBNAME") or "*", host=host.value, port=port,
        dbname=plain("DATABASES_DBNAME"), user=plain("DATABASES_USER"), pool_mode=pool_mode,
        location=host.source.location() or Location(path="", line=None))]


def sections_notices(env: tuple[EnvVar, ...], who: str) -> list[str]:
    """What pgbouncer/pgbouncer does with another image's variables: without
    DATABASES_HOST or DATABASES_RAW its entrypoint exits (the pooler never runs); an
    unprefixed POOL_MODE / DEFAULT_POOL_SIZE (edoburu's names) is ignored."""
    from advisor.facts.pgbouncer import params

    names = {v.name for v in env}
    newest = params(BouncerVersion(major=1, minor=99))
    ignored = [f"{v.name} ({v.source.label()}) -> PGBOUNCER_{v.name}" for v in env
               if v.name.lower() in newest and v.name.isupper()
               and f"PGBOUNCER_{v.name}" not in names]
    out: list[str] = []
    if not names & {"DATABASES_HOST", "DATABASES_RAW"}:
        out.append(f"{who}: the pgbouncer/pgbouncer image's entrypoint.sh exits unless "
                   f"DATABASES_HOST or DATABASES_RAW is set ({SECTIONS_CITE}:13-15; the image "
                   "is built by aztek-io, not by the PgBouncer project): "
                   "this PgBouncer does not start, so no pool mode of it is checked and "
                   "its clients reach no server through it")
    if ignored:
        out.append(f"{who}: the pgbouncer/pgbouncer image reads [pgbouncer] settings only "
                   f"from PGBOUNCER_<KEY> ({SECTIONS_CITE}:74-158), so these are ignored "
                   f"and PgBouncer's defaults run: {', '.join(ignored)}; the name after "
                   "each arrow was probably meant")
    return out


def _edoburu(env: tuple[EnvVar, ...], version: BouncerVersion
             ) -> tuple[dict[str, Setting], list[PoolerDatabase]]:
    from urllib.parse import urlsplit

    from advisor.facts.pgbouncer import params

    known = params(version)
    settings: dict[str, Setting] = {}
    setting = bouncer_setting("ignore_startup_parameters", "extra_float_digits",
                              Source.default_of(EDOBURU_WHO, key="ignore_startup_parameters"),
                              version)
    if setting is not None:
        settings["ignore_startup_parameters"] = setting
    values: dict[str, EnvVar] = {}
    for var in env:
        values[var.name] = var
        key = var.name.lower()
        if key in known and var.value and not var.secret and var.name.isupper():
            found = bouncer_setting(key, var.value, var.source, version)
            if found is not None:
                settings[key] = found
    databases: list[PoolerDatabase] = []
    url = values.get("DATABASE_URL")
    host_var = values.get("DB_HOST")
    # A DATABASE_URL from a Secret the repository holds (its stringData, or data that
    # decodes: workloads.configmap_index) is read as a written one: the chart renders the
    # Secret the pods get (PostHog/charts-clickhouse 2021, templates/secrets.yaml
    # `postgresql-url: {{ include "posthog.postgresql.url" . | b64enc }}`, audit 54). Only
    # its host, port and database are kept: the user and password are never (the URL is
    # held only here). A Secret not held leaves the value None: its entries unknown.
    if url is not None and url.value:
        # entrypoint.sh ends the user:password at the LAST `@` of what follows `://` (sed -r
        # 's/^(.*)@([^@]*)$/\1/'), then the host at the first `/` (cut -d/ -f1): a password
        # with `/`, `?` or `#` (random ones can) would end a URL parser's authority early and
        # name a wrong host (audit 54). The credentials are dropped before parsing.
        proto, sep, rest = url.value.partition("://")
        plain = f"{proto}://{rest.rpartition('@')[2]}" if sep else url.value
        try:
            parts = urlsplit(plain)
        except ValueError:  # a bracket left open: nothing of it can be trusted
            parts = urlsplit("")
        try:
            port = parts.port or 5432
        except ValueError:  # a port that is no number ($(DB_PORT)): PostgreSQL's default
            port = 5432
        host = parts.hostname
        dbname = parts.path.lstrip("/") or None
        databases.append(PoolerDatabase(
            name=dbname or "*", host=host, port=port, dbname=dbname,
            location=url.source.location() or Location(path="", line=None)))
    elif host_var is not None and host_var.value:
        port_var = values.get("DB_PORT")
        name_var = values.get("DB_NAME")
        try:
            port = int(port_var.value) if port_var and port_var.value else 5432
        except ValueError:
            port = 5432
        # entrypoint.sh writes `${DB_NAME:-*} = host=...` (edoburu/docker-pgbouncer
        # v1.25.1-p0 entrypoint.sh:69-70): a DB_NAME set from a Secret or reference not
        # held here is a named entry of unknown name, not the * fallback
        value = name_var.value if name_var is not None else None
        where = ""
        if value and "$(" in value:  # a `$(VAR)` kubelet could not expand from what is held
            value, where = None, value
        elif name_var is not None and not value and (name_var.secret or name_var.from_ref):
            where = (name_var.from_ref or "secret").split(" (")[0]
        databases.append(PoolerDatabase(
            name=value or (f"(DB_NAME: {where})" if where else "*"),
            host=host_var.value, port=port, name_from=f"DB_NAME ({where})" if where else "",
            location=host_var.source.location() or Location(path="", line=None)))
    return settings, databases
