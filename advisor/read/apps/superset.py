"""Apache Superset from its published image (apache/superset, as the official chart
apache/superset helm/superset runs it): each component's processes and the SQLAlchemy
engine each process opens on the metadata database.

Read in apache/superset (the index stores files at different commits, each named):
- The metadata engine is Flask-SQLAlchemy's, built from SQLALCHEMY_DATABASE_URI with
  SQLALCHEMY_ENGINE_OPTIONS, default `{}` (superset/config.py @ 00139b6a9f, "exposed
  through flask-sqlalchemy ... to set your metadata database connection settings"): no
  poolclass, so SQLAlchemy's QueuePool, pool_size 5 + max_overflow 10, one per process.
  No version sets NullPool on that engine: only the schema migration's own engine
  (superset/migrations/env.py @ 014a294673 `engine_from_config(..., poolclass=
  pool.NullPool)`, one connection) and, before the SQL Lab rewrite, SQL Lab's Celery task
  session (sql_lab.py `session_scope(nullpool=True)`) take NullPool; the latter is one
  connection beside its process's engine, within the engine's ceiling counted here.
- superset_config.py, imported from PYTHONPATH (/app/pythonpath in the image; the chart
  mounts its Secret `<release>-config` there, configMountPath, its superset_config.py
  the chart's template plus values `configOverrides`), or the file SUPERSET_CONFIG_PATH
  names. Read when the pod holds it; else the engine's size is unknown.
- web (the chart's `superset` Deployment, command `/usr/bin/run-server.sh`; the image's
  CMD /app/docker/entrypoints/run-server.sh): gunicorn `--workers
  ${SERVER_WORKER_AMOUNT:-1} --worker-class ${SERVER_WORKER_CLASS:-gthread} --threads
  ${SERVER_THREADS_AMOUNT:-20}` without --preload (docker/entrypoints/run-server.sh @
  1917ac50): an engine per worker, the master opens none.
- Celery worker (`celery --app=superset.tasks.celery_app:app worker`, the chart's
  supersetWorker): prefork children, `-c`/`--concurrency`, else CeleryConfig's
  worker_concurrency (CELERYD_CONCURRENCY), else Celery's cpu_count(); each child
  disposes the engine it inherits and opens its own (superset/tasks/celery_app.py
  `@worker_process_init.connect reset_db_connection_pool: db.engine.dispose()`).
  Celery beat: one process with the app's engine. Flower: the broker only.
- The chart's init Job (`superset_init.sh`: `superset db upgrade`, `superset init`,
  `superset fab create-admin`, one after another; helm/superset values.yaml
  `init.jobAnnotations` "helm.sh/hook": post-install,post-upgrade, counted as a hook by
  advisor/budget/hooks.py): one CLI process at a time, single-threaded: 1 connection.
"""

from __future__ import annotations

import ast
import re

from msgspec.structs import replace

from advisor.model import Pool, Source, Term
from advisor.read.apps.base import StackContext, image_is, tag_version
from advisor.read.apps.source import AppFile

SUPERSET_IMAGES = ("apache/superset",)
POOL_SIZE = 5  # SQLAlchemy QueuePool default pool_size
MAX_OVERFLOW = 10  # SQLAlchemy QueuePool default max_overflow
WORKERS = 1  # run-server.sh ${SERVER_WORKER_AMOUNT:-1}
THREADS = 20  # run-server.sh ${SERVER_THREADS_AMOUNT:-20}
CONFIG_DIR = "/app/pythonpath"  # the image's PYTHONPATH, the chart's configMountPath
LABEL = "Superset metadata SQLAlchemy engine"
_RUN_SERVER = "apache/superset docker/entrypoints/run-server.sh @ 1917ac50"
_ENGINE_DEFAULT = ("Superset SQLALCHEMY_ENGINE_OPTIONS default {} (superset/config.py @ "
                   "00139b6a9f): SQLAlchemy QueuePool pool_size 5 + max_overflow 10")
_CELERY_CONCURRENCY = ("worker_concurrency", "CELERYD_CONCURRENCY")


def is_superset(image: str) -> bool:
    # apache/superset:dockerize is the chart's initImage: dockerize, no Superset
    return image_is(image, SUPERSET_IMAGES) and not image.rsplit(":", 1)[-1].startswith(
        "dockerize")


def _role(ctx: StackContext) -> str:
    """web, worker, beat, flower, init, cli, or other, from the command line."""
    text = " ".join((*ctx.container.command, *ctx.container.args))
    if not text.strip():
        return "web"  # the image's CMD: run-server.sh
    words = set(re.split(r"[\s;&|()\"']+", text))
    if "celery" in words or any(w.endswith("/celery") for w in words):
        for role in ("worker", "beat", "flower"):
            if role in words:
                return role
        return "other"
    if "run-server.sh" in text or "gunicorn" in words:
        return "web"
    if "superset_init.sh" in text or re.search(r"\bsuperset\s+(?:db\s+upgrade|init)\b", text):
        return "init"
    if re.search(r"(?:^|[\s;&|/])superset\s+\w", text):
        return "cli"
    return "other"


class _Engine:
    """One process's engine: its size Term, bound and note; None size when unknown."""

    def __init__(self, size: Term, bound: str, note: str, nullpool: bool = False,
                 parts: list[Term] | None = None) -> None:
        self.size = size
        self.bound = bound
        self.note = note
        self.nullpool = nullpool
        # pool_size and max_overflow, each where it is set: the size is their sum, and
        # advise moves them, not the sum at one of them
        self.parts = parts or []


def _config_path(ctx: StackContext) -> str:
    given = ctx.env_value("SUPERSET_CONFIG_PATH")
    return given if given else f"{CONFIG_DIR}/superset_config.py"


def _config_tree(ctx: StackContext) -> tuple[ast.Module, AppFile] | bool | None:
    """(tree, file) of the superset_config.py the container imports; None when the pod
    is not read (no pod files given); False when the file is not held (said in unknown)."""
    if ctx.pod_files is None:
        return None
    var = ctx.env("SUPERSET_CONFIG_PATH")
    if var is not None and var.value is None:
        ctx.hidden_size(LABEL, "SUPERSET_CONFIG_PATH", ctx.env_source("SUPERSET_CONFIG_PATH"))
        return False
    path = _config_path(ctx)
    got = ctx.pod_files.read(path)
    if got.kind != "held" or got.file is None:
        ctx.unknown.append(f"{LABEL}: {path}, where SQLALCHEMY_ENGINE_OPTIONS may size it, "
                           f"is not held here ({got.describe()})")
        return False
    try:
        tree = ast.parse(got.file.text)
    except (SyntaxError, ValueError):
        ctx.unknown.append(f"{LABEL}: {got.file.path} is not Python pool-advisor can parse")
        return False
    return tree, got.file


def _null_pool(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Name, ast.Attribute)) and
               (getattr(n, "id", None) == "NullPool" or getattr(n, "attr", None) == "NullPool")
               for n in ast.walk(node))


def _engine(ctx: StackContext, got: tuple[ast.Module, AppFile] | bool | None
            ) -> _Engine | None:
    """The metadata engine one process opens, from the superset_config.py `got`
    (_config_tree); None when its size is not known (why in ctx.unknown)."""
    from advisor.read.apps.pyeval import PyScope, module_names

    default = Term(label=f"{LABEL} (pool_size + max_overflow)", value=POOL_SIZE + MAX_OVERFLOW,
                   source=Source.default_of(_ENGINE_DEFAULT, key="SQLALCHEMY_ENGINE_OPTIONS"))
    if got is False:
        return None
    if got is None or got is True:
        return _Engine(default, "default", "superset_config.py not read (the pod's files were "
                       "not given): SQLAlchemy's QueuePool defaults", parts=_defaults())
    tree, file = got
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id in ("SQLALCHEMY_POOL_SIZE",
                                                    "SQLALCHEMY_MAX_OVERFLOW")
               for t in targets):
            ctx.unknown.append(f"{LABEL}: {file.path}:{stmt.lineno} sets Flask-SQLAlchemy 2's "
                               "SQLALCHEMY_POOL_SIZE/MAX_OVERFLOW, which pool-advisor does "
                               "not read")
            return None
    scope = PyScope(path=file.path, env=ctx.env_map(), cpus=ctx.cpus, cite=file.cite)
    names = module_names(tree, scope)
    options = names.get("SQLALCHEMY_ENGINE_OPTIONS")
    if options is None:
        return _Engine(default, "default", f"{file.path} sets no SQLALCHEMY_ENGINE_OPTIONS",
                       parts=_defaults())
    assigned = [s for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))
                and any(isinstance(t, ast.Name) and t.id == "SQLALCHEMY_ENGINE_OPTIONS"
                        for t in (s.targets if isinstance(s, ast.Assign) else [s.target]))]
    if assigned and _null_pool(assigned[-1].value):
        return _Engine(Term(label="Superset metadata NullPool: one connection per thread in "
                            "use", value=1, source=options.source), "fixed",
                       "SQLALCHEMY_ENGINE_OPTIONS poolclass NullPool", nullpool=True)
    if not isinstance(options.value, dict):
        ctx.unknown.append(f"{LABEL}: SQLALCHEMY_ENGINE_OPTIONS at {options.source.label()} "
                           "is not a mapping pool-advisor can read")
        return None
    parts: list[Term] = []
    for key, fallback in (("pool_size", POOL_SIZE), ("max_overflow", MAX_OVERFLOW)):
        val = options.value.get(key)
        if val is None:
            parts.append(_default_part(key, fallback))
            continue
        if val.hidden:
            ctx.hidden_size(LABEL, val.hidden, val.source)
            return None
        if not isinstance(val.value, int) or isinstance(val.value, bool):
            ctx.unread_size(LABEL, val.source)
            return None
        parts.append(Term(label=key, value=val.value, source=val.source if val.source.key
                          else replace(val.source, key=key)))
    size, overflow = parts
    note = f"QueuePool pool_size {int(size.value)} ({size.source.label()}) + max_overflow " \
           f"{int(overflow.value)} ({overflow.source.label()})"
    if size.value == 0 or overflow.value < 0:
        return _Engine(Term(label=LABEL, value=0, source=(size if size.value == 0 else
                                                          overflow).source),
                       "unbounded", note + ": QueuePool without a limit")
    written = [t for t in parts if t.source.path is not None]
    return _Engine(Term(label=f"{LABEL} (pool_size + max_overflow)",
                        value=size.value + overflow.value, source=written[0].source),
                   "fixed", note, parts=parts)


def _default_part(key: str, value: int) -> Term:
    return Term(label=key, value=value, source=Source.default_of(
        f"SQLAlchemy QueuePool default {key} {value} (no {key} in "
        "SQLALCHEMY_ENGINE_OPTIONS)", key=key))


def _defaults() -> list[Term]:
    return [_default_part("pool_size", POOL_SIZE), _default_part("max_overflow", MAX_OVERFLOW)]


def _celery_config_concurrency(ctx: StackContext) -> Term | None:
    """worker_concurrency / CELERYD_CONCURRENCY written in a class of superset_config.py
    (the CELERY_CONFIG class), when the pod holds the file."""
    got = ctx.cache.get("superset-config")
    if not isinstance(got, tuple):
        return None
    tree, file = got
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id in _CELERY_CONCURRENCY
                    for t in stmt.targets) and isinstance(stmt.value, ast.Constant) and \
                    isinstance(stmt.value.value, int):
                return Term(label=f"Celery worker concurrency ({node.name})",
                            value=stmt.value.value, source=file.cite(stmt.lineno, "concurrency"))
    return None


def _web_processes(ctx: StackContext) -> Term | None:
    got = ctx.env_int(LABEL, "SERVER_WORKER_AMOUNT", least=1)
    if got is False:
        return None
    if got is None:
        return Term(label="gunicorn workers (SERVER_WORKER_AMOUNT)", value=WORKERS,
                    source=Source.default_of(f"{_RUN_SERVER}: --workers "
                                             "${SERVER_WORKER_AMOUNT:-1}",
                                             key="SERVER_WORKER_AMOUNT"))
    return Term(label="gunicorn workers (SERVER_WORKER_AMOUNT)", value=got[0], source=got[1])


def _threads(ctx: StackContext) -> Term | None:
    got = ctx.env_int(LABEL, "SERVER_THREADS_AMOUNT", least=1)
    if got is False:
        return None
    if got is None:
        return Term(label="gunicorn threads (SERVER_THREADS_AMOUNT)", value=THREADS,
                    source=Source.default_of(f"{_RUN_SERVER}: --threads "
                                             "${SERVER_THREADS_AMOUNT:-20}",
                                             key="SERVER_THREADS_AMOUNT"))
    return Term(label="gunicorn threads (SERVER_THREADS_AMOUNT)", value=got[0], source=got[1])


def superset_pools(ctx: StackContext) -> list[Pool]:
    role = _role(ctx)
    name = ctx.container.name
    if role == "flower":
        ctx.notices.append(f"{name}: Celery flower reads the broker, not the metadata database")
        return []
    if role == "other":
        if ctx.container.role != "init":
            ctx.notices.append(f"{name}: {ctx.container.image} runs a command pool-advisor "
                               "does not read as a Superset component")
        return []
    if role in ("init", "cli"):
        what = "superset_init.sh (superset db upgrade, superset init, fab create-admin)" \
            if role == "init" else "a superset CLI command"
        return [Pool(label=f"Superset {what}", size=Term(
            label="Superset CLI connections", value=1, source=Source.default_of(
                "one superset CLI process at a time, single-threaded; `db upgrade` migrates "
                "on a NullPool engine (superset/migrations/env.py @ 014a294673)",
                key="superset")), note="a run that exits, not a serving pool")]
    got = _config_tree(ctx)
    if isinstance(got, tuple):
        ctx.cache["superset-config"] = got
    engine = _engine(ctx, got)
    if engine is None:
        return []
    version = tag_version(ctx.container.image)
    shown = f"Superset {version[0]}.{version[1]}" if version else "Superset"
    if role == "web":
        workers = _web_processes(ctx)
        threads = _threads(ctx)
        if workers is None or threads is None:
            return []
        size = threads if engine.nullpool else engine.size
        return [Pool(label=f"{LABEL}: gunicorn workers ({shown})", size=size,
                     processes=workers, bound=engine.bound if not engine.nullpool else "fixed",
                     parts=engine.parts,
                     note=f"{engine.note}; {int(threads.value)} threads per worker share it "
                          "(gthread), the gunicorn master opens none (no --preload)")]
    if role == "beat":
        one = Term(label="celery beat processes", value=1, source=Source.default_of(
            "celery beat: one process", key="beat"))
        return [Pool(label=f"{LABEL}: celery beat ({shown})", size=engine.size,
                     processes=one, bound=engine.bound, note=engine.note, parts=engine.parts)]
    info = ctx.processes()
    processes = info.processes
    configured = _celery_config_concurrency(ctx)
    if configured is not None and info.cpu_formula is not None:
        processes = configured  # no -c on the command line: CeleryConfig's, not cpu_count()
    pool = Pool(label=f"{LABEL}: celery worker ({shown})",
                size=Term(label=engine.size.label, value=1 if engine.nullpool else
                          engine.size.value, source=engine.size.source),
                processes=processes, bound=engine.bound, parts=engine.parts,
                note=f"{engine.note}; each prefork child opens its own (celery_app.py "
                     "reset_db_connection_pool)")
    if processes is info.processes and info.cpu_formula is not None:
        pool = Pool(label=pool.label, size=pool.size, processes=processes, bound="cpu",
                    parts=pool.parts,
                    note=pool.note + f"; {processes.label if processes else 'processes'} from "
                    f"{info.cpu_formula.text}", cpu_formula=info.cpu_formula,
                    cpus=ctx.cpus_term(), node=ctx.node)
    return [pool]

