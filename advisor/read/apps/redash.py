"""Redash from its image (redash/redash; getredash/contrib-helm-chart runs it with
`sh -c "...; exec /app/bin/docker-entrypoint server|worker|scheduler|create_db"`).
Read in getredash/redash at v25.8.0 (67a95e9dcc), the same lines at v10.1.0
(2589bef1f2) and v26.3.0 (87af4dc6b3):

- One Flask-SQLAlchemy engine per process on REDASH_DATABASE_URL. Flask-SQLAlchemy 2.5.1
  (poetry.lock) sets pool_size from SQLALCHEMY_POOL_SIZE and max_overflow from
  SQLALCHEMY_MAX_OVERFLOW when not None (pallets-eco/flask-sqlalchemy 2.5.1 da0e0df80c
  flask_sqlalchemy/__init__.py:912,915); redash/settings/__init__.py:34-36 reads both
  from the env (int_or_none, None when unset) and SQLALCHEMY_DISABLE_POOL (parse_boolean,
  default "false"), and redash/models/base.py:20-28 RedashSQLAlchemy.apply_pool_defaults
  sets poolclass NullPool when it is true. Unset: SQLAlchemy 1.3.24's QueuePool, pool_size
  5 + max_overflow 10, counted whole per process as the repository counts every
  SQLAlchemy engine (advisor/read/apps/sqlalchemy.py, superset.py).
- bin/docker-entrypoint (the image's ENTRYPOINT, CMD `server`: Dockerfile:119-120):
  - server (:44-50): gunicorn `-w${REDASH_WEB_WORKERS:-4}`, sync workers, no --preload:
    an engine per worker, the master opens none.
  - worker (:16-23): `export WORKERS_COUNT=${WORKERS_COUNT:-2}`, `exec supervisord -c
    worker.conf`; worker.conf:12-15 runs numprocs=%(ENV_WORKERS_COUNT)s copies of
    `./manage.py rq worker`. Each forks one work horse at a time for a job (rq 1.16.1) and
    does not query the database itself (redash/cli/rq.py:32-47, redash/tasks/worker.py
    HardLimitingWorker): one engine per copy. The healthcheck event listener reads Redis.
  - scheduler (:4-8): `manage.py rq scheduler`: schedule_periodic_jobs and rq-scheduler's
    run() read and write Redis only (redash/tasks/schedule.py): no connection.
  - create_db (:52-54), manage: one manage.py command, single-threaded: 1 connection.
- Releases before 10.0 ran Celery workers (v8.0.0 bin/docker-entrypoint): not read.
- With the application's source beside the image, that source is read instead
  (advisor/read/apps/sqlalchemy.py, processes.py, supervisord.py), not these defaults.
"""

from __future__ import annotations

from typing import Literal

from msgspec.structs import replace

from advisor.model import EnvVar, Pool, Source, Term
from advisor.read.apps.base import StackContext, env_from_label, image_is, tag_version
from advisor.read.apps.cmdline import script_tail, shell_command
from advisor.read.apps.numbers import parse_int

LABEL = "Redash metadata SQLAlchemy engine"
POOL_SIZE = 5  # SQLAlchemy 1.3.24 QueuePool default pool_size
MAX_OVERFLOW = 10  # SQLAlchemy 1.3.24 QueuePool default max_overflow
WEB_WORKERS = 4  # bin/docker-entrypoint -w${REDASH_WEB_WORKERS:-4}
WORKERS_COUNT = 2  # bin/docker-entrypoint WORKERS_COUNT=${WORKERS_COUNT:-2}
FIRST = (10, 0)
_AT = "getredash/redash v25.8.0 (67a95e9dcc)"
_NEWEST = "v26.3.0 (87af4dc6b3)"
_ENGINE_VARS = ("SQLALCHEMY_DISABLE_POOL", "SQLALCHEMY_POOL_SIZE", "SQLALCHEMY_MAX_OVERFLOW")
_ONE_OFF = frozenset({"create_db", "manage"})
_NO_DB = frozenset({"scheduler", "workers_healthcheck", "help"})
Role = Literal["server", "worker", "scheduler", "one-off", "other"]


def is_redash(image: str) -> bool:
    return image_is(image, ("redash/redash",))


def _process(ctx: StackContext) -> tuple[list[str], dict[str, EnvVar]]:
    """The words the container's process runs and its env: a `sh -c` script (the
    chart's) followed to its `exec` command, with what the script exports before it."""
    words = [*ctx.container.command, *ctx.container.args]
    env = ctx.env_map()
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in ("sh", "bash") and \
            words[1].startswith("-") and "c" in words[1]:
        tail = script_tail(words[2], env, lambda _n: ctx.container.source)
        if tail is None:
            return [], env
        line = shell_command(tail.text, tail.source, tail.scope, origin="script")
        return [w.text for w in line.words], {**env, **tail.exported}
    return words, env


def _role(words: list[str]) -> tuple[Role, str]:
    """(role, the entrypoint function or command read)."""
    if not words:
        return "server", "server"  # the image's CMD (Dockerfile:120)
    if words[0].rsplit("/", 1)[-1] == "docker-entrypoint":
        words = words[1:]
        if not words:
            return "other", "docker-entrypoint"
    first = words[0].rsplit("/", 1)[-1]
    if first == "manage.py" or first == "manage":
        rest = words[1:3]
        if rest == ["rq", "worker"]:
            return "worker", "manage.py rq worker"
        if rest in (["rq", "scheduler"], ["rq", "healthcheck"]):
            return "scheduler", f"manage.py rq {rest[1]}"
        return "one-off", " ".join(words[:3])
    if first in ("server", "worker"):
        return first, first  # type: ignore[return-value]
    if first in _NO_DB:
        return "scheduler", first
    if first in _ONE_OFF:
        return "one-off", first
    return "other", " ".join(words[:2])


def _number(ctx: StackContext, env: dict[str, EnvVar], name: str, least: int
            ) -> tuple[int, Source] | Literal[False] | None:
    """The variable as a number; None when unset; False (said in ctx.unknown) when its
    value is not held or not a number."""
    var = env.get(name)
    if var is None:
        if (hidden := ctx.env_from_hidden(name)) is not None:
            ctx.unknown.append(f"{LABEL}: {name} may be set by {env_from_label(hidden)}")
            return False
        return None
    source = replace(var.source, key=name)
    if var.value is None:
        ctx.hidden_size(LABEL, name, source)
        return False
    n = parse_int(var.value)
    if n is None or n < least:
        ctx.unknown.append(f"{LABEL}: {name} at {source.label()} is {var.value!r}, not a "
                           "number pool-advisor can read")
        return False
    return n, source


def _count(got: tuple[int, Source] | None, label: str, default: int, why: str, key: str
           ) -> Term:
    """A process count: as read (_number), else the entrypoint's default, named."""
    return Term(label=label, value=got[0] if got else default,
                source=got[1] if got else Source.default_of(why, key=key))


def _engine(ctx: StackContext, env: dict[str, EnvVar], at: str
            ) -> tuple[Term, Literal["fixed", "default", "unbounded"], str, list[Term]] | None:
    """(per-process size, bound, note, the settings a QueuePool's size is the sum of,
    each at its own source, for advise to move) of the engine; None when unknown (why
    said)."""
    var = env.get("SQLALCHEMY_DISABLE_POOL")
    if var is None and (hidden := ctx.env_from_hidden("SQLALCHEMY_DISABLE_POOL")):
        ctx.unknown.append(f"{LABEL}: SQLALCHEMY_DISABLE_POOL may be set by "
                           f"{env_from_label(hidden)}")
        return None
    if var is not None:
        source = replace(var.source, key="SQLALCHEMY_DISABLE_POOL")
        if var.value is None:
            ctx.hidden_size(LABEL, "SQLALCHEMY_DISABLE_POOL", source)
            return None
        flag = var.value.strip().lower()
        if flag in ("yes", "true", "on", "1"):
            # one thread per process (a sync worker, a job's work horse): one checkout
            return (Term(label=f"{LABEL} NullPool (one connection per thread, one thread)",
                         value=1, source=source), "fixed",
                    "SQLALCHEMY_DISABLE_POOL: NullPool (redash/models/base.py:24-25)", [])
        if flag not in ("no", "false", "off", "0", "none"):
            ctx.unknown.append(f"{LABEL}: SQLALCHEMY_DISABLE_POOL at {source.label()} is "
                               f"{var.value!r}, which Redash's parse_boolean refuses")
            return None
    size = _number(ctx, env, "SQLALCHEMY_POOL_SIZE", 0)
    over = _number(ctx, env, "SQLALCHEMY_MAX_OVERFLOW", -1)
    if size is False or over is False:
        return None
    parts = [_part(size, "SQLALCHEMY_POOL_SIZE", "pool_size", POOL_SIZE, at),
             _part(over, "SQLALCHEMY_MAX_OVERFLOW", "max_overflow", MAX_OVERFLOW, at)]
    if size is None and over is None:
        return (Term(label=f"{LABEL} (pool_size + max_overflow)", value=POOL_SIZE + MAX_OVERFLOW,
                     source=Source.default_of(
                         f"Redash SQLALCHEMY_POOL_SIZE / SQLALCHEMY_MAX_OVERFLOW unset "
                         f"(redash/settings/__init__.py:34-35, {at}): SQLAlchemy 1.3.24 "
                         "QueuePool pool_size 5 + max_overflow 10",
                         key="SQLALCHEMY_POOL_SIZE")), "default",
                "SQLAlchemy QueuePool defaults", parts)
    n_size, size_src = size if size is not None else (POOL_SIZE, None)
    n_over, over_src = over if over is not None else (MAX_OVERFLOW, None)
    note = f"QueuePool pool_size {n_size} + max_overflow {n_over}" + \
        ("" if size is not None else " (pool_size: SQLAlchemy 1.3.24 default)") + \
        ("" if over is not None else " (max_overflow: SQLAlchemy 1.3.24 default)")
    source = size_src or over_src
    assert source is not None
    if n_size == 0 or n_over < 0:  # QueuePool: pool_size 0 or max_overflow -1, no limit
        return Term(label=LABEL, value=0, source=source), "unbounded", \
            note + ": QueuePool without a limit", []
    return (Term(label=f"{LABEL} (pool_size + max_overflow)", value=n_size + n_over,
                 source=source), "fixed", note, parts)


def _part(got: tuple[int, Source] | None, name: str, what: str, default: int, at: str
          ) -> Term:
    """One setting of the engine's size where the env sets it, else SQLAlchemy 1.3.24's
    default (Flask-SQLAlchemy 2.5.1 passes none when the variable is unset), named by
    the variable to set: advise moves the settings, not the sum at one of them."""
    if got is not None:
        return Term(label=name, value=got[0], source=got[1])
    return Term(label=name, value=default, source=Source.default_of(
        f"Redash {name} unset (redash/settings/__init__.py:34-35, {at}): SQLAlchemy "
        f"1.3.24 QueuePool {what} {default}", key=name))


def redash_pools(ctx: StackContext) -> list[Pool]:
    if ctx.files("python"):
        # its application source is beside it: the SQLAlchemy reader and the process
        # readers (entrypoint, supervisord) read that, not the image's defaults
        return []
    words, env = _process(ctx)
    role, what = _role(words)
    if role == "other":
        ctx.unknown.append(f"{LABEL} ({ctx.container.image}): `{what or 'no command'}` is "
                           "not a Redash command pool-advisor reads (server, worker, "
                           "scheduler, create_db, manage are)")
        return []
    version = tag_version(ctx.container.image)
    if version is not None and version < FIRST:
        ctx.unknown.append(f"{LABEL}: Redash {version[0]}.{version[1]} (before 10.0, Celery "
                           "workers) is not read by pool-advisor")
        return []
    at = _AT if version is not None else \
        f"{_AT}; image tag names no version: read as {_NEWEST}, the newest read, the same"
    if role == "scheduler":
        return [ctx.pool(f"Redash {what} (no database connection)", 0, Source.default_of(
            f"Redash `{what}` reads and writes Redis only (redash/cli/rq.py, "
            f"redash/tasks/schedule.py at {at})", key=what), per_process=False)]
    if role == "one-off":
        return [ctx.pool(f"Redash {what}", 1, Source.default_of(
            f"one Redash manage.py command, single-threaded: 1 connection "
            f"(bin/docker-entrypoint, redash/cli/database.py at {at})", key=what),
            per_process=False, note="a run that exits, not a serving pool")]
    engine = _engine(ctx, env, at)
    if engine is None:
        return []
    size, bound, note, parts = engine
    shown = f"Redash {version[0]}.{version[1]}" if version else "Redash"
    if role == "server":
        got = _number(ctx, env, "REDASH_WEB_WORKERS", 1)
        if got is False:
            return []
        processes = _count(got, "gunicorn sync workers (REDASH_WEB_WORKERS)", WEB_WORKERS,
                           f"Redash bin/docker-entrypoint:49 -w${{REDASH_WEB_WORKERS:-4}} "
                           f"({at})", "REDASH_WEB_WORKERS")
        return [Pool(label=f"{LABEL}: gunicorn workers ({shown})", size=size,
                     processes=processes, bound=bound, parts=parts,
                     note=f"{note}; an engine per sync worker, the gunicorn master opens "
                          "none (no --preload)")]
    if what == "manage.py rq worker":  # run directly, not through supervisord: one
        got: tuple[int, Source] | Literal[False] | None = (1, Source.default_of(
            f"one `manage.py rq worker` process (redash/cli/rq.py:32-47, {at})",
            key="rq worker"))
    else:
        got = _number(ctx, env, "WORKERS_COUNT", 1)
    if got is False:
        return []
    processes = _count(got, "rq workers (supervisord numprocs=WORKERS_COUNT)", WORKERS_COUNT,
                       f"Redash bin/docker-entrypoint:19 WORKERS_COUNT=${{WORKERS_COUNT:-2}}, "
                       f"worker.conf:15 numprocs ({at})", "WORKERS_COUNT")
    return [Pool(label=f"{LABEL}: rq workers ({shown})", size=size, processes=processes,
                 bound=bound, parts=parts,
                 note=f"{note}; one work horse at a time per rq worker, its parent queries "
                      "no database")]
