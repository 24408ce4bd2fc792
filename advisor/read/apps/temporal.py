"""Temporal server (temporalio/server image): SQL persistence in its config file
(config_template.yaml, or config/*.yaml mounted from a ConfigMap):
`persistence.datastores.<name>.sql.{pluginName, connectAddr, maxConns}`; each SQL
datastore the server uses (defaultStore, visibilityStore) is one database/sql pool with
SetMaxOpenConns(maxConns) per service process. The docker config template writes
`maxConns: {{ default .Env.SQL_MAX_CONNS "20" }}`: the env value, else that default;
other template actions (helm-charts 1.x: `password: {{ env "X" | quote }}`) are text
made at start. A missing or 0 maxConns is database/sql's no limit.

temporal-sql-tool (the admin-tools image; the chart's schema Job runs it in its init
containers, templates/server-job.yaml: `create-database`, then `setup-schema -v 0.0 &&
update-schema`, per store), read at temporalio/temporal 6805cae:
- tools/sql/main.go:40-117: global flags before the command, each with its env
  variable: --endpoint/--ep SQL_HOST (default environment.GetMySQLAddress(): MYSQL_SEEDS,
  else 127.0.0.1), --port/-p SQL_PORT (GetMySQLPort(): MYSQL_PORT, else 3306),
  --user/-u SQL_USER, --database/--db SQL_DATABASE (default "temporal"), --plugin/--pl
  SQL_PLUGIN (default mysql.PluginName, "mysql8"); commands setup-schema (setup),
  update-schema (update), create-database (create), drop-database (drop).
- tools/sql/handler.go:19-115: each command makes one NewConnection
  (sql.NewSQLAdminDB: a database/sql pool, no MaxConns set by parseConnectConfig) and
  runs its statements one after another on it (tools/common/schema: no goroutine), so a
  run holds one connection; create-database connects to --defaultdb, else "postgres"
  then "defaultdb" (sqlplugin/postgresql/plugin.go:26-29,96-107), one after the other.
- PostgreSQL only with the postgres12 or postgres12_pgx plugin (plugin.go:22-23;
  "postgres" before 1.20): mysql8 or another plugin is no client of a PostgreSQL server.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from msgspec import Struct
from msgspec.structs import replace

from advisor.model import Pool, Route, Source, Term
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int

if TYPE_CHECKING:
    from advisor.read.apps.cmdline import Word

# The server sets a pool's limit only for maxConns > 0; unset (Go's zero int) leaves
# database/sql's own default, MaxOpenConns 0: no limit.
UNSET_DEFAULT = ("unset, Temporal server default: database/sql MaxOpenConns 0 = no limit "
                 "(temporalio/temporal v1.31.2 common/persistence/sql/sqlplugin/postgresql/"
                 "session/session.go:76-77 sets it only for maxConns > 0)")

_DEFAULT_TPL = re.compile(r'\{\{\s*default\s+\.Env\.(\w+)\s+"?(\d+)"?\s*\}\}')
_ENV_TPL = re.compile(r"\{\{\s*\.Env\.(\w+)\s*\}\}")
_OTHER_TPL = re.compile(r"\{\{.*?\}\}")


def _resolve(ctx: StackContext, text: str) -> str:
    def default(m: re.Match[str]) -> str:
        return ctx.env_value(m.group(1)) or m.group(2)

    text = _DEFAULT_TPL.sub(default, text)
    text = _ENV_TPL.sub(lambda m: ctx.env_value(m.group(1)) or "", text)
    # any other action (the chart's `{{ env "TEMPORAL_DEFAULT_STORE_PASSWORD" | quote }}`)
    # is text the server makes at start; as written it is no YAML (a flow mapping)
    return _OTHER_TPL.sub("TEMPLATE", text)


def temporal_pools(ctx: StackContext) -> list[Pool]:
    from advisor.read.sources.k8s import load_yaml_stream

    pools: list[Pool] = []
    for f in ctx.files("temporal-config"):
        text = _resolve(ctx, f.text)
        docs, _ = load_yaml_stream(text, f.path)
        for doc, _line in docs:
            persistence = doc.get("persistence") if isinstance(doc, dict) else None
            if not isinstance(persistence, dict):
                continue
            stores = persistence.get("datastores") or {}
            used = [persistence.get("defaultStore"), persistence.get("visibilityStore")]
            lines = text.splitlines()
            for name in [u for u in used if isinstance(u, str)]:
                sql = (stores.get(name) or {}).get("sql") if isinstance(stores, dict) else None
                if not isinstance(sql, dict) or "postgres" not in str(sql.get("pluginName", "")):
                    continue
                # absent: the store's `sql:` line, where it would be written (the first
                # maxConns below the store's name would be the next store's)
                absent = "maxConns" not in sql
                line = _key_line(lines, name, "sql" if absent else "maxConns")
                src = f.cite(line, f"persistence.datastores.{name}.sql.maxConns"
                             + (" (not set)" if absent else ""),
                             "sql" if absent else "maxConns")
                if absent:
                    # cited where it would be written, and named: the value is no 0
                    # written in the file but the server's default
                    src = replace(src, default=UNSET_DEFAULT)
                addr = str(sql.get("connectAddr", ""))
                host, _, port = addr.rpartition(":") if ":" in addr else (addr, "", "")
                at = _key_line(lines, name, "connectAddr")
                route = Route(host=host or None, port=parse_int(port),
                              dbname=str(sql.get("databaseName") or "") or None,
                              user=str(sql.get("user") or "") or None,
                              source=f.cite(at, f"{name}.sql.connectAddr"))
                n = parse_int(str(sql.get("maxConns", "")))
                label = f"Temporal {name} store maxConns"
                if n is None or n <= 0:
                    pools.append(ctx.pool(label, 0, src, route=route, bound="unbounded",
                                          per_process=False,
                                          note="maxConns unset: database/sql no limit"
                                          if absent else f"maxConns {sql.get('maxConns')}:"
                                          " database/sql no limit"))
                else:
                    pools.append(ctx.pool(label, n, src, route=route, per_process=False))
    return pools


def _key_line(lines: list[str], store: str, key: str) -> int | None:
    """The 1-based line of the first `key:` below the datastore `store:`."""
    start = _line_of(lines, store)
    return next((i + 1 for i, t in enumerate(lines)
                 if i > start and re.match(rf"\s*{key}\s*:", t)), None)


def _line_of(lines: list[str], name: str) -> int:
    return next((i for i, t in enumerate(lines) if re.match(rf"\s*{re.escape(name)}\s*:", t)),
                -1)


SQL_TOOL = "temporal-sql-tool"
_TOOL_SOURCE = "temporalio/temporal tools/sql"
# commands that connect, by name and alias (tools/sql/main.go app.Commands)
_COMMANDS = {"setup-schema": "setup-schema", "setup": "setup-schema",
             "update-schema": "update-schema", "update": "update-schema",
             "create-database": "create-database", "create": "create-database",
             "drop-database": "drop-database", "drop": "drop-database"}
# global flags (names and short names) -> what they set; the bool flags take no value
_FLAGS = {"endpoint": "host", "ep": "host", "port": "port", "p": "port", "user": "user",
          "u": "user", "database": "db", "db": "db", "plugin": "plugin", "pl": "plugin"}
_BOOL_FLAGS = frozenset({"quiet", "q", "tls", "tls-disable-host-verification"})
_ENV = {"host": "SQL_HOST", "port": "SQL_PORT", "user": "SQL_USER", "db": "SQL_DATABASE",
        "plugin": "SQL_PLUGIN"}


class SqlToolRun(Struct, frozen=True):
    """The temporal-sql-tool commands a container runs, and the plugin they use."""

    commands: tuple[str, ...]
    plugin: str
    plugin_source: Source
    where: Source  # the first run's word


def runs_sql_tool(segments: list[list[Word]]) -> bool:
    return any(w.text.rsplit("/", 1)[-1] == SQL_TOOL for seg in segments for w in seg)


def sql_tool_run(ctx: StackContext, segments: list[list[Word]]
                 ) -> tuple[SqlToolRun, Route] | None:
    """What the container's temporal-sql-tool runs do, and where they connect (the first
    run's flags, else its env, else the tool's defaults); None when no run connects."""
    runs: list[tuple[str, dict[str, tuple[str, Source]], Source]] = []
    for seg in segments:
        for i, w in enumerate(seg):
            if w.text.rsplit("/", 1)[-1] == SQL_TOOL:
                command, flags = _parsed(seg[i + 1:])
                if command is not None:
                    runs.append((command, flags, w.source))
    if not runs:
        return None
    flags, where = runs[0][1], runs[0][2]
    values = {k: _value(ctx, k, flags) for k in _ENV}
    plugin, plugin_source = values["plugin"] or ("mysql8", Source.default_of(
        f"{_TOOL_SOURCE}/main.go default --plugin mysql8", key="SQL_PLUGIN"))
    seeds = ctx.env_value("MYSQL_SEEDS")
    host, host_source = values["host"] or (
        (seeds, ctx.env_source("MYSQL_SEEDS")) if seeds else ("127.0.0.1", Source.default_of(
            f"{_TOOL_SOURCE}/main.go default --endpoint (GetMySQLAddress: 127.0.0.1)",
            key="SQL_HOST")))
    port = values["port"][0] if values["port"] else ctx.env_value("MYSQL_PORT") or "3306"
    route = Route(host=host, port=parse_int(port),
                  dbname=values["db"][0] if values["db"] else "temporal",
                  user=values["user"][0] if values["user"] else None, source=host_source)
    commands = tuple(dict.fromkeys(run[0] for run in runs))
    return SqlToolRun(commands=commands, plugin=plugin, plugin_source=plugin_source,
                      where=where), route


def is_postgres_plugin(plugin: str) -> bool:
    """postgres12, postgres12_pgx (plugin.go:22-23), and "postgres" of older servers."""
    return plugin.strip().lower().startswith("postgres")


def sql_tool_pool(run: SqlToolRun, route: Route) -> Pool:
    what = ", ".join(run.commands)
    return Pool(label=f"{SQL_TOOL} ({what})",
                size=_term(f"{SQL_TOOL} connections", 1, Source.default_of(
                    f"{SQL_TOOL}: one connection a run, its statements one after another "
                    f"({_TOOL_SOURCE}/handler.go NewConnection, tools/common/schema)",
                    key=SQL_TOOL)),
                route=route, note=f"schema tool ({what}), {run.plugin} plugin "
                f"({run.plugin_source.label()}): one connection while it runs",
                migration=True)


def _term(label: str, value: int, source: Source) -> Term:
    return Term(label=label, value=value, source=source)


def _parsed(words: list[Word]) -> tuple[str | None, dict[str, tuple[str, Source]]]:
    """(the command, the global flags given before it) of one run."""
    flags: dict[str, tuple[str, Source]] = {}
    i = 0
    while i < len(words):
        text = words[i].text
        if text in ("&&", "||", ";", "|"):
            break
        if not text.startswith("-"):
            return _COMMANDS.get(text), flags
        name, eq, value = text.lstrip("-").partition("=")
        if name in _BOOL_FLAGS:
            i += 1
            continue
        if not eq:
            if i + 1 >= len(words):
                break
            value = words[i + 1].text
            i += 1
        if name in _FLAGS:
            flags[_FLAGS[name]] = (value, words[i].source)
        i += 1
    return None, flags


def _value(ctx: StackContext, key: str, flags: dict[str, tuple[str, Source]]
           ) -> tuple[str, Source] | None:
    """A setting from its flag, else its env variable (with its line); None when unset."""
    if key in flags:
        return flags[key]
    value = ctx.env_value(_ENV[key])
    return (value, ctx.env_source(_ENV[key])) if value else None
