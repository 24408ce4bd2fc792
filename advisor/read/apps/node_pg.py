"""node-postgres: `new Pool({ max, connectionString })` from `pg` (also `pg.Pool`,
`new Pool(...)` from `pg-pool`; the legacy `poolSize` is still honoured).

Default read from pg-pool 3.14.0 (packages/pg-pool/index.js:89 in brianc/node-postgres):
`this.options.max = this.options.max || this.options.poolSize || 10`, so a max of 0 is
also 10. tests/test_apps_defaults.py runs the installed pg-pool under node to check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.model import Pool, Route, Source
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
from advisor.read.apps.pyeval import Val

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
                    route = route_of(None, ctx) or _literal_route(opts, host)
            pool = pg_pool_of(ctx, "node-postgres Pool max", opts, here, route,
                              has_args=bool(args), default=default_source(ctx.app),
                              note=f"new Pool at {here.label()} without max")
            if url is not None and url.hidden and route is not None:
                # connectionString from a Secret not held: where it connects is not
                # known, never another variable's URL (route_of's fallback, the
                # container's other pool's: rejourney's pool and readPool). With no
                # such fallback the pool is unplaced already, and said so once.
                pools += ctx.hidden_route([pool] if pool is not None else [],
                                          "node-postgres Pool", url.hidden, url.source)
            elif pool is not None:
                pools.append(pool)
    return pools


def _literal_route(opts: Val | None, host: Val) -> Route | None:
    """The route a Pool's own options name when the container's env names none: `new
    Pool({host: "postgres", ...})` (annachemicz/cpu_ram_monitoring's backend, audit 14
    D2, whose server printed "fits, peak 0"). Not a fallback's (`process.env.DB_HOST ||
    'localhost'`, from_default) nor a loopback host: those say nothing of the cluster."""
    name = host.value
    if host.from_default or not isinstance(name, str) or not name.strip() or \
            name.strip().lower() in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
        return None
    database, user = get(opts, "database"), get(opts, "user")
    return Route(host=name.strip(), port=as_int(get(opts, "port")),
                 dbname=str(database.value) if known(database) else None,
                 user=str(user.value) if known(user) else None,
                 source=replace(host.source, key=host.source.key or "host"))


def pg_pool_of(ctx: StackContext, label: str, opts: Val | None, here: Source,
               route: Route | None, *, has_args: bool, default: Source,
               note: str) -> Pool | None:
    """The pool pg-pool opens with options `opts` (`max || poolSize || 10`), passed at
    `here`; None when its size is unknown (said in ctx.unknown)."""
    for key in ("max", "poolSize"):
        v = get(opts, key)
        if ctx.hidden_read(label, v):
            return None  # unknown: no pool, and not pg-pool's default
        n = as_int(v)
        if n and v is not None:
            return ctx.pool(label, n, replace(v.source, key=v.source.key or key),
                            route=route, cpu=v.cpu)
        if v is not None and not known(v) and not v.from_default:
            # the code sets a size not read here: unknown, not pg-pool's default
            ctx.unread_size(f"{label.removesuffix(' max')} {key}", here)
            return None
    if has_args and (may_hold(opts, "max") or may_hold(opts, "poolSize")):
        # `new Pool(config)` with config from another module: pg-pool's 10 holds only
        # for options known to set no max
        options_unread(ctx, label, here, "max")
        return None
    return ctx.pool(label, DEFAULT_MAX, default, route=route, bound="default",
                    note=note)
