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
from typing import TYPE_CHECKING, Any

from advisor.model import ConfigProblem, Location, Server, Setting, Source
from advisor.read.bitnami_names import bitnami_images
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

if TYPE_CHECKING:
    from advisor.read.sources.pgmounts import ConfMounts

# --- Bitnami postgresql chart --------------------------------------------------------------


def _is_bitnami_postgresql(obj: K8sObject) -> bool:
    if obj.kind != "StatefulSet":
        return False
    labels = obj.labels
    return (labels.get("app.kubernetes.io/name") == "postgresql"
            and labels.get("app.kubernetes.io/component") in ("primary", "read"))


def bitnami_postgresql(ctx: ReadContext) -> None:
    from advisor.read.sources.pgconf import start_errors

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
        read_from = len(ctx.out.problems)
        settings = _mounted_conf(ctx, obj, configmaps, int(version.value))
        refusing = start_errors(ctx.out.problems[read_from:])
        replicas = int_term(obj, "replicas", ("spec", "replicas"), 1,
                            "StatefulSet spec.replicas default")
        memory = memory_term(obj, (*image[:-1], "resources", "limits", "memory"))
        cpu = cpu_term(obj, (*image[:-1], "resources"))
        hosts = [obj.name, f"{obj.name}-hl"]
        ident = entity_id("bitnami-postgresql", obj)
        if component == "primary":
            primaries[(obj.namespace, instance)] = add_server(
                ctx, obj, ident, obj.name, version=version, settings=settings,
                instances=replicas, memory=memory, cpu=cpu, hosts=hosts,
                start_errors=refusing)
        else:
            primary = primaries.get((obj.namespace, instance))
            add_server(ctx, obj, ident, obj.name, version=version, settings=settings,
                       instances=replicas, memory=memory, cpu=cpu, hosts=hosts, role="standby",
                       primary_id=primary.id if primary else None, start_errors=refusing)
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


# libpostgresql.sh (bitnami/containers 31d94259) postgresql_configure_replication_parameters:
# `postgresql_set_property "max_wal_senders" "16"`, run by postgresql_initialize whenever
# the image writes its own postgresql.conf (create_conf_file=yes) on a start with
# persisted data, and on a first boot that sets up replication: every restart after the
# first holds it. Before PostgreSQL 12 each WAL sender slot comes out of max_connections.
IMAGE_MAX_WAL_SENDERS = 16


def image_conf_settings() -> dict[str, Setting]:
    """What the Bitnami image writes into the postgresql.conf it creates, that the
    budget reads (max_wal_senders)."""
    return {"max_wal_senders": Setting(
        name="max_wal_senders", raw=str(IMAGE_MAX_WAL_SENDERS), value=IMAGE_MAX_WAL_SENDERS,
        source=Source.default_of(
            "Bitnami image default (libpostgresql.sh postgresql_configure_replication_"
            "parameters writes max_wal_senders 16 into the postgresql.conf it creates)",
            key="max_wal_senders"))}


# postgresql-env.sh: POSTGRESQL_VOLUME_DIR="${POSTGRESQL_VOLUME_DIR:-/bitnami/postgresql}",
# POSTGRESQL_MOUNTED_CONF_DIR="$POSTGRESQL_VOLUME_DIR/conf" (not overridable).
BITNAMI_VOLUME_DIR = "/bitnami/postgresql"
# The Bitnami PostgreSQL image under its names (bitnamilegacy and bitnamisecure since the
# 2025 catalog change).
BITNAMI_IMAGES = bitnami_images("postgresql")
_CONTAINER = ("spec", "template", "spec", "containers", 0)


def _mounted_conf(ctx: ReadContext, obj: K8sObject,
                  configmaps: dict[tuple[str | None, str], K8sObject],
                  version: int) -> dict[str, Setting]:
    """The settings of the configuration the server reads, following the container's
    volumeMounts and the image (see the module docstring); without volumeMounts,
    postgresql.conf then override.conf of the ConfigMaps it names (_unmounted_conf)."""
    from advisor.read.sources.pgconf import read_mounted_dir, read_pgconf
    from advisor.read.sources.pgmounts import config_file_arg, unread_conf_d

    container = get(obj.body, *_CONTAINER)
    mounts = _mounts(obj, container, configmaps)
    if mounts is None:
        return _unmounted_conf(ctx, obj, configmaps, version)
    bitnami = _bitnami_image(container)
    conf_dir = posixpath.join(_env(container, "POSTGRESQL_VOLUME_DIR") or BITNAMI_VOLUME_DIR,
                              "conf")
    named = config_file_arg(_argv(container))
    config_file = posixpath.normpath(named or posixpath.join(conf_dir, "postgresql.conf"))
    env = _bitnami_env_settings(ctx, obj, version) if bitnami else {}
    held = mounts.files.get(config_file)
    if held is not None:
        cm, key = held
        display, offset = cm.text_origin(key)
        conf = read_pgconf(ctx.root, display, text=cm.data[key], line_offset=offset,
                           display_path=display, auto_conf=False, version=version,
                           container_path=config_file, mounts=mounts.dirs,
                           mounted_files=mounts.mounted_files())
        ctx.out.problems.extend(conf.problems)
        ctx.out.claimed.append(cm.obj.ref)
        ctx.out.claimed.extend(mounts.holders[p].ref for p in conf.mounted_read
                               if p in mounts.holders)
        ctx.out.claimed.extend(mounts.files[p][0].obj.ref for p in conf.mounted_files_read)
        unread = unread_conf_d(mounts, config_file, conf.mounted_read)
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
    # The image's own postgresql.conf: its replication settings and POSTGRESQL_* written
    # in place, then conf.d.
    settings = {**image_conf_settings(), **env}
    conf_d = mounts.dir_at(posixpath.join(conf_dir, "conf.d"))
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


def _mounts(obj: K8sObject, container: Any,
            configmaps: dict[tuple[str | None, str], K8sObject]) -> ConfMounts | None:
    """What the container mounts (advisor.read.sources.pgmounts); None without
    volumeMounts (objects built from values alone, or hand-written ones that do not say
    where files are)."""
    from advisor.read.sources.pgmounts import conf_mounts
    from advisor.read.workloads import ConfigMapData, volume_spec

    listed = get(container, "volumeMounts")
    if not isinstance(listed, list) or not listed:
        return None
    listed_volumes = get(obj.body, "spec", "template", "spec", "volumes")
    volumes = {str(get(v, "name")): volume_spec(v) for v in listed_volumes
               if isinstance(v, dict)} if isinstance(listed_volumes, list) else {}
    triples = []
    for mount in listed:
        at, sub = get(mount, "mountPath"), get(mount, "subPath") or ""
        if isinstance(at, str) and at:
            triples.append((str(get(mount, "name")), at, sub if isinstance(sub, str) else ""))

    def find(kind: str, name: str) -> ConfigMapData | None:
        cm = configmaps.get((obj.namespace, name)) if kind == "configmap" else None
        data = get(cm.body, "data") if cm is not None else None
        if cm is None or not isinstance(data, dict):
            return None
        return ConfigMapData(cm, {str(k): v for k, v in data.items() if isinstance(v, str)})

    return conf_mounts(triples, volumes, find)


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


def _argv(container: Any) -> list[str]:
    return [str(a) for part in ("command", "args")
            if isinstance(get(container, part), list) for a in get(container, part)]


def _unmounted_conf(ctx: ReadContext, obj: K8sObject,
                    configmaps: dict[tuple[str | None, str], K8sObject],
                    version: int) -> dict[str, Setting]:
    """postgresql.conf then override.conf from the ConfigMaps the StatefulSet names
    (later files win), then POSTGRESQL_MAX_CONNECTIONS: where the container does not say
    where it mounts them."""
    from advisor.read.sources.pgconf import read_pgconf

    volumes = get(obj.body, "spec", "template", "spec", "volumes") or []
    names = [str(get(v, "configMap", "name")) for v in volumes if get(v, "configMap", "name")]
    mounted = any(isinstance(get(cm.body, "data", "postgresql.conf"), str)
                  for name in names if (cm := configmaps.get((obj.namespace, name))))
    # without a postgresql.conf of its own, the Bitnami image writes one
    settings: dict[str, Setting] = ({} if mounted or not _bitnami_image(get(obj.body, *_CONTAINER))
                                    else image_conf_settings())
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
