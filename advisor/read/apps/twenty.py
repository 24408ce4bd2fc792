"""Twenty CRM run from its published image, twentycrm/twenty: the server (the image's
entrypoint, `node dist/main`) and the worker (`yarn worker:prod`) boot the same NestJS
modules, so each process holds the same TypeORM DataSources, each its own pg Pool. Read
in twentyhq/twenty (the helm chart packages/twenty-docker/helm/twenty deploys appVersion
v1.14.0, packages/twenty-docker/k8s/manifests `latest`):

- packages/twenty-server/src/database/typeorm/typeorm.module.ts (cbfc58c9)
  `TypeOrmModule.forRoot(typeORMCoreModuleOptions)`: the core DataSource, initialized
  while Nest builds its providers. core/core.datasource.ts sets no pool size in older
  versions (636a33ed: TypeORM passes `max: options.poolSize`, undefined, so pg-pool's 10);
  newer builds set `poolSize: Number(process.env.PG_POOL_MAX_CONNECTIONS ?? 10)`. Counted
  as max(PG_POOL_MAX_CONNECTIONS, 10), which holds for both.
- src/engine/twenty-orm/global-workspace-datasource/global-workspace-datasource.service.ts
  (44697aa8) onModuleInit: one GlobalWorkspaceDataSource on PG_DATABASE_URL with
  `poolSize: PG_POOL_MAX_CONNECTIONS`, and, when PG_DATABASE_REPLICA_URL is defined, a
  second one on it with the same poolSize.
- src/engine/core-modules/twenty-config/config-variables.ts (442e2cd9):
  PG_POOL_MAX_CONNECTIONS = 10 (@CastToPositiveNumber, env only), PG_ENABLE_POOL_SHARING
  = true, PG_DATABASE_REPLICA_URL optional.
- src/engine/twenty-orm/pg-shared-pool/pg-shared-pool.service.ts (8a961a5e): with
  PG_ENABLE_POOL_SHARING, pg.Pool is patched in PgPoolSharedModule.onModuleInit so that
  the workspace DataSources of one (host, port, user, database, ssl) share one pool of
  PG_POOL_MAX_CONNECTIONS; the core DataSource's pool is made before that hook runs, so it
  is not shared. Twenty versions that opened a DataSource per workspace open one pool per
  workspace when PG_ENABLE_POOL_SHARING=false: the number of workspaces is not in a
  repository, so that setting leaves the connections unknown, as do 0.x images.
"""

from __future__ import annotations

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext, image_is, tag_version
from advisor.read.apps.urls import route_from_url

TWENTY_IMAGES = ("twentycrm/twenty",)
POOL_DEFAULT = 10  # config-variables.ts PG_POOL_MAX_CONNECTIONS; pg-pool's own default too
CORE = "Twenty core DataSource pool"
WORKSPACE = "Twenty workspace DataSource pool (PG_POOL_MAX_CONNECTIONS)"
REPLICA = "Twenty workspace replica DataSource pool (PG_POOL_MAX_CONNECTIONS)"
_DEFAULT_TEXT = ("Twenty default PG_POOL_MAX_CONNECTIONS 10 (twenty-config/"
                 "config-variables.ts)")


def is_twenty(image: str) -> bool:
    return image_is(image, TWENTY_IMAGES)


def _sharing_off(ctx: StackContext) -> bool | None:
    """Whether PG_ENABLE_POOL_SHARING turns pool sharing off; None when its value is
    not in the repository."""
    var = ctx.env("PG_ENABLE_POOL_SHARING")
    if var is None:
        return False
    if var.value is None:
        return None
    return var.value.strip().lower() == "false"


def twenty_pools(ctx: StackContext) -> list[Pool]:
    """The core DataSource's pool and the workspace DataSource's, each
    PG_POOL_MAX_CONNECTIONS (default 10), and the replica's when PG_DATABASE_REPLICA_URL
    is set; per process (server or worker)."""
    c = ctx.container
    if c.role == "init":
        return []
    version = tag_version(c.image)
    if version is not None and version[0] < 1:
        ctx.unknown.append(f"{c.name}: Twenty {version[0]}.{version[1]} opens a DataSource "
                           "per workspace (before the global workspace DataSource); its "
                           "pools are not read by pool-advisor")
        return []
    off = _sharing_off(ctx)
    if off is None or off:
        where = ctx.env_source("PG_ENABLE_POOL_SHARING").label()
        ctx.unknown.append(
            f"{c.name}: PG_ENABLE_POOL_SHARING at {where} "
            + ("comes from a Secret or reference the repository does not hold"
               if off is None else "is false")
            + ": Twenty versions with a DataSource per workspace then open one pool per "
            "workspace, and the number of workspaces is not in the repository")
        return []
    given = ctx.env_int(WORKSPACE, "PG_POOL_MAX_CONNECTIONS", least=1)
    if given is False:
        return []  # said in ctx.unknown
    pools: list[Pool] = []
    if given is None:
        size, source, bound = POOL_DEFAULT, Source.default_of(
            _DEFAULT_TEXT, key="PG_POOL_MAX_CONNECTIONS"), "default"
        pools.append(ctx.pool(CORE, POOL_DEFAULT, Source.default_of(
            "Twenty core DataSource (typeorm.module.ts TypeOrmModule.forRoot): poolSize "
            "PG_POOL_MAX_CONNECTIONS ?? 10, pg-pool's 10 in versions that set none",
            key="PG_POOL_MAX_CONNECTIONS"), bound="default", per_process=False,
            note="PG_POOL_MAX_CONNECTIONS unset"))
    else:
        size, source = given
        bound = "fixed"
        if size >= POOL_DEFAULT:
            pools.append(ctx.pool(CORE, size, source, per_process=False,
                                  note="core.datasource.ts poolSize (10 in versions that "
                                       "set none)"))
        else:
            pools.append(ctx.pool(CORE, POOL_DEFAULT, Source.default_of(
                "Twenty core DataSource: pg-pool's 10 in versions whose core.datasource.ts "
                f"sets no poolSize (newer ones take PG_POOL_MAX_CONNECTIONS, {size} at "
                f"{source.label()})", key="PG_POOL_MAX_CONNECTIONS"), per_process=False,
                note=f"max({size}, 10): the larger of what the versions hold"))
    note = "PG_POOL_MAX_CONNECTIONS unset" if given is None else ""
    pools.append(ctx.pool(WORKSPACE, size, source, bound=bound, per_process=False,  # type: ignore[arg-type]
                          note=note))
    replica = ctx.env("PG_DATABASE_REPLICA_URL")
    if replica is not None and (replica.value is None or replica.value.strip()):
        route = route_from_url(replica.value, ctx.env_source("PG_DATABASE_REPLICA_URL")) \
            if replica.value else None
        if route is None:
            ctx.notices.append(f"{c.name}: PG_DATABASE_REPLICA_URL "
                               f"({ctx.env_source('PG_DATABASE_REPLICA_URL').label()}) names "
                               "no host read here: its pool is counted where "
                               "PG_DATABASE_URL leads")
        pools.append(ctx.pool(REPLICA, size, source, bound=bound, per_process=False,  # type: ignore[arg-type]
                              route=route, note=note))
    return pools
