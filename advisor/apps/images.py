"""Applications deployed from their published images with env only: the pool is an
env variable of the image's own configuration, or the application's documented
default. One JVM / Go / Haskell process per container (pools are not per worker).

Defaults, each read in the application's own source:
- Keycloak (Quarkus distribution) `db-pool-max-size`, env KC_DB_POOL_MAX_SIZE, default
  100: keycloak/keycloak quarkus/config-api .../DatabaseOptions.java
  (`DB_POOL_MAX_SIZE = new OptionBuilder<>("db-pool-max-size", ...).defaultValue(100)`).
- Mattermost SqlSettings.MaxOpenConns, env MM_SQLSETTINGS_MAXOPENCONNS, default 300:
  mattermost/mattermost server/public/model/config.go SqlSettings.SetDefaults
  (`s.MaxOpenConns = NewPointer(300)`).
- Harbor core `POSTGRESQL_MAX_OPEN_CONNS`, default "0": goharbor/harbor
  src/lib/config/metadata/metadatalist.go (`EnvKey: "POSTGRESQL_MAX_OPEN_CONNS",
  DefaultValue: "0"`), passed to Go database/sql SetMaxOpenConns: 0 is no limit.
- PostgREST `db-pool`, env PGRST_DB_POOL, default 10: PostgREST/postgrest
  src/PostgREST/Config.hs (`fromMaybe 10 <$> optInt "db-pool"`).
"""

from __future__ import annotations

from msgspec import Struct

from advisor.apps.base import StackContext, parse_int
from advisor.model import Pool, Source


class ImageStack(Struct, frozen=True):
    label: str
    markers: tuple[str, ...]  # in the image's repository name
    env: tuple[str, ...]  # variables that set the pool, first wins
    default: int | None  # None: no default known -> unknown; 0 -> unbounded
    default_text: str = ""
    trigger_env: tuple[str, ...] = ()  # env names that identify the stack without the image


STACKS: tuple[ImageStack, ...] = (
    ImageStack("Keycloak db-pool-max-size", ("keycloak",), ("KC_DB_POOL_MAX_SIZE",), 100,
               "Keycloak default db-pool-max-size 100 (DatabaseOptions.java)",
               ("KC_DB", "KC_DB_URL", "KC_DB_URL_HOST")),
    ImageStack("Mattermost SqlSettings.MaxOpenConns", ("mattermost",),
               ("MM_SQLSETTINGS_MAXOPENCONNS",), 300,
               "Mattermost default SqlSettings.MaxOpenConns 300 (model/config.go)",
               ("MM_SQLSETTINGS_DATASOURCE",)),
    ImageStack("Harbor core POSTGRESQL_MAX_OPEN_CONNS", ("harbor-core",),
               ("POSTGRESQL_MAX_OPEN_CONNS",), 0,
               "Harbor default POSTGRESQL_MAX_OPEN_CONNS 0 = database/sql without a limit "
               "(metadatalist.go)"),
    ImageStack("Harbor exporter HARBOR_DATABASE_MAX_OPEN_CONNS", ("harbor-exporter",),
               ("HARBOR_DATABASE_MAX_OPEN_CONNS",), None),
    ImageStack("PostgREST db-pool", ("postgrest",), ("PGRST_DB_POOL",), 10,
               "PostgREST default db-pool 10 (Config.hs)", ("PGRST_DB_URI",)),
)
ENV_PREFIXES = ("KC_DB", "MM_SQLSETTINGS_", "POSTGRESQL_MAX_OPEN_CONNS",
                "HARBOR_DATABASE_MAX_OPEN_CONNS", "PGRST_DB_")
IMAGE_MARKERS = tuple(m for s in STACKS for m in s.markers)


def _repo_name(image: str) -> str:
    ref = image.split("@", 1)[0].lower()
    return ref.rsplit("/", 1)[-1].split(":", 1)[0]


def image_stack(ctx: StackContext) -> ImageStack | None:
    name = _repo_name(ctx.container.image)
    names = {e.name for e in ctx.container.env}
    for stack in STACKS:
        if any(m in name for m in stack.markers):
            return stack
    for stack in STACKS:
        if names & set(stack.env) or names & set(stack.trigger_env):
            return stack
    return None


def image_pools(ctx: StackContext) -> list[Pool]:
    stack = image_stack(ctx)
    if stack is None:
        return []
    for var in stack.env:
        found = ctx.env(var)
        if found is None:
            continue
        n = parse_int(found.value)
        if n is None:
            ctx.notices.append(f"{ctx.container.name}: {var} is not a number we can read "
                               f"({ctx.env_source(var).label()})")
            return []
        if n <= 0:
            return [ctx.pool(stack.label, 0, ctx.env_source(var), bound="unbounded",
                             per_process=False, note=f"{var}={n}: no limit")]
        return [ctx.pool(stack.label, n, ctx.env_source(var), per_process=False)]
    if stack.default is None:
        ctx.notices.append(f"{ctx.container.name}: {stack.label} not set in its env and "
                           "its default is not known to pool-advisor")
        return []
    source = Source.default_of(stack.default_text, key=stack.env[0])
    if stack.default == 0:
        return [ctx.pool(stack.label, 0, source, bound="unbounded", per_process=False,
                         note=f"{stack.env[0]} unset: {stack.default_text}")]
    return [ctx.pool(stack.label, stack.default, source, bound="default", per_process=False,
                     note=f"{stack.env[0]} unset in the container env")]
