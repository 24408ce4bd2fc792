"""pgx v5 pgxpool: `pgxpool.New(ctx, connString)` / `pgxpool.ParseConfig(connString)` +
`cfg.MaxConns = N` / `pool_max_conns=N` in the connection string.

Default read in jackc/pgx v5.10.0 pgxpool/pool.go:19,384-386: `defaultMaxConns = 4`,
and when unset `MaxConns = max(4, runtime.NumCPU())`; the same in v4 (v4.18.3
pgxpool/pool.go:18,327-329, `pgxpool.Connect`). runtime.NumCPU counts the CPUs
the process may run on (the node's, unless CPU affinity is set), not the pod's CPU limit.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from msgspec.structs import replace

from advisor.model import CpuFormula, Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.gosource import GoFile, go_files, literal
from advisor.read.apps.jsparse import Tok
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.urls import route_from_env, route_from_url

_INT_TYPES = frozenset({"int", "int32", "int64", "uint32"})
CPU_FORMULA = CpuFormula(per_cpu=1, floor=4, text="max(4, runtime.NumCPU())")


def _pool_max_conns(url: str) -> int | None:
    if "://" in url:
        return parse_int((parse_qs(urlsplit(url).query).get("pool_max_conns") or [None])[-1])
    m = re.search(r"(?:^|\s)pool_max_conns\s*=\s*(\d+)", url)
    return int(m.group(1)) if m else None


def _int_value(g: GoFile, toks: list[Tok], k: int) -> int | None:
    """The integer the expression at toks[k] is, when it is a literal or a constant,
    also inside a conversion (`int32(40)`, `int32(maxConns)`): MaxConns is an int32."""
    if k < len(toks) and literal(g, toks[k]) is not None:
        return parse_int(literal(g, toks[k]))
    if (k + 3 < len(toks) and toks[k].text in _INT_TYPES and toks[k + 1].text == "("
            and toks[k + 3].text == ")" and literal(g, toks[k + 2]) is not None):
        return parse_int(literal(g, toks[k + 2]))
    return None


def _format_max_conns(g: GoFile, toks: list[Tok], start: int, end: int
                      ) -> tuple[int | None, int] | None:
    """pool_max_conns written in a string literal among toks[start:end] (the connection
    string built with fmt.Sprintf or `+`): its value, None when it is a format verb or
    another value not read (`pool_max_conns=%d`), and the literal's line."""
    for tok in toks[start:end]:
        text = literal(g, tok) if tok.kind != "id" else None
        if text is not None and "pool_max_conns" in text:
            m = re.search(r"pool_max_conns\s*=\s*(\d+)(?![\w%])", text)
            return (int(m.group(1)) if m else None), tok.line
    return None


def _major(ctx: StackContext) -> str:
    """"v4" or "v5", as the module's go.mod requires it (v5 when it does not say)."""
    for f in ctx.files("go-mod"):
        m = re.search(r"github\.com/jackc/pgx/(v\d+)\b", f.text)
        if m:
            return m.group(1)
    return "v5"


def pgx_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    for g in go_files(ctx, "pgxpool", frozenset({"MaxConns", "pgxpool"})):
        toks = g.toks
        max_conns: tuple[int, Source] | None = None
        unread: Source | None = None  # MaxConns set to a value not read: not the default
        for i in range(len(toks) - 3):
            if toks[i].text == "." and toks[i + 1].text == "MaxConns" and toks[i + 2].text == "=":
                value = _int_value(g, toks, i + 3)
                src = Source(path=g.file.path, line=toks[i].line, key="MaxConns")
                if value is not None:
                    max_conns = (value, src)
                else:
                    unread = src
        for i in range(len(toks) - 4):
            if not (toks[i].text == "pgxpool" and toks[i + 1].text == "."
                    and toks[i + 2].text in ("New", "ParseConfig", "Connect")
                    and toks[i + 3].text == "("):
                continue
            # the connection string is the last argument: find the call's own `)`
            j, depth = i + 3, 0
            while j < len(toks):
                depth += toks[j].text == "("
                depth -= toks[j].text == ")"
                if depth == 0:
                    break
                j += 1
            url_src = Source(path=g.file.path, line=toks[i].line)
            getenv = j - 4 > i + 3 and toks[j - 1].text == ")" and toks[j - 3].text == "(" \
                and toks[j - 4].text == "Getenv"
            arg = toks[j - 2] if getenv else (toks[j - 1] if j - 1 > i + 3 else None)
            url = literal(g, arg) if arg is not None and not getenv else None
            if getenv:
                name = literal(g, toks[j - 2])
                var = ctx.env(name or "")
                if var is not None and var.value is not None:
                    url, url_src = var.value, replace(var.source, key=name)
            here = Source(path=g.file.path, line=toks[i].line, key=f"pgxpool.{toks[i + 2].text}")
            route: Route | None = route_from_url(url, url_src) if url else \
                route_from_env(ctx.container.env)
            from_url = _pool_max_conns(url) if url else None
            written = None if url or getenv else _format_max_conns(g, toks, i + 4, j)
            if written is not None and written[0] is None:
                unread = unread or Source(path=g.file.path, line=written[1],
                                          key="pool_max_conns")
            elif written is not None and written[0] is not None:
                from_url = written[0]
                url_src = Source(path=g.file.path, line=written[1])
            if max_conns is not None:
                n, src = max_conns
            elif unread is not None:
                ctx.unread_size("pgxpool MaxConns", unread)
                continue
            elif from_url is not None:
                n, src = from_url, replace(url_src, key="pool_max_conns")
            else:
                pools.append(ctx.pool(
                    "pgxpool MaxConns", CPU_FORMULA.at(ctx.cpus),
                    Source.default_of(f"pgx {_major(ctx)} default: max(4, runtime.NumCPU())",
                                      key="MaxConns"),
                    route=route, cpu=CPU_FORMULA, per_process=False,
                    note=f"{here.label()}: no MaxConns / pool_max_conns; NumCPU of the node"))
                continue
            pools.append(ctx.pool("pgxpool MaxConns", n, src, route=route, per_process=False))
    return pools
