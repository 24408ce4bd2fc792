"""From Kubernetes objects to workloads: pod templates, containers, env, peak pods.

Pure functions over already-loaded objects; no file I/O.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from itertools import pairwise
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from advisor.facts.pg_version import POSTGRESQL_REPO
from advisor.lazyregex import lazy
from advisor.model import Container, EnvVar, Source, Term, TextPlaces
from advisor.read.sources.k8s import NO_EXTRACT, K8sObject, count_field, get, listed, mapped

# kind -> path to the pod template spec
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Rollout": ("spec", "template", "spec"),
    "Pod": ("spec",),
    # KEDA runs Jobs of this spec (scale_jobs.go@v2.20.1:190 `Spec:
    # *scaledJob.Spec.JobTargetRef.DeepCopy()`): its pods are a workload's
    "ScaledJob": ("spec", "jobTargetRef", "template", "spec"),
}
K8S_DEFAULT = "Kubernetes default"
# A Rollout's unset replicas and canary maxSurge are Argo Rollouts' own defaults
# (argoproj/argo-rollouts utils/defaults/defaults.go@v1.9.1:16 DefaultReplicas = 1, :24
# DefaultMaxSurge = "25", a percentage: GetMaxSurgeOrDefault :142, resolved rounded up by
# utils/replicaset/replicaset.go@v1.9.1:408 resolveFenceposts).
ARGO_DEFAULT = "Argo Rollouts default"


class ConfigMapData(Struct):
    obj: K8sObject
    data: dict[str, str]
    secret: bool = False
    # A Secret an operator creates (CloudNativePG `<cluster>-app`): not in the repository;
    # its values are derived from the resource at this source.
    made_by: Source | None = None
    # Keys the Secret holds whose values are not in the repository (an ExternalSecret's
    # fetched values): key -> why. A reference to one is unknown, never empty.
    unknown: dict[str, str] = field(default_factory=dict)
    # Not empty when it may hold further keys not named here (an ExternalSecret's
    # dataFrom): why. A reference to a key not listed is then unknown too.
    open: str = ""
    # Where each key is written, when that is not `made_by` (an ExternalSecret's line).
    key_sources: dict[str, Source] | None = None

    def remote(self, key: str) -> str | None:
        """Why the value of `key` is not known here, when it is a key this may hold."""
        if key in self.data:
            return None
        return self.unknown.get(key) or self.open or None

    def source(self, key: str) -> Source:
        if self.key_sources and key in self.key_sources:
            return self.key_sources[key]
        if self.made_by is not None:
            return Source(path=self.made_by.path, line=self.made_by.line, key=key,
                          default=self.made_by.default)
        section = "stringData" if self.secret and key in (self.obj.body.get("stringData") or {}) \
            else "data"
        return self.obj.source(section, key, key=key)

    def text_origin(self, key: str) -> tuple[str, int]:
        """(display path, line offset) to parse the file held at data[key] so that its
        line 1 lands where a user edits it: the ConfigMap's own lines, or the values
        file a Helm chart copied the text from."""
        from advisor.read.sources.k8s import block_offset

        sources = self.obj.value_sources
        traced = sources.get(f"data.{key}#1") if sources else None
        if traced is not None and traced.path is not None and traced.line is not None:
            return traced.path, traced.line - 1
        strings = self.obj.body.get("stringData") or {}
        section = strings if self.secret and key in strings else self.obj.body.get("data") or {}
        return self.obj.path, block_offset(section, key) + self.obj.line_offset


    def text_places(self, key: str) -> TextPlaces | None:
        """Where the lines of data[key] are cited when not at text_origin's offset + n:
        values keys traced into them, and the key's own line for the others when the
        text is not in the file line for line (a Secret's base64, a template's
        `include`). None when text_origin's offset holds for every line."""
        from advisor.read.render import generated_key, traced_lines, written_lines
        from advisor.read.sources.k8s import line_for_line

        strings = self.obj.body.get("stringData") or {}
        in_strings = self.secret and key in strings
        dotted = f"{'stringData' if in_strings else 'data'}.{key}"
        sources = self.obj.value_sources or {}
        if f"{dotted}#1" in sources:
            return None  # copied from a values block: text_origin is that block
        flat = sources.get(generated_key(dotted))
        section = strings if in_strings else self.obj.body.get("data") or {}
        if flat is None and ((self.secret and not in_strings)
                             or not line_for_line(section, key)):
            flat = self._key_line(dotted.split(".", 1)[0], key)
        traced = traced_lines(self.obj, dotted)
        if flat is None and not traced:
            return None
        if flat is not None:
            flat = replace(flat, key=dotted)
        return TextPlaces(traced=traced, flat=flat, lines=written_lines(self.obj, dotted))


    def _key_line(self, section: str, key: str) -> Source:
        """The line of `key` itself, not the values line traced into its text."""
        if (self.key_sources and key in self.key_sources) or self.made_by is not None:
            return self.source(key)
        where = self.obj.location(section, key)
        return Source(path=where.path, line=where.line)


class Workload(Struct):
    obj: K8sObject
    containers: list[Container]
    pod_labels: dict[str, str]
    replicas: Term
    volumes: dict[str, tuple[str, str]] = field(default_factory=dict)  # vol -> (kind, name)
    # vol -> [("configmap" | "secret", name)]: configMap, secret and projected volumes
    volume_sources: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    mounts: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # ctr -> (vol, path)
    node_selector: dict[str, str] = field(default_factory=dict)
    # ctr -> the subPath of each of its mounts ("" for none), in the order of `mounts`
    sub_paths: dict[str, list[str]] = field(default_factory=dict)
    # vol -> what it shows as files (advisor/read/apps/podfiles.py)
    volume_specs: dict[str, VolumeSpec] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.obj.kind

    @property
    def name(self) -> str:
        return self.obj.name

    @property
    def namespace(self) -> str | None:
        return self.obj.namespace

    def configmaps_of(self, container: str) -> list[str]:
        return [name for kind, name in self.config_sources(container) if kind == "configmap"]

    def config_sources(self, container: str) -> list[tuple[str, str]]:
        """("configmap" | "secret", name) of every ConfigMap and Secret mounted into
        `container`, directly or through a projected volume, in mount order."""
        out: list[tuple[str, str]] = []
        for vol, _path in self.mounts.get(container, []):
            out += self.volume_sources.get(vol, [])
        return out

    def copied_config_sources(self, container: str) -> list[tuple[str, str, str]]:
        """("configmap" | "secret", name, init container) of the ConfigMaps and Secrets an
        init container copies into a volume `container` mounts: it mounts the ConfigMap
        and a volume of no ConfigMap (an emptyDir) that `container` mounts too, and its
        command names the ConfigMap's mount path (`cp /config-ro/pgbouncer.ini
        /config/`: PgBouncer images that want their files writable or owned by them)."""
        own = {vol for vol, _path in self.mounts.get(container, [])
               if not self.volume_sources.get(vol)}
        out: list[tuple[str, str, str]] = []
        for c in self.containers:
            if c.role != "init" or not own & {v for v, _p in self.mounts.get(c.name, [])}:
                continue
            said = " ".join(c.command + c.args)
            for vol, path in self.mounts.get(c.name, []):
                if self.volume_sources.get(vol) and path.rstrip("/") and \
                        path.rstrip("/") in said:
                    out += [(kind, name, c.name) for kind, name in self.volume_sources[vol]]
        return out


ConfigIndex = dict[tuple[str, str | None, str], "ConfigMapData"]


def configmap_data(obj: K8sObject) -> dict[str, str]:
    """A ConfigMap's data, keys and values as text (configmap_index); the parse cache keeps it
    (advisor.read.extract)."""
    known = obj.extract()
    if known is not NO_EXTRACT:
        return dict(known)  # the index's own dict: a cached one is not shared
    return {str(k): str(v) for k, v in mapped(obj, ("data",), obj.body.get("data")).items()}


def configmap_index(objects: list[K8sObject]) -> ConfigIndex:
    """ConfigMaps and Secrets by (namespace, name). Secret values are decoded only so
    that hosts and ports can be read; reporters never print them."""
    index: ConfigIndex = {}
    for obj in objects:
        if obj.kind == "ConfigMap":
            index[("configmap", obj.namespace, obj.name)] = ConfigMapData(obj,
                                                                          configmap_data(obj))
        elif obj.kind == "Secret":
            data = {}
            # SOPS-encrypted values (`ENC[AES256_GCM,...]`, decrypted by Flux when
            # applied): keys whose values are not known here, as an ExternalSecret's
            encrypted: dict[str, str] = {}
            why = f"encrypted with SOPS in {obj.path}:{obj.line}"
            for k, v in mapped(obj, ("data",), obj.body.get("data")).items():
                if isinstance(v, str) and v.startswith("ENC["):
                    encrypted[str(k)] = why
                    continue
                try:
                    data[str(k)] = base64.b64decode(str(v), validate=True).decode("utf-8")
                except (binascii.Error, UnicodeDecodeError, ValueError):
                    continue
            for k, v in mapped(obj, ("stringData",), obj.body.get("stringData")).items():
                if isinstance(v, str) and v.startswith("ENC["):
                    encrypted[str(k)] = why
                    continue
                data[str(k)] = str(v)
            index[("secret", obj.namespace, obj.name)] = ConfigMapData(obj, data, secret=True,
                                                                       unknown=encrypted)
    return index


class AppliedIndex(dict[tuple[str, str | None, str], "ConfigMapData"]):
    """A ConfigIndex keyed by the namespace each object is applied to: one without
    metadata.namespace is in `default_ns` (where kubectl apply puts it), and only a pod
    there reads it, as only the pod's own namespace is looked in."""

    def __init__(self, index: ConfigIndex, default_ns: str) -> None:
        super().__init__()
        self.default_ns = default_ns
        self.by_name: dict[tuple[str, str], list[ConfigMapData]] | None = None
        for (kind, namespace, name), data in index.items():
            self.setdefault((kind, namespace or default_ns, name), data)


def absent(index: ConfigIndex, kind: str, namespace: str | None, name: str,
           held: ConfigMapData | None = None, key: str = "") -> str:
    """The marker `from_ref` carries for a ConfigMap or Secret a pod names that is not in
    its namespace: "(not in repository)", or, when one of that name is in the repository
    in another namespace, "(elsewhere: ...)" saying where, so no notice calls it absent
    (audit 10b D3: a Secret read as written from a kustomization that failed to build);
    `held`: the one in the pod's namespace, which lacks `key`."""
    if held is not None and held.made_by is None:
        return (f"(elsewhere: in the repository ({held.obj.path}:{held.obj.line}) without "
                f"key {key})")
    if not isinstance(index, AppliedIndex):
        return "(not in repository)"
    if index.by_name is None:
        index.by_name = {}
        for (k, _ns, n), data in index.items():
            index.by_name.setdefault((k, n), []).append(data)
    found = [d for d in index.by_name.get((kind, name), []) if d.made_by is None]
    if not found:
        return "(not in repository)"
    first = found[0].obj
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    where = (f"in the repository in namespace {first.namespace or index.default_ns} "
             f"({first.path}:{first.line}){more}, not in "
             f"{namespace or index.default_ns} where the pod reads it")
    if first.origin.startswith("kustomize-plain:"):
        where += (f"; read as written because kustomize did not build "
                  f"{first.origin.removeprefix('kustomize-plain:')}, so the namespace it "
                  "would get may differ")
    return f"(elsewhere: {where})"


def lookup(index: ConfigIndex, kind: str, namespace: str | None, name: str
           ) -> ConfigMapData | None:
    """`kind` is "configmap" or "secret". In an AppliedIndex, the object of the pod's
    namespace (a pod without one: the default); in another index, an object without a
    namespace matches any."""
    if isinstance(index, AppliedIndex):
        return index.get((kind, namespace or index.default_ns, name))
    return index.get((kind, namespace, name)) or index.get((kind, None, name))


_QUANTITY = lazy(r"^([0-9.]+(?:[eE][0-9]+)?)([a-zA-Z]*)$")
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DEC = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
        "m": 10**-3}


def parse_quantity(text: str) -> float | None:
    """A Kubernetes resource quantity (`2Gi`, `512M`, `500m`, `1e9`) as a number."""
    m = _QUANTITY.match(str(text).strip())
    if not m:
        return None
    try:
        number, suffix = float(m.group(1)), m.group(2)
    except ValueError:  # `1.2.3`: the pattern admits it, Kubernetes does not
        return None
    if not math.isfinite(number):
        return None
    if suffix in _BIN:
        return number * _BIN[suffix]
    if suffix in _DEC:
        return number * _DEC[suffix]
    return None


def workloads(objects: list[K8sObject], index: ConfigIndex) -> list[Workload]:
    found = []
    for obj in objects:
        if obj.kind not in POD_SPEC_PATHS or (
                obj.kind == "ScaledJob" and "keda.sh" not in obj.api_version):
            continue
        shape = workload_shape(obj)
        if shape is None:
            continue
        found.append(_linked(obj, shape, index))
    return found


class EnvItem(Struct, array_like=True, frozen=True, gc=False):
    """One variable of a container's env as written, before its ConfigMap and Secret
    references are looked up: `form` "from" (an envFrom source: `name` is its prefix),
    "ref" (a valueFrom configMapKeyRef/secretKeyRef), "value" (a value, `$(VAR)`
    expanded when linked), "other" (another valueFrom: a fieldRef's kind is "field" and
    its fieldPath `key`)."""

    form: str
    name: str
    source: Source
    kind: str = ""  # "configmap" | "secret" for "from" and "ref"
    target: str = ""  # the ConfigMap's or Secret's name, as written
    key: str = ""  # the key of a "ref"
    value: str = ""  # the text of a "value"


class ContainerShape(Struct, array_like=True, frozen=True, gc=False):
    """A container as read from its object: all but its env, which is linked."""

    container: Container  # env: ()
    env: tuple[EnvItem, ...]


class SurgeSpec(Struct, array_like=True, frozen=True, gc=False):
    """What `surge` reads of a Deployment, Rollout or DaemonSet (its peak applied when
    linked): `form` "preview" (blue-green previewReplicaCount `value`), "full" (a
    blue-green preview of full size), "default" (no maxSurge at `keys`), "given"
    (maxSurge `text`), "routed" (an Argo Rollouts canary with trafficRouting: its
    steps' setWeight `weights` in order, setCanaryScale `scales` (replicas) and
    `scale_weights`, `dynamic` (dynamicStableScale), `max_weight`
    (trafficRouting.maxTrafficWeight) and `min_pods` (minPodsPerReplicaSet));
    `daemon`: a DaemonSet's, whose peak is its node count."""

    form: str
    keys: str = ""
    value: bool | int | None = None
    text: str = ""
    source: Source | None = None
    daemon: bool = False
    weights: tuple[int, ...] = ()
    scales: tuple[int, ...] = ()
    scale_weights: tuple[int, ...] = ()
    dynamic: bool = False
    max_weight: int = 100
    min_pods: int = 0


class VolumeSpec(Struct, array_like=True, frozen=True, gc=False):
    """A pod volume as files: `kind` is configMap, secret, projected, emptyDir or the
    volume's other source (persistentVolumeClaim, hostPath...); `sources` the ConfigMaps
    and Secrets it shows, each ("configmap" | "secret", name, its `items` as (key, path)
    pairs, or None for every key)."""

    kind: str
    sources: tuple[tuple[str, str, tuple[tuple[str, str], ...] | None], ...] = ()


class WorkloadShape(Struct, array_like=True, gc=False):
    """What linking reads of a workload's object, one pure function of it
    (`workload_shape`): the parse cache keeps it (advisor.read.extract), so a warm run
    links a cached workload without building its tree."""

    containers: tuple[ContainerShape, ...]
    pod_labels: dict[str, str]
    replicas: Term
    volumes: dict[str, tuple[str, str]]
    volume_sources: dict[str, list[tuple[str, str]]]
    mounts: dict[str, list[tuple[str, str]]]
    annotations: dict[str, str]
    surge: SurgeSpec | None
    sub_paths: dict[str, list[str]]
    volume_specs: dict[str, VolumeSpec]


def is_fragment(obj: K8sObject) -> bool:
    """Whether a workload object is a patch, not an object the API server accepts: a
    container of its pod template names no image ("spec.template.spec.containers[0].image:
    Required value"), or it has no containers. jdost/homelab-manifests keeps
    tandoor/overlays/ingress/statefulset-patch.yaml (containers: name and env only) beside
    a kustomization that does not list it: `kubectl apply` refuses it, so it replaces
    nothing."""
    path = POD_SPEC_PATHS.get(obj.kind)
    spec = get(obj.body, *path) if path is not None else None
    if not isinstance(spec, dict):
        return path is not None
    containers = spec.get("containers")
    return not isinstance(containers, list) or not containers or any(
        isinstance(c, dict) and not c.get("image") for c in containers)


def workload_shape(obj: K8sObject) -> WorkloadShape | None:
    """The object's workload as read from its body (None: its pod spec is no mapping);
    WrongType for a field Kubernetes refuses."""
    known = obj.extract()
    if known is not NO_EXTRACT:
        return known
    path = POD_SPEC_PATHS[obj.kind]
    spec = get(obj.body, *path)
    if not isinstance(spec, dict):
        return None
    template_meta = get(obj.body, *path[:-1], "metadata", "labels") if len(path) > 1 else None
    labels = {str(k): str(v) for k, v in (template_meta or {}).items()} if isinstance(
        template_meta, dict) else (obj.labels if obj.kind == "Pod" else {})
    volumes = {}
    volume_sources: dict[str, list[tuple[str, str]]] = {}
    volume_specs: dict[str, VolumeSpec] = {}
    for vol in listed(obj, (*path, "volumes"), spec.get("volumes")):
        if not isinstance(vol, dict):
            continue
        if isinstance(vol.get("configMap"), dict):
            volumes[str(vol.get("name"))] = ("configMap", str(vol["configMap"].get("name")))
        elif isinstance(vol.get("secret"), dict):
            volumes[str(vol.get("name"))] = ("secret", str(vol["secret"].get("secretName")))
        volume_sources[str(vol.get("name"))] = _volume_sources(vol)
        volume_specs[str(vol.get("name"))] = volume_spec(vol)
    containers: list[ContainerShape] = []
    mounts: dict[str, list[tuple[str, str]]] = {}
    sub_paths: dict[str, list[str]] = {}
    for role, key in (("init", "initContainers"), ("main", "containers")):
        for i, c in enumerate(listed(obj, (*path, key), spec.get(key))):
            if not isinstance(c, dict):
                continue
            ctr_role = role
            # Native sidecars (KEP-753): init containers that keep running.
            if role == "init" and c.get("restartPolicy") == "Always":
                ctr_role = "sidecar"
            keys = (*path, key, i)
            containers.append(_container(obj, keys, c, ctr_role))
            listed_mounts = [m for m in listed(obj, (*keys, "volumeMounts"),
                                               c.get("volumeMounts")) if isinstance(m, dict)]
            mounts[str(c.get("name"))] = [(str(m.get("name")), str(m.get("mountPath")))
                                          for m in listed_mounts]
            sub_paths[str(c.get("name"))] = [str(m.get("subPath") or "")
                                             for m in listed_mounts]
    return WorkloadShape(containers=tuple(containers), pod_labels=labels,
                         replicas=base_replicas(obj), volumes=volumes,
                         volume_sources=volume_sources, mounts=mounts,
                         annotations=obj.annotations, surge=_surge_spec(obj),
                         sub_paths=sub_paths, volume_specs=volume_specs)


def _linked(obj: K8sObject, shape: WorkloadShape, index: ConfigIndex) -> Workload:
    """The workload, its containers' env references looked up in `index`."""
    containers = [replace(c.container, env=tuple(_env(obj.namespace, c.env, index)))
                  for c in shape.containers]
    return Workload(obj=obj, containers=containers, pod_labels=dict(shape.pod_labels),
                    replicas=shape.replicas, volumes=dict(shape.volumes),
                    mounts={k: list(v) for k, v in shape.mounts.items()},
                    volume_sources={k: list(v) for k, v in shape.volume_sources.items()},
                    sub_paths={k: list(v) for k, v in shape.sub_paths.items()},
                    volume_specs=dict(shape.volume_specs))


def _as_list(value: object) -> list:
    """A list field as written, or nothing when it is another shape (`sources: 5`)."""
    return value if isinstance(value, list) else []


def _volume_sources(vol: dict) -> list[tuple[str, str]]:
    """The ConfigMaps and Secrets a pod volume shows as files: a configMap or secret
    volume, or each configMap/secret source of a projected volume."""
    out: list[tuple[str, str]] = []
    if isinstance(vol.get("configMap"), dict):
        out.append(("configmap", str(vol["configMap"].get("name"))))
    elif isinstance(vol.get("secret"), dict):
        out.append(("secret", str(vol["secret"].get("secretName"))))
    elif isinstance(vol.get("projected"), dict):
        for item in _as_list(vol["projected"].get("sources")):
            if not isinstance(item, dict):
                continue
            if isinstance(item.get("configMap"), dict):
                out.append(("configmap", str(item["configMap"].get("name"))))
            elif isinstance(item.get("secret"), dict):
                out.append(("secret", str(item["secret"].get("name"))))
    return out


def _items(source: dict) -> tuple[tuple[str, str], ...] | None:
    """A configMap or secret source's `items` as (key, path) pairs; None: every key."""
    items = source.get("items")
    if not isinstance(items, list):
        return None
    return tuple((str(i.get("key")), str(i.get("path") or i.get("key")))
                 for i in items if isinstance(i, dict))


def volume_spec(vol: dict) -> VolumeSpec:
    """What the volume shows as files (VolumeSpec)."""
    if isinstance(vol.get("configMap"), dict):
        return VolumeSpec("configMap", (("configmap", str(vol["configMap"].get("name")),
                                         _items(vol["configMap"])),))
    if isinstance(vol.get("secret"), dict):
        return VolumeSpec("secret", (("secret", str(vol["secret"].get("secretName")),
                                      _items(vol["secret"])),))
    if isinstance(vol.get("projected"), dict):
        sources = []
        for item in _as_list(vol["projected"].get("sources")):
            if not isinstance(item, dict):
                continue
            # (a serviceAccountToken or downwardAPI source shows no configuration file)
            for key, kind in (("configMap", "configmap"), ("secret", "secret")):
                if isinstance(item.get(key), dict):
                    sources.append((kind, str(item[key].get("name")), _items(item[key])))
        return VolumeSpec("projected", tuple(sources))
    other = next((str(k) for k in vol if k != "name"), "unknown")
    return VolumeSpec(other)


def base_replicas(obj: K8sObject) -> Term:
    kind = obj.kind
    if kind in ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "Rollout"):
        value = count_field(obj, ("spec", "replicas"), get(obj.body, "spec", "replicas"))
        if value is not None:
            return Term(label=f"{kind} replicas", value=value,
                        source=obj.source("spec", "replicas", key="spec.replicas"))
        return Term(label=f"{kind} replicas", value=1,
                    source=Source.default_of(
                        f"{ARGO_DEFAULT if kind == 'Rollout' else K8S_DEFAULT}: "
                        "spec.replicas unset", "spec.replicas"))
    if kind == "Job":
        return _job_pods(obj, ("spec",))
    if kind == "CronJob":
        if get(obj.body, "spec", "suspend") is True:
            # no Job is scheduled while it is suspended (zammad-helm's reindex CronJob
            # counted 50 connections it never opens)
            return Term(label="CronJob suspended: no Job runs", value=0,
                        source=obj.source("spec", "suspend", key="spec.suspend"))
        return _job_pods(obj, ("spec", "jobTemplate", "spec"))
    if kind == "ScaledJob":
        return scaled_job_pods(obj)
    if kind == "DaemonSet":
        return Term(label="DaemonSet: one pod per node", value=1,
                    source=Source.default_of("node count not declared; assumed 1 node "
                                             "(declare it with [[workloads]] replicas)"))
    return Term(label="Pod", value=1, source=obj.source())


def _parallelism(obj: K8sObject, spec_path: tuple[str, ...], what: str = "") -> Term:
    value = count_field(obj, (*spec_path, "parallelism"),
                        get(obj.body, *spec_path, "parallelism"))
    if value is not None:
        return Term(label=f"{what or obj.kind} parallelism", value=value,
                    source=obj.source(*spec_path, "parallelism", key="parallelism"))
    return Term(label=f"{what or obj.kind} parallelism", value=1,
                source=Source.default_of(f"{K8S_DEFAULT}: parallelism 1", "parallelism"))


def _job_pods(obj: K8sObject, spec_path: tuple[str, ...], what: str = "") -> Term:
    """Pods one Job runs at once: its parallelism, or its completions when fewer. The Job
    controller never runs more pods than completions remain, Indexed or not
    (kubernetes pkg/controller/job/job_controller.go@6ae037f1 manageJob: wantActive =
    min(completions - succeeded, parallelism); completions unset: parallelism)."""
    pods = _parallelism(obj, spec_path, what)
    completions = count_field(obj, (*spec_path, "completions"),
                              get(obj.body, *spec_path, "completions"))
    if completions is None or completions >= pods.value:
        return pods
    return Term(label=f"{what or obj.kind} completions (below parallelism "
                f"{int(pods.value)}: the Job controller runs no more pods than completions "
                "remain)", value=completions,
                source=obj.source(*spec_path, "completions", key="completions"))


# KEDA's ScaledJob (kedacore/keda@v2.20.1): apis/keda/v1alpha1/scaledjob_types.go:27
# defaultScaledJobMaxReplicaCount = 100, used when maxReplicaCount is unset (:147-156).
KEDA_SCALED_JOB_MAX = 100


def scaled_jobs(obj: K8sObject) -> Term:
    """The Jobs a KEDA ScaledJob runs at once (unfinished Jobs, as KEDA counts them).

    kedacore/keda@v2.20.1: the scale loop's target is capped at MaxReplicaCount()
    (pkg/scaling/scaledjob/metrics.go:106,116 getMaxValue), and each strategy creates
    at most that target less the unfinished Jobs above minReplicaCount
    (pkg/scaling/executor/scale_jobs.go:105-117 getScalingDecision, :458-486), so
    unfinished Jobs <= MaxReplicaCount() + MinReplicaCount(). MaxReplicaCount() is
    maxReplicaCount - minReplicaCount, or 100 when maxReplicaCount is unset, or
    maxReplicaCount when minReplicaCount exceeds it, which is also MinReplicaCount()
    then (scaledjob_types.go:147-168)."""
    top = count_field(obj, ("spec", "maxReplicaCount"), get(obj.body, "spec", "maxReplicaCount"))
    low = count_field(obj, ("spec", "minReplicaCount"), get(obj.body, "spec", "minReplicaCount"))
    if top is None:
        if not low:
            return Term(label="Jobs at once (maxReplicaCount)", value=KEDA_SCALED_JOB_MAX,
                        source=Source.default_of(
                            f"KEDA default maxReplicaCount {KEDA_SCALED_JOB_MAX}",
                            "spec.maxReplicaCount"))
        return Term(label=f"Jobs at once (KEDA's default maxReplicaCount "
                    f"{KEDA_SCALED_JOB_MAX} + minReplicaCount {low}: unset, KEDA's maximum "
                    "is counted beyond the minimum)", value=KEDA_SCALED_JOB_MAX + low,
                    source=obj.source("spec", "minReplicaCount", key="spec.minReplicaCount"))
    source = obj.source("spec", "maxReplicaCount", key="spec.maxReplicaCount")
    if low is not None and low > top:
        return Term(label=f"Jobs at once (2 x maxReplicaCount: minReplicaCount {low} above it "
                    "makes KEDA keep maxReplicaCount Jobs beside as many scaled ones)",
                    value=2 * top, source=source)
    return Term(label="Jobs at once (maxReplicaCount)", value=top, source=source)


def scaled_job_pods(obj: K8sObject) -> Term:
    """A KEDA ScaledJob's pods at once: its Jobs (scaled_jobs) x the pods of each Job,
    the Job spec at spec.jobTargetRef as any Job's (_job_pods)."""
    jobs = scaled_jobs(obj)
    each = _job_pods(obj, ("spec", "jobTargetRef"), "jobTargetRef")
    pods = int(each.value)
    return Term(label=f"KEDA ScaledJob: {int(jobs.value)} {jobs.label} x {pods} "
                f"pod{'' if pods == 1 else 's'} per Job ({each.label}, {each.source.label()})",
                value=jobs.value * each.value, source=jobs.source)


def scaled_job_overrun(obj: K8sObject) -> str | None:
    """Why a KEDA ScaledJob may run more Jobs than scaled_jobs counts, if it may: the
    custom strategy creates min(target - customScalingQueueLengthDeduction - running x
    customScalingRunningJobPercentage, MaxReplicaCount()) Jobs a poll (kedacore/keda@v2.20.1
    pkg/scaling/executor/scale_jobs.go:467-469), so a percentage below 1 (or a negative
    deduction) leaves running Jobs undeducted and each poll may add more. A percentage
    KEDA cannot parse selects the default strategy (:427-436)."""
    strategy = get(obj.body, "spec", "scalingStrategy")
    if not isinstance(strategy, dict) or strategy.get("strategy") != "custom":
        return None
    try:
        share = float(str(strategy.get("customScalingRunningJobPercentage")))
    except ValueError:
        return None
    deduction = strategy.get("customScalingQueueLengthDeduction")
    if share >= 1 and not (isinstance(deduction, int) and deduction < 0):
        return None
    return (f"custom scalingStrategy ({obj.source('spec', 'scalingStrategy').label()}: "
            f"customScalingRunningJobPercentage {share:g}, customScalingQueueLengthDeduction "
            f"{deduction}) deducts only part of the running Jobs from each poll's new ones")


# Kinds whose rollout may run new pods beside the old: a StatefulSet replaces each pod in
# place (the new pod takes the old one's name once it is gone), so it never surges.
SURGE_KINDS = frozenset(("Deployment", "Rollout", "DaemonSet"))

# Where the cap at `peak` comes from (kubernetes/kubernetes@277391ee71
# pkg/controller/deployment/util/deployment_util.go NewRSNewReplicas: "Do not exceed the
# number of desired replicas"; @7e74f25fe7 pkg/controller/daemon/update.go rollingUpdate:
# "no more than two pods per node, one old, one new")
_DEPLOYMENT_CAP = "the new ReplicaSet never exceeds replicas, Kubernetes NewRSNewReplicas"
_DAEMON_CAP = "one new pod per node beside the old, Kubernetes daemon/update.go"


def surge(obj: K8sObject, peak: float) -> Term | None:
    """Extra pods a rolling update runs at once. Kubernetes rounds a maxSurge
    percentage up (deployment/util ResolveFenceposts: intstr.GetScaledValueFromIntOrPercent
    with roundUp=true); see `surge_term` for the cap at `peak`."""
    if obj.kind not in SURGE_KINDS:
        return None
    known = obj.extract()
    spec = known.surge if isinstance(known, WorkloadShape) else _surge_spec(obj)
    if obj.kind == "Rollout":
        return surge_term(spec, peak, f"{ARGO_DEFAULT}: maxSurge 25%")
    return surge_term(spec, peak)


def surge_term(spec: SurgeSpec | None, peak: float, default: str = f"{K8S_DEFAULT}: maxSurge 25%"
               ) -> Term | None:
    """The surge `spec` gives at `peak` pods; `default` names where the 25% of a
    strategy without maxSurge comes from.

    A rollout adds at most `peak` pods, whatever maxSurge says: the Deployment
    controller scales the new ReplicaSet up to min(replicas + maxSurge - all ReplicaSets'
    replicas, replicas - new ReplicaSet's replicas) (deployment_util.go NewRSNewReplicas)
    and the old ReplicaSets only shrink, so old + new <= replicas + min(maxSurge,
    replicas). Argo Rollouts' basic canary does the same (utils/replicaset/canary.go
    CalculateReplicaCountsForBasicCanary: neither ReplicaSet's desired count exceeds
    spec.replicas). A DaemonSet surges onto at most every node once
    (pkg/controller/daemon/update.go). Not counted, as terminating pods are not: a
    rollout started before the previous one's new pods are available keeps those for
    one sync more, until cleanupUnhealthyReplicas scales them down (rolling.go)."""
    if spec is None:
        return None
    if spec.form == "preview":
        # "surge" in the label: the report adds it to the replicas (budget/arith._pods)
        return Term(label="rolling-update surge (blue-green preview pods, previewReplicaCount)",
                    value=spec.value,
                    source=spec.source)
    if spec.form == "full":
        return Term(label="rolling-update surge (blue-green: a full preview ReplicaSet)",
                    value=peak, source=spec.source)
    if spec.form == "routed":
        return routed_canary_term(spec, peak)
    if spec.form == "default":
        value = math.ceil(peak * 0.25)
        return Term(label="rolling-update surge (maxSurge 25%, rounded up)", value=value,
                    source=Source.default_of(default, spec.keys))
    text = spec.text
    if text.endswith("%"):
        try:
            pct = float(text[:-1])
        except ValueError:
            return None
        if not math.isfinite(pct):
            return None
        value = math.ceil(peak * pct / 100)
        written = f"maxSurge {text}, rounded up"
    else:
        try:
            value = int(text)
        except ValueError:
            return None
        written = "maxSurge"
    cap = math.ceil(peak)
    if value > cap:
        # the label says what is written and why less is counted: the Term's source is
        # the maxSurge line, the cap a rule of the controller
        shown = f"{text} = {value}" if text.endswith("%") else text
        label = (f"rolling-update surge (maxSurge {shown}, capped at "
                 f"{'nodes' if spec.daemon else 'replicas'} {cap}: "
                 f"{_DAEMON_CAP if spec.daemon else _DEPLOYMENT_CAP})")
        value = cap
    else:
        label = f"rolling-update surge ({written})"
    if value <= 0:
        return None
    return Term(label=label, value=value, source=spec.source)


def _surge_spec(obj: K8sObject) -> SurgeSpec | None:
    """What `surge` reads of a Deployment's, Rollout's or DaemonSet's body."""
    if obj.kind not in SURGE_KINDS:
        return None
    if obj.kind == "DaemonSet":
        # A DaemonSet surges only when maxSurge is written (its default is 0:
        # kubernetes@a79f3c787d pkg/apis/apps/v1/defaults.go SetDefaults_DaemonSet) and
        # not OnDelete; its peak is the node count (base_replicas), so no default here.
        if get(obj.body, "spec", "updateStrategy", "type", default="RollingUpdate") != (
                "RollingUpdate"):
            return None
        keys: tuple[str, ...] = ("spec", "updateStrategy", "rollingUpdate", "maxSurge")
        raw = get(obj.body, *keys)
        if raw is None:
            return None
        return SurgeSpec("given", text=str(raw).strip(), daemon=True,
                         source=obj.source(*keys, key=".".join(keys)))
    if obj.kind == "Deployment":
        strategy = get(obj.body, "spec", "strategy", "type", default="RollingUpdate")
        if strategy == "Recreate":
            return None
        keys = ("spec", "strategy", "rollingUpdate", "maxSurge")
    else:
        if get(obj.body, "spec", "strategy", "blueGreen") is not None:
            # The preview ReplicaSet runs at full size next to the active one until
            # promotion (Argo Rollouts blueGreen; previewReplicaCount can lower it).
            preview = get(obj.body, "spec", "strategy", "blueGreen", "previewReplicaCount")
            if isinstance(preview, int):
                return SurgeSpec("preview", value=preview, source=obj.source(
                    "spec", "strategy", "blueGreen", "previewReplicaCount",
                    key="previewReplicaCount"))
            return SurgeSpec("full", source=obj.source("spec", "strategy", "blueGreen",
                                                       key="spec.strategy.blueGreen"))
        canary = get(obj.body, "spec", "strategy", "canary")
        if canary is None:
            return None
        if isinstance(canary, dict) and canary.get("trafficRouting") is not None:
            return _routed_spec(obj, canary)
        keys = ("spec", "strategy", "canary", "maxSurge")
    raw = get(obj.body, *keys)
    if raw is None and obj.kind == "Deployment" \
            and str(get(obj.body, "apiVersion", default="")).startswith("extensions/"):
        # extensions/v1beta1 (Kubernetes before 1.16) defaults maxSurge to 1, not 25%
        # (API reference 1.5, RollingUpdateDeployment v1beta1: "By default, a value of 1
        # is used"; apps/v1beta1 on took 25%): Nor145/phoenixK8s was said 25%
        return SurgeSpec("given", text="1", source=Source.default_of(
            f"{K8S_DEFAULT} for an extensions/v1beta1 Deployment: maxSurge 1",
            ".".join(keys)))
    if raw is None:
        return SurgeSpec("default", keys=".".join(keys))
    return SurgeSpec("given", text=str(raw).strip(),
                     source=obj.source(*keys, key=".".join(keys)))


def _container(obj: K8sObject, keys: tuple, c: Any, role: str) -> ContainerShape:
    name = str(c.get("name", ""))
    env = tuple(_env_items(obj, keys, c))
    limits = get(c, "resources", "limits") or {}
    mem = cpu = None
    if isinstance(limits, dict):
        if "memory" in limits and (n := _quantity(obj, keys, limits, "memory")) is not None:
            mem = Term(label=f"container {name} memory limit", value=n,
                       source=obj.source_in(c, keys, "resources", "limits", "memory",
                                            key="resources.limits.memory"))
        if "cpu" in limits and (n := _quantity(obj, keys, limits, "cpu")) is not None:
            cpu = Term(label=f"container {name} CPU limit", value=n,
                       source=obj.source_in(c, keys, "resources", "limits", "cpu",
                                            key="resources.limits.cpu"))
    if cpu is None:
        cpu = _cpu_request(obj, keys, c, name)
    command = tuple(str(x) for x in listed(obj, (*keys, "command"), c.get("command")))
    args = tuple(str(x) for x in listed(obj, (*keys, "args"), c.get("args")))
    word_sources = tuple(obj.source_in(c, keys, part, i, key=f"{part}[{i}]")
                         for part, items in (("command", command), ("args", args))
                         for i in range(len(items)))
    return ContainerShape(Container(
        name=name, image=str(c.get("image", "")), command=command, args=args,
        word_sources=word_sources, env_first=_env_first(obj, keys, c), role=role,
        memory_limit=mem, cpu_limit=cpu,  # type: ignore[arg-type]
        source=obj.source(*keys, key=f"container {name}"),
        image_default=_image_default(obj, keys),
        local_image=str(c.get("imagePullPolicy", "")) == "Never",
        pull_policy=str(c.get("imagePullPolicy", ""))), env)


def _image_default(obj: K8sObject, keys: tuple) -> Source | None:
    traced = (obj.value_sources or {}).get(".".join(map(str, (*keys, "image"))))
    return traced if traced is not None and traced.path is None else None


def _env_first(obj: K8sObject, keys: tuple, c: Any) -> Source | None:
    """Where the container's first `env:` item is written, when a line added before it is
    a line of the object's own file: not for rendered objects (the line is in a template
    or a values file) nor for an empty or missing list."""
    env = c.get("env")
    if obj.origin or not isinstance(env, list) or not env:
        return None
    line = obj.line_in(c, "env", 0)
    if obj.path is None or line is None:
        return None
    return Source(path=obj.path, line=line, key="env[0]")


def _quantity(obj: K8sObject, keys: tuple, limits: dict, name: str) -> float | None:
    """A limit Kubernetes would accept, else WrongType (`1.2.3Gi`, `-1`, 1e400)."""
    value = limits[name]
    n = parse_quantity(str(value)) if not isinstance(value, bool | list | dict) else None
    if n is None and value is not None:
        from advisor.model import WrongType
        from advisor.read.sources.k8s import type_name

        raise WrongType(obj.location(*keys, "resources", "limits", name),
                        f"{obj.ref} resources.limits.{name}: {type_name(value)} is not a "
                        "Kubernetes quantity; Kubernetes refuses this object, so it is not "
                        "read")
    return n


def _cpu_request(obj: K8sObject, keys: tuple, c: Any, name: str) -> Term | None:
    """Without a CPU limit, the request is what the scheduler reserved for the container:
    the cores it can count on (PA111)."""
    requests = get(c, "resources", "requests") or {}
    if not isinstance(requests, dict) or "cpu" not in requests:
        return None
    n = parse_quantity(str(requests["cpu"]))
    if n is None:
        return None
    return Term(label=f"container {name} CPU request", value=n,
                source=obj.source_in(c, keys, "resources", "requests", "cpu",
                                     key="resources.requests.cpu"))


def _env_items(obj: K8sObject, keys: tuple, c: Any) -> list[EnvItem]:
    """A container's env as written (`_env` links it)."""
    out: list[EnvItem] = []
    # envFrom first: explicit env entries override them (Kubernetes semantics).
    for j, ref in enumerate(listed(obj, (*keys, "envFrom"), c.get("envFrom"))):
        if not isinstance(ref, dict):
            continue
        prefix = str(ref.get("prefix") or "")
        for kind, field_name in (("configmap", "configMapRef"), ("secret", "secretRef")):
            target = ref.get(field_name)
            if not isinstance(target, dict):
                continue
            out.append(EnvItem("from", prefix, obj.source(*keys, "envFrom", j), kind=kind,
                               target=str(target.get("name"))))
    for j, e in enumerate(listed(obj, (*keys, "env"), c.get("env"))):
        if not isinstance(e, dict) or "name" not in e:
            continue
        name = str(e["name"])
        src = obj.source_in(e, (*keys, "env", j), "value" if "value" in e else "name",
                            key=name)
        if "value" in e:
            out.append(EnvItem("value", name, src, value=str(e["value"])))
            continue
        vf = e.get("valueFrom") or {}
        for kind, field_name in (("configmap", "configMapKeyRef"), ("secret", "secretKeyRef")):
            ref = vf.get(field_name) if isinstance(vf, dict) else None
            if isinstance(ref, dict):
                out.append(EnvItem("ref", name, src, kind=kind, target=str(ref.get("name")),
                                   key=str(ref.get("key"))))
                break
        else:
            # a fieldRef's path is kept: `$(NS)` of `metadata.namespace` in a host names
            # the pod's own namespace (Bitnami's PGPOOL_BACKEND_NODES)
            ref = vf.get("fieldRef") if isinstance(vf, dict) else None
            path = ref.get("fieldPath") if isinstance(ref, dict) else None
            out.append(EnvItem("other", name, src, kind="field" if path else "",
                               key=str(path) if path else ""))
    return out


def listed_containers(obj: K8sObject, keys: tuple[str, ...], index: ConfigIndex,
                      given: tuple[EnvVar, ...] = ()) -> list[Container]:
    """The containers a custom resource lists at `keys` in a pod's container shape
    (Zalando's spec.sidecars), as sidecars, their env linked with `index`; `given`: the
    variables the operator sets before each one's own (which `$(VAR)` may name)."""
    items = get(obj.body, *keys)
    out = []
    for i, c in enumerate(items if isinstance(items, list) else []):
        if isinstance(c, dict):
            shape = _container(obj, (*keys, i), c, "sidecar")
            out.append(replace(shape.container, env=tuple(
                _env(obj.namespace, shape.env, index, given))))
    return out


def _env(ns: str | None, items: tuple[EnvItem, ...], index: ConfigIndex,
         given: tuple[EnvVar, ...] = ()) -> list[EnvVar]:
    """A container's env: its items with the ConfigMap and Secret values they name
    (`ns`: the workload's namespace), after `given`."""
    out: list[EnvVar] = list(given)
    for item in items:
        form, kind = item.form, item.kind
        if form == "value":
            value = item.value
            # only a value with a `$` can change (`$(VAR)`, or `$$` for a `$`): the others
            # need no map of the earlier variables (one per variable was quadratic)
            out.append(EnvVar(name=item.name, value=_expand(value, out) if "$" in value
                              else value, source=item.source))
        elif form == "from":
            prefix = item.name
            data = lookup(index, kind, ns, item.target)
            if data is None:
                out.append(EnvVar(name=f"{prefix}*", source=item.source,
                                  from_ref=f"{kind}:{item.target} "
                                  f"{absent(index, kind, ns, item.target)}",
                                  secret=kind == "secret"))
                continue
            for k, v in data.data.items():
                out.append(EnvVar(name=prefix + k, value=v, source=data.source(k),
                                  from_ref=f"{kind}:{item.target}/{k}",
                                  secret=kind == "secret"))
            for k, why in data.unknown.items():
                out.append(EnvVar(name=prefix + k, source=data.source(k),
                                  from_ref=f"{kind}:{item.target}/{k} (remote: {why})",
                                  secret=True))
            if data.open:
                out.append(EnvVar(name=f"{prefix}*", source=item.source,
                                  from_ref=f"{kind}:{item.target} (remote: {data.open})",
                                  secret=True))
        elif form == "ref":
            data = lookup(index, kind, ns, item.target)
            key = item.key
            if data is not None and key in data.data:
                out.append(EnvVar(name=item.name, value=data.data[key],
                                  source=data.source(key),
                                  from_ref=f"{kind}:{item.target}/{key}",
                                  secret=kind == "secret"))
            elif data is not None and (why := data.remote(key)) is not None:
                out.append(EnvVar(name=item.name, source=data.source(key) if key in
                                  data.unknown else item.source,
                                  from_ref=f"{kind}:{item.target}/{key} (remote: {why})",
                                  secret=True))
            else:
                out.append(EnvVar(name=item.name, source=item.source,
                                  from_ref=f"{kind}:{item.target}/{key} "
                                  f"{absent(index, kind, ns, item.target, data, key)}",
                                  secret=kind == "secret"))
        else:
            out.append(EnvVar(name=item.name, source=item.source,
                              from_ref=f"field:{item.key}" if item.kind == "field"
                              else "valueFrom"))
    # Later definitions win, like the kubelet; a `prefix*` marker of a source whose
    # names are not known stands for that source, each kept.
    last: dict[str, EnvVar] = {}
    for var in out:
        last[var.name if not var.name.endswith("*") else f"{var.name}{var.from_ref}"] = var
    return list(last.values())


# `$$` first: Kubernetes reads it as an escaped `$` (`$$(A)` is the text `$(A)`).
_VAR_REF = lazy(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def _expand(value: str, earlier: list[EnvVar]) -> str:
    """Kubernetes `$(VAR)` expansion against variables defined before this one."""
    known = {v.name: v.value for v in earlier if v.value is not None}
    return _VAR_REF.sub(lambda m: "$" if m.group(1) is None else known.get(m.group(1), m.group(0)),
                        value)


def env_map(container: Container) -> dict[str, EnvVar]:
    return {e.name: e for e in container.env}


_IMAGE_VERSION = lazy(r":v?(\d+)(?:\.(\d+))?")


def image_version(image: str) -> tuple[int, int | None] | None:
    """Major (and minor) version from an image tag: postgres:15.4-alpine -> (15, 4)."""
    tag = image.rsplit("/", 1)[-1]
    m = _IMAGE_VERSION.search(tag)
    if not m:
        return None
    return int(m.group(1)), (int(m.group(2)) if m.group(2) else None)


# Image repositories (the last path component, registry and tag removed) whose
# default process is the PostgreSQL server: the official image and the distributions
# built on it. Names that merely start with "postgres" are other programs
# (postgres-operator, postgrest, postgres-meta, postgres-exporter).
POSTGRES_IMAGES = frozenset({
    "postgres",  # library/postgres, supabase/postgres
    "postgresql",  # bitnami/postgresql, cloudnative-pg/postgresql
    "postgresql-repmgr", "postgresql-ha",  # Bitnami
    "postgis",  # postgis/postgis, cloudnative-pg/postgis
    "timescaledb", "timescaledb-ha",  # timescale/
    "spilo",  # Zalando (also spilo-<major>)
    "pgvector",  # pgvector/pgvector, ankane/pgvector
    "crunchy-postgres", "crunchy-postgres-gis",  # Crunchy Data
    "citus",  # citusdata/citus
    "paradedb",  # paradedb/paradedb
    "pgvecto-rs",  # tensorchord/pgvecto-rs
    "harbor-db",  # goharbor/harbor-db (its entrypoint ends in `exec postgres`)
    "zulip-postgresql",  # zulip/zulip-postgresql: library/postgres plus a text-search dictionary
})
SERVER_PROGRAMS = ("postgres", "postmaster")
SHELLS = ("sh", "bash", "ash", "dash", "zsh")  # a command run by one of these runs a script
# In a shell script: postgres (or the image entrypoint) started as a command.
_SCRIPT_RUNS_POSTGRES = lazy(
    r"(?:^|[;&|\n(]\s*|\bexec\s+|\bgosu\s+\S+\s+|\bsu-exec\s+\S+\s+)"
    r"(?:\S*/)?(?:postgres|postmaster|docker-entrypoint\.sh(?:\s+postgres)?)(?=\s|$|;)")


def image_repository(image: str) -> str:
    """The image's repository name without registry, tag or digest:
    ghcr.io/cloudnative-pg/postgresql:16.2 -> postgresql."""
    name = image.strip().lower().split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def is_postgres_image(image: str) -> bool:
    repo = image_repository(image)
    # the patterns only for spilo-* / postgresql-* names: linking asks this of every
    # container twice
    return repo in POSTGRES_IMAGES or (
        repo.startswith("spilo-") and _SPILO.fullmatch(repo) is not None) or (
        repo.startswith(("postgresql-", "postgres-")) and _SCLORG.fullmatch(repo) is not None)


_SPILO = lazy(r"spilo-\d+")
# sclorg's images (Red Hat, CentOS, Fedora): quay.io/fedora/postgresql-16,
# registry.redhat.io/rhel9/postgresql-16, quay.io/sclorg/postgresql-15-c9s,
# centos/postgresql-96-centos7; configured by POSTGRESQL_* variables (max_connections
# from POSTGRESQL_MAX_CONNECTIONS, default 100: sclorg/postgresql-container run script);
# and Sourcegraph's sourcegraph/postgresql-16 and postgresql-16-codeinsights (its
# codeinsights-db), and before them postgres-11.4, postgres-12.6, postgres-12-alpine,
# built on library/postgres
_SCLORG = lazy(POSTGRESQL_REPO)  # the names whose major advisor.facts.pg_version reads


def _program(word: str) -> str:
    return word.rsplit("/", 1)[-1]


# In a shell script: Patroni started as a command (timescaledb-single's
# `exec patroni /etc/timescaledb/patroni.yaml`)
_SCRIPT_RUNS_PATRONI = lazy(r"(?:^|[;&|\n(]\s*|\bexec\s+)(?:\S*/)?patroni(?=\s|$|;)")


def patroni_runner(c: Container) -> str | None:
    """Why `c` runs Patroni, which manages its PostgreSQL (Spilo's image is known by
    name, is_spilo_image): its command (or a shell script it runs) starts `patroni` (as
    timescaledb-single's `patroni /etc/timescaledb/patroni.yaml` on timescaledb-ha, whose
    default command is plain `postgres`); None when nothing says so."""
    argv = [*c.command, *c.args]
    if argv and _program(argv[0]) == "patroni":
        return f"the container's command runs {argv[0]}"
    if argv and _program(argv[0]) in SHELLS and any(
            _SCRIPT_RUNS_PATRONI.search(word) for word in argv[1:]):
        return "the container's shell script runs patroni"
    return None


def postgres_arguments(c: Container) -> list[str] | None:
    """The arguments of the postgres process a container runs (what `-c name=value`
    settings are read from), or None when the container does not run postgres itself:
    a PostgreSQL image with its default entrypoint and command, `postgres ...`, or
    `docker-entrypoint.sh postgres ...` (the official entrypoint puts `postgres` before
    arguments that start with "-"). `-c` given to a shell or to pg_isready is not a
    server setting."""
    argv = [*c.command, *c.args]
    if argv and _program(argv[0]) in SERVER_PROGRAMS:
        return argv[1:]
    if not is_postgres_image(c.image):
        return None
    if not c.command:
        # the image's entrypoint runs postgres with these arguments
        if not c.args or c.args[0].startswith("-"):
            return list(c.args)
        if _program(c.args[0]) in SERVER_PROGRAMS:
            return list(c.args[1:])
        if _program(c.args[0]) == "docker-entrypoint.sh":
            rest = list(c.args[1:])
            return rest[1:] if rest and _program(rest[0]) in SERVER_PROGRAMS else rest
        return None
    if _program(c.command[0]) == "docker-entrypoint.sh":
        rest = argv[1:]
        if rest and _program(rest[0]) in SERVER_PROGRAMS:
            return rest[1:]
        return rest if not rest or rest[0].startswith("-") else None
    return _script_postgres_arguments(argv)


def _script_postgres_arguments(argv: list[str]) -> list[str] | None:
    """`sh -c "... exec postgres -c max_connections=300"`: the words after postgres up
    to the end of that shell command."""
    import shlex

    if len(argv) < 2 or _program(argv[0]) not in SHELLS:
        return None
    script = " ".join(a for a in argv[1:] if not a.startswith("-") or " " in a)
    match = _SCRIPT_RUNS_POSTGRES.search(script)
    if match is None:
        return None
    tail = re.split(r"[;&|\n)]", script[match.end():], maxsplit=1)[0]
    try:
        return shlex.split(tail)
    except ValueError:
        return []


def is_postgres_container(c: Container) -> bool:
    """A container that runs the PostgreSQL server (see `postgres_arguments`), or a
    PostgreSQL image's container whose shell script starts postgres, or Patroni
    (`patroni_runner`), which starts it. Never an init
    container: `pg_isready` or a wait-for-db loop ends before the pod serves, and the
    pod stays a client."""
    if c.role == "init":
        return False
    if patroni_runner(c) is not None:
        return True  # Patroni starts the postgres it manages
    if not is_postgres_image(c.image) and not (c.command and _program(c.command[0])
                                                in SERVER_PROGRAMS):
        return False
    return postgres_arguments(c) is not None


def is_pgbouncer_container(c: Container) -> bool:
    if c.role == "init":
        return False
    image = c.image.lower().rsplit("/", 1)[-1].split(":")[0]
    if "exporter" in image:
        return False
    return "pgbouncer" in image or (bool(c.command) and "pgbouncer" in c.command[0])


def _weight(value: object) -> int | None:
    """A step's weight or replica count as Argo reads it (an int32), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def _routed_spec(obj: K8sObject, canary: dict) -> SurgeSpec:
    """What `routed_canary_term` reads of a canary Rollout with trafficRouting."""
    weights: list[int] = []
    scales: list[int] = []
    scale_weights: list[int] = []
    for step in _as_list(canary.get("steps")):
        if not isinstance(step, dict):
            continue
        if (w := _weight(step.get("setWeight"))) is not None:
            weights.append(w)
        scale = step.get("setCanaryScale")
        if isinstance(scale, dict):
            if (n := _weight(scale.get("replicas"))) is not None:
                scales.append(n)
            elif (w := _weight(scale.get("weight"))) is not None:
                scale_weights.append(w)
    routing = canary.get("trafficRouting")
    max_weight = _weight(routing.get("maxTrafficWeight")) if isinstance(routing, dict) \
        else None
    return SurgeSpec("routed", weights=tuple(weights), scales=tuple(scales),
                     scale_weights=tuple(scale_weights),
                     dynamic=canary.get("dynamicStableScale") is True,
                     max_weight=max_weight or 100,
                     min_pods=_weight(canary.get("minPodsPerReplicaSet")) or 0,
                     source=obj.source("spec", "strategy", "canary", "trafficRouting",
                                       key="spec.strategy.canary.trafficRouting"))


def routed_canary_term(spec: SurgeSpec, peak: float) -> Term | None:
    """The pods a traffic-routed Argo canary runs beyond `peak` replicas
    (argoproj/argo-rollouts utils/replicaset/canary.go@v1.9.1:371
    CalculateReplicaCountsForTrafficRoutedCanary): maxSurge does not apply. The canary
    has ceil(replicas x weight / maxTrafficWeight) pods (:417 trafficWeightToReplicas),
    at least minPodsPerReplicaSet (:357), or a setCanaryScale step's count; after the last
    step, or with no steps, the weight is the maximum (:546 GetCurrentSetWeight), so the
    canary reaches full size. Without dynamicStableScale (the default) the stable stays
    at replicas (:386), so the peak is twice the replicas; the old stable is scaled down
    only after scaleDownDelaySeconds (30 s, utils/defaults/defaults.go@v1.9.1:30). With
    it, the stable keeps the replicas of the traffic it still has (:397-400), so between
    two weights it is sized for the lower one while the canary is for the higher."""
    replicas = math.ceil(peak)
    if replicas <= 0:
        return None
    top = spec.max_weight

    def pods(weight: int) -> int:
        n = math.ceil(replicas * min(weight, top) / top)
        return max(n, spec.min_pods) if n else n  # CheckMinPodsPerReplicaSet

    scaled = max((*spec.scales, *(math.ceil(replicas * w / top) for w in spec.scale_weights)),
                 default=0)
    if not spec.dynamic:
        extra = max(pods(top), scaled)
        why = (f"setCanaryScale {scaled} pods" if scaled > pods(top) else
               "the canary at full weight after the last step")
        label = ("rolling-update surge (canary pods beside the full stable ReplicaSet, "
                 f"Argo traffic routing: {why})")
    else:
        path = (0, *spec.weights, top)
        pairs = list(pairwise(path))
        totals = [pods(max(a, b)) + pods(top - min(a, b)) for a, b in pairs]
        at = max(range(len(pairs)), key=totals.__getitem__)
        extra = max(totals[at], replicas + scaled) - replicas
        label = ("rolling-update surge (canary and stable pods beyond replicas, Argo "
                 f"traffic routing, dynamicStableScale: setWeight {pairs[at][0]} to "
                 f"{pairs[at][1]})")
    if extra <= 0:
        return None
    return Term(label=label, value=extra, source=spec.source)


def workload_ref(obj: K8sObject) -> tuple[str, str, str] | None:
    """A Rollout's spec.workloadRef as (kind, name, scaleDown), when it has one."""
    if obj.kind != "Rollout":
        return None
    ref = get(obj.body, "spec", "workloadRef")
    if not isinstance(ref, dict):
        return None
    return (str(ref.get("kind") or ""), str(ref.get("name") or ""),
            str(ref.get("scaleDown") or "never"))


def referenced_rollouts(objects: list[K8sObject], loads: list[Workload], default_ns: str
                        ) -> tuple[list[Workload], list[str]]:
    """The Rollouts whose pod template is another workload's (spec.workloadRef), as
    workloads, and a notice for each whose template the repository does not hold.

    Argo Rollouts runs the referenced Deployment's or ReplicaSet's template at the
    Rollout's own replicas and strategy (argoproj/argo-rollouts rollout/templateref.go
    @v1.9.1:126 Resolve, :41 infoByGroupKind). The referenced workload keeps its own
    replicas: Argo scales it down only with scaleDown onsuccess (rollout/sync.go@v1.9.1
    :1040) or progressively (rollout/replicaset.go@v1.9.1:178), once, for the first
    revision; `never` is the default (docs/migrating.md)."""
    by_key = {(w.kind, w.namespace or default_ns, w.name): w for w in loads}
    found: list[Workload] = []
    notices: list[str] = []
    for obj in objects:
        ref = workload_ref(obj)
        if ref is None:
            continue
        kind, name, scale_down = ref
        ns = obj.namespace or default_ns
        target = by_key.get((kind, ns, name)) if kind in ("Deployment", "ReplicaSet") \
            else None
        if target is None:
            notices.append(
                f"{obj.ref}: its pod template is {kind or '?'}/{name or '?'} "
                "(spec.workloadRef), which the repository does not hold as a workload: "
                "its pods are in no budget")
            continue
        if scale_down in ("onsuccess", "progressively") and target.replicas.value:
            notices.append(
                f"{obj.ref}: workloadRef scaleDown {scale_down}: Argo Rollouts scales "
                f"{kind}/{name} to 0 once the Rollout's first revision is healthy; its "
                f"{target.replicas.value:g} replicas are counted as written (both run "
                "while the Rollout starts)")
        found.append(Workload(
            obj=obj, containers=list(target.containers), pod_labels=dict(target.pod_labels),
            replicas=base_replicas(obj), volumes=dict(target.volumes),
            volume_sources={k: list(v) for k, v in target.volume_sources.items()},
            mounts={k: list(v) for k, v in target.mounts.items()},
            node_selector=dict(target.node_selector),
            sub_paths={k: list(v) for k, v in target.sub_paths.items()},
            volume_specs=dict(target.volume_specs)))
    return found, notices
