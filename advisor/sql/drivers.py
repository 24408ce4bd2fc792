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

from advisor.model import ConfigProblem, EnvVar, Location, SqlHazard
from advisor.sql.hazards import scan_sql_text
from advisor.sql.literals import Literal

ORIGIN = "driver-setting"


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
    if name == ".env" or name.startswith(".env.") or p.suffix == ".env":
        return "dotenv"
    return None


def _hazard(kind: str, detail: str, path: str, line: int) -> SqlHazard:
    return SqlHazard(
        kind=kind, detail=detail, location=Location(path=path, line=line), origin=ORIGIN
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
                        f"SQLAlchemy asyncpg prepared_statement_cache_size {shown} in "
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


_URL = re.compile(r"(?:jdbc:postgresql:|postgres(?:ql)?(?:\+\w+)?://)\S*", re.IGNORECASE)


def _urls(text: str) -> list[str]:
    """PostgreSQL connection URLs in a text (JDBC, libpq, SQLAlchemy dialect+driver)."""
    return [m.group(0).rstrip("\"'`,;)") for m in _URL.finditer(text)]


def _query_params(url: str) -> dict[str, str]:
    body = url.removeprefix("jdbc:")
    query = urlsplit(body).query if "?" in body else ""
    # pgjdbc also accepts ';' separated properties? No: only '&'. Keys are case-sensitive
    # there, but users write PrepareThreshold too; compare case-insensitively.
    return {k.lower(): unquote(v) for k, v in parse_qsl(query, keep_blank_values=True)}


def _redact(url: str) -> str:
    parts = urlsplit(url.removeprefix("jdbc:"))
    if parts.password:
        url = url.replace(f":{parts.password}@", ":***@")
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


def literal_settings(
    path: str, literals: list[Literal], lang: str, text: str = ""
) -> list[SqlHazard]:
    found: list[SqlHazard] = []
    for lit in literals:
        if "postgres" in lit.text or "options" in lit.text:
            found.extend(connection_string_hazards(lit.text, path, lit.line))
    if lang == "go":
        found.extend(_pgx(path, literals, text))
    return found


# pgx v5 ParseConfig: default_query_exec_mode defaults to cache_statement (named
# prepared statements per connection); v4 builds a prepared-statement cache unless
# statement_cache_mode=describe or PreferSimpleProtocol. Modes below use only unnamed
# statements, which a transaction pooler handles.
_PGX_SAFE = (
    "QueryExecModeSimpleProtocol",
    "QueryExecModeExec",
    "QueryExecModeDescribeExec",
    "QueryExecModeCacheDescribe",
    "PreferSimpleProtocol",
    "default_query_exec_mode=simple_protocol",
    "default_query_exec_mode=exec",
    "default_query_exec_mode=describe_exec",
    "default_query_exec_mode=cache_describe",
    "statement_cache_mode=describe",
)


def _pgx(path: str, literals: list[Literal], text: str) -> list[SqlHazard]:
    imports = [lit for lit in literals if lit.text.startswith("github.com/jackc/pgx")]
    if not imports or any(marker in text for marker in _PGX_SAFE):
        return []
    return [
        _hazard(
            "protocol-prepare",
            f"pgx ({imports[0].text}) default query exec mode cache_statement: named "
            "prepared statements (set default_query_exec_mode=cache_describe or "
            "simple_protocol, e.g. in the DSN)",
            path,
            imports[0].line,
        )
    ]


# --- Python: asyncpg, psycopg, Django -------------------------------------------------


def python_settings(
    path: str, tree: ast.AST, literals: list[Literal], text: str
) -> list[SqlHazard]:
    found = literal_settings(path, literals, "python")
    if not any(word in text for word in ("asyncpg", "psycopg", "DATABASES")):
        return found
    django: list[SqlHazard] = []
    disabled_later = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if "psycopg_pool" in text or not _dotted(node.func).endswith("ConnectionPool"):
                found.extend(_python_call(path, node))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            django.extend(_django_databases(path, node))
            disabled_later = disabled_later or _sets_disable_cursors(node)
    # DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True elsewhere in the file
    return found + ([] if disabled_later else django)


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


def _python_call(path: str, call: ast.Call) -> list[SqlHazard]:
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


def _django_databases(path: str, node: ast.Assign | ast.AnnAssign) -> list[SqlHazard]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if not any(isinstance(t, ast.Name) and t.id == "DATABASES" for t in targets):
        return []
    if not isinstance(node.value, ast.Dict):
        return []
    found = []
    for alias, conf in zip(node.value.keys, node.value.values, strict=False):
        if not isinstance(conf, ast.Dict):
            continue
        entries = {
            k.value: v
            for k, v in zip(conf.keys, conf.values, strict=False)
            if isinstance(k, ast.Constant)
        }
        engine = entries.get("ENGINE")
        if not (isinstance(engine, ast.Constant) and "postgres" in str(engine.value)):
            continue
        disabled = entries.get("DISABLE_SERVER_SIDE_CURSORS")
        if isinstance(disabled, ast.Constant) and disabled.value is True:
            continue
        label = alias.value if isinstance(alias, ast.Constant) else "?"
        found.append(
            _hazard(
                "with-hold-cursor",
                f"Django DATABASES[{label!r}] without DISABLE_SERVER_SIDE_CURSORS = True "
                "(QuerySet.iterator() declares WITH HOLD cursors in autocommit)",
                path,
                engine.lineno,
            )
        )
    return found


# --- settings files ----------------------------------------------------------------


def settings_file(path: str, text: str, kind: str) -> tuple[list[SqlHazard], list[ConfigProblem]]:
    if kind == "rails-database":
        return _rails_database(path, text), []
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
        key: [(_yaml_value(row, key) or "").lower() for _, row in rows if _yaml_value(row, key)]
        for key in ("prepared_statements", "advisory_locks")
    }
    urls = " ".join(row for _, row in rows if "prepared_statements=false" in row)
    found = []
    if "false" not in values["prepared_statements"] and not urls:
        found.append(
            _hazard(
                "protocol-prepare",
                "Rails postgresql adapter: prepared_statements not set to false "
                "(ActiveRecord default true)",
                path,
                adapters[0],
            )
        )
    if "false" not in values["advisory_locks"]:
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
