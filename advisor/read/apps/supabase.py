"""Supabase's services run from their published images (the supabase-kubernetes chart,
self-hosted installs), configured by env. Each default read in the service's own
source, at the commits named:

- Auth / GoTrue (supabase/auth, supabase/gotrue; supabase/auth bc32168e, v2.196.0):
  envconfig prefix GOTRUE (internal/conf/confload/confload.go `envconfig.Process("gotrue",
  ...)`), so DBConfiguration.MaxPoolSize is GOTRUE_DB_MAX_POOL_SIZE ("MaxPoolSize defaults
  to 0 (unlimited)", internal/conf/configuration.go:127-128). internal/storage/dial.go
  ApplyConfig calls `sqldb.SetMaxOpenConns(MaxPoolSize)` (Go database/sql: 0 is no
  limit), unless GOTRUE_DB_CONN_PERCENTAGE (1-100) makes it that share of the server's
  max_connections, asked with SHOW max_connections at start (applyPercentageLimits).
- Storage (supabase/storage-api; supabase/storage 4fa61fba): single-tenant, one pg Pool
  of DATABASE_MAX_CONNECTIONS, default 20 (src/config.ts databaseMaxConnections), on
  DATABASE_POOL_URL or else DATABASE_URL (src/internal/database/client.ts); with
  WORKERS_NUM workers each holds ceil(max / workers) (pg-connection.ts getSettings), and
  with CLUSTER_DISCOVERY (ECS, EKS) the max is shared by the pods it discovers. With
  PG_QUEUE_ENABLE (or ENABLE_QUEUE_EVENTS) = true, pg-boss's QueueDB pool of
  PG_QUEUE_MAX_CONNECTIONS, default 4 (`Number(...) || 4`), on PG_QUEUE_CONNECTION_URL or
  else DATABASE_URL (src/internal/queue/queue.ts). MULTI_TENANT: one pool per tenant,
  not known here. The first of those URL variables that is set decides: one set from a
  Secret not held here leaves where that pool connects not known (never the next
  variable's server: StackContext.hidden_route).
- postgres-meta (supabase/postgres-meta 641831e): every request makes a PostgresMeta with
  DEFAULT_POOL_CONFIG `max: 1` and ends it (src/server/constants.ts:69-70,
  routes/*.ts `new PostgresMeta(config)` ... `pgMeta.end()`): one connection per
  request in flight, with no limit on requests.
"""

from __future__ import annotations

import math

from msgspec.structs import replace

from advisor.model import Pool, Source, Term
from advisor.read.apps.base import StackContext, image_is
from advisor.read.apps.urls import route_from_url

GOTRUE_IMAGES = ("supabase/gotrue", "supabase/auth", "netlify/gotrue")
STORAGE_IMAGES = ("supabase/storage-api",)
META_IMAGES = ("supabase/postgres-meta",)
GOTRUE = "Supabase Auth (GoTrue) GOTRUE_DB_MAX_POOL_SIZE"
STORAGE = "Supabase Storage DATABASE_MAX_CONNECTIONS"
STORAGE_QUEUE = "Supabase Storage pg-boss queue PG_QUEUE_MAX_CONNECTIONS"
META = "postgres-meta (one pool of max 1 per request)"


def is_gotrue(image: str) -> bool:
    return image_is(image, GOTRUE_IMAGES)


def is_storage(image: str) -> bool:
    return image_is(image, STORAGE_IMAGES)


def is_postgres_meta(image: str) -> bool:
    return image_is(image, META_IMAGES)


def _true(ctx: StackContext, *names: str) -> bool:
    """The first of `names` that is set, compared with "true" (storage's
    getOptionalConfigFromEnv(name, fallback))."""
    for name in names:
        value = ctx.env_value(name)
        if value is not None:
            return value == "true"
    return False


def _routed(ctx: StackContext, pool: Pool, *names: str) -> Pool:
    """`pool` on the route of the first of `names` that is set (storage reads `A || B`);
    when that one's value is not held here (a Secret's), marked as connecting where the
    repository does not say (StackContext.hidden_route): not the next variable's host,
    nor any other URL of the container."""
    for name in names:
        var = ctx.env(name)
        if var is None:
            continue
        if var.value is None:
            (pool,) = ctx.hidden_route([pool], pool.label, name, ctx.env_source(name))
            return pool
        if var.value:  # an empty value is unset to `||`
            route = route_from_url(var.value, ctx.env_source(name))
            return replace(pool, route=route) if route is not None else pool
    return pool


def gotrue_pools(ctx: StackContext) -> list[Pool]:
    if ctx.container.role == "init":
        return []
    pct = ctx.env_int(GOTRUE, "GOTRUE_DB_CONN_PERCENTAGE")
    if pct is False:
        return []
    if pct is not None and pct[0] > 0:
        ctx.unknown.append(
            f"GOTRUE_DB_CONN_PERCENTAGE {pct[0]} at {pct[1].label()}: the pool is "
            f"{min(pct[0], 100)}% of the server's max_connections, asked at start "
            "(internal/storage/dial.go applyPercentageLimits)")
        return []
    size = ctx.env_int(GOTRUE, "GOTRUE_DB_MAX_POOL_SIZE")
    if size is False:
        return []
    if size is not None and size[0] > 0:
        return [ctx.pool(GOTRUE, size[0], size[1], per_process=False)]
    source = size[1] if size is not None else Source.default_of(
        "Supabase Auth default GOTRUE_DB_MAX_POOL_SIZE 0 = database/sql without a limit "
        "(internal/conf/configuration.go MaxPoolSize; storage/dial.go SetMaxOpenConns)",
        key="GOTRUE_DB_MAX_POOL_SIZE")
    return [ctx.pool(GOTRUE, 0, source, bound="unbounded", per_process=False,
                     note="GOTRUE_DB_MAX_POOL_SIZE unset or 0: no limit "
                          "(SetMaxOpenConns(0))")]


def storage_pools(ctx: StackContext) -> list[Pool]:
    if ctx.container.role == "init":
        return []
    if _true(ctx, "MULTI_TENANT", "IS_MULTITENANT"):
        ctx.unknown.append("Supabase Storage with MULTI_TENANT: one pool per tenant, "
                           "their number and sizes are in its tenants table")
        return []
    if ctx.env_value("CLUSTER_DISCOVERY") in ("ECS", "EKS"):
        ctx.unknown.append("Supabase Storage with CLUSTER_DISCOVERY: DATABASE_MAX_CONNECTIONS "
                           "is divided by the pods it discovers at run time "
                           "(pg-connection.ts getSettings)")
        return []
    given = ctx.env_int(STORAGE, "DATABASE_MAX_CONNECTIONS")
    workers = ctx.env_int(STORAGE, "WORKERS_NUM")
    if given is False or workers is False:
        return []
    # parseInt(x || '20'): an empty value is the default too
    size, size_src = given if given is not None and given[0] > 0 else (20, Source.default_of(
        "Supabase Storage default DATABASE_MAX_CONNECTIONS 20 (src/config.ts "
        "databaseMaxConnections)", key="DATABASE_MAX_CONNECTIONS"))
    n_workers = max(workers[0], 1) if workers is not None else 1
    pool = ctx.pool(STORAGE, math.ceil(size / n_workers), size_src,
                    bound="fixed" if given is not None else "default", per_process=False,
                    note="" if n_workers == 1 else
                    f"each of WORKERS_NUM {n_workers} workers holds ceil({size} / {n_workers})")
    if n_workers > 1 and workers is not None:
        pool = replace(pool, processes=Term(label="WORKERS_NUM (workers)", value=n_workers,
                                            source=workers[1]))
    pools = [_routed(ctx, pool, "DATABASE_POOL_URL", "DATABASE_URL")]
    if _true(ctx, "PG_QUEUE_ENABLE", "ENABLE_QUEUE_EVENTS"):
        queue = ctx.env_int(STORAGE_QUEUE, "PG_QUEUE_MAX_CONNECTIONS")
        if queue is False:
            return []
        q_size, q_src = queue if queue is not None and queue[0] > 0 else (4, Source.default_of(
            "Supabase Storage default PG_QUEUE_MAX_CONNECTIONS 4 (src/config.ts "
            "pgQueueMaxConnections)", key="PG_QUEUE_MAX_CONNECTIONS"))
        pools.append(_routed(ctx, ctx.pool(
            STORAGE_QUEUE, q_size, q_src, bound="fixed" if queue is not None else "default",
            per_process=False), "PG_QUEUE_CONNECTION_URL", "DATABASE_URL"))
    return pools


def postgres_meta_pools(ctx: StackContext) -> list[Pool]:
    if ctx.container.role == "init":
        return []
    return [ctx.pool(META, 1, Source.default_of(
        "postgres-meta: DEFAULT_POOL_CONFIG max 1, a new pool per request "
        "(src/server/constants.ts)", key="max"), bound="unbounded", per_process=False,
        note="one connection per request in flight, and no limit on requests")]
