"""node-postgres: `new Pool({ max, connectionString })` from `pg` (also `pg.Pool`,
`new Pool(...)` from `pg-pool`; the legacy `poolSize` is still honoured).

Default read from pg-pool 3.14.0 (packages/pg-pool/index.js:89 in brianc/node-postgres):
`this.options.max = this.options.max || this.options.poolSize || 10`, so a max of 0 is
also 10. tests/test_apps_defaults.py runs the installed pg-pool under node to check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import call_args, find_calls
from advisor.read.apps.jssource import (
    as_int,
    get,
    imports_module,
    js_modules,
    known,
    may_hold,
    options_unread,
    route_of,
)
from advisor.read.apps.npmlock import npm_pin
from advisor.read.apps.pydeps import version_tuple

if TYPE_CHECKING:
    from advisor.read.apps.source import AppSource

DEFAULT_MAX = 10
DEFAULT_SOURCE = Source.default_of("pg-pool 3.14 default (max || poolSize || 10)", key="max")
# every pg-pool 3.x tag, 3.0.0 (index.js:79) to 3.14.0 (:89), has that line
_SAME_DEFAULT = ((3, 0, 0), (3, 14, 0))


def default_source(app: AppSource | None) -> Source:
    """pg-pool's default max cited at the version the app's package-lock.json installs
    when that version's default was checked (the same 10), else at 3.14."""
    pin = npm_pin(app, "pg-pool")
    if pin is None or not _SAME_DEFAULT[0] <= version_tuple(pin[0]) <= _SAME_DEFAULT[1]:
        return DEFAULT_SOURCE
    version, where = pin
    return Source.default_of(f"pg-pool {version} default (max || poolSize || 10; "
                             f"{where.label()} pins pg-pool {version})", key="max")


def node_pg_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    for module in js_modules(ctx, "Pool", frozenset({"Pool"})):
        if not (imports_module(module, "pg") or imports_module(module, "pg-pool")):
            continue
        for name, paren in find_calls(module.toks, {"Pool"}, new=True):
            if name not in ("Pool", "pg.Pool", "Pg.Pool", "postgres.Pool"):
                continue
            args = call_args(module.parser, paren)
            opts = args[0] if args else None
            here = Source(path=module.file.path, line=module.toks[paren].line)
            url = get(opts, "connectionString")
            route = route_of(url, ctx)
            if route is None:
                host = get(opts, "host")
                if known(host):
                    route = route_of(None, ctx)
            for key in ("max", "poolSize"):
                v = get(opts, key)
                if ctx.hidden_read("node-postgres Pool max", v):
                    break  # unknown: no pool, and not pg-pool's default
                n = as_int(v)
                if n:
                    pools.append(ctx.pool("node-postgres Pool max", n,
                                          replace(v.source, key=v.source.key or key),
                                          route=route))
                    break
                if v is not None and not known(v) and not v.from_default:
                    # the code sets a size not read here: unknown, not pg-pool's default
                    ctx.unread_size(f"node-postgres Pool {key}", here)
                    break
            else:
                if args and (may_hold(opts, "max") or may_hold(opts, "poolSize")):
                    # `new Pool(config)` with config from another module: pg-pool's 10
                    # holds only for options known to set no max
                    options_unread(ctx, "node-postgres Pool max", here, "max")
                    continue
                pools.append(ctx.pool("node-postgres Pool max", DEFAULT_MAX,
                                      default_source(ctx.app), route=route, bound="default",
                                      note=f"new Pool at {here.label()} without max"))
    return pools
