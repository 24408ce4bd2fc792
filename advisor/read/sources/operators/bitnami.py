"""The Bitnami postgresql chart: its StatefulSets and the postgresql.conf and
override.conf of the ConfigMaps they mount.

- Bitnami postgresql chart (github.com/bitnami/charts bitnami/postgresql,
  templates/_helpers.tpl postgresql.v1.primary.fullname / readReplica.fullname,
  templates/primary/configmap.yaml at e459d86e, primary/extended-configmap.yaml at
  4253372e, read/extended-configmap.yaml at 7587d195): StatefulSets `<fullname>`
  (or `<fullname>-primary` with architecture=replication) and `<fullname>-read`
  (readReplicas.replicaCount),
  ConfigMaps `<primary>-configuration` (key postgresql.conf, from
  primary.configuration) and `<sts>-extended-configuration` (key override.conf, from
  primary/readReplicas.extendedConfiguration). Recognised in rendered output (or
  the values-only objects advisor.read.render.helm_fallback builds) by the labels
  app.kubernetes.io/name=postgresql and app.kubernetes.io/component=primary|read;
  the ConfigMaps a StatefulSet mounts are the ones read.

Which files the server reads, and in what order, follows the container's volumeMounts
and the image (bitnami/containers bitnami/postgresql/17/debian-12 at 31d94259:
libpostgresql.sh postgresql_initialize and postgresql_create_config, postunpack.sh,
postgresql-env.sh; run.sh starts `postgres --config-file=$POSTGRESQL_CONF_FILE`):

- The image copies the mounted configuration directory `$POSTGRESQL_VOLUME_DIR/conf`
  (the chart mounts primary.configuration there, and the extended ConfigMap at its
  `conf.d/`) into its own conf directory, and starts with the postgresql.conf there.
- A mounted postgresql.conf is used as it is (`create_conf_file=no`): conf.d is read
  only through an include_dir it names, and POSTGRESQL_MAX_CONNECTIONS is not applied.
- Without one, the image's own postgresql.conf applies: the sample with
  `include_dir = 'conf.d'` among its last lines and POSTGRESQL_MAX_CONNECTIONS written in
  place above it, so conf.d (override.conf) wins over the variable.
- Another image started with `-c config_file=<path>` (goauthentik/helm runs
  library/postgres so, on the mounted file) reads that file and what it includes.

An include_dir is resolved against the mounted directories in the container (a
ConfigMap volume holds one file per key): see advisor.read.sources.pgconf.MountedDir.
"""

from __future__ import annotations

import posixpath
from typing import Any

from msgspec import Struct

from advisor.model import ConfigProblem, Location, Server, Setting
from advisor.read.render import text_origin
from advisor.read.sources.k8s import K8sObject, block_offset, get
from advisor.read.sources.operators.common import (
    ReadContext,
    add_server,
    cpu_term,
    entity_id,
    image_version,
    int_term,
    memory_term,
    source_at,
)

# --- Bitnami postgresql chart --------------------------------------------------------------


def _is_bitnami_postgresql(obj: K8sObject) -> bool:
    if obj.kind != "StatefulSet":
        return False
    labels = obj.labels
    return (labels.get("app.kubernetes.io/name") == "postgresql"
            and labels.get("app.kubernetes.io/component") in ("primary", "read"))


def bitnami_postgresql(ctx: ReadContext) -> None:
    sets = [o for o in ctx.objects if _is_bitnami_postgresql(o)]
    if not sets:
        return
    configmaps = {(o.namespace, o.name): o for o in ctx.objects if o.kind == "ConfigMap"}
    primaries: dict[tuple[str | None, str], Server] = {}
    for obj in sorted(sets, key=lambda o: o.labels.get("app.kubernetes.io/component") != "primary"):
        component = obj.labels["app.kubernetes.io/component"]
        instance = obj.labels.get("app.kubernetes.io/instance", "")
        image = ("spec", "template", "spec", "containers", 0, "image")
        version = image_version(obj, image, ctx.version_default,
                                "the Bitnami image tag does not give the major version")
        settings = _mounted_conf(ctx, obj, configmaps, int(version.value))
        replicas = int_term(obj, "replicas", ("spec", "replicas"), 1,
                            "StatefulSet spec.replicas default")
        memory = memory_term(obj, (*image[:-1], "resources", "limits", "memory"))
        cpu = cpu_term(obj, (*image[:-1], "resources"))
        hosts = [obj.name, f"{obj.name}-hl"]
        ident = entity_id("bitnami-postgresql", obj)
        if component == "primary":
            primaries[(obj.namespace, instance)] = add_server(
                ctx, obj, ident, obj.name, version=version, settings=settings,
                instances=replicas, memory=memory, cpu=cpu, hosts=hosts)
        else:
            primary = primaries.get((obj.namespace, instance))
            add_server(ctx, obj, ident, obj.name, version=version, settings=settings,
                       instances=replicas, memory=memory, cpu=cpu, hosts=hosts, role="standby",
                       primary_id=primary.id if primary else None)
            ctx.out.notices.append(f"bitnami-postgresql: traffic to {obj.name} is budgeted "
                                   f"against its {int(replicas.value)} read replicas")
        ctx.out.claimed.append(obj.ref)


def _bitnami_env_settings(ctx: ReadContext, obj: K8sObject, version: int) -> dict[str, Setting]:
    """POSTGRESQL_MAX_CONNECTIONS of the Bitnami image (postgresql-env.sh: written to
    the image's own postgresql.conf as max_connections)."""
    from advisor.read.sources.pgconf import parse_postgres_args_checked

    env = get(obj.body, "spec", "template", "spec", "containers", 0, "env")
    for i, var in enumerate(env if isinstance(env, list) else []):
        if get(var, "name") == "POSTGRESQL_MAX_CONNECTIONS" and get(var, "value") is not None:
            found, problems = parse_postgres_args_checked(
                [f"--max_connections={get(var, 'value')}"],
                source_at(obj, "spec", "template", "spec", "containers", 0, "env", i, "value"),
                version)
            ctx.out.problems.extend(problems)
            return found
    return {}


# postgresql-env.sh: POSTGRESQL_VOLUME_DIR="${POSTGRESQL_VOLUME_DIR:-/bitnami/postgresql}",
# POSTGRESQL_MOUNTED_CONF_DIR="$POSTGRESQL_VOLUME_DIR/conf" (not overridable).
BITNAMI_VOLUME_DIR = "/bitnami/postgresql"
# The Bitnami PostgreSQL image under its names (bitnamilegacy and bitnamisecure since the
# 2025 catalog change).
BITNAMI_IMAGES = ("bitnami/postgresql", "bitnamilegacy/postgresql", "bitnamisecure/postgresql")
_CONTAINER = ("spec", "template", "spec", "containers", 0)


class _Mounts(Struct):
    """What the container mounts from ConfigMaps: its directories (a ConfigMap volume
    mounted whole) and each file by its path (a key in such a directory, or a subPath
    mount), with the ConfigMap and key that hold it."""

    dirs: list[Any]  # pgconf.MountedDir
    files: dict[str, tuple[K8sObject, str]]
    holders: dict[str, K8sObject]  # directory -> the ConfigMap it shows


def _mounted_conf(ctx: ReadContext, obj: K8sObject,
                  configmaps: dict[tuple[str | None, str], K8sObject],
                  version: int) -> dict[str, Setting]:
    """The settings of the configuration the server reads, following the container's
    volumeMounts and the image (see the module docstring); without volumeMounts,
    postgresql.conf then override.conf of the ConfigMaps it names (_unmounted_conf)."""
    from advisor.read.sources.pgconf import read_mounted_dir, read_pgconf

    container = get(obj.body, *_CONTAINER)
    mounts = _mounts(obj, container, configmaps)
    if mounts is None:
        return _unmounted_conf(ctx, obj, configmaps, version)
    bitnami = _bitnami_image(container)
    conf_dir = posixpath.join(_env(container, "POSTGRESQL_VOLUME_DIR") or BITNAMI_VOLUME_DIR,
                              "conf")
    named = _config_file_arg(container)
    config_file = posixpath.normpath(named or posixpath.join(conf_dir, "postgresql.conf"))
    env = _bitnami_env_settings(ctx, obj, version) if bitnami else {}
    held = mounts.files.get(config_file)
    if held is not None:
        cm, key = held
        display, offset = _origin(cm, key)
        conf = read_pgconf(ctx.root, display, text=cm.body["data"][key], line_offset=offset,
                           display_path=display, auto_conf=False, version=version,
                           container_path=config_file, mounts=mounts.dirs)
        ctx.out.problems.extend(conf.problems)
        ctx.out.claimed.append(cm.ref)
        ctx.out.claimed.extend(mounts.holders[p].ref for p in conf.mounted_read)
        unread = _unread_conf_d(mounts, config_file, conf.mounted_read)
        if unread is not None:
            ctx.out.claimed.append(unread.ref)
            why = ("the Bitnami image uses the mounted postgresql.conf in place of its own, "
                   "which names it (libpostgresql.sh postgresql_initialize)" if named is None
                   else f"the server starts with {config_file} (config_file)")
            ctx.out.problems.append(ConfigProblem(
                location=Location(path=display, line=offset + 1), program="pool-advisor",
                message=f"ConfigMap {unread.name} mounted at "
                        f"{posixpath.join(posixpath.dirname(config_file), 'conf.d')} is not "
                        f"read, so its settings do not apply: {config_file} names no "
                        f"include_dir 'conf.d', and {why}; add `include_dir = 'conf.d'` to "
                        "it to apply them"))
        if env:
            ctx.problem(obj, (*_CONTAINER, "env"),
                        "POSTGRESQL_MAX_CONNECTIONS is not applied: the Bitnami image leaves "
                        "a mounted postgresql.conf as it is (libpostgresql.sh "
                        "postgresql_initialize, create_conf_file=no)")
        return dict(conf.settings)
    if named is not None or not bitnami:
        # A file the repository does not show, or another image: read as before.
        return _unmounted_conf(ctx, obj, configmaps, version)
    # The image's own postgresql.conf: POSTGRESQL_* written in place, then conf.d.
    settings = dict(env)
    conf_d = next((d for d in mounts.dirs
                   if d.path == posixpath.join(conf_dir, "conf.d")), None)
    if conf_d is not None and conf_d.files is not None:
        conf = read_mounted_dir(ctx.root, conf_d, version)
        ctx.out.problems.extend(conf.problems)
        settings.update(conf.settings)
        ctx.out.claimed.append(mounts.holders[conf_d.path].ref)
    elif conf_d is not None:
        ctx.problem(obj, (*_CONTAINER, "volumeMounts"),
                    f"{conf_d.path} (the image's include_dir 'conf.d') is mounted from "
                    f"{conf_d.why}; settings it may hold are unknown")
    return settings


def _unread_conf_d(mounts: _Mounts, config_file: str, read: list[str]) -> K8sObject | None:
    """The ConfigMap mounted at conf.d next to the file the server starts with, when
    that file's includes did not read it and it holds a .conf file."""
    path = posixpath.join(posixpath.dirname(config_file), "conf.d")
    holder = mounts.holders.get(path)
    if holder is None or path in read:
        return None
    found = next((d for d in mounts.dirs if d.path == path), None)
    files = found.files if found is not None else None
    return holder if files and any(n.endswith(".conf") for n in files) else None


def _mounts(obj: K8sObject, container: Any,
            configmaps: dict[tuple[str | None, str], K8sObject]) -> _Mounts | None:
    """The ConfigMap volumes the container mounts; None without volumeMounts (objects
    built from values alone, or hand-written ones that do not say where files are)."""
    from advisor.read.sources.pgconf import MountedDir, MountedFile

    listed = get(container, "volumeMounts")
    if not isinstance(listed, list) or not listed:
        return None
    listed_volumes = get(obj.body, "spec", "template", "spec", "volumes")
    volumes = {get(v, "name"): v for v in listed_volumes if isinstance(v, dict)} \
        if isinstance(listed_volumes, list) else {}
    out = _Mounts(dirs=[], files={}, holders={})
    for mount in listed:
        at, sub = get(mount, "mountPath"), get(mount, "subPath") or ""
        sub = sub if isinstance(sub, str) else ""
        volume = volumes.get(get(mount, "name"))
        name = get(volume, "configMap", "name")
        if not isinstance(at, str) or not at or not isinstance(name, str):
            continue
        at = posixpath.normpath(at)
        cm = configmaps.get((obj.namespace, name))
        data = get(cm.body, "data") if cm is not None else None
        if cm is None or not isinstance(data, dict):
            if not sub:
                out.dirs.append(MountedDir(at, None, why=f"ConfigMap {name}, which is not in "
                                           "the repository"))
            continue
        names = _volume_files(data, get(volume, "configMap", "items"))
        if sub:
            if sub in names and isinstance(data.get(names[sub]), str):
                out.files[at] = (cm, names[sub])
            continue
        held: dict[str, Any] = {}
        for file, key in names.items():
            text = data.get(key)
            if "/" in file or not isinstance(text, str):
                continue  # a subdirectory of the volume, or not text
            display, offset = _origin(cm, key)
            held[file] = MountedFile(text, display, offset)
            out.files[posixpath.join(at, file)] = (cm, key)
        out.dirs.append(MountedDir(at, held))
        out.holders[at] = cm
    return out


def _volume_files(data: dict[str, Any], items: Any) -> dict[str, str]:
    """File path in a ConfigMap volume -> its key: every key, or the `items` chosen."""
    if not isinstance(items, list):
        return {str(k): str(k) for k in data}
    return {str(get(i, "path")): str(get(i, "key")) for i in items
            if isinstance(get(i, "path"), str) and isinstance(get(i, "key"), str)
            and get(i, "key") in data}


def _origin(cm: K8sObject, key: str) -> tuple[str, int]:
    """Where line 1 of data[key] is cited: the values block a chart copied it from, else
    the ConfigMap's own lines."""
    origin = text_origin(cm, "data", key)
    if origin is not None:
        return origin
    return cm.path, block_offset(cm.body["data"], key) + cm.line_offset


def _env(container: Any, name: str) -> str | None:
    listed = get(container, "env")
    for var in listed if isinstance(listed, list) else []:
        if get(var, "name") == name and isinstance(get(var, "value"), str):
            return str(get(var, "value"))
    return None


def _bitnami_image(container: Any) -> bool:
    from advisor.read.apps.base import image_is

    image = get(container, "image")
    return isinstance(image, str) and image_is(image, BITNAMI_IMAGES)


def _config_file_arg(container: Any) -> str | None:
    """The config_file a postgres command line names (`-c config_file=P`,
    `--config-file=P`; postmaster.c reads `-` in a long option's name as `_`), the last
    one when several."""
    argv = [str(a) for part in ("command", "args")
            if isinstance(get(container, part), list) for a in get(container, part)]
    found = None
    for i, arg in enumerate(argv):
        if arg == "-c" and i + 1 < len(argv):
            option = argv[i + 1]
        elif arg.startswith(("-c", "--")):  # `-cname=value`, `--name=value`
            option = arg[2:]
        else:
            continue
        name, eq, value = option.partition("=")
        if eq and name.replace("-", "_") == "config_file" and value:
            found = value
    return found


def _unmounted_conf(ctx: ReadContext, obj: K8sObject,
                    configmaps: dict[tuple[str | None, str], K8sObject],
                    version: int) -> dict[str, Setting]:
    """postgresql.conf then override.conf from the ConfigMaps the StatefulSet names
    (later files win), then POSTGRESQL_MAX_CONNECTIONS: where the container does not say
    where it mounts them."""
    from advisor.read.sources.pgconf import read_pgconf

    volumes = get(obj.body, "spec", "template", "spec", "volumes") or []
    names = [str(get(v, "configMap", "name")) for v in volumes if get(v, "configMap", "name")]
    settings: dict[str, Setting] = {}
    for key in ("postgresql.conf", "override.conf"):
        for name in names:
            cm = configmaps.get((obj.namespace, name))
            text = get(cm.body, "data", key) if cm is not None else None
            if cm is None or not isinstance(text, str):
                continue
            display, offset = _origin(cm, key)
            conf = read_pgconf(ctx.root, display, text=text, line_offset=offset,
                               display_path=display, auto_conf=False, version=version)
            ctx.out.problems.extend(conf.problems)
            settings.update(conf.settings)
            ctx.out.claimed.append(cm.ref)
    settings.update(_bitnami_env_settings(ctx, obj, version))
    return settings
