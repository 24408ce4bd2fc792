"""Quarkus (Agroal JDBC pool, and the reactive pool): `quarkus.datasource.jdbc.max-size`
(`quarkus.datasource."<name>".jdbc.max-size` for named datasources), profile-prefixed
keys `%prod.` (a packaged application runs the `prod` profile unless QUARKUS_PROFILE
says otherwise), env QUARKUS_DATASOURCE_JDBC_MAX_SIZE (SmallRye Config: non
alphanumerics become `_`, upper case; a quoted name becomes `_NAME_`). Env beats
application.properties.

Defaults read in quarkusio/quarkus extensions/agroal/runtime/.../
DataSourceJdbcRuntimeConfig.java (`@WithDefault("20") int maxSize()`, commit 1d7fc55);
the reactive pool (`quarkus.datasource.reactive.max-size`) also defaults to 20.
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.javaprops import PropError, parse_properties
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.urls import route_from_url

DEFAULT_MAX_SIZE = 20
_KEY = re.compile(
    r'quarkus\.datasource\.(?:"(?P<name>[^"]+)"\.|(?P<bare>[\w-]+)\.(?=jdbc|reactive|db-kind))?'
    r"(?P<rest>jdbc\.max-size|reactive\.max-size|jdbc\.url|reactive\.url|db-kind|jdbc|reactive)$")


def _env_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", key).upper()


def quarkus_pools(ctx: StackContext) -> list[Pool]:
    files = [f for f in ctx.files("spring-config") if f.rel.endswith("application.properties")
             and "quarkus." in f.text]
    if not files:
        return []
    profile = ctx.profile or ctx.env_value("QUARKUS_PROFILE") or "prod"
    values: dict[str, tuple[str, Source]] = {}
    for f in files:
        try:
            docs = parse_properties(f.text)
        except PropError as exc:
            ctx.problem(Source(path=f.path, line=exc.line), exc.message, fatal=True,
                        program="Quarkus")
            continue
        plain: dict[str, tuple[str, Source]] = {}
        profiled: dict[str, tuple[str, Source]] = {}
        for entry in (e for doc in docs for e in doc):
            src = Source(path=f.path, line=entry.line, key=entry.key)
            if entry.key.startswith("%"):
                prof, _, key = entry.key[1:].partition(".")
                if profile in prof.split(","):
                    profiled[key] = (entry.value, src)
            else:
                plain[entry.key] = (entry.value, src)
        values.update(plain)
        values.update(profiled)  # a profile's key beats the plain one
    datasources: dict[str, dict[str, tuple[str, Source]]] = {}
    for key, value in values.items():
        m = _KEY.match(key)
        if m:
            name = m.group("name") or m.group("bare") or "<default>"
            datasources.setdefault(name, {})[m.group("rest")] = value
    pools: list[Pool] = []
    for name, keys in datasources.items():
        kind = keys.get("db-kind", ("", None))[0]
        if kind and kind not in ("postgresql", "pgsql", "pg", "postgres"):
            continue
        prefix = "quarkus.datasource" if name == "<default>" else f'quarkus.datasource."{name}"'
        for flavour in ("jdbc", "reactive"):
            url = keys.get(f"{flavour}.url")
            enabled = keys.get(flavour, ("true", None))[0] != "false"
            if url is None and f"{flavour}.max-size" not in keys and not (
                    flavour == "jdbc" and kind and enabled):
                continue
            if not enabled:
                continue
            env_key = _env_name(f"{prefix}.{flavour}.max-size")
            label = f"Quarkus {flavour} max-size" + ("" if name == "<default>" else f" ({name})")
            route = route_from_url(url[0], url[1]) if url else None
            var = ctx.env(env_key)
            if var is not None and var.value is None:  # SmallRye reads the env first
                ctx.hidden_size(label, env_key, var.source)
                continue
            if var is not None and parse_int(var.value) is not None:
                pools.append(ctx.pool(label, parse_int(var.value),
                                      replace(var.source, key=env_key),
                                      route=route, per_process=False))
                continue
            written = keys.get(f"{flavour}.max-size")
            if written is not None and parse_int(written[0]) is not None:
                pools.append(ctx.pool(label, parse_int(written[0]), written[1], route=route,
                                      per_process=False))
                continue
            pools.append(ctx.pool(label, DEFAULT_MAX_SIZE, Source.default_of(
                f"Quarkus default {flavour} max-size 20 (DataSource*RuntimeConfig)",
                key=f"{flavour}.max-size"), route=route, bound="default", per_process=False,
                note=f"{prefix} ({profile} profile) sets no {flavour}.max-size"))
    return pools
