"""PostgreSQL and PgBouncer run by operators and charts, read from their resources.

Each number is a Term whose Source is the resource's line (or, for rendered Helm
output, the values-file line traced by advisor.read.render; see `field_source`). Field
paths and defaults were checked against the operators' own sources, named in the
docstring of the module that reads each:

- cnpg: CloudNativePG `Cluster` and `Pooler`, and the Secrets the operator makes;
- zalando: the Zalando operator's `postgresql` and its connection poolers, and Secrets;
- crunchy: Crunchy PGO v5 `PostgresCluster` and its pgBouncer proxy, and Secrets; also
  the Percona Operator for PostgreSQL v2's copy of it (`upstream.pgv2.percona.com`) and
  its `PerconaPGCluster`, which that operator turns into one (percona: what it changes);
- bitnami: the Bitnami postgresql chart's StatefulSets and the ConfigMaps they mount;
- containers: plain PostgreSQL and PgBouncer containers configured by command line or
  environment (postgres -c, the Bitnami pgbouncer image, edoburu/pgbouncer);
- common: what they share (the context a read fills, Terms and Sources at a field,
  settings from a parameters map, versions, quantities, Servers, made Secrets).

This module dispatches each resource to its reader.

Traffic to read-only services (-ro, -repl, -replicas, -read) is routed to a
`standby` Server standing for the replicas that serve it; `-r` (CloudNativePG, any
instance) also goes to the replicas' Server, which overstates the load per instance
(the primary takes a share too): the notices say so.
"""

from __future__ import annotations

from pathlib import Path

from advisor.guard import guarded
from advisor.model import ConfigProblem, Location, Term
from advisor.read.fs import Root
from advisor.read.sources.k8s import K8sObject
from advisor.read.sources.operators.bitnami import bitnami_postgresql
from advisor.read.sources.operators.cnpg import CNPG_API, cnpg_cluster, cnpg_pooler, cnpg_secrets
from advisor.read.sources.operators.common import MadeSecret, OperatorEntities, ReadContext
from advisor.read.sources.operators.crunchy import crunchy_cluster, crunchy_secrets, pgo_clusters
from advisor.read.sources.operators.zalando import ZALANDO_API, zalando_cluster, zalando_secrets

# PostgreSQL operators' cluster resources that are not read: said, never a silent "no
# PostgreSQL server found" (audit E: Percona's pg-db chart exited 0 so; its
# PerconaPGCluster is read since, with crunchy)
NOT_READ_OPERATORS = {
    ("SGCluster", "stackgres.io"): "StackGres",
    ("SGShardedCluster", "stackgres.io"): "StackGres",
    ("Kubegres", "kubegres.reactive-tech.io"): "Kubegres",
    ("Postgres", "kubedb.com"): "KubeDB",
    ("Pgcluster", "crunchydata.com"): "the Crunchy PostgreSQL Operator v4",
}


def operator_entities(objects: list[K8sObject], *, version_default: int = 15,
                      root: Root | None = None, default_namespace: str = "default",
                      guard: list[ConfigProblem] | None = None,
                      declared_version: Term | None = None) -> OperatorEntities:
    """Servers, poolers and service names of every operator resource (and Bitnami
    postgresql StatefulSet) among `objects`. `root` lets postgresql.conf text held in
    ConfigMaps follow includes; without it includes are not followed.
    `declared_version`: the PostgreSQL major the user declared (--pg-version, the
    configuration's pg-version), None when none was."""
    out = OperatorEntities()
    ctx = ReadContext(objects, version_default,
                      root or Root(Path("/nonexistent-pool-advisor")), out,
                      declared_version=declared_version)
    ctx.default_ns = default_namespace  # where an object without metadata.namespace lives
    # `guard`: where a crash reading one resource goes (advisor.guard), so that the
    # others are still read; without it exceptions propagate (tests).
    def each(fn, obj: K8sObject | None = None) -> None:
        if guard is None:
            fn()
        else:
            guarded(guard, obj.path if obj else "<operator resources>", fn, None,
                    "reading this object", obj.line if obj else None)

    pgo = {id(o) for o in pgo_clusters(objects, ctx.default_ns)}
    for obj in objects:
        if obj.kind == "Cluster" and obj.api_version.startswith(CNPG_API):
            each(lambda o=obj: cnpg_cluster(ctx, o), obj)
        elif obj.kind == "postgresql" and obj.api_version.startswith(ZALANDO_API):
            each(lambda o=obj: zalando_cluster(ctx, o), obj)
        elif id(obj) in pgo:
            each(lambda o=obj: crunchy_cluster(ctx, o), obj)
        elif (obj.kind, obj.api_version.rpartition("/")[0]) in NOT_READ_OPERATORS:
            what = NOT_READ_OPERATORS[(obj.kind, obj.api_version.rpartition("/")[0])]
            # a finding (PA901, warning), not a notice: "no PostgreSQL server found" and
            # exit 0 beside a cluster the repository deploys was a silent zero (StackGres'
            # and Kubegres' examples)
            out.problems.append(ConfigProblem(
                location=Location(path=obj.path, line=obj.line),
                message=f"{obj.ref} is a PostgreSQL cluster of {what}, which this tool does "
                        "not read: its servers and poolers are in no budget, and a client "
                        "of it links to nothing (declare it: [[servers]] with its hosts and "
                        "max_connections)"))
    for obj in objects:
        if obj.kind == "Pooler" and obj.api_version.startswith(CNPG_API):
            each(lambda o=obj: cnpg_pooler(ctx, o), obj)
    each(lambda: bitnami_postgresql(ctx))
    return out


def operator_secrets(objects: list[K8sObject], default_namespace: str = "default"
                     ) -> list[MadeSecret]:
    """The connection Secrets CloudNativePG, Crunchy PGO (and the Percona operator) and
    the Zalando operator create for the clusters among `objects`, with the keys they write:

    - CloudNativePG `<cluster>-app` (user and database of bootstrap initdb, default
      app/app) and `<cluster>-superuser` (postgres, dbname `*`): username, user,
      dbname, host `<cluster>-rw`, port 5432, uri and jdbc-uri at `<host>.<ns>`,
      fqdn-uri and fqdn-jdbc-uri at `<host>.<ns>.svc.cluster.local`.
    - Crunchy `<cluster>-pguser-<user>` per spec.users entry (default: user and
      database named like the cluster): user, dbname (first database), host
      `<cluster>-primary.<ns>.svc`, port, uri, jdbc-uri; with a pgBouncer proxy also
      pgbouncer-host `<cluster>-pgbouncer.<ns>.svc`, pgbouncer-port (proxy.pgBouncer.port,
      default 5432), pgbouncer-uri, pgbouncer-jdbc-uri. The Percona operator's the same,
      for its PostgresCluster and PerconaPGCluster (module percona: which users, and
      users[].secretName for the Secret's name).
    - Zalando `<user>.<cluster>.credentials.postgresql.acid.zalan.do` per spec.users
      entry and postgres: username (the operator writes no host)."""
    out: list[MadeSecret] = []
    pgo = {id(o) for o in pgo_clusters(objects, default_namespace)}
    for obj in objects:
        ns = obj.namespace or default_namespace
        if obj.kind == "Cluster" and obj.api_version.startswith(CNPG_API):
            out += cnpg_secrets(obj, ns)
        elif id(obj) in pgo:
            out += crunchy_secrets(obj, ns)
        elif obj.kind == "postgresql" and obj.api_version.startswith(ZALANDO_API):
            out += zalando_secrets(obj)
    return out
