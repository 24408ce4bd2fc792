"""pg-boss (timgit/pg-boss): `new PgBoss(connectionString)` or `new PgBoss({ connectionString
| host..., max, db, useListenNotify })` opens a pg.Pool of its own, besides the app's other
pools. Read in timgit/pg-boss at its tags:

- 5.0.0 to 12.27.0 (aa1ce16c): src/db.(js|ts) `open()` is `new pg.Pool(this.config)`, the
  constructor's options as they are: pg-boss sets no size, so pg-pool's
  `max || poolSize || 10` decides (packages/pg-pool/index.js:89, advisor/read/apps/
  node_pg.py). 3.x and 4.x: src/attorney.js `config.poolSize = config.poolSize ||
  config.max || 10` and db.js sets `max` from it: also 10.
- `db` (a custom adapter with executeSql, e.g. one over Prisma's or knex's pool): pg-boss
  opens no pool of its own (src/index.ts getDb: `config.db` instead of `new DbDefault`).
- 12.21.0 and later: `useListenNotify: true` (default false, attorney.ts getConfig) holds
  one more connection, a pg.Client outside the pool for LISTEN (db.ts listen:
  `new pg.Client`, notifier.ts start); before 12.21 pg-boss never LISTENs.
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import call_args, find_calls
from advisor.read.apps.jssource import JsModule, as_int, get, js_modules, known, route_of
from advisor.read.apps.node_pg import DEFAULT_MAX
from advisor.read.apps.pyeval import Val

LABEL = "pg-boss pg.Pool max"
LISTEN = "pg-boss LISTEN connection (useListenNotify)"
DEFAULT_SOURCE = Source.default_of(
    "pg-boss 5+ passes its options to pg.Pool and sets no max: pg-pool 3.14 default "
    "(max || poolSize || 10); 3.x/4.x: poolSize || max || 10", key="max")
_QUOTE = r"""["']pg-boss["']"""
_DEFAULT_IMPORT = re.compile(rf"import\s+(\w+)\s*(?:,\s*\{{[^}}]*\}})?\s*from\s*{_QUOTE}")
_NAMED_IMPORT = re.compile(rf"import\s+(?:\w+\s*,\s*)?(?:type\s+)?\{{([^}}]*)\}}\s*from\s*{_QUOTE}")
_REQUIRE = re.compile(rf"(?:const|let|var)\s+(\w+)\s*=\s*require\(\s*{_QUOTE}\s*\)")
_DESTRUCTURED = re.compile(
    rf"(?:const|let|var)\s+\{{([^}}]*)\}}\s*=\s*(?:require\(\s*|await\s+import\(\s*){_QUOTE}")
# an argument named like a connection string (`new PgBoss(databaseUrl)`)
_URL_NAME = re.compile(r"url|uri|dsn|conn|database|db_?string", re.I)


def _bound_names(text: str) -> set[str]:
    """The local names the module gives pg-boss's class (default export before 11, the
    named export PgBoss from 12, aliases), and PgBoss itself."""
    names = {"PgBoss"}
    names.update(m.group(1) for m in _DEFAULT_IMPORT.finditer(text))
    names.update(m.group(1) for m in _REQUIRE.finditer(text))
    for m in [*_NAMED_IMPORT.finditer(text), *_DESTRUCTURED.finditer(text)]:
        for part in m.group(1).split(","):
            words = part.replace(":", " as ").split()
            if words and words[0] in ("PgBoss", "default"):
                names.add(words[-1])
    return names


def _argument_text(module: JsModule, paren: int) -> str:
    """The dotted name the call's first argument is written as (`this.databaseUrl`)."""
    toks = module.toks
    out, i = [], paren + 1
    while i < len(toks) and (toks[i].kind == "id" or toks[i].text == "."):
        out.append(toks[i].text)
        i += 1
    return "".join(out) if i < len(toks) and toks[i].text in (")", ",") else ""


def _instance(ctx: StackContext, module: JsModule, paren: int) -> list[Pool]:
    here = Source(path=module.file.path, line=module.toks[paren].line)
    args = call_args(module.parser, paren)
    if not args:
        return []  # pg-boss refuses to start without a connection string or options
    arg: Val | None = args[0]  # None: an expression not read here
    if arg is None or not isinstance(arg.value, dict):
        if (arg is not None and (arg.hidden or (known(arg) and isinstance(arg.value, str)))) \
                or _URL_NAME.search(_argument_text(module, paren)):
            # a connection string: pg-pool's default size
            return [ctx.pool(LABEL, DEFAULT_MAX, DEFAULT_SOURCE, route=route_of(
                arg if arg is not None and known(arg) else None, ctx), bound="default",
                note=f"new PgBoss at {here.label()} given a connection string")]
        ctx.unread_size("pg-boss options", here)
        return []
    if get(arg, "db") is not None:
        ctx.notices.append(f"{ctx.container.name}: new PgBoss at {here.label()} runs its SQL "
                           "through the `db` adapter given to it: no pool of its own")
        return []
    route = route_of(get(arg, "connectionString"), ctx)
    pools: list[Pool] = []
    for key in ("max", "poolSize"):
        v = get(arg, key)
        if ctx.hidden_read(LABEL, v):
            return []
        n = as_int(v)
        if n:
            pools.append(ctx.pool(LABEL, n, replace(v.source, key=v.source.key or key),
                                  route=route))
            break
        if v is not None and not known(v) and not v.from_default:
            ctx.unread_size(f"pg-boss {key}", here)
            return []
    else:
        pools.append(ctx.pool(LABEL, DEFAULT_MAX, DEFAULT_SOURCE, route=route, bound="default",
                              note=f"new PgBoss at {here.label()} without max"))
    listen = get(arg, "useListenNotify")
    if listen is not None:
        if ctx.hidden_read(LISTEN, listen):
            return []
        if not known(listen):
            ctx.unread_size("pg-boss useListenNotify", here)
            return []
        if listen.value is True:
            pools.append(ctx.pool(LISTEN, 1, replace(listen.source, key="useListenNotify"),
                                  route=route, note="a pg.Client outside the pool (pg-boss "
                                  "12.21+ db.ts listen)"))
    return pools


def pgboss_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    for module in js_modules(ctx, "pg-boss"):
        names = _bound_names(module.file.text)
        for name, paren in find_calls(module.toks, names, new=True):
            if name in names or name.rsplit(".", 1)[-1] == "PgBoss":
                pools += _instance(ctx, module, paren)
    return pools


def beside_main_stack(ctx: StackContext, pools: list[Pool]) -> list[Pool]:
    """pg-boss is a job queue beside the app's own database library: when pg-boss's are
    the only pools the readers found, the default pool of the stack the dependency files
    name (TypeORM from an ormconfig, a knex the readers did not see) is added, as it is
    for an app whose readers found nothing (advisor.read.apps.identify), so that
    finding pg-boss's pool does not hide the app's own."""
    if not pools or ctx.unknown or not all(p.label in (LABEL, LISTEN) for p in pools):
        return pools
    from advisor.read.apps.identify import PG_BOSS, identified_pools
    from advisor.read.apps.urls import route_from_env

    main = [p for p in identified_pools(ctx, route_from_env(ctx.container.env))
            if p.label != PG_BOSS.label]
    return pools + main
