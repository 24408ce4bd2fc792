"""Vert.x's reactive PostgreSQL client (vertx-pg-client): one pool per `PgPool.pool(...)`,
`Pool.pool(...)`, `PgBuilder.pool()` or pooled `PgPool.client(...)` the code calls, of
PoolOptions' maxSize.

eclipse-vertx/vertx-sql-client vertx-sql-client/src/main/java/io/vertx/sqlclient/
PoolOptions.java: `public static final int DEFAULT_MAX_SIZE = 4;` and `private int maxSize
= DEFAULT_MAX_SIZE;`, the same 4 at 3.9.16 (c61fa5b, :46), 4.0.0 (60f8cd9, :34), 4.5.10
(44dddf8, :40) and 5.0.0 (76673bb, :39); `setMaxSize(int)` sets it. The pool opens up to
maxSize connections.

Read only when the shape is plain: each file that creates pools sets no size (the default
4 each), one literal size (each of its pools), or as many literal sizes as it creates
pools (in order). A verticle deployed several times (`DeploymentOptions().setInstances(n)`)
creates its pool in each instance unless the pool is shared: not modelled, unknown.
"""

from __future__ import annotations

import re

from advisor.lazyregex import lazy
from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.source import AppFile

DEFAULT_MAX_SIZE = 4
LABEL = "Vert.x PoolOptions maxSize"
DEFAULT_SOURCE = Source.default_of(
    "Vert.x default maxSize 4 (vertx-sql-client PoolOptions.java DEFAULT_MAX_SIZE, 4 from "
    "3.9 to 5.0)", key="maxSize")

_CLIENT = lazy(r"\bvertx-pg-client\b")
# PgPool.pool(...), Pool.pool(...), PgBuilder.pool() / PgBuilder.pool { } (Kotlin), and
# the pooled SqlClient of PgPool.client(...) / PgBuilder.client()
_CREATE = lazy(r"\b(?:PgPool|Pool|PgBuilder)\s*\.\s*(?:pool|client)\s*[({]")
# Quarkus' reactive datasources (quarkus.datasource.reactive.*, apps/quarkus.py) and
# Micronaut's vertx.pg.client.* are their frameworks' pools, built from configuration
_FRAMEWORK = lazy(r"io\.quarkus|\bquarkus-|io\.micronaut|\bmicronaut-")
# .setMaxSize(12), Kotlin's maxSize = 12
_SIZE = lazy(r"(?:\.\s*setMaxSize\s*\(\s*|\bmaxSize\s*=\s*)([A-Za-z_][\w.]*|\d+)")
_COMMENT = lazy(r"^\s*(?://|\*|/\*)")


def _uncommented(text: str) -> str:
    return "\n".join("" if _COMMENT.match(line) else line for line in text.splitlines())


def vertx_pools(ctx: StackContext) -> list[Pool]:
    build = next(((f, m) for f in ctx.files("build") if (m := _CLIENT.search(f.text))), None)
    if build is None or any(_FRAMEWORK.search(f.text) for f in ctx.files("build")):
        return []
    code = [(f, _uncommented(f.text)) for f in ctx.files("java")]
    if any("setInstances(" in text for _, text in code):
        ctx.unknown.append(f"{LABEL}: a verticle deployed as several instances "
                           "(DeploymentOptions.setInstances) creates its pools in each: "
                           "not modelled")
        return []
    pools: list[Pool] = []
    for f, text in code:
        pools += _file_pools(ctx, f, text)
    if not pools and not any(_CREATE.search(text) for _, text in code):
        f, m = build
        where = f.cite(f.text[: m.start()].count("\n") + 1, "vertx-pg-client")
        ctx.unknown.append(f"{LABEL}: the build names vertx-pg-client ({where.label()}), "
                           "but no pool the code creates is read")
    return pools


def _file_pools(ctx: StackContext, f: AppFile, text: str) -> list[Pool]:
    sites = list(_CREATE.finditer(text))
    if not sites:
        return []
    sizes = list(_SIZE.finditer(text))
    if not sizes:
        return [ctx.pool(LABEL, DEFAULT_MAX_SIZE, DEFAULT_SOURCE, bound="default",
                         per_process=False, note=f"{f.path} sets no maxSize")
                for _ in sites]
    values: list[tuple[int, Source]] = []
    for m in sizes:
        src = f.cite(text[: m.start(1)].count("\n") + 1, "maxSize")
        value = m.group(1)
        if not value.isdigit():
            const = re.search(rf"\b{re.escape(value.rsplit('.', 1)[-1])}\s*=\s*(\d+)\s*;?",
                              text)
            if const is None:
                ctx.unread_size(LABEL, src)
                return []
            value = const.group(1)
        values.append((int(value), src))
    if len(values) == 1:
        values = values * len(sites)
    if len(values) != len(sites):
        ctx.unknown.append(f"{LABEL}: {f.path} creates {len(sites)} pools and sets "
                           f"{len(values)} sizes: which pool has which is not read")
        return []
    return [ctx.pool(LABEL, n, src, per_process=False) for n, src in values]
