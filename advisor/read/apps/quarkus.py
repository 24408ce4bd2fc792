"""Quarkus (Agroal JDBC pool, and the reactive pool): `quarkus.datasource.jdbc.max-size`
(`quarkus.datasource."<name>".jdbc.max-size` for named datasources), profile-prefixed
keys `%prod.` (a packaged application runs the `prod` profile unless QUARKUS_PROFILE
says otherwise).

Sources, as SmallRye Config orders them (higher ordinal wins; a `%prod.` key beats the
plain one unless the plain one is in a higher source, ProfileConfigSourceInterceptor):
application.properties in the jar 250, application.yaml/.yml in the jar 255
(quarkus-config-yaml, ApplicationYamlConfigSourceLoader.InClassPath), config/
application.properties 260, config/application.yaml 265, the environment 300
(EnvConfigSource.ORDINAL). YAML nests to the same names (`quarkus: datasource: db-kind:`
is `quarkus.datasource.db-kind`; a top-level `"%prod":` key is the profile prefix).
An environment variable names a property when its letters and digits match and every
other character is `_` or the same character (EnvConfigSource.EnvName.equals): both
QUARKUS_DATASOURCE_JDBC_URL and a ConfigMap key `quarkus.datasource.jdbc.url` loaded
through envFrom set `quarkus.datasource.jdbc.url`.

Which pools exist is the extensions' call (quarkus.io/guides/datasource: the
quarkus-jdbc-* and quarkus-reactive-*-client extensions integrate configured
datasources): an Agroal pool with quarkus-jdbc-postgresql / quarkus-agroal, a reactive
pool with quarkus-reactive-pg-client, both when both are there. With no build file
naming a Quarkus extension, the keys decide (db-kind alone means JDBC).

Defaults read in quarkusio/quarkus: extensions/agroal/runtime/.../
DataSourceJdbcRuntimeConfig.java (`@WithDefault("20") int maxSize()`, commit 1d7fc55)
and extensions/reactive-datasource/runtime/.../DataSourceReactiveRuntimeConfig.java
(`@WithDefault("20") int maxSize()`).
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.source import AppFile
from advisor.read.apps.urls import route_from_url

DEFAULT_MAX_SIZE = 20
_RESTS = ("jdbc.max-size", "reactive.max-size", "jdbc.url", "reactive.url", "db-kind",
          "jdbc", "reactive")
_KEY = re.compile(
    r'quarkus\.datasource\.(?:"(?P<name>[^"]+)"\.|(?P<bare>[\w-]+)\.(?=jdbc|reactive|db-kind))?'
    rf"(?P<rest>{'|'.join(re.escape(r) for r in _RESTS)})$")
_PG_KINDS = ("postgresql", "pgsql", "pg", "postgres")
_EXTENSION = re.compile(r"\bquarkus-(?:jdbc-[\w-]+|agroal|reactive-[\w-]+-client)\b")

# (ordinal, profiled) of each value: the larger wins
Value = tuple[str | None, Source, tuple[int, bool]]


def _env_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", key).upper()


def _ordinal(f: AppFile) -> int:
    yaml = not f.rel.endswith(".properties")
    outside = f.rel.startswith("config/") or ("/config/" in f.rel and \
        "src/main/resources/" not in f.rel)
    return (260 if outside else 250) + (5 if yaml else 0)


def _entries(f: AppFile, ctx: StackContext) -> list[tuple[str, str | None, int]]:
    from advisor.read.apps.javaprops import PropError, parse_properties
    from advisor.read.apps.yamlflat import YamlError, load_documents

    try:
        if f.rel.endswith(".properties"):
            return [(e.key, e.value, e.line) for doc in parse_properties(f.text) for e in doc]
        return [(e.key, e.value, e.line) for doc in load_documents(f.text) for e in doc]
    except (PropError, YamlError) as exc:
        ctx.problem(f.cite(exc.line), exc.message, fatal=True, program="Quarkus")
        return []


def _file_values(ctx: StackContext, profile: str) -> dict[str, Value]:
    values: dict[str, Value] = {}
    for f in ctx.files("spring-config"):
        if "quarkus" not in f.text or (f.profile is not None and f.profile != profile):
            continue
        ordinal = _ordinal(f)
        for key, value, line in _entries(f, ctx):
            profiled = f.profile is not None
            if key.startswith("%"):
                prof, _, key = key[1:].partition(".")
                if profile not in prof.split(","):
                    continue
                profiled = True
            rank = (ordinal, profiled)
            if key not in values or values[key][2] <= rank:
                values[key] = (value, f.cite(line, key, key), rank)
    return values


def _env_values(ctx: StackContext, names: list[str]) -> dict[str, Value]:
    """Properties the container's environment sets (EnvConfigSource, ordinal 300): a
    variable named like the property (a ConfigMap key through envFrom), or its env form
    for the datasources `names` (a named one must be known elsewhere: the env form alone
    does not say where its name ends)."""
    wanted: dict[str, str] = {}
    for name in names:
        prefix = "quarkus.datasource" if name == "<default>" else f'quarkus.datasource."{name}"'
        for rest in _RESTS:
            wanted[_env_name(f"{prefix}.{rest}")] = f"{prefix}.{rest}"
    out: dict[str, Value] = {}
    for var in ctx.container.env:
        if var.name.lower().startswith("quarkus.") and _KEY.match(var.name.lower()):
            prop = var.name.lower()
        else:
            prop = wanted.get(_env_name(var.name), "")
        if prop:
            out[prop] = (var.value, replace(var.source, key=var.name), (300, False))
    return out


def _extensions(ctx: StackContext) -> tuple[set[str], dict[str, Source]]:
    """The Quarkus datasource extensions the build files name, and where."""
    where: dict[str, Source] = {}
    for f in ctx.files("build"):
        for n, line in enumerate(f.text.splitlines(), 1):
            for m in _EXTENSION.finditer(line):
                where.setdefault(m.group(0), f.cite(n, m.group(0), m.group(0)))
    return set(where), where


def _by_datasource(values: dict[str, Value]) -> dict[str, dict[str, Value]]:
    out: dict[str, dict[str, Value]] = {}
    for key, value in values.items():
        m = _KEY.match(key)
        if m:
            name = m.group("name") or m.group("bare") or "<default>"
            out.setdefault(name, {})[m.group("rest")] = value
    return out


def quarkus_pools(ctx: StackContext) -> list[Pool]:
    profile = ctx.profile or ctx.env_value("QUARKUS_PROFILE") or "prod"
    files = _file_values(ctx, profile)
    extensions, ext_where = _extensions(ctx)
    if not extensions and not any(k.startswith("quarkus.") for k in files):
        return []
    names = ["<default>", *(n for n in _by_datasource(files) if n != "<default>")]
    values = dict(files)
    for key, value in _env_values(ctx, names).items():
        if key not in values or values[key][2] <= value[2]:
            values[key] = value
    pools: list[Pool] = []
    for name, keys in _by_datasource(values).items():
        pools.extend(_datasource_pools(ctx, name, keys, profile, extensions, ext_where))
    return pools


def _flavours(ctx: StackContext, prefix: str, keys: dict[str, Value], extensions: set[str],
              ext_where: dict[str, Source]) -> list[str]:
    """Which of the datasource's pools exist: by the extensions, else by its keys."""
    kind = keys.get("db-kind", (None,))[0]
    enabled = {f: keys.get(f, ("true",))[0] != "false" for f in ("jdbc", "reactive")}
    if not extensions:
        return [f for f in ("jdbc", "reactive") if enabled[f] and (
            f"{f}.url" in keys or f"{f}.max-size" in keys or (f == "jdbc" and kind))]
    has = {"jdbc": bool(extensions & {"quarkus-jdbc-postgresql", "quarkus-agroal"}),
           "reactive": "quarkus-reactive-pg-client" in extensions}
    out = []
    for flavour in ("jdbc", "reactive"):
        written = f"{flavour}.url" in keys or f"{flavour}.max-size" in keys
        if not has[flavour]:
            if written:
                extension = "quarkus-jdbc-postgresql or quarkus-agroal" if flavour == "jdbc" \
                    else "quarkus-reactive-pg-client"
                ctx.notices.append(f"{prefix}.{flavour}.* is set but the build names no "
                                   f"{extension}: no {flavour} pool")
            continue
        if enabled[flavour] and (written or kind):
            out.append(flavour)
    if not out and not kind and not any(f"{f}.url" in keys for f in ("jdbc", "reactive")):
        return []
    cited = ", ".join(f"{e} ({ext_where[e].label()})" for e in sorted(extensions))
    ctx.notices.append(f"Quarkus datasource extensions: {cited}")
    return out


def _datasource_pools(ctx: StackContext, name: str, keys: dict[str, Value], profile: str,
                      extensions: set[str], ext_where: dict[str, Source]) -> list[Pool]:
    kind = keys.get("db-kind", (None,))[0]
    if kind and kind not in _PG_KINDS:
        return []
    if not kind and extensions and not extensions & {
            "quarkus-jdbc-postgresql", "quarkus-reactive-pg-client"}:
        return []  # the kind Quarkus infers from the one driver extension: not PostgreSQL
    prefix = "quarkus.datasource" if name == "<default>" else f'quarkus.datasource."{name}"'
    pools: list[Pool] = []
    for flavour in _flavours(ctx, prefix, keys, extensions, ext_where):
        label = f"Quarkus {flavour} max-size" + ("" if name == "<default>" else f" ({name})")
        route = None
        url = keys.get(f"{flavour}.url")
        if url is not None and url[0]:
            text = re.sub(r"^vertx-reactive:", "", url[0].split(",")[0].strip())
            route = route_from_url(text, url[1])
        size = keys.get(f"{flavour}.max-size")
        if size is not None and size[0] is None and size[2][0] == 300:
            ctx.hidden_size(label, size[1].key or "", size[1])  # set from a Secret
            continue
        if size is not None and parse_int(size[0] or "") is not None:
            pools.append(ctx.pool(label, parse_int(size[0] or ""), size[1], route=route,
                                  per_process=False))
            continue
        if size is not None and (size[0] or "").strip():
            # written, but not a number read here (a ${...} expression): unknown, not 20
            ctx.unread_size(label, size[1])
            continue
        pools.append(ctx.pool(label, DEFAULT_MAX_SIZE, Source.default_of(
            f"Quarkus default {flavour} max-size 20 (DataSource"
            f"{'Jdbc' if flavour == 'jdbc' else 'Reactive'}RuntimeConfig)",
            key=f"{flavour}.max-size"), route=route, bound="default", per_process=False,
            note=f"{prefix} ({profile} profile) sets no {flavour}.max-size"))
    return pools

