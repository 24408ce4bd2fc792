"""node-postgres: `new Pool({ max, connectionString })` from `pg` (also `pg.Pool`,
`new Pool(...)` from `pg-pool`; the legacy `poolSize` is still honoured), and `new
Client(...)` / `new pg.Client(...)`: one connection per Client made (see node_pg_clients).

Default read from pg-pool 3.14.0 (packages/pg-pool/index.js:89 in brianc/node-postgres):
`this.options.max = this.options.max || this.options.poolSize || 10`, so a max of 0 is
also 10. tests/test_apps_defaults.py runs the installed pg-pool under node to check.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import JsParser, Tok, call_args, find_calls
from advisor.read.apps.jssource import (
    as_int,
    get,
    imports_module,
    js_modules,
    known,
    may_hold,
    options_unread,
    route_of,
)
from advisor.read.apps.npmlock import npm_pin
from advisor.read.apps.pydeps import version_tuple
from advisor.read.apps.pyeval import Val

if TYPE_CHECKING:
    from advisor.read.apps.source import AppSource

DEFAULT_MAX = 10
DEFAULT_SOURCE = Source.default_of("pg-pool 3.14 default (max || poolSize || 10)", key="max")
# every pg-pool 3.x tag, 3.0.0 (index.js:79) to 3.14.0 (:89), has that line
_SAME_DEFAULT = ((3, 0, 0), (3, 14, 0))


def default_source(app: AppSource | None) -> Source:
    """pg-pool's default max cited at the version the app's package-lock.json installs
    when that version's default was checked (the same 10), else at 3.14."""
    pin = npm_pin(app, "pg-pool")
    if pin is None or not _SAME_DEFAULT[0] <= version_tuple(pin[0]) <= _SAME_DEFAULT[1]:
        return DEFAULT_SOURCE
    version, where = pin
    return Source.default_of(f"pg-pool {version} default (max || poolSize || 10; "
                             f"{where.label()} pins pg-pool {version})", key="max")


def node_pg_pools(ctx: StackContext) -> list[Pool]:
    return _pools(ctx) + node_pg_clients(ctx)


def _pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    for module in js_modules(ctx, "Pool", frozenset({"Pool"})):
        if not (imports_module(module, "pg") or imports_module(module, "pg-pool")):
            continue
        for name, paren in find_calls(module.toks, {"Pool"}, new=True):
            if name not in ("Pool", "pg.Pool", "Pg.Pool", "postgres.Pool"):
                continue
            args = call_args(module.parser, paren)
            opts = args[0] if args else None
            here = Source(path=module.file.path, line=module.toks[paren].line)
            url = get(opts, "connectionString")
            route = route_of(url, ctx)
            if route is None:
                host = get(opts, "host")
                if known(host):
                    route = route_of(None, ctx) or _literal_route(opts, host)
            pool = pg_pool_of(ctx, "node-postgres Pool max", opts, here, route,
                              has_args=bool(args), default=default_source(ctx.app),
                              note=f"new Pool at {here.label()} without max")
            if url is not None and url.hidden and route is not None:
                # connectionString from a Secret not held: where it connects is not
                # known, never another variable's URL (route_of's fallback, the
                # container's other pool's: rejourney's pool and readPool). With no
                # such fallback the pool is unplaced already, and said so once.
                pools += ctx.hidden_route([pool] if pool is not None else [],
                                          "node-postgres Pool", url.hidden, url.source)
            elif pool is not None:
                pools.append(pool)
    return pools


def _route(ctx: StackContext, opts: Val | None) -> Route | None:
    """Where a Client's options (a connection string, or an object of them) connect:
    the URL or connectionString, else the container's env, else a literal host."""
    url = opts if known(opts) and isinstance(opts.value, str) else get(opts, "connectionString")
    route = route_of(url, ctx)
    if route is None and known(host := get(opts, "host")):
        route = _literal_route(opts, host)
    return route


# A Client owns one Connection, made in its constructor, and a Client connected once
# cannot connect again ('You cannot reuse a client'): brianc/node-postgres
# packages/pg/lib/client.js, checked at every tag pg@7.15.0 to pg@8.23.0 (at pg@8.8.0,
# c99fb2c: :46-48 and :94).
_CLIENT_CHECKED = ((7, 15, 0), (8, 23, 0))
# callbacks passed to these are run per request (express/koa/fastify routes and
# middleware, http.createServer's listener)
_HANDLERS = frozenset({"get", "post", "put", "patch", "delete", "del", "all", "use",
                       "head", "options", "route", "createServer", "handler"})
_BLOCKS = frozenset({"if", "for", "while", "switch", "catch", "with"})


def node_pg_clients(ctx: StackContext) -> list[Pool]:
    """`new Client(...)` / `new pg.Client(...)` of `pg`: one connection per Client. One
    made at module load (not inside a function, or inside a function run once where it
    is written: `(async () => {...})()`) is 1 per process (thaddavis/express_api_backed_
    by_postgres_db, audit 14 D5); one made in a request handler (`app.get(..., (req, res)
    => { new Client() })`) is one per request in flight, unbounded (PA102); one made in
    another function is made as often as it is called, which is not read: unknown."""
    out: list[Pool] = []
    for module in js_modules(ctx, "Client", frozenset({"Client"})):
        text = module.file.text
        if not imports_module(module, "pg"):
            continue
        toks, parser = module.toks, module.parser
        for name, paren in find_calls(toks, {"Client"}, new=True):
            if not _pg_client_name(name, text):
                continue
            args = call_args(parser, paren)
            opts = args[0] if args else None
            here = Source(path=module.file.path, line=toks[paren].line, key="new Client")
            route = _route(ctx, opts)
            made = _made_where(parser, paren)
            label = "node-postgres Client"
            if made == "function":
                ctx.unknown.append(
                    f"{label} at {here.label()} is made inside a function: one connection "
                    "per call, and how many calls are open at once is not read statically")
            elif made == "handler":
                out.append(ctx.pool(f"{label} (1 connection per request in flight)", 0,
                                    here, route=route, bound="unbounded",
                                    note=f"new {name} at {here.label()} in a request "
                                         f"handler: {_client_why(ctx)}; each request in "
                                         "flight makes its own and nothing bounds them"))
            else:
                out.append(ctx.pool(label, 1, here, route=route,
                                    note=f"new {name} at {here.label()} at module load: "
                                         f"{_client_why(ctx)}"))
    return out


# `{ Client } = require('pg')`, `import { Client } from 'pg'`, `Client = require('pg').Client`
_PG = r"""(?:require\(\s*["']pg["']\s*\)|["']pg["'])"""
_CLIENT_FROM_PG = lazy(r"\{[^}]*\bClient\b[^}]*\}\s*(?:=\s*|from\s+)" + _PG
                       + r"""|\bClient\s*=\s*require\(\s*["']pg["']\s*\)\.Client\b""")


def _pg_client_name(name: str, text: str) -> bool:
    """Whether `name` (`Client`, `pg.Client`) is pg's Client in this module: `Client`
    destructured from pg or assigned `require('pg').Client`, `X.Client` with X bound to
    pg (another library's Client, ssh2's or Elasticsearch's, is not)."""
    if name == "Client":
        return _CLIENT_FROM_PG.search(text) is not None
    head, _, last = name.rpartition(".")
    if last != "Client" or not head or "." in head:
        return False
    h = re.escape(head)
    return re.search(rf"""\b{h}\s*=\s*require\(\s*["']pg["']\s*\)"""
                     rf"""|\bimport\s+(?:\*\s+as\s+)?{h}\s+from\s+["']pg["']""", text) is not None


def _client_why(ctx: StackContext) -> str:
    pin = npm_pin(ctx.app, "pg")
    cited = "pg 8.8.0 packages/pg/lib/client.js:46-48, :94"
    if pin is not None and _CLIENT_CHECKED[0] <= version_tuple(pin[0]) <= _CLIENT_CHECKED[1]:
        cited = f"pg {pin[0]} lib/client.js, {pin[1].label()} pins pg {pin[0]}"
    return f"a Client holds one connection and cannot reconnect ({cited})"


def _made_where(parser: JsParser, paren: int) -> str:
    """"module", "handler" or "function": where the call at `paren` runs, from the
    brackets around it (a block of if/for/try runs where it is written)."""
    toks = parser.t
    opener = _openers(parser)
    q = parser.parent[paren]
    while q != -1:
        if toks[q].text == "{" and _function_body(toks, opener, q):
            end = parser.after.get(q, len(toks))
            if _called_at_once(toks, end):
                q = parser.parent[q]
                continue
            outer = parser.parent[q]
            while outer != -1 and toks[outer].text != "(":
                outer = parser.parent[outer]
            if outer > 0 and toks[outer - 1].kind == "id" and toks[outer - 1].text in _HANDLERS:
                return "handler"
            return "function"
        q = parser.parent[q]
    return "module"


def _openers(parser: JsParser) -> dict[int, int]:
    """Closing bracket index -> its opening one (parser.after holds the other way)."""
    return {end - 1: start for start, end in parser.after.items()}


def _function_body(toks: list[Tok], opener: dict[int, int], brace: int) -> bool:
    """Whether the `{` at `brace` opens a function's body: after `=>`, or after the `)`
    of `function f(...)`, `async (...)` or a method `name(...)`, not of if/for/while;
    a TypeScript return type between them (`async start(): Promise<void> {`) too."""
    if brace == 0:
        return False
    if toks[brace - 1].text == "=>":
        return True
    close = brace - 1
    if toks[close].text != ")":
        # `): Promise<void> {`: back over the type to the `)` before its `:`
        k = close
        while k > 0 and toks[k].text not in (")", ";", "{", "}", "=>", "=", ","):
            k -= 1
        if toks[k].text != ")" or k + 1 >= brace or toks[k + 1].text != ":":
            return False
        close = k
    if (start := opener.get(close)) is None or start == 0:
        return False
    callee = toks[start - 1]
    return callee.text == "function" or (callee.kind == "id" and callee.text not in _BLOCKS)


def _called_at_once(toks: list[Tok], end: int) -> bool:
    """Whether the function whose body ends before `end` is called where it is written:
    `(function () {...})()` / `(async () => {...})()`."""
    return end + 1 < len(toks) and toks[end].text == ")" and toks[end + 1].text == "("


def _literal_route(opts: Val | None, host: Val) -> Route | None:
    """The route a Pool's own options name when the container's env names none: `new
    Pool({host: "postgres", ...})` (annachemicz/cpu_ram_monitoring's backend, audit 14
    D2, whose server printed "fits, peak 0"). Not a fallback's (`process.env.DB_HOST ||
    'localhost'`, from_default) nor a loopback host: those say nothing of the cluster."""
    name = host.value
    if host.from_default or not isinstance(name, str) or not name.strip() or \
            name.strip().lower() in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
        return None
    database, user = get(opts, "database"), get(opts, "user")
    return Route(host=name.strip(), port=as_int(get(opts, "port")),
                 dbname=str(database.value) if known(database) else None,
                 user=str(user.value) if known(user) else None,
                 source=replace(host.source, key=host.source.key or "host"))


def pg_pool_of(ctx: StackContext, label: str, opts: Val | None, here: Source,
               route: Route | None, *, has_args: bool, default: Source,
               note: str) -> Pool | None:
    """The pool pg-pool opens with options `opts` (`max || poolSize || 10`), passed at
    `here`; None when its size is unknown (said in ctx.unknown)."""
    for key in ("max", "poolSize"):
        v = get(opts, key)
        if ctx.hidden_read(label, v):
            return None  # unknown: no pool, and not pg-pool's default
        n = as_int(v)
        if n and v is not None:
            return ctx.pool(label, n, replace(v.source, key=v.source.key or key),
                            route=route, cpu=v.cpu)
        if v is not None and not known(v) and not v.from_default:
            # the code sets a size not read here: unknown, not pg-pool's default
            ctx.unread_size(f"{label.removesuffix(' max')} {key}", here)
            return None
    if has_args and (may_hold(opts, "max") or may_hold(opts, "poolSize")):
        # `new Pool(config)` with config from another module: pg-pool's 10 holds only
        # for options known to set no max
        options_unread(ctx, label, here, "max")
        return None
    return ctx.pool(label, DEFAULT_MAX, default, route=route, bound="default",
                    note=note)
