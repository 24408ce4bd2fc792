"""TypeORM (postgres driver): `new DataSource({ type: "postgres", poolSize, extra })`,
`TypeOrmModule.forRoot({...})`, `createConnection({...})`.

TypeORM 1.1.0 src/driver/postgres/PostgresDriver.ts:1738-1753 builds the pg Pool
options as `Object.assign({}, { ..., max: options.poolSize }, options.extra ?? {})`:
`extra.max` beats `poolSize`, and with neither, pg-pool's default 10 applies.
`replication: { master, slaves: [...] }` opens one pool per master and slave.
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import call_args, find_calls
from advisor.read.apps.jssource import (
    as_int,
    get,
    js_modules,
    known,
    may_hold,
    options_unread,
    route_of,
)
from advisor.read.apps.node_pg import DEFAULT_MAX, DEFAULT_SOURCE

_CALLS = frozenset({"DataSource", "forRoot", "createConnection", "createConnections"})


def typeorm_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    for module in js_modules(ctx, "postgres", _CALLS):
        for _, paren in find_calls(module.toks, _CALLS):
            args = call_args(module.parser, paren)
            cfg = args[0] if args else None
            kind = get(cfg, "type")
            if not known(kind) or str(kind.value) not in ("postgres", "cockroachdb"):
                continue
            here = Source(path=module.file.path, line=module.toks[paren].line)
            v = get(cfg, "extra", "max")
            key = "extra.max"
            if ctx.hidden_read("TypeORM extra.max", v):
                continue
            if as_int(v) is None:
                v, key = get(cfg, "poolSize"), "poolSize"
                if ctx.hidden_read("TypeORM poolSize", v):
                    continue
            n = as_int(v)
            if not n and (may_hold(cfg, "extra", "max") or may_hold(cfg, "poolSize")):
                # `{ type: "postgres", ...dbConfig }`, `extra: pgOptions`: a size may be
                # set where it is not read, so pg-pool's 10 is not known to apply
                options_unread(ctx, "TypeORM poolSize / extra.max", here, "poolSize or "
                               "extra.max")
                continue
            slaves = get(cfg, "replication", "slaves")
            copies = [("", route_of(get(cfg, "url"), ctx))]
            if slaves is not None and isinstance(slaves.value, list):
                copies = [(" master", None)] + [(f" slave[{i}]", None)
                                                for i in range(len(slaves.value))]
            for suffix, route in copies:
                if n:
                    pools.append(ctx.pool(f"TypeORM {key}{suffix}", n,
                                          replace(v.source, key=v.source.key or key),
                                          route=route))
                else:
                    pools.append(ctx.pool(f"TypeORM pg Pool max{suffix}", DEFAULT_MAX,
                                          DEFAULT_SOURCE, route=route, bound="default",
                                          note=f"TypeORM at {here.label()} without poolSize"))
    return pools
