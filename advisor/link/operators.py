"""What PostgreSQL operators make: their servers and poolers (CloudNativePG, Zalando,
Crunchy, Percona, Bitnami's chart), the connection Secrets they create, and the route of a
container that takes its connection from one of those Secrets."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.link.hosts import addressable
from advisor.link.inputs import Inputs
from advisor.link.servers import pg_version
from advisor.model import (
    Container,
    EnvVar,
    Route,
    Topology,
)
from advisor.read.sources.k8s import K8sObject
from advisor.read.workloads import ConfigIndex, ConfigMapData

# Kinds advisor.read.sources.operators reads (CloudNativePG Cluster/Pooler, Zalando
# postgresql, Crunchy and Percona PostgresCluster, PerconaPGCluster) or names in a notice
# (its NOT_READ_OPERATORS: StackGres, Kubegres, KubeDB, PGO v4), and the label of
# Bitnami's postgresql StatefulSets: without them the module is not imported at all.
OPERATOR_KINDS = frozenset({"Cluster", "Pooler", "postgresql", "PostgresCluster",
                            "PerconaPGCluster", "SGCluster", "SGShardedCluster", "Kubegres",
                            "Postgres", "Pgcluster"})


def may_have_operator_entities(objects: list[K8sObject]) -> bool:
    """Whether any object is an operator's resource (or a Bitnami PostgreSQL
    StatefulSet): without one, there is nothing for the operator readers."""
    return any(o.kind in OPERATOR_KINDS or (
        o.kind == "StatefulSet" and o.labels.get("app.kubernetes.io/name") == "postgresql")
        for o in objects)


def operator_secret_index(objects: list[K8sObject], default_ns: str,
                          likely: bool | None = None) -> ConfigIndex:
    """Connection Secrets the operators create (CloudNativePG `<cluster>-app`, Crunchy
    `<cluster>-pguser-<user>`, Zalando credentials), indexed as Secrets so that env
    secretKeyRef/envFrom read their host, database and user. `likely`: what
    may_have_operator_entities(objects) said, when the caller asked it already."""
    if not (may_have_operator_entities(objects) if likely is None else likely):
        return {}
    from advisor.read.sources.operators import operator_secrets
    from advisor.read.workloads import ConfigMapData

    return {("secret", made.namespace, made.name): ConfigMapData(
        made.obj, dict(made.data), secret=True, made_by=made.source)
        for made in operator_secrets(objects, default_ns)}


# Keys of an operator Secret that say where to connect (a password alone does not).
_CONNECTION_KEYS = frozenset({"uri", "jdbc-uri", "fqdn-uri", "fqdn-jdbc-uri", "host",
                              "pgbouncer-uri", "pgbouncer-jdbc-uri", "pgbouncer-host"})


def _made_secret_refs(c: Container, made: ConfigIndex
                      ) -> Iterator[tuple[EnvVar, str, str, ConfigMapData]]:
    """(variable, Secret name, key, the Secret's data) for each env variable of the
    container taken from a Secret an operator makes."""
    by_secret = {name: data for (_kind, _ns, name), data in made.items()}
    for var in c.env:
        ref = var.from_ref or ""
        if not ref.startswith("secret:") or "/" not in ref:
            continue
        name, key = ref[len("secret:"):].split("/", 1)
        data = by_secret.get(name)
        if data is not None:
            yield var, name, key, data


def operator_secret_route(c: Container, made: ConfigIndex) -> Route | None:
    """The route of a container that takes its connection from an operator-made Secret
    under names no URL reader knows (envFrom: `uri`, `host`; KC_DB_URL_HOST from key
    `host`): the Secret's own uri, through PgBouncer when the pgbouncer-* keys are
    the ones used."""
    from advisor.read.apps.urls import route_from_url

    for var, name, key, data in _made_secret_refs(c, made):
        if key not in _CONNECTION_KEYS:
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


# Keys of an operator Secret that are a role's credentials and not where to connect.
_CREDENTIAL_KEYS = frozenset({"password", "user", "username", "dbname"})


def operator_credentials_route(c: Container, made: ConfigIndex) -> tuple[Route, str] | None:
    """The route of a container that takes only credentials from an operator-made
    Secret (PGPASSWORD from CloudNativePG's `<cluster>-app`/password) and whose host is
    in nothing read here (a chart not rendered, a file not in the repository): the role
    and its password exist on that Secret's cluster only, so it connects there, at the
    Secret's own host (a pooler in front of it is not known). With the sentence that
    says so. None when it takes no credential key of such a Secret."""
    from advisor.read.apps.urls import route_from_url

    for var, name, key, data in _made_secret_refs(c, made):
        key = key.split(" (", 1)[0]  # "password (not in repository)": none is written
        if data.made_by is None or key not in _CREDENTIAL_KEYS:
            continue
        host = data.data.get("host")
        if not host:
            continue
        user = data.data.get("user") or data.data.get("username")
        url = f"postgresql://{user + '@' if user else ''}{host}:" \
              f"{data.data.get('port') or '5432'}/{data.data.get('dbname') or ''}"
        route = route_from_url(url, var.source)
        if route is None:
            continue
        made_at = data.made_by.path and f" ({data.made_by.path}:{data.made_by.line})"
        why = (f"{var.name} ({var.source.label()}) is the {key} of "
               f"{data.made_by.default or 'Secret ' + name}{made_at or ''}, and no host it "
               f"connects to is read: the role is on that cluster only, so it is counted at "
               f"the Secret's own host {host} (were it to go through a pooler, that pooler "
               "does not count it)")
        return route, why
    return None


def add_operator_entities(inputs: Inputs, topo: Topology, host_map: dict, default_ns: str,
                          likely: bool | None = None) -> set[str]:
    """Servers and poolers from operator resources; returns the refs of the objects
    they stand for. `likely`: as for operator_secret_index."""
    if not (may_have_operator_entities(inputs.objects) if likely is None else likely):
        return set()
    from advisor.read.sources.operators import operator_entities

    assumed = pg_version(inputs, None)
    declared = assumed if inputs.pg_version_override or inputs.settings.pg_version else None
    found = operator_entities(inputs.objects, root=inputs.root,
                              version_default=assumed.int_value,
                              default_namespace=default_ns, guard=topo.problems,
                              declared_version=declared)
    topo.servers.extend(found.servers)
    topo.poolers.extend(found.poolers)
    topo.problems.extend(found.problems)
    topo.notices.extend(found.notices)
    hosts = set(addressable([host.lower() for host in found.services]))
    for host, target in found.services.items():
        if host.lower() in hosts:  # a bare name: looked up with the pod's namespace
            host_map.setdefault(host.lower(), target)
    return set(found.claimed)
