"""Pgpool-II: the connections a Pgpool-II pod opens to each PostgreSQL backend.

Each of num_init_children child processes caches up to max_pool backend connections
(one per user, database and run-time parameters it has served), to every backend:
"the number of connections from Pgpool-II processes to the backends may reach
num_init_children * max_pool in total" (pgpool/pgpool2 doc/src/sgml/connection-pooling.sgml,
max_pool; connection-settings.sgml: `max_pool*num_init_children <= (max_connections -
superuser_reserved_connections)`). So each backend is sent, per pod, num_init_children
processes x max_pool, read here as a pool of max_pool per process. On top, per backend:
the health check process holds one connection while a check runs
(src/main/health_check.c: establish_persistent_connection, then
discard_persistent_connection, every health_check_period seconds, when that is > 0),
and the streaming replication check worker one (src/streaming_replication/
pool_worker_child.c, every sr_check_period seconds when > 0, in streaming replication
mode). Each is counted as one connection at peak.

Defaults (src/config/pool_config_variables.c): num_init_children 32, max_pool 4,
health_check_period 0, sr_check_period 10; pgpool.conf.sample (a link to
pgpool.conf.sample-stream) has each commented out. A later line of pgpool.conf wins
(set_config_options applies the file's items in order).

Images:
- bitnami/pgpool (bitnami/containers bitnami/pgpool/4/debian-12 libpgpool.sh
  pgpool_create_config, pgpool-env.sh): pgpool.conf is the sample, then
  num_init_children = $PGPOOL_NUM_INIT_CHILDREN only when it is not empty,
  max_pool = ${PGPOOL_MAX_POOL:-15}, health_check_period = ${PGPOOL_HEALTH_CHECK_PERIOD:-30},
  sr_check_period = ${PGPOOL_SR_CHECK_PERIOD:-30}, one backend per item of
  PGPOOL_BACKEND_NODES (`num:host[:port]`, port 5432, items split at `,` and `;`), then
  the file PGPOOL_USER_CONF_FILE names appended (its lines win).
- pgpool/pgpool (pgpool/pgpool2_on_k8s pgpool.docker/entrypoint.sh): a pgpool.conf at
  $PGPOOL_CONF_VOLUME (/config, Dockerfile.pgpool) is the whole configuration; else the
  sample plus one line per PGPOOL_PARAMS_<NAME> variable (lower-cased), after the
  entrypoint's own defaults PGPOOL_PARAMS_SR_CHECK_PERIOD=0 and
  PGPOOL_PARAMS_HEALTH_CHECK_PERIOD=0.
- any other image: a mounted pgpool.conf on top of Pgpool-II's defaults, else unknown.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from msgspec import Struct

from advisor.model import Pool, PoolerFront, Route, Source, Term
from advisor.read.apps.numbers import parse_int
from advisor.read.bitnami_names import is_bitnami_owner

if TYPE_CHECKING:
    from advisor.model import Container
    from advisor.read.apps.base import StackContext
    from advisor.read.apps.source import AppFile, AppSource

NAMES = ("pgpool", "pgpool2", "pgpool-ii")  # the image repository's last name
POOL_LABEL = "Pgpool-II max_pool"  # the children's caches (Pool.front marks it for PA101/PA212)

_UPSTREAM = "pool_config_variables.c"
DEFAULTS: dict[str, tuple[int, str]] = {
    "num_init_children": (32, f"Pgpool-II default num_init_children 32 ({_UPSTREAM})"),
    "max_pool": (4, f"Pgpool-II default max_pool 4 ({_UPSTREAM})"),
    "health_check_period": (0, f"Pgpool-II default health_check_period 0 ({_UPSTREAM})"),
    "sr_check_period": (10, f"Pgpool-II default sr_check_period 10 ({_UPSTREAM})"),
    "reserved_connections": (0, f"Pgpool-II default reserved_connections 0 ({_UPSTREAM})"),
}
# bitnami/pgpool libpgpool.sh: (variable, setting, the image's default when the variable is
# empty or unset; None: the setting is left as the sample has it)
_BITNAMI_ENV: tuple[tuple[str, str, int | None], ...] = (
    ("PGPOOL_NUM_INIT_CHILDREN", "num_init_children", None),
    ("PGPOOL_MAX_POOL", "max_pool", 15),
    ("PGPOOL_HEALTH_CHECK_PERIOD", "health_check_period", 30),
    ("PGPOOL_SR_CHECK_PERIOD", "sr_check_period", 30),
    ("PGPOOL_RESERVED_CONNECTIONS", "reserved_connections", None),
)
_OFFICIAL_DEFAULTS = {"sr_check_period": 0, "health_check_period": 0}  # entrypoint.sh
_OFFICIAL_CONF_DIR = "/config"  # Dockerfile.pgpool ENV PGPOOL_CONF_VOLUME
_BACKEND_KEY = re.compile(r"backend_(hostname|port)(\d+)$")
# `$(NS)` inside a host: Kubernetes expands it from an earlier variable (advisor.read.workloads)
_VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


class Value(Struct, frozen=True):
    text: str
    source: Source


class _Settings(Struct):
    """pgpool.conf as the container ends up with it: each setting's last value, and
    the backends' host and port by node number."""

    values: dict[str, Value]
    # why a setting's value is not known here: (the variable or file, where it is named,
    # and what is missing when it is not a Secret's or reference's value)
    hidden: list[tuple[str, Source, str]]


def _image_path(image: str) -> list[str]:
    """The image reference's path parts, without digest or tag (`reg:5000/bitnami/pgpool`:
    reg:5000, bitnami, pgpool)."""
    from advisor.read.apps.locate import image_repository

    return image_repository(image.lower()).split("/")


def is_pgpool_image(image: str) -> bool:
    return _image_path(image)[-1] in NAMES


def _flavour(image: str) -> str:
    parts = _image_path(image)
    owner = parts[-2] if len(parts) >= 2 else ""
    return "bitnami" if is_bitnami_owner(owner) else "official" if owner == "pgpool" else "other"


def conf_values(f: AppFile) -> dict[str, Value]:
    """`name = value` lines of a pgpool.conf, each cited at its line; a later line wins.
    Pgpool-II's lexer (src/config/pool_config.l) reads PostgreSQL's configuration
    grammar, so PostgreSQL's tokenizer is used."""
    from advisor.read.sources.pgconf import parse_line, tokenize_line

    out: dict[str, Value] = {}
    for n, line in enumerate(f.text.splitlines(), start=1):
        tokens = tokenize_line(line)
        if not tokens:
            continue
        parsed = parse_line(tokens, n, True)
        if not isinstance(parsed, tuple):
            continue  # Pgpool-II refuses to start: not a value we could count on
        name, value = parsed
        out[name.lower()] = Value(value, f.cite(n, name.lower(), name))
    return out


def _mounted_conf(ctx: StackContext, path: str) -> AppFile | None:
    want = path.strip("/")
    return next((f for f in ctx.files("pgpool-conf") if f.rel.strip("/") == want), None)


def _env_layer(ctx: StackContext, settings: _Settings, names: list[tuple[str, str]]) -> None:
    """(variable, setting) pairs: each variable set (not empty) sets its setting."""
    for var_name, setting in names:
        var = ctx.env(var_name)
        if var is None:
            continue
        if var.value is None:
            settings.hidden.append((var_name, ctx.env_source(var_name), ""))
        elif var.value.strip():
            settings.values[setting] = Value(var.value.strip(), ctx.env_source(var_name))


def _bitnami_backends(ctx: StackContext, settings: _Settings) -> None:
    var = ctx.env("PGPOOL_BACKEND_NODES")
    if var is None or var.value is None:
        if var is not None:
            settings.hidden.append(("PGPOOL_BACKEND_NODES",
                                    ctx.env_source("PGPOOL_BACKEND_NODES"), ""))
        return
    source = ctx.env_source("PGPOOL_BACKEND_NODES")
    for item in re.split(r"[,;]", var.value):
        fields = item.strip().split(":")
        if len(fields) < 2 or not fields[0].strip().isdigit() or not fields[1].strip():
            continue  # libpgpool.sh refuses to start (`host:port` without a node number)
        num = fields[0].strip()
        settings.values[f"backend_hostname{num}"] = Value(fields[1].strip(), source)
        port = fields[2].strip() if len(fields) > 2 and fields[2].strip() else "5432"
        settings.values[f"backend_port{num}"] = Value(port, source)


def _read_settings(ctx: StackContext) -> tuple[_Settings, str] | None:
    """The container's pgpool.conf settings, and how they were found; None when where
    its pgpool.conf comes from is not known (an image of its own with no mounted file)."""
    settings = _Settings(values={}, hidden=[])
    flavour = _flavour(ctx.container.image)
    if flavour == "bitnami":
        _env_layer(ctx, settings, [(v, s) for v, s, _ in _BITNAMI_ENV])
        for var_name, setting, default in _BITNAMI_ENV:
            if setting not in settings.values and default is not None and not any(
                    h == var_name for h, _, _ in settings.hidden):
                # set empty (the chart's `pgpool.maxPool: ""`): where to set it
                empty = f", {var_name} empty at {ctx.env_source(var_name).label()}" \
                    if ctx.env(var_name) is not None else ""
                settings.values[setting] = Value(str(default), Source.default_of(
                    f"Bitnami pgpool image default {var_name} {default} (libpgpool.sh)"
                    f"{empty}", key=var_name))
        _bitnami_backends(ctx, settings)
        user_conf = ctx.env("PGPOOL_USER_CONF_FILE")
        where = ctx.env_source("PGPOOL_USER_CONF_FILE")
        if user_conf is not None and user_conf.value is None:
            settings.hidden.append(("PGPOOL_USER_CONF_FILE", where, ""))
        elif user_conf is not None and user_conf.value.strip():
            found = _mounted_conf(ctx, user_conf.value.strip())
            if found is None:
                settings.hidden.append(("PGPOOL_USER_CONF_FILE", where, (
                    f"PGPOOL_USER_CONF_FILE ({where.label()}) names "
                    f"{user_conf.value.strip()}, which no ConfigMap or Secret of the "
                    "repository is mounted as; its lines win over the env")))
            else:
                settings.values.update(conf_values(found))
        return settings, "bitnami"
    if flavour == "official":
        conf_dir = (ctx.env_value("PGPOOL_CONF_VOLUME") or _OFFICIAL_CONF_DIR).rstrip("/")
        found = _mounted_conf(ctx, f"{conf_dir}/pgpool.conf")
        if found is not None:
            settings.values.update(conf_values(found))
            return settings, "official"
        for setting, value in _OFFICIAL_DEFAULTS.items():
            settings.values[setting] = Value(str(value), Source.default_of(
                f"pgpool/pgpool image default PGPOOL_PARAMS_{setting.upper()} {value} "
                "(entrypoint.sh)", key=f"PGPOOL_PARAMS_{setting.upper()}"))
        _env_layer(ctx, settings, [(e.name, e.name[len("PGPOOL_PARAMS_"):].lower())
                                   for e in ctx.container.env
                                   if e.name.startswith("PGPOOL_PARAMS_")])
        return settings, "official"
    files = ctx.files("pgpool-conf")
    if not files:
        return None
    for f in files:
        settings.values.update(conf_values(f))
    return settings, "other"


def _setting(ctx: StackContext, settings: _Settings, name: str, problems: list[str]
             ) -> Term | None:
    value = settings.values.get(name)
    if value is None:
        number, why = DEFAULTS[name]
        if name == "num_init_children" and ctx.env("PGPOOL_NUM_INIT_CHILDREN") is not None:
            why += (", PGPOOL_NUM_INIT_CHILDREN empty at "
                    f"{ctx.env_source('PGPOOL_NUM_INIT_CHILDREN').label()}")
        return Term(label=name, value=number, source=Source.default_of(why, key=name))
    number = parse_int(value.text.strip("'\""))
    if number is None or number < 0:
        problems.append(f"{name} = {value.text!r} ({value.source.label()}) is not a number")
        return None
    return Term(label=name, value=number, source=value.source)


def _namespace_refs(ctx: StackContext, host: str) -> str | None:
    """The host with each `$(VAR)` of the pod's own namespace (a fieldRef to
    metadata.namespace) taken out: `pod-0.svc.$(NS).svc.cluster.local` is `pod-0.svc`
    as the pod resolves it. None when another variable is left in it."""
    for m in _VAR_REF.finditer(host):
        var = ctx.env(m.group(1))
        if var is None or var.from_ref != "field:metadata.namespace":
            return None
    if not _VAR_REF.search(host):
        return host
    head = _VAR_REF.split(host, maxsplit=1)[0]
    return head.rstrip(".")


def _backend_routes(ctx: StackContext, settings: _Settings) -> list[Route]:
    """One route per backend, in node order; backends that are pods of one StatefulSet
    (`name-0.headless`, `name-1.headless`: the same server's instances, each sent the
    same connections) count once."""
    hosts: dict[int, Value] = {}
    ports: dict[int, Value] = {}
    for key, value in settings.values.items():
        m = _BACKEND_KEY.fullmatch(key)
        if m:
            (hosts if m.group(1) == "hostname" else ports)[int(m.group(2))] = value
    routes: list[Route] = []
    seen: set[str] = set()
    for num in sorted(hosts):
        raw = hosts[num].text.strip().strip("'\"")
        host = _namespace_refs(ctx, raw)
        if not host:
            continue
        first, _, rest = host.partition(".")
        group = f"{re.sub(r'-[0-9]+$', '', first)}.{rest}" if rest else host
        if group in seen:
            continue
        seen.add(group)
        port = parse_int(ports[num].text.strip("'\"")) if num in ports else 5432
        routes.append(Route(host=host, port=port, source=hosts[num].source))
    return routes


def pgpool_pools(ctx: StackContext) -> list[Pool]:
    if not is_pgpool_image(ctx.container.image):
        return []  # another program with the name in its image (pgpool2_exporter)
    found = _read_settings(ctx)
    label = "Pgpool-II num_init_children x max_pool"
    if found is None:
        ctx.unknown.append(
            f"{label}: image {ctx.container.image or '?'} is not Bitnami's or pgpool/pgpool, "
            "and no pgpool.conf is mounted from the repository, so where its settings come "
            "from is not known")
        return []
    settings, flavour = found
    for name, where, why in settings.hidden:
        if why:
            ctx.unknown.append(f"{label}: {why}")
        else:
            ctx.hidden_size(label, name, where)
    if settings.hidden:
        return []
    problems: list[str] = []
    children = _setting(ctx, settings, "num_init_children", problems)
    per_child = _setting(ctx, settings, "max_pool", problems)
    health = _setting(ctx, settings, "health_check_period", problems)
    sr_check = _setting(ctx, settings, "sr_check_period", problems)
    reserved = _setting(ctx, settings, "reserved_connections", problems)
    mode = settings.values.get("backend_clustering_mode")
    streaming = mode is None or mode.text.strip("'\"").lower() == "streaming_replication"
    if problems or children is None or per_child is None or reserved is None:
        ctx.unknown.extend(f"{label}: {p}" for p in problems)
        return []
    routes = _backend_routes(ctx, settings)
    if not routes:
        ctx.notices.append(f"{ctx.container.name}: Pgpool-II with no backend_hostname the "
                           "repository holds: its connections reach no server here")
        routes = [None]  # type: ignore[list-item]
    bound = "default" if children.source.default or per_child.source.default else "fixed"
    pools: list[Pool] = []
    for route in routes:
        pools.append(Pool(
            label=POOL_LABEL, size=Term(label="max_pool (per child process)",
                                                  value=per_child.value,
                                                  source=per_child.source),
            processes=Term(label="num_init_children (child processes)",
                           value=children.value, source=children.source),
            route=route, bound=bound,
            front=PoolerFront(children=children, reserved=reserved),
            note=f"each child caches up to max_pool connections to every backend "
                 f"({flavour} image); fewer when clients use fewer user/database pairs"))
        if health is not None and health.value > 0:
            pools.append(Pool(label="Pgpool-II health check", size=Term(
                label="health check connection", value=1, source=health.source),
                route=route, note=f"health_check_period {health.value:g} s: one "
                                  "connection per backend while a check runs"))
        if streaming and sr_check is not None and sr_check.value > 0:
            pools.append(Pool(label="Pgpool-II streaming replication check", size=Term(
                label="sr_check connection", value=1, source=sr_check.source),
                route=route, note=f"sr_check_period {sr_check.value:g} s: one connection "
                                  "per backend while a check runs"))
    return pools


def backend_route(container: Container, app: AppSource | None) -> Route | None:
    """Where a Pgpool-II container connects (its first backend), also when its pool
    sizes are unknown: its connections then count as unknown on that server (a floor),
    not on no server."""
    from advisor.read.apps.base import StackContext

    if not is_pgpool_image(container.image):
        return None
    ctx = StackContext(container=container, app=own_files(app), profile=None)
    found = _read_settings(ctx)
    routes = _backend_routes(ctx, found[0]) if found is not None else []
    return routes[0] if routes else None


def own_files(app: AppSource | None) -> AppSource | None:
    """Of an application's files, only a pgpool.conf: the rest are not Pgpool-II's."""
    from advisor.read.apps.source import AppSource

    own = app.of_kind("pgpool-conf") if app is not None else []
    return AppSource(root=app.root, directory=app.directory, files=tuple(own)) \
        if own and app is not None else None
