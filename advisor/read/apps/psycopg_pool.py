"""psycopg 3 pools and psycopg2's pool module.

psycopg_pool (3.3.3, introspected in tests/test_apps_defaults.py):
`ConnectionPool(conninfo, min_size=4, max_size=None)`, AsyncConnectionPool the same;
max_size None means max_size = min_size (base.py `_check_size`). NullConnectionPool
defaults to min_size=0, max_size=None -> 0, which is no limit.
psycopg2.pool: `SimpleConnectionPool/ThreadedConnectionPool(minconn, maxconn, dsn)`.
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.pyeval import is_unknown
from advisor.read.apps.pysource import arg, calls, python_modules, value_of
from advisor.read.apps.urls import route_from_env, route_from_url

DEFAULT_MIN_SIZE = 4
DEFAULT_NULL_MIN_SIZE = 0


def _route(v, ctx: StackContext) -> Route | None:
    if v is not None and not is_unknown(v) and isinstance(v.value, str) and v.value:
        return route_from_url(v.value, v.source)
    return route_from_env(ctx.container.env)


def psycopg_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    for module in python_modules(ctx, "Pool"):
        for call, name in calls(module, {"ConnectionPool", "AsyncConnectionPool",
                                         "NullConnectionPool", "AsyncNullConnectionPool"}):
            if "psycopg" not in module.file.text:
                continue
            null = "Null" in name
            kind = name.rsplit(".", 1)[-1]
            route = _route(value_of(module, arg(call, 0, "conninfo")), ctx)
            here = Source(path=module.file.path, line=call.lineno)
            max_v = value_of(module, arg(call, 99, "max_size"))
            min_v = value_of(module, arg(call, 99, "min_size"))
            max_n = parse_int(str(max_v.value)) if max_v and not is_unknown(max_v) else None
            min_n = parse_int(str(min_v.value)) if min_v and not is_unknown(min_v) else None
            label = f"psycopg_pool {kind} max_size"
            if ctx.hidden_read(label, max_v) or (
                    max_n is None and ctx.hidden_read(label, min_v)):
                continue  # unknown (max_size unset is min_size)
            if max_n is not None:
                pools.append(ctx.pool(label, max_n,
                                      replace(max_v.source, key=max_v.source.key or "max_size"),
                                      route=route))
            elif null and min_n in (None, 0):
                pools.append(ctx.pool(label, 0, replace(here, key="max_size"),
                                      route=route, bound="unbounded",
                                      note=f"{kind} without max_size: no limit"))
            elif min_n is not None:
                pools.append(ctx.pool(label, min_n, replace(
                    min_v.source, key="min_size (max_size unset = min_size)"), route=route))
            elif arg(call, 99, "max_size") is not None or arg(call, 99, "min_size") is not None:
                # the code sets a size not read here: unknown, not the library default
                ctx.unread_size(f"{kind} size", here)
            else:
                pools.append(ctx.pool(label, DEFAULT_MIN_SIZE, Source.default_of(
                    "psycopg_pool 3.3 default (min_size=4, max_size=None -> min_size)",
                    key="max_size"), route=route, bound="default",
                    note=f"{kind} at {here.label()}: psycopg_pool default applied"))
        for call, name in calls(module, {"SimpleConnectionPool", "ThreadedConnectionPool"}):
            v = value_of(module, arg(call, 1, "maxconn"))
            if ctx.hidden_read(f"psycopg2 {name.rsplit('.', 1)[-1]} maxconn", v):
                continue
            n = parse_int(str(v.value)) if v is not None and not is_unknown(v) else None
            here = Source(path=module.file.path, line=call.lineno, key="maxconn")
            if n is None:
                ctx.notices.append(f"{here.label()}: psycopg2 {name} maxconn not readable")
                continue
            dsn = value_of(module, arg(call, 2, "dsn"))
            pools.append(ctx.pool(f"psycopg2 {name.rsplit('.', 1)[-1]} maxconn", n,
                                  v.source if v.source.path != module.file.path else here,
                                  route=_route(dsn, ctx)))
    return pools
