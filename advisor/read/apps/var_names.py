"""What an environment variable's name says of a PostgreSQL connection, read word by
word (the parts between `_`, `.`, `-` and camelCase humps), never by substring: the NAME
in DB_HOSTNAME is part of HOSTNAME, a host, while DB_NAME is a database name; the PORT in
REPORT_DB_HOST and the USER in USERS_DATABASE_URL are an application's own words.

Used where a variable's value is not known here (fetched by an ExternalSecret, encrypted
with SOPS): a name that may say where the workload connects makes it an unknown client,
never a dropped one (audit 10a D1: Immich's DB_HOSTNAME from an ExternalSecret was taken
for a credential like DB_NAME, and its server printed "fits, peak 0")."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from advisor.lazyregex import lazy
from advisor.read.apps.urls import URL_VARIABLES

# camelCase humps (dbHost, rdsEndpoint) and any run of separators
_PART = lazy(r"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])")

# Words that say where: a host, an address, a whole connection string
_WHERE = frozenset({
    "HOST", "HOSTNAME", "HOSTS", "HOSTADDR", "ADDR", "ADDRESS", "SERVER", "SERVERS",
    "URL", "URI", "DSN", "ENDPOINT", "CONN", "CONNSTR", "CONNSTRING", "CONNECTIONSTRING",
    "CONNECTIONSTRINGS"})
# a word that is the connection string at the end of a name only (MM_SQLSETTINGS_DATASOURCE),
# and a prefix before it (SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE is a pool size)
_WHERE_LAST = frozenset({"DATASOURCE"})
# Words that say nothing of where: a credential, a port, a database or user name
_NOT_WHERE = frozenset({
    "PASSWORD", "PASSWORDS", "PASS", "PASSWD", "PWD", "PASSFILE", "PASSPHRASE", "SECRET",
    "SECRETS", "TOKEN", "TOKENS", "KEY", "KEYS", "USER", "USERS", "USERNAME", "LOGIN", "PORT",
    "NAME", "DBNAME", "EMAIL"})
# the last word naming the database (KC_DB_URL_DATABASE, POSTGRES_DB): not where, but
# read with a default host it may be all a workload is given
_DATABASE_LAST = frozenset({"DATABASE", "DB"})
# Two words that make one: DB_HOST_NAME is DB_HOSTNAME, DB_CONNECTION_STRING a DSN
_JOINED = {("HOST", "NAME"): "HOSTNAME", ("SERVER", "NAME"): "SERVER",
           ("CONNECTION", "STRING"): "CONNECTIONSTRING", ("CONN", "STRING"): "CONNSTRING",
           ("USER", "NAME"): "USERNAME"}
# A database word (DB, PG) fused to one of the above: PGHOST, DBHOST, PGUSER, DBNAME
_FUSED_PREFIXES = ("PG", "DB")

# Words that name a PostgreSQL connection's variable (whole words, or inside one:
# MYDATABASE, SQLALCHEMY, POSTGRESQL, QUARKUS_DATASOURCE, SPRING_R2DBC)
_DB_WORDS = frozenset({"DB", "PG", "SQL", "PSQL", "PGSQL"})
_DB_INSIDE = ("DATABASE", "POSTGRES", "JDBC", "DATASOURCE", "R2DBC", "SQLALCHEMY",
              "SQLSETTINGS")
# Another engine's or tool's word: MYSQL_HOST, REDIS_DB, MONGODB_URI, pgAdmin's settings
_OTHER = frozenset({
    "MYSQL", "MARIADB", "MARIA", "MONGO", "MONGODB", "REDIS", "VALKEY", "CLICKHOUSE",
    "ELASTIC", "ELASTICSEARCH", "INFLUX", "INFLUXDB", "CASSANDRA", "MSSQL", "SQLSERVER",
    "SQLSRV", "SQLITE", "SQLITE3", "ORACLE", "COUCHDB", "DYNAMODB", "MEMCACHED", "PGADMIN",
    "PGP"})
# Words that say PostgreSQL whatever else the name holds (MYSQL_TO_POSTGRES_URL)
_PG_ONLY = ("POSTGRES", "PGSQL", "PSQL")

Meaning = Literal["where", "not-where", "other"]


@lru_cache(maxsize=4096)
def name_parts(name: str) -> tuple[str, ...]:
    """The words of a variable's name, upper case: DB_HOSTNAME -> (DB, HOSTNAME),
    dbHostName -> (DB, HOST, NAME), spring.datasource.url -> (SPRING, DATASOURCE, URL)."""
    return tuple(p.upper() for p in _PART.findall(name))


def _fused(part: str) -> str:
    """PGHOST -> HOST, DBUSER -> USER; any other word as it is."""
    for prefix in _FUSED_PREFIXES:
        rest = part[len(prefix):]
        if part.startswith(prefix) and (rest in _WHERE or rest in _NOT_WHERE):
            return rest
    return part


def meaning(name: str) -> Meaning:
    """What the last word that tells says: `where` (a host, URL or DSN: DB_HOSTNAME,
    SPRING_R2DBC_URL, KC_DB_URL_HOST), `not-where` (a credential, port or name:
    DB_USERNAME, DB_NAME, KC_DB_URL_PORT, DB_PASSWORD_FILE), else `other` (POSTGRES_DB,
    DB_SSLMODE: a word the name's end does not tell)."""
    parts = name_parts(name)
    if len(parts) > 1 and parts[-1] in _DATABASE_LAST:
        return "other"
    for i in range(len(parts) - 1, -1, -1):
        word = _fused(parts[i])
        if i > 0 and (joined := _JOINED.get((parts[i - 1], word))) is not None:
            word = joined
        if word in _WHERE or (word in _WHERE_LAST and i == len(parts) - 1):
            return "where"
        if word in _NOT_WHERE:
            return "not-where"
    return "other"


def _db_word(part: str) -> bool:
    # PG begins libpq's own names (PGHOST, PGDATABASE, PGSSLMODE) and the tools'
    # (PGBOUNCER, PGPOOL, PGRST); DB only before a word it is fused to (DBHOST, not DBUS)
    return part in _DB_WORDS or (part.startswith("PG") and part not in _OTHER) \
        or _fused(part) != part or any(w in part for w in _DB_INSIDE)


@lru_cache(maxsize=4096)
def is_connection_name(name: str) -> bool:
    """A name a PostgreSQL connection's setting may have: one of the connection-string
    variables the URL reader knows (DSN, CONNECTIONSTRINGS__DEFAULTCONNECTION), or a
    name with a database word (DB, PG*, POSTGRES*, DATABASE, JDBC, DATASOURCE, R2DBC,
    SQL) and no other engine's (MYSQL_HOST, REDIS_DB, MONGODB_URI) or pgAdmin's."""
    if name.upper() in URL_VARIABLES:
        return True
    parts = name_parts(name)
    if any(p in _OTHER for p in parts) and not any(w in p for p in parts for w in _PG_ONLY):
        return False
    return any(_db_word(p) for p in parts)


def names_where(name: str) -> bool:
    """A connection variable that says where it connects (a host, URL or DSN)."""
    return is_connection_name(name) and meaning(name) == "where"


def may_name_where(name: str) -> bool:
    """A connection variable that may say where it connects: any but a credential, port
    or database or user name (POSTGRES_DB or DB_SSLMODE may be read with a default host,
    so a workload whose values of them are unknown here is not dropped)."""
    return is_connection_name(name) and meaning(name) != "not-where"
