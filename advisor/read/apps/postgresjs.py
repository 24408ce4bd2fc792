"""postgres.js (the `postgres` package): `postgres(url?, { max })` opens up to `max`
connections per process. Read from porsager/postgres src/index.js parseOptions (3.4.5
and 4.2.0 alike): the option `max`, else the URL's `?max=`, else the env PGMAX, else 10
(3 under Cloudflare Workers, not a Kubernetes pod).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import call_args, find_calls
from advisor.read.apps.jssource import as_int, get, imports_module, js_modules, known, route_of
from advisor.read.apps.numbers import parse_int

LABEL = "postgres.js max"
DEFAULT_MAX = 10
DEFAULT_SOURCE = Source.default_of("postgres.js 3.4/4.2 default max 10 (parseOptions)",
                                   key="max")


def postgresjs_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    for module in js_modules(ctx, "postgres", frozenset({"postgres"})):
        if not imports_module(module, "postgres"):
            continue
        for name, paren in find_calls(module.toks, {"postgres"}, new=False):
            if name != "postgres":
                continue
            args = call_args(module.parser, paren)
            here = Source(path=module.file.path, line=module.toks[paren].line, key="max")
            first = args[0] if args else None
            url = first if known(first) and isinstance(first.value, str) else None
            opts = first if known(first) and isinstance(first.value, dict) else \
                (args[1] if len(args) > 1 else None)
            route = route_of(url, ctx)
            v = get(opts, "max")
            if ctx.hidden_read(LABEL, v):
                continue  # unknown: set from a Secret, not the default
            n = as_int(v)
            if n:
                pools.append(ctx.pool(LABEL, n, replace(v.source, key=v.source.key or "max"),
                                      route=route))
                continue
            if v is not None and not known(v) and not v.from_default:
                ctx.unread_size(LABEL, here)
                continue
            in_url = _url_max(url.value) if url is not None else None
            if in_url is not None:
                pools.append(ctx.pool(LABEL, in_url, replace(url.source, key="?max"),
                                      route=route))
                continue
            env = ctx.env("PGMAX")
            if env is not None:
                if env.value is None:
                    ctx.hidden_size(LABEL, "PGMAX", ctx.env_source("PGMAX"))
                    continue
                if (m := parse_int(env.value)) is not None and m > 0:
                    pools.append(ctx.pool(LABEL, m, ctx.env_source("PGMAX"), route=route))
                    continue
            pools.append(ctx.pool(LABEL, DEFAULT_MAX, DEFAULT_SOURCE, route=route,
                                  bound="default", note=f"postgres() at {here.label()} "
                                  "without max"))
    return pools


def _url_max(url: str) -> int | None:
    try:
        values = parse_qs(urlsplit(url).query).get("max")
    except ValueError:
        return None
    return parse_int(values[-1]) if values else None
