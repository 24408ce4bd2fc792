"""Spring Boot's R2DBC ConnectionFactory (spring-boot-starter-data-r2dbc, r2dbc-pool):
`spring.r2dbc.url` and `spring.r2dbc.pool.max-size`, read through Spring's Environment
(advisor/read/apps/spring.py: relaxed binding, profiles, env SPRING_R2DBC_POOL_MAXSIZE).

Which pool (spring-boot ConnectionFactoryConfigurations.PooledConnectionFactoryCondition):
a URL with `:pool:` (`r2dbc:pool:postgresql://...?maxSize=N`) is pooled by r2dbc-pool
from the URL's options, spring.r2dbc.pool.* unused; else, unless
spring.r2dbc.pool.enabled=false, Spring Boot wraps the factory in a ConnectionPool
sized by spring.r2dbc.pool.*; with pooling disabled every use opens a connection of
its own, no limit.

Defaults: R2dbcProperties.Pool `initialSize = 10`, `maxSize = 10` (spring-projects/
spring-boot spring-boot-autoconfigure/.../r2dbc/R2dbcProperties.java, 0ec607ec);
r2dbc-pool's own ConnectionPoolConfiguration.Builder `DEFAULT_SIZE = 10` ("Defaults to
10", r2dbc/r2dbc-pool 03ab4523) for a `:pool:` URL without maxSize.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from msgspec.structs import replace

from advisor.model import EnvVar, Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.hikari import _resolved
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.spring import spring_properties
from advisor.read.apps.urls import route_from_url

DEFAULT_MAX_SIZE = 10
LABEL = "R2DBC pool max-size"


def r2dbc_pools(ctx: StackContext) -> list[Pool]:
    # the notices spring_properties writes (the active profiles) are hikari.py's to say
    props = spring_properties(ctx.container, ctx.app, ctx.profile, ctx.problems, [])
    url = _resolved(props, "spring.r2dbc.url", ctx)
    if url is None or not url.value:
        return []
    lower = url.value.strip().lower()
    scheme = lower.split("//", 1)[0]
    if "postgres" not in scheme:
        ctx.notices.append(f"spring.r2dbc.url ({url.source.label()}): not PostgreSQL, skipped")
        return []
    route = route_from_url(url.value, url.source)
    user = _resolved(props, "spring.r2dbc.username", ctx)
    if route is not None and user is not None and user.value and "${" not in user.value:
        route = replace(route, user=user.value)
    if ":pool:" in scheme:
        return [_url_pool(ctx, url.value, url.source, route)]
    enabled = _resolved(props, "spring.r2dbc.pool.enabled", ctx)
    if enabled is not None and (enabled.value or "").strip().lower() == "false":
        return [ctx.pool("R2DBC connections (no pool)", 0, replace(
            enabled.source, key="spring.r2dbc.pool.enabled=false"), route=route,
            bound="unbounded", per_process=False,
            note="spring.r2dbc.pool.enabled=false: a connection per use, no limit")]
    hidden: list[EnvVar] = []
    size = _resolved(props, "spring.r2dbc.pool.max-size", ctx, hidden)
    if hidden:
        ctx.hidden_size(LABEL, hidden[0].name, hidden[0].source)
        return []
    if size is None or size.value is None:
        return [ctx.pool(LABEL, DEFAULT_MAX_SIZE, Source.default_of(
            "Spring Boot default spring.r2dbc.pool.max-size 10 (R2dbcProperties.Pool)",
            key="spring.r2dbc.pool.max-size"), route=route, bound="default",
            per_process=False, note="spring.r2dbc.pool.max-size not set")]
    value = parse_int(size.value)
    if value is None or value < 1:
        ctx.problem(size.source, f"spring.r2dbc.pool.max-size={size.value!r}: r2dbc-pool "
                    "needs a number greater than zero", fatal=True, program="Spring Boot")
        return []
    return [ctx.pool(LABEL, value, size.source, route=route, per_process=False)]


def _url_pool(ctx: StackContext, url: str, source: Source, route: Route | None) -> Pool:
    try:
        found = (parse_qs(urlsplit(url.strip().replace(":pool:", ":", 1)).query)
                 .get("maxSize") or [""])[-1]
    except ValueError:
        found = ""
    if found.isdigit() and int(found) > 0:
        return ctx.pool(LABEL, int(found), replace(source, key="spring.r2dbc.url ?maxSize="),
                        route=route, per_process=False)
    return ctx.pool(LABEL, DEFAULT_MAX_SIZE, Source.default_of(
        "r2dbc-pool default maxSize 10 (ConnectionPoolConfiguration.Builder)", key="maxSize"),
        route=route, bound="default", per_process=False,
        note="r2dbc:pool: URL without maxSize: r2dbc-pool's default")
