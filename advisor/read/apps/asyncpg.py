"""asyncpg: `asyncpg.create_pool(dsn, min_size=10, max_size=10)` (0.32.0 signature,
introspected in tests/test_apps_defaults.py). `asyncpg.connect()` opens one connection
per call and is not a pool: not counted here. A bare `create_pool(...)` is asyncpg's only
where the module imports that name from asyncpg: a module's own `def create_pool()` (a
wrapper around asyncpg's, already counted where it calls asyncpg) is not a second pool.
"""

from __future__ import annotations

import ast

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.pyeval import is_unknown
from advisor.read.apps.pysource import (
    PyModule,
    arg,
    calls,
    imports,
    local_scope,
    python_modules,
    value_of,
)
from advisor.read.apps.urls import route_from_env, route_from_url

DEFAULT_MAX_SIZE = 10


def _create_pool_names(module: PyModule) -> set[str]:
    """The names asyncpg's create_pool is called by in this module: `asyncpg.create_pool`
    (or through `import asyncpg as X`), and a name `from asyncpg import create_pool` binds."""
    names = {"asyncpg.create_pool"}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            names.update(f"{a.asname}.create_pool" for a in node.names
                         if a.name == "asyncpg" and a.asname)
        elif isinstance(node, ast.ImportFrom) and \
                (node.module or "").split(".")[0] == "asyncpg":
            names.update(a.asname or a.name for a in node.names if a.name == "create_pool")
    return names


def asyncpg_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    for module in python_modules(ctx, "asyncpg"):
        if not imports(module, "asyncpg"):
            continue
        names = _create_pool_names(module)
        for call, name in calls(module, {"create_pool"} | names):
            if name not in names:
                continue
            scope = local_scope(module, call)
            dsn = value_of(module, arg(call, 0, "dsn"), scope)
            route = route_from_url(dsn.value, dsn.source) if dsn is not None and \
                not is_unknown(dsn) and isinstance(dsn.value, str) else \
                route_from_env(ctx.container.env)
            here = Source(path=module.file.path, line=call.lineno, key="max_size")
            node = arg(call, 99, "max_size")
            v = value_of(module, node, scope)
            if ctx.hidden_read("asyncpg create_pool max_size", v):
                continue
            n = parse_int(str(v.value)) if v is not None and not is_unknown(v) else None
            if n is not None:
                pools.append(ctx.pool("asyncpg create_pool max_size", n,
                                      replace(v.source, key=v.source.key
                                                                  or "max_size"),
                                      route=route))
                continue
            if node is not None:
                # the code sets a size not read here: unknown, not asyncpg's default
                ctx.unread_size("asyncpg create_pool max_size", here)
                continue
            pools.append(ctx.pool("asyncpg create_pool max_size", DEFAULT_MAX_SIZE,
                                  Source.default_of("asyncpg 0.32 default (max_size=10)",
                                                    key="max_size"),
                                  route=route, bound="default",
                                  note=f"create_pool at {here.label()}: asyncpg default"))
    return pools
