"""Prisma ORM (<= 6, Rust query engine): the pool size is the URL's
`connection_limit`; without it the engine uses `num_cpus::get_physical() * 2 + 1`
(prisma/prisma-engines quaint/src/pooled.rs Builder::new at 031bd6305f; the same
expression in the older standalone quaint's PostgresUrl), i.e. physical cores of the
machine the pod runs on, not its CPU limit: num_cpus (1.13 to 1.17, src/linux.rs
get_num_physical_cpus) sums /proc/cpuinfo's `cpu cores` per `physical id` and reads no
cgroup; only where /proc/cpuinfo has no `physical id` (arm64 nodes) does it fall back to
get(), the cgroup CPU quota or the logical CPUs. `pgbouncer=true` marks PgBouncer mode.

The URL comes from schema.prisma's `datasource` (`url = env("DATABASE_URL")` or a literal)
or `new PrismaClient({ datasources: { db: { url } } })` / `datasourceUrl`; a literal
`connection_limit=N` next to PrismaClient in code also counts. Prisma 7 driver adapters
(`new PrismaPg({...})`) open a node-postgres pool instead (see _adapter_pools).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from msgspec.structs import replace

from advisor.model import CpuFormula, Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import call_args, find_calls
from advisor.read.apps.jssource import get, js_modules, route_of
from advisor.read.apps.node_pg import pg_pool_of
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.urls import route_from_url

PRISMA_WHERE = "prisma/prisma-engines@031bd6305f quaint/src/pooled.rs:194"
CPU_FORMULA = CpuFormula(per_cpu=2, plus=1, physical=True,
                         text="num_cpus::get_physical() * 2 + 1")
_DATASOURCE = re.compile(r"datasource\s+\w+\s*\{(?P<body>[^}]*)\}", re.S)


def _schema(ctx: StackContext) -> tuple[str | None, Source | None, bool]:
    """(url, its source, is_postgres) from schema.prisma."""
    for f in ctx.files("prisma"):
        m = _DATASOURCE.search(f.text)
        if not m:
            continue
        body = m.group("body")
        provider = re.search(r"""provider\s*=\s*["'](\w+)["']""", body)
        if provider is None or provider.group(1) not in ("postgresql", "postgres", "cockroachdb"):
            return None, None, False
        line_of = f.text[: m.start("body")].count("\n") + 1
        url = re.search(r"""url\s*=\s*(?:env\(\s*["'](\w+)["']\s*\)|["']([^"']+)["'])""", body)
        if url is None:
            return None, Source(path=f.path, line=line_of), True
        url_line = line_of + body[: url.start()].count("\n")
        if url.group(1):
            var = ctx.env(url.group(1))
            if var is not None and var.value is not None:
                return var.value, replace(var.source, key=url.group(1)), True
            ctx.notices.append(
                f"{f.path}:{url_line}: env({url.group(1)}) is not set in the container with a "
                "known value" + (f" ({url.group(1)} comes from {var.from_ref or 'a reference'}"
                                 "): a connection_limit in that URL would replace the "
                                 "default used here" if var is not None else ""))
            return None, Source(path=f.path, line=url_line, key=url.group(1)), True
        return url.group(2), Source(path=f.path, line=url_line, key="url"), True
    return None, None, False


# The datasource URLs only the Prisma CLI opens: `directUrl` (migrate, db push, db pull;
# psl-core Datasource::load_direct_url, which the schema engine loads and Prisma
# Client's query engine does not: it loads `url`, load_url; prisma/prisma-engines@0025fa80
# psl/psl-core/src/configuration/datasource.rs) and `shadowDatabaseUrl` (migrate dev).
# Prisma's docs say the same ("Configure Prisma Client with PgBouncer": Prisma Migrate
# uses directUrl; Prisma Client uses url).
_CLI_URLS = re.compile(r"""\b(directUrl|shadowDatabaseUrl)\s*=\s*env\(\s*["'](\w+)["']\s*\)""")


def cli_only_variables(ctx: StackContext) -> dict[str, str]:
    """The variables schema.prisma's datasource names as its directUrl or
    shadowDatabaseUrl -> where: the running application opens no connection on them."""
    out: dict[str, str] = {}
    for f in ctx.files("prisma"):
        m = _DATASOURCE.search(f.text)
        if not m:
            continue
        for u in _CLI_URLS.finditer(m.group("body")):
            line = f.text[: m.start("body") + u.start()].count("\n") + 1
            out.setdefault(u.group(2), f"schema.prisma's {u.group(1)} ({f.path}:{line}), "
                           "which only the Prisma CLI opens (migrate, db push), not Prisma "
                           "Client")
        break
    return out


ADAPTER_LABEL = "Prisma adapter-pg (node-postgres) max"
_NEW_PG_POOL = re.compile(r"new\s+(?:[\w$]+\.)?Pool\s*\(")


def _adapter_pools(ctx: StackContext) -> list[Pool] | None:
    """Prisma 7 `new PrismaPg(options)` (@prisma/adapter-pg): the adapter opens a
    node-postgres pool, `this.externalPool ?? new pg.Pool(this.config)` (prisma/prisma
    packages/adapter-pg/src/pg.ts, PrismaPgAdapterFactory.connect), so its size is
    pg-pool's `max` (`max || poolSize || 10`), read from an object literal or a variable
    holding one (`const poolConfig: PoolConfig = {...}`). The first adapter is counted;
    later ones (a replica client, usually behind a condition) are named in a notice."""
    calls = [(module, paren) for module in js_modules(ctx, "PrismaPg")
             for _, paren in find_calls(module.toks, {"PrismaPg"}, new=True)]
    if not calls:
        return None
    (module, paren), *others = calls
    first = Source(path=module.file.path, line=module.toks[paren].line, key="new PrismaPg")
    for other, at in others:
        where = Source(path=other.file.path, line=other.toks[at].line, key="new PrismaPg")
        ctx.notices.append(f"{where.label()}: another PrismaPg adapter (its own pg pool) is "
                           "not counted: it is taken for a conditional replica client")
    args = call_args(module.parser, paren)
    opts = args[0] if args else None
    if opts is None or not isinstance(opts.value, dict):
        first_arg = module.toks[paren + 1] if paren + 1 < len(module.toks) else None
        if (first_arg is not None and first_arg.text == "new") or any(
                _NEW_PG_POOL.search(m.file.text) for m in js_modules(ctx, "Pool")):
            return []  # an existing pg.Pool passed in: the node-postgres reader counts it
    pool = pg_pool_of(ctx, ADAPTER_LABEL, opts, first, route_of(get(opts, "connectionString"),
                                                               ctx),
                      has_args=bool(args), default=Source.default_of(
                          "pg-pool default max 10 (the pool @prisma/adapter-pg creates)",
                          key="max"), note=f"new PrismaPg at {first.label()} sets no max")
    return [pool] if pool is not None else []


def prisma_pools(ctx: StackContext) -> list[Pool]:
    url, url_src, postgres = _schema(ctx)
    if not postgres:
        return []
    adapters = _adapter_pools(ctx)
    if adapters is not None:
        route = route_from_url(url, url_src) if url and url_src else None
        return [replace(p, route=route or p.route) for p in adapters]
    limit = url_limit(ctx, url, url_src) if url and url_src is not None else None
    for module in js_modules(ctx, "connection_limit"):
        if "PrismaClient" not in module.file.text:
            continue
        for m in re.finditer(r"connection_limit=(\d+)", module.file.text):
            line = module.file.text[: m.start()].count("\n") + 1
            limit = (int(m.group(1)), Source(path=module.file.path, line=line,
                                             key="connection_limit"))
    route = route_from_url(url, url_src) if url and url_src else None
    return [limit_pool(ctx, "Prisma connection_limit", limit, route=route)]


def url_limit(ctx: StackContext, url: str, url_src: Source) -> tuple[int, Source] | None:
    """The `connection_limit` a datasource URL sets (the last one, as quaint's query
    parsing keeps it), and where; None when it sets none. `pgbouncer=true` is noticed."""
    query = parse_qs(urlsplit(url).query)
    if (query.get("pgbouncer") or [""])[-1] == "true":
        ctx.notices.append(f"Prisma pgbouncer=true ({url_src.label()})")
    n = parse_int((query.get("connection_limit") or [None])[-1])
    return (n, replace(url_src, key=f"{url_src.key} connection_limit")) \
        if n is not None else None


def limit_pool(ctx: StackContext, label: str, limit: tuple[int, Source] | None, *,
               route: Route | None = None, per_process: bool = True) -> Pool:
    """A Prisma client's pool: `limit` (connection_limit, where), else the engine's
    default from the node's physical cores: the node's CPUs (node-cpus) over its threads
    per core (threads-per-core), the model PA103 shows other node sizes with."""
    if limit is not None:
        return ctx.pool(label, limit[0], limit[1], route=route, per_process=per_process)
    size, model = ctx.cpu_size(CPU_FORMULA)
    return ctx.pool(label, size, Source.default_of(
        f"Prisma <= 6 default: physical CPU cores x 2 + 1 ({PRISMA_WHERE})",
        key="connection_limit"), route=route, cpu=CPU_FORMULA, per_process=per_process,
        note=f"no connection_limit: {CPU_FORMULA.text} of the node (not the pod CPU limit) "
             f"on {ctx.node.counted_text(model)}")
