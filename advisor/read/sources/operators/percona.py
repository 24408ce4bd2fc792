"""What the Percona Operator for PostgreSQL v2 does differently from Crunchy PGO v5 with
the clusters it reconciles; the reading itself is advisor.read.sources.operators.crunchy's.

Upstream: github.com/percona/percona-postgresql-operator at adafb34f (operator version
3.1.0, percona/version/version.txt). The operator runs a fork of PGO v5 over a copy of
its CRD, `PostgresCluster` of `upstream.pgv2.percona.com/v1beta1`; a `PerconaPGCluster`
(`pgv2.percona.com/v2`) is defaulted (pkg/apis/pgv2.percona.com/v2/perconapgcluster_types.go
PerconaPGCluster.Default) and turned into the upstream PostgresCluster of the same name
(ToCrunchy), both from percona/controller/pgcluster/controller.go Reconcile. Defaults
named here, each with where it is decided:

- crVersion: when missing, the operator's own version (Default: version.Version(),
  3.1.0 here); the version gates the two defaults below.
- pgBouncer added: Default gives a PerconaPGCluster of crVersion < 2.9.0 a
  `proxy.pgBouncer` though it names none (`cr.CompareVersion("2.9.0") < 0 ||
  cr.Spec.Proxy.IsSet()`, K8SPG-901); PGBouncerSpec.ToCrunchy then calls
  PGBouncerPodSpec.Default (pkg/apis/upstream.pgv2.percona.com/v1beta1/pgbouncer_types.go):
  replicas 1, port 5432.
- pgBouncer removed: `replicas: 0` is no pgBouncer at all, for both kinds
  (upstream v1beta1 postgrescluster_types.go PostgresProxySpec.PGBouncerEnabled,
  K8SPG-1062): internal/controller/postgrescluster/pgbouncer.go deletes its ConfigMap,
  Secret, Service and Deployment, and postgres.go generatePostgresUserSecret writes no
  pgbouncer-* keys.
- PgBouncer's version: the operator has no default image (deploy/operator.yaml sets no
  RELATED_IMAGE_PGBOUNCER; internal/config/config.go PGBouncerContainerImage), so it is
  the image's. Percona's tags name it after `pgbouncer`
  (`percona/percona-postgresql-operator:2.6.0-ppg16.8-pgbouncer1.24.0`, releases 2.4-2.7,
  where the leading 2.6 is the operator's) or are it (`percona/percona-pgbouncer:1.25.1-1`,
  2.8 on); `…:2.3.0-ppg16-pgbouncer` and `perconalab/…:main-pgbouncer18` (18 is
  PostgreSQL's) name none (e2e-tests/release_versions at each tag).
- Users: ToCrunchy drops the reserved `monitor` and `logicalrepl` from spec.users; with
  `pmm.enabled` it gives spec.users as written plus `monitor`, and when spec.users is
  empty also the default user and database named like the cluster; with
  spec.logicalReplicas (crVersion >= 3.1.0, LogicalReplicasEnabled) it adds
  `logicalrepl`. An empty result leaves PGO's default (the cluster's name,
  internal/controller/postgrescluster/postgres.go reconcilePostgresUserSecrets).
- Secret names: `users[].secretName` replaces `<cluster>-pguser-<user>` (postgres.go
  generatePostgresUserSecret, K8SPG-359), for both kinds.
- Services: a PerconaPGCluster's spec.expose, spec.exposeReplicas and
  spec.proxy.pgBouncer.expose become the PostgresCluster's service, replicaService and
  proxy.pgBouncer.service (ToCrunchy, ServiceExpose.ToCrunchy); their names are PGO's
  `<cluster>-primary`, `<cluster>-replicas`, `<cluster>-pgbouncer`
  (internal/naming/names.go).

Unchanged from PGO, so read as Crunchy's: postgresVersion, instances[].replicas
(default 1), patroni.dynamicConfiguration and config.parameters (no max_connections is
written, internal/postgres/parameters.go NewParameters: Patroni's 100), proxy.pgBouncer
.config (global, databases, users: internal/pgbouncer/config.go clusterINI, auth_user
_crunchypgbouncer), and the pgBouncer Deployment's RollingUpdate with maxUnavailable 0 and
no maxSurge (internal/controller/postgrescluster/pgbouncer.go generatePGBouncerDeployment).
"""

from __future__ import annotations

import re
from typing import Any

from advisor.model import BouncerVersion
from advisor.read.sources.k8s import K8sObject, get
from advisor.read.sources.operators.common import bouncer_version, source_at

PERCONA_API = "pgv2.percona.com/"  # PerconaPGCluster
PERCONA_UPSTREAM_API = "upstream.pgv2.percona.com/"  # Percona's PostgresCluster
OPERATOR_VERSION = (3, 1, 0)  # a missing crVersion: the operator's own (version.txt)
RESERVED_USERS = ("monitor", "logicalrepl")  # UserMonitoring, UserLogicalReplication
PERCONA_BOUNCER_ADDED = (
    "Percona operator: PerconaPGCluster.Default gives a crVersion < 2.9.0 a "
    "proxy.pgBouncer (perconapgcluster_types.go), PGBouncerPodSpec.Default 1 replica")


def percona_cr(obj: K8sObject) -> bool:
    """A PerconaPGCluster (pgv2.percona.com/v2)."""
    return obj.kind == "PerconaPGCluster" and obj.api_version.startswith(PERCONA_API)


def percona_upstream(obj: K8sObject) -> bool:
    """Percona's copy of PGO's PostgresCluster (upstream.pgv2.percona.com/v1beta1)."""
    return obj.kind == "PostgresCluster" and obj.api_version.startswith(PERCONA_UPSTREAM_API)


def percona_run(obj: K8sObject) -> bool:
    """A cluster resource the Percona operator reconciles (either kind)."""
    return percona_cr(obj) or percona_upstream(obj)


def cr_version(obj: K8sObject) -> tuple[int, ...]:
    """spec.crVersion as numbers; the operator's own when missing or unreadable."""
    raw = get(obj.body, "spec", "crVersion")
    match = re.fullmatch(r"v?(\d{1,9})(?:\.(\d{1,9}))?(?:\.(\d{1,9}))?", str(raw).strip()) \
        if raw is not None else None
    if match is None:
        return OPERATOR_VERSION
    return tuple(int(g or 0) for g in match.groups())


def percona_bouncer(obj: K8sObject) -> tuple[dict[str, Any] | None, str | None]:
    """The pgBouncer spec the operator reconciles for `obj` (None: no pgBouncer), and
    the default that added it when the resource names none."""
    bouncer = get(obj.body, "spec", "proxy", "pgBouncer")
    added = None
    if not isinstance(bouncer, dict) and percona_cr(obj) and cr_version(obj) < (2, 9, 0):
        bouncer, added = {}, PERCONA_BOUNCER_ADDED
    if not isinstance(bouncer, dict):
        return None, None
    if str(bouncer.get("replicas")).strip() == "0":  # PGBouncerEnabled
        return None, None
    return bouncer, added


def percona_bouncer_version(obj: K8sObject, keys: tuple[str | int, ...]) -> BouncerVersion:
    """PgBouncer's version from a Percona image tag: after `pgbouncer` in the operator's
    combined tags, none when that names none (never the operator's own leading version),
    else the tag itself (percona/percona-pgbouncer:1.25.1-1)."""
    image = get(obj.body, *keys)
    if isinstance(image, str):
        tag = image.rsplit("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
        if "pgbouncer" in tag.lower():
            match = re.search(r"pgbouncer-?v?(\d{1,9})\.(\d{1,9})", tag, re.IGNORECASE)
            if match is None:
                return BouncerVersion()
            return BouncerVersion(major=int(match.group(1)), minor=int(match.group(2)),
                                  source=source_at(obj, *keys))
    return bouncer_version(obj, keys)


def percona_users(obj: K8sObject) -> list[dict[str, Any]]:
    """spec.users of the PostgresCluster a PerconaPGCluster becomes (ToCrunchy); an empty
    list leaves PGO's default user."""
    written = get(obj.body, "spec", "users")
    written = [u for u in written if isinstance(u, dict) and u.get("name")] \
        if isinstance(written, list) else []
    if get(obj.body, "spec", "pmm", "enabled") is True:
        users = [*written, {"name": "monitor"}]  # appended to spec.users as written
        if not written:
            users.append({"name": obj.name, "databases": [obj.name]})
    else:
        users = [u for u in written if str(u["name"]) not in RESERVED_USERS]
    logical = get(obj.body, "spec", "logicalReplicas")
    if isinstance(logical, list) and logical and cr_version(obj) >= (3, 1, 0):
        users.append({"name": "logicalrepl"})
    by_name = {str(u["name"]): u for u in users}  # one Secret per user name
    return list(by_name.values())


def pmm_notice(obj: K8sObject) -> str | None:
    """With pmm.enabled, the PMM agent beside each instance connects as `monitor`, a
    SUPERUSER (ToCrunchy, perconapgcluster_types.go:664-668; percona/pmm/pmm.go:250-274
    `pmm-admin add postgresql --username=monitor`): its sessions take ordinary slots, as
    Patroni's do, but how many it holds is PMM's, not read here. Said, never a 0."""
    if not (percona_cr(obj) and get(obj.body, "spec", "pmm", "enabled") is True):
        return None
    at = source_at(obj, "spec", "pmm", "enabled").label()
    return (f"percona: {obj.ref}: pmm.enabled ({at}) runs a PMM agent beside each "
            "instance that connects as `monitor`, a SUPERUSER the operator adds "
            "(perconapgcluster_types.go:664-668 at adafb34f): its sessions take ordinary "
            "slots, but how many it holds is not read, so they are not subtracted from the "
            "usable slots (declare headroom for them)")


# The Services a PerconaPGCluster asks for: (keys, of the replicas) as PGO's service,
# replicaService and proxy.pgBouncer.service (advisor.link.hosts operator_exposures).
PERCONA_SERVICES = ((("spec", "expose"), False), (("spec", "exposeReplicas"), True),
                    (("spec", "proxy", "pgBouncer", "expose"), False))
