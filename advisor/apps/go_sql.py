"""Go database/sql (also sqlx, GORM, pgx/stdlib): `sql.Open("postgres"|"pgx", dsn)`
opens connections on demand with no upper bound unless `db.SetMaxOpenConns(n)` with
n > 0 is called (Go standard library database/sql: "If n <= 0, then there is no limit
on the number of open connections. The default is 0 (unlimited)").
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.apps.base import StackContext, parse_int
from advisor.apps.gosource import go_files, literal
from advisor.apps.urls import route_from_env, route_from_url
from advisor.model import Pool, Source

_PG_DRIVERS = {"postgres", "pgx", "pgx/v5", "cloudsqlpostgres", "nrpostgres", "postgresql"}
_OPENERS = {("sql", "Open"), ("sqlx", "Open"), ("sqlx", "Connect"), ("sqlx", "MustConnect"),
            ("sqlx", "MustOpen"), ("stdlib", "OpenDB"), ("gorm", "Open"), ("otelsql", "Open")}


def go_sql_pools(ctx: StackContext) -> list[Pool]:
    files = go_files(ctx, "Open")
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
            ctx.notices.append(f"{src.label()}: SetMaxOpenConns argument not read statically")
            pools.append(ctx.pool("database/sql SetMaxOpenConns", 0, src, route=route,
                                  bound="unbounded", per_process=False,
                                  note="SetMaxOpenConns with an argument not read statically"))
            continue
        else:
            note = f"{here.label()}: no SetMaxOpenConns, database/sql default 0 = unlimited"
        pools.append(ctx.pool("database/sql MaxOpenConns", 0, replace(
            here, default="Go database/sql default MaxOpenConns 0 (unlimited)"),
            route=route, bound="unbounded", per_process=False, note=note))
    return pools
