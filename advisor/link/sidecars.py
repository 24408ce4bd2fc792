"""The other containers of a PostgreSQL server's own pod: a known client among them (the
Prometheus PostgreSQL exporter the Bitnami chart adds with metrics.enabled) connects to
that pod's server, usually at 127.0.0.1 (in the server's pod, localhost IS the server).

Each server pod runs its own copy and connects to its own pod's server, and a server's
budget is per instance (its max_connections): so a sidecar brings one pod's connections to
an instance, whatever the replicas. For a set of standbys whose budget is spread over the
instances (advisor.budget.slots: total / instances), it is all of them, so that each
instance again sees one pod's. A sidecar that names another host (a Service) brings every
pod of the server set there.

Operator-made pods are read from what the resource declares: Bitnami's StatefulSets
(containers beside containers[0]); Zalando's `postgresql` spec.sidecars, given the
POSTGRES_USER and POSTGRES_PASSWORD the operator sets first (postgres-operator
pkg/cluster/k8sres.go patchSidecarContainers at a7aaad0a); Crunchy PGO's
spec.monitoring.pgmonitor.exporter, the postgres_exporter sidecar it adds to each instance
pod with DATA_SOURCE_URI localhost:<spec.port>/postgres (internal/controller/
postgrescluster/pgmonitor.go at 0fbac306). CloudNativePG's Cluster declares no sidecars
(its metrics are served by the instance manager).

A container whose program no reader knows is not counted (a log shipper, a backup agent:
most sidecars open no connection); one whose env names a database is a client whose
connections are unknown (PA106: a floor), said in a notice.
A PgBouncer container is a pooler (advisor.link.poolers), not a client here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.link.hosts import resolve_host
from advisor.link.inputs import Inputs, suppressed_codes, workload_id
from advisor.model import (
    Client,
    Container,
    EnvVar,
    NodeCpus,
    Pool,
    Pooler,
    Route,
    Server,
    Source,
    Term,
    Topology,
)
from advisor.read.apps.poolcache import container_pools
from advisor.read.apps.urls import route_from_env
from advisor.read.sources.k8s import K8sObject, get
from advisor.read.workloads import (
    ConfigIndex,
    Workload,
    is_pgbouncer_container,
    is_postgres_container,
    listed_containers,
)

if TYPE_CHECKING:
    from collections.abc import Callable

_LOOPBACK = ("localhost", "127.0.0.1", "::1", "")
# pgbouncer.ini listen_port default (PgBouncer docs, "listen_port: Default: 6432")
_PGBOUNCER_PORT = 6432


def sidecar_replicas(w: Workload, server: Server) -> Term:
    """The pods whose sidecars a server instance's budget sees (module docstring)."""
    if server.role == "standby" and server.instances.value > 1:
        return server.instances  # spread over them again by the budget
    return Term(label="server pods per instance", value=1, source=Source.default_of(
        f"a sidecar per server pod, each on its own pod's server: 1 of {w.replicas.show()} "
        "per instance", key="replicas"))


def _pooler_port(pooler: Pooler) -> int:
    got = pooler.settings.get("listen_port")
    try:
        return int(got.value) if got is not None else _PGBOUNCER_PORT
    except (TypeError, ValueError):
        return _PGBOUNCER_PORT


def _target(route: Route | None, w: Workload, server: Server, pooler: Pooler | None,
            host_map: dict, default_ns: str) -> tuple[str, str] | None:
    """Where the sidecar's route leads: a loopback host (or none) is the pod itself, its
    server, or its PgBouncer container at that one's port; another host as cluster DNS
    resolves it."""
    host = ((route.host if route is not None else None) or "").lower()
    if host in _LOOPBACK:
        if pooler is not None and route is not None and route.port == _pooler_port(pooler):
            return ("pooler", pooler.id)
        return ("server", server.id)
    return resolve_host(host, w.namespace or default_ns, host_map)


def _known_pools(c: Container, cache: object, node_cpus: NodeCpus | None
                 ) -> tuple[list[Pool], list[str], list[str]] | None:
    """The pools a reader knows the container's program opens, the reasons its size is
    unknown, and its notices; None when no reader knows it as a client."""
    found = container_pools(c, cache, node_cpus=node_cpus)
    if not found.pools and not found.unknown:
        return None
    return list(found.pools), list(found.unknown), list(found.notices)


def server_pod_clients(inputs: Inputs, topo: Topology, w: Workload, server: Server,
                       host_map: dict, default_ns: str, pooler: Pooler | None,
                       cache: object, is_server: Callable[[Container], bool] | None = None
                       ) -> list[Client]:
    """A client for each container of server `w`'s pod that a reader knows connects
    (module docstring); `is_server`: which containers run the server (default
    is_postgres_container)."""
    runs_server = is_server or is_postgres_container
    out: list[Client] = []
    for c in w.containers:
        if c.role == "init" or runs_server(c) or is_pgbouncer_container(c):
            continue
        known = _known_pools(c, cache, inputs.settings.node())
        if known is None:
            env_route = route_from_env(c.env) or _loopback_host_route(c)
            if env_route is None:
                continue
            # it names a database (an app deployed in the server's pod, paveletto99's
            # rust-service at PG_HOST=127.0.0.1): a client whose connections are unknown
            # (PA106, a floor), never none, or the server "fits" with nothing counted
            why = (f"container {c.name} ({c.image}) beside the server names a database "
                   f"({env_route.source.label()}), but no reader knows its program")
            topo.notices.append(f"{workload_id(w)}: {why}: its connections are unknown")
            known = ([], [why], [])
        pools, unknown, notices = known
        topo.notices += notices
        route = next((p.route for p in pools if p.route is not None), None) \
            or route_from_env(c.env) or _loopback_host_route(c)
        pools = [p if p.route is not None else replace(p, route=route) for p in pools]
        if unknown:
            pools = []  # a size the repository does not hold: unknown, never a part
        if route is None:
            topo.notices.append(
                f"{workload_id(w)}: container {c.name} ({c.image}) beside the server names "
                "no host: counted on its own pod's server (libpq's default host is the "
                "pod's own socket)")
        target = _target(route, w, server, pooler, host_map, default_ns)
        own_pod = ((route.host if route is not None else None) or "").lower() in _LOOPBACK
        client = Client(
            id=f"{server.id}#{c.name}", name=f"{server.name}/{c.name}",
            namespace=w.namespace, kind=w.kind,
            # each pod's own server, or every pod of the set to the host named
            replicas=sidecar_replicas(w, server) if own_pod else server.instances,
            pools=pools, location=w.obj.location(), suppressed=suppressed_codes(w.obj),
            route=route, unknown="; ".join(unknown))
        if target is not None:  # else PA107 reports the host it connects to
            client.target_kind, client.target_id = target  # type: ignore[assignment]
        out.append(client)
    return out


def _loopback_host_route(c: Container) -> Route | None:
    """A route for a host variable no URL reader knows (var_names.names_where) whose value
    is the pod's own loopback: a program beside the server that connects to it
    (sqlpad/sqlpad's kubernetes-examples: SQLPAD_CONNECTIONS__pgdemo__host=localhost in
    the sqlpad container of the postgres pod; it was no client and the server's only
    "reason" was a NodePort Service of sqlpad's own web port, audit 46 D5)."""
    from advisor.read.apps.var_names import names_where

    for var in c.env:
        value = (var.value or "").strip().lower()
        if value and value in _LOOPBACK and names_where(var.name):
            return Route(host=value, source=replace(var.source, key=var.name))
    return None


# Zalando: operator configuration super_username's default (docs/reference/
# operator_parameters.md), the POSTGRES_USER each sidecar is given
_ZALANDO_SUPERUSER = "postgres"
_ZALANDO_ENV = "Zalando operator patchSidecarContainers (pkg/cluster/k8sres.go at a7aaad0a)"
_PGO_EXPORTER = "PGO internal/controller/postgrescluster/pgmonitor.go at 0fbac306"
_PGO_API = "postgres-operator.crunchydata.com/"


def _zalando_sidecars(obj: K8sObject, index: ConfigIndex) -> list[Container]:
    given = (EnvVar(name="POSTGRES_USER", value=_ZALANDO_SUPERUSER,
                    source=Source.default_of(f"{_ZALANDO_ENV}, super_username default",
                                             key="POSTGRES_USER")),
             EnvVar(name="POSTGRES_PASSWORD", source=Source.default_of(_ZALANDO_ENV),
                    from_ref="secret: the superuser's credentials", secret=True))
    found = listed_containers(obj, ("spec", "sidecars"), index, given)
    # getSidecarContainer: an unnamed one is sidecar-<index>
    return [c if c.name else replace(c, name=f"sidecar-{i}") for i, c in enumerate(found)]


def _pgo_exporter(obj: K8sObject) -> list[Container]:
    exporter = get(obj.body, "spec", "monitoring", "pgmonitor", "exporter")
    if not isinstance(exporter, dict):
        return []
    port = get(obj.body, "spec", "port")
    port = port if isinstance(port, int) else 5432  # PostgresCluster spec.port default
    where = obj.source("spec", "monitoring", "pgmonitor", "exporter",
                       key="spec.monitoring.pgmonitor.exporter")

    def var(name: str, value: str) -> EnvVar:
        return EnvVar(name=name, value=value, source=Source.default_of(_PGO_EXPORTER,
                                                                       key=name))
    image = exporter.get("image")
    return [Container(
        name="exporter", role="sidecar", source=where,
        # without spec...exporter.image, the operator's RELATED_IMAGE_PGEXPORTER: its
        # crunchy-postgres-exporter image
        image=str(image) if image else "crunchy-postgres-exporter",
        env=(var("DATA_SOURCE_URI", f"localhost:{port}/postgres"),
             var("DATA_SOURCE_USER", "ccp_monitoring"),
             var("DATA_SOURCE_PASS_FILE", "/opt/crunchy/password")))]


def operator_sidecar_pods(objects: list[K8sObject], index: ConfigIndex,
                          servers: list[Server]) -> list[tuple[Workload, Server]]:
    """The pods of operator clusters that declare sidecars (module docstring), as a
    workload of those containers, with each server of the cluster (the primary, and its
    replicas when there are standbys)."""
    by_id = {s.id: s for s in servers}
    out: list[tuple[Workload, Server]] = []
    for obj in objects:
        if obj.kind == "postgresql" and obj.api_version.startswith("acid.zalan.do/"):
            prefix, containers = "zalando", _zalando_sidecars(obj, index)
            count = ("spec", "numberOfInstances")
        elif obj.kind == "PostgresCluster" and obj.api_version.startswith(_PGO_API):
            prefix, containers = "crunchy", _pgo_exporter(obj)
            count = ("spec", "instances")
        else:
            continue
        # imported here: the operators package loads every operator's reader, which a
        # repository without an operator cluster (the demo) does not need
        from advisor.read.sources.operators.common import entity_id

        ident = entity_id(prefix, obj)
        found = [by_id[i] for i in (ident, f"{ident}/replicas") if i in by_id]
        if not containers or not found:
            continue
        pods = Term(label="instances", value=sum(s.instances.value for s in found),
                    source=found[0].instances.source if len(found) == 1
                    else obj.source(*count, key=".".join(count)))
        w = Workload(obj=obj, containers=containers, pod_labels={}, replicas=pods)
        out += [(w, s) for s in found]
    return out
