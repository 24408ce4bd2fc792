"""Driver and ORM settings that break behind transaction pooling (issue 6 item 4).

Each finding is a `SqlHazard` with origin "driver-setting" and the same kinds as the
SQL scanner, so the PA4xx rules treat both alike:

- pgjdbc `prepareThreshold` (JDBC URL or dataSource property): default 5, named
  server-side statements from the 5th execution (pgjdbc PGProperty.PREPARE_THRESHOLD
  "5"); 0 turns them off. -> protocol-prepare
- asyncpg `statement_cache_size` (connect/create_pool): default 100, every query a
  named prepared statement (asyncpg 0.32.0 connect() signature); 0 -> unnamed only.
  -> protocol-prepare
- psycopg 3 `prepare_threshold` (connect; psycopg_pool `kwargs`): default 5 (psycopg
  3.3.9 `_preparing.PrepareManager.prepare_threshold = 5`); None disables.
  -> protocol-prepare
- SQLAlchemy `postgresql+asyncpg://` URLs: `prepared_statement_cache_size` default 100
  (sqlalchemy/dialects/postgresql/asyncpg.py AsyncAdapt_asyncpg_connection); behind
  PgBouncer also set `prepared_statement_name_func`. -> protocol-prepare
- pgx (Go): v5 `default_query_exec_mode` defaults to cache_statement (pgx v5 conn.go
  ParseConfig); v4 caches prepared statements unless `statement_cache_mode=describe`.
  Flagged on a pgx import when the file names no unnamed-statement mode.
  -> protocol-prepare
- sqlx (Rust, postgres): every query with arguments (sqlx::query, query_as, query!)
  runs as a named prepared statement `sqlx_s_N`, cached per connection: `persistent`
  defaults to true (sqlx-core/src/query.rs query()) and prepare() names the statement
  whenever it is persistent, whatever statement_cache_capacity says (sqlx-postgres
  src/connection/executor.rs prepare()/get_or_prepare(), launchbadge/sqlx v0.8.6; the
  same in v0.5.11 sqlx-core/src/postgres/connection/executor.rs). Flagged at each
  PgPoolOptions / PgPool::connect / PgConnection::connect of a .rs file. -> protocol-prepare
- Rails `prepared_statements` (database.yml): default true (activerecord
  AbstractAdapter: `config.fetch(:prepared_statements, true)`, later
  `default_prepared_statements`). -> protocol-prepare
- Prisma: named prepared statements unless the URL says `pgbouncer=true`.
  -> protocol-prepare
- Rails `advisory_locks` (database.yml): default true (activerecord AbstractAdapter
  `config.fetch(:advisory_locks, true)`): migrations take pg_advisory_lock.
  -> advisory-lock
- Django `DISABLE_SERVER_SIDE_CURSORS`: default False; QuerySet.iterator() declares
  cursors with `withhold=self.connection.autocommit`
  (django/db/backends/postgresql/base.py). -> with-hold-cursor
- HikariCP `connectionInitSql` (properties/YAML; in Java code it is a string literal
  the SQL scanner reads): runs once per connection to the pooler. -> the SQL's kinds
- libpq `options=-c ...` (URL, keyword string) and PGOPTIONS: PgBouncer < 1.20
  rejects the `options` startup parameter; 1.20+ parses it and accepts only `-c` of
  the parameters it tracks (PgBouncer changelog 1.20.0, PR #908). -> startup-parameter

Connection strings are read wherever a scanned file has them as text: code string
literals, .env files, Spring properties/YAML, database.yml. None of this runs code.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath
from urllib.parse import parse_qsl, unquote, urlsplit

from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import (
    ConfigProblem,
    EnvVar,
    Location,
    Route,
    Source,
    SqlHazard,
    Topology,
)
from advisor.read.sql.hazards import scan_sql_text
from advisor.read.sql.literals import Literal

ORIGIN = "driver-setting"
_URL_ASYNCPG_DETAIL = "SQLAlchemy asyncpg prepared_statement_cache_size"


def classify_settings_file(p: PurePosixPath) -> str | None:
    name = p.name.lower()
    if name == "database.yml":
        return "rails-database"
    if name.startswith(("application", "bootstrap")) and p.suffix in (
        ".properties",
        ".yml",
        ".yaml",
    ):
        return "spring"
    if name == "schema.prisma":
        return "prisma"
    if name == "database.php" and p.parent.name in ("config", ""):
        return LARAVEL_DATABASE  # Laravel's config/database.php (a bare name: maybe one)
    if name == "dockerfile" or name.startswith("dockerfile.") or name.endswith(".dockerfile"):
        return DOCKERFILE  # read only for a Laravel skeleton it creates (laravel_skeleton)
    if name == ".env" or name.startswith(".env.") or p.suffix == ".env":
        return "dotenv"
    return None


def _hazard(kind: str, detail: str, path: str, line: int,
            cleared_by: tuple[str, ...] = ()) -> SqlHazard:
    return SqlHazard(
        kind=kind, detail=detail, location=Location(path=path, line=line), origin=ORIGIN,
        cleared_by=cleared_by,
    )


# --- connection strings ---------------------------------------------------------------


def connection_string_hazards(text: str, path: str, line: int) -> list[SqlHazard]:
    """JDBC URLs without prepareThreshold=0; `options` startup parameters in URLs and
    libpq keyword strings."""
    found: list[SqlHazard] = []
    for url in _urls(text):
        params = _query_params(url)
        if url.startswith("jdbc:postgresql:"):
            threshold = params.get("preparethreshold")
            if threshold is None or threshold.strip() != "0":
                shown = "not set: pgjdbc default 5" if threshold is None else threshold
                found.append(
                    _hazard(
                        "protocol-prepare",
                        f"pgjdbc prepareThreshold {shown} (named server-side prepared "
                        f"statements) in {_redact(url)}",
                        path,
                        line,
                    )
                )
        if url.lower().startswith("postgresql+asyncpg://"):
            size = params.get("prepared_statement_cache_size")
            if size is None or size.strip() != "0":
                shown = "not set: SQLAlchemy default 100" if size is None else size
                found.append(
                    _hazard(
                        "protocol-prepare",
                        f"{_URL_ASYNCPG_DETAIL} {shown} in "
                        f"{_redact(url)}",
                        path,
                        line,
                    )
                )
        if "options" in params:
            found.append(_hazard("startup-parameter", f"options: {params['options']}", path, line))
    if "://" not in text and "options" in text and ("host=" in text or "dbname=" in text):
        options = _keyword_dsn_options(text)
        if options:
            found.append(_hazard("startup-parameter", f"options: {options}", path, line))
    return found


_URL = lazy(r"(?:jdbc:postgresql:|postgres(?:ql)?(?:\+\w+)?://)\S*", re.IGNORECASE)


def _urls(text: str) -> list[str]:
    """PostgreSQL connection URLs in a text (JDBC, libpq, SQLAlchemy dialect+driver)."""
    if "postgres" not in text.casefold():  # every form holds it: skip the regex scan
        return []
    return [m.group(0).rstrip("\"'`,;)") for m in _URL.finditer(text)]


def _query_params(url: str) -> dict[str, str]:
    if "?" not in url:
        return {}  # no query: nothing for urlsplit and parse_qsl to find
    body = url.removeprefix("jdbc:")
    try:
        query = urlsplit(body).query if "?" in body else ""
    except ValueError:  # "postgresql://[..." (an unclosed IPv6 bracket): not a URL's query
        query = body.partition("?")[2]
    # pgjdbc also accepts ';' separated properties? No: only '&'. Keys are case-sensitive
    # there, but users write PrepareThreshold too; compare case-insensitively.
    return {k.lower(): unquote(v) for k, v in parse_qsl(query, keep_blank_values=True)}


def _redact(url: str) -> str:
    if "@" not in url:
        return url  # no user part, so no password in it
    try:
        password = urlsplit(url.removeprefix("jdbc:")).password
    except ValueError:  # not parseable as a URL: hide whatever sits between ':' and '@'
        return re.sub(r"(//[^/:@]*:)[^@/]*@", r"\1***@", url)
    if password:
        url = url.replace(f":{password}@", ":***@")
    return url


def _keyword_dsn_options(text: str) -> str | None:
    """`options` of a libpq keyword/value string: host=db options='-c a=b'."""
    i = text.find("options")
    rest = text[i + len("options") :].lstrip()
    if not rest.startswith("="):
        return None
    rest = rest[1:].lstrip()
    if rest.startswith("'"):
        end = rest.find("'", 1)
        return rest[1:end] if end > 0 else None
    return rest.split()[0] if rest.split() else None


# A startup-parameter hazard that names the parameters themselves (not `options`): the
# detail starts with this, then the names, comma-separated, then ` (where they come from)`.
STARTUP_PARAMETERS = "parameters:"


def startup_parameters(detail: str) -> list[str]:
    """The parameter names of a STARTUP_PARAMETERS hazard, lowercased; [] for `options`."""
    if not detail.startswith(STARTUP_PARAMETERS):
        return []
    names = detail.removeprefix(STARTUP_PARAMETERS).split(" (", 1)[0]
    return [n.strip().lower() for n in names.split(",") if n.strip()]


def startup_options(detail: str) -> list[str]:
    """Parameter names set by `-c name=value` / `--name=value` in an options hazard."""
    text = detail.removeprefix("options:").strip()
    names: list[str] = []
    words = text.replace("-c ", "-c").split()
    for word in words:
        if word.startswith("-c") and "=" in word:
            names.append(word[2:].split("=", 1)[0].strip().lower())
        elif word.startswith("--") and "=" in word:
            names.append(word[2:].split("=", 1)[0].strip().lower().replace("-", "_"))
    return names


# A literal that is a URL scheme and nothing more (`postgresql+asyncpg://`) names no
# server: standing alone (a concatenation or an f-string is read as one literal with its
# values) it is a scheme being tested for or taken off a URL. As the first argument of
# replace/removeprefix/startswith/endswith (Python, JS, Java) or of Go's strings.Replace /
# TrimPrefix / HasPrefix it is the scheme the code removes or checks for, not the one it
# connects with: AcadMix's scripts turn a SQLAlchemy URL into asyncpg's with
# `.replace("postgresql+asyncpg://", "postgresql://")` (audit 13f). As a replacement
# (`.replace("postgresql://", "postgresql+asyncpg://")`) it is the URL connected with.
_SCHEME_ONLY = lazy(r"[A-Za-z][\w+.:-]*:(?://)?")
_SCHEME_TESTED = lazy(
    r"(?:\.(?:replace|replaceAll|replaceFirst|removeprefix|startswith|startsWith|endswith"
    r"|endsWith|lstrip)\(|\bstrings\.(?:Replace|ReplaceAll|TrimPrefix|HasPrefix)"
    r"\(\s*[\w.]+\s*,)\s*$"
)
_PY_SCHEME_METHODS = frozenset({"replace", "removeprefix", "startswith", "endswith", "lstrip"})


def _scheme_tested(lit: Literal, text: str) -> bool:
    """A scheme-only literal that is the first argument of a replace/prefix test, read
    from the text before it (C-like sources, whose literal offsets are file offsets)."""
    return _SCHEME_ONLY.fullmatch(lit.text) is not None and lit.start > 0 and \
        _SCHEME_TESTED.search(text, max(0, lit.start - 80), lit.start) is not None


def python_tested_schemes(tree: ast.AST) -> set[tuple[int, int]]:
    """(line, column) of the scheme-only string constants a Python file passes first to
    str.replace/removeprefix/startswith/endswith/lstrip, and of the strings of a `raise`'s
    exception (its message): not connection strings."""
    found: set[tuple[int, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            # an error message names the URL the user should set ("set DATABASE_URL to
            # postgresql+asyncpg://... before invoking alembic", mesell's alembic env.py,
            # audit 36 N2): not one the code connects with
            found.update((s.lineno, s.col_offset) for s in ast.walk(node.exc)
                         if isinstance(s, ast.Constant | ast.JoinedStr | ast.BinOp))
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in _PY_SCHEME_METHODS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and \
                    _SCHEME_ONLY.fullmatch(first.value) is not None:
                found.add((first.lineno, first.col_offset))
    return found


def literal_settings(
    path: str, literals: list[Literal], lang: str, text: str = "",
    tested: set[tuple[int, int]] | None = None,
) -> list[SqlHazard]:
    found: list[SqlHazard] = []
    for lit in literals:
        if "postgres" in lit.text or "options" in lit.text:
            if (lit.line, lit.start) in (tested or ()) or \
                    (lang != "python" and _scheme_tested(lit, text)):
                continue
            found.extend(connection_string_hazards(lit.text, path, lit.line))
    if lang == "go":
        found.extend(_pgx(path, literals, text))
    elif lang == "js":
        found.extend(_node_pg(path, text))
        if "postgres" in text:
            found.extend(_postgresjs(path, text))
    elif lang == "ruby":
        found.extend(_with_advisory_lock(path, text))
        found.extend(_strong_migrations(path, text))
    elif lang == "elixir":
        found.extend(_ecto(path, text))
    return found


# Postgrex (lib/postgrex.ex): `:prepare` "either `:named` to use named queries or
# `:unnamed` to force unnamed queries (default: `:named`)"; Ecto passes the repo's
# configuration on. Flagged at the Ecto repo module using the Postgres adapter; a
# `prepare: :unnamed` in any scanned Elixir file but config/dev.exs and test.exs clears it
# (extract.scan_sql_sources). Postgrex.Notifications.listen holds a LISTEN session.
ECTO_REPO_DETAIL = "Ecto repo with the Postgres adapter"
_ECTO_REPO = lazy(r"use\s+Ecto\.Repo\b[^\n]*(?:\n[^\n]*){0,3}?Ecto\.Adapters\.Postgres")
ECTO_UNNAMED = lazy(r"^[^#\n]*\bprepare:\s*:unnamed\b", re.MULTILINE)  # not in a comment
_POSTGREX_LISTEN = lazy(r"\bPostgrex\.Notifications\.listen!?\s*\(")
# Oban's default notifier is Oban.Notifiers.Postgres for its Basic engine (oban v2.23.0
# lib/oban/config.ex:86-89; PG for Lite/Dolphin, :75-84), a Postgrex.SimpleConnection that
# LISTENs (lib/oban/notifiers/postgres.ex:5-10: "doesn't work with connection poolers like
# PgBouncer when configured in transaction or statement mode"). Flagged at the
# `config :app, Oban, repo: ...` of a config file read at boot; a non-test file naming
# another notifier or engine clears it (extract._RepoFacts: the setting may be in
# another file, as `prepare: :unnamed` may).
OBAN_DETAIL = "Oban's default notifier Oban.Notifiers.Postgres"
_OBAN_CONFIG = lazy(r"^[ \t]*config\s+:\w+,\s*Oban\s*,((?:(?!^[ \t]*(?:config|import|if|end)\b)"
                    r"(?:.|\n))*)", re.MULTILINE)
_OBAN_REPO = lazy(r"^[^#\n]*\brepo:\s*[A-Z]", re.MULTILINE)
OBAN_OTHER_NOTIFIER = lazy(r"^[^#\n]*(?:\bOban\.Notifiers\.(?:PG|Phoenix|Isolated)\b|"
                           r"\bOban\.Engines\.(?:Lite|Dolphin)\b)", re.MULTILINE)
_BOOT_CONFIGS = ("config.exs", "prod.exs", "runtime.exs", "releases.exs")


def _dev_or_test_config(path: str) -> bool:
    """config/dev.exs or config/test.exs: not what a release runs with (MIX_ENV=prod)."""
    p = PurePosixPath(path)
    return p.parent.name == "config" and p.name in ("dev.exs", "test.exs")


def oban_other_notifier(path: str, text: str) -> bool:
    """Whether a file the application runs with names a notifier that is no LISTEN
    connection, or an engine for another database."""
    return "Oban." in text and not _dev_or_test_config(path) and \
        OBAN_OTHER_NOTIFIER.search(text) is not None


def ecto_unnamed(path: str, text: str) -> bool:
    """Whether a file the application runs with sets `prepare: :unnamed` (one in
    config/dev.exs or test.exs leaves the release's repo preparing named statements)."""
    return not _dev_or_test_config(path) and ECTO_UNNAMED.search(text) is not None


def _oban(path: str, text: str) -> list[SqlHazard]:
    p = PurePosixPath(path)
    if p.parent.name != "config" or p.name not in _BOOT_CONFIGS or "Oban" not in text:
        return []
    return [
        _hazard(
            "listen",
            f"{OBAN_DETAIL}: LISTEN on a connection of its own, with the repo's config "
            "(set notifier: Oban.Notifiers.PG, or give Oban a repo that connects directly)",
            path,
            text.count("\n", 0, m.start()) + 1,
        )
        for m in _OBAN_CONFIG.finditer(text) if _OBAN_REPO.search(m.group(1))
    ]


def _ecto(path: str, text: str) -> list[SqlHazard]:
    found = []
    repo = _ECTO_REPO.search(text)
    if repo and not ECTO_UNNAMED.search(text):
        found.append(
            _hazard(
                "protocol-prepare",
                f"{ECTO_REPO_DETAIL}: Postgrex prepares named statements (default "
                "prepare: :named; set prepare: :unnamed in the repo's config)",
                path,
                text.count("\n", 0, repo.start()) + 1,
            )
        )
    found.extend(_oban(path, text))
    for m in _POSTGREX_LISTEN.finditer(text):
        found.append(
            _hazard(
                "listen",
                "Postgrex.Notifications.listen: LISTEN on a connection it keeps",
                path,
                text.count("\n", 0, m.start()) + 1,
            )
        )
    return found


# with_advisory_lock gem (postgresql_advisory.rb): pg_advisory_lock / pg_try_advisory_lock
# unless `transaction: true` (then the _xact forms, released at COMMIT).
_WITH_ADVISORY_LOCK = lazy(r"\bwith_advisory_lock!?\s*\(?([^\n]*)")


# strong_migrations: `StrongMigrations.lock_timeout = 10.seconds` makes every migration
# run `SET lock_timeout TO ...` on its connection (session level; its own initializer
# template says to drop these lines behind PgBouncer in transaction mode).
_STRONG_MIGRATIONS = lazy(
    r"^[ \t]*StrongMigrations\.(lock_timeout|statement_timeout)\s*=", re.MULTILINE
)


def _strong_migrations(path: str, text: str) -> list[SqlHazard]:
    return [
        _hazard(
            "session-set",
            f"StrongMigrations.{m.group(1)}: every migration runs SET {m.group(1)} "
            "(session level)",
            path,
            text.count("\n", 0, m.start()) + 1,
        )
        for m in _STRONG_MIGRATIONS.finditer(text)
    ]


def _with_advisory_lock(path: str, text: str) -> list[SqlHazard]:
    found = []
    for m in _WITH_ADVISORY_LOCK.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start : m.start()].lstrip().startswith("#"):
            continue
        if re.search(r"transaction:\s*true", m.group(1)) or "def with_advisory_lock" in (
            text[line_start : m.end()]
        ):
            continue
        found.append(
            _hazard(
                "advisory-lock",
                "with_advisory_lock without transaction: true (session pg_advisory_lock)",
                path,
                text.count("\n", 0, m.start()) + 1,
            )
        )
    return found


# pgx v5 conn.go ParseConfig: `defaultQueryExecMode := QueryExecModeCacheStatement`
# (named prepared statements per connection), also through database/sql: stdlib's
# Conn.QueryContext/ExecContext call the pgx conn's Query/Exec with that mode. pgx v4
# ParseConfig: `statementCacheMode := stmtcache.ModePrepare` unless
# statement_cache_mode=describe, or PreferSimpleProtocol. gobuffalo/pop v6 opens
# PostgreSQL through pgx v4's stdlib driver. The modes below send no named statement;
# QueryExecModeDescribeExec is not among them: it describes and executes the unnamed
# statement in two round trips, which a transaction pooler may send to two servers
# (its own doc comment in conn.go).
_PGX_SAFE = (
    "QueryExecModeSimpleProtocol",
    "QueryExecModeExec",
    "QueryExecModeCacheDescribe",
    "PreferSimpleProtocol",
    "default_query_exec_mode=simple_protocol",
    "default_query_exec_mode=exec",
    "default_query_exec_mode=cache_describe",
    "statement_cache_mode=describe",
    "prefer_simple_protocol=true",
)
# The same modes as connection-string parameters, read from the workload's URL
# (resolve_dsn): pgx v5 ParseConfig takes default_query_exec_mode out of the runtime
# params (jackc/pgx@728cefa8 conn.go:192-210), pgx v4 statement_cache_mode and
# prefer_simple_protocol likewise.
PGX_DSN_SAFE = (
    "default_query_exec_mode=simple_protocol",
    "default_query_exec_mode=exec",
    "default_query_exec_mode=cache_describe",
    "statement_cache_mode=describe",
    "prefer_simple_protocol=true",
)
# Where a pgx (or pop) pool or connection is opened: the place to set the mode.
_PGX_OPEN = lazy(
    r"\b(?:pgxpool\.(?:New|NewWithConfig|Connect|ConnectConfig)|pgx\.(?:Connect|ConnectConfig)"
    r"|stdlib\.(?:OpenDB|OpenDBFromPool)|pop\.(?:NewConnection|Connect))\s*\("
    r"|\b(?:sql|sqlx|otelsql)\.(?:Open|Connect|MustConnect|MustOpen)\s*\(\s*\"pgx(?:/v5)?\""
)
_PGX_IMPORT = ("github.com/jackc/pgx", "github.com/gobuffalo/pop")
# golang-migrate's postgres and pgx drivers: Lock() runs SELECT pg_advisory_lock($1)
# (database/postgres/postgres.go) unless the URL says x-no-lock=true (Config.NoLock).
# Lock is called by a migration (migrate.go Migrate.lock, from Up/Down/Steps/Migrate/
# Force) of the *Migrate a constructor returns: the hazard is each constructor call,
# not the driver's import (a blank import only registers the URL scheme).
_MIGRATE_IMPORT = lazy(r"github\.com/golang-migrate/migrate/v4/database/(postgres|pgx)")
_MIGRATE_NO_LOCK = lazy(r"x-no-lock=(true|1)|NoLock:\s*true")
_MIGRATE_PACKAGE = lazy(r'(?:^|[\s(])(?:(\w+)\s+)?"github\.com/golang-migrate/migrate/v4"',
                        re.MULTILINE)
_MIGRATE_NEW = r"\b{}\.(?:New|NewWithDatabaseInstance|NewWithInstance)\s*\("
# The detail of a constructor in a file that imports no postgres/pgx driver: it is a
# hazard only when another file of the repository registers one
# (advisor.read.sql.extract._RepoFacts).
MIGRATE_ELSEWHERE = "golang-migrate (a postgres/pgx driver imported in another file)"


def migrate_driver(text: str) -> bool:
    """Whether a Go file imports golang-migrate's postgres or pgx driver."""
    return "golang-migrate" in text and _MIGRATE_IMPORT.search(text) is not None


def _golang_migrate(path: str, literals: list[Literal], text: str) -> list[SqlHazard]:
    """One advisory-lock hazard per golang-migrate constructor call."""
    package = _MIGRATE_PACKAGE.search(text) if "golang-migrate" in text else None
    if package is None or _MIGRATE_NO_LOCK.search(text) is not None:
        return []
    driver = next((lit.text for lit in literals if _MIGRATE_IMPORT.match(lit.text)), None)
    what = f"golang-migrate ({driver})" if driver else MIGRATE_ELSEWHERE
    calls = re.finditer(_MIGRATE_NEW.format(re.escape(package.group(1) or "migrate")), text)
    return [
        _hazard("advisory-lock", f"{what} takes a session advisory lock (pg_advisory_lock) "
                "while it migrates", path, text.count("\n", 0, m.start()) + 1)
        for m in calls
    ]


def _pgx(path: str, literals: list[Literal], text: str) -> list[SqlHazard]:
    imports = [lit for lit in literals if lit.text.startswith(_PGX_IMPORT)]
    found = _golang_migrate(path, literals, text)
    if not imports or any(marker in text for marker in _PGX_SAFE):
        return found
    library = "pop (pgx v4 stdlib)" if "gobuffalo/pop" in imports[0].text else "pgx"
    for m in _PGX_OPEN.finditer(text):
        if m.group().startswith("pop.") and library == "pgx":
            continue
        found.append(
            _hazard(
                "protocol-prepare",
                f"{library} {m.group().rstrip('( ')}: default query exec mode "
                "cache_statement, named prepared statements (set "
                "default_query_exec_mode=cache_describe or simple_protocol, e.g. in the DSN)",
                path,
                text.count("\n", 0, m.start()) + 1,
                cleared_by=PGX_DSN_SAFE,
            )
        )
    return found


# sqlx (Rust): `persistent` defaults to true for query()/query_with()/query_as()
# (launchbadge/sqlx v0.8.6 sqlx-core/src/query.rs:655-664), and prepare() gives a
# persistent statement a name, sqlx_s_N (sqlx-postgres/src/connection/executor.rs:23-36,
# io/mod.rs:33), cached per connection by get_or_prepare() (:168-195) when the cache is
# on; with statement_cache_capacity(0) it is still named, only not cached. So no pool or
# URL setting turns it off (only `.persistent(false)` on each query, not read here).
# Flagged where a PostgreSQL pool or connection is opened.
_SQLX_OPEN = lazy(
    r"\b(?:PgPoolOptions|PoolOptions\s*::\s*<\s*Postgres\s*>)\s*::\s*(?:new|default)"
    r"\s*\(\s*\)"
    r"|\b(?:PgPool|Pool\s*::\s*<\s*Postgres\s*>|PgConnection)\s*::\s*"
    r"connect(?:_lazy)?(?:_with)?\s*\("
)
SQLX_DETAIL = "sqlx"


def rust_settings(path: str, text: str) -> list[SqlHazard]:
    """sqlx's named prepared statements, at each place a .rs file opens a PostgreSQL pool
    or connection (not in a `//` comment)."""
    if "sqlx" not in text:
        return []
    found: list[SqlHazard] = []
    for m in _SQLX_OPEN.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if "//" in text[start:m.start()]:
            continue
        opened = re.sub(r"\s+", "", m.group()).rstrip("(")
        found.append(_hazard(
            "protocol-prepare",
            f"{SQLX_DETAIL} {opened}: every query with arguments (sqlx::query, query_as, "
            "query!) is a named prepared statement (sqlx_s_N) cached per connection; "
            "statement_cache_capacity(0) still names it",
            path, text.count("\n", 0, m.start()) + 1))
    return found


# postgres.js (npm `postgres`): parseOptions defaults `prepare: true` and takes the option,
# else the URL's `?prepare=` ('false' or 'disable' turn it off), else env PGPREPARE, whose
# string is truthy whatever it says (porsager/postgres@e7dfa145 src/index.js:442-477);
# connection.js build() names each statement unless prepare is off (`name: q.prepare ?
# statementId + statementCount++ : ''`, :232-241). `no_prepare: true` sets prepare false
# (:441). Flagged at each `postgres(...)` call of a file importing the package, unless its
# arguments turn it off; a `prepare:` set from an expression is not judged.
POSTGRESJS_DSN_SAFE = ("prepare=false", "prepare=disable")
_POSTGRESJS_IMPORT = lazy(
    r"""\bimport\s+(?:\*\s+as\s+)?([A-Za-z_$][\w$]*)\s+from\s+['"]postgres['"]"""
    r"""|\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*require\s*\(\s*['"]postgres['"]\s*\)"""
)
_PREPARE_KEY = lazy(r"""(?<![\w$])['"]?prepare['"]?\s*:\s*([^\s,}]+)""")
_NO_PREPARE = lazy(r"(?<![\w$])['\"]?no_prepare['\"]?\s*:\s*true\b")
_URL_NO_PREPARE = lazy(r"[?&]prepare=(?:false|disable)\b")


def _prepares(value: str) -> bool | None:
    """Whether a written `prepare:` value leaves preparing on: true and non-empty string
    literals (JS truthiness) do; false, 0, null, undefined do not; None for an expression."""
    if value in ("true", "!0", "1"):
        return True
    if value in ("false", "0", "null", "undefined", "''", '""', "!1"):
        return False
    if value[:1] in "'\"`" and len(value) > 2:
        return True
    return None


def _postgresjs(path: str, text: str) -> list[SqlHazard]:
    names = {m.group(1) or m.group(2) for m in _POSTGRESJS_IMPORT.finditer(text)}
    found: list[SqlHazard] = []
    for name in sorted(names):
        call = re.compile(rf"(?<![\w$.]){re.escape(name)}\s*\(")
        for m in call.finditer(text):
            if re.search(r"function\s+$", text[max(0, m.start() - 9) : m.start()]):
                continue  # its own declaration, not a call
            args = _parenthesised(text, m.end() - 1)
            key = _PREPARE_KEY.search(args)
            if key is not None and _prepares(key.group(1)) is not True:
                continue  # turned off, or set from an expression not judged here
            if key is None and (_NO_PREPARE.search(args) or _URL_NO_PREPARE.search(args)
                                or _off_elsewhere(text)):
                continue
            how = "prepare: true" if key is not None else "prepare default true"
            found.append(
                _hazard(
                    "protocol-prepare",
                    f"postgres.js {name}(): {how}, named prepared statements "
                    "(set prepare: false in its options, or ?prepare=false in the URL)",
                    path,
                    text.count("\n", 0, m.start()) + 1,
                    cleared_by=POSTGRESJS_DSN_SAFE,
                )
            )
    return found


def _off_elsewhere(text: str) -> bool:
    """An options object built elsewhere in the file (`postgres(url, options)`) that
    turns preparing off, or sets it from an expression."""
    key = _PREPARE_KEY.search(text)
    return (key is not None and _prepares(key.group(1)) is not True) or bool(
        _NO_PREPARE.search(text))


def _parenthesised(text: str, start: int) -> str:
    """The text of the (...) at `start`, nested parentheses included (at most 4000
    characters: an options object, not a program)."""
    depth = 0
    for i in range(start, min(len(text), start + 4000)):
        depth += (text[i] == "(") - (text[i] == ")")
        if depth == 0:
            return text[start : i + 1]
    return text[start : start + 4000]


# node-postgres: a query config with `name` is always prepared as a named statement
# (pg/lib/query.js requiresPreparation: "named queries must always be prepared").
_PG_QUERY_CALL = lazy(r"\.query\s*(?:<[^()]*?>)?\s*\(\s*\{")


def _node_pg(path: str, text: str) -> list[SqlHazard]:
    """`client.query({ name, text, values })`: a query config with a name (unless it is
    the literal `undefined`/`null`), at the line of its `name` key."""
    found = []
    for m in _PG_QUERY_CALL.finditer(text):
        body = _braced(text, m.end() - 1)
        keys = {k.group(1): k for k in re.finditer(r"(?:^|[{,\s])(name|text)\s*:", body)}
        if "name" not in keys or "text" not in keys:
            continue
        value = body[keys["name"].end() :].lstrip()
        if value.startswith(("undefined", "null")):
            continue
        at = m.end() - 1 + keys["name"].start(1)
        found.append(
            _hazard(
                "protocol-prepare",
                "node-postgres query with `name`: a named prepared statement per connection",
                path,
                text.count("\n", 0, at) + 1,
            )
        )
    return found


def _braced(text: str, start: int) -> str:
    """The text of the {...} object at `start`, its nested braces kept (keys of nested
    objects are at depth > 1 and ignored by blanking them)."""
    depth, i, out = 0, start, []
    while i < len(text) and i < start + 4000:
        ch = text[i]
        depth += ch == "{"
        depth -= ch == "}"
        out.append(ch if depth <= 1 or ch in "{}" else " ")
        i += 1
        if depth == 0:
            break
    return "".join(out)


# --- Python: asyncpg, psycopg, Django -------------------------------------------------


# What python_settings reads beyond the literals: a source naming none of these gives
# nothing without literals (advisor.read.sql.extract.scan_text does not parse it).
_PYTHON_SETTING_WORDS = ("django_pglocks", "asyncpg", "psycopg", "DATABASES", "server_settings",
                         "create_async_engine")


def python_settings_may_apply(text: str) -> bool:
    """Whether python_settings may find a hazard in a source without literals."""
    return any(word in text for word in _PYTHON_SETTING_WORDS)


def python_settings(
    path: str, tree: ast.AST, literals: list[Literal], text: str
) -> list[SqlHazard]:
    found = literal_settings(path, literals, "python", tested=python_tested_schemes(tree)
                             if "://" in text else None)
    if "+psycopg://" in text and not re.search(r"^[^#\n]*prepare_threshold", text, re.M):
        found.extend(_sqlalchemy_psycopg(path, literals))
    if "django_pglocks" in text:
        found.extend(_django_pglocks(path, tree))
    if not any(word in text for word in _PYTHON_SETTING_WORDS[1:]):
        return found
    django: list[SqlHazard] = []
    disabled_later = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if "psycopg_pool" in text or not _dotted(node.func).endswith("ConnectionPool"):
                found.extend(_python_call(path, node))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            django.extend(_django_databases(path, node, text))
            disabled_later = disabled_later or _sets_disable_cursors(node)
            if "OPTIONS" in text:
                found.extend(_django_options(path, node))
    # DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True elsewhere in the file, or
    # a DISABLE_SERVER_SIDE_CURSORS key taken from configuration: not this file's default
    configured = _CURSORS_CONFIGURED.search(text)
    if "prepared_statement_cache_size=0" in text or _ASYNCPG_URL_WRITTEN.search(text):
        # the engine's URL is written in the file: the URL's own check (or its
        # prepared_statement_cache_size=0) decides, not connect_args
        found = [h for h in found if not h.detail.startswith(_ENGINE_DETAIL)]
    return found + ([] if disabled_later or configured else django[:1])


_ASYNCPG_URL_WRITTEN = lazy(r"\+asyncpg://[^\s'\"]")


# SQLAlchemy's psycopg (3) dialect hands connections to psycopg, whose prepare_threshold
# defaults to 5 (psycopg/_preparing.py); connect_args={"prepare_threshold": None} (or the
# URL's ?prepare_threshold=) turns it off. A file that names prepare_threshold is left alone.
def _sqlalchemy_psycopg(path: str, literals: list[Literal]) -> list[SqlHazard]:
    return [
        _hazard(
            "protocol-prepare",
            "SQLAlchemy postgresql+psycopg URL without prepare_threshold: psycopg 3 "
            "prepares a query server-side after 5 executions",
            path,
            lit.line,
        )
        for lit in literals
        if re.match(r"postgres(ql)?\+psycopg://", lit.text)
    ][:1]


# django_pglocks.advisory_lock (django_pglocks/__init__.py): pg_advisory_lock or
# pg_try_advisory_lock (session level), released with pg_advisory_unlock on exit.
def _django_pglocks(path: str, tree: ast.AST) -> list[SqlHazard]:
    return [
        _hazard(
            "advisory-lock",
            "django_pglocks advisory_lock(...): session-level pg_advisory_lock",
            path,
            node.lineno,
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _dotted(node.func).rsplit(".", 1)[-1] == "advisory_lock"
    ]


_CURSORS_CONFIGURED = lazy(
    r"""["']DISABLE_SERVER_SIDE_CURSORS["']\s*:\s*(?![\s]|True\b|False\b)"""
)


# Django hands a DATABASES entry's OPTIONS to the driver's connect() as keyword arguments
# (django/django@1994ebb8 django/db/backends/postgresql/base.py get_connection_params:
# `**options` after taking out isolation_level, server_side_binding, assume_role, pool),
# and psycopg/psycopg2 pass `options` to libpq, which sends it as the `options` startup
# parameter: the same hazard as `?options=` in a URL (PA410; PgBouncer < 1.20 refuses it,
# 1.20+ accepts `-c` only of the parameters it tracks). Audit 48, AI4Bharat/Chat-Arena-
# Backend@2447d41 backend/arena_backend/settings.py:174: "options": "-c
# statement_timeout=30000" behind its transaction-mode PgBouncer was not reported.
def _django_options(path: str, node: ast.Assign | ast.AnnAssign) -> list[SqlHazard]:
    """`options` of an OPTIONS dict written in a DATABASES entry, or assigned to one
    (DATABASES["default"]["OPTIONS"] = {...})."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    found: list[SqlHazard] = []
    if any(isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
           and t.slice.value == "OPTIONS" for t in targets) and isinstance(node.value, ast.Dict):
        found.extend(_options_key(path, node.value))
    if isinstance(node.value, ast.Dict):
        for inner in ast.walk(node.value):
            if not isinstance(inner, ast.Dict):
                continue
            for k, v in zip(inner.keys, inner.values, strict=False):
                if isinstance(k, ast.Constant) and k.value == "OPTIONS" and isinstance(v, ast.Dict):
                    found.extend(_options_key(path, v))
    return found


def _options_key(path: str, options: ast.Dict) -> list[SqlHazard]:
    for k, v in zip(options.keys, options.values, strict=False):
        if isinstance(k, ast.Constant) and k.value == "options" and \
                isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.strip():
            return [_hazard("startup-parameter", f"options: {v.value.strip()}", path, v.lineno)]
    return []


def _sets_disable_cursors(node: ast.Assign | ast.AnnAssign) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(
        isinstance(t, ast.Subscript)
        and isinstance(t.slice, ast.Constant)
        and t.slice.value == "DISABLE_SERVER_SIDE_CURSORS"
        and isinstance(node.value, ast.Constant)
        and node.value.value is True
        for t in targets
    )


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


# asyncpg sends `server_settings` as startup parameters, each its own key in the startup
# packet (MagicStack/asyncpg@db8ecc2a asyncpg/protocol/coreproto.pyx:952-955), whether
# passed to connect/create_pool or through SQLAlchemy's connect_args. PgBouncer refuses a
# startup parameter it does not track unless ignore_startup_parameters lists it
# (pgbouncer_1_22_1 src/client.c:691-697, "unsupported startup parameter").
def _server_settings(path: str, call: ast.Call) -> list[SqlHazard]:
    settings = _keyword(call, "server_settings")
    where = "asyncpg server_settings"
    connect_args = _keyword(call, "connect_args")
    if settings is None and isinstance(connect_args, ast.Dict):
        settings = next((v for k, v in zip(connect_args.keys, connect_args.values, strict=False)
                         if isinstance(k, ast.Constant) and k.value == "server_settings"), None)
        where = "asyncpg server_settings in connect_args"
    if not isinstance(settings, ast.Dict):
        return []  # absent, or not a literal: not judged
    names = [k.value for k in settings.keys if isinstance(k, ast.Constant)
             and isinstance(k.value, str)]
    if not names:
        return []
    return [_hazard("startup-parameter", f"{STARTUP_PARAMETERS} {', '.join(names)} ({where})",
                    path, settings.lineno)]


# SQLAlchemy's asyncpg dialect prepares every statement through asyncpg's prepare() and
# keeps up to prepared_statement_cache_size (default 100) of them per connection
# (sqlalchemy@f35da7e2 lib/sqlalchemy/dialects/postgresql/asyncpg.py:769, _prepare :796);
# the setting is read from connect_args or the URL's query. An engine whose URL is not a
# literal (an environment variable) is known to be asyncpg's when connect_args carries
# keys only asyncpg's connect() takes.
_ASYNCPG_CONNECT_KEYS = frozenset(
    {"statement_cache_size", "server_settings", "command_timeout",
     "max_cached_statement_lifetime", "max_cacheable_statement_size",
     "prepared_statement_cache_size", "prepared_statement_name_func"}
)  # fmt: skip
SQLALCHEMY_ASYNCPG_DSN_SAFE = ("prepared_statement_cache_size=0",)
_ENGINE_DETAIL = "SQLAlchemy asyncpg create_async_engine"


def _sqlalchemy_asyncpg_engine(path: str, call: ast.Call) -> list[SqlHazard]:
    if not _dotted(call.func).endswith("create_async_engine"):
        return []
    connect_args = _keyword(call, "connect_args")
    if not isinstance(connect_args, ast.Dict) or None in connect_args.keys:
        return []  # not a literal, or **spread: not judged
    keys = {k.value: v for k, v in zip(connect_args.keys, connect_args.values, strict=False)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    if not keys.keys() & _ASYNCPG_CONNECT_KEYS:
        return []  # nothing says the driver is asyncpg
    url = call.args[0] if call.args else _keyword(call, "url")
    if isinstance(url, ast.Constant):
        return []  # a literal URL is read as a connection string
    size = keys.get("prepared_statement_cache_size")
    if isinstance(size, ast.Constant) and size.value == 0:
        return []
    if size is not None and not isinstance(size, ast.Constant):
        return []  # set from an expression: not judged
    shown = "not set: SQLAlchemy default 100" if size is None else repr(size.value)
    return [_hazard("protocol-prepare",
                    f"{_ENGINE_DETAIL} prepared_statement_cache_size "
                    f"{shown} (connect_args names asyncpg's "
                    f"{', '.join(sorted(keys.keys() & _ASYNCPG_CONNECT_KEYS))})",
                    path, call.lineno, cleared_by=SQLALCHEMY_ASYNCPG_DSN_SAFE)]


def _python_call(path: str, call: ast.Call) -> list[SqlHazard]:
    return (_server_settings(path, call) + _sqlalchemy_asyncpg_engine(path, call)
            + _python_prepares(path, call) + _connect_options(path, call))


# psycopg2.connect(..., options="-c ...") / psycopg.connect: libpq's `options` startup
# parameter, as in a DSN (connection_string_hazards reads the DSN form).
_LIBPQ_CONNECTS = frozenset({"psycopg2.connect", "psycopg.connect", "psycopg.Connection.connect",
                             "psycopg.AsyncConnection.connect"})


def _connect_options(path: str, call: ast.Call) -> list[SqlHazard]:
    if _dotted(call.func) not in _LIBPQ_CONNECTS:
        return []
    value = _keyword(call, "options")
    if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.strip():
        return [_hazard("startup-parameter", f"options: {value.value.strip()}", path,
                        value.lineno)]
    return []


def _python_prepares(path: str, call: ast.Call) -> list[SqlHazard]:
    name = _dotted(call.func)
    if name in ("asyncpg.connect", "asyncpg.create_pool", "asyncpg.pool.create_pool"):
        size = _keyword(call, "statement_cache_size")
        if not (isinstance(size, ast.Constant) and size.value == 0):
            shown = "not set: asyncpg default 100" if size is None else ast.unparse(size)
            return [
                _hazard(
                    "protocol-prepare",
                    f"{name}(statement_cache_size {shown}): named prepared statements",
                    path,
                    call.lineno,
                )
            ]
    if name.rsplit(".", 1)[-1] in ("ConnectionPool", "AsyncConnectionPool", "NullConnectionPool"):
        kwargs = _keyword(call, "kwargs")
        threshold = None
        if isinstance(kwargs, ast.Dict):
            threshold = next(
                (
                    v
                    for k, v in zip(kwargs.keys, kwargs.values, strict=False)
                    if isinstance(k, ast.Constant) and k.value == "prepare_threshold"
                ),
                None,
            )
        if not (isinstance(threshold, ast.Constant) and threshold.value is None):
            return [
                _hazard(
                    "protocol-prepare",
                    f"psycopg_pool {name}(kwargs without prepare_threshold=None): psycopg "
                    "prepares a query server-side after 5 executions",
                    path,
                    call.lineno,
                )
            ]
    if name in ("psycopg.connect", "psycopg.Connection.connect", "psycopg.AsyncConnection.connect"):
        threshold = _keyword(call, "prepare_threshold")
        if not (isinstance(threshold, ast.Constant) and threshold.value is None):
            shown = "not set: psycopg default 5" if threshold is None else ast.unparse(threshold)
            return [
                _hazard(
                    "protocol-prepare",
                    f"{name}(prepare_threshold {shown}): prepared server-side after "
                    "repeated execution",
                    path,
                    call.lineno,
                )
            ]
    return []


def _django_databases(path: str, node: ast.Assign | ast.AnnAssign, text: str) -> list[SqlHazard]:
    """A PostgreSQL DATABASES entry without DISABLE_SERVER_SIDE_CURSORS = True, however
    the entry is built: a dict literal, dj_database_url.config()/parse(), django-environ
    env.db(), a name or getattr() from another module (the engine is then taken from
    what the file says: a postgresql backend or a postgres URL)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if not any(isinstance(t, ast.Name) and t.id == "DATABASES" for t in targets):
        return []
    if node.value is None:
        return []
    postgres_file = bool(re.search(r"postgres|postgis", text))
    entries: list[tuple[str, ast.expr]] = []
    if isinstance(node.value, ast.Dict):
        for alias, conf in zip(node.value.keys, node.value.values, strict=False):
            label = alias.value if isinstance(alias, ast.Constant) else ast.unparse(alias or conf)
            entries.append((str(label), conf))
    else:
        entries.append(("default", node.value))
    for label, conf in entries:
        at = conf.lineno
        if isinstance(conf, ast.Dict):
            keys = {
                k.value: v
                for k, v in zip(conf.keys, conf.values, strict=False)
                if isinstance(k, ast.Constant)
            }
            engine = keys.get("ENGINE")
            disabled = keys.get("DISABLE_SERVER_SIDE_CURSORS")
            if disabled is not None and not (
                isinstance(disabled, ast.Constant) and disabled.value is False
            ):
                continue
            if engine is not None:
                at = engine.lineno
            if isinstance(engine, ast.Constant):
                if "postgres" not in str(engine.value) and "postgis" not in str(engine.value):
                    continue
            elif not postgres_file:
                continue
        elif not postgres_file:
            continue
        return [
            _hazard(
                "with-hold-cursor",
                f"Django DATABASES[{label!r}] without DISABLE_SERVER_SIDE_CURSORS = True "
                "(QuerySet.iterator() declares WITH HOLD cursors in autocommit)",
                path,
                at,
            )
        ]
    return []


# --- settings files ----------------------------------------------------------------


def settings_file(path: str, text: str, kind: str) -> tuple[list[SqlHazard], list[ConfigProblem]]:
    if kind == "rails-database":
        return _rails_database(path, text), []
    if kind == LARAVEL_DATABASE:
        return laravel_database(path, text), []
    if kind == DOCKERFILE:
        return laravel_skeleton(path, text), []
    if kind == "prisma":
        return _prisma(path, text), []
    return _key_value_file(path, text, kind), []


def _rows(text: str) -> list[tuple[int, str]]:
    return [(n, row) for n, row in enumerate(text.splitlines(), start=1)]


def _yaml_value(row: str, key: str) -> str | None:
    stripped = row.strip()
    if stripped.startswith("#") or not stripped.startswith(key):
        return None
    rest = stripped[len(key) :].lstrip()
    if not rest.startswith(":"):
        return None
    return rest[1:].split(" #", 1)[0].strip().strip("\"'")


def _rails_database(path: str, text: str) -> list[SqlHazard]:
    rows = _rows(text)
    adapters = [
        n for n, row in rows if (_yaml_value(row, "adapter") or "") in ("postgresql", "postgis")
    ]
    if not adapters:
        return []
    values = {
        key: [(n, _yaml_value(row, key) or "") for n, row in rows if _yaml_value(row, key)]
        for key in ("prepared_statements", "advisory_locks")
    }
    urls = " ".join(row for _, row in rows if "prepared_statements=false" in row)
    found = []
    prepared = values["prepared_statements"]
    erb = [(n, v) for n, v in prepared if v.startswith("<%")]
    if not any(v.lower() == "false" for _, v in prepared) and not urls:
        if erb:  # decided by the container's env: resolve_erb evaluates it per workload
            n, expr = erb[0]
            found.append(
                _hazard(
                    "protocol-prepare",
                    f"{RAILS_ERB_DETAIL} {expr}",
                    path,
                    n,
                )
            )
        else:
            found.append(
                _hazard(
                    "protocol-prepare",
                    "Rails postgresql adapter: prepared_statements not set to false "
                    "(ActiveRecord default true)",
                    path,
                    adapters[0],
                )
            )
    if not any(v.lower() == "false" for _, v in values["advisory_locks"]):
        found.append(
            _hazard(
                "advisory-lock",
                "Rails migrations take a session advisory lock (pg_advisory_lock): "
                "advisory_locks not set to false (ActiveRecord default true)",
                path,
                adapters[0],
            )
        )
    return found


def resolve_dsn(hazards: list[SqlHazard], topology: Topology) -> list[SqlHazard]:
    """Hazards a driver setting in the workload's connection string turns off (pgx's
    `default_query_exec_mode=exec` in its DATABASE_URL): dropped when every route of the
    workload carries one of its `cleared_by` parameters. When a connection string of
    the workload is not held (a Secret outside the repository), the hazard says that it
    was not read, since the setting may be there."""
    by_id: dict[str, list[Route]] = {}
    for c in topology.clients:
        by_id.setdefault(c.id, []).extend(c.routes())
    # a workload whose env URL is already judged as SQLAlchemy asyncpg's: the engine in
    # its code is that URL's engine, one finding
    url_judged = {h.client_id for h in topology.sql_hazards
                  if h.detail.startswith(_URL_ASYNCPG_DETAIL)}
    kept: list[SqlHazard] = []
    for h in hazards:
        if h.client_id in url_judged and h.detail.startswith(_ENGINE_DETAIL):
            continue
        if not h.cleared_by or h.client_id is None:
            kept.append(h)
            continue
        routes = by_id.get(h.client_id, [])
        if routes and all(set(r.params) & set(h.cleared_by) for r in routes):
            continue
        hidden = topology.client_hidden_dsn.get(h.client_id)
        if hidden:
            h = replace(h, detail=f"{h.detail}; the workload's connection string was not "
                        f"read ({', '.join(hidden)}): the setting may be there")
        kept.append(h)
    return kept


# --- Laravel (PDO pdo_pgsql) ---------------------------------------------------------
#
# Laravel's PostgresConnector opens PDO with its own $options, which set no
# PDO::ATTR_EMULATE_PREPARES (laravel/framework v12.9.2
# src/Illuminate/Database/Connectors/PostgresConnector.php:17-22; Connector.php:19-25 sets
# it false for the others), merged with the connection's `options` (Connector::getOptions).
# pdo_pgsql then prepares every statement server-side under a name of its own,
# `pdo_stmt_%08x` counted per PDO connection (php/php-src ext/pdo_pgsql/pgsql_driver.c
# pgsql_handle_preparer; pgsql_statement.c PQprepare), and drops it with DEALLOCATE when
# the PDOStatement goes: every client starts at pdo_stmt_00000001, even the connector's own
# `set search_path to ...` (PostgresConnector::configureSearchPath, prepare()->execute()).
# Behind a transaction pooler that does not track them: `prepared statement
# "pdo_stmt_00000001" already exists` / `does not exist`. PDO::ATTR_EMULATE_PREPARES =>
# true (or PDO::PGSQL_ATTR_DISABLE_PREPARES / Pdo\Pgsql::ATTR_DISABLE_PREPARES => true,
# unnamed statements) in the connection's `options` turns it off. Audit 48:
# Arafatmollik1/laravel-starter-bun (Octane behind pgbouncer/pgbouncer:latest, transaction
# mode) and ihrauto/ihrauto-crm (php-fpm behind edoburu/pgbouncer) were not reported.
LARAVEL_DATABASE = "laravel-database"
LARAVEL_DETAIL = "Laravel pgsql connection"
_PHP_DRIVER_PGSQL = lazy(r"""['"]driver['"]\s*=>\s*['"]pgsql['"]""")
_PHP_NO_PREPARES = lazy(
    r"ATTR_(?:EMULATE|DISABLE)_PREPARES['\"]?\s*\]?\s*=>\s*"
    r"(?:true\b|env\(\s*['\"]\w+['\"]\s*,\s*true\s*\))", re.IGNORECASE)
_PHP_DEFAULT = lazy(
    r"""['"]default['"]\s*=>\s*(env\(\s*['"]DB_CONNECTION['"]\s*,\s*)?['"]([\w-]+)['"]""")
_PHP_KEY_BEFORE = lazy(r"""['"]([\w-]+)['"]\s*=>\s*(?:array\s*)?$""")


def _php_comment_line(text: str, at: int) -> bool:
    line = text[text.rfind("\n", 0, at) + 1 : at].lstrip()
    return line.startswith(("//", "#", "*", "/*"))


def _php_array_span(text: str, at: int) -> tuple[int, int] | None:
    """The [...] / array(...) holding position `at`: (opening, closing) offsets."""
    depth = 0
    i = at
    while i > 0:
        i -= 1
        c = text[i]
        if c in "])":
            depth += 1
        elif c in "[(":
            if depth == 0:
                break
            depth -= 1
    else:
        return None
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
            if depth == 0:
                return i, j
    return None


def laravel_database(path: str, text: str) -> list[SqlHazard]:
    """Each pgsql connection of a Laravel config/database.php that leaves PDO's
    server-side prepares on; its detail names the connection and the default connection
    (resolve_laravel drops it for a workload whose DB_CONNECTION names another)."""
    if "pgsql" not in text:
        return []
    default = _PHP_DEFAULT.search(text)
    if default is None:
        shown = "not read"
    elif default.group(1):
        shown = f"env DB_CONNECTION, else '{default.group(2)}'"
    else:  # written: DB_CONNECTION is not read
        shown = f"'{default.group(2)}'"
    found = []
    for m in _PHP_DRIVER_PGSQL.finditer(text):
        if _php_comment_line(text, m.start()):
            continue
        span = _php_array_span(text, m.start())
        if span is None:
            continue
        body = text[span[0] : span[1]]
        if _PHP_NO_PREPARES.search(body):
            continue
        key = _PHP_KEY_BEFORE.search(text[: span[0]])
        name = key.group(1) if key else "pgsql"
        found.append(_hazard(
            "protocol-prepare",
            f"{LARAVEL_DETAIL} '{name}': PDO pdo_pgsql prepares every query as a named "
            "statement pdo_stmt_N (no PDO::ATTR_EMULATE_PREPARES => true in its options); "
            f"the default connection: {shown}",
            path, text.count("\n", 0, m.start()) + 1))
    return found


# A Dockerfile that builds the application from Laravel's skeleton (`composer
# create-project laravel/laravel`) with pdo_pgsql: the skeleton's config/database.php,
# whose pgsql connection sets no PDO options, is what runs, when the repository holds no
# config/database.php of its own (extract._RepoFacts drops the hazard then). Audit 48:
# jotyprokash/Laravel-Postgres-HA-Infrastructure docker/Dockerfile:5 copies five files over
# the skeleton and runs behind a transaction-mode PgBouncer: no PA405.
DOCKERFILE = "dockerfile"
LARAVEL_SKELETON_DETAIL = "Laravel skeleton's config/database.php"
_LARAVEL_CREATE = lazy(r"^[^#\n]*\bcomposer\s+create-project\b[^\n]*\blaravel/laravel\b",
                       re.MULTILINE)


def laravel_skeleton(path: str, text: str) -> list[SqlHazard]:
    if "laravel/laravel" not in text or "pdo_pgsql" not in text:
        return []
    m = _LARAVEL_CREATE.search(text)
    if m is None:
        return []
    return [_hazard(
        "protocol-prepare",
        f"{LARAVEL_SKELETON_DETAIL} (composer create-project laravel/laravel; the image "
        "installs pdo_pgsql): its pgsql connection sets no PDO::ATTR_EMULATE_PREPARES, so "
        "PDO pdo_pgsql prepares every query as a named statement pdo_stmt_N",
        path, text.count("\n", 0, m.start()) + 1)]


def resolve_laravel(hazards: list[SqlHazard],
                    client_env: dict[str, list[EnvVar]]) -> list[SqlHazard]:
    """A Laravel pgsql connection's hazard for a workload: kept when its DB_CONNECTION
    (else the file's default) names that connection; a workload on another connection
    (mysql, sqlite) opens no pdo_pgsql statement. Unmapped hazards are kept: the route
    is assumed, and said, by the rule."""
    kept: list[SqlHazard] = []
    for h in hazards:
        if h.detail.startswith(LARAVEL_SKELETON_DETAIL) and h.client_id is not None:
            # the skeleton's default connection is never pgsql (sqlite from Laravel 11,
            # mysql before): only a DB_CONNECTION that says pgsql, or one not read, uses it
            var = {e.name: e for e in client_env.get(h.client_id, [])}.get("DB_CONNECTION")
            if var is not None and (var.value is None or var.value.strip() == "pgsql"):
                kept.append(h)
            continue
        m = re.match(rf"{LARAVEL_DETAIL} '([\w-]+)'.*connection: (env DB_CONNECTION, else )?"
                     r"'([\w-]+)'$", h.detail) \
            if h.detail.startswith(LARAVEL_DETAIL) and h.client_id is not None else None
        if m is None:
            kept.append(h)
            continue
        env = {e.name: e for e in client_env.get(h.client_id or "", [])}
        var = env.get("DB_CONNECTION") if m.group(2) else None
        if var is not None and var.value is None:
            kept.append(h)  # from a Secret not held: may be pgsql
            continue
        used = var.value.strip() if var is not None and var.value is not None else m.group(3)
        if used == m.group(1):
            kept.append(h)
    return kept


RAILS_ERB_DETAIL = "Rails postgresql adapter: prepared_statements:"
_ERB = lazy(r"<%=?\s*(.*?)\s*-?%>")
_FALSE_WORDS = frozenset({"false", "f", "0", "no", "off", "n"})


def resolve_erb(hazards: list[SqlHazard], client_env: dict[str, list[EnvVar]]) -> list[SqlHazard]:
    """database.yml `prepared_statements: <%= ENV['PREPARED_STATEMENTS'] || 'true' %>`
    evaluated with each workload's container env (Mastodon's pattern): dropped where it
    comes out false, else kept with what it came out as and why. Unmapped hazards, and
    expressions this cannot evaluate, keep the hazard (the default is true)."""
    from advisor.read.apps.rubyeval import RubyScope, ruby_eval

    kept: list[SqlHazard] = []
    for h in hazards:
        m = _ERB.search(h.detail) if h.detail.startswith(RAILS_ERB_DETAIL) else None
        if m is None:
            kept.append(h)
            continue
        env = {e.name: e for e in client_env.get(h.client_id or "", [])}
        scope = RubyScope(h.location.path, h.location.line or 1, env, 4)
        value = ruby_eval(m.group(1), scope)
        if value is None:
            kept.append(replace(h, detail=f"{h.detail} (not evaluated: assumed true)"))
            continue
        shown = str(value.value).strip().lower()
        if shown in _FALSE_WORDS:
            continue
        names = re.findall(r"ENV(?:\[|\.fetch\(?)\s*['\"](\w+)", m.group(1))
        unset = [n for n in names if n not in env]
        how = (
            f"{', '.join(unset)} not set in the container env"
            if unset
            else f"{', '.join(names)} from the container env"
        )
        kept.append(replace(h, detail=f"{h.detail} = {value.value!r} ({how})"))
    return kept


def _prisma(path: str, text: str) -> list[SqlHazard]:
    rows = _rows(text)
    in_datasource = False
    provider_line = None
    url_row = ""
    for n, row in rows:
        stripped = row.strip()
        if stripped.startswith("datasource "):
            in_datasource = True
        elif in_datasource and stripped.startswith("}"):
            in_datasource = False
        elif in_datasource and stripped.startswith("provider") and "postgres" in stripped:
            provider_line = n
        elif in_datasource and stripped.startswith("url"):
            url_row = stripped
    # No url in the schema (Prisma 6.6+ takes it from prisma.config.ts or a driver
    # adapter): nothing here says how it connects.
    if provider_line is None or not url_row or "pgbouncer=true" in url_row:
        return []
    where = url_row.split("=", 1)[-1].strip() if url_row else "the datasource url"
    return [
        _hazard(
            "protocol-prepare",
            f"Prisma datasource ({where}) without pgbouncer=true: Prisma uses named "
            "prepared statements",
            path,
            provider_line,
        )
    ]


_INIT_SQL_KEYS = ("connection-init-sql", "connectioninitsql", "connection_init_sql")


def _key_value_file(path: str, text: str, kind: str) -> list[SqlHazard]:
    """Spring application.properties / application.yml and .env files, line by line."""
    found: list[SqlHazard] = []
    threshold_zero = False
    for n, row in _rows(text):
        stripped = row.strip()
        if not stripped or stripped.startswith(("#", "!")):
            continue
        key, value = _split_key_value(stripped)
        low = key.lower()
        if low.endswith("preparethreshold") and value.strip("\"' ") == "0":
            threshold_zero = True
        if low.rsplit(".", 1)[-1] in _INIT_SQL_KEYS and value:
            sql = value.strip("\"'")
            for h in scan_sql_text(sql, Location(path=path, line=n), origin=ORIGIN).hazards:
                found.append(
                    replace(h, detail=f"HikariCP connectionInitSql: {h.detail}")
                )
        elif low == "pgoptions" and value:
            found.append(
                _hazard("startup-parameter", f"options: {value.strip(chr(34) + chr(39))}", path, n)
            )
        else:
            found.extend(connection_string_hazards(value, path, n))
    if threshold_zero:
        found = [h for h in found if not h.detail.startswith("pgjdbc prepareThreshold")]
    return found


def _split_key_value(row: str) -> tuple[str, str]:
    row = row.removeprefix("export ").strip()
    cut = min((i for i in (row.find("="), row.find(":")) if i >= 0), default=-1)
    if cut < 0:
        return row, ""
    if row[cut] == ":" and row[cut + 1 : cut + 2] not in ("", " "):
        eq = row.find("=")  # "url: jdbc:postgresql://" vs "jdbc:..." inside a value
        if eq < 0:
            return row, ""
        cut = eq
    return row[:cut].strip(), row[cut + 1 :].strip()


def may_hold_env_hazard(env: EnvVar) -> bool:
    """False when env_hazards finds nothing in this variable: not PGOPTIONS, and a value
    naming neither "postgres" (every URL form) nor "options" (a keyword string). Linking
    asks it of every variable of every container, most of them neither."""
    value = env.value
    if value is None or env.name == "PGOPTIONS":
        return value is not None
    return "options" in value or "postgres" in value.casefold()


# Prisma's schema engine takes a session advisory lock before it applies migrations
# (`SELECT pg_advisory_lock(72707369)`, its P1002 error "Timed out trying to acquire a
# postgres advisory lock"; Prisma's PgBouncer page: migrate through `directUrl`, not the
# pooler). `migrate deploy`, `dev` and `reset` apply migrations; `status`, `resolve` and
# `diff` do not. Read from a container's command and args (a migration Job, an
# entrypoint line `npx prisma migrate deploy && node dist/main`).
_PRISMA_MIGRATE = lazy(r"\bprisma\s+migrate\s+(deploy|dev|reset)\b")


def command_hazards(words: tuple[str, ...], sources: tuple[Source, ...], where: Source,
                    client_id: str | None = None) -> list[SqlHazard]:
    """Session advisory locks a migration tool in a container's command/args takes."""
    for i, word in enumerate(words):
        m = _PRISMA_MIGRATE.search(word) or (
            _PRISMA_MIGRATE.search(" ".join(words[i:i + 3])) if word == "prisma" else None)
        if m is None:
            continue
        at = sources[i] if i < len(sources) else where
        return [replace(_hazard(
            "advisory-lock", f"prisma migrate {m.group(1)} takes a session advisory lock "
            "(pg_advisory_lock(72707369)) while it migrates",
            at.path or "", at.line or 1), client_id=client_id)]
    return []


def env_hazards(env: EnvVar, client_id: str | None = None) -> list[SqlHazard]:
    """Hazards in one container environment variable (PGOPTIONS, a DATABASE_URL with
    options= or a JDBC URL without prepareThreshold=0), located where it is set. For
    topology: workloads' env is read there, not by scan_sql_sources. Secret values are
    never read (`env.value` is None for them)."""
    if env.value is None or env.source.path is None:
        return []
    line = env.source.line or 1
    if env.name == "PGOPTIONS":
        found = [_hazard("startup-parameter", f"options: {env.value}", env.source.path, line)]
    else:
        found = connection_string_hazards(env.value, env.source.path, line)
    return [replace(h, client_id=client_id) for h in found]
