"""Crunchy PGO v5 `PostgresCluster` resources, their pgBouncer proxy, and the Secrets the
operator makes.

- Crunchy PGO v5 (github.com/CrunchyData/postgres-operator,
  pkg/apis/postgres-operator.crunchydata.com/v1beta1/pgbouncer_types.go at commit
  edd100f7, internal/pgbouncer/config.go at c09468ce): `PostgresCluster` spec.postgresVersion,
  spec.instances[].replicas (default 1 each; one pod of all is the primary),
  spec.patroni.dynamicConfiguration.postgresql.parameters and, over them, spec.config
  .parameters (map of IntOrString, v5.8.5 and v6: internal/controller/postgrescluster/
  postgres.go generatePostgresParameters at v6.0.3), spec.proxy.pgBouncer
  .replicas (default 1), .config.global (map[string]string over PgBouncer's
  defaults), .config.databases (replaces the default `* = host=<cluster>-primary`),
  .config.users. Services `<cluster>-primary`, `<cluster>-replicas`,
  `<cluster>-pgbouncer`.

- The Percona Operator for PostgreSQL v2 (github.com/percona/percona-postgresql-operator
  at adafb34f, operator version 3.1.0 in percona/version/version.txt) runs a fork of PGO
  v5 over a copy of its CRD, `PostgresCluster` of `upstream.pgv2.percona.com/v1beta1`,
  read here as Crunchy's; its own `PerconaPGCluster` (`pgv2.percona.com/v2`) is turned
  into the upstream PostgresCluster of the same name and namespace
  (pkg/apis/pgv2.percona.com/v2/perconapgcluster_types.go ToCrunchy, called by
  percona/controller/pgcluster/controller.go Reconcile after cr.Default()), which
  copies postgresVersion, port, patroni, config, instances (replicas default 1) and
  proxy.pgBouncer (replicas, config, image, port) unchanged: they are read here at the
  same paths. What Percona adds or changes (module `percona`): a pgBouncer of
  `replicas: 0` is no pgBouncer at all; a PerconaPGCluster of crVersion < 2.9.0 gets one
  though it names none; PgBouncer's version in Percona's image tags; users reserved,
  added and Secrets renamed; its Services are `expose`, `exposeReplicas` and
  `proxy.pgBouncer.expose`. Like PGO, it writes no max_connections
  (internal/postgres/parameters.go NewParameters): Patroni's default 100.
"""

from __future__ import annotations

import re

from advisor.facts.patroni import patroni_floors, patroni_sessions
from advisor.model import BouncerVersion, Pooler, PoolerDatabase, PoolerUser, Setting, Source, Term
from advisor.read.sources.k8s import K8sObject, get
from advisor.read.sources.operators.common import (
    MadeSecret,
    ReadContext,
    add_server,
    bouncer_parameter_settings,
    bouncer_setting,
    bouncer_version,
    cpu_term,
    entity_id,
    host_forms,
    int_term,
    jdbc_uri,
    location_at,
    made_secret,
    memory_term,
    pg_parameter_settings,
    pg_uri,
    pooler_surge,
    source_at,
    split_instances,
    version_term,
)
from advisor.read.sources.operators.percona import (
    PERCONA_UPSTREAM_API,
    percona_bouncer,
    percona_bouncer_version,
    percona_cr,
    percona_run,
    percona_users,
    pmm_notice,
)

CRUNCHY_API = "postgres-operator.crunchydata.com/"
# The API groups of PGO's PostgresCluster: Crunchy's, and Percona's copy of it
PGO_APIS = (CRUNCHY_API, PERCONA_UPSTREAM_API)
PGO_INI = ("(internal/pgbouncer/config.go clusterINI; postgres.go postgresqlUser "
           "_crunchypgbouncer, schema pgbouncer)")
PGO_AUTH = {"auth_user": "_crunchypgbouncer",
            "auth_query": "SELECT username, password from pgbouncer.get_auth($1)"}


# --- Crunchy ---------------------------------------------------------------------------


def pgo_cluster(obj: K8sObject) -> bool:
    """A cluster resource read here: PGO's PostgresCluster (Crunchy's group or Percona's
    copy) or Percona's PerconaPGCluster."""
    return (obj.kind == "PostgresCluster" and obj.api_version.startswith(PGO_APIS)) \
        or percona_cr(obj)


def pgo_clusters(objects: list[K8sObject], default_ns: str) -> list[K8sObject]:
    """The PGO clusters among `objects`, without the upstream PostgresCluster the Percona
    operator makes of a PerconaPGCluster also there (same name and namespace: a
    cluster's objects read live, or dumped): that cluster once, as the PerconaPGCluster."""
    percona = {(o.namespace or default_ns, o.name) for o in objects if percona_cr(o)}
    return [o for o in objects if pgo_cluster(o) and not (
        o.kind == "PostgresCluster" and o.api_version.startswith(PERCONA_UPSTREAM_API)
        and (o.namespace or default_ns, o.name) in percona)]


def crunchy_cluster(ctx: ReadContext, obj: K8sObject) -> None:
    """A PGO PostgresCluster (Crunchy's or Percona's copy) or a PerconaPGCluster: its
    servers, and its pgBouncer as a pooler. The PerconaPGCluster's ids are `percona:` and
    `percona-pooler:`, the PostgresClusters' `crunchy:` and `crunchy-pooler:`."""
    percona = percona_run(obj)
    prefix, who = ("percona", "Percona operator") if percona_cr(obj) else ("crunchy", "PGO")
    version = version_term(obj, ("spec", "postgresVersion"), ctx.version_default,
                           "spec.postgresVersion missing")
    # PGO generatePostgresParameters (postgres.go, v5.8.5 on): spec.config.parameters
    # over spec.patroni.dynamicConfiguration, the result written to Patroni's DCS, whose
    # validation decides (advisor.facts.patroni)
    settings = pg_parameter_settings(
        ctx, obj, ("spec", "patroni", "dynamicConfiguration", "postgresql", "parameters"),
        int(version.value))
    settings |= pg_parameter_settings(ctx, obj, ("spec", "config", "parameters"),
                                      int(version.value))
    settings, notices = patroni_floors(settings, f"{prefix}: {obj.ref}")
    ctx.out.notices.extend(notices)
    sets = get(obj.body, "spec", "instances")
    sets = sets if isinstance(sets, list) and sets else [{}]
    counts = [int_term(obj, f"instances[{get(s, 'name') or i}].replicas",
                       ("spec", "instances", i, "replicas"), 1,
                       f"{who} instances[].replicas default") for i, s in enumerate(sets)]
    total_value = sum(t.value for t in counts)
    first = counts[0].source if len(counts) == 1 else Source(
        path=obj.path, line=location_at(obj, "spec", "instances").line, key="spec.instances",
        default=" + ".join(t.show() for t in counts))
    total = Term(label="instances", value=total_value, source=first)
    primary_n, standby_n = split_instances(obj, total)
    memory = memory_term(obj, ("spec", "instances", 0, "resources", "limits", "memory"))
    cpu = cpu_term(obj, ("spec", "instances", 0, "resources"))
    ident = entity_id(prefix, obj)
    # PGO's (and Percona's) instances run Patroni: its own sessions hold slots on each
    held = [patroni_sessions()]
    add_server(ctx, obj, ident, obj.name, version=version, settings=settings,
               instances=primary_n, memory=memory, cpu=cpu, hosts=[f"{obj.name}-primary"],
               held=held)
    replica_id = ident
    if standby_n is not None:
        replica_id = f"{ident}/replicas"
        add_server(ctx, obj, replica_id, f"{obj.name} replicas", version=version,
                   settings=settings, instances=standby_n, memory=memory, cpu=cpu,
                   hosts=[f"{obj.name}-replicas"], role="standby", primary_id=ident,
                   held=held)
    del replica_id
    if percona and (pmm := pmm_notice(obj)) is not None:
        ctx.out.notices.append(pmm)
    # Percona: replicas 0 is no pgBouncer, and an old crVersion has one unasked (percona)
    bouncer, added = percona_bouncer(obj) if percona else (
        get(obj.body, "spec", "proxy", "pgBouncer"), None)
    if isinstance(bouncer, dict):
        base = ("spec", "proxy", "pgBouncer")
        version_b = (percona_bouncer_version if percona else bouncer_version)(
            obj, (*base, "image"))
        if not percona and version_b.assumed and get(obj.body, *base, "image") is None:
            version_b = pgo_bouncer_version(ctx.objects) or version_b
        pooler_settings = bouncer_parameter_settings(
            ctx, obj, (*base, "config", "global"), version_b,
            strings_only="PGO proxy.pgBouncer.config.global")
        # PGO internal/pgbouncer/config.go clusterINI writes auth_user and auth_query
        # under config.global (which overrides them); no auth_dbname: the lookups run in
        # each client's own database (advisor.facts.pgbouncer auth_lookup)
        for key, raw in PGO_AUTH.items():
            if key not in pooler_settings:
                setting = bouncer_setting(key, raw, Source.default_of(
                    f"PGO pgbouncer.ini {PGO_INI}", key=key), version_b)
                if setting is not None:
                    pooler_settings[key] = setting
        databases = _crunchy_databases(ctx, obj, (*base, "config", "databases"))
        users = _crunchy_users(ctx, obj, (*base, "config", "users"))
        name = f"{obj.name}-pgbouncer"
        pid = f"{prefix}-pooler:{obj.namespace + '/' if obj.namespace else ''}{name}"
        replicas = int_term(obj, "PgBouncer pods", (*base, "replicas"), 1,
                            added or f"{who} proxy.pgBouncer.replicas default")
        # config.databases replaces the `*` entry to the primary (PGO pgbouncer
        # config.go): where each entry's host leads decides the server (linking, from the
        # hosts), unless an entry names none
        named = get(obj.body, *base, "config", "databases")
        server_id = None if isinstance(named, dict) and named and all(
            db.host for db in databases) else ident
        ctx.out.poolers.append(Pooler(
            id=pid, name=name, namespace=obj.namespace, replicas=replicas,
            surge=pooler_surge(obj, replicas, f"{who}'s pgBouncer Deployment is "
                               "RollingUpdate with maxUnavailable 0 and no maxSurge"),
            version=version_b, settings=pooler_settings, databases=databases, users=users,
            server_id=server_id,
            location=location_at(obj, *base) if added is None else location_at(obj, "spec"),
            hosts=host_forms(name, obj.namespace or ctx.default_ns)))
        ctx.services([name], obj.namespace, "pooler", pid)
    ctx.out.claimed.append(obj.ref)


# The PgBouncer image PGO runs when proxy.pgBouncer.image is unset: its manager's
# RELATED_IMAGE_PGBOUNCER (config/manager/manager.yaml; from 6.0 the image-pgbouncer tag
# of config/components/images-by-tag), per PGO release, newest first: (release, PgBouncer,
# where read). Tags v5.7.9, v5.8.5-v5.8.9, v6.0.0-v6.0.3; 5.8.0-5.8.4 from the manager.yaml
# commits naming those operator images (eaa2aa2d9, d7d2a1d15, bb6d201c2, 56ccaf9a1,
# a032a33b5). Before 5.8.0 the main branch shipped 1.22 from "updated for the 5.6 release"
# (de3879256) and 1.23 from 83c46e1a8 until 5.8: at least 1.22 (a floor).
_PGO_BOUNCER: tuple[tuple[tuple[int, ...], tuple[int, int], bool, str], ...] = (
    ((6, 0, 1), (1, 25), False, "v6.0.1 images-by-tag crunchy-pgbouncer:ubi9-1.25-2610"),
    ((6, 0, 0), (1, 24), False, "v6.0.0 images-by-tag crunchy-pgbouncer:ubi9-1.24-2550"),
    ((5, 8, 7), (1, 25), False, "v5.8.7 manager.yaml crunchy-pgbouncer:ubi9-1.25-2550"),
    ((5, 8, 0), (1, 24), False, "5.8.0 manager.yaml (eaa2aa2d9) crunchy-pgbouncer:"
                                "ubi9-1.24-2513; 1.24 through v5.8.6"),
    ((5, 7, 9), (1, 24), False, "v5.7.9 manager.yaml crunchy-pgbouncer:ubi8-1.24-2534"),
    ((5, 6, 0), (1, 22), True, "manager.yaml 'updated for the 5.6 release' (de3879256) "
                               "crunchy-pgbouncer:ubi8-1.22-1, 1.23 from 83c46e1a8 until 5.8"),
)


def pgo_release(objects: list[K8sObject]) -> tuple[tuple[int, ...], Source] | None:
    """The PGO release the repository installs: the tag of an OCIRepository of its
    `pgo` chart, a HelmRelease's `pgo` chart version (the chart's version is the
    operator's), or the tag of a postgres-operator image (`ubi9-5.8.5-0`)."""
    for o in objects:
        found: object = None
        keys: tuple[str, ...] = ()
        if o.kind == "OCIRepository" and str(get(o.body, "spec", "url") or "").rstrip(
                "/").endswith("crunchydata/pgo"):
            keys = ("spec", "ref", "tag")
        elif o.kind == "HelmRelease" and get(o.body, "spec", "chart", "spec", "chart") == "pgo":
            keys = ("spec", "chart", "spec", "version")
        found = get(o.body, *keys) if keys else None
        match = re.fullmatch(r"v?(\d{1,4})\.(\d{1,4})\.(\d{1,4})", str(found or "").strip())
        if match:
            return tuple(map(int, match.groups())), source_at(o, *keys)
    from advisor.read.workloads import workload_shape

    for o in objects:
        if o.kind != "Deployment":
            continue
        # the shape the workload reader takes (kept by the parse cache): no tree built
        shape = workload_shape(o)
        for c in shape.containers if shape is not None else ():
            match = re.search(r"/postgres-operator:(?:ubi\d+-)?(\d{1,4})\.(\d{1,4})\.(\d{1,4})",
                              c.container.image)
            if match:
                return tuple(map(int, match.groups())), c.container.source
    return None


def pgo_bouncer_version(objects: list[K8sObject]) -> BouncerVersion | None:
    """PgBouncer's version in the image the installed PGO runs for a pgBouncer proxy
    that names none; None when the release is not found or is older than those known."""
    found = pgo_release(objects)
    if found is None:
        return None
    release, where = found
    for first, (major, minor), floor, read in _PGO_BOUNCER:
        if release >= first:
            shown = ".".join(map(str, release))
            return BouncerVersion(major=major, minor=minor, floor=floor, source=Source(
                path=where.path, line=where.line, key=where.key,
                default=f"{'at least ' if floor else ''}the image PGO {shown} runs: {read}"))
    return None


def _crunchy_databases(ctx: ReadContext, obj: K8sObject, keys: tuple[str | int, ...]
                       ) -> list[PoolerDatabase]:
    from advisor.read.sources.pgbouncer_ini import parse_connstr

    found = get(obj.body, *keys)
    if not isinstance(found, dict) or not found:
        return [PoolerDatabase(name="*", host=f"{obj.name}-primary", port=5432,
                               location=location_at(obj, *keys[:-1]))]
    out: list[PoolerDatabase] = []
    for name, connstr in found.items():
        pairs, bad = parse_connstr(str(connstr))
        if bad:
            ctx.problem(obj, (*keys, str(name)), f"PgBouncer cannot parse the connection "
                        f"string of database {name!r}", fatal=True, program="PgBouncer")
        values = dict(pairs)
        src = source_at(obj, *keys, str(name))

        def term(key: str, label: str, values: dict[str, str] = values, src: Source = src
                 ) -> Term | None:
            try:
                return Term(label=label, value=int(values[key]), source=src)
            except (KeyError, ValueError):
                return None

        port = values.get("port")
        out.append(PoolerDatabase(
            name=str(name), host=values.get("host"),
            port=int(port) if port and port.isdigit() else None, dbname=values.get("dbname"),
            user=values.get("user"), pool_size=term("pool_size", "pool_size"),
            reserve_pool_size=term("reserve_pool", "reserve_pool")
            or term("reserve_pool_size", "reserve_pool_size"),
            max_db_connections=term("max_db_connections", "max_db_connections"),
            location=location_at(obj, *keys, str(name))))
    return out


def _crunchy_users(ctx: ReadContext, obj: K8sObject, keys: tuple[str | int, ...]
                   ) -> list[PoolerUser]:
    """config.users: name -> "pool_mode=... max_user_connections=..." ([users] lines)."""
    from advisor.read.sources.pgbouncer_ini import parse_connstr

    found = get(obj.body, *keys)
    out: list[PoolerUser] = []
    if not isinstance(found, dict):
        return out
    for name, line in found.items():
        pairs, bad = parse_connstr(str(line))
        src = source_at(obj, *keys, str(name))
        if bad:
            ctx.problem(obj, (*keys, str(name)), f"PgBouncer cannot parse the settings of "
                        f"user {name!r}", fatal=True, program="PgBouncer")
        values = dict(pairs)
        mode = values.get("pool_mode")

        def term(key: str, values: dict[str, str] = values, src: Source = src) -> Term | None:
            try:
                return Term(label=key, value=int(values[key]), source=src)
            except (KeyError, ValueError):
                return None

        out.append(PoolerUser(
            name=str(name), location=location_at(obj, *keys, str(name)),
            pool_mode=Setting(name="pool_mode", raw=mode, value=mode, source=src)
            if mode else None,
            pool_size=term("pool_size"), max_user_connections=term("max_user_connections")))
    return out


# --- Secrets the operator creates --------------------------------------------------------

CRUNCHY_SECRETS_WHO = "Crunchy PGO (generatePostgresUserSecret)"
PERCONA_SECRETS_WHO = ("Percona operator (internal/controller/postgrescluster/postgres.go "
                       "generatePostgresUserSecret)")


def crunchy_secrets(obj: K8sObject, ns: str) -> list[MadeSecret]:
    """`<cluster>-pguser-<user>` per user (module percona: the users a PerconaPGCluster
    gets, and the name users[].secretName gives under the Percona operator)."""
    percona = percona_run(obj)
    users = percona_users(obj) if percona_cr(obj) else get(obj.body, "spec", "users")
    entries = [u for u in users if isinstance(u, dict) and u.get("name")] \
        if isinstance(users, list) and users else [{"name": obj.name, "databases": [obj.name]}]
    bouncer = percona_bouncer(obj)[0] if percona else get(obj.body, "spec", "proxy",
                                                           "pgBouncer")
    host = f"{obj.name}-primary.{ns}.svc"
    out = []
    for entry in entries:
        user = str(entry["name"])
        secret = f"{obj.name}-pguser-{user}"
        if percona and isinstance(entry.get("secretName"), str) and entry["secretName"]:
            secret = entry["secretName"]
        dbs = entry.get("databases")
        db = str(dbs[0]) if isinstance(dbs, list) and dbs else None
        data = {"user": user, "host": host, "port": "5432"}
        if db is not None:
            data |= {"dbname": db, "uri": pg_uri(user, host, "5432", db),
                     "jdbc-uri": jdbc_uri(user, host, "5432", db)}
        if isinstance(bouncer, dict):
            bhost = f"{obj.name}-pgbouncer.{ns}.svc"
            bport = str(bouncer.get("port") or 5432)
            data |= {"pgbouncer-host": bhost, "pgbouncer-port": bport}
            if db is not None:
                data |= {"pgbouncer-uri": pg_uri(user, bhost, bport, db),
                         "pgbouncer-jdbc-uri": jdbc_uri(user, bhost, bport, db,
                                                        "&prepareThreshold=0")}
        out.append(made_secret(obj, secret, data,
                               PERCONA_SECRETS_WHO if percona else CRUNCHY_SECRETS_WHO))
    return out
