"""Sourcegraph's published images (index.docker.io/sourcegraph/<service>): which of its
services open PostgreSQL pools, where, and how large.

- Each database handle is opened by internal/database/dbconn (open.go): Go database/sql
  over pgx with `db.SetMaxOpenConns(maxOpen)`, maxOpen the DSN's `max_conns` else
  `SRC_PGSQL_MAX_OPEN`, default "30" (sourcegraph/sourcegraph-public-snapshot
  internal/database/dbconn/open.go at bd49f970f1, `defaultMaxOpen`). One handle per
  database a service uses, one Go process per container.
- Which service uses which database (doc/admin/config/postgres-conf.md, "max_connections"
  table, at 28ca82cc63): frontend -> pgsql, codeintel-db, codeinsights-db; gitserver ->
  pgsql; repo-updater -> pgsql; precise-code-intel-worker -> codeintel-db, pgsql; worker
  -> codeintel-db, pgsql (codeinsights-db too in later releases of that page). "Each of
  these containers open a pool of connections not exceeding ... SRC_PGSQL_MAX_OPEN ... By
  default, SRC_PGSQL_MAX_OPEN is 30."
- The frontend reads its DSNs from its env: `<PREFIX>PGDATASOURCE`, else the PG*
  variables, for the prefixes "" (frontend, pgsql), CODEINTEL_ and CODEINSIGHTS_
  (internal/database/postgresdsn). It serves them to every other service as
  conftypes.ServiceConnections (cmd/frontend/internal/cli/config.go serviceConnections:
  PostgresDSN, CodeIntelPostgresDSN, CodeInsightsDSN): the workers' manifests set no
  database env, and where they connect is the frontend's configuration, not theirs.
"""

from __future__ import annotations

from collections.abc import Callable

from advisor.model import Pool, Route, Source
from advisor.read.apps.base import StackContext

OWNER = "sourcegraph"
POOL = "Sourcegraph dbconn SRC_PGSQL_MAX_OPEN"
DEFAULT_MAX_OPEN = 30  # internal/database/dbconn/open.go defaultMaxOpen
DEFAULT_TEXT = ("Sourcegraph default SRC_PGSQL_MAX_OPEN 30 (internal/database/dbconn/open.go "
                "at bd49f970f1), one pool per database")
# (env prefix, Sourcegraph's name of the database) the frontend reads
_DATABASES = (("", "frontend (pgsql)"), ("CODEINTEL_", "codeintel"),
              ("CODEINSIGHTS_", "codeinsights"))
# services whose DSNs the frontend serves (doc/admin/config/postgres-conf.md), with the
# databases that page names for each
SERVED = {"gitserver": ("pgsql",), "repo-updater": ("pgsql",),
          "precise-code-intel-worker": ("codeintel-db", "pgsql"),
          "worker": ("codeintel-db", "pgsql", "codeinsights-db")}
SERVICES = frozenset({"frontend", *SERVED})


def sourcegraph_service(image: str) -> str | None:
    """Pure: the Sourcegraph service an image is (sourcegraph/frontend:6.2.1106,
    index.docker.io/sourcegraph/worker@sha256:...), None for any other image."""
    from advisor.read.apps.locate import image_repository

    parts = image_repository(image.lower()).split("/")
    if len(parts) >= 2 and parts[-2] == OWNER and parts[-1] in SERVICES:
        return parts[-1]
    return None


def is_sourcegraph(image: str) -> bool:
    return sourcegraph_service(image) is not None


def sourcegraph_pools(ctx: StackContext) -> list[Pool]:
    service = sourcegraph_service(ctx.container.image)
    if service is None:
        return []
    size, source, bound = _max_open(ctx)
    if service != "frontend":
        # no database env of its own: the frontend serves its DSNs; it connects, to
        # servers this container's manifest does not name
        ctx.notices.append(
            f"{ctx.container.name}: Sourcegraph {service} takes its database DSNs from the "
            "frontend (conftypes.ServiceConnections, served by sourcegraph-frontend from its "
            f"own PG* env), not from its env; Sourcegraph documents it connecting to "
            f"{', '.join(SERVED[service])} (doc/admin/config/postgres-conf.md), "
            f"{size} connections each at most ({source.label()})")
        return [ctx.pool(f"{POOL} ({db}{SERVED_MARK}", size, source,
                         bound=bound, per_process=False,
                         note="its DSN is served by sourcegraph-frontend")
                for db in SERVED[service]]
    pools = []
    for prefix, name in _DATABASES:
        route = _route(ctx, prefix)
        if route is not None:
            pools.append(ctx.pool(f"{POOL} ({name})", size, source, route=route, bound=bound,
                                  per_process=False))
    return pools


def _max_open(ctx: StackContext) -> tuple[int, Source, str]:
    from advisor.read.apps.numbers import parse_int

    n = parse_int(ctx.env_value("SRC_PGSQL_MAX_OPEN"))
    if n is not None and n > 0:
        return n, ctx.env_source("SRC_PGSQL_MAX_OPEN"), "fixed"
    return DEFAULT_MAX_OPEN, Source.default_of(DEFAULT_TEXT, key="SRC_PGSQL_MAX_OPEN"), \
        "default"


def _route(ctx: StackContext, prefix: str) -> Route | None:
    return env_route(lambda name: ctx.env_value(name), ctx.env_source, prefix)


def env_route(value: Callable[[str], str | None], source: Callable[[str], Source],
              prefix: str) -> Route | None:
    """Pure: the database a `prefix` names in an env (`value` of a name, `source` of
    it): <PREFIX>PGDATASOURCE (a URL), else <PREFIX>PGHOST with its PGPORT and
    PGDATABASE (internal/database/postgresdsn)."""
    from advisor.read.apps.urls import route_from_url

    url = value(f"{prefix}PGDATASOURCE")
    if url:
        return route_from_url(url, source(f"{prefix}PGDATASOURCE"))
    host = value(f"{prefix}PGHOST")
    if not host:
        return None
    port = (value(f"{prefix}PGPORT") or "").strip()
    return Route(host=host.strip(), port=int(port) if port.isdigit() else None,
                 dbname=value(f"{prefix}PGDATABASE") or None,
                 user=value(f"{prefix}PGUSER") or None, source=source(f"{prefix}PGHOST"))


# the database a worker's pool label names -> the frontend's env prefix for it
PREFIX_OF = {"pgsql": "", "codeintel-db": "CODEINTEL_", "codeinsights-db": "CODEINSIGHTS_"}
SERVED_MARK = ", DSN served by the frontend)"


def served_database(label: str) -> str | None:
    """Pure: the database of a pool sourcegraph_pools made for a service whose DSN the
    frontend serves ("... (pgsql, DSN served by the frontend)"), None for any other."""
    if not label.startswith(POOL) or not label.endswith(SERVED_MARK):
        return None
    return label[len(POOL) + 2:-len(SERVED_MARK)]
