"""Django: one pool-like term per DATABASES alias (primary and replica are separate).

Without a pool, Django holds one connection per thread per alias
(django/db/utils.py: ConnectionHandler.thread_critical = True, so connections live in a
thread-local; Django 5.2.19, checked in tests/test_apps_defaults.py). CONN_MAX_AGE only
decides whether that connection outlives a request, not how many there are, so a
process holds up to its thread count (gunicorn --threads, default 1).
Django 5.1+ with psycopg 3: `OPTIONS: {"pool": True}` or `{"pool": {...}}` builds a
psycopg_pool.ConnectionPool per process (django/db/backends/postgresql/base.py:
`ConnectionPool(..., **pool_options)`), so max_size, or min_size when max_size is
unset (default min_size 4).

Under an ASGI server (uvicorn, daphne, gunicorn -k uvicorn.workers.UvicornWorker)
each request runs its sync code in a thread of its own (ASGIHandler's
ThreadSensitiveContext): one connection per request in flight, unbounded unless the
server limits the requests in flight (uvicorn --limit-concurrency). Before Django 4.0
(3.1-3.2, pinned) there is no such context: asgiref runs all of a process's sync code in
one shared thread, so one connection per process per alias.

Rails and Django follow one rule (also advisor/read/apps/rails.py): a process holds at most
one connection per thread that can hold one, and never more than its pool. Django has
no pool without OPTIONS pool, so it is the thread count per alias; with a pool it is
max_size (psycopg_pool opens min_size at start and grows to max_size under load).

Settings are found through DJANGO_SETTINGS_MODULE (container env, else the
`os.environ.setdefault(...)` in manage.py/wsgi.py/asgi.py), else a settings.py that
defines DATABASES. `from .base import *` is followed. dj_database_url.config()/parse()
and django-environ's env.db() read DATABASE_URL (or their `env=`/first argument).
Where the module is found, the image's Dockerfile says (django_configurations.py's
container_module_files: `COPY site .` into WORKDIR), before a file whose path merely
ends like the module's.

django-configurations (`class Prod(Base)` over `configurations.Configuration`): the
class DJANGO_CONFIGURATION names supplies the settings (advisor/read/apps/
django_configurations.py); a DATABASES that cannot be read there (the class not known, a
method with branches on variables not held) leaves the pool size unknown (PA106), never
Django's default.
"""

from __future__ import annotations

import ast
import re

from msgspec.structs import replace

from advisor.model import Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.django_configurations import (
    chosen_databases,
    container_module_files,
    unread_pool_key,
    url_value_alias,
)
from advisor.read.apps.envfrom import may_set
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.pydeps import python_pin, version_tuple
from advisor.read.apps.pyeval import PyScope, Val, dotted, evaluate, is_unknown, module_names, parse
from advisor.read.apps.source import AppFile
from advisor.read.apps.urls import route_from_url

DEFAULT_POOL_MIN_SIZE = 4  # psycopg_pool ConnectionPool min_size default
# django.db.backends.postgresql, ...gis...postgis, sentry.db.postgres, tenant backends
_PG_ENGINES = ("postgres", "postgis", "psycopg")
_URL_HELPERS = {"dj_database_url.config", "dj_database_url.parse", "env.db", "env.db_url",
                "environ.Env.db", "db_url"}


def _module_file(ctx: StackContext, module: str) -> AppFile | None:
    """The file of a module the container imports: where the Dockerfile copies it
    (WORKDIR is on sys.path), else the file at that path, else the shallowest whose
    path ends like it."""
    rel = module.replace(".", "/")
    files = ctx.files("python")
    by_rel = {f.rel: f for f in files}
    for path in container_module_files(ctx.app, ctx.container.image, rel):
        if path in by_rel:
            return by_rel[path]
    tails = [f for f in files if f.rel in (f"{rel}.py", f"{rel}/__init__.py")
             or f.rel.endswith((f"/{rel}.py", f"/{rel}/__init__.py"))]
    return min(tails, key=lambda f: (f.rel.count("/"), f.rel)) if tails else None


def _settings_file(ctx: StackContext) -> AppFile | None:
    name = ctx.env_value("DJANGO_SETTINGS_MODULE")
    if not name:
        for f in ctx.files("python"):
            if f.name in ("manage.py", "wsgi.py", "asgi.py"):
                m = re.search(r"""DJANGO_SETTINGS_MODULE["']\s*,\s*["']([\w.]+)["']""", f.text)
                if m:
                    name = m.group(1)
                    break
    if name:
        found = _module_file(ctx, name)
        if found is not None:
            return found
        ctx.notices.append(f"DJANGO_SETTINGS_MODULE={name}: module not found in the app source")
    candidates = [f for f in ctx.files("python")
                  if (f.name in ("settings.py", "sentry.conf.py") or "/settings/" in f"/{f.rel}")
                  and "DATABASES" in f.text]
    return sorted(candidates, key=lambda f: (f.rel.count("/"), f.rel))[0] if candidates else None


def _load(ctx: StackContext, f: AppFile, scope: PyScope, trees: list[tuple[str, ast.Module]],
          depth: int = 0) -> None:
    """Evaluate a settings module into `scope`, following `from X import *` first."""
    tree, error, line = parse(f.text, f.path)
    if tree is None:
        ctx.problem(f.cite(line), error or "", program="Python")
        return
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names) \
                and depth < 5:
            base = _import_target(ctx, f, stmt)
            if base is not None:
                _load(ctx, base, PyScope(path=base.path, env=scope.env, cpus=scope.cpus,
                                         names=scope.names, cite=base.cite), trees, depth + 1)
    module_names(tree, PyScope(path=f.path, env=scope.env, cpus=scope.cpus, names=scope.names,
                               cite=f.cite))
    trees.append((f.path, tree))


def _import_target(ctx: StackContext, f: AppFile, stmt: ast.ImportFrom) -> AppFile | None:
    if stmt.level:
        package = f.rel.rsplit("/", 1)[0] if "/" in f.rel else ""
        for _ in range(stmt.level - 1):
            package = package.rsplit("/", 1)[0] if "/" in package else ""
        rel = "/".join(p for p in (package, (stmt.module or "").replace(".", "/")) if p)
        return next((x for x in ctx.files("python")
                     if x.rel in (f"{rel}.py", f"{rel}/__init__.py")), None)
    return _module_file(ctx, stmt.module or "")


def _env_put(trees: list[tuple[str, ast.Module]], name: str, scope: PyScope) -> Val | None:
    """The text the settings put in the process env under `name` before a URL helper
    reads it: `os.environ.setdefault(name, X)` or `os.environ[name] = X`, at any depth of
    the module (StefanKjartansson/django-k8s-gcp-skeleton builds DATABASE_URL from
    DB_HOST and the rest so, then calls env.db()); None when none, or not a string."""
    for _path, tree in trees:
        for node in ast.walk(tree):
            value: ast.expr | None = None
            if isinstance(node, ast.Call) and dotted(node.func) in (
                    "os.environ.setdefault", "environ.setdefault") and len(node.args) == 2:
                key, value = evaluate(node.args[0], scope), node.args[1]
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Subscript) and \
                    dotted(node.targets[0].value) in ("os.environ", "environ"):
                key, value = evaluate(node.targets[0].slice, scope), node.value
            else:
                continue
            if key is None or key.value != name:
                continue
            got = evaluate(value, scope)
            if got is not None and isinstance(got.value, str) and not got.hidden:
                return got
    return None


def _url_alias(call: ast.Call, scope: PyScope, ctx: StackContext,
               trees: list[tuple[str, ast.Module]]
               ) -> tuple[str | None, Source | None, dict[str, Val]]:
    """(url, its source, extra options) for dj_database_url.config()/env.db(); the URL
    the settings themselves put in the env when the container sets none."""
    name = dotted(call.func)
    env_name = "DATABASE_URL"
    default_node = None
    if name.endswith("parse") and call.args:
        v = evaluate(call.args[0], scope)
        if v is not None and isinstance(v.value, str):
            return v.value, v.source, {}
        return None, None, {}
    for k in call.keywords:
        if k.arg in ("env", "var"):
            v = evaluate(k.value, scope)
            env_name = v.value if v is not None and isinstance(v.value, str) else env_name
        if k.arg == "default":
            default_node = k.value
    if name.startswith("env.") and call.args:
        v = evaluate(call.args[0], scope)
        env_name = v.value if v is not None and isinstance(v.value, str) else env_name
        if len(call.args) > 1:
            default_node = call.args[1]
    var = ctx.env(env_name)
    if var is not None and var.value is not None:
        return var.value, replace(var.source, key=env_name), {}
    if var is None and may_set(scope.env.values(), env_name) is None and \
            (put := _env_put(trees, env_name, scope)) is not None:
        return put.value, put.source, {}
    if default_node is not None:
        v = evaluate(default_node, scope)
        if v is not None and isinstance(v.value, str):
            return v.value, v.source, {}
    return None, None, {}


def _aliases(trees: list[tuple[str, ast.Module]], scope: PyScope, ctx: StackContext,
             databases: Val | None = None
             ) -> dict[str, tuple[dict[str, Val], str | None, Source | None, Source]]:
    """alias -> (settings dict, URL if from a helper, URL source, where it is defined):
    of `databases` (a configuration class's), else of the module's DATABASES."""
    databases = databases or scope.names.get("DATABASES")
    if databases is None or not isinstance(databases.value, dict):
        return {}
    helpers: dict[tuple[str, int], ast.Call] = {}
    for path, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (dotted(node.func) in _URL_HELPERS
                                               or dotted(node.func).endswith(".db")):
                helpers[(path, node.lineno)] = node
    out: dict[str, tuple[dict[str, Val], str | None, Source | None, Source]] = {}
    for alias, v in databases.value.items():
        where = replace(v.source, key=f"DATABASES[{alias!r}]")
        if isinstance(v.value, dict):
            out[alias] = (v.value, None, None, where)
            continue
        call = helpers.get((v.source.path or "", v.source.line or 0))
        if call is None:
            continue
        url, src, _ = _url_alias(call, scope, ctx, trees)
        opts: dict[str, Val] = {}
        for k in call.keywords:
            got = evaluate(k.value, scope) if k.arg else None
            if got is not None:
                opts[k.arg.upper()] = got
        _apply_item_assignments(trees, alias, opts, scope)
        out[alias] = (opts, url, src, where)
    return out


def _apply_item_assignments(trees: list[tuple[str, ast.Module]], alias: str,
                            opts: dict[str, Val], scope: PyScope) -> None:
    """`DATABASES[alias]["OPTIONS"] = {...}` after a URL helper built the alias: the
    helper's dict is unknown statically, the later items are not."""
    for _, tree in trees:
        for stmt in tree.body:
            if not isinstance(stmt, ast.Assign) or not isinstance(stmt.targets[0], ast.Subscript):
                continue
            keys: list[object] = []
            node: ast.expr = stmt.targets[0]
            while isinstance(node, ast.Subscript):
                key = evaluate(node.slice, scope)
                keys.append(key.value if key is not None else None)
                node = node.value
            keys.reverse()
            if dotted(node) != "DATABASES" or len(keys) < 2 or keys[0] != alias \
                    or not all(isinstance(k, str) for k in keys):
                continue
            value = evaluate(stmt.value, scope)
            if value is None:
                continue
            target = opts
            for k in keys[1:-1]:
                inner = target.get(k)
                if inner is None or not isinstance(inner.value, dict):
                    inner = Val({}, value.source)
                    target[k] = inner
                target = inner.value
            target[keys[-1]] = value


def _text(settings: dict[str, Val], key: str) -> Val | None:
    v = settings.get(key)
    return v if v is not None and not is_unknown(v) and v.value not in (None, "") else None


def _route(settings: dict[str, Val], url: str | None, url_src: Source | None,
           fallback: Source) -> Route | None:
    if url and url_src is not None:
        return route_from_url(url.replace("postgis://", "postgresql://")
                              .replace("pgsql://", "postgresql://"), url_src)
    host = _text(settings, "HOST")
    if host is None:
        return None
    port = _text(settings, "PORT")
    name = _text(settings, "NAME")
    user = _text(settings, "USER")
    return Route(host=str(host.value), port=parse_int(str(port.value)) if port else None,
                 dbname=str(name.value) if name else None, user=str(user.value) if user else None,
                 source=host.source if host.source.path else fallback)


def _check_pool_settings(ctx: StackContext, settings: dict[str, Val], pool: Val,
                         alias: str) -> None:
    """What Django and psycopg_pool refuse at startup (Django 5.2 postgresql/base.py
    DatabaseWrapper.pool; psycopg_pool base.py _check_size)."""
    age = settings.get("CONN_MAX_AGE")
    if age is not None and not is_unknown(age) and age.value != 0:
        ctx.problem(age.source, f"DATABASES[{alias!r}]: CONN_MAX_AGE={age.value!r} with "
                    "OPTIONS pool: Django raises ImproperlyConfigured: Pooling doesn't "
                    "support persistent connections. (set CONN_MAX_AGE = 0)", fatal=True,
                    program="Django")
    sizes = pool.value if isinstance(pool.value, dict) else {}
    low, high = _text(sizes, "min_size"), _text(sizes, "max_size")
    lo = parse_int(str(low.value)) if low else None
    hi = parse_int(str(high.value)) if high else None
    if lo is not None and hi is not None and hi < lo:
        ctx.problem(high.source, f"DATABASES[{alias!r}] pool max_size {hi} < min_size {lo}: "
                    "psycopg_pool raises ValueError: max_size must be greater or equal than "
                    "min_size", fatal=True, program="psycopg_pool")


def is_sentry_image(image: str) -> bool:
    """getsentry/sentry (any registry or mirror keeping the path, ghcr.io/getsentry/
    sentry), or an image named sentry of another owner (a chart's images.sentry.repository
    override): advisor/read/apps/sentry.py reads its commands. Not Docker Hub's official
    `sentry` (library/sentry), Sentry 9 and older."""
    ref = image.split("@", 1)[0].lower()
    path, colon, tag = ref.rpartition(":")
    if not colon or "/" in tag:
        path = ref
    parts = path.split("/")
    return parts[-1] == "sentry" and len(parts) > 1 and parts[-2] != "library"


def django_pools(ctx: StackContext) -> list[Pool]:
    if is_sentry_image(ctx.container.image):
        return []  # Sentry's image: its reader counts each command's threads and processes
    return django_alias_pools(ctx)


def django_alias_pools(ctx: StackContext) -> list[Pool]:
    """A pool per PostgreSQL alias of DATABASES, one connection per thread (or the
    alias's OPTIONS pool), with its route."""
    if not any("DATABASES" in f.text or "DJANGO_SETTINGS_MODULE" in f.text
               for f in ctx.files("python")):
        return []
    f = _settings_file(ctx)
    if f is None:
        return []
    scope = PyScope(path=f.path, env=ctx.env_map(), cpus=ctx.cpus, cite=f.cite)
    trees: list[tuple[str, ast.Module]] = []
    _load(ctx, f, scope, trees)
    aliases = _settings_aliases(ctx, trees, scope)
    if aliases is None:
        return []
    pools: list[Pool] = []
    for alias, (settings, url, url_src, here) in aliases.items():
        engine = _text(settings, "ENGINE")
        if url is not None:
            if not url.split(":", 1)[0].lower().startswith(("postgres", "postgis", "pgsql")):
                continue
        elif engine is None or not any(e in str(engine.value) for e in _PG_ENGINES):
            if engine is None and url_src is None and settings.get("ENGINE") is None \
                    and not settings:
                ctx.notices.append(f"{here.label()}: database {alias!r} uses a URL helper with "
                                   "no DATABASE_URL in the container env; engine unknown")
            continue
        route = _route(settings, url, url_src, here)
        options = settings.get("OPTIONS")
        pool_opt = options.value.get("pool") if options is not None and \
            isinstance(options.value, dict) else None
        label = f"Django {alias}"
        if pool_opt is not None and not is_unknown(pool_opt) and pool_opt.value:
            _check_pool_settings(ctx, settings, pool_opt, alias)
            sizes = pool_opt.value if isinstance(pool_opt.value, dict) else {}
            pool_label = f"{label} OPTIONS pool max_size"
            if ctx.hidden_read(pool_label, sizes.get("max_size")) or (
                    _text(sizes, "max_size") is None
                    and ctx.hidden_read(pool_label, sizes.get("min_size"))):
                continue  # unknown (max_size unset is min_size)
            chosen = _text(sizes, "max_size") or _text(sizes, "min_size")
            n = parse_int(str(chosen.value)) if chosen is not None else None
            if n is not None:
                pools.append(ctx.pool(f"{label} OPTIONS pool max_size", n, chosen.source,
                                      route=route))
            else:
                pools.append(ctx.pool(
                    f"{label} OPTIONS pool max_size", DEFAULT_POOL_MIN_SIZE,
                    # Django 5.2.20 db/backends/postgresql/base.py:185-215: pool=True is
                    # ConnectionPool(**{}); psycopg_pool 3.3.3 pool.py:49-50 min_size=4,
                    # max_size=None, base.py:119-120 max_size = min_size
                    Source.default_of("psycopg_pool 3.3 default (min_size=4, max_size=None "
                                      "-> min_size; Django 5.2 postgresql/base.py:196-215 "
                                      "passes pool=True as no options)", key="pool"),
                    route=route, bound="default",
                    note=f"{here.label()}: pool=True uses psycopg_pool defaults"))
            continue
        if ctx.processes().asgi:
            pools.append(asgi_pool(ctx, label, alias, route))
            continue
        threads = ctx.processes().threads
        if threads is not None:
            pools.append(ctx.pool(f"{label} (1 connection per thread)", threads.value,
                                  threads.source, route=route,
                                  size_label=f"{label}: 1 connection x {threads.label}"))
        else:
            pools.append(ctx.pool(
                f"{label} (1 connection per thread)", 1,
                Source.default_of("Django: one connection per thread per alias "
                                  "(ConnectionHandler thread-local)", key=alias),
                route=route, note="one thread per process assumed (sync workers)"))
    return pools


def _settings_aliases(ctx: StackContext, trees: list[tuple[str, ast.Module]], scope: PyScope
                      ) -> dict[str, tuple[dict[str, Val], str | None, Source | None,
                                           Source]] | None:
    """The aliases of the DATABASES the container runs with: the django-configurations
    class's, else the module's. None, said in ctx.unknown, when that DATABASES cannot be
    read (PA106), never Django's default in its place."""
    chosen = chosen_databases(ctx, trees, scope)
    if chosen is not None and chosen.unknown:
        ctx.unknown.append(chosen.unknown)
        return None
    if chosen is not None and chosen.url_call is not None and chosen.scope is not None:
        alias, opts, url, src = url_value_alias(ctx, chosen.url_call, chosen.scope)
        return {alias: (opts, url, src, replace(chosen.where or scope.src(chosen.url_call),
                                                key=f"DATABASES[{alias!r}]"))}
    aliases = _aliases(trees, scope, ctx, chosen.databases if chosen is not None else None)
    if not aliases and (at := unread_pool_key(trees)) is not None:
        # an OPTIONS pool in code not read: its size is not Django's default either
        ctx.unknown.append(f"Django DATABASES not read, and the settings set an OPTIONS "
                           f"\"pool\" at {at.label()}: the pool size is not known")
        return None
    return aliases


# Django 3.1 wraps sync views in sync_to_async(thread_sensitive=True) (3.1 core/handlers/
# base.py:229); ThreadSensitiveContext per request came in 4.0 (4.0 core/handlers/
# asgi.py:148; none in 3.2.25). Outside one, asgiref runs thread-sensitive code in
# SyncToAsync.single_thread_executor, ThreadPoolExecutor(max_workers=1) (asgiref 3.4.1
# sync.py:340, 411-415). Django 3.0 used the loop's default executor (not shared).
_SHARED_SYNC_THREAD = ((3, 1), (4, 0))


def _shared_thread_pin(ctx: StackContext) -> Source | None:
    """Where the app pins a Django whose ASGI handler runs all sync code in one thread
    per process (3.1 <= version < 4.0), its key the version; None otherwise (not pinned
    exactly, or another version)."""
    found = python_pin(ctx.app, "django")
    if found is None:
        return None
    low, high = _SHARED_SYNC_THREAD
    if not low <= version_tuple(found[0])[:2] < high:
        return None
    return replace(found[1], key=found[0])


def asgi_pool(ctx: StackContext, label: str, alias: str, route: Route | None) -> Pool:
    """Django under an ASGI server: ASGIHandler runs each request in its own
    asgiref ThreadSensitiveContext, so its sync code (views, ORM) runs in a thread of
    its own and opens its own connection: one per request in flight, per alias. Only
    the server's limit on requests in flight bounds that (uvicorn --limit-concurrency);
    without one the pool is unbounded (PA102), not one per process. Django 3.1-3.2
    (pinned) has no per-request context: one shared sync thread, one connection."""
    server = ctx.processes().server
    if server != "manage.py runserver" and (shared := _shared_thread_pin(ctx)) is not None:
        # Django 3.1-3.2 under ASGI: no ThreadSensitiveContext, so every request's sync
        # code runs in asgiref's one process-wide thread: one connection per process
        return ctx.pool(f"{label} (1 connection per process: one sync thread)", 1, shared,
                        route=route, note=f"Django {shared.key} under ASGI ({server}): sync "
                        "code runs in asgiref's one shared thread (no ThreadSensitiveContext "
                        "before Django 4.0)")
    name = f"{label} (1 connection per request in flight)"
    limit = ctx.processes().in_flight
    if limit is not None:
        return ctx.pool(name, limit.value, limit.source, route=route,
                        size_label=f"{label}: 1 connection x {limit.label}")
    if server == "manage.py runserver":  # processes._runserver: a thread per request
        return ctx.pool(name, 0, Source.default_of(
            "Django runserver: a thread per request (ThreadedWSGIServer), one connection "
            "per request in flight", key=alias), route=route, bound="unbounded",
            note="manage.py runserver (threaded): each request in flight runs in a thread "
                 "of its own with its own connection and nothing bounds them "
                 "(--nothreading serves one at a time)")
    return ctx.pool(name, 0, Source.default_of(
        "Django under ASGI: one connection per request in flight (ASGIHandler, "
        "ThreadSensitiveContext per request)", key=alias), route=route, bound="unbounded",
        note=f"ASGI ({server}): each request in flight holds its own connection and "
             "nothing bounds the requests in flight (uvicorn --limit-concurrency would)")

