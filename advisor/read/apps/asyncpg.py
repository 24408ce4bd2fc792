"""asyncpg: `asyncpg.create_pool(dsn, min_size=10, max_size=10)` (0.32.0 signature,
introspected in tests/test_apps_defaults.py). `asyncpg.connect()` opens one connection
per call and is not a pool: not counted here.
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.pyeval import is_unknown
from advisor.read.apps.pysource import (
    arg,
    calls,
    imports,
    local_scope,
    python_modules,
    value_of,
)
from advisor.read.apps.urls import route_from_env, route_from_url

DEFAULT_MAX_SIZE = 10


def asyncpg_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    for module in python_modules(ctx, "asyncpg"):
        if not imports(module, "asyncpg"):
            continue
        for call, name in calls(module, {"create_pool"}):
            if name not in ("asyncpg.create_pool", "create_pool"):
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
