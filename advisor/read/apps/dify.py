"""Dify run from its published images: langgenius/dify-api (one image, its program
chosen by MODE) and langgenius/dify-plugin-daemon. Read in Dify's own source; the
dify-api files at the commits the search index stores (the chart's 1.16.1 tag is not
stored there: each default below is the same in every stored version of its file):

- api/docker/entrypoint.sh (langgenius/dify 02940a0f), the image's ENTRYPOINT: with
  MIGRATION_ENABLED=true it first runs `flask upgrade-db` and returns (lines 10-18; with
  MODE=migration it then exits: a one-off, one connection as any schema migration). Then
  by MODE:
  - worker (20-65): `celery -A celery_entrypoint.celery worker -P ${WORKER_POOL}
    $CONCURRENCY_OPTION`, WORKER_POOL = ${CELERY_WORKER_POOL:-${CELERY_WORKER_CLASS:-
    gevent}}, CONCURRENCY_OPTION `-c ${CELERY_WORKER_AMOUNT:-1}`, or with
    CELERY_AUTO_SCALE=true `--autoscale=${CELERY_MAX_WORKERS:-$(nproc)},...`, and a
    non-empty CELERY_WORKER_CONCURRENCY `-c` over both. gevent, eventlet, threads and solo
    run one process; prefork (processes) one child per slot, each its own engine.
  - beat (70-71): `celery -A app.celery beat`. ext_celery.py (017dca47) sets no
    beat_scheduler: Celery's PersistentScheduler keeps the schedule in a shelve file, and
    beat sends tasks to the broker without running them: no database connection (as
    Paperless-ngx's scheduler, images.py).
  - job: `flask "$@"`, one process (a one-off command of the container's args).
  - anything else (api): `flask run` with DEBUG=true, else `gunicorn --workers
    ${SERVER_WORKER_AMOUNT:-1} --worker-class ${SERVER_WORKER_CLASS:-gevent} app:app`
    (no --preload; api/gunicorn.conf.py, 03cbdbe3, sets no workers or preload_app): each
    worker builds the app and its engine.
- One engine per process: extensions/ext_database.py (01dcbef4) `db.init_app(app)`
  (Flask-SQLAlchemy) with SQLALCHEMY_ENGINE_OPTIONS pool_size SQLALCHEMY_POOL_SIZE,
  default 30, and max_overflow SQLALCHEMY_MAX_OVERFLOW, default 10
  (configs/middleware/__init__.py DatabaseConfig, 0064a2d8; NonNegativeInt: pool_size 0 is
  a QueuePool without a limit). Under gevent every request or task in flight, and every
  thread it starts (monkey-patched into a greenlet), may hold a connection: pool_size +
  max_overflow caps the process, not SERVER_WORKER_CONNECTIONS or -c. The database is
  PostgreSQL unless DB_TYPE is mysql, oceanbase or seekdb; DB_HOST (localhost), DB_PORT
  (5432), DB_DATABASE (dify), DB_USERNAME (postgres). CELERY_BACKEND=database makes a
  db+ result backend, an engine of Celery's own, but ext_celery.py sets
  task_ignore_result=True: not counted.
- VECTOR_STORE=pgvector (core/rag/datasource/vdb/pgvector/pgvector.py, 0b2f894e):
  every PGVector object, one per dataset the code opens (PGVectorFactory.init_vector),
  makes its own psycopg2 SimpleConnectionPool(PGVECTOR_MIN_CONNECTION 1,
  PGVECTOR_MAX_CONNECTION 5) on PGVECTOR_HOST (localhost), PGVECTOR_PORT (5433),
  PGVECTOR_DATABASE (postgres), PGVECTOR_USER (postgres) (configs/middleware/vdb/
  pgvector_config.py): pools without a bound on their number, so no limit per process.
  pgvecto-rs likewise makes an engine per object (pgvecto_rs.py `create_engine`) on
  PGVECTO_RS_HOST, PGVECTO_RS_PORT (5431), PGVECTO_RS_DATABASE, PGVECTO_RS_USER
  (pgvectors_config.py).
- dify-plugin-daemon (langgenius/dify-plugin-daemon 0.6.3, one Go process; the image's
  CMD runs `/app/commandline migrate` before `exec /app/main`, docker/local.dockerfile):
  one gorm pool on PostgreSQL (DB_TYPE postgresql, default, or pgbouncer; mysql,
  oceanbase, seekdb are MySQL), internal/db/pg/pg.go InitPluginDB
  `pgsqlDB.SetMaxOpenConns(config.MaxOpenConns)` with DB_MAX_OPEN_CONNS, default 30
  (internal/types/app/config.go:164 `envconfig:"DB_MAX_OPEN_CONNS" default:"30"`;
  kelseyhightower/envconfig, no prefix, cmd/server/main.go). database/sql: 0 or less is
  no limit. The setting came in 0.0.10; 0.0.1 to 0.0.9 set no MaxOpenConns (no limit).
  DB_HOST, DB_PORT, DB_DATABASE, DB_USERNAME are required (no defaults).
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from advisor.model import CpuFormula, Pool, Route, Source, Term
from advisor.read.apps.base import StackContext, image_is
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.urls import route_from_parts

API_IMAGES = ("langgenius/dify-api",)
PLUGIN_DAEMON_IMAGES = ("langgenius/dify-plugin-daemon",)
POOL_SIZE = 30  # DatabaseConfig.SQLALCHEMY_POOL_SIZE
MAX_OVERFLOW = 10  # DatabaseConfig.SQLALCHEMY_MAX_OVERFLOW
DAEMON_MAX_OPEN = 30  # config.go DB_MAX_OPEN_CONNS default
DAEMON_SINCE = (0, 0, 10)  # the first tag that calls SetMaxOpenConns
LABEL = "Dify SQLAlchemy pool (pool_size + max_overflow)"
DAEMON = "Dify plugin daemon DB_MAX_OPEN_CONNS"
_ENTRYPOINT = "Dify api/docker/entrypoint.sh"
_ONE_PROCESS_POOLS = ("gevent", "eventlet", "threads", "solo")
_MYSQL = ("mysql", "oceanbase", "seekdb")
# the Celery autoscale max `$(nproc)` gives (prefork children only)
NPROC = CpuFormula(per_cpu=1, text="$(nproc)", applies_to="processes")


def is_dify_api(image: str) -> bool:
    return image_is(image, API_IMAGES)


def is_plugin_daemon(image: str) -> bool:
    return image_is(image, PLUGIN_DAEMON_IMAGES)


class _Unread(Exception):
    """A value the repository does not hold, or one that is not a number: said in
    ctx.unknown already; the container's connections are unknown."""


def _shell_default(ctx: StackContext, name: str) -> str | None:
    """`${NAME:-...}`: the variable's value, None when unset or empty (the default then
    applies); _Unread when set from a Secret or reference not held here."""
    var = ctx.env(name)
    if var is None:
        return None
    if var.value is None:
        ctx.hidden_size(LABEL, name, ctx.env_source(name))
        raise _Unread(name)
    return var.value if var.value != "" else None


def _count(ctx: StackContext, name: str, label: str, default: int | None,
           default_text: str) -> Term | None:
    """A count the entrypoint reads as `${NAME:-default}`; None when unset and
    `default` is None."""
    value = _shell_default(ctx, name)
    if value is None:
        if default is None:
            return None
        return Term(label=label, value=default, source=Source.default_of(default_text,
                                                                         key=name))
    n = parse_int(value)
    if n is None or n < 1:
        ctx.unknown.append(f"{label} at {ctx.env_source(name).label()} is {value!r}, not a "
                           "count pool-advisor can read")
        raise _Unread(name)
    return Term(label=label, value=n, source=ctx.env_source(name))


def _pool_size(ctx: StackContext) -> tuple[Term, str, str, list[Term]]:
    """One process's engine: (pool_size + max_overflow, bound, note, the two settings
    each at its own source, for advise to move)."""
    parts = []
    for name, default in (("SQLALCHEMY_POOL_SIZE", POOL_SIZE),
                          ("SQLALCHEMY_MAX_OVERFLOW", MAX_OVERFLOW)):
        var = ctx.env(name)
        if var is None:
            parts.append((name, default, None))
            continue
        if var.value is None:
            ctx.hidden_size(LABEL, name, ctx.env_source(name))
            raise _Unread(name)
        n = parse_int(var.value)
        if n is None or n < 0:  # pydantic NonNegativeInt: Dify does not start
            ctx.unknown.append(f"{LABEL}: {name} at {ctx.env_source(name).label()} is "
                               f"{var.value!r}, not a size Dify starts with")
            raise _Unread(name)
        parts.append((name, n, ctx.env_source(name)))
    (_, size, size_src), (_, overflow, overflow_src) = parts
    note = (f"QueuePool pool_size {size} ({size_src.label() if size_src else 'default'}) + "
            f"max_overflow {overflow} ({overflow_src.label() if overflow_src else 'default'})"
            "; gevent: each request or task in flight, and each thread it starts, may hold "
            "one, up to this cap")
    if size == 0:
        return (Term(label=LABEL, value=0, source=size_src), "unbounded",  # type: ignore[arg-type]
                "SQLALCHEMY_POOL_SIZE=0: QueuePool without a limit", [])
    written = [src for _, _, src in parts if src is not None]
    source = written[0] if written else Source.default_of(
        "Dify default SQLALCHEMY_POOL_SIZE 30 + SQLALCHEMY_MAX_OVERFLOW 10 "
        "(api/configs/middleware/__init__.py DatabaseConfig)", key="SQLALCHEMY_POOL_SIZE")
    settings = [Term(label=name, value=n, source=src or Source.default_of(
        f"Dify default {name} {default} (api/configs/middleware/__init__.py DatabaseConfig)",
        key=name)) for (name, n, src), default in zip(parts, (POOL_SIZE, MAX_OVERFLOW),
                                                       strict=True)]
    return Term(label=LABEL, value=size + overflow, source=source), \
        "fixed" if written else "default", note, settings


def _route(ctx: StackContext, prefix: str, defaults: tuple[str | None, str | None,
                                                           str | None, str | None],
           names: tuple[str, str, str, str]) -> Route | None:
    """The route of host, port, database, user variables (`names`), each its default
    when unset; None when the host is set where its value is not held here (the pools
    are then marked so: _where)."""
    if _hidden(ctx, names[0]):
        return None
    values = []
    for name, default in zip(names, defaults, strict=True):
        var = ctx.env(name)
        values.append(var.value if var is not None and var.value else default)
    if values[0] is None:
        return None
    host_var = names[0] if ctx.env(names[0]) is not None else None
    source = ctx.env_source(host_var) if host_var else Source.default_of(
        f"{prefix} default {names[0]} {defaults[0]}", key=names[0])
    return route_from_parts(values[0], values[1], values[2], values[3], source)


def _hidden(ctx: StackContext, name: str) -> bool:
    var = ctx.env(name)
    return var is not None and var.value is None


def _where(ctx: StackContext, pools: list[Pool], label: str, host: str) -> list[Pool]:
    """`pools`, marked as connecting where the repository does not say when their host
    variable is set from a Secret or reference not held here (StackContext.hidden_route):
    never on the URL another variable names, nor the client's other pool's host."""
    if not _hidden(ctx, host):
        return pools
    return ctx.hidden_route(pools, label, host, ctx.env_source(host))


def _processes(ctx: StackContext, mode: str) -> tuple[str, Term | None, bool] | None:
    """(the program, its processes with a pool: None for one, whether their count is
    the node's CPUs) that the entrypoint starts for `mode`; None for beat, which holds
    no connection."""
    one = None
    if mode == "beat":
        return None
    if mode == "job":
        return "flask job (MODE=job)", one, False
    if mode == "worker":
        nproc = False
        conc = _count(ctx, "CELERY_WORKER_CONCURRENCY", "Celery worker slots "
                      "(CELERY_WORKER_CONCURRENCY)", None, "")
        if conc is None and (_shell_default(ctx, "CELERY_AUTO_SCALE") or "").lower() == "true":
            conc = _count(ctx, "CELERY_MAX_WORKERS", "Celery --autoscale max "
                          "(CELERY_MAX_WORKERS)", None, "")
            if conc is None:
                nproc = True
                conc = Term(label="Celery --autoscale max ($(nproc))", value=ctx.cpus,
                            source=Source.default_of(
                                f"{_ENTRYPOINT}: CELERY_MAX_WORKERS:-$(nproc) with "
                                "CELERY_AUTO_SCALE=true", key="CELERY_MAX_WORKERS"))
        if conc is None:
            conc = _count(ctx, "CELERY_WORKER_AMOUNT", "Celery worker slots "
                          "(CELERY_WORKER_AMOUNT)", 1,
                          f"{_ENTRYPOINT}: -c ${{CELERY_WORKER_AMOUNT:-1}}")
        kind = _shell_default(ctx, "CELERY_WORKER_POOL") or \
            _shell_default(ctx, "CELERY_WORKER_CLASS") or "gevent"
        if kind in _ONE_PROCESS_POOLS:
            return f"Celery worker (-P {kind}, one process)", one, False
        if kind in ("prefork", "processes"):
            return "Celery worker (-P prefork, a process per slot)", \
                replace(conc, label=f"Celery prefork children ({conc.label})"), nproc  # type: ignore[arg-type]
        ctx.unknown.append(f"Dify worker: Celery pool {kind!r} is not one pool-advisor knows")
        raise _Unread("CELERY_WORKER_POOL")
    if (_shell_default(ctx, "DEBUG") or "") == "true":
        return "flask run (DEBUG=true, one process)", one, False
    workers = _count(ctx, "SERVER_WORKER_AMOUNT", "gunicorn workers (SERVER_WORKER_AMOUNT)",
                     1, f"{_ENTRYPOINT}: gunicorn --workers ${{SERVER_WORKER_AMOUNT:-1}}")
    return "gunicorn workers (no --preload)", workers, False


def _runs_entrypoint(ctx: StackContext) -> bool:
    words = [w for word in ctx.container.command for w in word.split()]
    return not words or any(w.rsplit("/", 1)[-1] == "entrypoint.sh" for w in words)


def _other_command(ctx: StackContext) -> str | bool | None:
    """A command of the container's own (not the entrypoint): gunicorn or celery, whose
    processes the process detection reads (ctx.processes); None for celery beat, which
    holds no connection; False for another program (no pool known)."""
    info = ctx.processes()
    if info.server == "celery-beat":
        return None
    if info.server in ("gunicorn", "celery"):
        return f"{info.server} (the container's command)"
    words = [w.rsplit("/", 1)[-1] for word in (*ctx.container.command, *ctx.container.args)
             for w in word.split()]
    if "flask" in words:
        return "flask (the container's command)"
    return False


def dify_api_pools(ctx: StackContext) -> list[Pool]:
    """The dify-api image's api, worker, beat or job process(es), each with one
    SQLAlchemy engine of pool_size + max_overflow, and the pgvector pools."""
    if ctx.container.role == "init":
        return []
    try:
        kind = (_shell_default(ctx, "DB_TYPE") or "postgresql").strip().lower()
        if kind in _MYSQL:
            return []
        mode = _shell_default(ctx, "MODE") or ""
        if _runs_entrypoint(ctx):
            if mode == "migration" and _shell_default(ctx, "MIGRATION_ENABLED") == "true":
                upgrade = ctx.pool(
                    "Dify flask upgrade-db (MODE=migration)", 1,
                    Source.default_of("a schema migration holds one connection at a time",
                                      key="upgrade-db"),
                    per_process=False, route=_main_route(ctx),
                    note="MODE=migration: migrates, then exits")
                upgrade.migration = True
                return _where(ctx, [upgrade], LABEL, "DB_HOST")
            program = _processes(ctx, mode)
        else:
            program = _other_command(ctx)
            if program is False:
                ctx.notices.append(f"{ctx.container.name}: the dify-api image runs a command "
                                   "pool-advisor does not know: its pools are not read")
                return []
        route = _main_route(ctx)
        if program is None:
            return [ctx.pool("Dify celery beat (no database connection)", 0, Source.default_of(
                "Dify beat: Celery's PersistentScheduler (a shelve file, no beat_scheduler in "
                "ext_celery.py) sends tasks to the broker and runs none",
                key="MODE"), per_process=False, route=route)]
        size, bound, note, settings = _pool_size(ctx)
        if isinstance(program, str):  # the container's own gunicorn or celery command
            main = ctx.pool(f"Dify SQLAlchemy pool ({program})", size.value, size.source,
                            route=route, bound=bound, note=note,  # type: ignore[arg-type]
                            size_label=LABEL)
        else:
            what, processes, nproc = program
            main = Pool(label=f"Dify SQLAlchemy pool ({what})", size=size,
                        processes=processes, route=route, bound=bound,  # type: ignore[arg-type]
                        note=note)
            if nproc:
                main = replace(main, bound="cpu" if bound == "fixed" else bound,
                               cpu_formula=NPROC, cpus=ctx.cpus_term(), node=ctx.node,
                               note=f"{note}; prefork children from $(nproc), the node's CPUs")
        main = replace(main, parts=settings)
        vector = _vector_pool(ctx, main.processes)
        return _where(ctx, [main], LABEL, "DB_HOST") + vector
    except _Unread:
        # its size not read: where it connects is said all the same
        return _where(ctx, [], LABEL, "DB_HOST")


def _main_route(ctx: StackContext) -> Route | None:
    return _route(ctx, "Dify", ("localhost", "5432", "dify", "postgres"),
                  ("DB_HOST", "DB_PORT", "DB_DATABASE", "DB_USERNAME"))


def _vector_pool(ctx: StackContext, processes: Term | None) -> list[Pool]:
    """The pgvector (or pgvecto-rs) store's pools: one per vector object, no limit."""
    store = (_shell_default(ctx, "VECTOR_STORE") or "").strip()
    if store == "pgvector":
        route = _route(ctx, "Dify pgvector", ("localhost", "5433", "postgres", "postgres"),
                       ("PGVECTOR_HOST", "PGVECTOR_PORT", "PGVECTOR_DATABASE",
                        "PGVECTOR_USER"))
        label, key, host = "Dify pgvector SimpleConnectionPool per vector object", \
            "PGVECTOR_MAX_CONNECTION", "PGVECTOR_HOST"
        why = ("Dify pgvector.py: each PGVector object makes its own psycopg2 "
               "SimpleConnectionPool(PGVECTOR_MIN_CONNECTION, PGVECTOR_MAX_CONNECTION), one "
               "per dataset in use: no limit on their number")
    elif store == "pgvecto-rs":
        route = _route(ctx, "Dify pgvecto-rs", (None, "5431", None, None),
                       ("PGVECTO_RS_HOST", "PGVECTO_RS_PORT", "PGVECTO_RS_DATABASE",
                        "PGVECTO_RS_USER"))
        label, key = "Dify pgvecto-rs engine per vector object", "PGVECTO_RS_HOST"
        host = key
        why = ("Dify pgvecto_rs.py: each PGVectoRS object makes its own SQLAlchemy engine, "
               "one per dataset in use: no limit on their number")
    else:
        return []
    if route is None and not _hidden(ctx, host):
        ctx.notices.append(f"{ctx.container.name}: VECTOR_STORE={store} with no host set: "
                           "its connections are in no budget")
        return []
    pool = Pool(label=label, size=Term(label=label, value=0, source=Source.default_of(
        why, key=key)), processes=processes, route=route, bound="unbounded",
        note=f"VECTOR_STORE={store} ({ctx.env_source('VECTOR_STORE').label()}): a pool per "
             "vector object, their number not bounded")
    return _where(ctx, [pool], label, host)


def _tag_release(image: str) -> tuple[int, ...] | None:
    """Every number of the tag's version (`0.6.3-local`, `0.0.1-beta.5`: (0, 0, 1));
    None for a tag without one (latest, main)."""
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    m = re.match(r"v?(\d{1,9}(?:\.\d{1,9})+)", tag)
    return tuple(int(n) for n in m.group(1).split(".")) if m else None


def plugin_daemon_pools(ctx: StackContext) -> list[Pool]:
    """The plugin daemon's one gorm pool, DB_MAX_OPEN_CONNS (default 30)."""
    if ctx.container.role == "init":
        return []
    words = [w.rsplit("/", 1)[-1] for word in (*ctx.container.command, *ctx.container.args)
             for w in word.split()]
    if words and not {"main", "commandline"} & set(words):
        return []  # another program of the image
    var = ctx.env("DB_TYPE")
    if var is not None and var.value is None:
        ctx.hidden_size(DAEMON, "DB_TYPE", ctx.env_source("DB_TYPE"))
        return []
    if (var.value if var is not None and var.value else "postgresql").strip() in _MYSQL:
        return []
    route = _route(ctx, "Dify plugin daemon", (None, None, None, None),
                   ("DB_HOST", "DB_PORT", "DB_DATABASE", "DB_USERNAME"))
    return _where(ctx, _daemon_pools(ctx, route), DAEMON, "DB_HOST")


def _daemon_pools(ctx: StackContext, route: Route | None) -> list[Pool]:
    version = _tag_release(ctx.container.image)
    if version is not None and version < DAEMON_SINCE:
        return [ctx.pool(DAEMON, 0, Source.default_of(
            "Dify plugin daemon before 0.0.10: no SetMaxOpenConns (internal/db/pg/pg.go), "
            "database/sql without a limit", key="DB_MAX_OPEN_CONNS"), bound="unbounded",
            per_process=False, route=route,
            note=f"image tag {ctx.container.image.rsplit(':', 1)[-1]} reads no "
                 "DB_MAX_OPEN_CONNS")]
    given = ctx.env("DB_MAX_OPEN_CONNS")
    if given is None:
        return [ctx.pool(DAEMON, DAEMON_MAX_OPEN, Source.default_of(
            "Dify plugin daemon default DB_MAX_OPEN_CONNS 30 (internal/types/app/config.go)",
            key="DB_MAX_OPEN_CONNS"), bound="default", per_process=False, route=route,
            note="DB_MAX_OPEN_CONNS unset")]
    if given.value is None:
        ctx.hidden_size(DAEMON, "DB_MAX_OPEN_CONNS", ctx.env_source("DB_MAX_OPEN_CONNS"))
        return []
    n = parse_int(given.value)
    if n is None:  # envconfig refuses it (an empty value too): the daemon does not start
        ctx.unknown.append(f"{DAEMON} at {ctx.env_source('DB_MAX_OPEN_CONNS').label()} is "
                           f"{given.value!r}, not a number the daemon starts with")
        return []
    if n <= 0:
        return [ctx.pool(DAEMON, 0, ctx.env_source("DB_MAX_OPEN_CONNS"), bound="unbounded",
                         per_process=False, route=route,
                         note=f"DB_MAX_OPEN_CONNS={n}: database/sql without a limit")]
    return [ctx.pool(DAEMON, n, ctx.env_source("DB_MAX_OPEN_CONNS"), per_process=False,
                     route=route)]
