"""Where a client connects, read from the strings users write: URLs, JDBC URLs, libpq
key=value DSNs, Npgsql connection strings, and PG*/DB_* environment variables.

Only host, port, database and user are kept (never the password). Formats:
- libpq URIs `postgres[ql]://user:pw@host:port,host2/db?host=..&port=..` (also
  `postgresql+psycopg://`, `postgis://`, `pgsql://`) and key=value
  DSNs (`host=h port=5432 dbname='my db'`), PostgreSQL 15 docs, "34.1.1 Connection
  Strings" (libpq-connect.html#LIBPQ-CONNSTRING).
- pgJDBC `jdbc:postgresql://host:port/db?user=..`, `jdbc:postgresql:db`,
  `jdbc:postgresql:/` (pgjdbc docs "Connecting to the Database").
- R2DBC `r2dbc:postgresql://` and `r2dbc:pool:postgresql://`.
- Npgsql `Host=h;Port=5432;Database=d;Username=u` (Npgsql "Connection String
  Parameters"; keys are case-insensitive, spaces inside keys ignored).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import parse_qs, unquote

from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import EnvVar, Route, Source

_URL_SCHEMES = ("postgres://", "postgresql://")
_PREFIXES = ("jdbc:", "r2dbc:pool:", "r2dbc:")

# Npgsql / ADO.NET keyword aliases (lower-case, spaces removed) -> Route field.
_NPGSQL_KEYS = {
    "host": "host",
    "server": "host",
    "port": "port",
    "database": "dbname",
    "db": "dbname",
    "username": "user",
    "user": "user",
    "userid": "user",
    "uid": "user",
}
_LIBPQ_KEYS = {"host": "host", "hostaddr": "host", "port": "port", "dbname": "dbname",
               "user": "user"}


def _has_placeholder(text: str) -> bool:
    return "${" in text or "$(" in text or "{{" in text or "<%" in text


def parse_port(text: str | None) -> int | None:
    """A TCP port as written (the first of a list), or None: ASCII digits only
    (str.isdigit takes "²", which int() refuses)."""
    if text is None:
        return None
    first = text.split(",")[0].strip()
    return int(first) if _PORT.fullmatch(first) and 0 < int(first) < 65536 else None


_PORT = lazy(r"[0-9]{1,5}")


def _first_host(text: str | None) -> str | None:
    if not text:
        return None
    first = text.split(",")[0].strip()
    return first or None


def _known(text: str | None) -> str | None:
    # a template part (`{{ .username }}`, `${POSTGRES_USER}` of an f-string or template
    # literal) is a name not known here; so is a Kubernetes `$(POSTGRES_DB)` the env
    # reading left as it is (its variable holds a Secret's value, or none before it)
    return text if text and "{{" not in text and "${" not in text and "$(" not in text \
        else None


def split_port(host: str) -> tuple[str, str | None]:
    """`db.svc:5432` -> ("db.svc", "5432"): a host variable or chart value that carries
    its port (Tranga's POSTGRES_HOST, Forgejo's database.HOST); any other host as it
    is, with None (an IPv6 literal keeps its colons)."""
    named, colon, port_text = host.rpartition(":")
    if colon and named and ":" not in named and parse_port(port_text) is not None:
        return named, port_text
    return host, None


def declared_hosts(hosts: list[str]) -> list[str]:
    """A [[servers]]/[[proxies]] entry's hosts as routes name them: lower-cased, a port
    written with a host left off (`127.0.0.1:5432` is the host 127.0.0.1, which a Cloud
    SQL proxy sidecar's clients name; routes are matched by host, not port)."""
    return [split_port(h.strip())[0].lower() for h in hosts]


def _route(fields: dict[str, str | None], source: Source) -> Route | None:
    host = _first_host(fields.get("host"))
    if host is not None and (_has_placeholder(host) or other_scheme_hosts(host)):
        return None  # DB_HOST=tcp://db:5432: a URL of another protocol, not a host
    if host is not None:
        host, port_text = split_port(host)
        if port_text is not None:
            fields = {**fields, "port": fields.get("port") or port_text}
    dbname = _known(fields.get("dbname"))
    user = _known(fields.get("user"))
    if host is None and dbname is None:
        return None
    # a password (?password=, sslpassword) is no driver setting, and is never kept
    params = tuple(p for p in (fields.get("params") or "").split("\n")
                   if p and "pass" not in p.partition("=")[0].lower())
    return Route(host=host, port=parse_port(fields.get("port")), dbname=dbname, user=user,
                 source=source, params=params)


def route_from_parts(host: str | None, port: str | None, dbname: str | None,
                     user: str | None, source: Source) -> Route | None:
    """The route an application's own settings give in parts (Grafana's [database]
    host, name, user; Gitea's HOST, NAME, USER): a host may carry its port."""
    return _route({"host": host, "port": port, "dbname": dbname, "user": user}, source)


def _parse_uri(url: str) -> dict[str, str | None] | None:
    """libpq URI. Multi-host netlocs (`h1:5432,h2:5433`) keep the first host."""
    rest = url.split("://", 1)[1]
    netloc, _, tail = rest.partition("/")
    if "?" in netloc:  # postgres://host?dbname=x (no path)
        netloc, _, query0 = netloc.partition("?")
        tail = "?" + query0
    path, _, query = tail.partition("?")
    fields: dict[str, str | None] = {}
    userinfo, at, hostpart = netloc.rpartition("@")
    if at:
        fields["user"] = unquote(userinfo.split(":", 1)[0]) or None
    first = hostpart.split(",")[0]
    if first.startswith("["):  # IPv6 literal
        host, _, port = first[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = first.partition(":")
    fields["host"] = unquote(host) or None
    fields["port"] = port or None
    fields["dbname"] = unquote(path) or None
    extra: list[str] = []
    for key, values in parse_qs(query, keep_blank_values=True).items():
        name = _LIBPQ_KEYS.get(key.lower()) or ("user" if key.lower() == "username" else None)
        if name and values and values[-1]:
            fields[name] = values[-1]
        elif not name and values:
            extra.append(f"{key}={values[-1]}")
    if extra:
        fields["params"] = "\n".join(extra)
    return fields


def _parse_jdbc(url: str) -> dict[str, str | None] | None:
    """pgJDBC: jdbc:postgresql://host:port/db, jdbc:postgresql:db, jdbc:postgresql:/"""
    body = url[len("postgresql:"):]
    body, _, query = body.partition("?")
    fields: dict[str, str | None] = {}
    if body.startswith("//"):
        hostpart, _, db = body[2:].partition("/")
        first = hostpart.split(",")[0]
        if first.startswith("["):
            host, _, port = first[1:].partition("]")
            port = port.lstrip(":")
        else:
            host, _, port = first.partition(":")
        fields["host"] = host or "localhost"
        fields["port"] = port or None
        fields["dbname"] = unquote(db) or None
    else:  # jdbc:postgresql:db connects to localhost:5432
        fields["host"] = "localhost"
        fields["dbname"] = unquote(body.lstrip("/")) or None
    if not query:
        return fields
    for key, values in parse_qs(query, keep_blank_values=True).items():
        if key.lower() == "user" and values and values[-1]:
            fields["user"] = values[-1]
    return fields


_KV_TOKEN = lazy(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*")


def _parse_libpq_kv(dsn: str) -> dict[str, str | None] | None:
    """libpq `key = value` pairs; values may be single-quoted with \\' and \\\\ escapes."""
    fields: dict[str, str | None] = {}
    pos = 0
    seen = False
    while pos < len(dsn):
        if dsn[pos:].strip() == "":
            break
        m = _KV_TOKEN.match(dsn, pos)
        if not m:
            return None
        key = m.group(1).lower()
        pos = m.end()
        value_chars: list[str] = []
        if pos < len(dsn) and dsn[pos] == "'":
            pos += 1
            while pos < len(dsn) and dsn[pos] != "'":
                if dsn[pos] == "\\" and pos + 1 < len(dsn):
                    pos += 1
                value_chars.append(dsn[pos])
                pos += 1
            if pos >= len(dsn):
                return None  # unterminated quote
            pos += 1
        else:
            while pos < len(dsn) and not dsn[pos].isspace():
                if dsn[pos] == "\\" and pos + 1 < len(dsn):
                    pos += 1
                value_chars.append(dsn[pos])
                pos += 1
        seen = True
        name = _LIBPQ_KEYS.get(key)
        if name:
            fields[name] = "".join(value_chars)
        else:  # pgx reads its own keys from a keyword string too
            fields["params"] = "\n".join(filter(None, (fields.get("params"),
                                                      f"{key}={''.join(value_chars)}")))
    return fields if seen else None


def _parse_npgsql(text: str) -> dict[str, str | None] | None:
    fields: dict[str, str | None] = {}
    for part in text.split(";"):
        if "=" not in part:
            continue
        key, _, value = part.partition("=")
        name = _NPGSQL_KEYS.get(key.strip().lower().replace(" ", ""))
        if name:
            fields[name] = value.strip().strip("'\"")
    return fields or None


# ecto:// is Ecto's URL form for its configured adapter (Ecto.Repo.Supervisor.parse_url).
# Celery's database result backend is `db+` and an SQLAlchemy URL (celery/backends/
# database: the scheme after `db+` goes to create_engine): Airflow's
# AIRFLOW__CELERY__RESULT_BACKEND=db+postgresql://...
_SCHEME_ALIAS = lazy(
    r"^(?:db\+postgres(?:ql)?(?:\+[\w.-]+)?|postgres(?:ql)?\+[\w.-]+|postgis|pgsql|timescaledb"
    r"|ecto)://", re.I)


# Pure, and asked twice for most clients (the Spring/Hikari reader and the env's URL):
# the second time answered from here.
@lru_cache(maxsize=1024)
def route_from_url(url: str, source: Source) -> Route | None:
    """A Route from any connection string form above; None when there is no host or
    database to follow (unresolved placeholders, other databases, unknown forms).
    SQLAlchemy's `postgresql+driver://`, `postgis://` and Laravel's `pgsql://` count as
    PostgreSQL URLs."""
    text = _SCHEME_ALIAS.sub("postgresql://", url.strip())
    lower = text.lower()
    for prefix in _PREFIXES:
        if lower.startswith(prefix):
            text = text[len(prefix):]
            lower = lower[len(prefix):]
            if lower.startswith("postgresql:") and not lower.startswith("postgresql://"):
                return _route(_parse_jdbc(text) or {}, source)
            if lower.startswith("postgresql://") and prefix == "jdbc:":
                return _route(_parse_jdbc(text) or {}, source)
            break
    if lower.startswith(_URL_SCHEMES):
        fields = _parse_uri(text)
        return _route(fields, source) if fields else None
    if "://" in lower:
        return None  # mysql://, redis://, ...
    if ";" in text and "=" in text:
        fields = _parse_npgsql(text)
        return _route(fields, source) if fields else None
    if "=" in text:
        fields = _parse_libpq_kv(text)
        return _route(fields, source) if fields else None
    return None


# Variables holding a whole connection string, most specific first.
_URL_VARS = (
    "DATABASE_URL", "SPRING_DATASOURCE_URL", "JDBC_DATABASE_URL", "POSTGRES_URL",
    "POSTGRESQL_URL", "PG_URL", "PGURL", "DB_URL", "DATABASE_DSN", "DB_DSN", "POSTGRES_DSN",
    "PG_DSN", "DSN", "DB_CONNECTION_STRING", "CONNECTION_STRING",
    "CONNECTIONSTRINGS__DEFAULTCONNECTION", "QUARKUS_DATASOURCE_JDBC_URL",
    "QUARKUS_DATASOURCE_REACTIVE_URL", "SPRING_R2DBC_URL",
    "KC_DB_URL",  # Keycloak (Quarkus distribution): a JDBC URL
    "PGRST_DB_URI",  # PostgREST
    "MM_SQLSETTINGS_DATASOURCE",  # Mattermost
)
# (prefix, host, port, dbname, user) families for split variables.
_PART_FAMILIES = (
    ("PG", "PGHOST", "PGPORT", "PGDATABASE", "PGUSER"),
    ("DB", "DB_HOST", "DB_PORT", "DB_NAME", "DB_USER"),
    ("DATABASE", "DATABASE_HOST", "DATABASE_PORT", "DATABASE_NAME", "DATABASE_USER"),
    ("POSTGRES", "POSTGRES_HOST", "POSTGRES_PORT", "POSTGRES_DB", "POSTGRES_USER"),
    ("POSTGRESQL", "POSTGRESQL_HOST", "POSTGRESQL_PORT", "POSTGRESQL_DATABASE",
     "POSTGRESQL_USER"),
    ("PG_", "PG_HOST", "PG_PORT", "PG_DATABASE", "PG_USER"),
    # Keycloak: db-url-host, db-url-port, db-url-database, db-username
    ("KC_DB", "KC_DB_URL_HOST", "KC_DB_URL_PORT", "KC_DB_URL_DATABASE", "KC_DB_USERNAME"),
    # Harbor exporter (HARBOR_DATABASE_*); Harbor core uses the POSTGRESQL family
    ("HARBOR_DATABASE", "HARBOR_DATABASE_HOST", "HARBOR_DATABASE_PORT", "HARBOR_DATABASE_DBNAME",
     "HARBOR_DATABASE_USERNAME"),
    # Keycloak's legacy (WildFly) image: DB_ADDR (hosts, each may carry :port), DB_PORT,
    # DB_DATABASE, DB_USER (keycloak-containers server/tools/docker-entrypoint.sh)
    ("DB", "DB_ADDR", "DB_PORT", "DB_DATABASE", "DB_USER"),
)
# (variable, value) a family's host needs to be PostgreSQL's: the legacy Keycloak image
# connects to DB_ADDR with the driver DB_VENDOR names (H2 when unset; its entrypoint's
# `case "$DB_VENDOR"` knows postgres, not postgresql)
_FAMILY_REQUIRES = {"DB_ADDR": ("DB_VENDOR", "postgres")}
_ALT_NAMES = {
    "DB_NAME": ("DB_DATABASE", "DB_DBNAME"),
    "DB_USER": ("DB_USERNAME",),
    "DATABASE_NAME": ("DATABASE_DB",),
    "DATABASE_USER": ("DATABASE_USERNAME",),
    "POSTGRES_DB": ("POSTGRES_DATABASE",),
    "POSTGRES_USER": ("POSTGRES_USERNAME",),
    "POSTGRESQL_USER": ("POSTGRESQL_USERNAME",),
}


# Ports and engine names of databases that are not PostgreSQL: a DB_HOST family that
# names one (Laravel's DB_CONNECTION=mysql, BookStack's DB_PORT=3306) is not a route.
_OTHER_ENGINE_PORTS = frozenset({"3306", "1433", "1521", "27017", "6379", "9042"})
_OTHER_ENGINE = lazy(r"mysql|maria|sqlite|sqlsrv|mssql|sqlserver|oracle|mongo|redis",
                           re.I)
_ENGINE_ENDINGS = ("_CONNECTION", "_TYPE", "_DRIVER", "_ENGINE", "_DIALECT", "_CLIENT",
                   "_VENDOR", "_ADAPTER")


def _another_engine(prefix: str, by_name: dict[str, EnvVar], port_var: str) -> bool:
    port = by_name.get(port_var)
    if port is not None and port.value and port.value.strip() in _OTHER_ENGINE_PORTS:
        return True
    stem = prefix.rstrip("_")
    for ending in _ENGINE_ENDINGS:
        var = by_name.get(stem + ending)
        if var is not None and var.value and _OTHER_ENGINE.search(var.value):
            return True
    return False


def _required_engine(host_var: str, by_name: dict[str, EnvVar]) -> bool:
    need = _FAMILY_REQUIRES.get(host_var)
    if need is None:
        return True
    var = by_name.get(need[0])
    return var is not None and (var.value or "").strip().lower() == need[1]


def route_from_env(env: tuple[EnvVar, ...]) -> Route | None:
    """The route a container's environment names: a URL variable first, then split
    host/port/db/user variables (PGHOST..., DB_HOST..., POSTGRES_HOST...). Variables with
    no known value (secret refs) are skipped. The Source is the variable that gave the host."""
    by_name = {e.name: e for e in env if e.value is not None}
    for name in _URL_VARS:
        var = by_name.get(name)
        if var is not None and var.value:
            route = route_from_url(var.value, replace(var.source, key=name))
            if route is not None:
                return route
    for family_prefix, host_var, port_var, db_var, user_var in _PART_FAMILIES:
        host = by_name.get(host_var)
        if host is None or not host.value or _has_placeholder(host.value):
            continue
        if _another_engine(family_prefix, by_name, port_var):
            continue  # DB_HOST of a MySQL or MariaDB (DB_CONNECTION=mysql, DB_PORT=3306)
        if not _required_engine(host_var, by_name):
            continue

        def value_of(name: str) -> str | None:
            for candidate in (name, *_ALT_NAMES.get(name, ())):
                var = by_name.get(candidate)
                if var is not None and var.value:
                    return var.value
            return None

        lone = lone_host_parts(host_var, env)
        route = _route(
            {"host": host.value, "port": value_of(port_var) or lone["port"],
             "dbname": value_of(db_var) or lone["dbname"],
             "user": value_of(user_var) or lone["user"]},
            replace(host.source, key=host_var),
        )
        names = (db_var, *_ALT_NAMES.get(db_var, ()), *_BARE_PARTS["dbname"])
        named = next((v for n in names if (v := by_name.get(n)) is not None and v.value
                      and route is not None and v.value.strip() == route.dbname), None)
        if route is not None and named is not None:  # where PA213 says the name is
            route = replace(route, dbname_source=replace(named.source, key=named.name))
        return route
    # Any other *_DATABASE_URL / *_DB_URI / *_PG_DSN (e.g. ORDERS_DATABASE_URL).
    for var in env:
        if var.value and _named_url_var(var.name):
            route = route_from_url(var.value, replace(var.source, key=var.name))
            if route is not None:
                return route
    # Then the one variable of any name whose value is a PostgreSQL URL: the scheme says
    # what it is (bank-of-anthos: ACCOUNTS_DB_URI=postgresql://...@accounts-db:5432/...),
    # or libpq's keyword/value form with a dbname (AvilPage/keda-postgresql-demo's
    # POSTGRES_CONNECTION_STRING).
    # Several such URLs (Airflow's metadata database and Celery result backend) are not
    # one route: a client here has one, and picking either would drop the other's pool.
    urls = {var.value.strip(): var for var in env
            if var.value and (_pg_url(var.value) or _pg_keywords(var.value))}
    if len(urls) == 1:
        ((value, var),) = urls.items()
        return route_from_url(value, replace(var.source, key=var.name))
    return None


# A host variable of no application's own (POSTGRES_HOST, DB_HOST, PGHOST), and the
# bare names of the other families' parts: saasodoo's services read POSTGRES_HOST from
# a shared ConfigMap beside their own DB_NAME (its pydantic settings build
# postgresql://...@{postgres_host}:{postgres_port}/{db_name}).
_BARE_HOST = lazy(r"(?:DATABASE|POSTGRESQL|POSTGRES|PG|DB)_*(?:HOST|HOSTNAME|SERVER)", re.I)
_BARE_PARTS = {
    "port": ("DB_PORT", "DATABASE_PORT", "POSTGRES_PORT", "POSTGRESQL_PORT", "PGPORT",
             "PG_PORT"),
    "dbname": ("DB_NAME", "DB_DATABASE", "DB_DBNAME", "DATABASE_NAME", "DATABASE_DB",
               "POSTGRES_DB", "POSTGRES_DATABASE", "POSTGRESQL_DATABASE", "PGDATABASE",
               "PG_DATABASE"),
    "user": ("DB_USER", "DB_USERNAME", "DATABASE_USER", "DATABASE_USERNAME",
             "POSTGRES_USER", "POSTGRES_USERNAME", "POSTGRESQL_USER", "POSTGRESQL_USERNAME",
             "PGUSER", "PG_USER"),
}
# Any variable that names a database host (MONGODB_HOST, POSTGRES_REPLICA_HOST,
# KC_DB_URL_HOST, DB_ADDR, CODEINTEL_PGHOST): a second one makes bare parts ambiguous.
_ANY_DB_HOST = lazy(r"(?:.*_)?(?:[A-Z0-9]*DB|PG[A-Z0-9]*|POSTGRES[A-Z0-9]*|DATABASE[A-Z0-9]*)"
                    r"(?:_.*)?_?(?:HOST|HOSTNAME|SERVER|ADDR)")
_NO_PARTS: dict[str, str | None] = {"port": None, "dbname": None, "user": None}


def lone_host_parts(host_var: str, env: tuple[EnvVar, ...] | list[EnvVar],
                    names_server: Callable[[str], bool] | None = None
                    ) -> dict[str, str | None]:
    """The port, database and user a bare host variable (POSTGRES_HOST) takes from the
    other bare families (DB_NAME, DB_USER, DB_PORT, POSTGRES_DB...), only when nothing
    else in the container names a database: its one database host variable (no DB_HOST
    beside it), no PostgreSQL URL variable or value, and (`names_server`, when the
    caller knows the repository's hosts) no other variable whose value is a server or
    pooler. Two bare names that disagree (DB_NAME=a, POSTGRES_DB=b) give neither."""
    if not _BARE_HOST.fullmatch(host_var):
        return _NO_PARTS
    for var in env:
        name = var.name.upper()
        if name == host_var.upper():
            continue
        if _ANY_DB_HOST.fullmatch(name) or name in _URL_VAR_SET or _named_url_var(name):
            return _NO_PARTS
        value = (var.value or "").strip()
        if value and (_pg_url(value) or _pg_keywords(value)
                      or (names_server is not None and names_server(value))):
            return _NO_PARTS
    by_name = {e.name.upper(): e.value.strip() for e in env if e.value and e.value.strip()}
    out: dict[str, str | None] = {}
    for part, names in _BARE_PARTS.items():
        values = {by_name[n] for n in names if n in by_name}
        out[part] = values.pop() if len(values) == 1 else None
    return out


def routes_after(first: Route | None, env: tuple[EnvVar, ...]) -> list[Route]:
    """Every place a container's environment says it connects, each once: `first`
    (route_from_env of the container's whole env, which callers have already asked; or,
    when several PostgreSQL URLs leave it none, the first of them), then every other
    connection-string variable of `env` and every value that is a PostgreSQL URL by its
    scheme, in env order. Airflow's metadata database (AIRFLOW__DATABASE__SQL_ALCHEMY_CONN)
    and Celery result backend (AIRFLOW__CELERY__RESULT_BACKEND=db+postgresql://...) are
    two routes, and both count where they lead. `env`: the variables the further routes
    are read from (the container's, less those an operator's Secret lists several ways)."""
    found: list[Route] = [first] if first is not None else []
    seen = {route_key(first)} if first is not None else set()
    for var in env:
        if not var.value:
            continue
        if var.name.endswith("_PGHOST") and not _has_placeholder(var.value):
            route = _prefixed_pg_route(var, env)
        elif not (var.name in _URL_VAR_SET or _named_url_var(var.name) or _pg_url(var.value)):
            continue
        else:
            route = route_from_url(var.value.strip(), replace(var.source, key=var.name))
        if route is not None and route_key(route) not in seen:
            seen.add(route_key(route))
            found.append(route)
    return found


def _prefixed_pg_route(host: EnvVar, env: tuple[EnvVar, ...]) -> Route | None:
    """A second database's PG* family under a prefix (Sourcegraph's frontend:
    CODEINTEL_PGHOST, CODEINTEL_PGPORT... beside PGHOST for its main database)."""
    prefix = host.name[:-len("PGHOST")]
    by_name = {e.name: e.value for e in env if e.value and e.name.startswith(prefix)}
    return _route({"host": host.value, "port": by_name.get(prefix + "PGPORT"),
                   "dbname": by_name.get(prefix + "PGDATABASE"),
                   "user": by_name.get(prefix + "PGUSER")},
                  replace(host.source, key=host.name))


def hidden_dsn_vars(env: tuple[EnvVar, ...] | list[EnvVar]) -> list[str]:
    """The connection-string variables (DATABASE_URL, *_DSN) whose value the repository
    does not hold, and the env sources not held that may define one (an envFrom Secret
    that is not in the repository): "POSTGRES_DSN (secret:app/dsn (not in repository))".
    A driver setting written there (pgx's default_query_exec_mode) is not read."""
    out: list[str] = []
    for var in env:
        if var.value is not None or not var.from_ref or var.from_ref.startswith("field:"):
            continue
        if var.name.endswith("*") or var.name in _URL_VAR_SET or _named_url_var(var.name):
            shown = f"{var.name} ({var.from_ref})" if not var.name.endswith("*") \
                else f"envFrom {var.from_ref}"
            if shown not in out:
                out.append(shown)
    return out


def route_key(route: Route) -> tuple:
    """What makes two routes the same connection (where they were read aside)."""
    return ((route.host or "").lower(), route.port, route.dbname, route.user)


_URL_VAR_SET = frozenset(_URL_VARS)
URL_VARIABLES = _URL_VAR_SET  # the connection-string names read, whatever their words
_NAMED_URL_VAR = lazy(r"[A-Z0-9_]*(DATABASE|DB|POSTGRES|PG)_(URL|URI|DSN)")
_NAMED_SUFFIXES = ("_URL", "_URI", "_DSN")


_ANY_PG_URL = lazy(r"\s*(?:\w+\+)?(?:jdbc:)?postgres(?:ql)?(?:\+\w+)?://", re.I)


# The suffix and "://" are what the patterns need, and most variables have neither:
# told before a pattern is tried (linking asks of every variable of every container).
def _named_url_var(name: str) -> bool:
    """A *_DATABASE_URL / *_DB_URI / *_PG_DSN name (ORDERS_DATABASE_URL)."""
    return name.endswith(_NAMED_SUFFIXES) and _NAMED_URL_VAR.fullmatch(name) is not None


def _pg_url(value: str) -> bool:
    """A value that is a PostgreSQL URL by its scheme (postgresql://, jdbc:postgresql://,
    postgresql+psycopg://)."""
    return "://" in value and _ANY_PG_URL.match(value) is not None


# libpq's keyword/value form, by its dbname keyword (no other driver names it so):
# POSTGRES_CONNECTION_STRING="host=postgres-service dbname=taskdb user=taskuser"
_PG_KEYWORDS = lazy(r"(?:^|\s)host\s*=\s*\S.*(?:^|\s)dbname\s*=|(?:^|\s)dbname\s*=\s*\S.*"
                    r"(?:^|\s)host\s*=", re.S)


def _pg_keywords(value: str) -> bool:
    """A libpq keyword/value connection string with a host and a dbname, in a variable
    of any name."""
    return "://" not in value and ";" not in value and _PG_KEYWORDS.search(value) is not None


# A URL on a line of text, its scheme (`jdbc:postgresql`, `tcp`) and its netloc.
_ANY_URL = lazy(r"([a-z][a-z0-9+.-]*(?::[a-z][a-z0-9+.-]*)*)://([^/\s'\"?#]*)", re.I)
# The last part of a scheme (jdbc:postgresql, r2dbc:pool:postgresql) that is PostgreSQL's,
# as route_from_url reads them (_SCHEME_ALIAS, _URL_SCHEMES, _PREFIXES)
_PG_SCHEME = lazy(r"(?:db\+)?postgres(?:ql)?(?:\+[\w.-]+)?|postgis|pgsql|timescaledb|ecto",
                  re.I)


def other_scheme_hosts(line: str) -> set[str]:
    """The hosts (lower case) of the URLs on `line` whose scheme is not PostgreSQL's:
    a health checker's `url: tcp://pgbouncer:5432` (gatus: a TCP connect, no startup
    packet, so no server connection), an exporter's `http://pgbouncer:9127/metrics`.
    Such a host on a configuration line is not where a PostgreSQL client connects."""
    if "://" not in line:
        return set()
    out = set()
    for m in _ANY_URL.finditer(line):
        if _PG_SCHEME.fullmatch(m.group(1).rsplit(":", 1)[-1]):
            continue
        for address in m.group(2).rpartition("@")[2].split(","):
            host = address[1:].partition("]")[0] if address.startswith("[") \
                else address.partition(":")[0]
            if host:
                out.add(host.lower())
    return out


_ARG_URL = lazy(r"(?:jdbc:|ecto://|postgres(?:ql)?(?:\+\w+)?://)\S+", re.I)


def route_from_args(command: tuple[str, ...], args: tuple[str, ...], source: Source
                    ) -> Route | None:
    """A connection URL given only on the command line (`graphile-worker -c
    postgres://...`, `--database-url=postgres://...`): the first one, with the word's
    position as its key. `$(VAR)` references are not URLs."""
    for field, words in (("command", command), ("args", args)):
        for i, word in enumerate(words):
            m = _ARG_URL.search(word)
            if m and "$(" not in m.group(0):
                route = route_from_url(m.group(0), replace(source, key=f"{field}[{i}]"))
                if route is not None:
                    return route
    return None
