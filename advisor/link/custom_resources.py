"""Objects of kinds no reader here knows (an application operator's custom resource:
LiteLLMProxy, a Keycloak or Grafana operator's CR) that take a connection Secret an
operator makes (CloudNativePG `<cluster>-app`, Crunchy `<cluster>-pguser-<user>`): their
pods and pools are made by an operator that is not read, but they do connect to that
Secret's cluster, so they are clients of unknown size there (PA106), never nothing
(audit l: joryirving/home-ops's LiteLLMProxy, 3 replicas, DATABASE_URL from litellm-app's
uri, left Cluster litellm 'fits, peak 0'). The same for a Secret the repository writes or an
ExternalSecret makes whose taken value is a PostgreSQL connection string naming a server
or pooler read here (audit 11a: tscibilia/home-ops's LiteLLMProxy and PocketIDInstance take
DATABASE_URL from an ExternalSecret's templated `uri`, left pgsql-cluster without them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from advisor.link.hosts import resolve_host
from advisor.link.inputs import suppressed_codes
from advisor.link.operators import operator_credentials_route, operator_secret_route
from advisor.model import Client, Container, EnvVar, Route, Source, Term
from advisor.read.sources.k8s import K8sObject
from advisor.read.workloads import ConfigIndex

# Walked at most this deep and this many nodes per object: a custom resource's env sits a
# few levels down (spec.env, spec.template.spec.containers[].env), a CRD schema is skipped.
_MAX_DEPTH = 12
_MAX_NODES = 5000


def custom_resource_clients(objects: list[K8sObject], known_kinds: frozenset[str],
                            operator_secrets: ConfigIndex,
                            host_map: dict[str, tuple[str, str]], default_ns: str,
                            taken: set[str], notices: list[str]) -> list[Client]:
    """A client of unknown size for every object of a kind not in `known_kinds` that
    references an operator-made connection Secret of its namespace (a secretKeyRef to a
    key of it, or an envFrom-style secretRef to it). `taken`: names of clients already
    made (a declared workload of that name is made from its declaration instead)."""
    if not operator_secrets:
        return []
    out: list[Client] = []
    for obj in _unread_objects(objects, known_kinds, taken):
        namespace = obj.namespace or default_ns
        mine = {k: v for k, v in operator_secrets.items() if k[1] in (namespace, None)}
        if not mine:
            continue
        env = list(_secret_refs(obj, mine))
        if not env:
            continue
        container = Container(name=obj.name, env=tuple(env), source=obj.source())
        route = operator_secret_route(container, mine)
        why = ""
        if route is None:
            found = operator_credentials_route(container, mine)
            if found is None:
                continue
            route, why = found
        client = _unknown_client(obj, env, route, "connection Secret")
        target = resolve_host(route.host, namespace, host_map)
        if target is not None:
            client.target_kind, client.target_id = target  # type: ignore[assignment]
        if why:
            notices.append(f"{obj.ref}: {why}")
        out.append(client)
    return out


def secret_url_clients(objects: list[K8sObject], known_kinds: frozenset[str],
                       secrets: ConfigIndex, host_map: dict[str, tuple[str, str]],
                       default_ns: str, taken: set[str]) -> list[Client]:
    """A client of unknown size for every object of a kind not in `known_kinds` that
    takes, from a Secret of its namespace in `secrets` (the repository's, and those
    ExternalSecrets make), a value that is a PostgreSQL connection string whose host is
    a server or pooler read here. Only such a value links: a password, a Redis URL or a
    host no server has says nothing of where the operator's pods connect."""
    from advisor.read.apps.urls import route_from_url

    # each Secret's keys that lead to a server or pooler read here, worked out once: the
    # objects of a namespace without one are not walked
    leads: dict[tuple[str, str | None, str], dict[str, tuple[Route, tuple[str, str]]]] = {}
    for k, data in secrets.items():
        if k[0] != "secret":
            continue
        for key, value in data.data.items():
            route = route_from_url(value, data.source(key)) if isinstance(value, str) \
                else None
            target = resolve_host(route.host, k[1] or default_ns, host_map) \
                if route is not None else None
            if route is not None and target is not None:
                leads.setdefault(k, {})[key] = (route, target)
    if not leads:
        return []
    out: list[Client] = []
    for obj in _unread_objects(objects, known_kinds, taken):
        namespace = obj.namespace or default_ns
        mine = {k: secrets[k] for k in leads if k[1] in (namespace, None)}
        if not mine:
            continue
        by_name = {k[2]: leads[k] for k in mine}
        for var in _secret_refs(obj, mine):
            name, _, key = (var.from_ref or "")[len("secret:"):].partition("/")
            found = by_name.get(name, {}).get(key)
            if found is None:
                continue
            route, target = found
            client = _unknown_client(obj, [var], route, "connection string in Secret")
            client.target_kind, client.target_id = target  # type: ignore[assignment]
            out.append(client)
            break
    return out


def _unknown_client(obj: K8sObject, env: list[EnvVar], route: Route, what: str
                    ) -> Client:
    """The client of unknown pods and connections an operator's resource is."""
    refs = ", ".join(sorted({(v.from_ref or "").split(" (", 1)[0][len("secret:"):]
                             for v in env}))
    return Client(
        id=obj.ref, name=obj.name, namespace=obj.namespace, kind=obj.kind,
        replicas=Term(label="replicas unknown", value=1, source=Source.default_of(
            f"{obj.kind} is read by no reader here; 1 is not counted")),
        location=obj.location(), suppressed=suppressed_codes(obj), route=route,
        replicas_unknown=True,
        unknown=(f"connections per pod and replicas unknown: {obj.kind} {obj.name} "
                 f"({obj.api_version}) is a kind pool-advisor does not read, whose "
                 f"operator makes the pods; it takes the {what} {refs} "
                 f"({route.source.label()}), so it connects there"))


def _secret_refs(obj: K8sObject, made: ConfigIndex) -> Iterator[EnvVar]:
    """An env variable for each reference in the object to a Secret of `made`: a
    `secretKeyRef: {name, key}` as that key, a `secretRef: {name}` (envFrom) as each of
    the Secret's keys."""
    names = {name: data for (_kind, _ns, name), data in made.items()}
    stack: list[tuple[tuple, Any]] = [((), obj.body)]
    seen = 0
    while stack and seen < _MAX_NODES:
        keys, node = stack.pop()
        seen += 1
        if len(keys) > _MAX_DEPTH:
            continue
        if isinstance(node, dict):
            for ref_key in ("secretKeyRef", "secretRef"):
                ref = node.get(ref_key)
                if not isinstance(ref, dict) or str(ref.get("name")) not in names:
                    continue
                name = str(ref["name"])
                src = obj.source(*keys, ref_key, "name")
                keys_of = [str(ref.get("key"))] if ref_key == "secretKeyRef" \
                    else list(names[name].data)
                for key in keys_of:
                    yield EnvVar(name=".".join(str(k) for k in (*keys, ref_key)) or ref_key,
                                 source=src, from_ref=f"secret:{name}/{key}", secret=True)
            stack += [((*keys, k), v) for k, v in node.items()
                      if isinstance(v, dict | list)]
        elif isinstance(node, list):
            stack += [((*keys, i), v) for i, v in enumerate(node) if isinstance(v, dict | list)]


def _unread_objects(objects: list[K8sObject], known_kinds: frozenset[str],
                    taken: set[str]) -> Iterator[K8sObject]:
    """The objects no reader takes: of a kind not in `known_kinds`, no CRD, not a client
    already made (`taken`), with a mapping body."""
    for obj in objects:
        if obj.kind not in known_kinds and obj.kind != "CustomResourceDefinition" \
                and obj.name not in taken and isinstance(obj.body, dict):
            yield obj
