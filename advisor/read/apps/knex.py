"""Knex: `knex({ client: "pg", connection, pool: { min, max } })` in code, or a
knexfile with one block per environment (NODE_ENV, default "development").

Default read in knex 3.3.0, lib/client.js:230 (`getPoolSettings`: `{ min: 2, max: 10 }`).
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import Tok, call_args, find_calls
from advisor.read.apps.jssource import (
    JsModule,
    as_int,
    get,
    js_modules,
    known,
    may_hold,
    options_unread,
    route_of,
)
from advisor.read.apps.pyeval import Val
from advisor.read.apps.source import AppFile

DEFAULT_MAX = 10
_PG_CLIENTS = ("pg", "postgres", "postgresql", "pg-native", "pgnative")


def _exported_config(module: JsModule, ctx: StackContext) -> Val | None:
    """`module.exports = {...}` / `export default {...}` of a knexfile, per NODE_ENV."""
    toks: list[Tok] = module.toks
    for i, t in enumerate(toks):
        start = None
        if t.text == "module" and i + 3 < len(toks) and toks[i + 2].text == "exports" \
                and toks[i + 3].text == "=":
            start = i + 4
        elif t.text == "export" and i + 1 < len(toks) and toks[i + 1].text == "default":
            start = i + 2
        if start is None:
            continue
        v, _ = module.parser.expr(start)
        if v is None or not isinstance(v.value, dict):
            return None
        if "client" in v.value:
            return v
        env = ctx.env_value("NODE_ENV") or "development"
        return v.value.get(env)
    return None


def _pool(cfg: Val, where: Source, ctx: StackContext) -> Pool | None:
    client = get(cfg, "client")
    if known(client) and str(client.value) not in _PG_CLIENTS:
        return None
    route = route_of(get(cfg, "connection"), ctx)
    v = get(cfg, "pool", "max")
    if ctx.hidden_read("Knex pool.max", v):
        return None
    n = as_int(v)
    if n:
        return ctx.pool("Knex pool.max", n, replace(v.source, key=v.source.key or "pool.max"),
                        route=route)
    if may_hold(cfg, "pool", "max"):
        # `pool: poolConfig`, `{ ...base, client: "pg" }`: max may be set where it is not
        # read, so Knex's 10 is not known to apply
        options_unread(ctx, "Knex pool.max", where, "pool.max", cfg, ("pool", "max"))
        return None
    return ctx.pool("Knex pool.max", DEFAULT_MAX,
                    Source.default_of("Knex 3.x default (pool min 2, max 10)", key="pool.max"),
                    route=route, bound="default", note=f"knex config at {where.label()}")


_CALLS = frozenset({"knex", "Knex", "require"})


def _knexfile(f: AppFile) -> bool:
    return f.name.startswith("knexfile.")


def knex_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    # knexfiles picked by name before anything is tokenized (every file naming `client`
    # was); other modules only when they call knex( / Knex( / require( at all
    knexfiles = js_modules(ctx, "client", where=_knexfile)
    calling = {id(m) for m in js_modules(ctx, "knex", _CALLS)}
    rest = [m for m in js_modules(ctx, "knex") if m not in knexfiles
            and (_knexfile(m.file) or id(m) in calling)]
    for module in knexfiles + rest:
        if module.file.name.startswith("knexfile."):
            cfg = _exported_config(module, ctx)
            if cfg is not None:
                pool = _pool(cfg, cfg.source, ctx)
                if pool is not None:
                    pools.append(pool)
            continue
        for name, paren in find_calls(module.toks, _CALLS):
            if name == "require":
                # require("knex")({...})
                close = module.parser.skip_balanced(paren)
                arg = module.toks[paren + 1].text.strip("'\"") if paren + 1 < len(module.toks) \
                    else ""
                if arg != "knex" or not module.parser.at(close, "("):
                    continue
                paren = close
            args = call_args(module.parser, paren)
            cfg = args[0] if args else None
            if cfg is None or not isinstance(cfg.value, dict):
                continue
            pool = _pool(cfg, Source(path=module.file.path, line=module.toks[paren].line), ctx)
            if pool is not None:
                pools.append(pool)
    return pools
