"""Piped's backend (the 1337kavin/piped image, TeamPiped/Piped-Backend): one HikariCP
pool that Hibernate opens, configured by the `config.properties` it reads from its
working directory. Read in TeamPiped/Piped-Backend at da5bcd7 (2026-02-07; the lines
below have been as they are since d34e227, 2021-11-23):

- Dockerfile `WORKDIR /app/`; consts/Constants.java:124-125 loads `config.properties`
  (relative: /app/config.properties) when it exists;
- Constants.java:168-171 puts every env variable starting with HIBERNATE into the
  Hibernate properties as `key.replace("__", ".").toLowerCase()` (since the merge
  c5921f6, 2025-09-28, of 946b376; before, at 6e6705f of 2024-12, the variables named
  `hibernate*` as they are), then :176-179 every `hibernate*` key of config.properties,
  so the file wins over the env for a key;
- utils/DatabaseSessionFactory.java:16-19 sets them on a Hibernate Configuration and
  reads src/main/resources/hibernate.cfg.xml, whose provider_class is
  org.hibernate.hikaricp.internal.HikariCPConnectionProvider (build.gradle:
  hibernate-hikaricp, HikariCP); utils/LiquibaseHelper.java opens one connection for the
  migrations at start and closes it (try-with-resources on Liquibase) before the pool.

Hibernate's HikariConfigurationUtil.loadConfiguration (hibernate/hibernate-orm,
hibernate-hikaricp, the index's copy at 1e3424a5) copies hibernate.connection.url to
jdbcUrl and every `hibernate.hikari.<name>` to HikariCP property `<name>`; nothing sets
the pool size else, so it is `hibernate.hikari.maximumPoolSize`, or HikariCP's
DEFAULT_POOL_SIZE 10 (advisor/read/apps/hikari.py; HikariConfig.java:58,1130-1131 at
6.0.0; Piped-Backend's build.gradle has HikariCP 5.1.0 at 6e6705f, 6.3.2 at da5bcd7).
An env variable HIBERNATE__HIKARI__* becomes an all-lower-case property name
(`maximumpoolsize`), which HikariCP's PropertyElf.setProperty does not match to a setter
(it tries `setMaximumpoolsize` and `setMAXIMUMPOOLSIZE`) and refuses, and a variable
named `hibernate.hikari.*` is read only by images before c5921f6 (the tag, often
`latest`, does not say which): a pool size set in the env is not read here (unknown).
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.hikari import DEFAULT_POOL_SIZE
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.urls import route_from_url

PIPED_IMAGES = ("1337kavin/piped",)  # the backend; piped-proxy, piped-frontend are not
LABEL = "Piped backend HikariCP maximumPoolSize (Hibernate)"
CONFIG = "app/config.properties"  # WORKDIR /app/ + new File("config.properties")
URL_KEY = "hibernate.connection.url"
USER_KEY = "hibernate.connection.username"
SIZE_KEY = "hibernate.hikari.maximumPoolSize"
DEFAULT_TEXT = ("Piped backend: Hibernate's HikariCPConnectionProvider with no "
                "hibernate.hikari.maximumPoolSize, HikariCP default 10 "
                "(HikariConfig.DEFAULT_POOL_SIZE)")


def is_piped_backend(image: str) -> bool:
    ref = image.split("@", 1)[0].lower()
    last = ref.rsplit("/", 1)[-1]
    path = ref[: len(ref) - len(last)] + last.split(":", 1)[0]
    return any(path == p or path.endswith("/" + p) for p in PIPED_IMAGES)


def _config(ctx: StackContext) -> dict[str, tuple[str, Source]] | None:
    """The `hibernate*` entries of the config.properties mounted at /app (the last of a
    key, as Properties.load keeps it); None without one."""
    from advisor.read.apps.javaprops import PropError, parse_properties

    files = [f for f in ctx.files("config-properties") if f.rel.strip("/") == CONFIG]
    if not files:
        return None
    found: dict[str, tuple[str, Source]] = {}
    for f in files:
        try:
            docs = parse_properties(f.text)
        except PropError as exc:
            ctx.problem(f.cite(exc.line), exc.message)
            continue
        for entry in (e for doc in docs for e in doc if e.key.startswith("hibernate")):
            found[entry.key] = entry.value, f.cite(entry.line, entry.key, entry.key)
    return found


def piped_pools(ctx: StackContext) -> list[Pool]:
    """The backend's one pool: hibernate.hikari.maximumPoolSize of its config.properties,
    else HikariCP's 10 when that file is held, on hibernate.connection.url (the file's,
    else the env's); unknown with no config.properties held."""
    if ctx.container.role == "init":
        return []
    # both forms: HIBERNATE__X__Y (Piped since c5921f6), hibernate.x.y (before)
    env = {e.name.replace("__", ".").lower() if e.name.startswith("HIBERNATE") else e.name: e
           for e in ctx.container.env if e.name.lower().startswith("hibernate")}
    held = _config(ctx)
    config = held or {}
    route: Route | None = None
    if URL_KEY in config:
        route = route_from_url(*config[URL_KEY])
    elif URL_KEY in env and env[URL_KEY].value is not None:
        route = route_from_url(env[URL_KEY].value, ctx.env_source(env[URL_KEY].name))
    user = config.get(USER_KEY) or ((env[USER_KEY].value, env[USER_KEY].source)
                                    if USER_KEY in env and env[USER_KEY].value else None)
    if route is not None and route.user is None and user is not None and user[0]:
        route = replace(route, user=user[0])
    hikari_env = sorted(e.name for key, e in env.items() if key.startswith("hibernate.hikari."))
    if SIZE_KEY in config:
        value, source = config[SIZE_KEY]
        n = parse_int(value)
        if n is None or n < 1:
            # HikariConfig.setMaximumPoolSize refuses a value below 1: Piped does not start
            ctx.unknown.append(f"{LABEL} at {source.label()} is {value!r}, not a pool size "
                               "pool-advisor can read")
            return []
        return [ctx.pool(LABEL, n, source, route=route, per_process=False)]
    if hikari_env:
        ctx.unknown.append(f"{LABEL}: {', '.join(hikari_env)} in the env, which Piped "
                           "reads by its version (HIBERNATE__* lower-cased, no HikariCP "
                           "setting's name, since Piped-Backend c5921f6; hibernate.* "
                           "before): not read")
        return []
    if held is None:
        # the file that would set it is not held: its size is not known, not HikariCP's 10
        ctx.unknown.append(f"{LABEL}: no config.properties mounted at /{CONFIG} is in the "
                           f"repository, so whether it sets {SIZE_KEY} is not known")
        return []
    return [ctx.pool(LABEL, DEFAULT_POOL_SIZE, Source.default_of(DEFAULT_TEXT, key=SIZE_KEY),
                     route=route, bound="default", per_process=False,
                     note=f"{SIZE_KEY} unset in its config.properties")]
