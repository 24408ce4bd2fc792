"""What linking reads of a ConfigMap, a Service, an HPA and a workload (its containers:
advisor.read.workloads.workload_shape), as one pure function of the object each: the
reader calls it, and the parse cache keeps its result (with the lines the reader asks
for) next to the object's tree, so that a warm run hands the reader the result without
building the tree (advisor.read.sources.k8s.LazyK8sObject).

A function here may raise what reading the body raises (WrongType): the cache then
keeps no extract, and the reader raises it again from the body, as without a cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from advisor.read.sources.k8s import NO_EXTRACT, K8sObject, count_field, get, line_of
from advisor.read.workloads import POD_SPEC_PATHS, WorkloadShape, configmap_data, workload_shape


def _configmap_lines(obj: K8sObject, data: dict[str, str]) -> list[tuple]:
    """ConfigMapData.source(key) asks for ("data", key) of every key."""
    return [("data", key) for key in data]


def service_fields(obj: K8sObject
                   ) -> tuple[dict[str, str], str | None, str | None, tuple[str, ...]]:
    """A Service's selector (as text), for type ExternalName its externalName, its type
    when it takes connections from outside the cluster (LoadBalancer, NodePort), and the
    addresses kube-proxy routes to its endpoints besides its DNS names: spec.externalIPs,
    spec.loadBalancerIP and a set clusterIP (advisor.link.hosts.read_services and
    exposure)."""
    known = obj.extract()
    if known is not NO_EXTRACT:
        selector, external, outside, addresses = known
        return dict(selector), external, outside, tuple(addresses)
    selector = get(obj.body, "spec", "selector") or {}
    kind = get(obj.body, "spec", "type")
    external = get(obj.body, "spec", "externalName") if kind == "ExternalName" else None
    return ({str(k): str(v) for k, v in selector.items()} if isinstance(selector, dict)
            else {}, external, outside_kind(obj.body), service_addresses(obj))


def outside_kind(body: Any) -> str | None:
    """How a Service takes connections from outside the cluster: its type (LoadBalancer,
    NodePort), else EXTERNAL_IPS when it lists spec.externalIPs (kube-proxy routes
    traffic to those node addresses on the Service port to its endpoints, whatever the
    type); None for a Service only the cluster reaches."""
    kind = get(body, "spec", "type")
    if kind in OUTSIDE_TYPES:
        return str(kind)
    listed = get(body, "spec", "externalIPs")
    return EXTERNAL_IPS if isinstance(listed, list) and any(
        isinstance(a, str) and a.strip() for a in listed) else None


def service_addresses(obj: K8sObject) -> tuple[str, ...]:
    """The IPs a Service answers at (Kubernetes Service spec: traffic to an externalIPs
    entry on the Service port is routed to its endpoints, as to its clusterIP and a
    LoadBalancer's loadBalancerIP): a client that names one of them (PhucPV1/NestJS-k8s:
    DB_HOST and the postgres Service's externalIPs both `$HOST`) reaches that Service.
    clusterIP None (headless) is no address."""
    spec = get(obj.body, "spec")
    if not isinstance(spec, dict):
        return ()
    listed = spec.get("externalIPs")
    found = [str(a) for a in listed if isinstance(a, str | int)] \
        if isinstance(listed, list) else []
    for key in ("loadBalancerIP", "clusterIP"):
        value = spec.get(key)
        if isinstance(value, str) and value and value.lower() != "none":
            found.append(value)
    return tuple(a.strip() for a in found if a.strip())


# Service types that take connections from outside the cluster (a node's port, a load
# balancer's address): whoever connects there is in no repository read here.
OUTSIDE_TYPES = ("LoadBalancer", "NodePort")
# a Service of any type that lists spec.externalIPs: reached at those addresses too
EXTERNAL_IPS = "externalIPs"


def _service_lines(obj: K8sObject, fields: Any) -> list[tuple]:
    if fields[1] is not None and fields[1].__class__ is not str:
        raise TypeError("an externalName that is no plain string: read from the body")
    # exposure() cites the type's (or the externalIPs') line: kept, so a warm run builds
    # no tree for it
    if fields[2] == EXTERNAL_IPS:
        return [("spec", "externalIPs")]
    return [("spec", "type")] if fields[2] is not None else []


def hpa_target(obj: K8sObject) -> tuple[str, str, int] | None:
    """An HPA's scale target (kind, name) and maxReplicas; None when either is missing
    (advisor.link.topology._autoscaler_maxima). WrongType for a maxReplicas Kubernetes
    refuses."""
    known = obj.extract()
    if known is not NO_EXTRACT:
        return None if known is None else (known[0], known[1], known[2])
    ref = get(obj.body, "spec", "scaleTargetRef") or {}
    value = count_field(obj, ("spec", "maxReplicas"), get(obj.body, "spec", "maxReplicas"))
    if not isinstance(ref, dict) or value is None:
        return None
    return str(ref.get("kind", "Deployment")), str(ref.get("name")), value


def _hpa_lines(obj: K8sObject, target: Any) -> list[tuple]:
    return [("spec", "maxReplicas")] if target is not None else []


def _workload_lines(obj: K8sObject, shape: Any) -> list[tuple]:
    return []  # the shape holds its sources; the object's own line is kept for all kinds


_WORKLOAD = (workload_shape, _workload_lines, WorkloadShape | None)

# kind -> (the reader's function, the keys whose lines it asks for given its result, the
# type the result decodes to)
EXTRACTS: dict[str, tuple[Callable[[K8sObject], Any], Callable[[K8sObject, Any], list],
                          Any]] = {
    "ConfigMap": (configmap_data, _configmap_lines, dict[str, str]),
    "Service": (service_fields, _service_lines,
                tuple[dict[str, str], str | None, str | None, tuple[str, ...]]),
    "HorizontalPodAutoscaler": (hpa_target, _hpa_lines, tuple[str, str, int] | None),
    **{kind: _WORKLOAD for kind in POD_SPEC_PATHS},
}


def decode_extract(kind: str, raw: Any) -> Any:
    """A kept extract, from the cache's bytes (LazyK8sObject.extract); NO_EXTRACT when
    they are not what this version writes."""
    found = EXTRACTS.get(kind)
    if found is None:
        return NO_EXTRACT
    try:
        return msgspec.msgpack.decode(raw, type=found[2])
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError):
        return NO_EXTRACT


def extract_of(obj: K8sObject) -> tuple[Any, list[tuple[list, int | None]]] | None:
    """(extract, [keys, line0] pairs) for the parse cache, None for a kind without one
    or an object its reader refuses. The location of the object itself (keys ()) is
    always among the lines."""
    found = EXTRACTS.get(obj.kind)
    if found is None or obj.value_sources:
        return None
    reader, lines_of, _type = found
    try:
        value = reader(obj)
        keys = [(), *lines_of(obj, value)]
    except Exception:
        return None
    return value, [(list(k), line_of(obj.body, *k)) for k in keys]
