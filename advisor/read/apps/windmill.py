"""Windmill run from its published images (ghcr.io/windmill-labs/windmill, windmill-ee and
their -full variants; the windmill-labs/windmill-helm-charts chart), one Rust process per
container whose one sqlx pool is sized by its mode. Read in windmill-labs/windmill:

- backend/src/db_connect.rs connect_db, the newest stored version (it names
  windmill-api's db_health.rs, added in v1.753.0 by PR #10014, so v1.753.0 or later;
  windmill-labs/windmill is over the fetch limit, so not read at the chart's v1.794.0
  tag itself):
  `DATABASE_CONNECTIONS` (`n.parse::<u32>()`, an error stops the process) sets every
  mode's pool; else the server's is DEFAULT_MAX_CONNECTIONS_SERVER 50, the indexer's
  DEFAULT_MAX_CONNECTIONS_INDEXER 5, any other's DEFAULT_MAX_CONNECTIONS_WORKER 5 +
  max(num_workers, 1) - 1 (windmill-common lib.rs: SERVER 50, WORKER 5, INDEXER 5). The
  operator (`windmill operator`) connects with DEFAULT_MAX_CONNECTIONS_OPERATOR 2
  (operator_connection), not DATABASE_CONNECTIONS.
- backend/src/main.rs windmill_main (@158b9c0c): MODE (lower-cased; windmill-common
  utils.rs MODE_AND_ADDONS) server, worker, indexer, agent (EE, over HTTP: no pool), mcp,
  standalone+search, anything else or unset standalone. num_workers is 0 in server,
  indexer and mcp modes, 8 in native mode (NATIVE_MODE "1"/"true" or WORKER_GROUP
  "native": worker.rs is_native_mode_from_env), else NUM_WORKERS (i32, default 1), and
  NUM_WORKERS > 1 outside native mode falls back to 1 unless I_ACK_NUM_WORKERS_IS_UNSAFE
  is "1"/"true". server_mode is standalone or server unless DISABLE_SERVER parses true.
  The startup pool (initial_connection, max 2) is dropped before connect_db: an
  explicit `drop(conn)` ("With low PostgreSQL max_connections, both pools existing
  simultaneously can exhaust all available connection slots"), so the two are never
  held together. Config and cache changes are polled from the notify_event table
  through the main pool (`process_notify_event`, every LISTEN_NEW_EVENTS_INTERVAL_SEC):
  no connection of their own.

Older main.rs (@005fbdf8, before native mode, so before v1.637.0) held one connection
more per server and worker process: `listen_pg` made a `PgListener::connect(url)` of
its own, outside connect_db's pool, for the process's life, and the startup pool was
only shadowed (`let conn = if mode == Agent {conn} else {connect_db(..)}`), its
connection kept until sqlx's idle_timeout (10 min). PR #7778 ("replace LISTEN/NOTIFY
with polling-based event system", opened 2026-02-03, a lower number than native mode's
#7939) removed the listener; those tags are not read (below), so neither is counted.

Versions, by the image tag: native mode came in v1.637.0 (PR #7939, release PR #7971);
until v1.655.0 (PR #8332: "connect_db re-read NUM_WORKERS env which is never set",
release PR #8312) the pool read NUM_WORKERS from the env (db_connect.rs @3e67f263:
5 + NUM_WORKERS (u32, default 1) - 1) while native mode ran 8 workers, so a native
worker held 5. The operator command came in v1.638.0 (its chart release
1.638.0-operator). Tags before v1.637.0 are not read (when the worker default became 5
is not placed): their connections are unknown. A worker group made native from the
instance's worker-group config (stored in the database, not in the repository) forces 8
workers too: said in the pool's note, not counted.
"""

from __future__ import annotations

import re

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext, tag_version

REPOS = ("windmill", "windmill-ee", "windmill-full", "windmill-ee-full")
SERVER, WORKER, INDEXER, OPERATOR, STARTUP = 50, 5, 5, 2, 2
NATIVE_WORKERS = 8
NATIVE_FROM = (1, 637)  # PR #7939
POOL_READS_WORKERS_FROM = (1, 655)  # PR #8332
OPERATOR_FROM = (1, 638)
LABEL = "Windmill sqlx pool (db_connect.rs connect_db)"
DB_CONFIG_NOTE = ("a native_mode set in the instance's worker-group config (the "
                  "database, not the repository) would run 8 workers")


def is_windmill(image: str) -> bool:
    from advisor.read.apps.locate import image_repository

    parts = image_repository(image.lower()).split("/")
    return len(parts) >= 2 and parts[-2] == "windmill-labs" and parts[-1] in REPOS


def _rust_int(text: str, *, signed: bool) -> int | None:
    """Rust's str::parse for i32/u32: an optional sign, digits, nothing else."""
    m = re.fullmatch(r"[+-]?\d{1,12}" if signed else r"\+?\d{1,12}", text)  # longer overflows
    if m is None:
        return None
    n = int(text)
    return n if (-(2**31) <= n < 2**31 if signed else n < 2**32) else None


def _true(value: str | None) -> bool:
    return value in ("1", "true")


def _words(ctx: StackContext) -> list[str]:
    return [t for w in (*ctx.container.command, *ctx.container.args) for t in w.split()]


def windmill_pools(ctx: StackContext) -> list[Pool]:
    if ctx.container.role == "init":
        return []
    version = tag_version(ctx.container.image)
    words = _words(ctx)
    sub = next((w for w in words[1:] if not w.startswith("-")), "") \
        if words and words[0].rsplit("/", 1)[-1] == "windmill" else ""
    if sub in ("cache", "cache-rt", "version", "-v", "--version", "help", "prepare-deps"):
        return []  # main.rs: these return before connecting
    tag = ctx.container.image.rsplit(":", 1)[-1]
    if version is not None and version < NATIVE_FROM:
        ctx.unknown.append(f"Windmill {tag}: releases before v1.637.0 are not read by "
                           "pool-advisor (when their worker pool default became 5 is "
                           "not placed)")
        return []
    if sub == "operator":
        if version is not None and version < OPERATOR_FROM:
            ctx.unknown.append(f"Windmill {tag} has no `operator` command (v1.638.0+)")
            return []
        return [ctx.pool("Windmill operator sqlx pool", OPERATOR, Source.default_of(
            "Windmill operator: DEFAULT_MAX_CONNECTIONS_OPERATOR 2 (db_connect.rs "
            "operator_connection; main.rs @158b9c0c initial_connection max 2)",
            key="max_connections"), bound="fixed", per_process=False)]
    if sub == "sync-config":
        return [ctx.pool("Windmill sync-config sqlx pool", STARTUP, Source.default_of(
            "Windmill sync-config: initial_connection, max_connections(2) "
            "(db_connect.rs)", key="max_connections"), bound="fixed", per_process=False)]
    read = _settings(ctx)
    if read is None:
        return []
    mode, server_mode, native, num_workers, workers_src = read
    if mode == "agent":
        return []  # EE agent workers reach the server over HTTP, no database pool
    given = ctx.env("DATABASE_CONNECTIONS")
    if given is not None:
        n = _rust_int(given.value, signed=False) if given.value is not None else None
        if given.value is None:
            ctx.hidden_size(LABEL, "DATABASE_CONNECTIONS", ctx.env_source(given.name))
            return []
        if n is None or n < 1:
            ctx.unknown.append(f"{LABEL}: DATABASE_CONNECTIONS at "
                               f"{ctx.env_source(given.name).label()} is {given.value!r}, "
                               "not a pool size Windmill starts with")
            return []
        return [ctx.pool(LABEL, n, ctx.env_source(given.name), per_process=False)]
    if server_mode:
        return [ctx.pool(LABEL, SERVER, Source.default_of(
            "Windmill server: DEFAULT_MAX_CONNECTIONS_SERVER 50 (windmill-common lib.rs; "
            "db_connect.rs connect_db)", key="DATABASE_CONNECTIONS"), bound="default",
            per_process=False, note=f"MODE {mode}: the server's pool"
            + (", shared with its workers" if mode == "standalone" else ""))]
    if mode == "indexer":
        return [ctx.pool(LABEL, INDEXER, Source.default_of(
            "Windmill indexer: DEFAULT_MAX_CONNECTIONS_INDEXER 5 (windmill-common lib.rs; "
            "db_connect.rs connect_db)", key="DATABASE_CONNECTIONS"), bound="default",
            per_process=False, note="MODE indexer")]
    if version is not None and version < POOL_READS_WORKERS_FROM:
        # db_connect.rs @3e67f263: the env's NUM_WORKERS, whatever main.rs ran
        var = ctx.env("NUM_WORKERS")
        env_n = _rust_int(var.value, signed=False) if var is not None else None
        counted = 1 if env_n is None else env_n
        src = Source.default_of(
            f"Windmill {tag} (before v1.655.0): DEFAULT_MAX_CONNECTIONS_WORKER 5 + the "
            "env's NUM_WORKERS (default 1) - 1 (db_connect.rs @3e67f263; fixed by PR "
            "#8332)", key="DATABASE_CONNECTIONS")
        note = f"5 + NUM_WORKERS {counted} - 1" + (
            f" (NUM_WORKERS at {ctx.env_source('NUM_WORKERS').label()})"
            if env_n is not None else "")
        if native:
            note += (f"; native mode runs {NATIVE_WORKERS} workers on it (main.rs), the "
                     "pool does not grow before v1.655.0")
        return [ctx.pool(LABEL, WORKER + counted - 1, src, bound="default",
                         per_process=False, note=note)]
    # a sum of a constant and the worker count, not of two settings: DATABASE_CONNECTIONS
    # replaces it whole (connect_db), so advise sets that one variable (no Pool.parts)
    size = WORKER + max(num_workers, 1) - 1
    if native:
        src = Source.default_of(
            "Windmill native worker (v1.655.0+): DEFAULT_MAX_CONNECTIONS_WORKER 5 + 8 "
            "workers - 1 (db_connect.rs connect_db; main.rs forces NUM_WORKERS=8 in native "
            "mode, PR #8332 passes it to the pool)", key="DATABASE_CONNECTIONS")
        note = f"native mode ({workers_src.label()}): 5 + {NATIVE_WORKERS} workers - 1"
    else:
        src = Source.default_of(
            "Windmill worker: DEFAULT_MAX_CONNECTIONS_WORKER 5 + max(NUM_WORKERS, 1) - 1 "
            "(db_connect.rs connect_db), NUM_WORKERS default 1 (main.rs)",
            key="DATABASE_CONNECTIONS")
        note = f"5 + {max(num_workers, 1)} workers - 1" + (
            f" (NUM_WORKERS at {workers_src.label()})" if workers_src is not None else "")
        if mode in ("worker", "standalone"):
            note += f"; {DB_CONFIG_NOTE}"
    return [ctx.pool(LABEL, size, src, bound="default", per_process=False, note=note)]


def _settings(ctx: StackContext
              ) -> tuple[str, bool, bool, int, Source | None] | None:
    """(mode, server_mode, native, num_workers, where num_workers was set) as main.rs
    decides them; None when a variable they depend on is held in a Secret."""
    names = ("MODE", "DISABLE_SERVER", "NATIVE_MODE", "WORKER_GROUP", "NUM_WORKERS",
             "I_ACK_NUM_WORKERS_IS_UNSAFE")
    for name in names:
        var = ctx.env(name)
        if var is not None and var.value is None:
            ctx.hidden_size(LABEL, name, ctx.env_source(name))
            return None
    raw = (ctx.env_value("MODE") or "").lower()
    mode = raw if raw in ("server", "worker", "agent", "indexer", "mcp") else "standalone"
    # `DISABLE_SERVER.parse::<bool>()`: only "true" disables it
    server_mode = mode in ("standalone", "server") and ctx.env_value("DISABLE_SERVER") != "true"
    native = _true(ctx.env_value("NATIVE_MODE")) or ctx.env_value("WORKER_GROUP") == "native"
    if mode in ("server", "indexer", "mcp"):
        return mode, server_mode, native, 0, None
    if native:
        var = ctx.env("NATIVE_MODE") if _true(ctx.env_value("NATIVE_MODE")) \
            else ctx.env("WORKER_GROUP")
        return mode, server_mode, True, NATIVE_WORKERS, ctx.env_source(var.name)
    given = ctx.env_value("NUM_WORKERS")
    n = _rust_int(given, signed=True) if given is not None else None
    if n is None:
        return mode, server_mode, False, 1, None
    if n > 1 and not _true(ctx.env_value("I_ACK_NUM_WORKERS_IS_UNSAFE")):
        ctx.notices.append(f"{ctx.container.name}: NUM_WORKERS={n} outside native mode "
                           "falls back to 1 (Windmill main.rs) unless "
                           "I_ACK_NUM_WORKERS_IS_UNSAFE is set")
        return mode, server_mode, False, 1, ctx.env_source("NUM_WORKERS")
    return mode, server_mode, False, n, ctx.env_source("NUM_WORKERS")
