"""Host resolution: the Services in the manifests, the workloads (servers, poolers)
each selects, the DNS names each answers to, and which server or pooler a pod reaches
at a host, as cluster DNS resolves it."""

from __future__ import annotations

import re
from collections.abc import Callable

from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.link.inputs import workload_id
from advisor.model import EnvVar, Pooler, Route, Source, Topology
from advisor.read.apps.urls import lone_host_parts, parse_port, split_port
from advisor.read.extract import EXTERNAL_IPS, OUTSIDE_TYPES, outside_kind, service_fields
from advisor.read.sources.k8s import K8sObject, get
from advisor.read.workloads import Workload


def read_services(objects: list[K8sObject]) -> list[dict]:
    out = []
    for obj in objects:
        if obj.kind != "Service":
            continue
        selector, external, outside, addresses = service_fields(obj)
        out.append({"name": obj.name, "namespace": obj.namespace, "obj": obj,
                    "selector": selector, "external": external, "outside": outside,
                    "addresses": addresses})
    return out


def host_forms(name: str, namespace: str | None) -> list[str]:
    """The names a Service answers to in host_map. With its namespace, only the forms
    that name it: the bare name is looked up as `name.<the pod's namespace>`, as cluster
    DNS does, so that no pod reaches another namespace's Service by its bare name."""
    if not namespace:
        return [name.lower()]
    ns = namespace.lower()
    return [f.lower() for f in (f"{name}.{ns}", f"{name}.{ns}.svc",
                                f"{name}.{ns}.svc.cluster.local")]


def addressable(hosts: list[str]) -> list[str]:
    """`hosts` less each bare name that has a namespaced form among them (`db` beside
    `db.ns.svc`): that form is how a pod of the namespace reaches it (host_forms)."""
    namespaced = {h.split(".", 1)[0] for h in hosts if ".svc" in h}
    return [h for h in hosts if "." in h or h not in namespaced]


def service_targets(loads: list[Workload], topo: Topology
                     ) -> list[tuple[Workload, tuple[str, str]]]:
    """The workloads a Service can lead to (servers and poolers), in workload order, each
    with its target. Computed once: scanning every workload per Service is quadratic."""
    server_ids = {s.id for s in topo.servers}
    poolers = pooler_index(topo.poolers)
    out = []
    for w in loads:
        wid = workload_id(w)
        if wid in server_ids:
            out.append((w, ("server", wid)))
            continue
        first = poolers.get(wid)
        if first is not None:
            out.append((w, ("pooler", topo.poolers[first].id)))
    return out


def pooler_index(poolers: list[Pooler]) -> dict[str, int]:
    """The first pooler (by position) of each workload: a pooler's id is its workload's id,
    or `<workload id>#<container>` for a sidecar or one of several containers. Matching by
    id prefix instead also took `Deployment/ns/api-pgbouncer` for the workload
    `Deployment/ns/api`, so a Service selecting the application led to the pooler."""
    first: dict[str, int] = {}
    for at, pooler in enumerate(poolers):
        first.setdefault(pooler.id.split("#", 1)[0], at)
    return first


def targets_by_namespace(targets: list[tuple[Workload, tuple[str, str]]], default_ns: str
                          ) -> dict[str, list[tuple[Workload, tuple[str, str]]]]:
    """Service targets grouped by the namespace they are applied to (one without a
    namespace: `default_ns`), in workload order: a Service only selects its own
    namespace's pods."""
    out: dict[str, list[tuple[Workload, tuple[str, str]]]] = {}
    for w, target in targets:
        out.setdefault(w.namespace or default_ns, []).append((w, target))
    return out


def selected(svc: dict, by_namespace: dict[str, list[tuple[Workload, tuple[str, str]]]],
             default_ns: str) -> tuple[str, str] | None:
    """The first target (in workload order) of the Service's namespace whose pods it
    selects. A namespace-less Service and workload are both in `default_ns`: a staging
    Service `db` does not select the pods of a manifest applied to the default one."""
    found = selected_all(svc, by_namespace, default_ns)
    return found[0][1] if found else None


def selected_all(svc: dict, by_namespace: dict[str, list[tuple[Workload, tuple[str, str]]]],
                 default_ns: str) -> list[tuple[Workload, tuple[str, str]]]:
    """Every target of the Service's namespace whose pods it selects, in workload order."""
    selector = svc["selector"]
    if not selector:
        return []
    return [(w, target) for w, target in by_namespace.get(svc["namespace"] or default_ns, [])
            if all(w.pod_labels.get(k) == v for k, v in selector.items())]


# The labels an operator puts on its instance pods: (cluster label, role label, the role
# values of the primary, of a replica, entity id prefixes). A Service written by hand that
# selects them (CloudNativePG's cnpg.io/cluster + cnpg.io/instanceRole: primary) leads to
# that cluster's server, though no workload of the repository runs those pods. The
# Percona operator's pods carry PGO's labels, its Patroni 4 leader `primary` and the
# deprecated `master` (internal/naming/labels.go RolePatroniLeader, K8SPG-648).
_OPERATOR_PODS = (
    ("cnpg.io/cluster", ("cnpg.io/instanceRole", "role"), ("primary",), "replica", ("cnpg",)),
    ("cluster-name", ("spilo-role",), ("master",), "replica", ("zalando",)),
    ("postgres-operator.crunchydata.com/cluster", ("postgres-operator.crunchydata.com/role",),
     ("master", "primary"), "replica", ("crunchy", "percona")),
)


def operator_pods_target(svc: dict, namespace: str, server_ids: set[str]
                         ) -> tuple[str, str] | None:
    """The server whose operator-made pods a Service's selector picks, when it names a
    cluster the repository holds: its primary, or its replicas for the replica role."""
    selector = svc["selector"] or {}
    for cluster_key, role_keys, primaries, replica, prefixes in _OPERATOR_PODS:
        cluster = selector.get(cluster_key)
        if not cluster:
            continue
        role = next((selector[k] for k in role_keys if k in selector), None)
        for prefix in prefixes:
            ident = f"{prefix}:{namespace}/{cluster}"
            if ident not in server_ids:
                ident = f"{prefix}:{cluster}"  # the cluster's manifest names no namespace
            if ident not in server_ids:
                continue
            if role == replica and f"{ident}/replicas" in server_ids:
                return ("server", f"{ident}/replicas")
            if role is None or role == replica or role in primaries:
                return ("server", ident)
    return None


def exposure(svc: dict) -> str | None:
    """'Service/db/pg (type LoadBalancer, k8s/svc.yaml:13)' for a Service that takes
    connections from outside the cluster (also 'Service/db/pg (spec.externalIPs, ...)'
    for one that lists node addresses it answers at); None for any other. The type comes from the
    Service's extract (read_services): its tree is not built again on a warm run."""
    obj: K8sObject = svc["obj"]
    kind = svc.get("outside") if "outside" in svc else outside_kind(obj.body)
    if kind == EXTERNAL_IPS:
        return f"{obj.ref} (spec.externalIPs, {_where(obj, 'spec', 'externalIPs')})"
    if kind not in OUTSIDE_TYPES:
        return None
    return f"{obj.ref} (type {kind}, {_where(obj, 'spec', 'type')})"


def ports_lead_elsewhere(entries: list[dict], server_ports: set[str],
                         other_ports: set[str]) -> bool:
    """Pure: whether every port of a Service (its `spec.ports` entries) targets a port
    that another container of the server's pod declares (`other_ports`: containerPort
    numbers and port names, as text) and none the server's own (`server_ports`) nor
    PostgreSQL's or a pooler's (5432, 6432, a postgres-like name): the Service exposes
    that program, not the server (sqlpad/sqlpad's kubernetes-examples: NodePort
    sqlpad-svc, port 3000 -> the sqlpad container's 3000, in the postgres pod; it was
    called the server's exposure, audit 46 D5). False when a port is not known."""
    if not entries or not other_ports:
        return False
    for e in entries:
        if not isinstance(e, dict):
            return False
        target = e.get("targetPort", e.get("port"))
        text = str(target).strip() if target is not None else ""
        number = parse_port(text)
        if not text or text in server_ports or text not in other_ports \
                or (number is not None and number in _PG_PORTS) \
                or _PG_PORT_NAME.fullmatch(text):
            return False
    return True


def _where(obj: K8sObject, *keys: str | int) -> str:
    """file:line of the value at keys: the overlay's or patch's line when a renderer
    traced it (kustomize, Helm), else the object's own."""
    source = obj.source(*keys)
    return obj.location(*keys).label() if source.path is None else \
        (source.path if source.line is None else f"{source.path}:{source.line}")


def _server_id(prefix: str, obj: K8sObject, namespace: str, server_ids: set[str]
               ) -> str | None:
    ident = f"{prefix}:{namespace}/{obj.name}"
    if ident not in server_ids:
        ident = f"{prefix}:{obj.name}"  # the manifest names no namespace
    return ident if ident in server_ids else None


def _role_target(ident: str, replicas: bool, server_ids: set[str]) -> str | None:
    """The replicas' server when asked for (None without replicas: a Service of the
    replica role has no pod behind it then), else the primary's."""
    if not replicas:
        return ident
    return f"{ident}/replicas" if f"{ident}/replicas" in server_ids else None


# CloudNativePG's managed services (spec.managed.services.additional[].selectorType,
# api/v1/cluster_types.go ManagedService): rw leads to the primary, ro to the replicas,
# r to every instance.
_CNPG_SELECTOR_ROLES = {"rw": (False,), "ro": (True,), "r": (False, True)}
# Zalando postgresql (v2.0.1 pkg/cluster/k8sres.go generateService, connection_pooler.go
# generateConnectionPoolerService): enable<Role>NodePort makes the role's Service (or its
# pooler's) a NodePort; else enable<Role>LoadBalancer a LoadBalancer whose
# loadBalancerSourceRanges are spec.allowedSourceRanges, or only 127.0.0.1/32 without
# them (configureLoadBalanceService: no client outside the cluster then). Only what the
# manifest sets is read (the operator configuration's defaults are false).
_ZALANDO_FLAGS = (("enableMasterNodePort", "NodePort", False),
                  ("enableReplicaNodePort", "NodePort", True),
                  ("enableMasterPoolerNodePort", "NodePort", False),
                  ("enableReplicaPoolerNodePort", "NodePort", True),
                  ("enableMasterLoadBalancer", "LoadBalancer", False),
                  ("enableReplicaLoadBalancer", "LoadBalancer", True),
                  ("enableMasterPoolerLoadBalancer", "LoadBalancer", False),
                  ("enableReplicaPoolerLoadBalancer", "LoadBalancer", True))
# Crunchy PGO (v6.0.3 v1beta1 postgrescluster_types.go Service, ReplicaService;
# pgbouncer_types.go Service; shared_types.go ServiceSpec.Type, default ClusterIP), and
# Percona's copy of it; a PerconaPGCluster's are PERCONA_SERVICES.
_CRUNCHY_SERVICES = ((("spec", "service"), False), (("spec", "replicaService"), True),
                     (("spec", "proxy", "pgBouncer", "service"), False))


# The kinds operator_exposures reads (every other object has no such Service): linking
# asks only these, not each of a repository's objects.
EXPOSING_KINDS = frozenset({"Cluster", "Pooler", "postgresql", "PostgresCluster",
                            "PerconaPGCluster"})


def operator_exposures(obj: K8sObject, namespace: str, server_ids: set[str]
                       ) -> list[tuple[str, str]]:
    """(server id, what) for each Service an operator makes for its cluster (or its
    cluster's pooler) of a type that takes connections from outside the cluster, as the
    resource asks for it."""
    api = obj.api_version
    out: list[tuple[str, str]] = []

    def add(ident: str, replicas: bool, what: str) -> None:
        target = _role_target(ident, replicas, server_ids)
        if target is not None and (target, what) not in out:
            out.append((target, what))

    if obj.kind == "Cluster" and api.startswith("postgresql.cnpg.io/"):
        ident = _server_id("cnpg", obj, namespace, server_ids)
        extra = get(obj.body, "spec", "managed", "services", "additional")
        if ident is None or not isinstance(extra, list):
            return out
        for at, item in enumerate(extra):
            kind = get(item, "serviceTemplate", "spec", "type")
            if kind not in OUTSIDE_TYPES:
                continue
            name = get(item, "serviceTemplate", "metadata", "name") or f"additional[{at}]"
            where = _where(obj, "spec", "managed", "services", "additional", at,
                           "serviceTemplate", "spec", "type")
            for replicas in _CNPG_SELECTOR_ROLES.get(str(get(item, "selectorType") or "rw"),
                                                     (False,)):
                add(ident, replicas, f"{obj.ref} managed service {name} (type {kind}, {where})")
    elif obj.kind == "Pooler" and api.startswith("postgresql.cnpg.io/"):
        kind = get(obj.body, "spec", "serviceTemplate", "spec", "type")
        cluster = get(obj.body, "spec", "cluster", "name")
        if kind not in OUTSIDE_TYPES or not isinstance(cluster, str):
            return out
        ident = f"cnpg:{namespace}/{cluster}"
        ident = ident if ident in server_ids else f"cnpg:{cluster}"
        if ident in server_ids:
            where = _where(obj, "spec", "serviceTemplate", "spec", "type")
            add(ident, get(obj.body, "spec", "type") == "ro",
                f"{obj.ref} (serviceTemplate type {kind}, {where})")
    elif obj.kind == "postgresql" and api.startswith("acid.zalan.do/"):
        ident = _server_id("zalando", obj, namespace, server_ids)
        if ident is None:
            return out
        ranges = get(obj.body, "spec", "allowedSourceRanges")
        for flag, kind, replicas in _ZALANDO_FLAGS:
            if get(obj.body, "spec", flag) is not True:
                continue
            if kind == "LoadBalancer" and not ranges:
                continue  # 127.0.0.1/32 only
            if kind == "LoadBalancer" and get(obj.body, "spec", flag.replace(
                    "LoadBalancer", "NodePort")) is True:
                continue  # the NodePort wins (generateService)
            add(ident, replicas, f"{obj.ref} {flag} (type {kind}, {_where(obj, 'spec', flag)})")
    elif obj.kind in ("PostgresCluster", "PerconaPGCluster"):
        # imported here: the operator readers are loaded only where their kinds are
        from advisor.read.sources.operators.crunchy import pgo_cluster
        from advisor.read.sources.operators.percona import (
            PERCONA_SERVICES,
            percona_bouncer,
            percona_cr,
            percona_run,
        )

        if not pgo_cluster(obj):
            return out
        percona = percona_cr(obj)
        ident = _server_id("percona" if percona else "crunchy", obj, namespace, server_ids)
        if ident is None:
            return out
        no_bouncer = percona_run(obj) and percona_bouncer(obj)[0] is None  # replicas: 0
        for keys, replicas in PERCONA_SERVICES if percona else _CRUNCHY_SERVICES:
            if no_bouncer and "pgBouncer" in keys:
                continue
            kind = get(obj.body, *keys, "type")
            if kind in OUTSIDE_TYPES:
                add(ident, replicas, f"{obj.ref} {'.'.join(keys[1:])} (type {kind}, "
                    f"{_where(obj, *keys, 'type')})")
    return out


def service_host_index(services: list[dict], default_ns: str) -> dict[str, tuple[str, str]]:
    """Every DNS name of every Service -> ("service", its index in `services`): the
    first Service of a name wins, as in host_map."""
    by_host: dict[str, tuple[str, str]] = {}
    for at, svc in enumerate(services):
        for host in host_forms(svc["name"], svc["namespace"] or default_ns):
            by_host.setdefault(host, ("service", str(at)))
    return by_host


def own_service(host: str | None, w: Workload, services: list[dict],
                by_host: dict[str, tuple[str, str]], default_ns: str,
                host_map: dict[str, tuple[str, str]] | None = None) -> dict | None:
    """The Service a pod of `w` reaches at `host` when that Service selects `w`'s own
    pods (a database StatefulSet whose env names its own Service for its init scripts):
    a workload is never a client of itself, whatever its image is read as. Not when the
    host leads to another workload's server (`host_map`): a Service whose selector also
    takes in the client's pods (a kustomize commonLabels that overwrote the server
    Service's selector, mjreb/Codescene-kirolImplementation) still leads to that server,
    and the client is its client."""
    namespace = w.namespace or default_ns
    found = resolve_host(host, namespace, by_host)
    if found is None:
        return None
    svc = services[int(found[1])]
    selector = svc["selector"]
    if not selector or (svc["namespace"] or default_ns).lower() != namespace.lower():
        return None
    if not all(w.pod_labels.get(k) == v for k, v in selector.items()):
        return None
    target = resolve_host(host, namespace, host_map) if host_map else None
    if target is not None and target[0] == "server" and \
            not target[1].startswith(("declared/", "file/")):
        # a server of the repository's objects (a declared [[servers]] entry for this
        # very Service, or a postgresql.conf, may stand for the workload itself)
        wid = workload_id(w)
        if target[1] not in (wid, f"{wid}/replicas"):
            return None
    return svc


def resolve_host(host: str | None, namespace: str | None, host_map: dict[str, tuple[str, str]]
                 ) -> tuple[str, str] | None:
    """The server or pooler a pod in `namespace` reaches at `host`, as cluster DNS
    resolves it: `svc` in the pod's own namespace, `svc.ns`, `svc.ns.svc` and
    `svc.ns.svc.cluster.local` (trailing dot and case ignored)."""
    if not host:
        return None
    # `forgejo-rw.dev.svc.cluster.local:5432` in a chart value (damacus/home-ops): the
    # name before the port
    h = split_port(host.lower().strip())[0].rstrip(".")
    found = _lookup_host(h, namespace, host_map)
    if found is None:
        # A StatefulSet pod's own name: <pod>.<governing service>[.ns[.svc[.domain]]]
        pod, _, service = h.partition(".")
        if service and re.fullmatch(r".+-\d+", pod):
            found = _lookup_host(service, namespace, host_map)
    return found


def _lookup_host(h: str, namespace: str | None, host_map: dict[str, tuple[str, str]]
                 ) -> tuple[str, str] | None:
    # A short name resolves in the client's own namespace first, as cluster DNS does;
    # lower case as host_forms registers it (DNS ignores case: `${NAMESPACE}`, an
    # envsubst placeholder, unlinked every client of thechangelog/changelog.com)
    ns = namespace.lower() if namespace else None
    for candidate in (f"{h}.{ns}" if ns and "." not in h else None, h):
        if candidate and candidate in host_map:
            return host_map[candidate]
    return None


_POSTGRES_PREFIX = lazy(r"POSTGRES|(?:^|_)PG_*$", re.I)
# a host name or address as written, not a template or a variable left to expand
_LITERAL_HOST = lazy(r"[A-Za-z0-9][A-Za-z0-9.-]*(?::\d+)?")
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def _names_postgres(prefix: str) -> bool:
    return _POSTGRES_PREFIX.search(prefix) is not None


# An application's own name for its database host (DJANGO_DATABASE_HOST,
# AUTOBRR__POSTGRES_HOST, SYMFONY__ENV__DATABASE_HOST, POSTHOG_POSTGRES_HOST,
# PAPERLESS_DBHOST, dbHost), and its siblings' endings.
# ADDRESS: Authelia 4.38's AUTHELIA_STORAGE_POSTGRES_ADDRESS (`host` or `tcp://host:port`,
# storage.postgres.address), left out of every budget with only a notice (audit 13c D2)
# A numbered host (POSTGRES_HOST_0, _1, _2: one per shard, iiacoban42/online-store's
# order service, each beside its POSTGRES_PORT_<n>) is a host too: group 2 is its number.
_HOST_VAR = lazy(
    r"(.*(?:DATABASE|POSTGRES|POSTGRESQL|PG|DB)_*)(?:HOST|HOSTNAME|SERVER|ADDRESS)(?:_*(\d+))?",
    re.I)
_SIBLINGS = {"port": ("PORT",), "dbname": ("NAME", "DATABASE", "DB", "DBNAME"),
             "user": ("USER", "USERNAME")}
# The application's own part of a host variable's prefix and its database word:
# POSTHOG_ and POSTGRES of POSTHOG_POSTGRES_HOST, PAPERLESS_ and DB of PAPERLESS_DBHOST.
_APP_AND_WORD = lazy(r"(.+?_)(DATABASE|POSTGRESQL|POSTGRES|PG|DB)(_*)", re.I)
_DB_WORDS = ("DB", "DATABASE", "POSTGRES", "POSTGRESQL", "PG")
_HOST_ENDINGS = ("HOST", "HOSTNAME", "SERVER", "ADDRESS")


# Sidecars that listen on the pod's loopback for a database elsewhere (Cloud SQL, AlloyDB)
_DB_PROXY_IMAGES = ("cloud-sql-proxy", "cloudsql-proxy", "cloud-sql-connectors", "gce-proxy",
                    "alloydb-auth-proxy")


def runs_db_proxy(images: list[str]) -> bool:
    """Whether one of a pod's images is a database proxy sidecar: the application's
    loopback host then leads to a server elsewhere, not to nothing."""
    return any(marker in image.lower() for image in images for marker in _DB_PROXY_IMAGES)


def host_variable_route(env: tuple[EnvVar, ...] | list[EnvVar],
                        host_map: dict[str, tuple[str, str]], namespace: str,
                        proxied: bool = False) -> Route | None:
    """A `<PREFIX>_HOST` variable whose value is a server or pooler of the repository;
    its `<PREFIX>_PORT`, `_NAME`/`_DATABASE` and `_USER` siblings complete the route.
    A host that links counts; one that does not only when the name says PostgreSQL
    (SETTING_REMOTE_POSTGRES_HOST, PG_HOST: the client connects to a server the
    repository lacks, PA107), since DB_HOST may name another engine's. The
    application's own variable wins over an `INIT_` one (onedr0p's postgres-init,
    which creates the database once, often straight on the server). A loopback host
    counts only when the pod runs a database proxy (`proxied`): hasura's Cloud SQL
    example, POSTGRES_DB_HOST=127.0.0.1:5432 beside gce-proxy."""
    by_name = {e.name.upper(): e for e in env if e.value}
    # a value may carry its port (POSTGRES_DB_HOST=127.0.0.1:5432: hasura's Cloud SQL
    # example): the host is what links and what PA107 names
    named = [(var, m, *split_port(var.value.strip().removeprefix("tcp://")))
             for var in sorted(env, key=lambda e: e.name.upper().startswith("INIT_"))
             if var.value and (m := _HOST_VAR.fullmatch(var.name)) is not None]
    linked = [entry for entry in named
              if resolve_host(entry[2], namespace, host_map) is not None]
    for var, m, host, port_in_host in linked or [
            entry for entry in named if (_names_postgres(entry[1].group(1))
                                         or _sibling_says_postgres(entry[1].group(1), by_name))
            and _LITERAL_HOST.fullmatch(entry[2])
            and (proxied or entry[2].lower() not in _LOOPBACK)]:
        found = _siblings(m.group(1).upper(), _numbered(by_name, m.group(2)))
        lone = lone_host_parts(var.name, env, lambda value, var=var: value != var.value and
                               resolve_host(value, namespace, host_map) is not None)
        found = {part: found[part] or lone[part] for part in found}
        port = found["port"] or port_in_host
        return Route(host=host, port=parse_port(port), dbname=found["dbname"],
                     user=found["user"],
                     source=replace(var.source, key=var.name),
                     dbname_source=_dbname_source(env, found["dbname"]))
    return _endpoint_route(env, host_map, namespace)


def _dbname_source(env: tuple[EnvVar, ...] | list[EnvVar], dbname: str | None
                   ) -> Source | None:
    """The line of the variable the route's database name was taken from (POSTGRES_DB,
    DB_NAME...): the first database-word variable of that value."""
    if dbname is None:
        return None
    for var in env:
        if var.value is not None and var.value.strip() == dbname and not var.secret \
                and var.name.upper().endswith(_SIBLINGS["dbname"]) \
                and not var.name.upper().endswith(("USERNAME", "HOSTNAME")):
            return replace(var.source, key=var.name)
    return None


# Any other host variable (pachyderm's pachd: PG_BOUNCER_HOST=pg-bouncer, PG_BOUNCER_PORT
# beside POSTGRES_HOST): its name ends in HOST or HOSTNAME and its value is exactly a
# Service name of a server or pooler here (`svc`, `svc.ns`, `svc.ns.svc[.cluster.local]`,
# a letter in the first label: no address, port or template). A name that says nothing
# of a database is taken only from such a value: LOKI_SERVICE_HOST=loki never links.
# (compiled when first used: an IGNORECASE character class costs ~5 M instructions to
# compile, 1.5% of a check of the demo)
_ANY_HOST_VAR = lazy(r"(.*?)_*HOST(?:NAME)?(?:_*(\d+))?", re.I)
_SERVICE_NAME = lazy(
    r"[a-z0-9-]*[a-z][a-z0-9-]*(?:\.[a-z0-9-]+(?:\.svc(?:\.cluster\.local)?)?)?\.?", re.I)


# A word of the prefix that names another service's purpose: EXPORTER_HOST=db is where a
# scraper reads the database's metrics exporter, REDIS_HOST or SMTP_HOST another
# protocol's server, whatever Service the value names
_NOT_DATABASE_WORDS = frozenset({
    "EXPORTER", "METRICS", "METRIC", "PROMETHEUS", "PROM", "STATSD", "MONITORING",
    "REDIS", "MEMCACHED", "MEMCACHE", "SMTP", "MAIL", "EMAIL", "IMAP", "LDAP",
    "OTEL", "OTLP", "JAEGER", "ZIPKIN", "TRACING", "KAFKA", "AMQP", "RABBITMQ", "RABBIT",
    "MQTT", "NATS", "ELASTICSEARCH", "ELASTIC", "MONGO", "MONGODB", "MYSQL", "MARIADB",
    "S3", "MINIO", "HTTP", "HTTPS", "GRPC", "WEB", "HEALTH", "LISTEN", "BIND"})
# the standard PostgreSQL and PgBouncer ports, and the names Service ports to them carry
# (the Bitnami charts' tcp-postgresql, the official images' postgres)
_PG_PORTS = frozenset({5432, 6432})
_PG_PORT_NAME = lazy(r"(?:tcp-)?(?:postgres(?:ql)?|pg|psql|pgbouncer|pgpool|db|sql)", re.I)


def _is_pg_port(port: int, entries: list[dict]) -> bool:
    """Whether `port` reaches PostgreSQL or a pooler through a Service whose `ports` are
    `entries`: 5432 or 6432; a Service port whose target is one of those, or whose name
    (or target's name) says PostgreSQL; the Service's only port, when unnamed."""
    if port in _PG_PORTS:
        return True
    for e in (e for e in entries if isinstance(e, dict)):
        if parse_port(str(e.get("port", ""))) != port:
            continue
        target = e.get("targetPort")
        if (len(entries) == 1 and not e.get("name")) or parse_port(str(target)) in _PG_PORTS \
                or any(
                isinstance(n, str) and _PG_PORT_NAME.fullmatch(n)
                for n in (e.get("name"), target)):
            return True
    return False


def service_host_routes(env: tuple[EnvVar, ...] | list[EnvVar],
                        host_map: dict[str, tuple[str, str]], namespace: str,
                        ports: Callable[[str, str], list[dict]] | None = None
                        ) -> list[Route]:
    """A route for each host variable whose name no database-host rule reads (_HOST_VAR,
    route_from_env's families) and whose value is exactly a Service of a PostgreSQL
    server or pooler in the repository (_ANY_HOST_VAR, _SERVICE_NAME); its `<prefix>PORT`
    sibling gives the port, the database and user are not known. Cited at the variable.
    Not a bare HOST/HOSTNAME (a server's own listen address beside PORT), not a prefix
    naming another purpose (_NOT_DATABASE_WORDS), and not when the sibling port is one
    the Service does not lead to PostgreSQL on (`ports(host, namespace)`: its `ports`
    entries; EXPORTER_PORT=9187 is the metrics exporter's)."""
    by_name = {e.name.upper(): e for e in env if e.value}
    out: list[Route] = []
    for var in env:
        value = (var.value or "").strip()
        m = _ANY_HOST_VAR.fullmatch(var.name)
        if m is None or not m.group(1) or not value:
            continue
        numbered = _HOST_VAR.fullmatch(var.name)
        if (numbered is not None and numbered.group(2) is None) \
                or _SERVICE_NAME.fullmatch(value) is None \
                or resolve_host(value, namespace, host_map) is None:
            continue
        prefix = var.name[:m.end(1)].upper()
        if _NOT_DATABASE_WORDS.intersection(re.split(r"_+", prefix)):
            continue
        number = m.group(2)
        port = parse_port(next((by_name[n].value for n in (
            *((f"{prefix}_PORT_{number}", f"{prefix}PORT{number}") if number else ()),
            f"{prefix}_PORT", f"{prefix}PORT") if n in by_name), None))
        if port is not None and not _is_pg_port(
                port, ports(value, namespace) if ports is not None else []):
            continue
        out.append(Route(host=value.rstrip("."), port=port,
                         source=replace(var.source, key=var.name)))
    return out


def service_ports(host: str, namespace: str, services: list[dict],
                  by_host: dict[str, tuple[str, str]]) -> list[dict]:
    """The `spec.ports` entries of the Service a pod in `namespace` reaches at `host`
    ([] when it lists none or none is found)."""
    found = resolve_host(host, namespace, by_host)
    if found is None:
        return []
    entries = get(services[int(found[1])]["obj"].body, "spec", "ports")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


# The sibling of a host variable that names its engine: bingo-microservices' bi runs with
# BI_DB_DRIVER=postgres beside BI_DB_HOST (its configs/config.yaml store.driver)
_ENGINE_ENDINGS = ("DRIVER", "TYPE", "ENGINE", "DIALECT", "ADAPTER", "VENDOR", "CONNECTION")
_SAYS_POSTGRES = lazy(r"(?:.*[._:/-])?(?:postgres(?:ql)?|pgsql|pgx|pg)(?:[._:/+-].*)?", re.I)


def _sibling_says_postgres(prefix: str, by_name: dict[str, EnvVar]) -> bool:
    """Whether the host variable of `prefix` is a PostgreSQL server's by its sibling,
    though its name says only DB: `<prefix>DRIVER` (TYPE, ENGINE, DIALECT, ...) names
    PostgreSQL (postgres, postgresql, pgsql, django.db.backends.postgresql). A port of
    5432 is not taken for this (a DB_HOST=cache beside it stays no evidence). Without
    this, bingo-microservices' bi (BI_DB_DRIVER=postgres,
    BI_DB_HOST=postgres-postgresql-primary...) was said to name no database host, and the
    check ended with infos only, exit 0."""
    engine = next((by_name[prefix.upper() + e].value for e in _ENGINE_ENDINGS
                   if prefix.upper() + e in by_name), None)
    return engine is not None and _SAYS_POSTGRES.fullmatch(engine.strip()) is not None


def _sibling_prefixes(prefix: str, by_name: dict[str, EnvVar]) -> list[str]:
    """`prefix`, then the same application's other database words that name no host of
    their own: PostHog's settings (posthog/settings/data_stores.py postgres_config)
    read POSTHOG_POSTGRES_HOST and _PORT beside POSTHOG_DB_NAME and POSTHOG_DB_USER.
    Only under the application's own part (POSTHOG_): a bare POSTGRES_HOST takes
    DB_USER only when nothing else in the container names a database (lone_host_parts),
    and a POSTHOG_DB_HOST of its own makes POSTHOG_DB_* another server's settings."""
    m = _APP_AND_WORD.fullmatch(prefix)
    if m is None:
        return [prefix]
    app, seps = m.group(1), dict.fromkeys((m.group(3), "_"))
    out = [prefix]
    for word in _DB_WORDS:
        for sep in seps:
            other = f"{app}{word}{sep}"
            if other not in out and not any(other + e in by_name for e in _HOST_ENDINGS):
                out.append(other)
    return out


def _numbered(by_name: dict[str, EnvVar], number: str | None) -> dict[str, EnvVar]:
    """The variables as a numbered host's siblings are named: POSTGRES_PORT_1 is the port
    of POSTGRES_HOST_1 (read as POSTGRES_PORT), over any unnumbered one."""
    if number is None:
        return by_name
    end = f"_{number}"
    return {**by_name, **{k[:-len(end)]: v for k, v in by_name.items() if k.endswith(end)}}


def _siblings(prefix: str, by_name: dict[str, EnvVar]) -> dict[str, str | None]:
    """The port, database and user beside a host variable: under its own prefix first,
    then under the same application's other database words (_sibling_prefixes)."""
    prefixes = _sibling_prefixes(prefix, by_name)
    return {part: next((by_name[p + e].value for p in prefixes for e in endings
                        if p + e in by_name), None)
            for part, endings in _SIBLINGS.items()}


# `host:port` as a whole value, the port written out
_ENDPOINT = lazy(r"([A-Za-z0-9][A-Za-z0-9.-]*):(\d{1,5})")


def _endpoint_route(env: tuple[EnvVar, ...] | list[EnvVar],
                    host_map: dict[str, tuple[str, str]], namespace: str) -> Route | None:
    """A variable of any name whose whole value is `host:port` of a server or pooler of
    the repository (RETAIL_ORDERS_PERSISTENCE_ENDPOINT=orders-postgresql:5432: the
    retail-store sample's orders service builds its JDBC URL from it, and its server
    printed 'fits, peak 0'). The port must be written: a bare name is too common a
    value to be taken for a database address."""
    for var in env:
        m = _ENDPOINT.fullmatch(var.value.strip()) if var.value else None
        if m is None or m.group(1).lower() in _LOOPBACK:
            continue
        if resolve_host(m.group(1), namespace, host_map) is not None:
            return Route(host=m.group(1), port=int(m.group(2)),
                         source=replace(var.source, key=var.name))
    return None
