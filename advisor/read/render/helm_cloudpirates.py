"""The CloudPirates `postgres` chart (oci://ghcr.io/cloudpirates-io/helm-charts, Zammad's
database) as a dependency that is not vendored: its server built from the values, as
helm_fallback does for Bitnami postgresql.

What the chart renders, CloudPirates-io/helm-charts charts/postgres 0.15.1-0.20.1
(0.19.16 is bcd05111; the same in 88904109 0.15.1 and d4b28a91 0.20.1):
- templates/statefulset.yaml: a StatefulSet `postgres.fullname` (the common chart's
  `cloudpirates.fullname`: fullnameOverride, else <release>-<nameOverride or chart
  name>, the release alone when it contains that name) with `replicas: .Values.replicaCount`,
  image `<global.imageRegistry or image.registry>/<image.repository>:<image.tag>`,
  `resources: toYaml .Values.resources`, `args: [postgres, -c,
  config_file=/etc/postgresql/postgresql.conf]` when `args` is null (the values given
  otherwise), and the ConfigMap `config.existingConfigmap` or <fullname> at /etc/postgresql
  when `config.mountConfigMap` (default true);
- templates/configmap.yaml (unless config.existingConfigmap): postgresql.conf with
  `max_connections = config.postgresqlMaxConnections` when > 0, else
  `config.postgresql.max_connections` (100), shared_buffers / work_mem /
  maintenance_work_mem / wal_buffers the same way (a legacy `config.postgresqlX` when not
  empty), max_wal_senders, shared_preload_libraries and the `config.extraConfig` lines;
- templates/service.yaml: a Service <fullname> on service.port (5432);
- values.yaml: image docker.io/postgres tag 18.x (18.1 in 0.15.1, 18.4 in 0.19.16, 18.6
  in 0.20.1), max_connections 100, shared_buffers 128MB, work_mem 4MB,
  maintenance_work_mem 64MB, wal_buffers 16MB.
Before 0.15.1 max_connections was `config.postgresqlMaxConnections` alone and the chart
took other shapes, so other versions are not built: a PA901 warning says so.
"""

from __future__ import annotations

from typing import Any

from advisor.model import Source
from advisor.read.render import field_path, traced_line_key
from advisor.read.render.helm_dep_versions import Locked, exact_version
from advisor.read.render.helm_values import Key, ValuesLayer, leaf_source
from advisor.read.sources.k8s import K8sObject, get

OLDEST, NEWEST = (0, 15, 1), (0, 20, 1)
SHOWN = "0.15.1-0.20.1"
# (conf name, legacy values key, chart default): the chart's values.yaml at those versions
_SETTINGS = (("max_connections", "postgresqlMaxConnections", 100),
             ("shared_buffers", "postgresqlSharedBuffers", "128MB"),
             ("work_mem", "postgresqlWorkMem", "4MB"),
             ("maintenance_work_mem", "postgresqlMaintenanceWorkMem", "64MB"),
             ("wal_buffers", "postgresqlWalBuffers", "16MB"))
CONFIG_DIR = "/etc/postgresql"


def is_cloudpirates_postgres(name: str, repository: str) -> bool:
    return name == "postgres" and "cloudpirates" in repository.lower()


def chart_version(declared: str, locked: Locked | None) -> tuple[str, bool]:
    """(the version Helm would install as shown, whether this module models it): the
    locked version, else an exact one, else one minor (`^0.19.0`, `~0.19.3`, `0.19.x`:
    Helm picks its newest patch) within OLDEST..NEWEST's minors."""
    import re

    version = locked.version if locked is not None else declared
    exact = exact_version(version)
    if exact is not None:
        return version, OLDEST <= exact <= NEWEST
    match = re.match(r"^\s*[\^~]?\s*0\.(\d+)\.(?:\d+|[xX*])\s*$|^\s*0\.(\d+)(?:\.[xX*])?\s*$",
                     version)
    minor = int(match.group(1) or match.group(2)) if match else None
    return version, minor is not None and OLDEST[1] <= minor <= NEWEST[1]


def cloudpirates_postgres(values: dict[str, Any], layers: list[ValuesLayer], prefix: Key,
                          release: str, name: str, version: str, global_values: dict[str, Any],
                          chart_rel: str, namespace: str | None) -> list[K8sObject]:
    """The ConfigMap, StatefulSet and Service the chart renders (see the module)."""
    from advisor.read.render.helm_builder import ValuesBuilder as _Builder

    override = values.get("fullnameOverride")
    chart_name = str(values.get("nameOverride") or name)
    fullname = (str(override) if override else release if chart_name in release
                else f"{release}-{chart_name}")[:63].rstrip("-")
    labels = {"app.kubernetes.io/name": chart_name, "app.kubernetes.io/instance": release}
    config = values.get("config") if isinstance(values.get("config"), dict) else {}
    built: list[K8sObject] = []
    anchor = _first_line(layers, prefix)

    mount = config.get("mountConfigMap", True) is not False
    configmap = str(config.get("existingConfigmap") or "") or fullname
    if not config.get("existingConfigmap"):
        c = _Builder(layers, prefix)
        lines = ["listen_addresses = '*'"]
        sources: list[Source | None] = [None]
        for conf, legacy, default in _SETTINGS:
            value, src = _setting(config, layers, prefix, conf, legacy, default, version)
            lines.append(f"{conf} = {value}")
            sources.append(src)
        for conf in ("max_wal_senders", "shared_preload_libraries"):
            raw = get(config, "postgresql", conf)
            if raw not in (None, ""):
                lines.append(f"{conf} = {_quoted(conf, raw)}")
                sources.append(leaf_source(layers, (*prefix, "config", "postgresql", conf)))
        extra = config.get("extraConfig")
        for i, line in enumerate(extra if isinstance(extra, list) else []):
            if isinstance(line, str | int | float):
                lines.append(str(line))
                sources.append(leaf_source(layers, (*prefix, "config", "extraConfig", i)))
        for n, (line, src) in enumerate(zip(lines, sources, strict=True), start=1):
            if src is not None:  # the value, after `name = `, is where it is cited
                column = line.find(" = ") + 3 if " = " in line else 0
                c.sources[traced_line_key("data.postgresql.conf", n, column)] = src
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": fullname, "labels": labels},
              "data": {"postgresql.conf": "\n".join(lines) + "\n"}}
        built.append(c.build(cm, anchor, chart_rel, namespace))

    b = _Builder(layers, prefix)
    image, from_values = _image(values, global_values)
    cpath: Key = ("spec", "template", "spec", "containers", 0)
    container: dict[str, Any] = {"name": name, "image": image}
    if from_values:
        b.src((*cpath, "image"), "image", "tag")
    else:
        b.sources[field_path(*cpath, "image")] = Source.default_of(
            f"CloudPirates postgres chart {version} values.yaml image.tag: PostgreSQL 18 "
            f"(18.x in charts {SHOWN})")
    args = values.get("args")
    if args is None:
        container["args"] = ["postgres", "-c", f"config_file={CONFIG_DIR}/postgresql.conf"]
    elif isinstance(args, list) and args:
        container["args"] = [str(a) for a in args]
        b.src((*cpath, "args"), "args")
    command = values.get("command")
    if isinstance(command, list) and command:
        container["command"] = [str(a) for a in command]
    resources = values.get("resources")
    if isinstance(resources, dict):
        kept = {part: {k: v for k, v in items.items() if isinstance(v, str | int | float)}
                for part in ("limits", "requests")
                if isinstance(items := resources.get(part), dict) and items}
        if kept:
            container["resources"] = kept
            for part, items in kept.items():
                for k in items:
                    b.src((*cpath, "resources", part, k), "resources", part, k)
    pod: dict[str, Any] = {"containers": [container]}
    if mount:
        container["volumeMounts"] = [{"name": "config", "mountPath": CONFIG_DIR}]
        pod["volumes"] = [{"name": "config", "configMap": {"name": configmap,
                                                           "optional": True}}]
    replicas = values.get("replicaCount", 1)
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": fullname, "labels": labels},
            "spec": {"replicas": int(replicas) if isinstance(replicas, int) else 1,
                     "serviceName": f"{fullname}-headless",
                     "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod}}}
    b.src(("spec", "replicas"), "replicaCount")
    built.append(b.build(body, anchor, chart_rel, namespace))

    s = _Builder(layers, prefix)
    port = get(values, "service", "port")
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": fullname, "labels": labels},
               "spec": {"selector": labels,
                        "ports": [{"name": "postgres", "port": port if isinstance(port, int)
                                   else 5432, "targetPort": 5432}]}}
    s.src(("spec", "ports", 0, "port"), "service", "port")
    built.append(s.build(service, anchor, chart_rel, namespace))
    return built


def _first_line(layers: list[ValuesLayer], prefix: Key) -> Source | None:
    """The first values line under `prefix` (the objects' own line), in the last layer
    that has one."""
    for layer in reversed(layers):
        n = len(layer.prefix)
        if prefix[:n] != layer.prefix or layer.display == "--set":
            continue
        lines = [line for key, line in layer.positions.items()
                 if key[:len(prefix) - n] == prefix[n:]]
        if lines:
            return Source(path=layer.display, line=min(lines), key=".".join(prefix))
    return None


def _setting(config: dict[str, Any], layers: list[ValuesLayer], prefix: Key, conf: str,
             legacy: str, default: Any, version: str) -> tuple[Any, Source]:
    """The chart's `ternary legacy new (legacy set)`: max_connections takes the legacy
    key when > 0, the others when not empty."""
    old = config.get(legacy)
    if (conf == "max_connections" and isinstance(old, int) and old > 0) or \
            (conf != "max_connections" and old not in (None, "")):
        return old, leaf_source(layers, (*prefix, "config", legacy)) or _default(
            conf, old, version)
    new = get(config, "postgresql", conf)
    if new not in (None, ""):
        return new, leaf_source(layers, (*prefix, "config", "postgresql", conf)) or _default(
            conf, new, version)
    return default, _default(conf, default, version)


def _default(conf: str, value: Any, version: str) -> Source:
    return Source.default_of(f"CloudPirates postgres chart {version} values.yaml "
                             f"config.postgresql.{conf}: {value} (charts {SHOWN})")


def _quoted(conf: str, raw: Any) -> str:
    return f"'{raw}'" if conf == "shared_preload_libraries" else str(raw)


def _image(values: dict[str, Any], global_values: dict[str, Any]) -> tuple[str, bool]:
    """`cloudpirates.image`: <registry>/<repository>:<tag>, global.imageRegistry first;
    the chart's tag (18.x) unless the values set one; whether the tag is the values'."""
    image = values.get("image") if isinstance(values.get("image"), dict) else {}
    registry = get(global_values, "imageRegistry") or image.get("registry") or "docker.io"
    repository = image.get("repository") or "postgres"
    tag = image.get("tag")
    return f"{registry}/{repository}:{tag or 18}", bool(tag)
