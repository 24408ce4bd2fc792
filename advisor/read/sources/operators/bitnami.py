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
"""

from __future__ import annotations

from advisor.model import Server, Setting
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
        settings.update(_bitnami_env_settings(ctx, obj, int(version.value)))
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
    postgresql.conf as max_connections, over the mounted configuration)."""
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


def _mounted_conf(ctx: ReadContext, obj: K8sObject,
                  configmaps: dict[tuple[str | None, str], K8sObject],
                  version: int) -> dict[str, Setting]:
    """postgresql.conf then override.conf from the ConfigMaps the StatefulSet mounts
    (later files win, as the image includes override.conf last)."""
    from advisor.read.sources.pgconf import read_pgconf

    volumes = get(obj.body, "spec", "template", "spec", "volumes") or []
    names = [str(get(v, "configMap", "name")) for v in volumes if get(v, "configMap", "name")]
    settings: dict[str, Setting] = {}
    for key in ("postgresql.conf", "override.conf"):
        for name in names:
            cm = configmaps.get((obj.namespace, name))
            text = get(cm.body, "data", key) if cm is not None else None
            if not isinstance(text, str):
                continue
            origin = text_origin(cm, "data", key)
            if origin is not None:
                display, offset = origin
            else:
                display = cm.path
                offset = block_offset(cm.body["data"], key) + cm.line_offset
            conf = read_pgconf(ctx.root, display, text=text, line_offset=offset,
                               display_path=display, auto_conf=False, version=version)
            ctx.out.problems.extend(conf.problems)
            settings.update(conf.settings)
            ctx.out.claimed.append(cm.ref)
    return settings
