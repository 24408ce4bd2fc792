"""GitLab run from its Cloud Native images (registry.gitlab.com/gitlab-org/build/cng:
gitlab-webservice-ee/-ce, gitlab-sidekiq-ee/-ce, gitlab-toolbox-ee/-ce, gitlab-exporter),
as the official chart (gitlab-org/charts/gitlab) deploys them: each Rails process's
ActiveRecord pools, one per database its database.yml names, from the env the chart
gives the container and the database.yml template it mounts (read as the pod gives it,
advisor/read/apps/podfiles.py).

The pool (gitlab-org/gitlab, read in its GitHub mirror gitlabhq/gitlabhq; the index
stores files at different commits, each named):
- GitLab sets it, database.yml does not: `Gitlab::Database.default_pool_size` =
  `Gitlab::Runtime.max_threads + (ENV["DB_POOL_HEADROOM"].presence ||
  DEFAULT_POOL_HEADROOM).to_i`, DEFAULT_POOL_HEADROOM = 10 (lib/gitlab/database.rb:7 and
  `default_pool_size`, the version with MINIMUM_POSTGRES_VERSION 14), written into every
  load-balanced model's connection by LoadBalancing::Setup#configure_connection
  (lib/gitlab/database/load_balancing/setup.rb @ e4384360, `pool:
  Gitlab::Database.default_pool_size`), run for each base model at boot
  (config/initializers/load_balancing.rb). The chart agrees: it writes no `pool:` and
  refuses `psql.pool` ("The application now manages the connection pool size",
  gitlab-org/charts/gitlab 9.9.1 @ 3403350c templates/_removals.tpl:318-339).
- `Gitlab::Runtime.max_threads` (lib/gitlab/runtime.rb:86-104, the Sidekiq 7 version
  the index stores, `Sidekiq.default_configuration`): Puma 1 (main thread) + Puma's
  max_threads + `Gitlab::ActionCable::Config.worker_pool_size`
  (ENV.fetch('ACTION_CABLE_WORKER_POOL_SIZE', 4).to_i, lib/gitlab/action_cable/
  config.rb @ 0a559c91), counted in every Puma process; Sidekiq: its concurrency alone
  (`threads = Sidekiq.default_configuration[:concurrency]`); any other process (rake,
  rails runner) 1. The older version (@ 0aa20f3d) counted Sidekiq as 1 + concurrency +
  2, and doc/administration/postgresql/tune.md (@ 036fdcf7) plans "concurrency + 1 +
  DB_POOL_HEADROOM" per Sidekiq and "max_threads + DB_POOL_HEADROOM" per Puma worker:
  the code is what runs, the doc's Puma figure leaves out the main thread and
  ActionCable's workers.
- A pool per database: the base models are db/database_connections/*.yaml with
  `uses_load_balancing: true`: main (ActiveRecord::Base), ci (Ci::ApplicationRecord), sec
  (Gitlab::Database::SecApplicationRecord) (@ 0a154f21, 7e8b0612). Ci::ApplicationRecord
  `connects_to database: { writing: :ci, reading: :ci } if
  Gitlab::Database.has_config?(:ci)` (app/models/ci/application_record.rb @ ba0f3164),
  and has_config? counts an entry with `database_tasks: false` ("Returns true even if
  the database is shared", `include_hidden: true`): the chart's `ci:`, the same host
  and database as `main:` (the chart's charts/gitlab/templates/_databaseDatamodel.tpl:62,66
  make it from main's settings; _database.yml.tpl:57-76 sets its database_tasks false), is a
  second pool of the same size on the same server. tune.md: "This doubles connection
  usage, even when the same PostgreSQL database serves both sets of tables." Another
  entry (geo, embedding) is not read here: unknown.
- Load-balancing replicas: each host of `load_balancing.hosts` gets a pool of
  `configuration.pool_size` (the model's pool) of its own (LoadBalancing::Host#initialize
  `create_replica_connection_pool(load_balancer.configuration.pool_size, host, port)`,
  lib/gitlab/database/load_balancing/host.rb, the version the index stores without a
  commit; configuration.rb @ bbd372c3 #pool_size),
  besides the primary's; not under rake (Configuration#load_balancing_enabled?).
  `discover:` finds its hosts in DNS at run time: unknown.
- Connections are made lazily, so a pool is a ceiling the process may reach, not what it
  opens at boot: GitLab's planning (tune.md) counts the whole pool, headroom included.

The processes (CNG, read in its history as the GitHub repository tachyons/gitlab-pages
holds it):
- webservice: scripts/process-wrapper (@ 7bae5c4e) runs `puma --config
  /srv/gitlab/config/puma.rb` when GITLAB_WEBSERVER is puma (case-insensitive), else
  exits; configuration/puma.rb (@ 5b0160bf:20,67) `threads (ENV['PUMA_THREADS_MIN'] ||=
  '1').to_i, (ENV['PUMA_THREADS_MAX'] ||= '16').to_i` and `workers (ENV['WORKER_PROCESSES']
  ||= '3').to_i` with preload_app!: WORKER_PROCESSES processes (0: Puma's single mode,
  one process). The master disconnects every host before it forks
  (config/initializers/load_balancing.rb `on_before_fork ... disconnect!(timeout: 0)`,
  "the main one won't be running many (if any) database queries") and serves no
  request: not counted.
- sidekiq: scripts/process-wrapper (@ 7bae5c4e) execs `bin/sidekiq-cluster` with one
  queue group ("While we do not run more than 1 Sidekiq worker process ... a
  single-worker cluster"), which starts one `sidekiq -c CONCURRENCY` per group
  (sidekiq_cluster/sidekiq_cluster.rb, cli.rb @ 07fffa9f): one Rails process of
  SIDEKIQ_CONCURRENCY threads. The cluster's own process only supervises (cli.rb opens no
  database), and its metrics server has no database ("a setting stored in the
  application database, we have no access to it here",
  metrics_server/override_gitlab_current_settings.rb @ 068b3a41).
  SIDEKIQ_CONCURRENCY unset: how the image's wrapper passes it is not read here
  (the 2022 wrapper's --min/--max-concurrency are gone from the newer sidekiq-cluster):
  unknown.
- toolbox: the chart's Deployment idles in `while sleep 3600` (no connection; `kubectl
  exec` sessions, gitlab-rails console and backup-utility, are people's, to keep room
  for in `headroom`); the migrations Job runs gitlab-rails/scripts/db-migrate (@
  7bae5c4e): `rake gitlab:db:configure`, then `rails runner`, one process at a time,
  single-threaded (max_threads 1, no load balancing under rake): one connection per
  database at a time, as pool-advisor counts any schema migration (the pool's ceiling
  is 1 + DB_POOL_HEADROOM per database). Another toolbox command: unknown.
- Each reads /srv/gitlab/config/database.yml, which the image's set-config
  (gitlab-ruby/scripts/set-config @ 7bae5c4e) writes from CONFIG_TEMPLATE_DIRECTORY: each
  `*.erb` rendered, then each `*.yml` copied over (so a database.yml there wins over a
  database.yml.erb).
- gitlab-exporter's database probes (its own gem's pool) and gitlab-geo-logcursor are
  not read: unknown.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from msgspec.structs import replace

from advisor.model import Pool, Route, Source, Term
from advisor.read.apps.base import StackContext, image_path
from advisor.read.apps.podfiles import PodText

WEBSERVICE = frozenset({"gitlab-webservice-ee", "gitlab-webservice-ce"})
SIDEKIQ = frozenset({"gitlab-sidekiq-ee", "gitlab-sidekiq-ce"})
TOOLBOX = frozenset({"gitlab-toolbox-ee", "gitlab-toolbox-ce"})
UNREAD = {"gitlab-exporter": "gitlab-exporter's database probes hold connections of the "
                             "gitlab-exporter gem's own pool, not read by pool-advisor",
          "gitlab-geo-logcursor": "the Geo log cursor's pools (Geo tracking database) are "
                                  "not read by pool-advisor"}
NAMES = WEBSERVICE | SIDEKIQ | TOOLBOX | frozenset(UNREAD)

HEADROOM = 10  # lib/gitlab/database.rb:7 DEFAULT_POOL_HEADROOM
CABLE_WORKERS = 4  # lib/gitlab/action_cable/config.rb worker_pool_size default
PUMA_WORKERS = 3  # CNG configuration/puma.rb:67 WORKER_PROCESSES ||= '3'
PUMA_THREADS = 16  # CNG configuration/puma.rb:20 PUMA_THREADS_MAX ||= '16'
# base models with uses_load_balancing (db/database_connections/*.yaml): each a pool
LOAD_BALANCED = ("main", "ci", "sec")
V = "GitLab"
_POOL = (f"{V} Gitlab::Database.default_pool_size = Gitlab::Runtime.max_threads + "
         "DB_POOL_HEADROOM (lib/gitlab/database.rb, lib/gitlab/runtime.rb:86-104)")
_ERB_OUT = re.compile(r"<%=.*?%>", re.DOTALL)
_ERB_WORD = "erb-output"
_ERB_CODE = re.compile(r"<%.*?%>", re.DOTALL)
_RUBY_INT = re.compile(r"\s*([+-]?[0-9]+(?:_[0-9]+)*)", re.ASCII)
_RAILS_WORDS = re.compile(r"(?:^|[\s;/&|(])(?:gitlab-rake|gitlab-rails|backup-utility|rake|"
                          r"rails|bundle|ruby|puma|sidekiq)(?:$|[\s;&|)])")
_DB_MIGRATE = re.compile(r"(?:^|[\s;/&|(])db-migrate(?:$|[\s;&|)])")
_SLEEP = re.compile(r"(?:^|[\s;&|(])sleep\s")


def is_gitlab(image: str) -> bool:
    return _name(image) in NAMES


def _name(image: str) -> str:
    return image_path(image).rsplit("/", 1)[-1]


def ruby_to_i(text: str) -> int:
    """Ruby's String#to_i: the leading integer ("12abc" 12, "" and "abc" 0)."""
    m = _RUBY_INT.match(text)
    return int(m.group(1).replace("_", "")) if m else 0


class Part(NamedTuple):
    """One number of the pool or process count, and where it comes from."""

    value: int
    label: str
    source: Source
    written: bool  # set in the container's env (else the code's default)


class _Unread(Exception):
    """Said in ctx.unknown already: the container's connections are unknown."""


def _ruby_env(ctx: StackContext, name: str, default: int, why: str, *,
              blank_is_default: bool = False) -> Part:
    """An env variable Ruby reads with `.to_i`, else `default` (`why` names it);
    `blank_is_default`: `.presence` (a blank value is the default, DB_POOL_HEADROOM)."""
    var = ctx.env(name)
    if var is not None and var.value is None:
        ctx.hidden_size(f"{V} pool", name, ctx.env_source(name))
        raise _Unread(name)
    if var is None or (blank_is_default and not var.value.strip()):
        return Part(default, name, Source.default_of(why, key=name), False)
    return Part(ruby_to_i(var.value), name, ctx.env_source(name), True)


def _words(ctx: StackContext) -> str:
    return " ".join((*ctx.container.command, *ctx.container.args))


# --- database.yml -----------------------------------------------------------------


class Database(NamedTuple):
    """A `production:` entry of database.yml."""

    name: str
    route: Route | None
    replicas: list[str]  # load_balancing.hosts
    discover: Source | None  # load_balancing.discover, where written
    source: Source  # the entry's line


def _template(ctx: StackContext) -> PodText | None:
    """The database.yml set-config leaves in /srv/gitlab/config, as the pod gives it;
    None (said in ctx.unknown) when it is not read."""
    from advisor.read.apps.podfiles import unheld

    var = ctx.env("CONFIG_TEMPLATE_DIRECTORY")
    if var is None or not var.value:
        ctx.unknown.append(f"{V} {ctx.container.name}: CONFIG_TEMPLATE_DIRECTORY unset, so "
                           "its database.yml is the image's own, not in the repository")
        return None
    files = ctx.pod_files
    folder = var.value.rstrip("/")
    tried = []
    for name in ("database.yml", "database.yml.erb"):  # a .yml is copied over the .erb's
        text = files.read(f"{folder}/{name}") if files is not None else \
            unheld(f"{folder}/{name}: the pod's files are not read")
        if text.kind == "held":
            return text
        tried.append(text.why)
    ctx.unknown.append(f"{V} {ctx.container.name}: database.yml not read ("
                       f"{'; '.join(tried)})")
    return None


def _without_erb(text: str) -> str:
    """ERB tags replaced, lines kept: an output tag by a word, code by nothing."""
    def blank(m: re.Match[str], word: str) -> str:
        return word + "\n" * m.group(0).count("\n")

    text = _ERB_OUT.sub(lambda m: blank(m, _ERB_WORD), text)
    return _ERB_CODE.sub(lambda m: blank(m, ""), text)


def _databases(ctx: StackContext, held: PodText) -> list[Database] | None:
    """The `production:` entries in their order; None (in ctx.unknown) when the file
    says none that can be read."""
    from advisor.read.apps.urls import route_from_parts
    from advisor.read.sources.k8s import load_yaml_stream

    f = held.file
    assert f is not None
    docs, problems = load_yaml_stream(_without_erb(f.text), f.path)
    if problems:
        ctx.unknown.append(f"{V} {ctx.container.name}: {f.rel} ({f.path}) is not read as "
                           f"YAML: {problems[0].message}")
        return None
    top = docs[0][0] if docs else None
    block = top.get("production") if isinstance(top, dict) else None
    if not isinstance(block, dict) or not block:
        ctx.unknown.append(f"{V} {ctx.container.name}: {f.rel} ({f.path}) has no "
                           "production databases pool-advisor reads")
        return None
    two_tier = "adapter" in block or "host" in block
    entries = [("main", block)] if two_tier else \
        [(str(k), v) for k, v in block.items() if isinstance(v, dict)]
    out = []
    for name, entry in entries:
        where = f.cite(_line(block if not two_tier else top, name if not two_tier
                             else "production"), f"production.{name}", name)

        def text(key: str, entry: dict = entry) -> str | None:
            value = entry.get(key)
            return None if value is None or value == "" else str(value)

        host_src = f.cite(_line(entry, "host"), f"production.{name}.host", "host") \
            if "host" in entry else where
        route = None
        if _ERB_WORD in (text("host") or ""):
            # computed when the pod starts: the pools count where the client links
            ctx.notices.append(f"{V} {ctx.container.name}: {name}'s host "
                               f"({host_src.label()}) is an ERB expression, not read")
        else:
            route = route_from_parts(text("host"), text("port"), text("database"),
                                     text("username"), host_src)
        lb = entry.get("load_balancing")
        replicas: list[str] = []
        discover = None
        if isinstance(lb, dict):
            hosts = lb.get("hosts")
            if isinstance(hosts, list):
                replicas = [str(h) for h in hosts if isinstance(h, str | int) and str(h)]
            if isinstance(lb.get("discover"), dict):
                discover = f.cite(_line(lb, "discover"), f"production.{name}.load_balancing"
                                  ".discover", "discover")
        out.append(Database(name, route, replicas, discover, where))
    return out


def _line(mapping: object, key: str) -> int | None:
    lc = getattr(mapping, "lc", None)
    try:
        return lc.key(key)[0] + 1 if lc is not None else None
    except (KeyError, TypeError, AttributeError):
        return None


# --- the processes ------------------------------------------------------------------


class Runtime(NamedTuple):
    """One kind of GitLab process in the container: how many, and its pool per database."""

    what: str
    processes: Term | None  # None: one process
    pool: Term
    bound: Literal["fixed", "default"]  # "default": no thread count written in the env
    note: str


def _pool_term(ctx: StackContext, parts: list[Part], headroom: Part, base: int,
               base_text: str) -> Term:
    threads = base + sum(p.value for p in parts)
    if threads + headroom.value < 1:
        # ActiveRecord with no slot: every checkout times out; not a size to budget
        ctx.unknown.append(f"{V} {ctx.container.name}: pool {threads} threads + "
                           f"{headroom.value} (DB_POOL_HEADROOM, {headroom.source.label()}) "
                           "is below 1")
        raise _Unread("DB_POOL_HEADROOM")
    shown = " + ".join([base_text] * bool(base_text) + [
        f"{p.value} ({p.label}, {p.source.label()})" for p in parts])
    return Term(label=f"{V} pool per database (default_pool_size)",
                value=threads + headroom.value,
                source=Source.default_of(
                    f"{_POOL}: max_threads {threads} = {shown}; + {headroom.value} "
                    f"(DB_POOL_HEADROOM, {headroom.source.label()})", key="pool"))


def _headroom(ctx: StackContext) -> Part:
    return _ruby_env(ctx, "DB_POOL_HEADROOM", HEADROOM,
                     f"{V} DEFAULT_POOL_HEADROOM 10 (lib/gitlab/database.rb:7)",
                     blank_is_default=True)


def _puma(ctx: StackContext) -> Runtime:
    server = ctx.env("GITLAB_WEBSERVER")
    if server is not None and server.value is None:
        ctx.hidden_size(f"{V} webservice", "GITLAB_WEBSERVER", ctx.env_source("GITLAB_WEBSERVER"))
        raise _Unread("GITLAB_WEBSERVER")
    if server is None or server.value.upper() != "PUMA":
        ctx.unknown.append(f"{V} {ctx.container.name}: GITLAB_WEBSERVER is "
                           f"{server.value if server else 'unset'!r}: the image's "
                           "process-wrapper starts Puma only for `puma`")
        raise _Unread("GITLAB_WEBSERVER")
    workers = _ruby_env(ctx, "WORKER_PROCESSES", PUMA_WORKERS,
                        "CNG configuration/puma.rb:67 workers (ENV['WORKER_PROCESSES'] ||= '3')")
    threads = _ruby_env(ctx, "PUMA_THREADS_MAX", PUMA_THREADS,
                        "CNG configuration/puma.rb:20 threads ..., (ENV['PUMA_THREADS_MAX'] "
                        "||= '16')")
    cable = _ruby_env(ctx, "ACTION_CABLE_WORKER_POOL_SIZE", CABLE_WORKERS,
                      f"{V} ActionCable worker_pool_size default 4 "
                      "(lib/gitlab/action_cable/config.rb)")
    headroom = _headroom(ctx)
    if threads.value < 1 or workers.value < 0:
        ctx.unknown.append(f"{V} {ctx.container.name}: Puma with {workers.value} workers of "
                           f"{threads.value} threads (WORKER_PROCESSES, PUMA_THREADS_MAX) "
                           "does not serve")
        raise _Unread("PUMA_THREADS_MAX")
    pool = _pool_term(ctx, [threads._replace(label="Puma max threads (PUMA_THREADS_MAX)"),
                       cable._replace(label="ActionCable workers "
                                           "(ACTION_CABLE_WORKER_POOL_SIZE)")],
                      headroom, 1, "1 (main thread)")
    processes = None if workers.value == 0 else Term(
        label="Puma workers (WORKER_PROCESSES)", value=workers.value, source=workers.source)
    mode = "Puma in single mode: one process" if processes is None else \
        "Puma in cluster mode: the master serves nothing and disconnects before it forks"
    written = threads.written or workers.written
    return Runtime("Puma worker" if processes else "Puma (single mode)", processes, pool,
                   "fixed" if written else "default",
                   f"{mode}; each process a pool per database, opened lazily")


def _sidekiq(ctx: StackContext) -> Runtime:
    if ctx.container.command or ctx.container.args:
        ctx.unknown.append(f"{V} {ctx.container.name}: the sidekiq image runs a command of "
                           "the container's own, not read")
        raise _Unread("command")
    conc = ctx.env("SIDEKIQ_CONCURRENCY")
    if conc is None:
        ctx.unknown.append(f"{V} {ctx.container.name}: SIDEKIQ_CONCURRENCY unset: the "
                           "concurrency the image's process-wrapper then gives sidekiq-cluster "
                           "is not read")
        raise _Unread("SIDEKIQ_CONCURRENCY")
    concurrency = _ruby_env(ctx, "SIDEKIQ_CONCURRENCY", 0, "")
    if concurrency.value < 1:
        ctx.unknown.append(f"{V} {ctx.container.name}: SIDEKIQ_CONCURRENCY at "
                           f"{concurrency.source.label()} is {conc.value!r}, not a thread count")
        raise _Unread("SIDEKIQ_CONCURRENCY")
    label = "Sidekiq concurrency (SIDEKIQ_CONCURRENCY)"
    pool = _pool_term(ctx, [concurrency._replace(label=label)], _headroom(ctx), 0, "")
    return Runtime("Sidekiq", None, pool, "fixed",
                   "one Sidekiq process (a single-worker sidekiq-cluster); its pool per "
                   "database, opened lazily")


# --- the reader ---------------------------------------------------------------------


def gitlab_pools(ctx: StackContext) -> list[Pool]:
    """The pools of a GitLab CNG container: Puma workers or the Sidekiq process, a pool
    per database (and per load-balancing replica); the migrations Job's one connection
    per database; none for the idle toolbox; unknown for what is not read."""
    if ctx.container.role == "init":
        return []  # wait-for-deps, configure: gone before the peak
    name = _name(ctx.container.image)
    if name not in NAMES:
        return []  # another image whose name holds a marker (gitlab-sidekiq-exporter)
    if name in UNREAD:
        ctx.unknown.append(f"{V} {ctx.container.name}: {UNREAD[name]}")
        return []
    try:
        if name in TOOLBOX:
            return _toolbox(ctx)
        if name in WEBSERVICE and (ctx.container.command or ctx.container.args):
            ctx.unknown.append(f"{V} {ctx.container.name}: the webservice image runs a "
                               "command of the container's own, not read")
            return []
        runtime = _puma(ctx) if name in WEBSERVICE else _sidekiq(ctx)
        held = _template(ctx)
        databases = _databases(ctx, held) if held is not None else None
        if databases is None:
            return []
        return _per_database(ctx, runtime, databases)
    except _Unread:
        return []


def _per_database(ctx: StackContext, runtime: Runtime, databases: list[Database]
                  ) -> list[Pool]:
    pools = []
    for db in databases:
        if db.name not in LOAD_BALANCED:
            ctx.unknown.append(f"{V} {ctx.container.name}: database.yml entry {db.name!r} "
                               f"({db.source.label()}): its pool is not read by pool-advisor")
            raise _Unread(db.name)
        if db.discover is not None:
            ctx.unknown.append(f"{V} {ctx.container.name}: {db.name} load_balancing.discover "
                               f"({db.discover.label()}) finds replica hosts in DNS at run "
                               "time, each a pool: how many is not in the repository")
            raise _Unread(db.name)
        pools.append(Pool(label=f"{V} {db.name} pool ({runtime.what})", size=runtime.pool,
                          processes=runtime.processes, route=db.route,
                          bound=runtime.bound, note=runtime.note))
        for host in db.replicas:
            route = replace(db.route, host=host) if db.route is not None else None
            pools.append(Pool(
                label=f"{V} {db.name} replica {host} pool ({runtime.what})", size=runtime.pool,
                processes=runtime.processes, route=route, bound=runtime.bound,
                note="load_balancing.hosts: a pool of the same size per replica host "
                     "(LoadBalancing::Host)"))
    return pools


def _toolbox(ctx: StackContext) -> list[Pool]:
    words = _words(ctx)
    if _DB_MIGRATE.search(words):
        held = _template(ctx)
        databases = _databases(ctx, held) if held is not None else None
        if databases is None:
            return []
        return [Pool(label=f"{V} db-migrate {db.name} connection",
                     size=Term(label=f"{V} db-migrate connections ({db.name})", value=1,
                               source=Source.default_of(
                                   "CNG gitlab-rails/scripts/db-migrate: rake "
                                   "gitlab:db:configure, then rails runner, one "
                                   "single-threaded process at a time (max_threads 1): one "
                                   "connection per database", key="db-migrate")),
                     route=db.route,
                     note="a schema migration: one connection at a time per database "
                          "(its pool's ceiling is 1 + DB_POOL_HEADROOM)", migration=True)
                for db in databases]
    if words and _SLEEP.search(words) and not _RAILS_WORDS.search(words):
        return [Pool(label=f"{V} toolbox (idle)", size=Term(
            label=f"{V} toolbox connections", value=0, source=Source.default_of(
                f"{V} toolbox: the container idles in a sleep loop and starts no Rails "
                "process", key="command")),
            note="kubectl exec sessions (gitlab-rails console, backup-utility) are not in "
                 "the budget: keep headroom for them")]
    ctx.unknown.append(f"{V} {ctx.container.name}: the toolbox image runs "
                       f"{words[:80] or 'its entrypoint'!r}, whose connections pool-advisor "
                       "does not read")
    return []
