"""Concourse CI (the concourse/concourse image; the concourse/concourse-chart chart runs
it with `args: ["web"]` and `["worker"]`). Read in concourse/concourse at v8.1.1
(94d2ac1f94), checked the same at v7.8.0 (5d40d860f1) and v8.2.5 (10d78df20d):

- `concourse web` (and `quickstart`, web and worker in one process) runs one ATC process
  (atc/atccmd/command.go RunCommand.Runner:642-674) that opens, each once:
  - four Go database/sql pools (constructDBConn: `dbConn.SetMaxOpenConns(maxConns)`):
    api of --api-max-conns, default 10, backend of --backend-max-conns, default 50
    (command.go:137-138 `long:"api-max-conns" ... default:"10"`, `long:"backend-max-conns"
    ... default:"50"`), gc of 5 and worker of 1 (:659, :664; neither can be set);
  - lock.FactoryCount lock connections, a pool of 1 each (constructLockConns:1781-1790,
    `SetMaxOpenConns(1)`, `SetConnMaxLifetime(0)`): 6 (atc/db/lock/lock.go:32-42,
    factoryDefault ... factoryJobScheduling), each held once its kind of lock is taken;
  - one LISTEN connection per pool of the four (atc/db/open.go NewConn:83-90 makes a
    pgxpool for LISTEN/NOTIFY only, and NewPgxListener, atc/db/listener.go:32-36,
    acquires one connection from it and keeps it);
  - the auth (dex) storage, skymarshal/storage/storage.go NewPostgresStorage, which sets
    no MaxOpenConns, so concourse/dex storage/sql/config.go `if p.MaxOpenConns == 0 {
    db.SetMaxOpenConns(5) }` (read at ddd7bd94ea; v1.5.0 and v1.10.0 the same, and the
    go.mod pins of 6.x: 8bbc2a6df1, 821b48abfd).
- Every flag is also read from CONCOURSE_<FLAG> (cmd/concourse/main.go:28,
  vito/twentythousandtonnesofcrudeoil environment.go at 11ffd54d9e: the variable is
  go-flags' EnvDefaultKey, a default that the command line overrides).
- Older layouts: v7.0.0 (35e971a307) to v7.7.x take locks on one connection
  (constructLockConn, SetMaxOpenConns(1)), the lock factories came in v7.8.0; v6.0.0
  (559620ba01) to v6.8.x have no worker pool (three pools, three LISTEN connections,
  pq.NewDialListener). Before v6.0.0 there is no --api-max-conns (a fixed 32 per pool,
  then one --max-conns): not read.
- `concourse worker` (and land-worker, retire-worker, generate-key) opens no PostgreSQL
  connection: a worker registers through the web node's TSA. `concourse migrate` (the
  chart's init container) runs before the web container starts; run elsewhere it is
  not read.
"""

from __future__ import annotations

from msgspec import Struct

from advisor.model import Pool, Source
from advisor.read.apps.base import (
    StackContext,
    env_from_label,
    image_is,
    option_value,
    tag_version,
)
from advisor.read.apps.numbers import parse_int

LABEL = "Concourse"
_AT = "concourse/concourse v8.1.1 (94d2ac1f94)"
NEWEST = "v8.2.5 (10d78df20d)"  # the newest tag read: a tag with no version is read so
FIRST = (6, 0)
_NO_DB = frozenset({"worker", "land-worker", "retire-worker", "generate-key"})
_WEB = frozenset({"web", "quickstart"})
_SUBCOMMANDS = _NO_DB | _WEB | {"migrate"}


class Layout(Struct, frozen=True):
    """What one `concourse web` process opens besides its api and backend pools."""

    at: str  # the tag and commit it was read at
    flag_lines: str  # where command.go declares --api-max-conns and --backend-max-conns
    worker_pool: bool
    lock_conns: int
    lock_text: str


_LAYOUTS = (
    ((7, 8), Layout(at=_AT, flag_lines="137-138", worker_pool=True, lock_conns=6,
                    lock_text="constructLockConns: lock.FactoryCount 6, one connection each "
                    "(command.go:1781-1790, atc/db/lock/lock.go:32-42)")),
    ((7, 0), Layout(at="concourse/concourse v7.0.0 (35e971a307)", flag_lines="133-134",
                    worker_pool=True, lock_conns=1, lock_text="constructLockConn: one connection "
                    "(SetMaxOpenConns(1))")),
    ((6, 0), Layout(at="concourse/concourse v6.0.0 (559620ba01)", flag_lines="112-113",
                    worker_pool=False, lock_conns=1, lock_text="constructLockConn: one connection "
                    "(SetMaxOpenConns(1))")),
)


def is_concourse(image: str) -> bool:
    return image_is(image, ("concourse/concourse",))


def _subcommand(ctx: StackContext) -> str | None:
    """The first concourse subcommand on the command line (`web` of the chart's args)."""
    words = [t for w in (*ctx.container.command, *ctx.container.args) for t in w.split()]
    return next((w for w in words if w in _SUBCOMMANDS), None)


def concourse_pools(ctx: StackContext) -> list[Pool]:
    if ctx.container.role == "init":
        return []  # `concourse migrate`: it exits before the web container starts
    sub = _subcommand(ctx)
    if sub in _NO_DB:
        ctx.notices.append(f"{ctx.container.name}: `concourse {sub}` opens no PostgreSQL "
                           "connection (a worker registers through the web node's TSA)")
        return []
    if sub is None or sub == "migrate":
        what = "no concourse subcommand" if sub is None else "`concourse migrate`"
        ctx.unknown.append(f"{LABEL} ({ctx.container.image}): {what} on its command line "
                           "is not read by pool-advisor (`web` and `quickstart` are)")
        return []
    version = tag_version(ctx.container.image)
    tag = ctx.container.image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2] \
        or "latest"
    if version is not None and version < FIRST:
        ctx.unknown.append(f"{LABEL} {tag}: releases before v6.0.0 (no --api-max-conns) "
                           "are not read by pool-advisor")
        return []
    layout = next(lay for since, lay in _LAYOUTS if version is None or version >= since)
    assumed = "" if version is not None else \
        f"; image tag {tag} names no version: read as {NEWEST}, the newest read"
    pools = [p for p in (
        _sized(ctx, "api", "--api-max-conns", "CONCOURSE_API_MAX_CONNS", 10, layout, assumed),
        _sized(ctx, "backend", "--backend-max-conns", "CONCOURSE_BACKEND_MAX_CONNS", 50,
               layout, assumed)) if p is not None]
    dbconns = 4 if layout.worker_pool else 3
    fixed = [("gc pool", 5, "constructDBConn(..., 5, 2, \"gc\", ...), not configurable")]
    if layout.worker_pool:
        fixed.append(("worker pool", 1, "constructDBConn(..., 1, 1, \"worker\", ...), "
                      "not configurable"))
    fixed += [
        ("lock connections", layout.lock_conns, layout.lock_text),
        ("LISTEN connections", dbconns, f"one per database/sql pool ({dbconns}): "
         "atc/db/open.go NewConn's listener holds one connection"),
        ("auth (dex) storage", 5, "skymarshal NewPostgresStorage sets no MaxOpenConns: "
         "concourse/dex storage/sql/config.go default 5 (ddd7bd94ea)"),
    ]
    for name, n, why in fixed:
        pools.append(ctx.pool(f"{LABEL} {name}", n, Source.default_of(
            f"{LABEL} web: {why} ({layout.at}){assumed}", key=f"concourse {sub}"),
            bound="fixed", per_process=False))
    return pools


def _sized(ctx: StackContext, name: str, flag: str, env: str, default: int,
           layout: Layout, assumed: str) -> Pool | None:
    """The api or backend pool: its flag, else its variable, else the default; None when
    set where its value is not read (said in ctx.unknown)."""
    label = f"{LABEL} {name} pool ({flag.lstrip('-')})"
    given = option_value(ctx, flag)
    if given is not None:
        n = parse_int(given[0])
        if n is None:
            ctx.unknown.append(f"{label}: {flag} at {given[1].label()} is {given[0]!r}, "
                               "not a number pool-advisor can read")
            return None
        return _pool(ctx, label, n, given[1], flag)
    found = ctx.env_int(label, env)
    if found is False:
        return None
    if found is not None:
        return _pool(ctx, label, found[0], found[1], env)
    if (hidden := ctx.env_from_hidden(env)) is not None:
        ctx.unknown.append(f"{label}: {env} may be set by {env_from_label(hidden)}")
        return None
    return ctx.pool(label, default, Source.default_of(
        f"{LABEL} default {flag} {default} (atc/atccmd/command.go:{layout.flag_lines}, "
        f"{layout.at}){assumed}",
        key=env), bound="default", per_process=False, note=f"{env} unset")


def _pool(ctx: StackContext, label: str, n: int, source: Source, key: str) -> Pool:
    if n <= 0:  # database/sql SetMaxOpenConns: 0 or less is no limit
        return ctx.pool(label, 0, source, bound="unbounded", per_process=False,
                        note=f"{key} {n}: database/sql no limit")
    return ctx.pool(label, n, source, per_process=False)
