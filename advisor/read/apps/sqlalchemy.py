"""SQLAlchemy engines: `create_engine(url, pool_size=, max_overflow=, poolclass=)`,
`create_async_engine(...)`, and Flask-SQLAlchemy's SQLALCHEMY_ENGINE_OPTIONS (2.x:
SQLALCHEMY_POOL_SIZE / SQLALCHEMY_MAX_OVERFLOW) /
`SQLAlchemy(engine_options=...)` / SQLALCHEMY_BINDS (one engine, so one pool, per bind).

A QueuePool holds at most pool_size + max_overflow connections; defaults verified by
introspection in tests/test_apps_defaults.py (SQLAlchemy 2.1.9:
QueuePool(pool_size=5, max_overflow=10)). max_overflow=-1 means no limit; NullPool opens
a connection per checkout (no limit either); StaticPool/SingletonThreadPool/AssertionPool
hold one.
"""

from __future__ import annotations

import ast

from msgspec import Struct
from msgspec.structs import replace

from advisor.model import Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.pyeval import PyScope, Val, block_names, dotted, is_unknown
from advisor.read.apps.pysource import (
    PyModule,
    arg,
    calls,
    imports,
    kwarg,
    local_scope,
    python_modules,
    value_of,
)
from advisor.read.apps.urls import route_from_env, route_from_url

DEFAULT_POOL_SIZE = 5
DEFAULT_MAX_OVERFLOW = 10
DEFAULT_WHO = "SQLAlchemy 2.x QueuePool default"
_ONE_CONNECTION = {"StaticPool", "SingletonThreadPool", "AssertionPool"}
_OTHER_DATABASES = ("sqlite", "mysql", "mariadb", "oracle", "mssql")


class Opt(Struct, frozen=True):
    val: Val | None  # None: written but not readable statically
    text: str  # as written, for messages
    line: int | None
    hidden: Val | None = None  # the value, when it reads a secret-set variable (unknown)


def _opt(module: PyModule, node: ast.expr | None, scope: PyScope | None = None
         ) -> Opt | None:
    if node is None:
        return None
    v = value_of(module, node, scope)
    return Opt(None if v is None or is_unknown(v) else v, ast.unparse(node), node.lineno,
               v if v is not None and v.hidden else None)


def _opt_from_val(v: Val) -> Opt:
    return Opt(None if is_unknown(v) else v, repr(v.value), v.source.line,
               v if v.hidden else None)


def route_of_url(v: Val | None, ctx: StackContext) -> tuple[Route | None, bool]:
    """(route, is_postgres) for a SQLAlchemy-style URL value; unknown URLs count as
    PostgreSQL and the route falls back to the container env."""
    if v is None or is_unknown(v) or not isinstance(v.value, str):
        return route_from_env(ctx.container.env), True
    url = v.value
    if url.split(":", 1)[0].lower().startswith(_OTHER_DATABASES):
        return None, False
    plain = "postgresql://" + url.split("://", 1)[1] if "://" in url else url  # drop +driver
    return route_from_url(plain, v.source), True


def _int(opt: Opt | None, name: str, default: int, where: str, ctx: StackContext
         ) -> tuple[int, str, bool]:
    """(value, how it reads in the label, default used)."""
    if opt is None:
        return default, f"{name} {default} (default)", True
    n = parse_int(str(opt.val.value)) if opt.val is not None else None
    if n is None:
        ctx.notices.append(f"{where}:{opt.line}: {name}={opt.text} cannot be read statically; "
                           f"SQLAlchemy default {default} assumed")
        return default, f"{name} {default} (default; {opt.text} not readable)", True
    src = opt.val.source
    from_elsewhere = src.path is not None and src.path != where
    return n, f"{name} {n}" + (f" ({src.key}, {src.label()})" if from_elsewhere else ""), False


def pool_from_options(path: str, line: int | None, options: dict[str, Opt | None],
                      route: Route | None, label: str, ctx: StackContext) -> Pool | None:
    """The pool these create_engine options make; None when its size is unknown (read
    from a secret-set variable: ctx.unknown says so)."""
    src = Source(path=path, line=line, key="pool_size + max_overflow")
    poolclass = options.get("poolclass")
    pc = poolclass.text.rsplit(".", 1)[-1] if poolclass is not None else ""
    if pc == "NullPool":
        return ctx.pool(f"{label} NullPool", 0, replace(src, key="poolclass"),
                        route=route, bound="unbounded",
                        note="NullPool: a new connection per checkout, no limit per process")
    if pc in _ONE_CONNECTION:
        return ctx.pool(f"{label} {pc}", 1, replace(src, key="poolclass"),
                        route=route)
    sized = (options.get("pool_size"), options.get("max_overflow"))
    if ctx.hidden_read(f"{label} pool_size + max_overflow",
                       *(o.hidden for o in sized if o is not None)):
        return None
    size, size_text, size_default = _int(options.get("pool_size"), "pool_size",
                                         DEFAULT_POOL_SIZE, path, ctx)
    over, over_text, over_default = _int(options.get("max_overflow"), "max_overflow",
                                         DEFAULT_MAX_OVERFLOW, path, ctx)
    name = f"{label} pool_size + max_overflow"
    if over < 0:
        return ctx.pool(name, size, src, route=route, bound="unbounded",
                        size_label=f"{label} {size_text} + {over_text}",
                        note="max_overflow=-1: no limit on overflow connections")
    if size_default and over_default:
        src = Source(path=path, line=line, key=f"{DEFAULT_WHO}: pool_size 5 + max_overflow 10")
        return ctx.pool(name, size + over, src, route=route, bound="default",
                        size_label=f"{label} {size_text} + {over_text}",
                        note=f"{DEFAULT_WHO} applied (pool_size 5 + max_overflow 10)")
    return ctx.pool(name, size + over, src, route=route,
                    size_label=f"{label} {size_text} + {over_text}")


def _engines(ctx: StackContext) -> list[Pool]:
    pools = []
    for module in python_modules(ctx, "create_"):
        for call, _ in calls(module, {"create_engine", "create_async_engine"}):
            scope = local_scope(module, call)
            route, postgres = route_of_url(value_of(module, arg(call, 0, "url"), scope), ctx)
            if not postgres:
                continue
            options = {k: _opt(module, kwarg(call, k), scope)
                       for k in ("pool_size", "max_overflow", "poolclass")}
            pool = pool_from_options(module.file.path, call.lineno, options, route,
                                     "SQLAlchemy", ctx)
            if pool is not None:
                pools.append(pool)
    return pools


def _as_dict(v: Val | None) -> dict[str, Val]:
    return v.value if v is not None and isinstance(v.value, dict) else {}


def _flask(ctx: StackContext) -> list[Pool]:
    if not any(imports(m, "flask_sqlalchemy") for m in python_modules(ctx, "flask_sqlalchemy")):
        return []
    options: dict[str, Val] = {}
    uri: Val | None = None
    binds: dict[str, Val] = {}
    where: tuple[str, int | None] | None = None
    modules = {m.file.path: m for needle in ("SQLALCHEMY", "SQLAlchemy")
               for m in python_modules(ctx, needle)}
    # `class RedashSQLAlchemy(SQLAlchemy)`: instances of a subclass are the extension too
    constructors = {"SQLAlchemy"} | {
        node.name for module in modules.values() for node in ast.walk(module.tree)
        if isinstance(node, ast.ClassDef)
        and any(dotted(b).rsplit(".", 1)[-1] == "SQLAlchemy" for b in node.bases)}
    for module in modules.values():
        names = module.scope.names
        options = {**options, **_as_dict(names.get("SQLALCHEMY_ENGINE_OPTIONS"))}
        # Flask-SQLAlchemy 2.x keys (removed in 3.0, still in older apps)
        for legacy, option in (("SQLALCHEMY_POOL_SIZE", "pool_size"),
                               ("SQLALCHEMY_MAX_OVERFLOW", "max_overflow")):
            if legacy in names and option not in options:
                options[option] = names[legacy]
        uri = names.get("SQLALCHEMY_DATABASE_URI", uri)
        binds = {**binds, **_as_dict(names.get("SQLALCHEMY_BINDS"))}
        for node in ast.walk(module.tree):
            # app.config["SQLALCHEMY_ENGINE_OPTIONS"] = {...}
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript) \
                    and dotted(node.targets[0].value).endswith("config"):
                key = value_of(module, node.targets[0].slice)
                if key is not None and key.value == "SQLALCHEMY_ENGINE_OPTIONS":
                    options = {**options, **_as_dict(value_of(module, node.value))}
                elif key is not None and key.value == "SQLALCHEMY_DATABASE_URI":
                    uri = value_of(module, node.value)
        for call, _ in calls(module, constructors):
            extra = kwarg(call, "engine_options")
            if extra is not None:
                options = {**options, **_as_dict(value_of(module, extra))}
            where = where or (module.file.path, call.lineno)
    if where is None:
        return []
    if uri is None:
        uri = _config_class_uri(list(modules.values()))
    opts = {k: _opt_from_val(v) for k, v in options.items()}
    if "poolclass" in options and options["poolclass"].value is not None:
        opts["poolclass"] = Opt(options["poolclass"].value, "poolclass", None)
    pools = []
    for suffix, target in [("", uri)] + [(f" bind {n}", v) for n, v in binds.items()]:
        route, postgres = route_of_url(target, ctx) if target is not None or not suffix \
            else (None, True)
        pool = pool_from_options(where[0], where[1], opts, route,
                                 f"Flask-SQLAlchemy{suffix}", ctx) if postgres else None
        if pool is not None:
            pools.append(pool)
    return pools


def _class_uris(module: PyModule) -> dict[str, Val]:
    """SQLALCHEMY_DATABASE_URI of each top-level config class (`class
    DevelopmentConfig(BaseConfig): SQLALCHEMY_DATABASE_URI = DATABASE_URL`), its body
    read with the module's names; a class without one takes its base's, when the base
    is a class of the module."""
    out: dict[str, Val] = {}
    for node in module.tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        scope = PyScope(path=module.scope.path, env=module.scope.env, cpus=module.scope.cpus,
                        names=dict(module.scope.names), cite=module.scope.cite)
        found = block_names(node.body, scope).get("SQLALCHEMY_DATABASE_URI")
        if found is None or found is module.scope.names.get("SQLALCHEMY_DATABASE_URI"):
            found = next((out[b] for b in (dotted(b).rsplit(".", 1)[-1] for b in node.bases)
                          if b in out), None)
        if found is not None:
            out[node.name] = found
    return out


def _config_class_uri(modules: list[PyModule]) -> Val | None:
    """The URI of the config class `app.config.from_object(...)` loads (a class, or its
    dotted name from the env: APP_SETTINGS=project.config.DevelopmentConfig); when that
    is not known, the one URI every config class agrees on, else None (not a guess)."""
    uris = {name: v for m in modules if "SQLALCHEMY_DATABASE_URI" in m.file.text
            for name, v in _class_uris(m).items()}
    if not uris:
        return None
    for module in modules:
        for call, _ in calls(module, {"from_object"}):
            node = arg(call, 0, "obj")
            got = value_of(module, node) if node is not None else None
            name = got.value if got is not None and isinstance(got.value, str) \
                else dotted(node) if node is not None else ""
            chosen = uris.get(name.rsplit(".", 1)[-1]) if name else None
            if chosen is not None:
                return chosen
    values = {repr(v.value) for v in uris.values()}
    return next(iter(uris.values())) if len(values) == 1 else None


def sqlalchemy_pools(ctx: StackContext) -> list[Pool]:
    if not ctx.files("python"):
        return []
    return _engines(ctx) + _flask(ctx)
