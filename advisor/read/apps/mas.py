"""Matrix Authentication Service (ghcr.io/element-hq/matrix-authentication-service): its
database pool, from the configuration files it reads, as the pod gives them
(advisor/read/apps/podfiles.py). Upstream element-hq/matrix-authentication-service
v1.22.0:

- The files: each `-c`/`--config` (clap `ArgAction::Append`, global), else MAS_CONFIG
  split on `:`, else `config.yaml` in the working directory; merged in that order over
  the env with figment's `admerge` (maps merged key by key, a later value wins):
  crates/cli/src/commands/mod.rs Options::figment. The env provider is
  `Env::prefixed("MAS_").split("_")`, which splits a name at every `_`: no variable
  names `database.max_connections`.
- `server` (also with no subcommand) and `worker` open one sqlx PgPool of
  `database.max_connections` (crates/cli/src/util.rs database_pool_from_config:
  `PgPoolOptions::new().max_connections(config.max_connections.into())`); the task
  worker's PgListener takes its connection from that pool (sqlx-postgres 0.8.6
  listener.rs PgListener::connect_with: `pool.acquire()`). Default 10:
  crates/config/src/sections/database.rs:23-25 `default_max_connections` (10 in every
  tag from v0.1.0). `database migrate`, `config sync` and `manage` hold one connection
  (database_connection_from_config); `syn2mas` holds more (not read); `config check`,
  `templates` and `doctor` none.
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.configdoc import Reader, cite, deep, later_note
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.podfiles import unheld

MAS_NAMES = ("matrix-authentication-service",)
MAS_POOL = "Matrix Authentication Service database.max_connections"
MAS_MAX_CONNECTIONS = 10  # crates/config/src/sections/database.rs default_max_connections
MAS_DEFAULT = ("Matrix Authentication Service default database.max_connections 10 "
               "(crates/config/src/sections/database.rs default_max_connections)")
_ONE_CONNECTION = {("database",), ("config", "sync"), ("manage",)}
_NO_CONNECTION = {("config", "check"), ("config", "dump"), ("config", "generate"),
                  ("config", "migrate"), ("templates",), ("doctor",), ("help",)}


def _command(ctx: StackContext) -> tuple[list[str], list[tuple[str, Source]]] | None:
    """(subcommand words, --config paths) of the mas-cli command line; None when the
    container runs another program."""
    c = ctx.container
    words = [*c.command, *c.args]
    sources = list(c.word_sources) if len(c.word_sources) == len(words) else \
        [c.source] * len(words)
    if c.command:
        # the command line's segments (a shell's `exec mas-cli server ...` too), the
        # last that runs mas-cli: as synapse.synapse_config_paths reads Synapse's
        from advisor.read.apps.cmdline import command_line

        for segment in reversed(command_line(c, None, []).segments()):
            at = next((i for i, w in enumerate(segment)
                       if w.text.rsplit("/", 1)[-1] == "mas-cli"), None)
            if at is not None:
                words = [w.text for w in segment[at + 1:]]
                sources = [w.source for w in segment[at + 1:]]
                break
        else:
            return None
    sub: list[str] = []
    configs: list[tuple[str, Source]] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("-c", "--config") and i + 1 < len(words):
            configs.append((words[i + 1], replace(sources[i + 1], key="--config")))
            i += 2
            continue
        if w.startswith("--config="):
            configs.append((w.split("=", 1)[1], replace(sources[i], key="--config")))
        elif w.startswith("-c") and not w.startswith("--") and len(w) > 2:
            configs.append((w[2:], replace(sources[i], key="--config")))
        elif not w.startswith("-"):
            sub.append(w)
        i += 1
    return sub, configs


def mas_pools(ctx: StackContext) -> list[Pool]:
    from advisor.read.apps.urls import route_from_parts, route_from_url

    if ctx.container.role == "init":
        return []
    found = _command(ctx)
    if found is None:
        return []  # the image running another program (a shell, a check)
    sub, configs = found
    head = tuple(sub[:2])
    if head[:1] == ("syn2mas",):
        ctx.unknown.append(f"{ctx.container.name}: mas-cli syn2mas holds several "
                           "connections, not read by pool-advisor")
        return []
    if head in _NO_CONNECTION or head[:1] in _NO_CONNECTION:
        return []
    one = head[:1] in _ONE_CONNECTION or head in _ONE_CONNECTION
    if not one and head[:1] not in ((), ("server",), ("worker",)):
        ctx.unknown.append(f"{ctx.container.name}: mas-cli {' '.join(sub)} is not a "
                           "command pool-advisor reads")
        return []
    if not configs:
        var = ctx.env("MAS_CONFIG")
        if var is not None and var.value is None:
            ctx.hidden_size(MAS_POOL, "MAS_CONFIG", ctx.env_source("MAS_CONFIG"))
            return []
        if var is not None:
            configs = [(p, ctx.env_source("MAS_CONFIG")) for p in var.value.split(":")]
        else:
            configs = [("config.yaml", Source.default_of(
                "mas-cli: MAS_CONFIG unset, config.yaml (commands/mod.rs figment)",
                key="MAS_CONFIG"))]
    files = ctx.pod_files
    docs = [files.read(path) if files is not None else unheld(f"{path} not read")
            for path, _where in configs]
    config = deep(docs)
    read = Reader()

    def text(*path: str) -> str | None:
        got = read.lookup(config, ("database", *path))
        return str(got.value) if got.found and got.value is not None else None

    uri = read.lookup(config, ("database", "uri"))
    host = read.lookup(config, ("database", "host"))
    if uri.found and uri.value:
        route = route_from_url(str(uri.value), cite(uri, "database.uri"))
    elif host.found and host.value:
        route = route_from_parts(text("host"), text("port"), text("database"),
                                 text("username"), cite(host, "database.host"))
    else:
        route = None
    if one:
        pool = ctx.pool(f"mas-cli {' '.join(sub[:2])} connection", 1, Source.default_of(
            "mas-cli database, config sync, manage: one connection "
            "(database_connection_from_config)", key="connections"), per_process=False)
        return [replace(pool, route=route) if route is not None else pool]
    size = read.lookup(config, ("database", "max_connections"))
    shown = ", ".join(path for path, _ in configs)
    if size.found:
        where = cite(size, "database.max_connections")
        n = parse_int(str(size.value))
        if n is None or n < 1:
            ctx.unknown.append(f"{MAS_POOL} at {where.label()} is {size.value!r}, not a "
                               "pool size pool-advisor can read")
            return []
        pool = ctx.pool(MAS_POOL, n, where, per_process=False,
                        note=later_note(size, "database.max_connections"))
    elif size.later:
        ctx.unknown.append(f"{MAS_POOL} is set in no configuration file read ({shown}), "
                           f"and may be set in what is not in the repository: "
                           f"{'; '.join(dict.fromkeys(size.later))}")
        return []
    else:
        pool = ctx.pool(MAS_POOL, MAS_MAX_CONNECTIONS, Source.default_of(
            MAS_DEFAULT, key="database.max_connections"), bound="default",
            per_process=False, note=f"database.max_connections unset ({shown})")
    return [replace(pool, route=route) if route is not None else pool]
