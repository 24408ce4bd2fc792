"""Synapse (matrixdotorg/synapse, ghcr.io/element-hq/synapse, oci.element.io/synapse):
the database pools of its processes, from the configuration files its command line
names, read as the pod gives them (advisor/read/apps/podfiles.py). Upstream sources, at
the releases named:

- The files: each `-c`/`--config-path` (argparse `action="append"`), a file, or a folder
  whose `*.yaml` files are read in sorted order; each file is `yaml.safe_load`ed and the
  files are merged shallowly, a later file's top-level section replacing an earlier
  one's whole (element-hq/synapse v1.157.1 synapse/config/_base.py
  add_arguments_to_parser / load_config_with_parser `-c`, find_config_files,
  read_config_files `specified_config.update(yaml_config)`).
- The image's /start.py (docker/start.py main, v1.157.1): with no command it runs
  mode `run` (`args[1]`, else "run"), adds `-m SYNAPSE_WORKER` (default
  synapse.app.homeserver) and, when no argument starts with `--config-path` or `-c`,
  `--config-path $SYNAPSE_CONFIG_PATH` (default `$SYNAPSE_CONFIG_DIR/homeserver.yaml`,
  SYNAPSE_CONFIG_DIR default /data); `generate` and `migrate_config` write a
  configuration and exit.
- `python -m synapse.config` only loads and prints the configuration
  (synapse/config/__main__.py main: HomeServerConfig.load_config): no connection
  (advisor/read/apps/cmdline.py non_client_server).
- Each database of `database` (or the experimental `databases` map) whose `name` is
  psycopg2 (sqlite3 by default) is one Twisted adbapi ConnectionPool per process, made
  with its `args` (matrix-synapse 1.163.2 synapse/storage/database.py make_pool:
  `adbapi.ConnectionPool(db_config.config["name"], ..., **db_args)`;
  synapse/config/database.py DatabaseConnectionConfig); `cp_max`, default 5: Twisted
  26.10.0 twisted/enterprise/adbapi.py ConnectionPool (`max = 5  # Maximum number of
  connections in pool`, "cp_max: the maximum number of connections in pool (default
  5)"). One process per container, the main process or a worker each with its own pools.

A file the repository does not hold (a Secret made at run time, a path on no volume)
among those read: a cp_max set in a file read is counted, with a note naming the file
not held merged after it; a cp_max no file read sets is unknown, not the default 5.
"""

from __future__ import annotations

import posixpath

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.configdoc import Reader, cite, later_note, shallow
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.podfiles import PodText, unheld

SYNAPSE_NAMES = ("synapse",)  # matrixdotorg/synapse, ghcr.io/element-hq/synapse
SYNAPSE_CP_MAX = 5  # Twisted adbapi ConnectionPool.max
SYNAPSE_DEFAULT = ("Twisted adbapi ConnectionPool default cp_max 5 (twisted/enterprise/"
                   "adbapi.py ConnectionPool.max), Synapse passes database.args as given "
                   "(synapse/storage/database.py make_pool)")


def _config_options(words: list) -> list[tuple[str, Source]]:
    """The `-c`/`--config-path` values of Synapse's argparse command line, in order."""
    out = []
    for i, w in enumerate(words):
        text = w.text
        if text in ("-c", "--config-path") and i + 1 < len(words):
            out.append((words[i + 1].text, words[i + 1].source))
        elif text.startswith("--config-path="):
            out.append((text.split("=", 1)[1], w.source))
        elif text.startswith("-c") and not text.startswith("--") and len(text) > 2:
            out.append((text[2:], w.source))
    return out


def _start_py(ctx: StackContext, words: list) -> list[tuple[str, Source]] | None:
    """The config paths docker/start.py runs Synapse with (`words`: its arguments)."""
    mode = words[0].text if words else "run"
    if mode != "run":
        return None  # generate, migrate_config: write a configuration and exit
    given = _config_options(words[1:])
    if any(w.text.startswith(("--config-path", "-c")) for w in words[1:]):
        return given
    path = ctx.env("SYNAPSE_CONFIG_PATH")
    if path is not None:
        return [(path.value if path.value is not None else "", ctx.env_source(path.name))]
    folder = ctx.env_value("SYNAPSE_CONFIG_DIR") or "/data"
    return [(folder.rstrip("/") + "/homeserver.yaml", Source.default_of(
        "Synapse image docker/start.py: SYNAPSE_CONFIG_PATH, default "
        "$SYNAPSE_CONFIG_DIR/homeserver.yaml (/data)", key="SYNAPSE_CONFIG_PATH"))]


def synapse_config_paths(ctx: StackContext) -> list[tuple[str, Source]] | None:
    """The config paths of the Synapse process the container runs; None when it runs
    none (said in ctx.notices or ctx.unknown when it runs something else)."""
    from advisor.read.apps.cmdline import command_line

    c = ctx.container
    if not c.command:
        from advisor.read.apps.cmdline import Word

        words = [Word(text=t, source=replace(c.source, key=f"args[{i}]"))
                 for i, t in enumerate(c.args)]
        if len(c.word_sources) == len(c.args):
            words = [replace(w, source=s) for w, s in zip(words, c.word_sources, strict=True)]
        return _start_py(ctx, words)
    for segment in reversed(command_line(c, None, []).segments()):
        texts = [w.text for w in segment]
        for i, text in enumerate(texts[:-1]):
            if text == "-m" and texts[i + 1].startswith("synapse.app."):
                paths = _config_options(segment[i + 2:])
                if not paths:
                    ctx.notices.append(f"{c.name}: runs {texts[i + 1]} without -c: Synapse "
                                       "refuses to start without a configuration file")
                    return None
                return paths
        for i, text in enumerate(texts):
            if text.rsplit("/", 1)[-1] == "start.py":
                return _start_py(ctx, segment[i + 1:])
    ctx.unknown.append(f"{c.name}: runs `{' '.join((*c.command, *c.args))[:120]}` with the "
                       "Synapse image, not a Synapse process pool-advisor reads")
    return None


def _document(ctx: StackContext, path: str, where: Source) -> PodText:
    """What Synapse reads for one -c path: the file, or the folder's *.yaml files in
    sorted order (find_config_files)."""
    files = ctx.pod_files
    if files is None or not path:
        return unheld(f"{path or 'a path'} ({where.label()}) not read")
    if files.is_dir(path):
        listed, rest = files.listdir(path)
        parts = [text for name, text in listed if name.endswith(".yaml")]
        if rest is not None:
            parts.append(rest)
        return shallow(parts)
    return files.read(path)


def synapse_pools(ctx: StackContext) -> list[Pool]:
    """One adbapi pool of args.cp_max (default 5) per PostgreSQL database of the
    configuration the container's Synapse process reads."""
    from advisor.read.apps.urls import route_from_parts

    if ctx.container.role == "init" or ctx.pod_files is None:
        return []
    paths = synapse_config_paths(ctx)
    if paths is None:
        return []
    config = shallow([_document(ctx, p, where) for p, where in paths])
    read = Reader()
    shown = ", ".join(posixpath.normpath(p) if p else "?" for p, _ in paths)
    databases: list[tuple[str, tuple[str, ...]]] = []
    single = read.lookup(config, ("database",))
    if single.found and isinstance(single.value, dict):
        databases.append(("database", ("database",)))
    else:
        for name in read.keys(config, ("databases",)):
            databases.append((f"databases.{name}", ("databases", name)))
    if not databases:
        maybe = single.later or read.lookup(config, ("databases",)).later
        if maybe:
            ctx.unknown.append(f"Synapse's database is set in none of its configuration "
                               f"files read ({shown}) and may be set in what is not in "
                               f"the repository: {'; '.join(dict.fromkeys(maybe))}")
        return []  # SQLite by default
    pools: list[Pool] = []
    for key, at in databases:
        name = read.lookup(config, (*at, "name"))
        if not name.found and name.later:
            ctx.unknown.append(f"Synapse {key}.name is set in no file read ({shown}); "
                               f"{'; '.join(name.later)}")
            continue
        if str(name.value if name.found else "sqlite3") != "psycopg2":
            continue  # SQLite: Synapse forces cp_min = cp_max = 1 on a file
        label = f"Synapse {key}.args.cp_max"

        def value(field: str, at: tuple[str, ...] = at) -> str | None:
            found = read.lookup(config, (*at, "args", field))
            return str(found.value) if found.found and found.value is not None else None

        host = read.lookup(config, (*at, "args", "host"))
        route = route_from_parts(
            value("host"), value("port"), value("dbname") or value("database"),
            value("user"), cite(host, f"{key}.args.host") if host.found and host.file
            else cite(name, f"{key}.name") if name.found and name.file else Source())
        cp_max = read.lookup(config, (*at, "args", "cp_max"))
        if not cp_max.found:
            if cp_max.later:
                ctx.unknown.append(f"{label} is set in no file read ({shown}), and may be "
                                   f"set in what is not in the repository: "
                                   f"{'; '.join(dict.fromkeys(cp_max.later))}")
                continue
            where = cite(name, f"{key}.name") if name.found and name.file else None
            pool = ctx.pool(label, SYNAPSE_CP_MAX, Source.default_of(
                SYNAPSE_DEFAULT, key=f"{key}.args.cp_max"), bound="default",
                per_process=False, note=f"{key}.args.cp_max unset" + (
                    f" ({where.label()})" if where is not None else ""))
        else:
            where = cite(cp_max, f"{key}.args.cp_max")
            n = parse_int(str(cp_max.value))
            if n is None or n < 1:
                ctx.unknown.append(f"{label} at {where.label()} is {cp_max.value!r}, not a "
                                   "pool size pool-advisor can read")
                continue
            pool = ctx.pool(label, n, where, per_process=False,
                            note=later_note(cp_max, f"{key}.args.cp_max"))
        pools.append(replace(pool, route=route) if route is not None else pool)
    return pools
