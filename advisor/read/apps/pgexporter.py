"""The Prometheus PostgreSQL exporter (prometheuscommunity/postgres-exporter, its quay.io
mirror, bitnami/postgres-exporter, and wrouesnel/postgres_exporter before the project
moved): the connections it holds to the servers it scrapes.

Read in prometheus-community/postgres_exporter (tags v0.10.1 6cff384d74, v0.11.1
b5fd246564, v0.12.0 f9a1edbbc6, v0.15.0 68c176b883, v0.20.1 867fbcac31):
- DSNs: DATA_SOURCE_NAME, comma-separated, wins; else one,
  `postgresql://user:pass@` + DATA_SOURCE_URI (exporter/datasource.go GetDataSources).
- Each DSN has a Server whose database/sql handle has SetMaxOpenConns(1) and
  SetMaxIdleConns(1) (exporter/server.go NewServer; cmd/postgres_exporter/server.go
  before): one connection each, kept open between scrapes.
- From v0.12.0 the collector package scrapes the first DSN too (cmd/postgres_exporter/
  main.go `collector.NewPostgresCollector(..., dsn, ...)` with dsns[0]), on a handle of
  its own, SetMaxOpenConns(1), opened for each scrape (collector.go Collect
  `inst.copy()`, `inst.setup()`; v0.13.0 on): one more while a scrape runs. v0.11 opened
  a collector server per DSN (collector/server.go).
- --auto-discover-databases (PG_EXPORTER_AUTO_DISCOVER_DATABASES) adds a Server per
  database each DSN's server lists (datasource.go discoverDatabaseDSNs): how many is
  not in the repository, so the size is unknown (a floor).
"""

from __future__ import annotations

from advisor.model import Pool, Route, Source, Term
from advisor.read.apps.base import StackContext, image_path, tag_version
from advisor.read.apps.urls import route_from_url

# crunchy-postgres-exporter: PGO's sidecar image, postgres_exporter with pgMonitor's
# queries (PGO internal/pgmonitor/exporter.go ExporterStartCommand at 0fbac306)
NAMES = frozenset({"postgres-exporter", "postgres_exporter", "crunchy-postgres-exporter"})
_READ = "prometheus-community/postgres_exporter"
LABEL = "postgres_exporter connections (SetMaxOpenConns(1) per DSN)"


def is_postgres_exporter(image: str) -> bool:
    return image_path(image).rsplit("/", 1)[-1] in NAMES


def _auto_discover(ctx: StackContext) -> Source | None:
    words = [t for w in (*ctx.container.command, *ctx.container.args) for t in w.split()]
    for word in words:
        if word in ("--auto-discover-databases", "--auto-discover-databases=true"):
            return ctx.container.source
    var = ctx.env("PG_EXPORTER_AUTO_DISCOVER_DATABASES")
    if var is not None and (var.value or "").strip().lower() in ("true", "1", "yes"):
        return ctx.env_source("PG_EXPORTER_AUTO_DISCOVER_DATABASES")
    return None


def _dsn_count(ctx: StackContext) -> tuple[int, Source] | None:
    """How many DSNs the exporter scrapes, and where that is read; None when none is set
    here (a multi-target /probe exporter, or a variable not held: said in unknown)."""
    name = ctx.env("DATA_SOURCE_NAME")
    if name is not None:
        if name.value is None:
            ctx.hidden_size(LABEL, "DATA_SOURCE_NAME", ctx.env_source("DATA_SOURCE_NAME"))
            return None
        return len([d for d in name.value.split(",") if d.strip()]), \
            ctx.env_source("DATA_SOURCE_NAME")
    for var in ("DATA_SOURCE_URI", "DATA_SOURCE_URI_FILE"):
        if ctx.env(var) is not None:
            return 1, ctx.env_source(var)
    hidden = ctx.env_from_hidden("DATA_SOURCE_NAME", "DATA_SOURCE_URI")
    if hidden is not None:
        ctx.env_from_unknown(LABEL, "which servers it scrapes",
                             ("DATA_SOURCE_NAME", "DATA_SOURCE_URI"), hidden)
        return None
    ctx.notices.append(f"{ctx.container.name}: postgres_exporter without DATA_SOURCE_NAME or "
                       "DATA_SOURCE_URI: it scrapes only the targets /probe is asked for")
    return None


def _uri_route(ctx: StackContext) -> Route | None:
    """Where DATA_SOURCE_URI (`host:port/db?params`, no scheme) leads, with
    DATA_SOURCE_USER: the exporter prefixes `postgresql://user:pass@` (datasource.go
    GetDataSources). None when DATA_SOURCE_NAME wins (a URL the env's route reads) or the
    value is not held here."""
    uri = ctx.env("DATA_SOURCE_URI")
    if ctx.env("DATA_SOURCE_NAME") is not None or uri is None or not uri.value:
        return None
    user = ctx.env("DATA_SOURCE_USER")
    who = f"{user.value}@" if user is not None and user.value else ""
    return route_from_url(f"postgresql://{who}{uri.value.strip()}",
                          ctx.env_source("DATA_SOURCE_URI"))


def pgexporter_pools(ctx: StackContext) -> list[Pool]:
    if ctx.container.role == "init" or not is_postgres_exporter(ctx.container.image):
        return []
    got = _dsn_count(ctx)
    if got is None:
        return []
    dsns, where = got
    auto = _auto_discover(ctx)
    if auto is not None:
        ctx.unknown.append(f"{LABEL}: --auto-discover-databases ({auto.label()}) opens one "
                           "connection per database of each server, a count not in the "
                           "repository")
        return []
    version = tag_version(ctx.container.image)
    if version is not None and version < (0, 11):
        extra, why = 0, f"{_READ} v0.10.1 6cff384d74: one Server per DSN"
    elif version == (0, 11):
        extra, why = dsns, f"{_READ} v0.11.1 b5fd246564: a Server and a collector server " \
                           "per DSN"
    else:
        extra, why = 1, f"{_READ} v0.20.1 867fbcac31 (from v0.12.0 f9a1edbbc6): one Server " \
                        "per DSN + the collector's handle on the first, during a scrape"
    size = Term(label=LABEL, value=dsns + extra, source=Source.default_of(
        f"{why} (exporter/server.go, collector/instance.go: SetMaxOpenConns(1))",
        key="DATA_SOURCE_NAME"))
    return [Pool(label=LABEL, size=size, bound="fixed", route=_uri_route(ctx),
                 note=f"{dsns} DSN{'s' if dsns != 1 else ''} ({where.label()}), one "
                      "connection each" + (" + 1 for the collector while it scrapes"
                                           if extra == 1 else ""))]
