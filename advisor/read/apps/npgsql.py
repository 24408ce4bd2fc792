"""Npgsql (.NET): connection strings in appsettings.json / appsettings.{Environment}.json
(`ConnectionStrings:<name>`) and env `ConnectionStrings__<name>` (ASP.NET Core: env
beats appsettings.{ASPNETCORE_ENVIRONMENT}.json beats appsettings.json; the environment
defaults to Production). Npgsql keeps one pool per distinct connection string.

Without either, a connection string in any env variable of an app whose C# sources
use Npgsql (otel-demo's accounting: `UseNpgsql(Environment.GetEnvironmentVariable(
"DB_CONNECTION_STRING"))`, the manifest sets `Host=postgresql;Username=...`): the
variables the code reads (GetEnvironmentVariable("X"), configuration["X"]) when any
holds one, else every variable whose value has Npgsql keys. Without those, a connection
string written as a C# string literal in a source file that uses Npgsql
(`new NpgsqlConnection("Server=db;Username=postgres;...")`, the example-voting-app
worker) is read: one pool per distinct literal. An interpolated string ($"...") is not
read. Last, a connection string built in code (`new NpgsqlConnectionStringBuilder { Host =
Environment.GetEnvironmentVariable("POSTGRES_URI"), ... }`, toporischev/lesson6's
Startup.cs): its properties as literals or the env variables the code reads, and
MaxPoolSize (a value not read statically is unknown, PA106) or Pooling. Last of all, for
code that opens Npgsql connections (UseNpgsql, a data source, new NpgsqlConnection): an
interpolated connection string ($"Host={o.Host};...", AtomiCloud's DatabaseService.cs),
its pool settings from its literal keys and its host unknown; without one, the pool's
size is unknown (PA106): the workload is a client, never left out.

Keys are case-insensitive and spaces are ignored: `Maximum Pool Size` (also `Max Pool
Size`), `Pooling=false` means no pool (no limit). Default read in npgsql v10.0.0
src/Npgsql/NpgsqlConnectionStringBuilder.cs:837-840 (`[DefaultValue(100)] MaxPoolSize`).
"""

from __future__ import annotations

import json
import re

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.urls import route_from_url

DEFAULT_MAX_POOL_SIZE = 100


def _keys(conn: str) -> dict[str, str]:
    out = {}
    for part in conn.split(";"):
        key, eq, value = part.partition("=")
        if eq:
            out[key.strip().lower().replace(" ", "")] = value.strip()
    return out


def _is_npgsql(keys: dict[str, str]) -> bool:
    return ("host" in keys or "server" in keys) and not any(
        k in keys for k in ("initialcatalog", "datasource", "trustservercertificate"))


def _line_of(text: str, needle: str) -> int | None:
    pos = text.find(needle)
    return text[:pos].count("\n") + 1 if pos >= 0 else None


def npgsql_pools(ctx: StackContext) -> list[Pool]:
    env_name = (ctx.env_value("ASPNETCORE_ENVIRONMENT") or ctx.env_value("DOTNET_ENVIRONMENT")
                or "Production")
    found: dict[str, tuple[str, Source]] = {}
    files = sorted(ctx.files("appsettings"), key=lambda f: f.name != "appsettings.json")
    for f in files:
        if f.name not in ("appsettings.json", f"appsettings.{env_name}.json"):
            continue
        try:
            data = json.loads(f.text)
        except json.JSONDecodeError as exc:
            ctx.problem(Source(path=f.path, line=exc.lineno), f"invalid JSON: {exc.msg}",
                        program=".NET")
            continue
        strings = data.get("ConnectionStrings") if isinstance(data, dict) else None
        if isinstance(strings, dict):
            for name, conn in strings.items():
                if isinstance(conn, str):
                    found[name] = (conn, Source(path=f.path, line=_line_of(f.text, conn),
                                                key=f"ConnectionStrings:{name}"))
    for var in ctx.container.env:
        if var.name.lower().startswith("connectionstrings__") and var.value is not None:
            name = var.name.split("__", 1)[1]
            found[name] = (var.value, replace(var.source, key=var.name))
    if not found:
        found = _env_strings(ctx)
    if not found:
        found = _literals(ctx)
    if not found:
        found = _builders(ctx)
    built: set[str] = set()
    if not found:
        found = _interpolated(ctx)
        built = set(found)
    pools: list[Pool] = []
    for name, (conn, src) in found.items():
        keys = _keys(conn)
        if not _is_npgsql(keys):
            continue
        # an interpolated string's host is code: where it connects is not read here
        route = None if name in built else route_from_url(conn, src)
        # the connection string's name said as one ("Default" is a name, not the default)
        label = f"Npgsql Maximum Pool Size (connection string {name})"
        if keys.get("pooling", "true").lower() == "false":
            pools.append(ctx.pool(f"Npgsql (connection string {name}, Pooling=false)", 0,
                                  src, route=route,
                                  bound="unbounded", per_process=False,
                                  note="Pooling=false: a physical connection per open"))
            continue
        size = keys.get("maximumpoolsize") or keys.get("maxpoolsize")
        if size is not None and _HOLE in size:
            ctx.unread_size(label, src)  # the size is an interpolation: not read
            continue
        n = parse_int(size)
        if n is not None:
            pools.append(ctx.pool(label, n, src, route=route, per_process=False))
        else:
            pools.append(ctx.pool(label, DEFAULT_MAX_POOL_SIZE, Source.default_of(
                "Npgsql default Maximum Pool Size 100 (NpgsqlConnectionStringBuilder "
                "MaxPoolSize [DefaultValue(100)], the same in npgsql v8.0.9 and v10.0.0)",
                key="Maximum Pool Size"), route=route, bound="default", per_process=False,
                note=f"{src.label()} ({src.key}) sets no Maximum Pool Size"))
    return pools


# The env variables C# code reads by name (Environment.GetEnvironmentVariable("X"),
# configuration["X"] / Configuration["X"]).
_ENV_READ = re.compile(r'(?:GetEnvironmentVariable\(|[Cc]onfig\w*\[)\s*"(\w+)"')


def _env_strings(ctx: StackContext) -> dict[str, tuple[str, Source]]:
    """Npgsql connection strings in the container's env variables, when its C# sources
    use Npgsql: those the code reads by name if any holds one, else all (by variable)."""
    sources = ctx.files("csharp")
    if not any("Npgsql" in f.text for f in sources):
        return {}
    read = {m.group(1) for f in sources for m in _ENV_READ.finditer(f.text)}
    found: dict[str, tuple[str, Source]] = {}
    for var in ctx.container.env:
        if var.value and ";" in var.value and _is_npgsql(_keys(var.value)):
            found[var.name] = (var.value, replace(var.source, key=var.name))
    named = {k: v for k, v in found.items() if k in read}
    return named or found


# A C# string literal: regular ("...", backslash escapes) or verbatim (@"...", "" for a
# quote); an interpolated one ($"..." or $@"...") is left alone (its parts are code).
_LITERAL = re.compile(r'(?<![$\w"])@"((?:[^"]|"")*)"|(?<![$@\w"])"((?:[^"\\\n]|\\.)*)"')


def _literals(ctx: StackContext) -> dict[str, tuple[str, Source]]:
    """Npgsql connection strings written as literals in the C# sources that use Npgsql,
    by the place of the first one of each (name: "File.cs:line")."""
    found: dict[str, tuple[str, Source]] = {}
    seen: set[str] = set()
    for f in sorted(ctx.files("csharp"), key=lambda f: f.rel):
        if "Npgsql" not in f.text:
            continue
        for m in _LITERAL.finditer(f.text):
            text = m.group(1).replace('""', '"') if m.group(1) is not None else m.group(2)
            if ";" not in text or text in seen or not _is_npgsql(_keys(text)):
                continue
            seen.add(text)
            line = f.text.count("\n", 0, m.start()) + 1
            name = f"{f.rel.rsplit('/', 1)[-1]}:{line}"
            found[name] = (text, Source(path=f.path, line=line, key="connection string"))
    return found


# `new NpgsqlConnectionStringBuilder { Prop = expr, ... }`: the object initializer's body
_BUILDER = re.compile(r"new\s+NpgsqlConnectionStringBuilder\s*(?:\(\s*\))?\s*\{")
_PROP = re.compile(r"(\w+)\s*=\s*([^,;]+?)\s*(?:,|$)", re.S)
# builder properties -> connection string keys (NpgsqlConnectionStringBuilder)
_BUILDER_KEYS = {"host": "Host", "port": "Port", "database": "Database",
                 "username": "Username", "maxpoolsize": "Maximum Pool Size",
                 "pooling": "Pooling"}
_ENV_CALL = re.compile(r'(?:Environment\.GetEnvironmentVariable\(|[Cc]onfig\w*\[)\s*"(\w+)"')


def _builders(ctx: StackContext) -> dict[str, tuple[str, Source]]:
    """Npgsql connection strings built with an NpgsqlConnectionStringBuilder object
    initializer in the C# sources, as the connection string they make (by the place of
    each: "File.cs:line"). A property set from an env variable takes the container's
    value; a MaxPoolSize not read statically (an expression, or set after the
    initializer) leaves the pool's size unknown (PA106), not the default."""
    found: dict[str, tuple[str, Source]] = {}
    for f in sorted(ctx.files("csharp"), key=lambda f: f.rel):
        if "NpgsqlConnectionStringBuilder" not in f.text:
            continue
        for m in _BUILDER.finditer(f.text):
            end = f.text.find("}", m.end())
            if end < 0:
                continue
            line = f.text.count("\n", 0, m.start()) + 1
            here = Source(path=f.path, line=line, key="NpgsqlConnectionStringBuilder")
            parts: list[str] = []
            for prop in _PROP.finditer(f.text[m.end():end]):
                key = _BUILDER_KEYS.get(prop.group(1).lower())
                value = _builder_value(ctx, prop.group(2))
                if key == "Maximum Pool Size" and (value is None or parse_int(value) is None):
                    ctx.unread_size("Npgsql Maximum Pool Size", here)
                    return {}
                if key is not None and value is not None:
                    parts.append(f"{key}={value}")
            if re.search(r"\.MaxPoolSize\s*=", f.text):
                ctx.unread_size("Npgsql Maximum Pool Size", here)  # set after: not followed
                return {}
            if not any(p.startswith("Host=") for p in parts):
                parts.insert(0, "Host=")  # where it connects is not read: the env's route
            found[f"{f.rel.rsplit('/', 1)[-1]}:{line}"] = (";".join(parts), here)
    return found


def _builder_value(ctx: StackContext, expr: str) -> str | None:
    """A builder property's value: a string or number literal, true/false, or the
    container's value of the env variable the expression reads; None otherwise."""
    expr = expr.strip()
    if re.fullmatch(r'"[^"\\]*"', expr):
        return expr[1:-1]
    if re.fullmatch(r"-?\d+|true|false", expr):
        return expr
    m = _ENV_CALL.match(expr)
    if m is not None:
        return ctx.env_value(m.group(1))
    return None


# Where C# code opens Npgsql connections (EF Core's UseNpgsql, a data source, a connection)
_NPGSQL_USE = re.compile(r"\b(?:UseNpgsql|AddNpgsqlDataSource|AddNpgsqlDbContext|"
                         r"NpgsqlDataSource\.Create|new\s+NpgsqlDataSourceBuilder|"
                         r"new\s+NpgsqlConnection)\s*\(")
# An interpolated C# string ($"...", $@"..." or @$"..."): its holes are code
_INTERPOLATED = re.compile(r'(?:\$@|@\$)"((?:[^"]|"")*)"|\$"((?:[^"\\\n]|\\.)*)"')
_HOLE = "\x00"  # what a hole of an interpolated string stands for in its keys
_LOCAL = ("localhost", "127.0.0.1")


def _interpolated(ctx: StackContext) -> dict[str, tuple[str, Source]]:
    """The last resort, for C# code that opens Npgsql connections and no connection
    string read above: an interpolated connection string literal
    (`$"Host={o.Host};Port={o.Port};..."`, AtomiCloud's DatabaseService.cs), whose pool
    settings are its literal keys (a hole is not a key: Maximum Pool Size absent is
    Npgsql's default, a hole in its value is unknown); without one, the pool's size is
    unknown (PA106) where the code opens it: the workload connects, it is never left out
    (a server it may reach would "fit" with nothing counted)."""
    found: dict[str, tuple[str, Source]] = {}
    use: Source | None = None
    for f in sorted(ctx.files("csharp"), key=lambda f: f.rel):
        if "Npgsql" not in f.text or (m := _NPGSQL_USE.search(f.text)) is None:
            continue
        # cite where the application's pool is made (EF Core, a data source) before a
        # plain connection (a start-up check's)
        if use is None or (use.key.startswith("new NpgsqlConnection")
                           and not m.group(0).startswith("new NpgsqlConnection")):
            use = Source(path=f.path, line=f.text.count("\n", 0, m.start()) + 1,
                         key=m.group(0).rstrip("( "))
        for lit in _INTERPOLATED.finditer(f.text):
            text = lit.group(1).replace('""', '"') if lit.group(1) is not None \
                else lit.group(2)
            text = re.sub(r"\{[^{}]*\}", _HOLE, text.replace("{{", "").replace("}}", ""))
            keys = _keys(text)
            if ";" not in text or not _is_npgsql(keys) or \
                    (keys.get("host") or keys.get("server")) in _LOCAL:
                continue  # a literal localhost: a developer's check, not the pod's server
            line = f.text.count("\n", 0, lit.start()) + 1
            name = f"{f.rel.rsplit('/', 1)[-1]}:{line}"
            found.setdefault(name, (text, Source(path=f.path, line=line,
                                                 key="interpolated connection string")))
    if not found and use is not None:
        ctx.unread_size("Npgsql Maximum Pool Size", use)
    return found
