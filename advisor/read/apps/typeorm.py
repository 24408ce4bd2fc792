"""TypeORM (postgres driver): `new DataSource({ type: "postgres", poolSize, extra })`,
`TypeOrmModule.forRoot({...})`, `createConnection({...})`.

TypeORM 1.1.0 src/driver/postgres/PostgresDriver.ts:1738-1753 builds the pg Pool
options as `Object.assign({}, { ..., max: options.poolSize }, options.extra ?? {})`:
`extra.max` beats `poolSize`, and with neither, pg-pool's default 10 applies.
`max: options.poolSize` came in 0.3.10 (typeorm commit 48976c29, #9305;
PostgresDriver.ts@0.3.10:1465, CockroachDriver.ts@0.3.10:930); up to 0.3.9
(PostgresDriver.ts@0.3.9:1453-1467, 0.2.45:1159) only `extra` reaches pg, so
`poolSize` is ignored and pg-pool's 10 applies. The version is the range the app's
package.json declares for typeorm.
`replication: { master, slaves: [...] }` opens one pool per master and slave.
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import call_args, find_calls
from advisor.read.apps.jssource import (
    as_int,
    dependency_spec,
    get,
    js_modules,
    known,
    may_hold,
    options_unread,
    route_of,
)
from advisor.read.apps.node_pg import DEFAULT_MAX, DEFAULT_SOURCE
from advisor.read.apps.npmrange import Version, all_before
from advisor.read.apps.pyeval import Val

_CALLS = frozenset({"DataSource", "forRoot", "createConnection", "createConnections"})
POOL_SIZE_FROM: Version = (0, 3, 10)  # PostgresDriver passes `max: options.poolSize`


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
            pools.extend(config_pools(ctx, cfg, here, module.file.rel))
    return pools


def _version_note(ctx: StackContext, size: Val, rel: str) -> tuple[bool, str]:
    """Whether the typeorm of the code at `rel` passes `poolSize` (at `size`) to pg, and,
    when that is assumed or it does not, what to say."""
    spec = dependency_spec(ctx, "typeorm", rel)
    where = f"poolSize at {size.source.label()}"
    if spec is None:
        return True, (f"TypeORM {where}: no package.json here declares typeorm; assumed "
                      "0.3.10 or later, which passes poolSize to pg as max (before 0.3.10 "
                      "it is ignored for postgres and pg-pool's 10 applies)")
    text, source = spec
    before = all_before(text, POOL_SIZE_FROM)
    if before:
        return False, (f"TypeORM {where} is ignored by typeorm {text} ({source.label()}): "
                       "before 0.3.10 the postgres driver passes only `extra` to pg, so "
                       "pg-pool's 10 applies (set extra.max)")
    if before is None:
        return True, (f"TypeORM {where}: typeorm {text} ({source.label()}) allows versions "
                      "before 0.3.10, which ignore poolSize for postgres (pg-pool's 10); "
                      "assumed 0.3.10 or later, as npm installs without a lock file")
    return True, ""


def config_pools(ctx: StackContext, cfg: Val | None, here: Source, rel: str) -> list[Pool]:
    """The pools one postgres connection's options `cfg` (at `here`) open."""
    v = get(cfg, "extra", "max")
    key = "extra.max"
    if ctx.hidden_read("TypeORM extra.max", v):
        return []
    ignored = ""
    size_counts = True
    if as_int(v) is None and (size := get(cfg, "poolSize")) is not None:
        size_counts, said = _version_note(ctx, size, rel)
        if said and said not in ctx.notices:
            ctx.notices.append(said)
        if size_counts:
            v, key = size, "poolSize"
            if ctx.hidden_read("TypeORM poolSize", v):
                return []
        else:
            ignored = f"poolSize ({size.source.label()}) ignored by this typeorm version"
    n = as_int(v)
    if not n and (may_hold(cfg, "extra", "max") or
                  (size_counts and may_hold(cfg, "poolSize"))):
        # `{ type: "postgres", ...dbConfig }`, `extra: pgOptions`: a size may be
        # set where it is not read, so pg-pool's 10 is not known to apply
        options_unread(ctx, "TypeORM poolSize / extra.max", here, "poolSize or "
                       "extra.max" if size_counts else "extra.max")
        return []
    pools: list[Pool] = []
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
                                  note=f"TypeORM at {here.label()} "
                                       + (ignored or "without poolSize")))
    return pools
