"""Kong Gateway run from its published images (kong, kong/kong; the Kong/charts chart),
configured by KONG_* variables (each overrides the kong.conf key of the same name).
Read in Kong/kong @22246ef2 (3.9.x; the same at tags 1.2.0 to 3.9.1):

- kong/templates/kong_defaults.lua: `database = postgres`, `role = traditional`,
  `pg_max_concurrent_queries = 0`, `nginx_worker_processes = auto` and
  `nginx_main_worker_processes = auto`; kong/conf_loader/init.lua aliased_properties:
  nginx_worker_processes is copied to nginx_main_worker_processes when that is unset.
- kong/db/strategies/postgres/connector.lua `_mt:query`: each query waits on the
  worker's semaphore (ngx.semaphore, one per nginx worker, made only when
  pg_max_concurrent_queries > 0), takes an idle connection from the cosocket keepalive
  pool or opens one, and puts it back after. A new connection is opened only when none
  is idle, so a worker holds at most pg_max_concurrent_queries; with 0 (the default),
  one per query in flight, with no limit (kong.conf.default: "The default value of 0
  removes this concurrency limitation"; the total is `pg_max_concurrent_queries *
  nginx_worker_processes`).
- nginx `worker_processes auto` starts one worker per CPU nginx sees: the node's.
- A data_plane runs without a database (conf_loader/parse.lua: "only in-memory storage
  can be used when role = data_plane"); `database = off` is DB-less.

pg_max_concurrent_queries came in 1.2.0 (absent from kong_defaults.lua at 1.1.0):
older tags are not read. `kong migrations ...` (the chart's Jobs) is a CLI run whose
connections are not read here. The Enterprise image (kong/kong-gateway) runs code not
in Kong/kong: not read, said with the setting to declare.
"""

from __future__ import annotations

from advisor.model import CpuFormula, Pool, Source, Term
from advisor.read.apps.base import StackContext, tag_version

LABEL = "Kong PostgreSQL connections per nginx worker (pg_max_concurrent_queries)"
SEMAPHORE_FROM = (1, 2)
NGINX_AUTO = CpuFormula(per_cpu=1, applies_to="processes", text="worker_processes auto")
DECLARE = ("set KONG_PG_MAX_CONCURRENT_QUERIES (a cap per nginx worker: per pod it is "
           "that x nginx worker processes), or declare [[workloads]] connections = N")


def _repository(image: str) -> list[str]:
    from advisor.read.apps.locate import image_repository

    return image_repository(image.lower()).split("/")


def is_kong(image: str) -> bool:
    """kong (Docker library), kong/kong, and the Enterprise kong/kong-gateway; not
    kong/kubernetes-ingress-controller and the like."""
    parts = _repository(image)
    return parts[-1] == "kong" or (len(parts) >= 2 and parts[-2] == "kong"
                                   and parts[-1] == "kong-gateway")


def kong_pools(ctx: StackContext) -> list[Pool]:
    c = ctx.container
    if c.role == "init":
        return []
    words = [t for w in (*c.command, *c.args) for t in w.split()]
    if "migrations" in words:
        ctx.unknown.append("Kong `kong migrations` (a CLI run): its connections are not "
                           "read by pool-advisor")
        return []
    for name in ("KONG_DATABASE", "KONG_ROLE"):
        var = ctx.env(name)
        if var is not None and var.value is None:
            ctx.hidden_size(LABEL, name, ctx.env_source(name))
            return []
    if (ctx.env_value("KONG_DATABASE") or "postgres").strip().lower() != "postgres":
        return []  # DB-less (off), or another store
    if (ctx.env_value("KONG_ROLE") or "").strip().lower() == "data_plane":
        return []
    tag = c.image.rsplit(":", 1)[-1] if ":" in c.image.rsplit("/", 1)[-1] else "latest"
    if _repository(c.image)[-1] == "kong-gateway":
        ctx.unknown.append(f"Kong Gateway Enterprise ({c.image}) runs code not in Kong/kong "
                           "and is not read; in open-source Kong each nginx worker opens "
                           "a PostgreSQL connection per query in flight, no limit unless "
                           f"pg_max_concurrent_queries is set: {DECLARE}")
        return []
    version = tag_version(c.image)
    if version is not None and version < SEMAPHORE_FROM:
        ctx.unknown.append(f"Kong {tag}: releases before 1.2.0 (no "
                           "pg_max_concurrent_queries) are not read by pool-advisor")
        return []
    if ctx.env("KONG_PG_RO_HOST") is not None:
        ctx.unknown.append("Kong: KONG_PG_RO_HOST sends reads to a second server with its "
                           "own per-worker limit; that split is not read by pool-advisor")
        return []
    given = ctx.env_int(LABEL, "KONG_PG_MAX_CONCURRENT_QUERIES", least=0)
    if given is False:
        return []
    if given is None or given[0] == 0:
        src = ctx.env_source("KONG_PG_MAX_CONCURRENT_QUERIES") if given else \
            Source.default_of("Kong default pg_max_concurrent_queries 0: no limit "
                              "(kong_defaults.lua; connector.lua makes no semaphore)",
                              key="KONG_PG_MAX_CONCURRENT_QUERIES")
        return [ctx.pool(LABEL, 0, src, bound="unbounded", per_process=False,
                         note="Kong: a connection per query in flight in each nginx "
                              f"worker, no limit; {DECLARE}")]
    n, src = given
    pool = _with_workers(ctx, ctx.pool(LABEL, n, src, per_process=False,
                                       note="Kong: at most this many per nginx worker "
                                            "(connector.lua semaphore)"))
    return [] if pool is None else [pool]


def _with_workers(ctx: StackContext, pool: Pool) -> Pool | None:
    """`pool` times the nginx workers of a pod: nginx_main_worker_processes, else
    nginx_worker_processes (aliased_properties), a number or `auto` (one per node CPU);
    None when the count is not read (said in ctx.unknown)."""
    from msgspec.structs import replace

    from advisor.read.apps.numbers import parse_int

    label = "Kong nginx worker processes"
    for name in ("KONG_NGINX_MAIN_WORKER_PROCESSES", "KONG_NGINX_WORKER_PROCESSES"):
        var = ctx.env(name)
        if var is None:
            continue
        if var.value is None:
            ctx.hidden_size(label, name, ctx.env_source(name))
            return None
        if var.value.strip().lower() == "auto":
            break
        n = parse_int(var.value)
        if n is None or n < 1:
            ctx.unknown.append(f"{label}: {name} at {ctx.env_source(name).label()} is "
                               f"{var.value!r}, not a worker count pool-advisor can read")
            return None
        return replace(pool, processes=Term(label=label, value=n,
                                            source=ctx.env_source(name)))
    return replace(pool, processes=Term(
        label=label, value=NGINX_AUTO.at(ctx.cpus), source=Source.default_of(
            "Kong default nginx_worker_processes auto: one nginx worker per CPU of the node "
            "(kong_defaults.lua)", key="KONG_NGINX_WORKER_PROCESSES")),
        bound="cpu", cpu_formula=NGINX_AUTO, cpus=ctx.cpus_term(), node=ctx.node)
