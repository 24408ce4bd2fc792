"""Langfuse from its published images: langfuse/langfuse (the web app) and
langfuse/langfuse-worker, one Node process each with one Prisma client.

Read in langfuse/langfuse at 6275144614 (v4.x):
- packages/shared/src/db.ts: `PrismaClientSingleton.getInstance()` builds one
  `new PrismaClient({ log, omit })` per process, with no datasources or datasourceUrl, so
  the URL is schema.prisma's `url = env("DATABASE_URL")` (packages/shared/prisma/
  schema.prisma); no other PostgreSQL client (no pg, postgres or kysely in any
  package.json; packages/shared/package.json `"@prisma/client": "^6.19.3"`, the Rust
  engine; Langfuse 3.x pinned ^5.22.0, the same pool). Prisma's pool is the URL's
  `connection_limit`, else physical cores x 2 + 1 (advisor/read/apps/prisma.py).
- web/entrypoint.sh and worker/entrypoint.sh (the images' ENTRYPOINT, under dumb-init):
  when DATABASE_URL is empty they build it as
  `postgresql://${DATABASE_USERNAME}:${DATABASE_PASSWORD}@${DATABASE_HOST}/${DATABASE_NAME}`
  (all four required, else exit 1; DATABASE_PORT is not read) and append
  `?$DATABASE_ARGS` when that is set, so a connection_limit there counts; DATABASE_ARGS
  is not read when DATABASE_URL is set. DATABASE_ARGS came in v3.13.0 (#5143, b34da5a0de);
  DATABASE_HOST in v2.7.1. The web entrypoint's `prisma migrate deploy` runs before the
  server starts (one connection, gone at peak); CMD `node ./web/server.js`,
  `node worker/dist/index.js`.
"""

from __future__ import annotations

from advisor.model import Pool
from advisor.read.apps.base import StackContext, image_is, tag_version

LANGFUSE_IMAGES = ("langfuse/langfuse", "langfuse/langfuse-worker")
LABEL = "Langfuse Prisma connection_limit"
ARGS_SINCE = (3, 13)  # DATABASE_ARGS in the entrypoints (langfuse#5143)


def is_langfuse(image: str) -> bool:
    return image_is(image, LANGFUSE_IMAGES)


def _runs_server(ctx: StackContext) -> bool:
    """No command (the image's ENTRYPOINT and CMD), or one that runs its server."""
    words = " ".join((*ctx.container.command, *ctx.container.args))
    return not ctx.container.command or any(
        w in words for w in ("entrypoint.sh", "server.js", "worker/dist/index.js", "node "))


def langfuse_pools(ctx: StackContext) -> list[Pool]:
    """The one Prisma client of the web or worker process: connection_limit from
    DATABASE_URL, else from DATABASE_ARGS appended to the URL the entrypoint builds, else
    Prisma's default."""
    from advisor.read.apps.prisma import limit_pool, url_limit
    from advisor.read.apps.urls import route_from_parts, route_from_url

    if ctx.container.role == "init" or not _runs_server(ctx):
        return []  # another program of the image (a `prisma migrate` Job is read apart)
    url = ctx.env("DATABASE_URL")
    if url is not None and url.value is None:
        ctx.hidden_size(LABEL, "DATABASE_URL", ctx.env_source("DATABASE_URL"))
        return []
    if url is not None and url.value:
        where = ctx.env_source("DATABASE_URL")
        return [limit_pool(ctx, LABEL, url_limit(ctx, url.value, where),
                           route=route_from_url(url.value, where), per_process=False)]
    host = ctx.env("DATABASE_HOST")
    if url is None and host is None and \
            (hidden := ctx.env_from_hidden("DATABASE_URL", "DATABASE_HOST")) is not None:
        # its entrypoint needs one of them: an envFrom Secret not held here may set it
        ctx.env_from_unknown(LABEL, "its database (DATABASE_URL and its connection_limit) "
                             "and where", ("DATABASE_URL", "DATABASE_HOST"), hidden)
        return []
    if host is None or host.value == "":
        ctx.notices.append(f"{ctx.container.name}: Langfuse without DATABASE_URL or "
                           "DATABASE_HOST: its entrypoint exits (no database URL)")
        return []
    route = route_from_parts(host.value, None, ctx.env_value("DATABASE_NAME"),
                             ctx.env_value("DATABASE_USERNAME"),
                             ctx.env_source("DATABASE_HOST")) if host.value else None
    limit = None
    args = ctx.env("DATABASE_ARGS")
    version = tag_version(ctx.container.image)
    if args is not None and version is not None and version < ARGS_SINCE:
        ctx.notices.append(f"{ctx.container.name}: DATABASE_ARGS "
                           f"({ctx.env_source('DATABASE_ARGS').label()}) is not read by "
                           f"Langfuse {version[0]}.{version[1]} (from 3.13.0)")
    elif args is not None and args.value is None:
        ctx.hidden_size(LABEL, "DATABASE_ARGS", ctx.env_source("DATABASE_ARGS"))
        return []
    elif args is not None and args.value:
        # the query string the entrypoint appends: postgresql://...@host/name?$DATABASE_ARGS
        limit = url_limit(ctx, f"postgresql://h/d?{args.value}",
                          ctx.env_source("DATABASE_ARGS"))
    pool = limit_pool(ctx, LABEL, limit, route=route, per_process=False)
    if limit is None:
        pool = _with_why(pool, "DATABASE_URL unset and no connection_limit in DATABASE_ARGS "
                               "(web/entrypoint.sh, worker/entrypoint.sh build the URL)")
    return [pool]


def _with_why(pool: Pool, why: str) -> Pool:
    from msgspec.structs import replace

    return replace(pool, note=f"{pool.note}; {why}" if pool.note else why)

