"""Unleash run from its published image, unleashorg/unleash-server (CMD `node
dist/server.js`: one Node process, no cluster). Read in Unleash/unleash at v7.5.0 (the
appVersion of the Unleash/helm-charts unleash chart 5.6.6):

- src/lib/create-config.ts:237-269 defaultDbOptions: user DATABASE_USERNAME, host
  DATABASE_HOST, port `parseEnvVarNumber(DATABASE_PORT, 5432)`, database
  `DATABASE_NAME || 'unleash'`, pool `min: parseEnvVarNumber(DATABASE_POOL_MIN, 0)`,
  `max: parseEnvVarNumber(DATABASE_POOL_MAX, 4)` (lines 249-250; the same default from
  v3.17.6 src/lib/options.js `safeNumber(process.env.DATABASE_POOL_MAX, 4)` to v7.5.2).
  parseEnvVarNumber (src/lib/util/parseEnvVar.ts) is `Number.parseInt(value, 10)`, the
  default when the value is empty or not a number. createConfig (lines 529-553) merges
  DATABASE_URL (pg-connection-string `parse`), then DATABASE_URL_FILE's text, over those:
  a URL's host, port, database and user win over DATABASE_HOST and the others.
- src/lib/db/db-pool.ts createDb: the one knex (`pool: db.pool`) of the server
  (server-impl.ts createApp `fm.createDb(config)`); the session store uses the same db
  (createSessionDb(config, db)). No LISTEN client.
- Before it, start() (server-impl.ts:373-401) checks and runs db-migrate's migrations,
  each on a connection db-migrate closes when done (db-migrate 0.11.14
  lib/commands/on-complete.js `migrator.driver.close`), and, with the migrationLock flag
  (MIGRATION_LOCK, default true, src/lib/types/experimental.ts:117), holds
  pg_advisory_lock on a pg.Client of its own meanwhile (src/lib/util/db-lock.ts
  withDbLock): 2 connections at once, all closed before the knex pool opens. A pod holds
  at most max(DATABASE_POOL_MAX, 2) then; DATABASE_DISABLE_MIGRATION=true skips it.
- unleashorg/unleash-enterprise: its source is not public; its pool is not read here.
"""

from __future__ import annotations

import re

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext, image_is, tag_version
from advisor.read.apps.urls import route_from_parts, route_from_url

SERVER_IMAGES = ("unleashorg/unleash-server",)
ENTERPRISE_IMAGES = ("unleashorg/unleash-enterprise",)
POOL_MAX = 4  # create-config.ts defaultDbOptions pool.max
LABEL = "Unleash knex pool max (DATABASE_POOL_MAX)"
MIGRATION_CONNECTIONS = 2  # the db-lock pg.Client + db-migrate's connection


def is_unleash(image: str) -> bool:
    return image_is(image, SERVER_IMAGES + ENTERPRISE_IMAGES)


def _js_parse_int(text: str) -> int | None:
    """Number.parseInt(text, 10): leading spaces, a sign, the digits that follow; None
    for NaN."""
    m = re.match(r"\s*([+-]?\d{1,15})", text)  # past 15 digits: as good as no limit
    return int(m.group(1)) if m else None


def _env_bool(ctx: StackContext, name: str, default: bool) -> bool:
    """parseEnvVarBoolean: 'true', '1' or 't' when set and not empty."""
    value = ctx.env_value(name)
    return value in ("true", "1", "t") if value else default


def _route(ctx: StackContext):
    url = ctx.env("DATABASE_URL")
    if url is not None:
        if url.value:
            return route_from_url(url.value, ctx.env_source("DATABASE_URL"))
        if url.value is None:
            return None  # a Secret's URL: the host the env names otherwise is not the one
    if ctx.env("DATABASE_URL_FILE") is not None:
        return None  # the file's URL wins when it exists: not held here
    host = ctx.env("DATABASE_HOST")
    if host is None or not host.value:
        return None
    return route_from_parts(host.value, ctx.env_value("DATABASE_PORT") or None,
                            ctx.env_value("DATABASE_NAME") or "unleash",
                            ctx.env_value("DATABASE_USERNAME"), ctx.env_source("DATABASE_HOST"))


def unleash_pools(ctx: StackContext) -> list[Pool]:
    """Unleash's one knex pool, DATABASE_POOL_MAX (default 4) per pod."""
    if ctx.container.role == "init":
        return []
    line = " ".join((*ctx.container.command, *ctx.container.args))
    if ctx.container.command and "server.js" not in line and "index.js" not in line:
        return []  # another program of the image
    if image_is(ctx.container.image, ENTERPRISE_IMAGES):
        ctx.unknown.append(f"{ctx.container.name}: Unleash Enterprise "
                           f"({ctx.container.image}): its source is not public, so its "
                           "database pool is not read by pool-advisor")
        return []
    version = tag_version(ctx.container.image)
    if version is not None and version < (4, 0):
        ctx.unknown.append(f"{ctx.container.name}: Unleash {version[0]}.{version[1]} (before "
                           "v4's create-config.ts) is not read by pool-advisor")
        return []
    var = ctx.env("DATABASE_POOL_MAX")
    if var is not None and var.value is None:
        ctx.hidden_size(LABEL, "DATABASE_POOL_MAX", ctx.env_source("DATABASE_POOL_MAX"))
        return []
    given = _js_parse_int(var.value) if var is not None and var.value else None
    if given is not None and given < 1:
        ctx.unknown.append(f"{LABEL} at {ctx.env_source('DATABASE_POOL_MAX').label()} is "
                           f"{var.value!r}, not a pool size pool-advisor can read")  # type: ignore[union-attr]
        return []
    if given is None:
        size, source, bound = POOL_MAX, Source.default_of(
            "Unleash default DATABASE_POOL_MAX 4 (src/lib/create-config.ts defaultDbOptions "
            "pool.max)", key="DATABASE_POOL_MAX"), "default"
        note = "DATABASE_POOL_MAX unset" if var is None else \
            f"DATABASE_POOL_MAX {var.value!r} is no number: parseEnvVarNumber's default 4"
    else:
        size, source, bound, note = given, ctx.env_source("DATABASE_POOL_MAX"), "fixed", ""
    migrates = not _env_bool(ctx, "DATABASE_DISABLE_MIGRATION", False) and \
        _env_bool(ctx, "MIGRATION_LOCK", True)
    if migrates and size < MIGRATION_CONNECTIONS:
        size, bound = MIGRATION_CONNECTIONS, "fixed"
        source = Source.default_of(
            "Unleash start(): the migration lock's pg.Client (db-lock.ts withDbLock) and "
            "db-migrate's connection at once, before the knex pool opens", key="MIGRATION_LOCK")
        note = (f"DATABASE_POOL_MAX {given}: the migration at start holds 2 (its lock and "
                "db-migrate's connection), more than the pool")
    return [ctx.pool(LABEL, size, source, bound=bound, per_process=False,  # type: ignore[arg-type]
                     route=_route(ctx), note=note)]
