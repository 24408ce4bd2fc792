"""Link clients -> poolers -> servers, and work out peak pods and pools per pod.

Input: Kubernetes objects (already loaded, with positions), standalone config files
already parsed, project settings. Output: a `Topology` for the rules.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct, field
from msgspec.structs import replace

from advisor.config.settings import Settings
from advisor.facts.pg_version import declared_major, image_major, option_major
from advisor.guard import guarded
from advisor.lazyregex import lazy
from advisor.model import (
    BouncerVersion,
    Client,
    ConfigProblem,
    Container,
    Location,
    Pool,
    Pooler,
    Route,
    Server,
    Setting,
    Source,
    SqlHazard,
    Term,
    Topology,
)
from advisor.read.fs import Root
from advisor.read.sources.k8s import K8sObject, count_field, get

if TYPE_CHECKING:
    from advisor.config.schema import ProxyDecl, ServerDecl, WorkloadDecl
    from advisor.read.sources.serverless import LambdaFunction
from advisor.read.workloads import (
    ConfigIndex,
    Workload,
    configmap_index,
    image_repository,
    image_version,
    is_pgbouncer_container,
    is_postgres_container,
    lookup,
    postgres_arguments,
    surge,
    workloads,
)

DEFAULT_PG_VERSION = 15
# Where `kubectl apply` puts an object without metadata.namespace (no --namespace).
DEFAULT_NAMESPACE = "default"
ANNOTATION_IGNORE = "pool-advisor.io/ignore"


class Inputs(Struct):
    root: Root
    objects: list[K8sObject] = field(default_factory=list)
    pg_conf_files: list[Path] = field(default_factory=list)
    bouncer_ini_files: list[Path] = field(default_factory=list)
    app_dirs: dict[str, str] = field(default_factory=dict)  # workload name -> source dir
    app_candidates: list[str] = field(default_factory=list)  # folders holding an app
    build_hints: object | None = None  # advisor.read.apps.locate.BuildHints: image -> context
    app_cache: dict = field(default_factory=dict)  # folder -> AppSource, read once
    settings: Settings = field(default_factory=Settings)
    pg_version_override: int | None = None
    # --namespace: where objects without metadata.namespace are deployed
    namespace: str | None = None
    lambdas: list = field(default_factory=list)  # advisor.read.sources.serverless.LambdaFunction


def build_topology(inputs: Inputs) -> Topology:
    topo = Topology()
    default_ns = inputs.namespace or DEFAULT_NAMESPACE
    inputs = replace(inputs, objects=_as_applied(inputs.objects, default_ns, topo.notices))
    # Each object is read on its own: a wrong-typed manifest is one problem, not a crash.
    index: ConfigIndex = {}
    peaks: dict[tuple[str | None, str, str], Term] = {}
    loads: list[Workload] = []
    services: list[dict] = []
    for obj in inputs.objects:
        one = [obj]
        index.update(guarded(topo.problems, obj.path, partial(configmap_index, one), {},
                             "reading this object", obj.line))
    operator_secrets = guarded(topo.problems, ".", partial(
        _operator_secrets, inputs.objects, default_ns), {}, "reading operator-made Secrets")
    for key, made in operator_secrets.items():
        index.setdefault(key, made)  # a Secret in the repository wins
    for obj in inputs.objects:
        one = [obj]
        loads += guarded(topo.problems, obj.path, partial(workloads, one, index), [],
                         "reading this object", obj.line)
        peaks.update(guarded(topo.problems, obj.path, partial(_autoscaler_maxima, one), {},
                             "reading this object", obj.line))
        services += guarded(topo.problems, obj.path, partial(_services, one), [],
                            "reading this object", obj.line)

    # 1. servers and poolers: operator resources first, then plain workloads (less the
    # ones an operator entity already stands for, such as Bitnami's StatefulSets)
    host_map: dict[str, tuple[str, str]] = {}  # hostname -> (kind, id)
    claimed = _operator_entities(inputs, topo, host_map, default_ns)
    loads = [w for w in loads if w.obj.ref not in claimed]
    for w in loads:
        replicas = peaks.get((w.namespace, w.kind, w.name), w.replicas)
        for c in w.containers:
            if is_postgres_container(c):
                server = guarded(topo.problems, w.obj.path, partial(
                    _server_from_workload, inputs, topo, w, c, index, replicas), None,
                    "reading this object", w.obj.line)
                if server is not None:
                    topo.servers.append(server)
            elif is_pgbouncer_container(c):
                pooler = guarded(topo.problems, w.obj.path, partial(
                    _pooler_from_workload, inputs, topo, w, c, index, replicas), None,
                    "reading this object", w.obj.line)
                if pooler is not None:
                    topo.poolers.append(pooler)
    origin = inputs.settings.origin or "<configuration>"
    for decl in inputs.settings.servers:
        found = guarded(topo.problems, origin, partial(_declared_server, decl, inputs, topo),
                        None, "reading a declared server")
        if found is not None:
            topo.servers.append(found)
    for proxy in inputs.settings.proxies:
        found = guarded(topo.problems, origin, partial(_declared_proxy, proxy, inputs, topo),
                        None, "reading a declared proxy")
        if found is not None:
            topo.poolers.append(found)
    _standalone_confs(inputs, topo)
    _standalone_inis(inputs, topo)

    # hostnames: Services that select a server/pooler workload, declared hosts
    targets = _service_targets(loads, topo)
    by_namespace = _targets_by_namespace(targets)
    for svc in services:
        target = _selected(svc, targets, by_namespace)
        if target is not None:
            for host in _host_forms(svc["name"], svc["namespace"] or default_ns):
                host_map.setdefault(host, target)
    for s in topo.servers:
        for h in s.hosts:
            host_map.setdefault(h.lower(), ("server", s.id))
    for p in topo.poolers:
        for h in p.hosts:
            host_map.setdefault(h.lower(), ("pooler", p.id))
    for svc in services:  # ExternalName services alias another host
        if svc.get("external") and svc["external"].lower() in host_map:
            for host in _host_forms(svc["name"], svc["namespace"] or default_ns):
                host_map.setdefault(host, host_map[svc["external"].lower()])

    # 2. poolers point at servers
    for p in topo.poolers:
        p.server_id = _pooler_server(p, host_map, topo, default_ns)

    # 3. clients
    declared = {d.name: d for d in inputs.settings.workloads}
    sidecars = _sidecars(topo)
    for w in loads:
        if any(is_postgres_container(c) for c in w.containers):
            continue
        if all(is_pgbouncer_container(c) for c in w.containers):
            continue
        client = guarded(topo.problems, w.obj.path, partial(
            _client_from_workload, inputs, topo, w, peaks, host_map, declared.get(w.name),
            default_ns, operator_secrets, _mounted_files(w, index), index, sidecars), None,
            "reading this object", w.obj.line)
        if client is not None:
            topo.clients.append(client)
    for decl in inputs.settings.workloads:
        if not any(c.name == decl.name for c in topo.clients):
            client = guarded(topo.problems, origin, partial(
                _declared_client, decl, inputs, topo), None, "reading a declared workload")
            if client is not None:
                topo.clients.append(client)
    for fn in inputs.lambdas:
        topo.clients.append(_lambda_client(fn, host_map, topo))
    _pooler_pairs(topo)
    _global_headroom(inputs.settings, topo)
    _disambiguate_names(topo)
    return topo


def _as_applied(objects: list[K8sObject], default_ns: str, notices: list[str]
                ) -> list[K8sObject]:
    """One object per (kind, API group, namespace, name), as the cluster keeps it: a
    later definition replaces an earlier one (`kubectl apply -f` goes through files in
    order), so a folder of alternative samples is not counted once per sample."""
    last: dict[tuple[str, str, str, str], int] = {}
    for i, obj in enumerate(objects):
        group = obj.api_version.rpartition("/")[0]
        last[(obj.kind, group, obj.namespace or default_ns, obj.name)] = i
    if len(last) == len(objects):
        return objects
    kept = sorted(last.values())
    dropped: dict[int, list[K8sObject]] = {}
    keys = {v: k for k, v in last.items()}
    for i, obj in enumerate(objects):
        group = obj.api_version.rpartition("/")[0]
        winner = last[(obj.kind, group, obj.namespace or default_ns, obj.name)]
        if winner != i:
            dropped.setdefault(winner, []).append(obj)
    for winner, earlier in dropped.items():
        obj = objects[winner]
        places = ", ".join(f"{o.path}:{o.line}" for o in earlier)
        kind, _group, ns, name = keys[winner]
        notices.append(f"{kind} {ns}/{name} is defined {len(earlier) + 1} times ({places}, "
                       f"{obj.path}:{obj.line}): the cluster keeps one, the last applied "
                       f"({obj.path}:{obj.line}); counted once")
    return [objects[i] for i in kept]


def _disambiguate_names(topo: Topology) -> None:
    """Two servers (or poolers, or clients) of the same name in different namespaces
    are shown as namespace/name."""
    from collections import Counter

    for group in (topo.servers, topo.poolers, topo.clients):
        counts = Counter(e.name for e in group)  # once per group: names.count was O(n²)
        for e in group:
            if counts[e.name] > 1 and e.namespace:
                e.name = f"{e.namespace}/{e.name}"


def _global_headroom(settings: Settings, topo: Topology) -> None:
    if not settings.headroom:
        return
    term = Term(label="headroom", value=settings.headroom,
                source=Source(path=settings.origin, key="headroom"))
    for s in topo.servers:
        if s.headroom is None:
            s.headroom = term


# --- autoscalers ---------------------------------------------------------------------


def _autoscaler_maxima(objects: list[K8sObject]) -> dict[tuple[str | None, str, str], Term]:
    """(namespace, kind, name) of the scale target -> maximum replicas."""
    found: dict[tuple[str | None, str, str], Term] = {}
    for obj in objects:
        if obj.kind == "HorizontalPodAutoscaler":
            ref = get(obj.body, "spec", "scaleTargetRef") or {}
            value = count_field(obj, ("spec", "maxReplicas"), get(obj.body, "spec", "maxReplicas"))
            if isinstance(ref, dict) and value is not None:
                key = (obj.namespace, str(ref.get("kind", "Deployment")), str(ref.get("name")))
                found[key] = Term(label="HPA maxReplicas", value=value,
                                  source=obj.source("spec", "maxReplicas",
                                                    key="spec.maxReplicas"))
        elif obj.kind in ("ScaledObject", "ScaledJob") and "keda.sh" in obj.api_version:
            ref = get(obj.body, "spec", "scaleTargetRef") or {}
            if obj.kind == "ScaledJob":
                ref = {"kind": "Job", "name": obj.name}
            if not isinstance(ref, dict):
                continue
            key = (obj.namespace, str(ref.get("kind") or "Deployment"), str(ref.get("name")))
            value = count_field(obj, ("spec", "maxReplicaCount"),
                                get(obj.body, "spec", "maxReplicaCount"))
            if value is not None:
                term = Term(label=f"KEDA {obj.kind} maxReplicaCount", value=value,
                            source=obj.source("spec", "maxReplicaCount",
                                              key="spec.maxReplicaCount"))
            else:
                term = Term(label=f"KEDA {obj.kind} maxReplicaCount", value=100,
                            source=Source.default_of("KEDA default maxReplicaCount 100",
                                                     "spec.maxReplicaCount"))
            found[key] = term
    return found


# --- services and hostnames ----------------------------------------------------------


def _services(objects: list[K8sObject]) -> list[dict]:
    out = []
    for obj in objects:
        if obj.kind != "Service":
            continue
        selector = get(obj.body, "spec", "selector") or {}
        out.append({
            "name": obj.name, "namespace": obj.namespace, "obj": obj,
            "selector": {str(k): str(v) for k, v in selector.items()}
            if isinstance(selector, dict) else {},
            "external": get(obj.body, "spec", "externalName")
            if get(obj.body, "spec", "type") == "ExternalName" else None,
        })
    return out


def _host_forms(name: str, namespace: str | None) -> list[str]:
    forms = [name.lower()]
    if namespace:
        ns = namespace.lower()
        forms += [f"{name}.{ns}", f"{name}.{ns}.svc", f"{name}.{ns}.svc.cluster.local"]
    return [f.lower() for f in forms]


def _service_targets(loads: list[Workload], topo: Topology
                     ) -> list[tuple[Workload, tuple[str, str]]]:
    """The workloads a Service can lead to (servers and poolers), in workload order, each
    with its target. Computed once: scanning every workload per Service is quadratic."""
    server_ids = {s.id for s in topo.servers}
    prefixed = _PrefixIndex([p.id for p in topo.poolers])
    out = []
    for w in loads:
        wid = _workload_id(w)
        if wid in server_ids:
            out.append((w, ("server", wid)))
            continue
        first = prefixed.first(wid)
        if first is not None:
            out.append((w, ("pooler", topo.poolers[first].id)))
    return out


class _PrefixIndex:
    """The first of `ids` (by position) that starts with a prefix, by bisection of the
    sorted ids: a scan of every pooler per workload was workloads x poolers."""

    def __init__(self, ids: list[str]) -> None:
        self.order = sorted(range(len(ids)), key=ids.__getitem__)
        self.keys = [ids[i] for i in self.order]

    def first(self, prefix: str) -> int | None:
        from bisect import bisect_left

        at = bisect_left(self.keys, prefix)
        best = None
        while at < len(self.keys) and self.keys[at].startswith(prefix):
            if best is None or self.order[at] < best:
                best = self.order[at]
            at += 1
        return best


def _targets_by_namespace(targets: list[tuple[Workload, tuple[str, str]]]
                          ) -> dict[str | None, list[tuple[int, Workload, tuple[str, str]]]]:
    """Service targets grouped by namespace (None: no namespace, seen from every
    namespace), each with its position: a Service only looks at its own namespace's."""
    out: dict[str | None, list[tuple[int, Workload, tuple[str, str]]]] = {}
    for i, (w, target) in enumerate(targets):
        out.setdefault(w.namespace or None, []).append((i, w, target))
    return out


def _selected(svc: dict, targets: list[tuple[Workload, tuple[str, str]]],
              by_namespace: dict | None = None) -> tuple[str, str] | None:
    """The first target (in workload order) whose pods the Service selects."""
    selector = svc["selector"]
    if not selector:
        return None
    if svc["namespace"] and by_namespace is not None:
        candidates = sorted(by_namespace.get(svc["namespace"], []) +
                            by_namespace.get(None, []), key=lambda t: t[0])
    else:
        candidates = [(i, w, target) for i, (w, target) in enumerate(targets)]
    for _, w, target in candidates:
        if svc["namespace"] and w.namespace and svc["namespace"] != w.namespace:
            continue
        if all(w.pod_labels.get(k) == v for k, v in selector.items()):
            return target
    return None


def resolve_host(host: str | None, namespace: str | None, host_map: dict[str, tuple[str, str]]
                 ) -> tuple[str, str] | None:
    """The server or pooler a pod in `namespace` reaches at `host`, as cluster DNS
    resolves it: `svc` in the pod's own namespace, `svc.ns`, `svc.ns.svc` and
    `svc.ns.svc.cluster.local` (trailing dot and case ignored)."""
    if not host:
        return None
    h = host.lower().strip().rstrip(".")
    found = _lookup_host(h, namespace, host_map)
    if found is None:
        # A StatefulSet pod's own name: <pod>.<governing service>[.ns[.svc[.domain]]]
        pod, _, service = h.partition(".")
        if service and re.fullmatch(r".+-\d+", pod):
            found = _lookup_host(service, namespace, host_map)
    return found


def _lookup_host(h: str, namespace: str | None, host_map: dict[str, tuple[str, str]]
                 ) -> tuple[str, str] | None:
    # A short name resolves in the client's own namespace first, as cluster DNS does.
    for candidate in (f"{h}.{namespace}" if namespace and "." not in h else None, h):
        if candidate and candidate in host_map:
            return host_map[candidate]
    return None


def _workload_id(w: Workload) -> str:
    ns = f"{w.namespace}/" if w.namespace else ""
    return f"{w.kind}/{ns}{w.name}"


def _suppressed_codes(obj: K8sObject) -> list[str]:
    raw = obj.annotations.get(ANNOTATION_IGNORE, "")
    return [c.strip() for c in raw.replace(";", ",").split(",") if c.strip()]


# --- servers -------------------------------------------------------------------------


def _pg_version(inputs: Inputs, c: Container | None, fallback: float | None = None) -> Term:
    if inputs.pg_version_override:
        return Term(label="PostgreSQL major version",
                    value=option_major(inputs.pg_version_override),
                    source=Source(default="--pg-version", key="pg_version"))
    if c is not None and (major := image_major(c.image)) is not None:
        return Term(label="PostgreSQL major version", value=major,
                    source=Source(path=c.source.path, line=c.source.line,
                                  key=f"image {c.image}"))
    if fallback is not None:
        return Term(label="PostgreSQL major version", value=fallback,
                    source=Source(default="declared version", key="version"))
    if inputs.settings.pg_version:
        return Term(label="PostgreSQL major version",
                    value=option_major(inputs.settings.pg_version),
                    source=Source(path=inputs.settings.origin, key="pg-version"))
    why = (f"image {c.image} names no PostgreSQL version" if c is not None
           else "no version in the repository")
    return Term(label="PostgreSQL major version", value=DEFAULT_PG_VERSION,
                source=Source.default_of(f"assumed PostgreSQL {DEFAULT_PG_VERSION}: {why} "
                                         "(set --pg-version)"))


def _server_from_workload(inputs: Inputs, topo: Topology, w: Workload, c: Container,
                          index: ConfigIndex, replicas: Term) -> Server:
    from advisor.read.sources.pgconf import parse_postgres_args_checked, read_pgconf

    version = _pg_version(inputs, c)
    settings: dict[str, Setting] = {}
    conf_end: Source | None = None
    for cm_kind, cm_name in w.config_sources(c.name):
        cm = lookup(index, cm_kind, w.namespace, cm_name)
        if cm is None:
            continue
        keys = [k for k in cm.data if k.endswith(".conf") and "hba" not in k and "ident" not in k]
        siblings = {k: (cm.data[k], cm.text_origin(k)[1]) for k in cm.data}
        for key in sorted(keys, key=lambda k: (k != "postgresql.conf", k)):
            shown, offset = cm.text_origin(key)
            conf = read_pgconf(inputs.root, key, text=cm.data[key], line_offset=offset,
                               display_path=shown, siblings=siblings,
                               version=version.int_value)
            topo.problems.extend(conf.problems)
            _merge_suppressions(topo, conf.suppressions)
            settings.update(conf.settings)
            lines = cm.data[key].splitlines()
            if lines:
                conf_end = Source(path=shown, line=offset + len(lines), key=key)
            break  # the main file; its includes pull in the others
    # Command-line -c settings override the file, as on a real server.
    # -c settings only when the process is postgres itself (not a shell's -c)
    args = postgres_arguments(c) or []
    for chunk, src in _args_at_their_lines(c, args):
        found, problems = parse_postgres_args_checked(chunk, src, version.int_value)
        settings.update(found)
        topo.problems.extend(problems)
    for env in c.env:
        if env.name == "POSTGRESQL_MAX_CONNECTIONS" and env.value:  # Bitnami image
            found, problems = parse_postgres_args_checked(
                [f"--max_connections={env.value}"], env.source, version.int_value)
            settings.update(found)
            topo.problems.extend(problems)
    if image_repository(c.image) == "harbor-db":
        settings.update(_harbor_db_max_connections(c, version.int_value, topo))
    wid = _workload_id(w)
    return Server(
        id=wid, name=w.name, kind="workload", namespace=w.namespace, version=version,
        settings=settings, conf_end=conf_end, instances=replicas, memory_limit=c.memory_limit,
        cpu_limit=c.cpu_limit, location=w.obj.location(), suppressed=_suppressed_codes(w.obj))


def _args_at_their_lines(c: Container, args: list[str]) -> list[tuple[list[str], Source]]:
    """postgres options each with the line of the list item holding its value (`-c`,
    `max_connections=200` on two lines: the second), when the arguments are the tail of
    the container's command/args; else all at the container's line."""
    argv = [*c.command, *c.args]
    start = len(argv) - len(args)
    whole = [(args, Source(path=c.source.path, line=c.source.line, key="args"))]
    if not args or len(c.word_sources) != len(argv) or argv[start:] != args:
        return whole
    out: list[tuple[list[str], Source]] = []
    for i, word in enumerate(args):
        if not word.startswith("-"):
            continue
        takes_next = len(word) == 2 and i + 1 < len(args) and not args[i + 1].startswith("-")
        at = i + 1 if takes_next else i
        out.append((args[i:at + 1], c.word_sources[start + at]))
    return out


HARBOR_DB_WHO = ("goharbor/harbor-db docker-entrypoint.sh: postgres -c "
                 "max_connections=${POSTGRES_MAX_CONNECTIONS:-1024}")


def _harbor_db_max_connections(c: Container, version: int, topo: Topology) -> dict:
    """Harbor's database image starts `postgres -c max_connections=N`, N from
    POSTGRES_MAX_CONNECTIONS or 1024 (make/photon/db/docker-entrypoint.sh)."""
    from advisor.read.sources.pgconf import parse_postgres_args_checked

    var = next((e for e in c.env if e.name == "POSTGRES_MAX_CONNECTIONS" and e.value), None)
    value, source = (var.value, var.source) if var is not None else (
        "1024", Source.default_of(HARBOR_DB_WHO, "max_connections"))
    found, problems = parse_postgres_args_checked([f"--max_connections={value}"], source,
                                                  version)
    topo.problems.extend(problems)
    return found


def _declared_server(decl: ServerDecl, inputs: Inputs, topo: Topology) -> Server:
    from advisor.read.sources.pgconf import parse_postgres_args_checked

    origin = inputs.settings.origin
    src = Source(path=origin, key=f"servers.{decl.name}")
    args = [f"--{k}={v}" for k, v in decl.settings.items()]
    for name in ("max_connections", "superuser_reserved_connections", "reserved_connections"):
        value = getattr(decl, name)
        if value is not None:
            args.append(f"--{name}={value}")
    version = _pg_version(inputs, None, declared_major(decl.version))
    settings, problems = parse_postgres_args_checked(args, src, version.int_value)
    topo.problems.extend(problems)
    return Server(
        id=f"declared/{decl.name}", name=decl.name, kind="external",
        version=version, settings=settings,
        instances=Term(label="instances", value=decl.instances, source=src),
        memory_limit=Term(label="declared memory", value=decl.memory, source=src)
        if decl.memory else None,
        cpu_limit=Term(label="declared CPUs", value=decl.cpus, source=src) if decl.cpus else None,
        headroom=Term(label="declared headroom", value=decl.headroom, source=src)
        if decl.headroom is not None else None,
        location=Location(path=origin or "configuration"),
        hosts=[h.lower() for h in decl.hosts])


def _declared_proxy(decl: ProxyDecl, inputs: Inputs, topo: Topology) -> Pooler:
    """An RDS Proxy: reached by its hosts, linked to the declared server it targets."""
    origin = inputs.settings.origin

    def src(key: str, default: str) -> Source:
        if key not in decl.model_fields_set:
            return Source.default_of(default, key=key)
        return Source(path=origin, line=decl.line_of(key), key=f"proxies.{decl.name}.{key}")

    percent = Term(label="MaxConnectionsPercent", value=decl.max_connections_percent,
                   source=src("max_connections_percent",
                              "AWS RDS Proxy default MaxConnectionsPercent 100 (PostgreSQL)"))
    idle_value = decl.max_idle_connections_percent
    idle = Term(label="MaxIdleConnectionsPercent",
                value=idle_value if idle_value is not None else percent.value / 2,
                source=src("max_idle_connections_percent",
                           "AWS RDS Proxy default: half of MaxConnectionsPercent"))
    target = next((s for s in topo.servers if decl.target in (s.name, s.id)), None)
    if target is None:
        topo.problems.append(problem(
            origin or "configuration", decl.line_of("target"),
            f"proxy {decl.name}: target {decl.target!r} is no declared server; declare it "
            "under [[servers]] (name, hosts, max_connections) to budget the proxy"))
    return Pooler(
        id=f"declared-proxy/{decl.name}", name=decl.name, kind="rds-proxy",
        replicas=Term(label="RDS Proxy", value=1,
                      source=Source.default_of("one managed proxy (AWS scales it)")),
        version=BouncerVersion(source=Source.default_of("not PgBouncer: AWS RDS Proxy")),
        max_connections_percent=percent, max_idle_connections_percent=idle,
        server_id=target.id if target is not None else None,
        location=Location(path=origin or "configuration", line=decl.line_of("")),
        hosts=[h.lower() for h in decl.hosts])


def _standalone_confs(inputs: Inputs, topo: Topology) -> None:
    """postgresql.conf files in the repository that no workload mounts: each is a
    server of its own (a VM, or a file the user keeps in git), reachable by no host
    unless declared."""
    if not inputs.pg_conf_files:
        return
    from advisor.read.sources.pgconf import read_pgconf

    for path in inputs.pg_conf_files:
        if path.name == "postgresql.auto.conf" and (path.parent / "postgresql.conf").exists():
            continue  # read with its postgresql.conf
        shown = inputs.root.rel(path)
        version = _pg_version(inputs, None)
        conf = guarded(topo.problems, shown, partial(
            read_pgconf, inputs.root, path, version=version.int_value), None)
        if conf is None:
            continue
        topo.problems.extend(conf.problems)
        _merge_suppressions(topo, conf.suppressions)
        decl = next((d for d in inputs.settings.servers if shown in d.hosts), None)
        if decl is not None:
            continue
        topo.servers.append(Server(
            id=f"file/{shown}", name=shown, kind="external", version=version,
            settings=conf.settings,
            instances=Term(label="instances", value=1,
                           source=Source.default_of("one server per postgresql.conf")),
            location=Location(path=shown, line=1)))


# --- poolers -------------------------------------------------------------------------


def _standalone_inis(inputs: Inputs, topo: Topology) -> None:
    """pgbouncer.ini files in the repository that no workload mounts: one PgBouncer
    process each (a VM or a container configured outside the manifests)."""
    if not inputs.bouncer_ini_files:
        return
    from advisor.read.sources.pgbouncer_ini import pooler_from_ini, read_pgbouncer_ini

    for path in inputs.bouncer_ini_files:
        shown = inputs.root.rel(path)
        ini = guarded(topo.problems, shown, partial(read_pgbouncer_ini, inputs.root, path), None)
        if ini is None:
            continue
        topo.problems.extend(ini.problems)
        _merge_suppressions(topo, ini.suppressions)
        topo.poolers.append(pooler_from_ini(
            ini, id=f"file/{shown}", name=shown,
            replicas=Term(label="PgBouncer processes", value=1,
                          source=Source.default_of("one PgBouncer process per pgbouncer.ini")),
            location=Location(path=shown, line=1)))


def _bouncer_version(c: Container | None) -> BouncerVersion:
    if c is not None and (v := image_version(c.image)) and v[0] == 1 and v[1] is not None:
        return BouncerVersion(major=1, minor=v[1],
                              source=Source(path=c.source.path, line=c.source.line,
                                            key=f"image {c.image}"))
    return BouncerVersion()


def _pooler_from_workload(inputs: Inputs, topo: Topology, w: Workload, c: Container,
                          index: ConfigIndex, replicas: Term) -> Pooler:
    from advisor.read.sources.pgbouncer_ini import read_pgbouncer_ini

    version = _bouncer_version(c)
    wid = _workload_id(w)
    pooler = Pooler(id=f"{wid}#{c.name}" if c.role == "sidecar" or len(w.containers) > 1
                    else wid, name=w.name if len(w.containers) == 1 else f"{w.name}/{c.name}",
                    namespace=w.namespace, replicas=replicas, version=version,
                    location=w.obj.location(), suppressed=_suppressed_codes(w.obj),
                    surge=surge(w.obj, replicas.value))
    for cm_kind, cm_name in w.config_sources(c.name):
        cm = lookup(index, cm_kind, w.namespace, cm_name)
        if cm is None:
            continue
        ini_keys = [k for k in cm.data if k.endswith(".ini")]
        if not ini_keys:
            continue
        key = "pgbouncer.ini" if "pgbouncer.ini" in ini_keys else ini_keys[0]
        siblings = {k: (cm.data[k], cm.text_origin(k)[1]) for k in cm.data}
        shown, offset = cm.text_origin(key)
        ini = read_pgbouncer_ini(inputs.root, key, text=cm.data[key], line_offset=offset,
                                 display_path=shown, siblings=siblings, version=version)
        topo.problems.extend(ini.problems)
        _merge_suppressions(topo, ini.suppressions)
        pooler.settings, pooler.databases, pooler.users = ini.settings, ini.databases, ini.users
        pooler.main_end = ini.main_end
        break
    else:
        _pooler_from_env(pooler, c)
    return pooler


def _pooler_from_env(pooler: Pooler, c: Container) -> None:
    """PgBouncer images configured by environment (Bitnami PGBOUNCER_*, edoburu)."""
    from advisor.read.sources.operators.containers import pooler_config_from_env

    settings, databases = pooler_config_from_env(c.env)
    pooler.settings.update(settings)
    pooler.databases.extend(databases)


def _pooler_server(p: Pooler, host_map: dict, topo: Topology, default_ns: str) -> str | None:
    if p.server_id:
        return p.server_id
    for db in p.databases:
        target = resolve_host(db.host, p.namespace or default_ns, host_map)
        if target and target[0] == "server":
            return target[1]
    return None


# Kinds advisor.read.sources.operators reads (CloudNativePG Cluster/Pooler, Zalando
# postgresql, Crunchy PostgresCluster) and the label of Bitnami's postgresql
# StatefulSets: without them the module is not imported at all.
OPERATOR_KINDS = frozenset({"Cluster", "Pooler", "postgresql", "PostgresCluster"})


def _may_have_operator_entities(objects: list[K8sObject]) -> bool:
    return any(o.kind in OPERATOR_KINDS or (
        o.kind == "StatefulSet" and o.labels.get("app.kubernetes.io/name") == "postgresql")
        for o in objects)


def _operator_secrets(objects: list[K8sObject], default_ns: str) -> ConfigIndex:
    """Connection Secrets the operators create (CloudNativePG `<cluster>-app`, Crunchy
    `<cluster>-pguser-<user>`, Zalando credentials), indexed as Secrets so that env
    secretKeyRef/envFrom read their host, database and user."""
    if not _may_have_operator_entities(objects):
        return {}
    from advisor.read.sources.operators import operator_secrets
    from advisor.read.workloads import ConfigMapData

    return {("secret", made.namespace, made.name): ConfigMapData(
        made.obj, dict(made.data), secret=True, made_by=made.source)
        for made in operator_secrets(objects, default_ns)}


# Keys of an operator Secret that say where to connect (a password alone does not).
_CONNECTION_KEYS = frozenset({"uri", "jdbc-uri", "fqdn-uri", "fqdn-jdbc-uri", "host",
                              "pgbouncer-uri", "pgbouncer-jdbc-uri", "pgbouncer-host"})


def _operator_secret_route(c: Container, made: ConfigIndex) -> Route | None:
    """The route of a container that takes its connection from an operator-made Secret
    under names no URL reader knows (envFrom: `uri`, `host`; KC_DB_URL_HOST from key
    `host`): the Secret's own uri, through PgBouncer when the pgbouncer-* keys are
    the ones used."""
    from advisor.read.apps.urls import route_from_url

    by_secret = {name: data for (_kind, _ns, name), data in made.items()}
    for var in c.env:
        ref = var.from_ref or ""
        if not ref.startswith("secret:") or "/" not in ref:
            continue
        name, key = ref[len("secret:"):].split("/", 1)
        data = by_secret.get(name)
        if data is None or key not in _CONNECTION_KEYS:
            continue
        used = {e.from_ref.split("/", 1)[1] for e in c.env
                if e.from_ref and e.from_ref.startswith(f"secret:{name}/")}
        bouncer = any(k.startswith("pgbouncer-") for k in used) and not used & {"uri", "host"}
        prefix = "pgbouncer-" if bouncer else ""
        host = data.data.get(f"{prefix}host")
        port = data.data.get(f"{prefix}port") or "5432"
        user = data.data.get("user") or data.data.get("username")
        url = f"postgresql://{user + '@' if user else ''}{host}:{port}/" \
              f"{data.data.get('dbname') or ''}"
        route = route_from_url(url, var.source)
        if route is not None:
            return route
    return None


def _operator_entities(inputs: Inputs, topo: Topology, host_map: dict, default_ns: str
                       ) -> set[str]:
    """Servers and poolers from operator resources; returns the refs of the objects
    they stand for."""
    if not _may_have_operator_entities(inputs.objects):
        return set()
    from advisor.read.sources.operators import operator_entities

    found = operator_entities(inputs.objects, root=inputs.root,
                              version_default=_pg_version(inputs, None).int_value,
                              default_namespace=default_ns, guard=topo.problems)
    topo.servers.extend(found.servers)
    topo.poolers.extend(found.poolers)
    topo.problems.extend(found.problems)
    topo.notices.extend(found.notices)
    for host, target in found.services.items():
        host_map.setdefault(host.lower(), target)
    return set(found.claimed)


# --- clients -------------------------------------------------------------------------


def _sidecars(topo: Topology) -> dict[str, Pooler]:
    """Workload id -> the first pooler that is a container of it (id `<workload>#<name>`),
    indexed once: a scan of every pooler per client was clients x poolers."""
    out: dict[str, Pooler] = {}
    for p in topo.poolers:
        at = p.id.find("#")
        while at >= 0:  # every "<prefix>#" the id starts with (a name may hold a "#")
            out.setdefault(p.id[:at], p)
            at = p.id.find("#", at + 1)
    return out


def _mounted_files(w: Workload, index: ConfigIndex) -> list:
    """Application config files the pod mounts from ConfigMaps in the repository (a
    Temporal config_template.yaml, a Spring application.yml): classified by key name,
    with the ConfigMap's own lines."""
    from advisor.read.apps import mounted_app_file

    out = []
    for mounts in w.mounts.values():
        for vol, path in mounts:
            kind, name = w.volumes.get(vol, ("", ""))
            data = lookup(index, "configmap", w.namespace, name) if kind == "configMap" \
                else None
            if data is None:
                continue
            for key, text in data.data.items():
                directory = path.rsplit("/", 1)[0] if path.endswith("/" + key) else path
                shown, offset = data.text_origin(key)
                found = mounted_app_file(shown, key, text, mount_path=directory,
                                         line_offset=offset)
                if found is not None and (found.kind == "temporal-config" or (
                        found.kind == "python" and "DATABASES" in text)):
                    out.append(found)  # Temporal config; Django settings (sentry.conf.py)
    return out


def _client_from_workload(inputs: Inputs, topo: Topology, w: Workload,
                          peaks: dict, host_map: dict, decl: WorkloadDecl | None,
                          default_ns: str = "default",
                          operator_secrets: ConfigIndex | None = None,
                          mounted: list | None = None,
                          index: ConfigIndex | None = None,
                          sidecars: dict[str, Pooler] | None = None) -> Client | None:
    from advisor.read.apps import pools_for_container, route_from_env
    from advisor.read.apps.urls import route_from_args

    replicas = peaks.get((w.namespace, w.kind, w.name), w.replicas)
    if decl is not None and decl.replicas is not None:
        replicas = Term(label="declared replicas", value=decl.replicas,
                        source=Source(path=inputs.settings.origin, key=f"workloads.{w.name}"))
    pools: list[Pool] = []
    route: Route | None = None
    sidecar = (sidecars if sidecars is not None else _sidecars(topo)).get(_workload_id(w))
    directory = _app_directory(inputs, w, topo)
    app = None
    if directory is not None:
        from advisor.read.apps import scan_app_dir

        if directory not in inputs.app_cache:  # web and worker often share one codebase
            inputs.app_cache[directory] = guarded(
                topo.problems, directory, partial(scan_app_dir, inputs.root, directory), None,
                "reading this application folder")
        app = inputs.app_cache[directory]
    if mounted:
        from advisor.read.apps import AppSource

        app = app.with_files(mounted) if app is not None else AppSource(
            root=inputs.root, directory="", files=tuple(mounted))
    for c in w.containers:
        if is_pgbouncer_container(c):
            continue
        found = guarded(topo.problems, directory or w.obj.path, partial(
            pools_for_container, c, app, node_cpus=inputs.settings.node_cpus), None,
            f"reading the pool settings of container {c.name!r}",
            None if directory else w.obj.line)
        if found is None:
            continue
        topo.notices.extend(found.notices)
        topo.problems.extend(found.problems)
        c_route = route_from_env(c.env) or _operator_secret_route(c, operator_secrets or {}) \
            or route_from_args(c.command, c.args, c.source)
        for pool in found.pools:
            pools.append(pool if pool.route or not c_route else replace(pool, route=c_route))
        route = route or c_route
    if route is None:
        # no URL in the env: the host the application's own configuration names
        # (application.yml, database.yml, a config file) links it, or says it links nowhere
        route = next((p.route for p in pools if p.route is not None and p.route.host), None)
    if route is None and not pools and index:
        # the host a mounted configuration file names (Temporal's connectAddr, Django
        # settings in a ConfigMap): linked, so that its unknown size is reported
        route = _mounted_config_route(w, index, host_map, w.namespace or default_ns)
    if not pools and route is not None:
        pools = _identified_defaults(inputs, topo, w, app, route)
    if decl is not None and decl.pool_size is not None:
        src = Source(path=inputs.settings.origin, key=f"workloads.{w.name}.pool-size")
        processes = Term(label="declared processes", value=decl.processes, source=src) \
            if decl.processes else None
        pools = [Pool(label="declared pool", size=Term(label="declared pool size",
                                                       value=decl.pool_size, source=src),
                      processes=processes, route=route)]
    if decl is not None and decl.connections is not None:
        src = Source(path=inputs.settings.origin, key=f"workloads.{w.name}.connections")
        pools = [Pool(label="declared connections per pod", size=Term(
            label="declared connections per pod", value=decl.connections, source=src),
            route=route)]
    if not pools and route is None:
        return None  # talks to no database we can see
    client = Client(id=_workload_id(w), name=w.name, namespace=w.namespace, kind=w.kind,
                    replicas=replicas, surge=_client_surge(inputs, w, replicas),
                    pools=pools, location=w.obj.location(), suppressed=_suppressed_codes(w.obj),
                    source_dir=directory, route=route,
                    unknown="" if pools else _why_unknown(w, directory, app))
    if topo.poolers:  # as advisor.engine._sql: hazards only matter behind a pooler
        topo.sql_hazards.extend(_env_hazards(w, client.id))
        topo.client_env[client.id] = [e for c in w.containers if not is_pgbouncer_container(c)
                                      for e in c.env if not e.secret]
    if w.kind == "CronJob" and get(w.obj.body, "spec", "concurrencyPolicy",
                                   default="Allow") == "Allow":
        topo.notices.append(
            f"{client.id}: concurrencyPolicy Allow ({w.obj.source('spec').label()}, the "
            "Kubernetes default): a run that outlasts the schedule overlaps the next, each "
            "with its own pools; counted as one run (set concurrencyPolicy: Forbid, or "
            "declare replicas for the overlap)")
    target = None
    if decl is not None and decl.target:
        target = _named_target(decl.target, topo)
    if target is None and route is not None:
        host = (route.host or "").lower()
        if sidecar is not None and host in ("localhost", "127.0.0.1", "::1", ""):
            target = ("pooler", sidecar.id)
        else:
            target = resolve_host(route.host, w.namespace or default_ns, host_map)
    if target is None and sidecar is not None:
        target = ("pooler", sidecar.id)
    if target is not None:
        client.target_kind, client.target_id = target  # type: ignore[assignment]
    elif route is not None:
        topo.notices.append(
            f"{client.id}: connects to host {route.host!r} ({route.source.label()}), which is "
            "no Service, operator service or declared server in the repository; declare it "
            "under [[tool.pool-advisor.servers]] to budget it")
    return client


def _identified_defaults(inputs: Inputs, topo: Topology, w: Workload, app: object,
                         route: Route) -> list[Pool]:
    """No reader found a pool: the default of the stack the URL or dependencies name."""
    from advisor.read.apps import default_pools_for_container

    for c in w.containers:
        if is_pgbouncer_container(c) or c.role == "init":
            continue
        found = guarded(topo.problems, w.obj.path, partial(
            default_pools_for_container, c, app, route, node_cpus=inputs.settings.node_cpus),
            None, f"identifying the stack of container {c.name!r}", w.obj.line)
        if found is not None and found.pools:
            topo.notices.extend(found.notices)
            return found.pools
    return []


def _why_unknown(w: Workload, directory: str | None, app: object | None) -> str:
    """What was looked for, and where, when a client's connections per pod stay unknown."""
    if directory is None:
        return ("no application source folder found for it (looked for: [[workloads]] "
                "source, skaffold/compose build contexts naming its image, a folder with a "
                "Dockerfile or build file named like the image or workload, the root's "
                "application files, the repository's only Dockerfile); its container env "
                "names no pool size of a known stack")
    files = getattr(app, "files", ())
    return (f"read {directory or '.'}/ ({len(files)} application files) and the container "
            "env: no pool of a known stack (HikariCP/Spring, Quarkus, SQLAlchemy, Django, "
            "psycopg_pool, asyncpg, node-postgres, Sequelize, Knex, TypeORM, Prisma, pgx, "
            "database/sql, Rails, Npgsql, Ecto) and no driver dependency to take a default "
            "from")


# A line of a configuration file that names where to connect.
_CONNECTION_LINE = lazy(r"host|addr|server|dsn|url|uri|endpoint|seeds|://", re.I)
_HOST_TOKEN = lazy(r"[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?")
_MAX_CONFIG_SCAN = 256 * 1024  # characters of one mounted file looked through


def _mounted_config_route(w: Workload, index: ConfigIndex, host_map: dict,
                          namespace: str) -> Route | None:
    """A route to a known server or pooler named on a connection line (host, addr,
    url, dsn...) of a ConfigMap or Secret file mounted into one of the workload's
    containers; the source is that line."""
    for c in w.containers:
        if is_pgbouncer_container(c):
            continue
        for kind, name in w.config_sources(c.name):
            data = lookup(index, kind, w.namespace, name)
            if data is None or data.made_by is not None:
                continue
            for key, text in data.data.items():
                for number, line in enumerate(text[:_MAX_CONFIG_SCAN].splitlines(), start=1):
                    if not _CONNECTION_LINE.search(line):
                        continue
                    for token in _HOST_TOKEN.findall(line.lower()):
                        if resolve_host(token, namespace, host_map) is None:
                            continue
                        shown, offset = data.text_origin(key)
                        return Route(host=token, source=Source(
                            path=shown, line=offset + number, key=f"{name}/{key}"))
    return None


def _env_hazards(w: Workload, client_id: str) -> list[SqlHazard]:
    """Startup options and prepared-statement settings in the containers' connection
    env (PGOPTIONS, URLs). Values from Secrets are not looked at: they would end up in
    a finding's text."""
    from advisor.read.sql.drivers import env_hazards

    return [h for c in w.containers if not is_pgbouncer_container(c)
            for e in c.env if not e.secret for h in env_hazards(e, client_id)]


def _client_surge(inputs: Inputs, w: Workload, replicas: Term) -> Term | None:
    return surge(w.obj, replicas.value) if inputs.settings.count_surge else None


def _app_directory(inputs: Inputs, w: Workload, topo: Topology) -> str | None:
    """The workload's application source folder: declared, else inferred by name."""
    directory = inputs.app_dirs.get(w.name)
    return directory if directory is not None else _inferred_app_dir(inputs, w, topo)


def _inferred_app_dir(inputs: Inputs, w: Workload, topo: Topology) -> str | None:
    """The source folder named like the workload or its image (services/checkout for
    Deployment checkout or image acme/checkout:1.2); only when exactly one matches."""
    if inputs.build_hints is not None and inputs.build_hints.contexts:
        from advisor.read.apps.locate import match_app_dir

        guess = match_app_dir(inputs.build_hints, w.name, [c.image for c in w.containers])
        if guess is not None:
            topo.notices.append(f"{_workload_id(w)}: application source inferred as "
                                f"{guess.directory or '.'}/ ({guess.reason}); declare "
                                "[[workloads]] source = ... to choose another")
            return guess.directory
    names = {w.name.lower()}
    for c in w.containers:
        repo = c.image.rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0].lower()
        if repo:
            names.add(repo)
    matches = []
    for d in inputs.app_candidates:
        parts = [p.lower() for p in d.split("/")]
        # application.yml sits in src/main/resources: the app is the folder above src/
        top = parts[:parts.index("src")] if "src" in parts else parts
        if top and top[-1] in names:
            matches.append("/".join(d.split("/")[:len(top)]))
    matches = sorted(set(matches))
    if not matches:
        from advisor.read.apps.locate import fallback_app_dir, maybe_built_here

        if not any(maybe_built_here(c.image) for c in w.containers if c.role != "init"):
            return None
        guess = fallback_app_dir(inputs.root, inputs.app_candidates, names)
        if guess is None:
            return None
        topo.notices.append(f"{_workload_id(w)}: application source inferred as "
                            f"{guess.directory or '.'}/ ({guess.reason}); declare "
                            "[[workloads]] source = ... to choose another")
        return guess.directory
    if len(matches) != 1:
        return None
    from advisor.read.apps.locate import DEPENDENCY_FILES, app_files_in

    if "/" not in matches[0] and "" in inputs.app_candidates and \
            not app_files_in(inputs.root, matches[0], DEPENDENCY_FILES) and \
            app_files_in(inputs.root, "", DEPENDENCY_FILES):
        # the package one level down (netbox/netbox, app/<pkg>): the application's own
        # files (requirements, configs the command names) are at the root
        topo.notices.append(f"{_workload_id(w)}: application source inferred as ./ (the "
                            f"folder {matches[0]}/ named like it is a package of the root's "
                            "application: "
                            f"{', '.join(app_files_in(inputs.root, '', DEPENDENCY_FILES)[:3])}); "
                            "declare [[workloads]] source = ... to choose another")
        return ""
    topo.notices.append(f"{_workload_id(w)}: application source inferred as {matches[0]}/ "
                        "(folder named like the workload or its image); declare "
                        "[[workloads]] source = ... to choose another")
    return matches[0]


def _named_target(name: str, topo: Topology) -> tuple[str, str] | None:
    for s in topo.servers:
        if name in (s.name, s.id):
            return ("server", s.id)
    for p in topo.poolers:
        if name in (p.name, p.id):
            return ("pooler", p.id)
    return None


def _declared_client(decl: WorkloadDecl, inputs: Inputs, topo: Topology) -> Client | None:
    if decl.pool_size is None and decl.connections is None:
        return None
    src = Source(path=inputs.settings.origin, key=f"workloads.{decl.name}")
    if decl.pool_size is None:
        decl = decl.model_copy(update={"pool_size": decl.connections, "processes": None})
    client = Client(
        id=f"declared/{decl.name}", name=decl.name, namespace=decl.namespace,
        kind="declared",
        replicas=Term(label="declared replicas", value=decl.replicas or 1, source=src),
        pools=[Pool(label="declared pool",
                    size=Term(label="declared pool size", value=decl.pool_size, source=src),
                    processes=Term(label="declared processes", value=decl.processes,
                                   source=src) if decl.processes else None)],
        location=Location(path=inputs.settings.origin or "configuration"))
    if decl.target and (target := _named_target(decl.target, topo)):
        client.target_kind, client.target_id = target  # type: ignore[assignment]
    return client


def _lambda_client(fn: LambdaFunction, host_map: dict, topo: Topology) -> Client:
    """A Lambda function as a client: concurrency x connections per execution
    environment (advisor.read.sources.serverless). A database setting that links nowhere is
    the client's route, so PA107 names it and how to declare the server."""
    from advisor.read.apps import route_from_env

    route = route_from_env(fn.env) or _lambda_db_setting(fn)
    client = Client(
        id=f"lambda/{fn.location.path}#{fn.name}", name=fn.name, kind="Lambda",
        replicas=fn.concurrency,
        # "fixed": the one connection is the platform's model, not a library default (PA104)
        pools=[Pool(label="Lambda", size=fn.per_environment, route=route,
                    note="one execution environment per concurrent invocation; a pool "
                         "inside the function is per environment")],
        location=fn.location, route=route)
    target = resolve_host(route.host, None, host_map) if route is not None else None
    if target is not None:
        client.target_kind, client.target_id = target  # type: ignore[assignment]
    return client


# Environment names (any case) that carry a Lambda's database host or URL in templates
# that name them their own way (rds_endpoint, DB_HOST, PG_URL, database_dsn...).
_LAMBDA_DB_NAME = lazy(r"rds|database|postgres|^pg|(^|_)db(_|$)|dsn|endpoint", re.I)
_NOT_A_HOST = lazy(r"user|pass|secret|port|name|region|arn|timeout", re.I)


def _lambda_db_setting(fn: LambdaFunction) -> Route | None:
    """The value of a database-looking variable as the host, when no URL or PGHOST-style
    variable is there: a CloudFormation `!Ref DbEndpoint` arrives as its parameter's
    name, which a [[servers]] entry's hosts can then name."""
    for var in fn.env:
        if var.value and _LAMBDA_DB_NAME.search(var.name) and not _NOT_A_HOST.search(var.name):
            return Route(host=var.value, source=replace(var.source, key=var.name))
    return None


def _pooler_pairs(topo: Topology) -> None:
    """Which (database, user) pools each pooler will open, from its clients' routes."""
    behind: dict[str, list[Client]] = {}  # pooler id -> its clients, in order: built once
    for c in topo.clients:
        if c.target_kind == "pooler" and c.target_id is not None:
            behind.setdefault(c.target_id, []).append(c)
    for p in topo.poolers:
        pairs: list[tuple[str, str]] = []
        for c in behind.get(p.id, ()):
            routes = [pool.route for pool in c.pools if pool.route is not None] or [c.route]
            for r in routes:
                if r is None or (r.dbname is None and r.user is None):
                    continue
                # a part the URL leaves out is one unknown name: one pool, not none
                pair = (r.dbname or "*", r.user or "*")
                if pair not in pairs:
                    pairs.append(pair)
        p.pairs = pairs
        if not pairs and p.kind == "pgbouncer" and p.databases and all(
                d.name == "*" for d in p.databases):
            topo.notices.append(
                f"{p.id}: [databases] holds only the * fallback and no client names the "
                "database and user it connects as: assumed one (database, user) pair, "
                "one pool (each further pair a client uses opens another)")


def _merge_suppressions(topo: Topology, found: dict[str, dict[int, list[str]]]) -> None:
    for path, lines in found.items():
        target = topo.line_suppressions.setdefault(path, {})
        for line, codes in lines.items():
            target.setdefault(line, []).extend(codes)


def problem(path: str, line: int | None, message: str, program: str = "pool-advisor"
            ) -> ConfigProblem:
    return ConfigProblem(location=Location(path=path, line=line), message=message,
                         program=program)
