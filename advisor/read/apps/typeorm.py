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
`createConnection()` / `getConnectionOptions()` without options read the ormconfig
(apps/ormconfig.py); an ormconfig the code does not ask for is not counted (the CLI's,
or a leftover beside an explicit DataSource).
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps import ormconfig
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsentry import served
from advisor.read.apps.jsparse import call_args, find_calls
from advisor.read.apps.jssource import (
    JsModule,
    as_int,
    dependency_spec,
    get,
    imports_module,
    js_modules,
    known,
    may_hold,
    options_unread,
    route_of,
)
from advisor.read.apps.node_pg import DEFAULT_MAX, default_source
from advisor.read.apps.npmrange import Version, all_before
from advisor.read.apps.pyeval import Val

_CALLS = frozenset({"DataSource", "forRoot", "createConnection", "createConnections"})
_FROM_ORMCONFIG = frozenset({"createConnection", "createConnections", "getConnectionOptions"})
POOL_SIZE_FROM: Version = (0, 3, 10)  # PostgresDriver passes `max: options.poolSize`
GLOBALS_UNTIL: Version = (1, 0, 0)  # src/globals.ts@1.0.0 has no createConnection
_POSTGRES = ("postgres", "cockroachdb")


def typeorm_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    modules = js_modules(ctx, "postgres", _CALLS) + [
        m for m in js_modules(ctx, "useFactory") if "postgres" in m.file.text]
    modules = list({m.file.path: m for m in modules}.values())
    # the process's own connection, not the migrations CLI's DataSource beside it
    # (`typeorm migration:run -d src/database/data-source.ts`; phona/pytoya's API builds
    # its connection in config/database.config.ts: audit 10b D4)
    loaded, maybe = served(ctx, modules, lambda m: bool(_postgres_configs(m)),
                           "TypeORM postgres connection")
    for module in loaded + maybe:
        for cfg, here in _postgres_configs(module):
            pools.extend(config_pools(ctx, cfg, here, module.file.rel))
    return pools + _ormconfig_pools(ctx)


def _postgres_configs(module: JsModule) -> list[tuple[Val, Source]]:
    """The postgres connection options a module passes to TypeORM, and where: the first
    argument of `new DataSource(...)`, `forRoot(...)`, `createConnection(...)`, and the
    object a Nest `useFactory` returns (`TypeOrmModule.forRootAsync({ useFactory: () =>
    ({ type: "postgres", ... }) })`, @nestjs/typeorm's async options)."""
    found: list[tuple[Val, int]] = []
    for _, paren in find_calls(module.toks, _CALLS):
        args = call_args(module.parser, paren)
        if args and args[0] is not None:
            found.append((args[0], paren))
    found += _factory_returns(module)
    out = []
    for cfg, at in found:
        kind = get(cfg, "type")
        if known(kind) and str(kind.value) in _POSTGRES:
            out.append((cfg, Source(path=module.file.path, line=module.toks[at].line)))
    return out


def _factory_returns(module: JsModule) -> list[tuple[Val, int]]:
    """(the object literal, its index) each `useFactory` function returns: `=> ({...})`
    or `return {...}` in its body (the first one)."""
    toks = module.toks
    if "useFactory" not in module.file.text:
        return []
    parser = module.parser
    out = []
    for i, tok in enumerate(toks):
        if tok.text != "useFactory" or i + 1 >= len(toks) or toks[i + 1].text not in (":", "("):
            continue
        holder = parser.parent[i]
        end = parser.skip_balanced(holder) if holder >= 0 else len(toks)
        for k in range(i + 1, end - 1):
            text = toks[k].text
            if (text == "=>" and toks[k + 1].text == "(" and k + 2 < end
                    and toks[k + 2].text == "{"):
                start = k + 2
            elif text == "return" and toks[k + 1].text == "{":
                start = k + 1
            else:
                continue
            v, _ = parser.object(start)
            if v is not None:
                out.append((v, start))
            break
    return out


def _ormconfig_request(module: JsModule) -> tuple[set[str] | None, Source] | None:
    """The connection names the module's calls read from the ormconfig (None: all of
    them, `createConnections()`), and where the first call is; None without one."""
    names: set[str] | None = set()
    first: Source | None = None
    for callee, paren in find_calls(module.toks, _FROM_ORMCONFIG):
        call = callee.rsplit(".", 1)[-1]
        args = call_args(module.parser, paren)
        if call != "getConnectionOptions" and args and (
                args[0] is None or not isinstance(args[0].value, str)):
            continue  # options given (or not read): not the ormconfig's
        if call == "createConnections":
            names = None
        elif names is not None:
            name = args[0].value if args and args[0] is not None else "default"
            names.add(name if isinstance(name, str) else "default")
        first = first or Source(path=module.file.path, line=module.toks[paren].line)
    return (names, first) if first is not None else None


def _package_root(ctx: StackContext, rel: str) -> str:
    """The folder ("" or "x/y/") of the package.json nearest above `rel`."""
    folders = [f.rel[: -len("package.json")] for f in ctx.files("package-json")]
    above = [d for d in folders if rel.startswith(d)]
    return max(above, key=len) if above else ""


def _ormconfig_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    read: set[tuple[str, str]] = set()
    for module in js_modules(ctx, "typeorm", _FROM_ORMCONFIG,
                             where=lambda f: "ormconfig" not in f.name):
        if not imports_module(module, "typeorm"):
            continue  # mysql2's createConnection(), an own helper
        request = _ormconfig_request(module)
        if request is None:
            continue
        names, call = request
        spec = dependency_spec(ctx, "typeorm", module.file.rel)
        if spec is not None and all_before(spec[0], GLOBALS_UNTIL) is False:
            continue  # typeorm 1.x: no createConnection() reading an ormconfig
        root = _package_root(ctx, module.file.rel)
        yml = spec is None or all_before(spec[0], ormconfig.YML_UNTIL) is not False
        f = ormconfig.find_file(ctx, root, yml)
        marker = ctx.env_from_hidden("TYPEORM_CONNECTION", "TYPEORM_URL")
        if marker is not None:
            ctx.env_from_unknown(f"TypeORM ormconfig ({call.label()})", "which options "
                                 "createConnection() reads (TYPEORM_* variables win over "
                                 "any ormconfig file)", ("TYPEORM_CONNECTION", "TYPEORM_URL"),
                                 marker)
            continue
        found = ormconfig.connections(ctx, f)
        if found is None:
            ctx.notices.append(f"TypeORM at {call.label()} reads an ormconfig, and none is "
                               f"in {root or 'the app folder'} nor TYPEORM_CONNECTION / "
                               "TYPEORM_URL set: no pool counted for it")
            continue
        if isinstance(found, Val):
            options_unread(ctx, "TypeORM ormconfig", found.source, "its options")
            continue
        for options in found:
            if (names is not None and options.name not in names) or \
                    (options.where.path or "", options.name) in read:
                continue
            read.add((options.where.path or "", options.name))
            kind = get(options.cfg, "type")
            if kind is not None and kind.hidden:
                ctx.hidden_size(f"TypeORM ormconfig database type ({call.label()})", kind.hidden,
                                kind.source)
                continue
            if known(kind) and str(kind.value) in _POSTGRES:
                pools.extend(config_pools(ctx, options.cfg, options.where,
                                          module.file.rel))
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
                                  default_source(ctx.app), route=route, bound="default",
                                  note=f"TypeORM at {here.label()} "
                                       + (ignored or "without poolSize")))
    return pools
