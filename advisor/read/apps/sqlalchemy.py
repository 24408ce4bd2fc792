"""SQLAlchemy engines: `create_engine(url, pool_size=, max_overflow=, poolclass=)`,
`create_async_engine(...)`, and Flask-SQLAlchemy's SQLALCHEMY_ENGINE_OPTIONS (2.x:
SQLALCHEMY_POOL_SIZE / SQLALCHEMY_MAX_OVERFLOW) /
`SQLAlchemy(engine_options=...)` / SQLALCHEMY_BINDS (one engine, so one pool, per bind).

A QueuePool holds at most pool_size + max_overflow connections; defaults verified by
introspection in tests/test_apps_defaults.py (SQLAlchemy 2.1.9:
QueuePool(pool_size=5, max_overflow=10)). max_overflow=-1 means no limit; NullPool opens
a connection per checkout (no limit either); StaticPool/SingletonThreadPool/AssertionPool
hold one.
"""

from __future__ import annotations

import ast
import re

from msgspec import Struct
from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import Pool, Route, Source, Term
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.pyentry import (
    Arm,
    arm_paths,
    entry_paths,
    loads_by_name,
    python_tree,
    reachable,
)
from advisor.read.apps.pyeval import (
    PyScope,
    Val,
    block_names,
    dotted,
    is_unknown,
    module_names,
    parse,
)
from advisor.read.apps.pyrequests import request_functions, thrown_away
from advisor.read.apps.pysource import (
    PyModule,
    arg,
    calls,
    imports,
    kwarg,
    local_scope,
    nodes_of,
    python_modules,
    value_of,
)
from advisor.read.apps.urls import route_from_env, route_from_url

DEFAULT_POOL_SIZE = 5
DEFAULT_MAX_OVERFLOW = 10
DEFAULT_WHO = "SQLAlchemy 2.x QueuePool default"
_ONE_CONNECTION = {"StaticPool", "SingletonThreadPool", "AssertionPool"}
_OTHER_DATABASES = ("sqlite", "mysql", "mariadb", "oracle", "mssql")


class Opt(Struct, frozen=True):
    val: Val | None  # None: written but not readable statically
    text: str  # as written, for messages
    line: int | None
    hidden: Val | None = None  # the value, when it reads a secret-set variable (unknown)


def _opt(module: PyModule, node: ast.expr | None, scope: PyScope | None = None
         ) -> Opt | None:
    if node is None:
        return None
    v = value_of(module, node, scope)
    return Opt(None if v is None or is_unknown(v) else v, ast.unparse(node), node.lineno,
               v if v is not None and v.hidden else None)


def _opt_from_val(v: Val) -> Opt:
    return Opt(None if is_unknown(v) else v, repr(v.value), v.source.line,
               v if v.hidden else None)


def route_of_url(v: Val | None, ctx: StackContext) -> tuple[Route | None, bool]:
    """(route, is_postgres) for a SQLAlchemy-style URL value; unknown URLs count as
    PostgreSQL and the route falls back to the container env."""
    if v is None or is_unknown(v) or not isinstance(v.value, str):
        return route_from_env(ctx.container.env), True
    url = v.value
    if url.split(":", 1)[0].lower().startswith(_OTHER_DATABASES):
        return None, False
    plain = "postgresql://" + url.split("://", 1)[1] if "://" in url else url  # drop +driver
    return route_from_url(plain, v.source), True


def _int(opt: Opt | None, name: str, default: int, where: str) -> tuple[int, str, bool]:
    """(value, how it reads in the label, default used); an option written but not read
    is left unknown before (pool_from_options), never this default."""
    n = parse_int(str(opt.val.value)) if opt is not None and opt.val is not None else None
    if opt is None or opt.val is None or n is None:
        return default, f"{name} {default} (default)", True
    src = opt.val.source
    from_elsewhere = src.path is not None and src.path != where
    return n, f"{name} {n}" + (f" ({src.key}, {src.label()})" if from_elsewhere else ""), False


def pool_from_options(path: str, line: int | None, options: dict[str, Opt | None],
                      route: Route | None, label: str, ctx: StackContext) -> Pool | None:
    """The pool these create_engine options make; None when its size is unknown (read
    from a secret-set variable: ctx.unknown says so)."""
    src = Source(path=path, line=line, key="pool_size + max_overflow")
    poolclass = options.get("poolclass")
    pc = poolclass.text.rsplit(".", 1)[-1] if poolclass is not None else ""
    if pc == "NullPool":
        return ctx.pool(f"{label} NullPool", 0, replace(src, key="poolclass"),
                        route=route, bound="unbounded",
                        note="NullPool: a new connection per checkout, no limit per process")
    if pc in _ONE_CONNECTION:
        return ctx.pool(f"{label} {pc}", 1, replace(src, key="poolclass"),
                        route=route)
    sized = (options.get("pool_size"), options.get("max_overflow"))
    if ctx.hidden_read(f"{label} pool_size + max_overflow",
                       *(o.hidden for o in sized if o is not None)):
        return None
    for name, opt in zip(("pool_size", "max_overflow"), sized, strict=True):
        if opt is not None and (opt.val is None or parse_int(str(opt.val.value)) is None):
            # written, to an expression not read: unknown (PA106), not SQLAlchemy's
            # default, which does not apply (audit 21: `pool_size=self.settings.X` was
            # 5 + 10 while the settings said 20 + 10)
            ctx.unread_size(f"{label} {name} ({opt.text})", Source(path=path, line=opt.line))
            return None
    size, size_text, size_default = _int(options.get("pool_size"), "pool_size",
                                         DEFAULT_POOL_SIZE, path)
    over, over_text, over_default = _int(options.get("max_overflow"), "max_overflow",
                                         DEFAULT_MAX_OVERFLOW, path)
    name = f"{label} pool_size + max_overflow"
    if over < 0:
        return ctx.pool(name, size, src, route=route, bound="unbounded",
                        size_label=f"{label} {size_text} + {over_text}",
                        note="max_overflow=-1: no limit on overflow connections")
    parts = [_part(options.get("pool_size"), "pool_size", size, size_default, path, line),
             _part(options.get("max_overflow"), "max_overflow", over, over_default, path,
                   line)]
    if size_default and over_default:
        src = Source(path=path, line=line, key=f"{DEFAULT_WHO}: pool_size 5 + max_overflow 10")
        return replace(ctx.pool(name, size + over, src, route=route, bound="default",
                                size_label=f"{label} {size_text} + {over_text}",
                                note=f"{DEFAULT_WHO} applied (pool_size 5 + max_overflow 10)"),
                       parts=parts)
    return replace(ctx.pool(name, size + over, src, route=route,
                            size_label=f"{label} {size_text} + {over_text}"), parts=parts)


def _part(opt: Opt | None, name: str, value: int, default: bool, path: str,
          line: int | None) -> Term:
    """One setting of the QueuePool's size where it is written (the keyword at the call,
    or the variable it reads), for advise to edit there; a default at no line."""
    if default or opt is None or opt.val is None:
        return Term(label=name, value=value,
                    source=Source.default_of(f"{DEFAULT_WHO}: {name} {value}", key=name))
    src = opt.val.source
    if src.key is None and (src.path, src.line) == (path, opt.line or line):
        src = replace(src, key=name)  # the literal at the call: after `pool_size=` there
    return Term(label=name, value=value, source=src)


class _Placed(Struct):
    """An engine call as the process makes it: at its own line, or at a call of the app
    function it is written in (a factory: one engine per call), with the if/elif arms
    around it there, and the statement that call is in."""

    module: PyModule
    call: ast.Call  # the create_engine call
    site: PyModule
    at: ast.Call  # where the engine is made: the call itself or a call of its factory
    arms: tuple[Arm, ...]
    stmt: ast.stmt | None
    func: str  # the function the engine call is written in ("" at module level)
    own_stmt: ast.stmt | None = None  # the engine call's statement, in its factory


_SCRIPT_DIRS = frozenset({"scripts", "script", "tests", "tools", "dev", "devtools"})


def _served_modules(ctx: StackContext) -> list[PyModule]:
    """The modules that may make the serving process's engines: those its entry module
    imports when the command names one among the app's files; else every module but
    those under scripts/, tests/ (developer scripts, not the image's process)."""
    modules = [m for m in python_modules(ctx, "create_")
               if not _SCRIPT_DIRS & set(m.file.rel.split("/")[:-1])]
    entries = entry_paths(ctx)
    reached = reachable(ctx, entries) if entries else None
    if reached is None:
        return modules
    served = [m for m in modules if m.file.path in reached]
    if any(_engine_calls(m) for m in served) or not any(_engine_calls(m) for m in modules):
        return served
    by_name = loads_by_name(ctx, reached)
    if by_name is None:
        # every module the process runs is read and none loads another by name: the
        # folder's engines are another process's (arq worker beside the API)
        ctx.notices.append(f"{ctx.container.name}: no SQLAlchemy engine is made by a "
                           f"module {entries[0]} imports, and none of them loads a module "
                           "by name: the application source's engines are not this "
                           "process's")
        return served
    ctx.notices.append(f"{ctx.container.name}: no SQLAlchemy engine is made by a module "
                       f"{entries[0]} imports; every engine of the application source is "
                       f"counted (an upper bound: {by_name} may load a module by name, "
                       "which is not followed)")
    return modules


def _app_defined(module: PyModule, name: str) -> bool:
    """`name` is the app's own function, not SQLAlchemy's: defined in the module, or
    imported from a module that is not sqlalchemy's (phoenix.db.engines.create_engine,
    a wrapper whose own engines are read where it calls SQLAlchemy)."""
    for node in module.tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return True
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name
                                                    for a in node.names):
            return bool(node.level) or not (node.module or "").startswith(
                ("sqlalchemy", "sqlmodel", "flask_sqlalchemy"))
    return False


def _engine_calls(module: PyModule) -> list[ast.Call]:
    return [call for call, name in calls(module, {"create_engine", "create_async_engine"})
            if "." in name or not _app_defined(module, name)]


def _functions(module: PyModule) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return nodes_of(module.tree, (ast.FunctionDef, ast.AsyncFunctionDef))


def _placed(modules: list[PyModule]) -> list[_Placed]:
    """Each engine call at each call of the function it is written in, when the served
    modules call that function (by name); else at its own line."""
    arms = {m.file.path: arm_paths(m.file.path, m.tree.body) for m in modules}
    out: list[_Placed] = []
    for module in modules:
        funcs = _functions(module)
        for call in _engine_calls(module):
            around = [f for f in funcs if f.lineno <= call.lineno <= (f.end_lineno or 0)]
            func = max(around, key=lambda f: f.lineno) if around else None
            inner, stmt = arms[module.file.path].get(id(call), ((), None))
            own = _Placed(module=module, call=call, site=module, at=call, arms=inner,
                          stmt=stmt, func=func.name if func else "")
            sites = [] if func is None else [
                (m, c) for m in modules for c, name in calls(m, {func.name})
                if not (m is module and func.lineno <= c.lineno <= (func.end_lineno or 0))
                and _calls_it(module, func, m, c, name)]
            if not sites:
                out.append(own)
                continue
            for site, at in sites:
                outer, site_stmt = arms[site.file.path].get(id(at), ((), None))
                # the arms inside the factory are nested in those at its call
                out.append(_Placed(module=module, call=call, site=site, at=at,
                                   arms=(*outer, *inner), stmt=site_stmt, func=func.name,
                                   own_stmt=stmt))
    return out


def _owner(module: PyModule, func: ast.FunctionDef | ast.AsyncFunctionDef
           ) -> ast.ClassDef | None:
    """The class `func` is a method of (defined directly in its body), else None."""
    return next((n for n in nodes_of(module.tree, ast.ClassDef)
                 if any(b is func for b in n.body)), None)


def _calls_it(module: PyModule, func: ast.FunctionDef | ast.AsyncFunctionDef,
              site: PyModule, call: ast.Call, name: str) -> bool:
    """Whether a call named like the factory calls it. A method is called through
    `self.`/`cls.` in its own class, or through its class or an instance elsewhere: a
    `self.get_connection()` of another class, or a bare `get_connection()`, calls another
    function of that name (DrDroidLab/PlayBooks: the get_connection of its 15 other
    connectors were each counted as an engine of the SQL connector's)."""
    owner = _owner(module, func)
    if owner is None:
        return True
    head = name.rsplit(".", 1)[0] if "." in name else ""
    if head in ("self", "cls"):
        return site is module and owner.lineno <= call.lineno <= (owner.end_lineno or 0)
    if not head:
        return False
    return site is module or any(
        any((a.asname or a.name) == owner.name for a in n.names)
        for n in nodes_of(site.tree, ast.ImportFrom))


def _sqlite_only(p: _Placed) -> bool:
    """Made only for SQLite: in an `if ... sqlite` arm, in a function named for SQLite,
    or connecting through a SQLite connection factory (`async_creator=sqlite_...`)."""
    if any(a.sqlite for a in p.arms) or "sqlite" in p.func.lower():
        return True
    return any(k.arg in ("creator", "async_creator") and "sqlite" in ast.unparse(k.value).lower()
               for k in p.call.keywords)


def _migration_target(p: _Placed) -> str | None:
    """The name an engine made for migrations is assigned to (in its factory or where the
    factory is called): one named for migrations, or one the function passes to a
    migration call (`migrate_in_thread(engine)`)."""
    for module, stmt in ((p.module, p.own_stmt), (p.site, p.stmt)):
        if not isinstance(stmt, ast.Assign) or not isinstance(stmt.targets[0], ast.Name):
            continue
        target = stmt.targets[0].id
        if "migrat" in target.lower():
            return target
        for call, _name in calls(module, {"migrate", "migrate_in_thread", "run_migrations",
                                          "upgrade", "migrate_db"}):
            if any(isinstance(a, ast.Name) and a.id == target for a in call.args):
                return target
    return None


def _options(p: _Placed) -> dict[str, Opt | None]:
    """The engine's pool options: written at its call, or passed by the factory's caller
    through `**kwargs` (`create_aws_engine(..., poolclass=NullPool)`)."""
    scope = local_scope(p.module, p.call)
    options = {k: _opt(p.module, kwarg(p.call, k), scope)
               for k in ("pool_size", "max_overflow", "poolclass")}
    if p.at is not p.call and any(k.arg is None for k in p.call.keywords):
        site_scope = local_scope(p.site, p.at)
        for k in options:
            if options[k] is None and kwarg(p.at, k) is not None:
                options[k] = _opt(p.site, kwarg(p.at, k), site_scope)
    return options


# what an engine is used for when nothing keeps it: a connection out of its pool
_ENGINE_USES = frozenset({"connect", "begin", "raw_connection", "execute", "dispose"})


def _per_request(p: _Placed, per_request: set[int]) -> bool:
    """The engine is made in a function a request handler runs and is thrown away when
    that function returns (not returned, stored or cached): a new engine, so a new
    pool, per request."""
    around = [f for f in _functions(p.module)
              if f.lineno <= p.call.lineno <= (f.end_lineno or 0)]
    func = max(around, key=lambda f: f.lineno) if around else None
    return func is not None and id(func) in per_request and \
        thrown_away(func, p.call, _ENGINE_USES)


def _all_trees(ctx: StackContext, modules: list[PyModule]) -> list[ast.Module]:
    """Every module of the application (the handlers that call an engine's factory need
    not mention create_), those already read as they are."""
    known = {m.file.path: m.tree for m in modules}
    for f in ctx.files("python"):
        if f.path not in known and not _SCRIPT_DIRS & set(f.rel.split("/")[:-1]):
            tree = python_tree(ctx, f)[0]
            if tree is not None:
                known[f.path] = tree
    return list(known.values())


def _request_engine(p: _Placed, route: Route | None, ctx: StackContext) -> Pool:
    """An engine made per request: each request in flight opens a connection of its
    own new pool, and one not disposed keeps it open until the cyclic garbage collector
    frees the engine (create_engine's first_connect listener on the pool closes over
    the engine: sqlalchemy 2.0.36 lib/sqlalchemy/engine/create.py:729-766), so nothing
    bounds them (PA102); under Flask's dev server a thread serves each request (flask
    3.1.0 app.py:655 `options.setdefault("threaded", True)`)."""
    here = Source(path=p.module.file.path, line=p.call.lineno, key="create_engine")
    site = f" (called at {p.site.file.path}:{p.at.lineno})" if p.at is not p.call else ""
    return ctx.pool("SQLAlchemy engine made per request (1 connection per request in "
                    "flight, each its own pool)", 0, here, route=route, bound="unbounded",
                    note=f"create_engine at {here.label()} in {p.func}(){site}, "
                         "which a request handler runs, and the engine is not kept: a new "
                         "pool per call, its connections open until the engine is garbage "
                         "collected; nothing bounds them")


def _engines(ctx: StackContext) -> list[Pool]:
    chosen: list[tuple[_Placed, Pool]] = []
    modules = _served_modules(ctx)
    placed = _placed(modules)
    # only an engine made inside a function may be made per request
    per_request = request_functions(_all_trees(ctx, modules)) if any(
        p.func for p in placed) else set()
    made: set[int] = set()
    for p in placed:
        if _sqlite_only(p):
            continue
        scope = local_scope(p.module, p.call)
        url = value_of(p.module, arg(p.call, 0, "url"), scope)
        route, postgres = route_of_url(url, ctx)
        if not postgres:
            continue
        given = _given_at_run_time(p, ctx) if is_unknown(url) else ""
        if per_request and _per_request(p, per_request):
            if id(p.call) not in made:  # one pool per request, whichever caller it has
                made.add(id(p.call))
                chosen.append((p, _request_engine(p, None if given else route, ctx)))
            continue
        options = _options(p)
        poolclass = options.get("poolclass")
        migration = _migration_target(p)
        if migration and poolclass is not None and poolclass.text.endswith("NullPool"):
            # NullPool closes each connection on return (sqlalchemy/sqlalchemy@f35da7e2
            # lib/sqlalchemy/pool/impl.py:297-301): a migration run holds none after it
            ctx.notices.append(
                f"{p.site.file.path}:{p.at.lineno}: SQLAlchemy NullPool engine "
                f"({p.module.file.path}:{p.call.lineno}) assigned to {migration} runs "
                "migrations; NullPool closes each connection on return: not counted at peak")
            continue
        pool = pool_from_options(p.module.file.path, p.call.lineno, options, route,
                                 "SQLAlchemy", ctx)
        if pool is not None and given:
            if given not in ctx.unrouted:
                ctx.unrouted.append(given)
            pool = replace(pool, route=None, route_unknown=given)
        if pool is not None:
            chosen.append((p, pool))
    return _alternatives(chosen)


# a parameter named for a database URL or the settings: a caller's caller may pass the
# container's own
_SETTINGS_WORDS = lazy(r"url|uri|dsn|conn_?str|environ|getenv|setting|config", re.I)


def _url_parameter(p: _Placed) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.arg,
                                        ast.ClassDef | None] | None:
    """The parameter the engine's URL is: one of the function it is made in, or, for
    `self.X`, the one of its class's __init__ that __init__ assigns to self.X as is;
    with that class (None for a plain function's parameter)."""
    node = arg(p.call, 0, "url")
    funcs = [f for f in _functions(p.module) if f.lineno <= p.call.lineno <= (f.end_lineno or 0)]
    if node is None or not funcs:
        return None
    func = max(funcs, key=lambda f: f.lineno)
    name = dotted(node)
    if isinstance(node, ast.Name):
        params = {a.arg: a for a in (*func.args.posonlyargs, *func.args.args,
                                      *func.args.kwonlyargs)}
        reassigned = any(isinstance(n, ast.Assign) and any(dotted(t) == name for t in n.targets)
                         for n in ast.walk(func))
        return (func, params[name], None) if name in params and not reassigned else None
    owner = _owner(p.module, func)
    if not name.startswith("self.") or name.count(".") != 1 or owner is None:
        return None
    init = next((f for f in owner.body if isinstance(f, ast.FunctionDef)
                 and f.name == "__init__"), None)
    if init is None:
        return None
    params = {a.arg: a for a in (*init.args.args[1:], *init.args.kwonlyargs)}
    sets = [s.value for s in ast.walk(init) if isinstance(s, ast.Assign)
            and any(dotted(t) == name for t in s.targets)]
    if len(sets) == 1 and isinstance(sets[0], ast.Name) and sets[0].id in params:
        return init, params[sets[0].id], owner
    return None


def _passed(call: ast.Call, func: ast.FunctionDef | ast.AsyncFunctionDef, param: ast.arg,
            method: bool) -> ast.expr | None:
    """What `call` passes for `param`: its keyword, its position, or a `**mapping`."""
    if (found := kwarg(call, param.arg)) is not None:
        return found
    positional = [*func.args.posonlyargs, *func.args.args][1 if method else 0:]
    index = next((i for i, a in enumerate(positional) if a is param), None)
    if index is not None and index < len(call.args) \
            and not any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg is None), None)


def _read_names(node: ast.expr, func: ast.FunctionDef | ast.AsyncFunctionDef | None
                ) -> set[str]:
    """The names `node` reads (not those it calls), and, for a name, those of what
    `func` assigns it from."""
    values = [node]
    if isinstance(node, ast.Name) and func is not None:
        values += [s.value for s in ast.walk(func) if isinstance(s, ast.Assign)
                   and any(dotted(t) == node.id for t in s.targets)]
    called = {id(n.func) for v in values for n in ast.walk(v) if isinstance(n, ast.Call)}
    return {n.id for v in values for n in ast.walk(v)
            if isinstance(n, ast.Name) and id(n) not in called and n is not node} | (
        {node.id} if isinstance(node, ast.Name) and len(values) == 1 else set())


def _runtime_data(module: PyModule, call: ast.Call, node: ast.expr) -> bool:
    """Whether `node`, passed at `call`, is built only from what the calling function
    receives as parameters (a connector object a request or task hands it), none named
    for a URL or the settings: data read at run time, not the container's settings."""
    funcs = [f for f in _functions(module) if f.lineno <= call.lineno <= (f.end_lineno or 0)]
    func = max(funcs, key=lambda f: f.lineno) if funcs else None
    if func is None or not is_unknown(value_of(module, node, local_scope(module, call))):
        return False
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)
              } - {"self", "cls"}
    names = _read_names(node, func)
    return bool(names) and names <= params and not any(_SETTINGS_WORDS.search(n) for n in names)


def _given_at_run_time(p: _Placed, ctx: StackContext) -> str:
    """Why the engine's database is not the container's, or "": its URL is a parameter
    (of its function, or of its class's __init__ kept as self.X) that every call the
    application makes passes data its caller receives at run time (DrDroidLab/PlayBooks:
    DBConnectionStringProcessor(**generate_credentials_dict(connector.type,
    connector.keys)), the credentials of a database a user configures). A value read
    here, or anything else, may be the container's: no call found is not known either."""
    found = _url_parameter(p)
    if found is None:
        return ""
    func, param, owner = found
    if owner is None:
        sites = [(p.site, p.at)] if p.at is not p.call else []
    else:
        sites = [(m, c) for m in python_modules(ctx, owner.name)
                 for c, name in calls(m, {owner.name})
                 if name.rsplit(".", 1)[-1] == owner.name]
    if not sites:
        return ""
    for module, call in sites:
        node = _passed(call, func, param, owner is not None)
        if node is None or not _runtime_data(module, call, node):
            return ""
    where = ", ".join(f"{m.file.path}:{c.lineno}" for m, c in sites[:3])
    what = f"{owner.name}.__init__" if owner is not None else f"{func.name}()"
    return (f"SQLAlchemy engine at {p.module.file.path}:{p.call.lineno}: its URL is the "
            f"parameter {param.arg} of {what}, which the application passes data its "
            f"caller receives at run time ({where}), not the container's database "
            "settings: a database configured while it runs, so where it connects is not "
            "known")


def _weight(pools: list[Pool]) -> tuple[bool, float]:
    return any(q.bound == "unbounded" for q in pools), sum(q.per_pod() for q in pools)


def _alternatives(chosen: list[tuple[_Placed, Pool]]) -> list[Pool]:
    """Engines in different arms of one if/elif/else chain are alternatives: the arm
    that makes the most connections counts, said in its pools' notes. Split on the chain
    that most engines sit in, then within each arm and among the rest; engines
    exclusive only through another chain are summed (an upper bound)."""
    seen: dict[str, set[int]] = {}
    for p, _ in chosen:
        for arm in p.arms:
            seen.setdefault(arm.chain, set()).add(arm.index)
    split = [c for c, indices in seen.items() if len(indices) > 1]
    if not split:
        return [pool for _, pool in chosen]
    chain = max(split, key=lambda c: sum(any(a.chain == c for a in p.arms) for p, _ in chosen))
    rest = [(p, q) for p, q in chosen if not any(a.chain == chain for a in p.arms)]
    arms: dict[int, list[tuple[_Placed, Pool]]] = {}
    for p, q in chosen:
        index = next((a.index for a in p.arms if a.chain == chain), None)
        if index is not None:
            arms.setdefault(index, []).append((p, q))
    # on a tie the later arm (the `else`: no optional setting turned on) is cited
    best = max((_alternatives(arms[i]) for i in sorted(arms, reverse=True)), key=_weight)
    note = (f"one of {len(arms)} alternative branches making engines (if/elif at {chain}): "
            "the largest counted")
    return _alternatives(rest) + [replace(q, note="; ".join(x for x in (q.note, note) if x))
                                  for q in best]


def _as_dict(v: Val | None) -> dict[str, Val]:
    return v.value if v is not None and isinstance(v.value, dict) else {}


def _flask(ctx: StackContext) -> list[Pool]:
    if not any(imports(m, "flask_sqlalchemy") for m in python_modules(ctx, "flask_sqlalchemy")):
        return []
    options: dict[str, Val] = {}
    uri: Val | None = None
    binds: dict[str, Val] = {}
    where: tuple[str, int | None] | None = None
    modules = {m.file.path: m for needle in ("SQLALCHEMY", "SQLAlchemy")
               for m in python_modules(ctx, needle)}
    # `class RedashSQLAlchemy(SQLAlchemy)`: instances of a subclass are the extension too
    constructors = {"SQLAlchemy"} | {
        node.name for module in modules.values() for node in ast.walk(module.tree)
        if isinstance(node, ast.ClassDef)
        and any(dotted(b).rsplit(".", 1)[-1] == "SQLAlchemy" for b in node.bases)}
    for module in modules.values():
        names = module.scope.names
        options = {**options, **_as_dict(names.get("SQLALCHEMY_ENGINE_OPTIONS"))}
        # Flask-SQLAlchemy 2.x keys (removed in 3.0, still in older apps)
        for legacy, option in (("SQLALCHEMY_POOL_SIZE", "pool_size"),
                               ("SQLALCHEMY_MAX_OVERFLOW", "max_overflow")):
            if legacy in names and option not in options:
                options[option] = names[legacy]
        uri = names.get("SQLALCHEMY_DATABASE_URI", uri)
        binds = {**binds, **_as_dict(names.get("SQLALCHEMY_BINDS"))}
        for node in ast.walk(module.tree):
            # app.config["SQLALCHEMY_ENGINE_OPTIONS"] = {...}
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript) \
                    and dotted(node.targets[0].value).endswith("config"):
                key = value_of(module, node.targets[0].slice)
                if key is not None and key.value == "SQLALCHEMY_ENGINE_OPTIONS":
                    options = {**options, **_as_dict(value_of(module, node.value))}
                elif key is not None and key.value == "SQLALCHEMY_DATABASE_URI":
                    uri = value_of(module, node.value)
        for call, _ in calls(module, constructors):
            extra = kwarg(call, "engine_options")
            if extra is not None:
                options = {**options, **_as_dict(value_of(module, extra))}
            where = where or (module.file.path, call.lineno)
    if where is None:
        return []
    if uri is None:
        uri = _config_class_uri(list(modules.values()))
    if uri is None:
        uri = _pyfile_uri(ctx, list(modules.values()))
    opts = {k: _opt_from_val(v) for k, v in options.items()}
    if "poolclass" in options and options["poolclass"].value is not None:
        opts["poolclass"] = Opt(options["poolclass"].value, "poolclass", None)
    pools = []
    for suffix, target in [("", uri)] + [(f" bind {n}", v) for n, v in binds.items()]:
        route, postgres = route_of_url(target, ctx) if target is not None or not suffix \
            else (None, True)
        pool = pool_from_options(where[0], where[1], opts, route,
                                 f"Flask-SQLAlchemy{suffix}", ctx) if postgres else None
        if pool is not None:
            pools.append(pool)
    return pools


def _pyfile_uri(ctx: StackContext, modules: list[PyModule]) -> Val | None:
    """SQLALCHEMY_DATABASE_URI of the file `app.config.from_pyfile("config.cfg")` loads:
    Python whatever its name, executed as a module (flask/config.py from_pyfile), found
    beside the module that loads it (the app's root_path for `Flask(__name__)` there);
    None when no such file is in the source (not a guess)."""
    files = {f.rel: f for f in ctx.files("cfg", "python")}
    for module in modules:
        for call, _ in calls(module, {"from_pyfile"}):
            node = arg(call, 0, "filename")
            name = value_of(module, node) if node is not None else None
            if name is None or not isinstance(name.value, str):
                continue
            folder = module.file.rel.rsplit("/", 1)[0] if "/" in module.file.rel else ""
            f = files.get(f"{folder}/{name.value}" if folder else name.value)
            if f is None:
                continue
            tree, _error, _line = parse(f.text, f.path)
            if tree is None:
                continue
            scope = PyScope(path=f.path, env=ctx.env_map(), cpus=ctx.cpus, cite=f.cite)
            if (found := module_names(tree, scope).get("SQLALCHEMY_DATABASE_URI")) is not None:
                return found
    return None


def _class_uris(module: PyModule) -> dict[str, Val]:
    """SQLALCHEMY_DATABASE_URI of each top-level config class (`class
    DevelopmentConfig(BaseConfig): SQLALCHEMY_DATABASE_URI = DATABASE_URL`), its body
    read with the module's names; a class without one takes its base's, when the base
    is a class of the module."""
    out: dict[str, Val] = {}
    for node in module.tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        scope = PyScope(path=module.scope.path, env=module.scope.env, cpus=module.scope.cpus,
                        names=dict(module.scope.names), cite=module.scope.cite)
        found = block_names(node.body, scope).get("SQLALCHEMY_DATABASE_URI")
        if found is None or found is module.scope.names.get("SQLALCHEMY_DATABASE_URI"):
            found = next((out[b] for b in (dotted(b).rsplit(".", 1)[-1] for b in node.bases)
                          if b in out), None)
        if found is not None:
            out[node.name] = found
    return out


def _config_class_uri(modules: list[PyModule]) -> Val | None:
    """The URI of the config class `app.config.from_object(...)` loads (a class, or its
    dotted name from the env: APP_SETTINGS=project.config.DevelopmentConfig); when that
    is not known, the one URI every config class agrees on, else None (not a guess)."""
    uris = {name: v for m in modules if "SQLALCHEMY_DATABASE_URI" in m.file.text
            for name, v in _class_uris(m).items()}
    if not uris:
        return None
    for module in modules:
        for call, _ in calls(module, {"from_object"}):
            node = arg(call, 0, "obj")
            got = value_of(module, node) if node is not None else None
            name = got.value if got is not None and isinstance(got.value, str) \
                else dotted(node) if node is not None else ""
            chosen = uris.get(name.rsplit(".", 1)[-1]) if name else None
            if chosen is not None:
                return chosen
    values = {repr(v.value) for v in uris.values()}
    return next(iter(uris.values())) if len(values) == 1 else None


def sqlalchemy_pools(ctx: StackContext) -> list[Pool]:
    if not ctx.files("python"):
        return []
    return _engines(ctx) + _flask(ctx)
