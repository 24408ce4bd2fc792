"""Go database/sql (also sqlx, GORM, pgx/stdlib): `sql.Open("postgres"|"pgx", dsn)`
opens connections on demand with no upper bound unless `db.SetMaxOpenConns(n)` with
n > 0 is called (Go standard library database/sql: "If n <= 0, then there is no limit
on the number of open connections. The default is 0 (unlimited)").
"""

from __future__ import annotations

import re

from msgspec import Struct
from msgspec.structs import replace

from advisor.model import Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.gofields import field_limit
from advisor.read.apps.gosource import (
    GoBody,
    GoFile,
    GoFunc,
    body_at,
    call_args,
    enclosing_func,
    go_files,
    go_tree,
    literal,
)
from advisor.read.apps.jsparse import Tok
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


class _Site(Struct, frozen=True):
    """An opener call or a SetMaxOpenConns call, with the named function around it."""

    g: GoFile
    at: int
    body: GoBody | None


class _Bind(Struct, frozen=True):
    """A name an opened *sql.DB is held under: `chain` (`db`, `s.db`) in the function
    whose body starts at toks[start] of `path`, or (start -1) a package variable of the
    folder `path`; ("*", F) is any `x.F` there (a struct field)."""

    path: str
    start: int
    chain: tuple[str, ...]


def go_sql_pools(ctx: StackContext) -> list[Pool]:
    popped = pop_pools(ctx)
    if popped:
        return popped
    files = go_files(ctx, "Open", _OPEN_KEYS)
    # (where, DSN, note on the driver, the call)
    opens: list[tuple[Source, str | None, str, _Site]] = []
    limits: list[tuple[int | None, Source, _Site]] = []
    # the DSN an opener takes from a variable, with the code's default (env_fallback)
    defaults: dict[Source, tuple[str, str, Source]] = {}
    binds: dict[tuple[str, int], list[_Bind]] = {}  # every opener call's, of any database
    for g in files:
        toks = g.toks
        for i in range(len(toks) - 4):
            pkg, dot, fn, paren = toks[i], toks[i + 1], toks[i + 2], toks[i + 3]
            if dot.text != "." or paren.text != "(" or (pkg.text, fn.text) not in _OPENERS:
                continue
            here = Source(path=g.file.path, line=pkg.line, key=f"{pkg.text}.{fn.text}")
            site = _Site(g=g, at=i, body=body_at(g.bodies, i))
            binds[(g.file.path, i)] = _binds(ctx, site)
            if pkg.text == "gorm" and toks[i + 4].text != "postgres":
                continue  # gorm.Open(postgres.Open(dsn), ...): another dialect otherwise
            why = _test_support(ctx, g, site.body, set())
            if why:
                ctx.notices.append(f"{here.label()}: {here.key} is in test support ({why}): "
                                   "not counted")
                continue
            if (unused := _unreferenced_import(ctx, g, site.body)) is not None:
                ctx.notices.append(f"{here.label()}: {here.key} is in {unused}, which none of "
                                   "the files its main package is built from references: "
                                   "not counted")
                continue
            if pkg.text == "gorm":
                dsn_tok = toks[i + 8] if i + 8 < len(toks) else None
            elif pkg.text == "stdlib":
                dsn_tok = None
            else:
                args = call_args(toks, i + 3)
                driver = _driver(ctx, g, args[0] if args else [], i, here)
                if driver is None:
                    continue
                dsn_arg = args[1] if len(args) > 1 else []
                fallback = env_fallback(g, dsn_arg, i) if dsn_arg else None
                if fallback is not None:
                    defaults[here] = fallback
                dsn = _one(resolve(ctx, g, dsn_arg, i)) if dsn_arg and fallback is None \
                    else None
                opens.append((here, dsn, driver, site))
                continue
            dsn = literal(g, dsn_tok) if dsn_tok is not None else None
            opens.append((here, dsn, "", site))
        for i in range(len(toks) - 3):
            if toks[i].text == "SetMaxOpenConns" and toks[i + 1].text == "(":
                value = literal(g, toks[i + 2]) if toks[i + 3].text == ")" else None
                where = Source(path=g.file.path, line=toks[i].line, key="SetMaxOpenConns")
                site = _Site(g=g, at=i, body=body_at(g.bodies, i))
                field = None if value is not None else _field_limit(ctx, g, i)
                if field is not None:  # SetMaxOpenConns(cfg.MaxConn), cfg := config.Load()
                    n, src, how = field
                    limits.append((n, src, site, f"SetMaxOpenConns at {where.label()} "
                                   f"takes {how}"))
                    continue
                limits.append((parse_int(value) if value is not None else None, where,
                               site, ""))
    ties = {id(at): _tied(at, binds) for _, _, at, _ in limits}
    pools: list[Pool] = []
    for here, dsn, driver_note, site in opens:
        route = route_from_url(dsn, here) if dsn else _fallback_route(ctx, defaults.get(here)) \
            or route_from_env(ctx.container.env)
        key = (site.g.file.path, site.at)
        mine = [(n, src, how) for n, src, at, how in limits if key in ties[id(at)]]
        if not mine:
            # a limit whose receiver is none of the names any pool is held under: this
            # pool's only when the module opens no other (a pool kept where this scan
            # does not follow it); else not known, never another pool's limit (review1 F2)
            near = [(n, src) for n, src, at, _ in limits
                    if not ties[id(at)] and _configures(site, at)]
            if near and len(binds) > 1:
                ctx.unknown.append(
                    f"database/sql pool {here.label()}: SetMaxOpenConns at "
                    f"{near[-1][1].label()} is not tied to it (its receiver is not a name "
                    "the pool is held under), and the module opens other pools")
                continue
            mine = [(n, src, how) for n, src, at, how in limits if not ties[id(at)]] \
                if len(binds) == 1 else []
        known = [(n, s, how) for n, s, how in mine if n is not None]
        if known:
            n, src, how = known[-1]
            if n > 0:
                pools.append(ctx.pool("database/sql SetMaxOpenConns", n, src, route=route,
                                      bound="default" if src.default else "fixed",
                                      per_process=False, note=_and(how, driver_note)
                                      if how else driver_note))
                continue
            note = f"SetMaxOpenConns({n}) at {src.label()}: n <= 0 means no limit"
        elif mine:
            src = mine[-1][1]
            configured = config_limit(ctx, "database/sql SetMaxOpenConns")
            if configured == "hidden":
                continue
            if configured is not None:
                n, csrc, how = configured
                bound = "default" if csrc.default else "fixed"
                pools.append(ctx.pool("database/sql SetMaxOpenConns", n, csrc, route=route,
                                      bound=bound, per_process=False,
                                      note=_and(f"SetMaxOpenConns at {src.label()} takes {how}",
                                                driver_note)))
                continue
            # a limit is set, to a value not read here: unknown (PA106), not "no limit"
            ctx.unread_size("database/sql SetMaxOpenConns", src)
            continue
        else:
            note = f"{here.label()}: no SetMaxOpenConns, database/sql default 0 = unlimited"
        pools.append(ctx.pool("database/sql MaxOpenConns", 0, replace(
            here, default="Go database/sql default MaxOpenConns 0 (unlimited)"),
            route=route, bound="unbounded", per_process=False, note=_and(note, driver_note)))
    return pools


def _chain_back(toks: list[Tok], k: int) -> tuple[tuple[str, ...], int] | None:
    """The selector `a.b.c` ending at toks[k], with the index of its first token."""
    if k < 0 or toks[k].kind != "id" or toks[k].text in _KEYWORDS:
        return None
    names = [toks[k].text]
    while k >= 2 and toks[k - 1].text == "." and toks[k - 2].kind == "id":
        k -= 2
        names.append(toks[k].text)
    return tuple(reversed(names)), k


_KEYWORDS = frozenset({"return", "var", "if", "else", "for", "switch", "case", "go", "defer",
                       "func", "range", "select", "const", "type", "package", "import"})


def _assigned(toks: list[Tok], start: int) -> tuple[tuple[str, ...], bool] | None:
    """The first target of the assignment whose value starts at toks[start]
    (`db, err := X`, `var db = X`, `s.db = X`), and whether it is declared there."""
    if start < 1 or toks[start - 1].text != "=":
        return None
    declared = start >= 2 and toks[start - 2].text == ":"
    k = start - (3 if declared else 2)
    first = None
    while (chain := _chain_back(toks, k)) is not None:
        first, k = chain[0], chain[1] - 1
        if k < 0 or toks[k].text != ",":
            break
        k -= 1
    if first is None or first == ("_",):
        return None
    return first, declared or (k >= 0 and toks[k].text == "var")


def _expr_start(toks: list[Tok], at: int) -> int:
    """The first token of the call whose name is toks[at] (`pkg.Name(`: pkg's)."""
    return at - 2 if at >= 2 and toks[at - 1].text == "." else at


def _binds(ctx: StackContext, site: _Site) -> list[_Bind]:
    """The names the *sql.DB opened at `site` is held under: the variable the opener's
    assignment binds, `x, _ := db.DB()` of it (GORM), a struct field it is stored in; a
    function that returns it, the variable each caller assigns the result to; a
    function it is passed to, that parameter (one level each)."""
    g, toks, body = site.g, site.g.toks, site.body
    out: list[_Bind] = []
    start = site.at
    if start >= 1 and toks[start - 1].text == "return" and body is not None:
        returned = True
    else:
        returned = False
        out.extend(_bind_at(g, body, start))
    for b in list(out):
        if b.start < 0 or body is None:
            continue
        for k in range(body.start + 1, body.end):
            # a chain's end only (audit 44: `cfg.Pool.X.X...` walked back from each of
            # its names, quadratic: a 40k-token selector hung the check)
            if (k + 1 < len(toks) and toks[k + 1].text in (".", "(", "[")) or \
                    (found := _chain_back(toks, k)) is None:
                continue
            chain, first = found
            if chain != b.chain:
                continue
            if toks[first - 1].text == "return":
                returned = True
            elif toks[first - 1].text == ":" and toks[first - 2].kind == "id":
                out.append(_Bind(path=_folder(g), start=-1, chain=("*", toks[first - 2].text)))
            elif toks[first - 1].text in ("(", ","):
                out.extend(_passed(ctx, g, first))
        # GORM: `sqlDB, err := db.DB()`
        for k in range(body.start + 1, body.end - 3):
            if toks[k].text == "DB" and toks[k + 1].text == "(" and toks[k + 2].text == ")" \
                    and toks[k - 1].text == ".":
                held = _chain_back(toks, k - 2)
                if held is not None and held[0] == b.chain:
                    out.extend(_bind_at(g, body, held[1]))
    if returned and body is not None:
        for caller, m in _call_sites(ctx, g, body.func):
            out.extend(_bind_at(caller, body_at(caller.bodies, m),
                                _expr_start(caller.toks, m)))
    return out


def _bind_at(g: GoFile, body: GoBody | None, start: int) -> list[_Bind]:
    """The name the value starting at toks[start] is assigned to or stored under."""
    toks = g.toks
    if start >= 2 and toks[start - 1].text == ":" and toks[start - 2].kind == "id":
        return [_Bind(path=_folder(g), start=-1, chain=("*", toks[start - 2].text))]
    found = _assigned(toks, start)
    if found is None:
        return []
    chain, declared = found
    if len(chain) > 1:
        return [_Bind(path=_folder(g), start=-1, chain=("*", chain[-1]))]
    if body is not None and declared:
        return [_Bind(path=g.file.path, start=body.start, chain=chain)]
    # `db, err = sql.Open(...)`: a package variable, or a local declared before
    out = [_Bind(path=_folder(g), start=-1, chain=chain)]
    if body is not None:
        out.append(_Bind(path=g.file.path, start=body.start, chain=chain))
    return out


def _passed(ctx: StackContext, g: GoFile, first: int) -> list[_Bind]:
    """The parameter of the function called with the argument starting at toks[first]."""
    toks = g.toks
    k, depth = first - 1, 0
    while k > 0:  # back to the bracket the argument list opens with
        if toks[k].text in (")", "]", "}"):
            depth += 1
        elif toks[k].text in ("(", "[", "{"):
            if depth == 0:
                break
            depth -= 1
        k -= 1
    if k < 1 or toks[k].text != "(" or toks[k - 1].kind != "id":
        return []
    args = call_args(toks, k)
    pos = next((n for n, a in enumerate(args) if a and a[0] is toks[first]), None)
    name = toks[k - 1].text
    out: list[_Bind] = []
    for other in go_files(ctx, name):
        for b in other.bodies:
            if b.func.name == name and pos is not None and pos < len(b.func.params) \
                    and b.func.params[pos] and _calls(b.func, toks, k - 1, g,
                                                      _folder(other) == _folder(g),
                                                      _package(other), _folder(other)
                                                      .rpartition("/")[2]):
                out.append(_Bind(path=other.file.path, start=b.start,
                                 chain=(b.func.params[pos],)))
    return out


def _package(g: GoFile) -> str | None:
    m = re.search(r"^package\s+(\w+)", g.file.text, re.M)
    return m.group(1) if m else None


def _call_sites(ctx: StackContext, g: GoFile, func: GoFunc) -> list[tuple[GoFile, int]]:
    """Every call of `func` (declared in g) in the module's code: (file, name position)."""
    folder = _folder(g)
    out = []
    for caller in go_files(ctx, func.name):
        toks = caller.toks
        for m in caller.uses(func.name):
            if m + 1 < len(toks) and toks[m + 1].text == "(" and m >= 1 \
                    and _calls(func, toks, m, caller, _folder(caller) == folder,
                               _package(g), folder.rpartition("/")[2]):
                out.append((caller, m))
    return out


def _receivers(limit: _Site) -> set[tuple[str, ...]]:
    """What `X.SetMaxOpenConns(` is called on: X (`db`, `s.db`), and X less a trailing
    `.DB()` (GORM v1, ent) or `.DB` (sqlx's embedded *sql.DB)."""
    toks, k = limit.g.toks, limit.at - 2
    if limit.at < 1 or toks[limit.at - 1].text != ".":
        return set()
    if k >= 3 and toks[k].text == ")" and toks[k - 1].text == "(" and toks[k - 2].text == "DB":
        k -= 2
    found = _chain_back(toks, k)
    if found is None:
        return set()
    chain = found[0]
    return {chain, chain[:-1]} if len(chain) > 1 and chain[-1] == "DB" else {chain}


def _tied(limit: _Site, binds: dict[tuple[str, int], list[_Bind]]) -> set[tuple[str, int]]:
    """The opener calls whose pool the SetMaxOpenConns at `limit` is called on: through a
    name held in its own function if any, else a package variable or a struct field."""
    receivers = _receivers(limit)
    path, folder = limit.g.file.path, _folder(limit.g)
    start = limit.body.start if limit.body else -1
    local = {key for key, bs in binds.items()
             if any(b.start >= 0 and b.path == path and b.start == start and b.chain in receivers
                    for b in bs)}
    if local:
        return local
    return {key for key, bs in binds.items()
            if any(b.start < 0 and b.path == folder
                   and (b.chain in receivers if b.chain[0] != "*"
                        else any(len(r) > 1 and r[-1] == b.chain[1] for r in receivers))
                   for b in bs)}


def _configures(opened: _Site, limit: _Site) -> bool:
    """Whether a SetMaxOpenConns at `limit` tied to no pool (_tied) may be on the *sql.DB
    opened at `opened`: in the same function; in a function that calls the opener's or
    that the opener's calls, one level; for a pool opened at package scope, in its
    package (audit 8b D2: direktiv's test helper's pool took initDB's limit)."""
    if _same(opened, limit) or _calls_in(limit, opened) or _calls_in(opened, limit):
        return True
    return opened.body is None and _folder(opened.g) == _folder(limit.g)


def _folder(g: GoFile) -> str:
    return g.file.path.rpartition("/")[0]


def _same(a: _Site, b: _Site) -> bool:
    return a.g is b.g and (a.body.start if a.body else -1) == (b.body.start if b.body else -1)


def _calls_in(caller: _Site, callee: _Site) -> bool:
    """Whether the function around `caller` calls the function around `callee`."""
    if caller.body is None or callee.body is None:
        return False
    func, toks = callee.body.func, caller.g.toks
    folder, there = _folder(callee.g), _folder(caller.g)
    pkg = re.search(r"^package\s+(\w+)", callee.g.file.text, re.M)
    return any(toks[m].text == func.name and toks[m + 1].text == "("
               and _calls(func, toks, m, caller.g, there == folder, pkg and pkg.group(1),
                          folder.rpartition("/")[2])
               for m in range(caller.body.start + 1, caller.body.end))


# Go test scaffolding a file may import outside _test.go: a process that starts its
# database in a container (testcontainers-go) is a test, not a deployed service.
_TEST_IMPORT = re.compile(r'"github\.com/testcontainers/testcontainers-go[/"]')
# Go's naming for test-fixture constructors (NewTestDB, newTestPostgres, newTest).
_TEST_NAME = re.compile(r"[nN]ewTest(?![a-z])")


def _unreferenced_import(ctx: StackContext, g: GoFile, body: GoBody | None) -> str | None:
    """The function `body` of g when g is a package the main package imports (read with
    it, outside the source folder: source._go_imported_files) and no file read uses its
    name: that binary never runs it (Chandu00756/Taskflow's pkg/database: Connect(), called
    by the org service only, was counted for every service beside the gorm pool each
    opens: 200 a pod where 100 are). A function of the source folder itself stays counted
    (test_support: a minimal module's helper, a registry this scan does not follow)."""
    if body is None or not g.file.rel.startswith("../"):
        return None
    name = body.func.name
    tree = go_tree(ctx)
    if any(tree.file(f).uses(name) for f in ctx.files("go")):
        return None
    return f"func {name}"


def _test_support(ctx: StackContext, g: GoFile, body: GoBody | None, seen: set[str]
                  ) -> str | None:
    """Why the function `body` of g (None: package scope) is only test support, or None.
    Test support: its file imports testcontainers-go; it takes a *testing.T (or TB, B,
    F, M), which only a test can pass; it is named newTest*/NewTest*; or it is
    referenced, and only from _test.go files and from functions that are test support
    themselves. A function referenced nowhere stays counted (a minimal module's helper,
    or one called through a registry this scan does not follow). Worked out from the
    files alone: once per source tree (go_tree), not per container."""
    tree = go_tree(ctx)
    key = ("test-support", g.file.path, str(body.start if body else -1), *sorted(seen))
    if key not in tree.memo:
        tree.memo[key] = _test_support_of(ctx, g, body, seen)
    found = tree.memo[key]
    return found if isinstance(found, str) else None


def _test_support_of(ctx: StackContext, g: GoFile, body: GoBody | None, seen: set[str]
                     ) -> str | None:
    if _TEST_IMPORT.search(g.file.text):
        return f"{g.file.rel} imports testcontainers-go"
    if body is None:
        return None
    name = body.func.name
    if body.testing_param:
        return f"{name} takes a *testing value"
    if _TEST_NAME.match(name):
        return f"{name} is named as a test fixture"
    if name in ("main", "init") or name in seen or len(seen) > 4:
        return None  # the entry points; a cycle or a long chain stays counted
    seen = seen | {name}
    tree = go_tree(ctx)
    files = ctx.files("go")
    # the service's own code first: one use there outside test support ends the search
    # before any _test.go file is tokenized
    for f in files:
        if f.name.endswith("_test.go"):
            continue
        other = tree.file(f)
        for m in other.uses(name):
            around = body_at(other.bodies, m)
            if around is None or not _test_support(ctx, other, around, seen):
                return None
    for f in files:
        if f.name.endswith("_test.go") and tree.file(f).uses(name):
            return f"{name} is referenced only from tests"
    # referenced only from test support outside _test.go files (or nowhere)
    return f"{name} is referenced only from tests" if any(
        tree.file(f).uses(name) for f in files) else None


def _field_limit(ctx: StackContext, g: GoFile, at: int) -> tuple[int, Source, str] | None:
    """SetMaxOpenConns(cfg.Field) at toks[at] with cfg built in the code (gofields)."""
    args = call_args(g.toks, at + 1)
    return field_limit(ctx, g, at, args[0]) if len(args) == 1 else None


def _and(note: str, more: str) -> str:
    return f"{note}; {more}" if more else note


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


# Imports that register a PostgreSQL driver with database/sql (lib/pq's init registers
# "postgres", pgx's stdlib "pgx"), and the go.mod line of the one that does nothing else.
_PG_IMPORT = re.compile(r'"(github\.com/lib/pq|github\.com/jackc/pgx(?:/v\d+)?/stdlib'
                        r'|github\.com/newrelic/go-agent/v3/integrations/nrpq'
                        r'|cloud\.google\.com/go/cloudsqlconn/postgres/\w+'
                        r'|github\.com/GoogleCloudPlatform/cloudsql-proxy/proxy/dialers/postgres)"')


def _pg_import(ctx: StackContext) -> str | None:
    """The PostgreSQL database/sql driver the module imports (a Go file's import, or
    lib/pq required in go.mod), as `path (file)`, or None."""
    for f in ctx.files("go"):
        if f.name.endswith("_test.go"):
            continue
        m = _PG_IMPORT.search(f.text)
        if m:
            return f"{m.group(1)} ({f.rel})"
    for f in ctx.files("go-mod"):
        if re.search(r"^\s*(?:require\s+)?github\.com/lib/pq\s", f.text, re.M):
            return f"github.com/lib/pq ({f.rel})"
    return None


def _package_const(ctx: StackContext, g: GoFile, name: str, pkg: str | None) -> str | None:
    """The literal the constant or variable `name` holds in the package: g's own
    (pkg None, the files of g's folder) or the one imported as `pkg` (a folder of that
    name). None unless every file that assigns it a literal gives the same one."""
    here = g.file.path.rpartition("/")[0]
    values = set()
    for other in go_files(ctx, name):
        folder = other.file.path.rpartition("/")[0]
        if folder != here if pkg is None else folder.rpartition("/")[2] != pkg:
            continue
        if name in other.consts:
            v = literal(other, Tok(kind="id", text=name, line=0))
            if v is not None:
                values.add(v)
    return values.pop() if len(values) == 1 else None


def _value(ctx: StackContext, g: GoFile, arg: list[Tok]) -> str | None:
    """An argument's literal value: a literal, a constant of the file or its package, or
    `pkg.Name` a constant of package pkg."""
    if len(arg) == 1:
        v = literal(g, arg[0])
        if v is None and arg[0].kind == "id":
            v = _package_const(ctx, g, arg[0].text, None)
        return v
    if len(arg) == 3 and arg[1].text == "." and arg[0].kind == arg[2].kind == "id":
        return _package_const(ctx, g, arg[2].text, arg[0].text)
    return None


def resolve(ctx: StackContext, g: GoFile, arg: list[Tok], at: int
            ) -> list[tuple[str | None, Source]]:
    """What the argument `arg` of the call at toks[at] may be: its literal value; or,
    when it is a parameter of the function around the call, what each caller in the
    module passes there (one level: a caller's own parameter is not followed). Empty:
    no caller found; a None value: one not read."""
    here = Source(path=g.file.path, line=g.toks[at].line)
    # a parameter first: it shadows a constant of the same name
    func = enclosing_func(g.toks, at) if len(arg) == 1 and arg[0].kind == "id" else None
    if func is None or arg[0].text not in func.params:
        return [(_value(ctx, g, arg), here)]
    pos = func.params.index(arg[0].text)
    out: list[tuple[str | None, Source]] = []
    folder = g.file.path.rpartition("/")[0]
    pkg = re.search(r"^package\s+(\w+)", g.file.text, re.M)
    for caller in go_files(ctx, func.name):
        there = caller.file.path.rpartition("/")[0]
        if there.rpartition("/")[2].endswith("test"):
            continue  # Go's test-support packages (enttest, httptest): not in the binary
        toks = caller.toks
        for m in range(1, len(toks) - 1):
            if toks[m].text != func.name or toks[m + 1].text != "(" or m in caller.decls:
                continue
            if not _calls(func, toks, m, caller, there == folder, pkg and pkg.group(1),
                          folder.rpartition("/")[2]):
                continue
            args = call_args(toks, m + 1)
            where = Source(path=caller.file.path, line=toks[m].line, key=func.name)
            out.append((_value(ctx, caller, args[pos]) if pos < len(args) else None, where))
    return out


def _calls(func: GoFunc, toks: list[Tok], m: int, caller: GoFile, same_package: bool,
           pkg: str | None, folder: str) -> bool:
    """Whether toks[m] (func's name before `(`) calls func: a method by any `x.Name(`; a
    function unqualified in its own package, else as `pkg.Name(` by its package's name
    or the name its folder is imported under."""
    if toks[m - 1].text != ".":
        return same_package and not func.method
    if func.method or same_package:
        return func.method
    qual = toks[m - 2].text if m >= 2 else ""
    return qual == pkg or re.search(rf'(?m)^\s*(?:import\s+)?{re.escape(qual)}\s+"[^"]*/'
                                    rf'{re.escape(folder)}"', caller.file.text) is not None


def _one(found: list[tuple[str | None, Source]]) -> str | None:
    values = {v for v, _ in found}
    return values.pop() if len(values) == 1 and None not in values else None


def _driver(ctx: StackContext, g: GoFile, arg: list[Tok], at: int, here: Source
            ) -> str | None:
    """Whether the open at toks[at] is a PostgreSQL one: "" when its driver name is a
    PostgreSQL driver's, a note saying why it is counted when that is read through a
    helper's callers or not read at all; None when it is another database's driver.
    A driver not read is a possible PostgreSQL pool when the module imports one."""
    found = resolve(ctx, g, arg, at)
    direct = len(found) == 1 and (found[0][1].path, found[0][1].line) == (here.path, here.line)
    pg = [(v, s) for v, s in found if v in _PG_DRIVERS]
    if pg and direct:
        return ""
    if pg:
        v, s = pg[0]
        return f'driver "{v}" passed at {s.label()}'
    if not found:
        # the helper is called nowhere in the module (a generated client's Open): this
        # binary does not open it
        ctx.notices.append(f"{here.label()}: {here.key} takes its driver name from a "
                           "parameter of a function no code in the module calls: not counted")
        return None
    if all(v is not None for v, _ in found):
        return None  # every caller names another database's driver
    imported = _pg_import(ctx)
    what = "not read statically" if direct else \
        "a parameter its callers do not all pass as a literal"
    if imported is None:
        ctx.notices.append(f"{here.label()}: the driver name of {here.key} is {what} and "
                           "the module imports no PostgreSQL driver: not counted")
        return None
    why = (f"the driver name of {here.key} at {here.label()} is {what}; the module "
           f"imports the PostgreSQL driver {imported}: counted as a possible PostgreSQL pool")
    ctx.notices.append(why)
    return why


_GETENV = frozenset({"Getenv", "LookupEnv"})


def _env_helper_call(g: GoFile, arg: list[Tok]) -> tuple[str, str, int] | None:
    """`getenv("X", "default")` / `config.EnvOr("X", "default")`: a helper whose name says
    it reads the env, given the variable's name and a fallback literal: (X, default,
    line). Its body is not read: the two string literals are taken as name and default."""
    name_at = len(arg) - 1
    while name_at >= 0 and arg[name_at].text != "(":
        name_at -= 1
    if name_at < 1 or arg[-1].text != ")" or "env" not in arg[name_at - 1].text.lower() \
            or arg[name_at - 1].text in _GETENV:
        return None
    args = call_args(arg, name_at)
    if len(args) != 2 or any(len(a) != 1 for a in args):
        return None
    var, default = (literal(g, a[0]) for a in args)
    if var is None or default is None or not args[0][0].text.startswith(('"', "`")):
        return None
    return var, default, arg[name_at - 1].line


def env_fallback(g: GoFile, arg: list[Tok], at: int) -> tuple[str, str, Source] | None:
    """The variable a DSN argument reads and the default the code writes for it when the
    variable is unset: (variable, default DSN, where the default is written). Read from
    the argument itself (`getenv("DATABASE_URL", "postgres://...")`), or from the local
    variable it names, assigned before the call in the same function either by such a
    helper, or by `os.Getenv("X")` followed by `if v == "" { v = "postgres://..." }`."""
    path = g.file.path
    direct = _env_helper_call(g, arg)
    if direct is not None:
        return direct[0], direct[1], Source(path=path, line=direct[2], key=direct[0])
    if len(arg) != 1 or arg[0].kind != "id":
        return None
    name, toks = arg[0].text, g.toks
    func = enclosing_func(toks, at)
    start = func.at if func is not None else 0
    found: tuple[str, str, Source] | None = None
    getenv: str | None = None
    for k in range(start, at - 2):
        if toks[k].text != name or (k > 0 and toks[k - 1].text == "."):
            continue
        if toks[k + 1].text == ":" and toks[k + 2].text == "=":
            first = k + 3
        elif toks[k + 1].text == "=":
            first = k + 2
        else:
            continue
        end = first
        depth = 0
        while end < at and (depth or toks[end].line == toks[k].line):
            depth += toks[end].text in ("(", "[", "{")
            depth -= toks[end].text in (")", "]", "}")
            end += 1
        rhs = toks[first:end]
        helper = _env_helper_call(g, rhs)
        if helper is not None:
            found, getenv = (helper[0], helper[1],
                             Source(path=path, line=helper[2], key=helper[0])), None
        elif len(rhs) == 6 and rhs[0].text == "os" and rhs[2].text == "Getenv":
            found, getenv = None, literal(g, rhs[4])
        elif getenv is not None and len(rhs) == 1 and _inside_empty_check(toks, k, name):
            default = literal(g, rhs[0])
            if default is not None:
                found = (getenv, default, Source(path=path, line=rhs[0].line, key=getenv))
        else:
            found = getenv = None  # assigned something else afterwards
    return found


def _inside_empty_check(toks: list[Tok], k: int, name: str) -> bool:
    """toks[k] (an assignment to `name`) is the body of `if name == "" {`."""
    j = k - 1
    return j >= 5 and toks[j].text == "{" and toks[j - 1].text in ('""', "``") \
        and toks[j - 2].text == "==" and toks[j - 3].text == name and toks[j - 4].text == "if"


def _fallback_route(ctx: StackContext, fallback: tuple[str, str, Source] | None
                    ) -> Route | None:
    """The route of a DSN read from the variable `var` with a default in the code: the
    variable's value when the container sets it; the code's default when it does not
    (neither in its env nor possibly through an envFrom source whose keys are not held);
    None (the container env's route, if any) when it is set to a value not held."""
    if fallback is None:
        return None
    var, default, where = fallback
    set_here = ctx.env(var)
    if set_here is not None and set_here.value:
        return route_from_url(set_here.value, ctx.env_source(var))
    if set_here is not None or ctx.env_from_hidden(var) is not None:
        return None  # set where the repository does not hold the value
    return route_from_url(default, replace(where, key=f"{var} default in code (unset here)"))
