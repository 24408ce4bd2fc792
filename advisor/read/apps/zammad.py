"""Zammad run from its image (ghcr.io/zammad/zammad, zammad/zammad-docker-compose): a
Rails application whose files are in the image, configured by env only.

Read in zammad/zammad:
- config/pre_initializers/database_url.rb (the image has no config/database.yml):
  DATABASE_URL, when unset, is built from POSTGRESQL_HOST/PORT/USER/DB with
  POSTGRESQL_OPTIONS appended (a `?` added when missing), so its `pool=N` is Active
  Record's pool per process. The older contrib/docker/docker-entrypoint.sh appended it
  the same way. The image sets `POSTGRESQL_OPTIONS=?pool=50` (Dockerfile ENV).
- config/puma.rb: `workers Integer(ENV['WEB_CONCURRENCY'] || 0)`, `threads
  Integer(ENV['MIN_THREADS'] || 5), Integer(ENV['MAX_THREADS'] || 30)`: the web server
  holds at most one connection per thread, never more than its pool.
- bin/docker-entrypoint: `zammad-railsserver` runs puma, `zammad-scheduler`
  script/background-worker.rb, `zammad-websocket` script/websocket-server.rb,
  `zammad-nginx` nginx (no database), `zammad-init` rake and rails runner commands one
  after another; another command runs as given.
- lib/background_services.rb, service_config.rb: every service is a thread of the one
  process unless ZAMMAD_<SERVICE>_WORKERS > 0 forks that many processes for it; the
  threads are not bounded statically, so each process counts its whole pool.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import parse_qs

from msgspec.structs import replace

from advisor.model import Pool, Source, Term
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.processes import puma_workers_label

Bound = Literal["fixed", "default"]
NAMES = ("zammad", "zammad-docker-compose")
IMAGE_POOL = 50  # Dockerfile ENV POSTGRESQL_OPTIONS=?pool=50
RAILS_DEFAULT_POOL = 5  # Active Record HashConfig#pool when the URL names none
PUMA_MAX_THREADS = 30  # config/puma.rb MAX_THREADS || 30
LABEL = "Zammad Rails pool (POSTGRESQL_OPTIONS pool=)"
# ZAMMAD_PROCESS_DELAYED_JOBS_WORKERS and friends (not ..._WORKER_THREADS)
_FORK_VAR = re.compile(r"ZAMMAD_\w+_WORKERS")


def _role(ctx: StackContext) -> str:
    """Which Zammad process the container runs, from its command and arguments."""
    words = [token.rsplit("/", 1)[-1]
             for word in (*ctx.container.command, *ctx.container.args) for token in word.split()]
    for role, marks in (("railsserver", ("zammad-railsserver", "puma")),
                        ("scheduler", ("zammad-scheduler", "background-worker.rb")),
                        ("websocket", ("zammad-websocket", "websocket-server.rb")),
                        ("nginx", ("zammad-nginx", "nginx")),
                        ("backup", ("zammad-backup", "backup.sh"))):
        if any(w in marks for w in words):
            return role
    return "one-off"


def _pool_size(ctx: StackContext) -> tuple[int, Source, Bound] | None:
    """(pool, where, bound) from DATABASE_URL's or POSTGRESQL_OPTIONS' `pool=`, else the
    image's ?pool=50; None when a Secret holds the value (unknown, said so)."""
    for name in ("DATABASE_URL", "POSTGRESQL_OPTIONS"):
        var = ctx.env(name)
        if var is None:
            continue
        if var.value is None:
            ctx.hidden_size(LABEL, name, ctx.env_source(name))
            return None
        query = var.value.split("?", 1)[-1] if "?" in var.value or name == "POSTGRESQL_OPTIONS" \
            else ""
        given = (parse_qs(query).get("pool") or [None])[-1]
        if given is None:
            # the URL names no pool: Active Record's default, not the image's
            return RAILS_DEFAULT_POOL, Source.default_of(
                f"Active Record default pool 5 (HashConfig#pool): {name} sets no pool=",
                key="pool"), "default"
        n = parse_int(given)
        if n is None:
            ctx.unread_size(LABEL, ctx.env_source(name))
            return None
        return n, replace(ctx.env_source(name), key=f"{name} pool="), "fixed"
    return IMAGE_POOL, Source.default_of(
        "Zammad image default POSTGRESQL_OPTIONS=?pool=50 (Dockerfile ENV)", key="pool"), \
        "default"


def _web_processes(ctx: StackContext) -> Term:
    """Puma workers: -w on the command line (the chart's), else WEB_CONCURRENCY (or the
    older entrypoint's ZAMMAD_WEB_CONCURRENCY), else 0: single mode, one process."""
    info = ctx.processes()
    if info.server == "puma" and info.processes is not None and info.processes.source.path:
        return info.processes
    for name in ("WEB_CONCURRENCY", "ZAMMAD_WEB_CONCURRENCY"):
        n = parse_int(ctx.env_value(name))
        if n is not None:
            return Term(label=puma_workers_label(n), value=max(n, 1),
                        source=ctx.env_source(name))
    return Term(label=puma_workers_label(0), value=1, source=Source.default_of(
        "Zammad config/puma.rb workers WEB_CONCURRENCY || 0 (single mode)", key="workers"))


def _web_threads(ctx: StackContext) -> Term:
    info = ctx.processes()
    if info.server == "puma" and info.threads is not None and info.threads.source.path:
        return info.threads  # -t on the command line or MAX_THREADS in the env
    return Term(label="Puma max threads", value=PUMA_MAX_THREADS, source=Source.default_of(
        "Zammad config/puma.rb threads MIN_THREADS || 5, MAX_THREADS || 30", key="threads"))


def _scheduler_processes(ctx: StackContext) -> Term | None:
    """1 + the processes ZAMMAD_<SERVICE>_WORKERS fork; None: only the main process."""
    forks = [(e.name, parse_int(e.value)) for e in ctx.container.env
             if _FORK_VAR.fullmatch(e.name)]
    counted = [(name, n) for name, n in forks if n is not None and n > 0]
    if not counted:
        return None
    names = " + ".join(f"{name}={n}" for name, n in counted)
    return Term(label=f"Zammad background-worker processes (1 + {names})",
                value=1 + sum(n for _, n in counted), source=ctx.env_source(counted[0][0]))


def zammad_pools(ctx: StackContext) -> list[Pool]:
    role = _role(ctx)
    if role == "nginx":
        # its env names the database (the chart gives every container the same env), but
        # nginx opens no connection: a named 0, so that it is no unknown client
        return [ctx.pool("Zammad nginx (no database connection)", 0, Source.default_of(
            "Zammad image running nginx (zammad-nginx): nginx opens no database connection",
            key="nginx"), per_process=False)]
    if role == "backup":
        return [ctx.pool("Zammad backup pg_dump", 1, Source.default_of(
            "Zammad contrib/docker/backup.sh: one pg_dump at a time, one connection",
            key="pg_dump"), per_process=False)]
    if role == "one-off":
        # zammad-init and `rails r` / `rake` commands run one after another, each in one
        # thread: Active Record opens its connections lazily, one per thread. How the
        # program works, not a library default to set (no PA104), as a migration's one.
        return [ctx.pool("Zammad Rails command", 1, Source.default_of(
            "a one-off Rails command (rails runner, rake) runs in one thread: Active "
            "Record opens one connection", key="pool"), per_process=False)]
    found = _pool_size(ctx)
    if found is None:
        return []
    size, src, bound = found
    label = f"Zammad {role} Rails pool"
    if role == "railsserver":
        threads = _web_threads(ctx)
        n = min(size, int(threads.value))
        pool_term = Term(label=LABEL, value=size, source=src)
        by_threads: Bound = "default" if threads.source.default else "fixed"
        counted = ctx.pool(label, n, src if n == size else threads.source, per_process=False,
                           bound=bound if n == size else by_threads,
                           note=f"pool {size} vs {int(threads.value)} Puma threads: one "
                                "connection per thread, never more than the pool")
        return [replace(counted, processes=_web_processes(ctx),
                        moves_with=[threads if n == size else pool_term])]
    pool = ctx.pool(label, size, src, per_process=False, bound=bound,
                    note="its threads are not bounded statically: the whole pool counts")
    processes = _scheduler_processes(ctx) if role == "scheduler" else None
    return [replace(pool, processes=processes)] if processes is not None else [pool]
