"""HikariCP under Spring Boot: `maximumPoolSize` per DataSource.

Keys: `spring.datasource.hikari.maximum-pool-size` (any relaxed form, any property
source, see advisor/read/apps/spring.py), env SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE or
SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE. Extra DataSources bound by application code
(`@ConfigurationProperties("app.datasource.replica")` on a HikariDataSource) are found
by their `maximum-pool-size` / `jdbc-url` keys and reported as separate pools.

Plain Java (no Spring): `config.setMaximumPoolSize(n)` on a HikariConfig or
HikariDataSource in .java/.kt sources, with literal or `static final int` constants.
When code builds its own DataSource, Spring Boot's auto-configured one backs off
(@ConditionalOnMissingBean(DataSource.class)), so spring.datasource.hikari.* is not read.

Default, read in HikariCP's source (brettwooldridge/HikariCP,
src/main/java/com/zaxxer/hikari/HikariConfig.java at tags HikariCP-4.0.3 (what Spring Boot
2.7 manages), HikariCP-5.1.0 (98bd21c) and HikariCP-6.0.0 (7c74fd3)):
`DEFAULT_POOL_SIZE = 10`, applied in validateNumerics() when maximumPoolSize is unset
(`maxPoolSize < 1`); minimumIdle unset means minimumIdle = maximumPoolSize, so the pool
fills to its maximum. `setMaximumPoolSize(n)` throws
`IllegalArgumentException("maxPoolSize cannot be less than 1")` for n < 1, which makes
Spring's binding, and the application, fail. Spring Boot adds no default of its own:
DataSourceConfiguration.Hikari binds spring.datasource.hikari.* onto HikariDataSource.
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import EnvVar, Pool, Route, Source, Term
from advisor.read.apps.base import StackContext, term
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.spring import PropValue, SpringProps, canonical, spring_properties
from advisor.read.apps.spring_beans import (
    Bean,
    DataSourceBean,
    beans,
    constants,
    covered,
    datasource_beans,
)
from advisor.read.apps.urls import route_from_url

DEFAULT_POOL_SIZE = 10
# The same 10 at every tag read (brettwooldridge/HikariCP HikariConfig.java: HikariCP-2.7.9
# :59, 3.4.5 :58, 4.0.3 :60, 5.0.1 :57, 5.1.0 :57, 6.0.0 :58): which version runs is not
# claimed unless the build names it (Spring Boot 2.7 manages 4.0.3, 3.x 5.x/6.x)
DEFAULT_SOURCE = Source.default_of(
    "HikariCP default (HikariConfig.DEFAULT_POOL_SIZE, 10 from 2.7 to 6.x)",
    key="maximumPoolSize")
LABEL = "HikariCP maximumPoolSize"

# An explicit HikariCP dependency's version (Maven, Gradle); `${...}` is not read
_HIKARI_VERSION = lazy(r"<artifactId>HikariCP</artifactId>\s*<version>(\d[\w.-]*)</version>"
                       r"|com\.zaxxer:HikariCP:(\d[\w.-]*)")


def _default_source(ctx: StackContext) -> Source:
    """The default's citation, at the HikariCP version the build names when it does."""
    for f in ctx.files("build"):
        m = _HIKARI_VERSION.search(f.text)
        if m:
            where = f.cite(f.text[: m.start()].count("\n") + 1)
            return Source.default_of(
                f"HikariCP {m.group(1) or m.group(2)} default (HikariConfig.DEFAULT_POOL_SIZE;"
                f" version at {where.label()})", key="maximumPoolSize")
    return DEFAULT_SOURCE


_BUILD_HINTS = lazy(
    r"spring-boot-starter-(data-jpa|jdbc|data-jdbc)|com\.zaxxer|HikariCP", re.IGNORECASE)


def _resolved(props: SpringProps, dashed: str, ctx: StackContext,
              hidden: list[EnvVar] | None = None) -> PropValue | None:
    """`dashed`'s value with placeholders resolved. With `hidden`, the variables set from
    a Secret or reference whose value is not here that would decide it (a higher
    source skipped, a placeholder) are collected there; else a notice says they were
    not used."""
    found, skipped = props.lookup(dashed)
    if hidden is None:
        for s in skipped:
            ctx.notices.append(f"{s.name} ({s.source.label()}) is set from a secret or "
                               "reference whose value is not in the repository; it was not "
                               "used")
    else:
        hidden.extend(EnvVar(name=s.name, source=s.source) for s in skipped)
    if found is None:
        return None
    return props.resolve(found, ctx.problems, hidden)


def _route(props: SpringProps, prefix: str, ctx: StackContext
           ) -> tuple[Route | None, bool, bool]:
    """(route, is_postgres, literal). A non-PostgreSQL URL means this DataSource is not
    ours. `literal`: the URL as bound (a file's or the environment's) has no ${}
    placeholder, so its host is the one the pool connects to."""
    url = None
    key = ""
    for key in (f"{prefix}.url", f"{prefix}.jdbc-url", f"{prefix}.hikari.jdbc-url"):
        url = _resolved(props, key, ctx)
        if url is not None and url.value:
            break
    if url is None or not url.value:
        return None, True, False
    lower = url.value.strip().lower()
    if lower.startswith(("jdbc:", "r2dbc:")) and "postgresql" not in lower.split("//")[0]:
        return None, False, False
    route = route_from_url(url.value, url.source)
    if route is not None:
        user = _resolved(props, f"{prefix}.username", ctx)
        if user is not None and user.value and "${" not in user.value:
            route = replace(route, user=user.value)
    raw = props.lookup(key)[0]
    return route, True, raw is not None and "${" not in (raw.value or "${")


def _pool(props: SpringProps, prefix: str | None, hikari: str | None, label: str,
          ctx: StackContext, unbound: Source | None = None) -> Pool | None:
    """`hikari` None: nothing binds a size to this DataSource (a @Bean, at `unbound`,
    without @ConfigurationProperties): HikariCP's default."""
    route, postgres, literal = _route(props, prefix, ctx) if prefix else (None, True, False)
    literal = literal and route is not None and bool(route.host)
    if not postgres:
        ctx.notices.append(f"{prefix}: not a PostgreSQL DataSource, skipped")
        return None
    if hikari is None:
        return Pool(label=label, size=term(label, DEFAULT_POOL_SIZE, _default_source(ctx)),
                    route=route, bound="default", timeouts=_timeouts(props, None, ctx),
                    note=f"the @Bean at {unbound.label() if unbound else '?'} binds no "
                         "properties to its HikariDataSource (no @ConfigurationProperties): "
                         f"HikariCP default {DEFAULT_POOL_SIZE}")
    size_key = f"{hikari}.maximum-pool-size"
    hidden: list[EnvVar] = []
    size = _resolved(props, size_key, ctx, hidden)
    if hidden:
        # The environment binds over what files say, and a placeholder reads it: a size
        # from a Secret or reference whose value the repository does not hold is not
        # known here, whatever a file or the placeholder's default says.
        ctx.hidden_size(label, hidden[0].name, hidden[0].source)
        return None
    timeouts = _timeouts(props, hikari, ctx)
    if size is None or size.value is None:
        return Pool(label=label, size=term(label, DEFAULT_POOL_SIZE, _default_source(ctx)),
                    route=route, bound="default", timeouts=timeouts, literal_host=literal,
                    note=f"{hikari}.maximum-pool-size not set: HikariCP default "
                         f"{DEFAULT_POOL_SIZE} (minimumIdle defaults to the same)")
    value = parse_int(size.value)
    if value is None:
        ctx.problem(size.source, f"Failed to bind properties under '{hikari}.maximum-pool-size'"
                    f" to int: {size.value!r} is not a number", fatal=True,
                    program="Spring Boot")
        return None
    if value < 1:
        ctx.problem(size.source, f"{hikari}.maximum-pool-size={value}: HikariCP throws "
                    "IllegalArgumentException: maxPoolSize cannot be less than 1",
                    fatal=True, program="HikariCP")
        return None
    return Pool(label=label, size=term(label, value, size.source), route=route,
                timeouts=timeouts, literal_host=literal)


# HikariConfig.java (5.1.0, 6.0.0; the same in Debian's 2.7.9, tests/test_apps_hikari_real):
# CONNECTION_TIMEOUT = SECONDS.toMillis(30), MAX_LIFETIME = MINUTES.toMillis(30); both in
# milliseconds, maxLifetime 0 = no maximum lifetime.
TIMEOUT_DEFAULTS = {
    "acquire": ("connection-timeout", "connectionTimeout", 30_000),
    "lifetime": ("max-lifetime", "maxLifetime", 1_800_000),
}


def _timeouts(props: SpringProps, hikari: str | None, ctx: StackContext) -> dict[str, Term]:
    """connectionTimeout and maxLifetime in seconds, as written or HikariCP's default."""
    out: dict[str, Term] = {}
    for kind, (dashed, camel, default_ms) in TIMEOUT_DEFAULTS.items():
        found = _resolved(props, f"{hikari}.{dashed}", ctx) if hikari else None
        value = parse_int(found.value) if found is not None and found.value else None
        if found is not None and value is not None and value >= 0:
            out[kind] = Term(label=f"HikariCP {camel}", value=value / 1000, source=found.source)
        else:
            out[kind] = Term(label=f"HikariCP {camel}", value=default_ms / 1000,
                             source=Source.default_of(
                                 f"HikariCP default {default_ms} ms", key=camel))
    return out


def _custom_prefixes(props: SpringProps) -> list[tuple[str, str]]:
    """(datasource prefix, hikari prefix) for DataSources bound under other prefixes."""
    found: dict[str, str] = {}
    for name in sorted(props.names_under("")):
        for leaf in (".maximumpoolsize", ".jdbcurl"):
            if name.endswith(leaf):
                hikari = name[: -len(leaf)]
                if hikari in ("spring.datasource", "spring.datasource.hikari") \
                        or hikari.startswith(("spring.r2dbc", "quarkus.")):
                    continue
                base = hikari[: -len(".hikari")] if hikari.endswith(".hikari") else hikari
                found.setdefault(base, hikari)
    return sorted(found.items())


# config.setMaximumPoolSize(n), Kotlin's config.maximumPoolSize = n, and the same
# assignment as a statement of its own inside `HikariConfig().apply { ... }`
_SETTER = lazy(r"(?:\.|^[ \t]*)(?:setMaximumPoolSize|maximumPoolSize\s*=)\s*\(?\s*"
               r"([A-Za-z_]\w*|\d+)", re.MULTILINE)


# Kotlin's `System.getenv("DB_POOL_MAX")?.toInt() ?: 3` (also toIntOrNull, Java's
# Integer.parseInt(System.getenv(...)) is not this shape): the variable when set, else
# the literal after the Elvis operator
_ENV_OR = lazy(r"System\.getenv\(\s*\"([A-Za-z_]\w*)\"\s*\)\s*\?\.\s*toInt(?:OrNull)?\(\)"
               r"\s*\?:\s*(\d+)\b")


def _env_or_pool(ctx: StackContext, text: str, path: str, m: re.Match[str]) -> Pool | None:
    """The pool of `maximumPoolSize = System.getenv("X")?.toInt() ?: N`: X's value when
    the container sets it (a Secret's: unknown), else N, cited at the code's line."""
    name, line = m.group(1), text[: m.start()].count("\n") + 1
    src = Source(path=path, line=line, key="maximumPoolSize")
    found = ctx.env_int(LABEL, name, least=1)
    if found is False:
        return None
    if found is not None:
        return Pool(label=LABEL, size=term(f"{LABEL} ({name})", found[0], found[1]))
    return Pool(label=LABEL, size=term(f"{LABEL} ({name} unset: the `?: {m.group(2)}` "
                                       "fallback)", int(m.group(2)), src))


def _java_code_pools(ctx: StackContext) -> tuple[list[Pool], bool]:
    """(pools, whether code sets a HikariCP pool size) for HikariConfig used directly in
    Java/Kotlin code. A size the code sets to what is not read here is unknown (PA106):
    that code's DataSource replaces Spring Boot's, so the default 10 is not its size."""
    pools = []
    seen = False
    for f in ctx.files("java"):
        if "Hikari" not in f.text:
            continue
        for m in _SETTER.finditer(f.text):
            seen = True
            fallback = _ENV_OR.match(f.text, m.start(1))
            if fallback is not None:
                pool = _env_or_pool(ctx, f.text, f.path, fallback)
                pools += [pool] if pool is not None else []
                continue
            value = m.group(1)
            if not value.isdigit():
                const = re.search(rf"\b{re.escape(value)}\s*=\s*(\d+)\s*;?", f.text)
                value = const.group(1) if const else ""
            line = f.text[: m.start(1)].count("\n") + 1
            src = Source(path=f.path, line=line, key="setMaximumPoolSize")
            if not value:
                ctx.unread_size(LABEL, src)
                continue
            pools.append(Pool(label=LABEL, size=term(LABEL, int(value), src)))
    return pools, seen


def _bean_datasources(props: SpringProps, ctx: StackContext) -> list[DataSourceBean]:
    """The DataSource @Bean methods of the app's Java/Kotlin code, of the active
    profiles (advisor/read/apps/spring_beans.py)."""
    found: list[Bean] = []
    sources = [f for f in ctx.files("java") if "DataSource" in f.text and "@Bean" in f.text]
    consts = constants([f.text for f in ctx.files("java") if "String" in f.text]) \
        if sources else {}
    for f in sources:
        found += beans(f.path, f.text, props.profiles, consts)
    return datasource_beans(found)


# A DataSource bean that wraps or routes to others (counted as themselves), or an
# embedded database (not PostgreSQL)
_WRAPPER = lazy(r"Proxy\s*\(|Routing|EmbeddedDatabaseBuilder")


def _bean_pools(ds_beans: list[DataSourceBean], props: SpringProps,
                ctx: StackContext) -> list[Pool]:
    pools = []
    for b in ds_beans:
        src = Source(path=b.bean.path, line=b.bean.line, key=f"@Bean {b.bean.method}")
        label = f"{LABEL} (@Bean {b.bean.method})"
        if b.other_type is not None:
            ctx.notices.append(f"{src.label()}: DataSource of type {b.other_type}: not "
                               "HikariCP, not modelled")
            continue
        if not b.hikari:
            if _WRAPPER.search(b.bean.body):
                continue
            why = (f"{label} at {src.label()}: a DataSource built in code that is not "
                   "read statically")
            if why not in ctx.unknown:
                ctx.unknown.append(why)
            continue
        pool = _pool(props, b.url_prefix, b.size_prefix, label,
                     ctx, unbound=src)
        if pool is not None:
            pools.append(pool)
    return pools


# Micronaut's connection pool modules (micronaut-projects/micronaut-sql): each binds every
# `datasources.<name>` (@EachProperty("datasources", primary = "default")) onto its pool's
# configuration. jdbc-hikari's DatasourceConfiguration extends HikariConfig and sets no size
# (v5.8.2 698a69d jdbc-hikari/.../DatasourceConfiguration.java:41-42): HikariCP's default.
# the module's artifact or its Gradle version-catalog alias (libs.micronaut.jdbc.hikari)
_MICRONAUT_POOL = lazy(r"micronaut[.-]jdbc[.-](hikari|tomcat|dbcp|ucp)\b")
# a build of a Micronaut application: its group, plugin or catalog aliases
_MICRONAUT_BUILD = lazy(r"io\.micronaut|\blibs\.(?:bundles\.)?micronaut\b")
_HIKARI_DEP = lazy(r"com\.zaxxer|HikariCP", re.IGNORECASE)


_MICRONAUT_ENV_URL = lazy(r"DATASOURCES_([A-Z0-9]+)_URL")


def _is_micronaut(ctx: StackContext) -> bool:
    return any(_MICRONAUT_BUILD.search(f.text) for f in ctx.files("build"))


def _micronaut_datasources(props: SpringProps, ctx: StackContext) -> tuple[list[str], str]:
    """(the `datasources.<name>` prefixes with a url, the pool module the build names,
    "" if none) of a Micronaut application (its build names io.micronaut)."""
    builds = ctx.files("build")
    if not _is_micronaut(ctx):
        return [], ""
    module = next((m.group(1) for f in builds for m in [_MICRONAUT_POOL.search(f.text)] if m),
                  "")
    if not module and any(_HIKARI_DEP.search(f.text) for f in builds):
        module = "hikari"  # HikariCP itself named (jdbc-hikari comes in through a bundle)
    bases = {n[: -len(".url")] for n in props.names_under("datasources")
             if n.endswith(".url") and n.count(".") == 2}
    # DATASOURCES_DEFAULT_URL is datasources.default.url (Micronaut's environment
    # property source); a name with `_` in it is ambiguous there, so not taken from env
    bases |= {f"datasources.{m.group(1).lower()}" for e in ctx.container.env
              if (m := _MICRONAUT_ENV_URL.fullmatch(e.name))}
    return sorted(bases), module


def _micronaut_pools(props: SpringProps, ctx: StackContext, bases: list[str],
                     module: str) -> list[Pool]:
    pools = []
    # airbyte-platform's chart sets CONFIG_DB_MAX_POOL_SIZE "" for
    # ${CONFIG_DB_MAX_POOL_SIZE:20}: Micronaut takes the 20 (SpringProps.empty_env_unset)
    props = replace(props, empty_env_unset=True)
    for base in bases:
        label = f"{LABEL} ({base})"
        if module != "hikari":
            why = (f"Micronaut {base}: its pool is "
                   + (f"micronaut-jdbc-{module}, not modelled" if module else
                      "of no micronaut-jdbc-* module the build names"))
            _, postgres, _ = _route(props, base, ctx)
            if postgres and why not in ctx.unknown:
                ctx.unknown.append(why)
            continue
        pool = _pool(props, base, base, label, ctx)
        if pool is not None:
            ctx.notices.append(f"{base}: Micronaut datasource (micronaut-jdbc-hikari binds "
                               "datasources.* onto a HikariConfig)")
            pools.append(pool)
    return pools


_EXCLUDE_ANNOTATION = lazy(r"@(?:SpringBootApplication|EnableAutoConfiguration)\s*\("
                          r"[^)]*\bexclude\s*=\s*\{?[^)]*\bDataSourceAutoConfiguration\b")


def _datasource_excluded(props: SpringProps, ctx: StackContext) -> Source | None:
    """Where DataSourceAutoConfiguration is excluded (spring.autoconfigure.exclude, in a
    file, the env or an argument; or the application class's annotation): then no
    spring.datasource.* makes a pool (DolphinScheduler's worker: the chart gives every
    component SPRING_DATASOURCE_*, the worker opens none)."""
    names = [n for n in props.names_under("spring.autoconfigure") if "exclude" in n]
    for name in sorted(names) or ["spring.autoconfigure.exclude"]:
        prop = props.get(name)
        if prop is not None and prop.value and "DataSourceAutoConfiguration" in prop.value:
            return prop.source
    for f in ctx.files("java"):
        if "DataSourceAutoConfiguration" not in f.text:
            continue
        m = _EXCLUDE_ANNOTATION.search(f.text)
        if m:
            return Source(path=f.path, line=f.text[: m.start()].count("\n") + 1,
                          key="exclude DataSourceAutoConfiguration")
    return None


def hikari_pools(ctx: StackContext) -> list[Pool]:
    code_pools, in_code = _java_code_pools(ctx)
    if in_code:
        return code_pools
    env_names = {e.name for e in ctx.container.env}
    has_files = bool(ctx.app and ctx.app.of_kind("spring-config"))
    spring_env = any(n.startswith("SPRING_") for n in env_names)
    if not has_files and not spring_env and not any(
            "--spring." in w or "-Dspring." in w
            for w in (*ctx.container.command, *ctx.container.args)):
        return []
    props = spring_properties(ctx.container, ctx.app, ctx.profile, ctx.problems, ctx.notices)
    pools: list[Pool] = []
    datasource_type = _resolved(props, "spring.datasource.type", ctx)
    uses_default = bool(props.names_under("spring.datasource")) or any(
        n.startswith("SPRING_DATASOURCE_") for n in env_names)
    if not uses_default and ctx.app is not None and not _is_micronaut(ctx):
        # a Micronaut build naming HikariCP has no spring.datasource: its pools are
        # its datasources.* (below)
        uses_default = any(_BUILD_HINTS.search(f.text) for f in ctx.app.of_kind("build"))
    excluded = _datasource_excluded(props, ctx)
    if excluded is not None and uses_default:
        ctx.notices.append(f"DataSourceAutoConfiguration excluded ({excluded.label()}): "
                           "Spring Boot makes no default DataSource, so no HikariCP pool "
                           "for spring.datasource")
        uses_default = False
        # zero, said where: not the HikariCP default the identified stack would get
        pools.append(ctx.pool("spring.datasource (no DataSource)", 0, replace(
            excluded, key="DataSourceAutoConfiguration excluded"), per_process=False,
            note="DataSourceAutoConfiguration excluded: no default DataSource"))
    if datasource_type is not None and datasource_type.value \
            and "hikari" not in datasource_type.value.lower():
        ctx.notices.append(f"spring.datasource.type={datasource_type.value} "
                           f"({datasource_type.source.label()}): not HikariCP, not modelled")
        uses_default = False
    ds_beans = _bean_datasources(props, ctx)
    if ds_beans and uses_default:
        first = ds_beans[0].bean
        ctx.notices.append(f"DataSource @Bean {first.method} ({first.path}:{first.line}):"
                           " Spring Boot makes no DataSource of its own "
                           "(@ConditionalOnMissingBean(DataSource.class)); each DataSource "
                           "@Bean is a pool")
        uses_default = False
    if uses_default:
        pool = _pool(props, "spring.datasource", "spring.datasource.hikari", LABEL, ctx)
        if pool is not None:
            pools.append(pool)
    pools += _bean_pools(ds_beans, props, ctx)
    micronaut, module = _micronaut_datasources(props, ctx)
    pools += _micronaut_pools(props, ctx, micronaut, module)
    for base, hikari in _custom_prefixes(props):
        if base in micronaut:
            continue
        if covered(base, ds_beans):
            size = props.get(f"{hikari}.maximum-pool-size")
            if size is not None and not any(
                    b.size_prefix and canonical(b.size_prefix) == hikari for b in ds_beans):
                # a DataSourceProperties bean has no `hikari` property: X.hikari.* binds
                # onto nothing unless a DataSource @Bean names the prefix itself
                ctx.notices.append(f"{size.name} ({size.source.label()}) is bound to no "
                                   "DataSource: no @Bean's @ConfigurationProperties names "
                                   f"{hikari}; not used")
            continue
        pool = _pool(props, base, hikari, f"{LABEL} ({base})", ctx)
        if pool is not None:
            ctx.notices.append(f"{base}: DataSource bound by application code "
                               "(@ConfigurationProperties), inferred from its keys")
            pools.append(pool)
    return pools
