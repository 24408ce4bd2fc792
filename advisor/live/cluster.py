"""Read the deployment topology from a live Kubernetes cluster (`check --cluster`).

For teams whose truth is the cluster, not the repository. The official kubernetes
client reads the user's kubeconfig (and context); only list calls are made, for the
kinds the topology uses: workloads, HPAs, KEDA ScaledObjects, ConfigMaps, Services and
the PostgreSQL operators' resources. Secrets are never read: a value that lives in a
Secret is reported as unknown, as for a repository that does not hold it.

Each object is written out as YAML (what `kubectl get -o yaml` shows, without status
and managedFields) and read by the same manifest reader as files, so every number
carries a source like `cluster:prod/shop/ConfigMap/checkout-config:12`: the line in
that object's YAML.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from advisor.model import ConfigProblem
from advisor.read.sources.k8s import K8sObject, k8s_objects

if TYPE_CHECKING:
    from advisor.config.settings import Settings
    from advisor.engine.options import CheckOptions
    from advisor.model import CheckResult, Topology
    from advisor.rules import Registry


class Resource(Struct, frozen=True):
    kind: str
    group: str  # "" for the core API
    version: str
    plural: str
    optional: bool = False  # a CRD: absent on most clusters, skipped quietly

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        ns = f"/namespaces/{namespace}" if namespace else ""
        return f"{base}{ns}/{self.plural}"


RESOURCES = (
    Resource("Deployment", "apps", "v1", "deployments"),
    Resource("StatefulSet", "apps", "v1", "statefulsets"),
    Resource("DaemonSet", "apps", "v1", "daemonsets"),
    Resource("CronJob", "batch", "v1", "cronjobs"),
    Resource("HorizontalPodAutoscaler", "autoscaling", "v2", "horizontalpodautoscalers"),
    Resource("ConfigMap", "", "v1", "configmaps"),
    Resource("Service", "", "v1", "services"),
    Resource("ScaledObject", "keda.sh", "v1alpha1", "scaledobjects", optional=True),
    Resource("Rollout", "argoproj.io", "v1alpha1", "rollouts", optional=True),
    Resource("Cluster", "postgresql.cnpg.io", "v1", "clusters", optional=True),
    Resource("Pooler", "postgresql.cnpg.io", "v1", "poolers", optional=True),
    Resource("postgresql", "acid.zalan.do", "v1", "postgresqls", optional=True),
    Resource(
        "PostgresCluster",
        "postgres-operator.crunchydata.com",
        "v1beta1",
        "postgresclusters",
        optional=True,
    ),
    # the Percona operator's: a PerconaPGCluster and the PostgresCluster it becomes (read
    # once, as the PerconaPGCluster: operators.crunchy pgo_clusters)
    Resource("PerconaPGCluster", "pgv2.percona.com", "v2", "perconapgclusters", optional=True),
    Resource(
        "PostgresCluster",
        "upstream.pgv2.percona.com",
        "v1beta1",
        "postgresclusters",
        optional=True,
    ),
)


class ClusterError(Exception):
    """The cluster cannot be read (no kubeconfig, unreachable, not allowed)."""


class ClusterRead(Struct):
    label: str  # "cluster:<context>"
    objects: list[K8sObject] = field(default_factory=list)
    problems: list[ConfigProblem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    forbidden: list[str] = field(default_factory=list)  # resources listing refused (401/403)


def read_cluster(
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    namespaces: list[str] | None = None,
    timeout: float = 20.0,
) -> ClusterRead:
    try:
        from kubernetes import config
        from kubernetes.client.exceptions import ApiException
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise ClusterError(
            "--cluster needs the kubernetes client: pip install 'pool-advisor[cluster]'"
        ) from None
    try:
        api_client = config.new_client_from_config(config_file=kubeconfig, context=context)
        if context is None:
            _, active = config.list_kube_config_contexts(config_file=kubeconfig)
            context = (active or {}).get("name") or "current"
    except (ConfigException, OSError) as exc:
        raise ClusterError(f"cannot load kubeconfig: {_short(exc)}") from None
    except Exception as exc:  # a malformed file: YAML errors, wrong types, missing keys
        raise ClusterError(f"cannot load kubeconfig: malformed ({type(exc).__name__}: "
                           f"{_short(exc)})") from None
    label = f"cluster:{context}"
    read = ClusterRead(label=label)
    try:
        for resource in RESOURCES:
            for ns in namespaces or [None]:
                items = _list(api_client, resource, ns, timeout, read, ApiException)
                for item in items:
                    _add(read, resource, item, label)
    except ClusterError:
        raise
    except Exception as exc:  # urllib3 connection errors and the like
        raise ClusterError(f"cannot reach the cluster of {label}: {_short(exc)}") from None
    finally:
        api_client.close()
    return read


_CORE_CALLS = {
    "configmaps": ("list_config_map_for_all_namespaces", "list_namespaced_config_map"),
    "services": ("list_service_for_all_namespaces", "list_namespaced_service"),
}


def _raw(api_client: Any, resource: Resource, namespace: str | None, timeout: float) -> Any:
    """One list call, the body kept as JSON (no model classes: CRDs have none, and the
    generated models of client versions differ)."""
    from kubernetes import client

    kw: dict[str, Any] = {"_preload_content": False, "_request_timeout": timeout}
    if not resource.group:
        every, namespaced = _CORE_CALLS[resource.plural]
        api = client.CoreV1Api(api_client)
        if namespace:
            return getattr(api, namespaced)(namespace, **kw)
        return getattr(api, every)(**kw)
    custom = client.CustomObjectsApi(api_client)
    if namespace:
        return custom.list_namespaced_custom_object(
            resource.group, resource.version, namespace, resource.plural, **kw
        )
    return custom.list_cluster_custom_object(
        resource.group, resource.version, resource.plural, **kw
    )


def _list(
    api_client: Any,
    resource: Resource,
    namespace: str | None,
    timeout: float,
    read: ClusterRead,
    api_exception: type[Exception],
) -> list[dict[str, Any]]:
    import json

    try:
        response = _raw(api_client, resource, namespace, timeout)
        data = json.loads(response.data)
    except api_exception as exc:
        status = getattr(exc, "status", None)
        if status == 404:
            if not resource.optional:
                read.notices.append(
                    f"{read.label}: the API has no {resource.kind} "
                    f"({resource.api_version}); skipped"
                )
            return []
        if status in (401, 403):
            read.forbidden.append(resource.plural)
            read.notices.append(
                f"{read.label}: not allowed to list {resource.plural} "
                f"({resource.api_version}): HTTP {status}; the budget may miss them"
            )
            return []
        raise ClusterError(
            f"listing {resource.plural} failed: HTTP {status} {getattr(exc, 'reason', '')}"
        ) from None
    except ValueError:
        raise ClusterError(f"listing {resource.plural}: the answer is not JSON") from None
    items = data.get("items") if isinstance(data, dict) else None
    return [i for i in items or [] if isinstance(i, dict)]


def _clean(item: dict[str, Any], resource: Resource) -> dict[str, Any]:
    """The object as `kubectl get -o yaml` shows it, less what only adds noise."""
    body = {"apiVersion": resource.api_version, "kind": resource.kind}
    body.update({k: v for k, v in item.items() if k not in ("status", "apiVersion", "kind")})
    meta = dict(body.get("metadata") or {})
    for k in ("managedFields", "resourceVersion", "uid", "generation", "creationTimestamp"):
        meta.pop(k, None)
    annotations = dict(meta.get("annotations") or {})
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    body["metadata"] = meta
    return body


def _add(read: ClusterRead, resource: Resource, item: dict[str, Any], label: str) -> None:
    from ruamel.yaml import YAML

    body = _clean(item, resource)
    meta = body["metadata"]
    ns = meta.get("namespace") or "_"
    shown = f"{label}/{ns}/{resource.kind}/{meta.get('name', '?')}"
    buf = io.StringIO()
    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.dump(body, buf)
    objects, problems = k8s_objects(buf.getvalue(), shown)
    read.objects += objects
    read.problems += problems


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def cluster_topology(read: ClusterRead, settings: Settings, pg_version: int | None) -> Topology:
    """The topology of what the cluster runs, built exactly as for files."""
    from advisor.link.inputs import Inputs
    from advisor.link.topology import build_topology
    from advisor.read.fs import Root

    inputs = Inputs(
        root=Root.of(Path.cwd()),  # only for application sources the configuration names
        objects=read.objects,
        settings=settings,
        refused=frozenset(read.forbidden),
        pg_version_override=pg_version,
        app_dirs={w.name: w.source for w in settings.workloads if w.source},
    )
    topo = build_topology(inputs)
    topo.problems[:0] = read.problems + _unreadable_settings(read, topo)
    topo.notices[:0] = read.notices
    return topo


def _unreadable_settings(read: ClusterRead, topo: Topology) -> list[ConfigProblem]:
    """Servers run from plain workloads keep postgresql.conf in ConfigMaps: when those
    could not be listed, their settings are unknown, and the defaults the budget would
    show are not theirs. Said as an error per server, never passed off as a fit."""
    if "configmaps" not in read.forbidden:
        return []
    return [ConfigProblem(
        location=s.location, fatal=True, program="Kubernetes API",
        message=(f"{s.name}: settings unknown: listing ConfigMaps was refused, so its "
                 "postgresql.conf (max_connections, memory) could not be read; the PostgreSQL "
                 "defaults in its budget are placeholders, not its settings"))
        for s in topo.servers if s.kind == "workload"]


def run_cluster_check(
    options: CheckOptions,
    registry: Registry,
    *,
    kubeconfig: str | None,
    context: str | None,
    namespaces: list[str] | None,
) -> CheckResult:
    """`check --cluster`: the rules over what the cluster runs. ClusterError -> exit 2."""
    from advisor.engine.check import project_settings
    from advisor.engine.evaluate import evaluate

    settings = project_settings([], options)
    read = read_cluster(kubeconfig=kubeconfig, context=context, namespaces=namespaces)
    topo = cluster_topology(read, settings, options.pg_version)
    return evaluate(topo, settings, options, registry, [read.label])
