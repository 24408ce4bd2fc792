"""Go database/sql (also sqlx, GORM, pgx/stdlib): `sql.Open("postgres"|"pgx", dsn)`
opens connections on demand with no upper bound unless `db.SetMaxOpenConns(n)` with
n > 0 is called (Go standard library database/sql: "If n <= 0, then there is no limit
on the number of open connections. The default is 0 (unlimited)").
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.gosource import go_files, literal
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.urls import route_from_env, route_from_url

_PG_DRIVERS = {"postgres", "pgx", "pgx/v5", "cloudsqlpostgres", "nrpostgres", "postgresql"}
_OPENERS = {("sql", "Open"), ("sqlx", "Open"), ("sqlx", "Connect"), ("sqlx", "MustConnect"),
            ("sqlx", "MustOpen"), ("stdlib", "OpenDB"), ("gorm", "Open"), ("otelsql", "Open")}
# A file gives go_sql_pools an opener or a limit only when it holds one of these.
_OPEN_KEYS = frozenset({fn for _, fn in _OPENERS} | {"SetMaxOpenConns"})


def pop_pools(ctx: StackContext) -> list[Pool]:
    """gobuffalo/pop: `pop.ConnectionDetails{..., Pool: x}`; pop's Connection.Open calls
    `db.SetMaxOpenConns(details.Pool)` (gobuffalo/pop connection.go), so 0 or unset is
    database/sql's no limit. x literal, or from configuration (config_limit)."""
    unbounded: list[Pool] = []
    for g in go_files(ctx, "ConnectionDetails", frozenset({"ConnectionDetails"})):
        toks = g.toks
        for i in range(len(toks) - 3):
            if not (toks[i].text == "pop" and toks[i + 1].text == "."
                    and toks[i + 2].text == "ConnectionDetails" and toks[i + 3].text == "{"):
                continue
            here = Source(path=g.file.path, line=toks[i].line, key="pop.ConnectionDetails")
            j, depth = i + 3, 0
            while j < len(toks) - 2:
                depth += toks[j].text == "{"
                depth -= toks[j].text == "}"
                if depth == 0:
                    break
                if depth == 1 and toks[j].text == "Pool" and toks[j + 1].text == ":":
                    value = literal(g, toks[j + 2])
                    n = parse_int(value) if value is not None else None
                    src = Source(path=g.file.path, line=toks[j].line, key="Pool")
                    if n is not None and n > 0:
                        return [ctx.pool("pop ConnectionDetails.Pool", n, src,
                                         per_process=False)]
                    configured = config_limit(ctx, "pop ConnectionDetails.Pool")
                    if configured == "hidden":
                        return []
                    if configured is not None:
                        n, csrc, how = configured
                        return [ctx.pool("pop ConnectionDetails.Pool", n, csrc,
                                         bound="default" if csrc.default else "fixed",
                                         per_process=False,
                                         note=f"Pool at {src.label()} takes {how}")]
                    break
                j += 1
            unbounded = unbounded or [ctx.pool(
                "pop ConnectionDetails.Pool", 0, here, bound="unbounded", per_process=False,
                note="pop passes Pool to SetMaxOpenConns: 0 or unset is no limit")]
    return unbounded


def go_sql_pools(ctx: StackContext) -> list[Pool]:
    popped = pop_pools(ctx)
    if popped:
        return popped
    files = go_files(ctx, "Open", _OPEN_KEYS)
    opens: list[tuple[Source, str | None]] = []
    limits: list[tuple[int | None, Source]] = []
    for g in files:
        toks = g.toks
        for i in range(len(toks) - 4):
            pkg, dot, fn, paren = toks[i], toks[i + 1], toks[i + 2], toks[i + 3]
            if dot.text != "." or paren.text != "(" or (pkg.text, fn.text) not in _OPENERS:
                continue
            here = Source(path=g.file.path, line=pkg.line, key=f"{pkg.text}.{fn.text}")
            if pkg.text == "gorm":
                # gorm.Open(postgres.Open(dsn), ...)
                if toks[i + 4].text != "postgres":
                    continue
                dsn_tok = toks[i + 8] if i + 8 < len(toks) else None
            elif pkg.text == "stdlib":
                dsn_tok = None
            else:
                driver = literal(g, toks[i + 4])
                if driver not in _PG_DRIVERS:
                    continue
                dsn_tok = toks[i + 6] if i + 6 < len(toks) and toks[i + 5].text == "," else None
            dsn = literal(g, dsn_tok) if dsn_tok is not None else None
            opens.append((here, dsn))
        for i in range(len(toks) - 3):
            if toks[i].text == "SetMaxOpenConns" and toks[i + 1].text == "(":
                value = literal(g, toks[i + 2]) if toks[i + 3].text == ")" else None
                limits.append((parse_int(value) if value is not None else None,
                               Source(path=g.file.path, line=toks[i].line,
                                      key="SetMaxOpenConns")))
    pools: list[Pool] = []
    for here, dsn in opens:
        route = route_from_url(dsn, here) if dsn else route_from_env(ctx.container.env)
        known = [(n, s) for n, s in limits if n is not None]
        if known:
            n, src = known[-1]
            if n > 0:
                pools.append(ctx.pool("database/sql SetMaxOpenConns", n, src, route=route,
                                      per_process=False))
                continue
            note = f"SetMaxOpenConns({n}) at {src.label()}: n <= 0 means no limit"
        elif limits:
            src = limits[-1][1]
            configured = config_limit(ctx, "database/sql SetMaxOpenConns")
            if configured == "hidden":
                continue
            if configured is not None:
                n, csrc, how = configured
                bound = "default" if csrc.default else "fixed"
                pools.append(ctx.pool("database/sql SetMaxOpenConns", n, csrc, route=route,
                                      bound=bound, per_process=False,
                                      note=f"SetMaxOpenConns at {src.label()} takes {how}"))
                continue
            # a limit is set, to a value not read here: unknown (PA106), not "no limit"
            ctx.unread_size("database/sql SetMaxOpenConns", src)
            continue
        else:
            note = f"{here.label()}: no SetMaxOpenConns, database/sql default 0 = unlimited"
        pools.append(ctx.pool("database/sql MaxOpenConns", 0, replace(
            here, default="Go database/sql default MaxOpenConns 0 (unlimited)"),
            route=route, bound="unbounded", per_process=False, note=note))
    return pools


# Env names Go services use for their pool limit (miniflux DATABASE_MAX_CONNS, Harbor
# POSTGRESQL_MAX_OPEN_CONNS, supabase auth GOTRUE_DB_MAX_POOL_SIZE, ...).
_LIMIT_NAME = re.compile(r"[A-Z0-9_]*(?:MAX_OPEN_CONNS|MAX_CONNS|MAX_OPEN_CONNECTIONS"
                         r"|MAX_CONNECTIONS|MAX_POOL_SIZE|POOL_SIZE|POOL_MAX)[A-Z0-9_]*")
_DEFAULT_NEAR = re.compile(r"(?:default:\s*\"(\d+)\"|parsedIntValue:\s*(\d+)|,\s*(\d+)\s*\))")


def config_limit(ctx: StackContext, label: str) -> tuple[int, Source, str] | str | None:
    """SetMaxOpenConns(x) with x from configuration: an env name the Go source spells
    (`"DATABASE_MAX_CONNS"`, or an envconfig field such as MaxPoolSize) that the
    container sets, else the default written within three lines of that name
    (`parsedIntValue: 20`, `getenvInt("X", 20)`, `default:"20"`). "hidden" when the
    container sets that name from a Secret or reference whose value is not here: pool
    `label`'s size is then unknown (ctx.unknown), not the default beside the name."""
    names: list[tuple[str, Source, str]] = []  # (env name, where, file text after it)
    for f in ctx.files("go"):
        if f.name.endswith("_test.go"):
            continue
        lines = f.text.splitlines()
        for n, line in enumerate(lines, 1):
            for m in re.finditer(r'"([A-Z][A-Z0-9_]+)"', line):
                if _LIMIT_NAME.fullmatch(m.group(1)):
                    names.append((m.group(1), Source(path=f.path, line=n, key=m.group(1)),
                                  "\n".join(lines[n - 1:n + 3])))
            m = re.search(r"\b(Max(?:Open)?(?:Conns|PoolSize|Connections))\s+int\b.*`", line)
            if m and "split_words" in line:  # envconfig: MaxPoolSize -> MAX_POOL_SIZE
                snake = re.sub(r"(?<!^)(?=[A-Z])", "_", m.group(1)).upper()
                names.append((snake, Source(path=f.path, line=n, key=m.group(1)), line))
    env = ctx.env_map()
    for name, where, _ in names:
        for var in env.values():
            if var.name == name or var.name.endswith("_" + name):
                if var.value is None:
                    ctx.hidden_size(label, var.name, var.source)
                    return "hidden"
                n = parse_int(var.value)
                if n is not None and n > 0:
                    return n, ctx.env_source(var.name), f"{name} ({where.label()})"
    for name, where, text in names:
        m = _DEFAULT_NEAR.search(text)
        if m:
            n = int(next(g for g in m.groups() if g))
            if n > 0:
                return n, Source(path=where.path, line=where.line, key=name,
                                 default=f"{name} default {n} ({where.label()})"), \
                    f"{name}, unset in the container env"
    return None
