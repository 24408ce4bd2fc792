"""PostgreSQL and PgBouncer run by operators and charts, read from their resources.

Each number is a Term whose Source is the resource's line (or, for rendered Helm
output, the values-file line traced by advisor.read.render; see `field_source`). Field
paths and defaults were checked against the operators' own sources:

- CloudNativePG (github.com/cloudnative-pg/cloudnative-pg, api/v1/cluster_types.go,
  api/v1/pooler_types.go at commit c4f9ce3f; docs/src/connection_pooling.md;
  pkg/management/pgbouncer/config/strings.go at e4ac655d):
  `Cluster` spec.instances (default 1), spec.postgresql.parameters
  (map[string]string: numbers must be strings), spec.imageName (the tag gives the
  major version), spec.resources.limits. Services `<cluster>-rw` (primary), `-ro`
  (replicas), `-r` (any instance). `Pooler` spec.cluster.name, spec.instances
  (default 1), spec.type rw|ro|r (default rw), spec.pgbouncer.poolMode (default
  session), spec.pgbouncer.parameters (map[string]string); its Deployment and Service
  are named as the Pooler. pkg/management/pgbouncer/config/strings.go: the operator
  adds only log_stats and ignore_startup_parameters "extra_float_digits,options" to
  the user's parameters, so pool sizes are PgBouncer's defaults unless set.
- Zalando postgres-operator (github.com/zalando/postgres-operator,
  pkg/cluster/connection_pooler.go getConnectionPoolerEnvVars at commit 3de15d2b,
  pkg/util/constants/pooler.go at 3cb9b938, docs/reference/cluster_manifest.md and
  operator_parameters.md): `postgresql` (acid.zalan.do/v1) spec.numberOfInstances,
  spec.postgresql.version, spec.postgresql.parameters (map[string]string),
  spec.enableConnectionPooler / spec.connectionPooler (a non-empty section enables
  it), spec.enableReplicaConnectionPooler. Pooler: numberOfInstances (operator
  configuration default 2), mode (default transaction), maxDBConnections (default
  60). Per pooler pod the operator sets maxDBConn = maxDBConnections /
  numberOfInstances (integer division), default pool size = maxDBConn / 2, min pool
  size = default / 2, reserve = min, max client conn 10000, passed to the pooler image
  as CONNECTION_POOLER_* variables (that the image writes them to pgbouncer.ini as
  max_db_connections, default_pool_size, min_pool_size, reserve_pool_size and
  max_client_conn follows the variable names; the image's template itself was not
  read). Services `<cluster>` (master), `<cluster>-repl`, `<cluster>-pooler`,
  `<cluster>-pooler-repl`.
- Crunchy PGO v5 (github.com/CrunchyData/postgres-operator,
  pkg/apis/postgres-operator.crunchydata.com/v1beta1/pgbouncer_types.go at commit
  edd100f7, internal/pgbouncer/config.go at c09468ce): `PostgresCluster` spec.postgresVersion,
  spec.instances[].replicas (default 1 each; one pod of all is the primary),
  spec.patroni.dynamicConfiguration.postgresql.parameters, spec.proxy.pgBouncer
  .replicas (default 1), .config.global (map[string]string over PgBouncer's
  defaults), .config.databases (replaces the default `* = host=<cluster>-primary`),
  .config.users. Services `<cluster>-primary`, `<cluster>-replicas`,
  `<cluster>-pgbouncer`.
- Bitnami postgresql chart (github.com/bitnami/charts bitnami/postgresql,
  templates/_helpers.tpl postgresql.v1.primary.fullname / readReplica.fullname,
  templates/primary/configmap.yaml at e459d86e, primary/extended-configmap.yaml at
  4253372e, read/extended-configmap.yaml at 7587d195): StatefulSets `<fullname>`
  (or `<fullname>-primary` with architecture=replication) and `<fullname>-read`
  (readReplicas.replicaCount),
  ConfigMaps `<primary>-configuration` (key postgresql.conf, from
  primary.configuration) and `<sts>-extended-configuration` (key override.conf, from
  primary/readReplicas.extendedConfiguration). Recognised in rendered output (or
  the values-only objects advisor.read.render.helm builds) by the labels
  app.kubernetes.io/name=postgresql and app.kubernetes.io/component=primary|read;
  the ConfigMaps a StatefulSet mounts are the ones read.
- Bitnami pgbouncer image (github.com/bitnami/containers bitnami/pgbouncer/1/
  debian-12 rootfs/opt/bitnami/scripts/pgbouncer-env.sh at 043f89c8, and
  libpgbouncer.sh): each
  non-empty PGBOUNCER_* variable below becomes the [pgbouncer] key next to it; the
  image's own defaults: listen_port 6432, auth_type scram-sha-256,
  ignore_startup_parameters extra_float_digits; [databases] gets
  `$PGBOUNCER_DATABASE = host=$POSTGRESQL_HOST port=$POSTGRESQL_PORT`.

Traffic to read-only services (-ro, -repl, -replicas, -read) is routed to a
`standby` Server standing for the replicas that serve it; `-r` (CloudNativePG, any
instance) also goes to the replicas' Server, which overstates the load per instance
(the primary takes a share too): the notices say so.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from msgspec import field
from msgspec.structs import replace

from advisor.guard import guarded
from advisor.model import (
    BouncerVersion,
    ConfigProblem,
    EnvVar,
    Location,
    Pooler,
    PoolerDatabase,
    PoolerUser,
    Record,
    Server,
    Setting,
    Source,
    Term,
)
from advisor.read.fs import Root
from advisor.read.render import field_source, text_origin
from advisor.read.sources.k8s import K8sObject, block_offset, count_field, get

CNPG_API = "postgresql.cnpg.io/"
ZALANDO_API = "acid.zalan.do/"
CRUNCHY_API = "postgres-operator.crunchydata.com/"

# Bitnami pgbouncer image: variable -> pgbouncer.ini key (libpgbouncer.sh).
BITNAMI_PGBOUNCER_ENV: dict[str, str] = {
    "PGBOUNCER_PORT": "listen_port",
    "PGBOUNCER_LISTEN_ADDRESS": "listen_addr",
    "PGBOUNCER_AUTH_TYPE": "auth_type",
    "PGBOUNCER_AUTH_USER": "auth_user",
    "PGBOUNCER_AUTH_QUERY": "auth_query",
    "PGBOUNCER_STATS_USERS": "stats_users",
    "PGBOUNCER_POOL_MODE": "pool_mode",
    "PGBOUNCER_QUERY_WAIT_TIMEOUT": "query_wait_timeout",
    "PGBOUNCER_MAX_CLIENT_CONN": "max_client_conn",
    "PGBOUNCER_MAX_DB_CONNECTIONS": "max_db_connections",
    "PGBOUNCER_IDLE_TRANSACTION_TIMEOUT": "idle_transaction_timeout",
    "PGBOUNCER_SERVER_IDLE_TIMEOUT": "server_idle_timeout",
    "PGBOUNCER_SERVER_RESET_QUERY": "server_reset_query",
    "PGBOUNCER_DEFAULT_POOL_SIZE": "default_pool_size",
    "PGBOUNCER_MIN_POOL_SIZE": "min_pool_size",
    "PGBOUNCER_RESERVE_POOL_SIZE": "reserve_pool_size",
    "PGBOUNCER_RESERVE_POOL_TIMEOUT": "reserve_pool_timeout",
    "PGBOUNCER_IGNORE_STARTUP_PARAMETERS": "ignore_startup_parameters",
    "PGBOUNCER_LOG_CONNECTIONS": "log_connections",
    "PGBOUNCER_LOG_DISCONNECTIONS": "log_disconnections",
    "PGBOUNCER_LOG_POOLER_ERRORS": "log_pooler_errors",
    "PGBOUNCER_LOG_STATS": "log_stats",
    "PGBOUNCER_STATS_PERIOD": "stats_period",
    "PGBOUNCER_SERVER_ROUND_ROBIN": "server_round_robin",
    "PGBOUNCER_SERVER_FAST_CLOSE": "server_fast_close",
    "PGBOUNCER_MAX_PREPARED_STATEMENTS": "max_prepared_statements",
    "PGBOUNCER_APPLICATION_NAME_ADD_HOST": "application_name_add_host",
    "PGBOUNCER_SERVER_LIFETIME": "server_lifetime",
    "PGBOUNCER_SERVER_CONNECT_TIMEOUT": "server_connect_timeout",
    "PGBOUNCER_SERVER_LOGIN_RETRY": "server_login_retry",
    "PGBOUNCER_CLIENT_LOGIN_TIMEOUT": "client_login_timeout",
    "PGBOUNCER_AUTODB_IDLE_TIMEOUT": "autodb_idle_timeout",
    "PGBOUNCER_QUERY_TIMEOUT": "query_timeout",
    "PGBOUNCER_CLIENT_IDLE_TIMEOUT": "client_idle_timeout",
    "PGBOUNCER_CLIENT_TLS_SSLMODE": "client_tls_sslmode",
    "PGBOUNCER_SERVER_TLS_SSLMODE": "server_tls_sslmode",
}
BITNAMI_PGBOUNCER_DEFAULTS = {"listen_port": "6432", "auth_type": "scram-sha-256",
                              "ignore_startup_parameters": "extra_float_digits"}
BITNAMI_PGBOUNCER_WHO = "bitnami/pgbouncer image default (pgbouncer-env.sh)"

ZALANDO_POOLER_INSTANCES = 2  # operator configuration connection_pooler_number_of_instances
ZALANDO_MAX_DB_CONNECTIONS = 60  # constants.ConnectionPoolerMaxDBConnections
ZALANDO_MAX_CLIENT_CONN = 10000  # constants.ConnectionPoolerMaxClientConnections
ZALANDO_MODE = "transaction"  # constants.ConnectionPoolerDefaultMode


class OperatorEntities(Record, kw_only=True):
    servers: list[Server] = field(default_factory=list)
    poolers: list[Pooler] = field(default_factory=list)
    # hostname (name, name.ns, name.ns.svc, name.ns.svc.cluster.local) -> (kind, id)
    services: dict[str, tuple[str, str]] = field(default_factory=dict)
    problems: list[ConfigProblem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    claimed: list[str] = field(default_factory=list)  # K8sObject refs represented here


def operator_entities(objects: list[K8sObject], *, version_default: int = 15,
                      root: Root | None = None, default_namespace: str = "default",
                      guard: list[ConfigProblem] | None = None) -> OperatorEntities:
    """Servers, poolers and service names of every operator resource (and Bitnami
    postgresql StatefulSet) among `objects`. `root` lets postgresql.conf text held in
    ConfigMaps follow includes; without it includes are not followed."""
    out = OperatorEntities()
    ctx = _Ctx(objects, version_default, root or Root(Path("/nonexistent-pool-advisor")), out)
    ctx.default_ns = default_namespace  # where an object without metadata.namespace lives
    # `guard`: where a crash reading one resource goes (advisor.guard), so that the
    # others are still read; without it exceptions propagate (tests).
    def each(fn, obj: K8sObject | None = None) -> None:
        if guard is None:
            fn()
        else:
            guarded(guard, obj.path if obj else "<operator resources>", fn, None,
                    "reading this object", obj.line if obj else None)

    for obj in objects:
        if obj.kind == "Cluster" and obj.api_version.startswith(CNPG_API):
            each(lambda o=obj: _cnpg_cluster(ctx, o), obj)
        elif obj.kind == "postgresql" and obj.api_version.startswith(ZALANDO_API):
            each(lambda o=obj: _zalando(ctx, o), obj)
        elif obj.kind == "PostgresCluster" and obj.api_version.startswith(CRUNCHY_API):
            each(lambda o=obj: _crunchy(ctx, o), obj)
    for obj in objects:
        if obj.kind == "Pooler" and obj.api_version.startswith(CNPG_API):
            each(lambda o=obj: _cnpg_pooler(ctx, o), obj)
    each(lambda: _bitnami_postgresql(ctx))
    return out


class _Ctx:
    def __init__(self, objects: list[K8sObject], version_default: int, root: Root,
                 out: OperatorEntities) -> None:
        self.objects = objects
        self.version_default = version_default
        self.root = root
        self.out = out
        self.cnpg: dict[tuple[str | None, str], tuple[Server, Server | None]] = {}
        self.default_ns = "default"

    def problem(self, obj: K8sObject, keys: tuple[str | int, ...], message: str,
                fatal: bool = False, program: str = "pool-advisor") -> None:
        loc = _loc(obj, *keys)
        self.out.problems.append(ConfigProblem(location=loc, message=message, fatal=fatal,
                                               program=program))

    def services(self, names: list[str], namespace: str | None, kind: str, ident: str) -> None:
        for name in names:
            for host in host_forms(name, namespace or self.default_ns):
                self.out.services[host] = (kind, ident)


def host_forms(name: str, namespace: str | None) -> list[str]:
    """The names a pod may use for a Service: name, name.ns, name.ns.svc and the FQDN."""
    if not namespace:
        return [name]
    return [name, f"{name}.{namespace}", f"{name}.{namespace}.svc",
            f"{name}.{namespace}.svc.cluster.local"]


def _src(obj: K8sObject, *keys: str | int) -> Source:
    return field_source(obj, *keys)


def _loc(obj: K8sObject, *keys: str | int) -> Location:
    s = _src(obj, *keys)
    return Location(path=s.path or obj.path, line=s.line)


def _term(obj: K8sObject, label: str, keys: tuple[str | int, ...], default: float,
          who: str) -> Term:
    """The integer at `keys`, or `default` with `who` as its named default."""
    raw = get(obj.body, *keys)
    if raw is None:
        return Term(label=label, value=default, source=Source.default_of(who, key=keys[-1]
                                                                          if keys else None))
    try:
        value = int(str(raw))
    except ValueError:
        return Term(label=label, value=default, source=Source.default_of(
            f"{who} ({'.'.join(map(str, keys))}={raw!r} is not a number)"))
    count_field(obj, keys, value)  # 400 digits or -3: the operator's schema refuses it
    return Term(label=label, value=value, source=_src(obj, *keys))


def _ident(prefix: str, obj: K8sObject, suffix: str = "") -> str:
    ns = f"{obj.namespace}/" if obj.namespace else ""
    return f"{prefix}:{ns}{obj.name}{suffix}"


# --- PostgreSQL settings from a parameters map --------------------------------------


def pg_parameter_settings(ctx: _Ctx | None, obj: K8sObject, keys: tuple[str | int, ...],
                          version: int, *, strings_only: str | None = None,
                          problems: list[ConfigProblem] | None = None) -> dict[str, Setting]:
    """postgresql.conf settings from a CR's parameter map (name -> value), each at its
    own line, converted to base units as PostgreSQL would (advisor.facts.pg_guc)."""
    from advisor.facts import pg_guc as pgguc

    found = get(obj.body, *keys)
    sink = problems if problems is not None else (ctx.out.problems if ctx else [])
    settings: dict[str, Setting] = {}
    if not isinstance(found, dict):
        return settings
    params = pgguc.pg_params(version)
    for name, raw in found.items():
        name = str(name)
        at = _loc(obj, *keys, name)
        if strings_only and not isinstance(raw, str):
            sink.append(ConfigProblem(
                location=at, program="Kubernetes", fatal=True,
                message=f"{strings_only} needs string values: `{name}: {raw}` is refused by "
                "the API server (write it quoted)"))
        text = str(raw).lower() if isinstance(raw, bool) else str(raw)
        param = params.get(name.lower())
        if param is None:
            if "." not in name:
                exact = pgguc.has_table(version)  # else the nearest major's table
                sink.append(ConfigProblem(
                    location=at, program="PostgreSQL" if exact else "pool-advisor",
                    fatal=exact, message=f'unrecognized configuration parameter "{name}"'
                    + ("" if exact else f" (checked against PostgreSQL "
                                        f"{pgguc.table_major(version)}'s parameters)")))
                if exact and (note := pgguc.version_note(name, version)) is not None:
                    sink.append(ConfigProblem(
                        location=at, program="pool-advisor", fatal=False,
                        message=f'"{name}" was {note}: not a PostgreSQL {version} parameter'))
            continue
        parsed = pgguc.parse_value(param, name, text, version)
        if not parsed.ok:
            sink.append(ConfigProblem(location=at, program="PostgreSQL", fatal=True,
                                      message=parsed.message()))
            continue
        settings[param.name.lower()] = Setting(
            name=param.name.lower(), raw=text, value=parsed.value, unit=param.unit,
            source=_src(obj, *keys, name))
    return settings


def _version_term(obj: K8sObject, keys: tuple[str | int, ...], default: int, who: str
                  ) -> Term:
    from advisor.facts.pg_version import declared_major

    raw = get(obj.body, *keys)
    major = declared_major(raw)
    if major is not None:
        return Term(label="PostgreSQL version", value=major, source=_src(obj, *keys))
    if raw is not None:
        who = f"{'.'.join(map(str, keys))} {raw!r} is not a PostgreSQL major"
    return Term(label="PostgreSQL version", value=default,
                source=Source.default_of(f"assumed PostgreSQL {default}: {who}"))


def _image_version(obj: K8sObject, keys: tuple[str | int, ...], default: int, who: str) -> Term:
    from advisor.facts.pg_version import image_major

    image = get(obj.body, *keys)
    if isinstance(image, str):
        major = image_major(image)
        if major is not None:
            return Term(label="PostgreSQL version", value=major, source=_src(obj, *keys))
        who = f"image {image} names no PostgreSQL version"
    return Term(label="PostgreSQL version", value=default,
                source=Source.default_of(f"assumed PostgreSQL {default}: {who}"))


_QUANTITY = re.compile(r"^\s*([0-9.]+)\s*([KMGTPE]i?|[kmunEPTGM]?)\s*$")
_FACTORS = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
            "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "Pi": 1024**5,
            "Ei": 1024**6, "m": 1e-3, "u": 1e-6, "n": 1e-9}


def quantity(text: Any) -> float | None:
    """A Kubernetes resource quantity ("2Gi", "500m", "1.5") as a number."""
    match = _QUANTITY.match(str(text))
    if not match:
        return None
    try:
        value = float(match.group(1)) * _FACTORS[match.group(2)]
    except ValueError:  # `1.2.3`: the pattern admits it, Kubernetes does not
        return None
    return value if math.isfinite(value) else None


def _memory_term(obj: K8sObject, keys: tuple[str | int, ...]) -> Term | None:
    raw = get(obj.body, *keys)
    value = quantity(raw) if raw is not None else None
    if value is None:
        if raw is not None:  # `1.2.3Gi`: the resource's schema refuses it
            _not_a_quantity(obj, keys, raw)
        return None
    return Term(label="memory limit", value=value, source=_src(obj, *keys))


def _not_a_quantity(obj: K8sObject, keys: tuple[str | int, ...], raw: Any) -> None:
    from advisor.model import WrongType
    from advisor.read.sources.k8s import type_name

    raise WrongType(_loc(obj, *keys), f"{obj.ref} {'.'.join(map(str, keys))}: "
                    f"{type_name(raw)} is not a Kubernetes quantity; Kubernetes refuses this "
                    "object, so it is not read")


def _cpu_term(obj: K8sObject, resources: tuple[str | int, ...]) -> Term | None:
    """The cores the database pods get: limits.cpu, else requests.cpu (PA111)."""
    for kind in ("limits", "requests"):
        raw = get(obj.body, *resources, kind, "cpu")
        value = quantity(raw) if raw is not None else None
        if raw is not None and value is None:
            _not_a_quantity(obj, (*resources, kind, "cpu"), raw)
        if value is not None and value > 0:
            return Term(label=f"CPU {kind[:-1]}", value=value,
                        source=_src(obj, *resources, kind, "cpu"))
    return None


def _server(ctx: _Ctx, obj: K8sObject, ident: str, name: str, *, version: Term,
            settings: dict[str, Setting], instances: Term, memory: Term | None,
            cpu: Term | None = None,
            hosts: list[str], role: str = "primary", primary_id: str | None = None) -> Server:
    server = Server(id=ident, name=name, kind="operator", namespace=obj.namespace,
                    version=version, settings=dict(settings), instances=instances,
                    memory_limit=memory, cpu_limit=cpu, location=_loc(obj), role=role,
                    primary_id=primary_id,
                    hosts=[h for n in hosts
                           for h in host_forms(n, obj.namespace or ctx.default_ns)])
    ctx.out.servers.append(server)
    ctx.services(hosts, obj.namespace, "server", ident)
    return server


def _split_instances(obj: K8sObject, total: Term) -> tuple[Term, Term | None]:
    """One primary and total - 1 standbys (Terms keep the total's source)."""
    primary = Term(label="primary instance", value=1, source=total.source)
    if total.value <= 1:
        return primary, None
    return primary, Term(label=f"standby instances ({total.show()} - 1 primary)",
                         value=total.value - 1, source=total.source)


# --- CloudNativePG --------------------------------------------------------------------


def _cnpg_cluster(ctx: _Ctx, obj: K8sObject) -> None:
    version = _cnpg_version(ctx, obj)
    settings = pg_parameter_settings(ctx, obj, ("spec", "postgresql", "parameters"),
                                     int(version.value),
                                     strings_only="CloudNativePG spec.postgresql.parameters")
    total = _term(obj, "instances", ("spec", "instances"), 1,
                  "CloudNativePG spec.instances default")
    primary_n, standby_n = _split_instances(obj, total)
    memory = _memory_term(obj, ("spec", "resources", "limits", "memory"))
    cpu = _cpu_term(obj, ("spec", "resources"))
    ident = _ident("cnpg", obj)
    primary = _server(ctx, obj, ident, obj.name, version=version, settings=settings,
                      instances=primary_n, memory=memory, cpu=cpu, hosts=[f"{obj.name}-rw"])
    standby = None
    if standby_n is not None:
        standby = _server(ctx, obj, f"{ident}/replicas", f"{obj.name} replicas",
                          version=version, settings=settings, instances=standby_n,
                          memory=memory, cpu=cpu, hosts=[f"{obj.name}-ro", f"{obj.name}-r"],
                          role="standby", primary_id=ident)
        ctx.out.notices.append(
            f"cnpg: {obj.ref}: traffic to {obj.name}-ro is budgeted against the "
            f"{int(standby_n.value)} replicas; {obj.name}-r reaches every instance and is "
            "budgeted against the replicas too, which overstates the load per instance")
    else:
        ctx.services([f"{obj.name}-ro", f"{obj.name}-r"], obj.namespace, "server", ident)
        ctx.out.notices.append(f"cnpg: {obj.ref} has one instance: {obj.name}-ro has no "
                               f"replica behind it and {obj.name}-r reaches the primary")
    ctx.cnpg[(obj.namespace, obj.name)] = (primary, standby)
    ctx.out.claimed.append(obj.ref)


def _cnpg_version(ctx: _Ctx, obj: K8sObject) -> Term:
    major = get(obj.body, "spec", "imageCatalogRef", "major")
    if major is not None:
        return _version_term(obj, ("spec", "imageCatalogRef", "major"), ctx.version_default,
                             "image catalog major")
    return _image_version(obj, ("spec", "imageName"), ctx.version_default,
                          "spec.imageName not set; the operator's default image decides "
                          "(PostgreSQL 18 in CloudNativePG 1.30, versions.go DefaultImageName; "
                          "set --pg-version)")


def _cnpg_pooler(ctx: _Ctx, obj: K8sObject) -> None:
    cluster = get(obj.body, "spec", "cluster", "name")
    kind = str(get(obj.body, "spec", "type") or "rw")
    version = _bouncer_version(obj, ("spec", "template", "spec", "containers", 0, "image"))
    settings = bouncer_parameter_settings(
        ctx, obj, ("spec", "pgbouncer", "parameters"), version,
        strings_only="CloudNativePG spec.pgbouncer.parameters")
    mode = get(obj.body, "spec", "pgbouncer", "poolMode")
    settings["pool_mode"] = Setting(
        name="pool_mode", raw=str(mode or "session"), value=str(mode or "session"),
        source=_src(obj, "spec", "pgbouncer", "poolMode") if mode else
        Source.default_of("CloudNativePG spec.pgbouncer.poolMode default", key="pool_mode"))
    settings.setdefault("ignore_startup_parameters", Setting(
        name="ignore_startup_parameters", raw="extra_float_digits,options",
        value="extra_float_digits,options",
        source=Source.default_of("CloudNativePG operator (pgbouncer config strings.go)",
                                 key="ignore_startup_parameters")))
    replicas = _term(obj, "PgBouncer pods", ("spec", "instances"), 1,
                     "CloudNativePG Pooler spec.instances default")
    pair = ctx.cnpg.get((obj.namespace, str(cluster)))
    server_id = None
    if pair is None:
        ctx.out.notices.append(f"cnpg: {obj.ref} points at Cluster {cluster!r}, which is not "
                               "among the scanned resources")
    else:
        primary, standby = pair
        server_id = primary.id if kind == "rw" or standby is None else standby.id
    service = {"rw": "rw", "ro": "ro", "r": "r"}.get(kind, "rw")
    ident = _ident("cnpg-pooler", obj)
    pooler = Pooler(
        id=ident, name=obj.name, namespace=obj.namespace, replicas=replicas, version=version,
        settings=settings, server_id=server_id, location=_loc(obj),
        databases=[PoolerDatabase(name="*", host=f"{cluster}-{service}", port=5432,
                                  location=_loc(obj, "spec", "cluster", "name"))],
        hosts=host_forms(obj.name, obj.namespace or ctx.default_ns))
    ctx.out.poolers.append(pooler)
    ctx.services([obj.name], obj.namespace, "pooler", ident)
    ctx.out.claimed.append(obj.ref)


# --- PgBouncer settings -----------------------------------------------------------------


def _bouncer_version(obj: K8sObject, keys: tuple[str | int, ...]) -> BouncerVersion:
    image = get(obj.body, *keys)
    if isinstance(image, str):
        match = re.search(r":v?(\d+)\.(\d+)", image)
        if match:
            return BouncerVersion(major=int(match.group(1)), minor=int(match.group(2)),
                                  source=_src(obj, *keys))
    return BouncerVersion()


def bouncer_setting(name: str, raw: str, source: Source, version: BouncerVersion
                    ) -> Setting | None:
    """A [pgbouncer] setting converted as PgBouncer's setter would (advisor.facts.pgbouncer);
    None for a name this PgBouncer version does not have."""
    from advisor.facts.pgbouncer import params, parse_param_value

    spec = params(version).get(name)
    if spec is None:
        return None
    ok, value, unit = parse_param_value(spec[0], raw, version)
    if not ok:
        return None
    return Setting(name=name, raw=raw, value=value, unit=unit, source=source)


def bouncer_parameter_settings(ctx: _Ctx, obj: K8sObject, keys: tuple[str | int, ...],
                               version: BouncerVersion, *, strings_only: str | None = None
                               ) -> dict[str, Setting]:
    from advisor.facts.pgbouncer import params

    found = get(obj.body, *keys)
    settings: dict[str, Setting] = {}
    if not isinstance(found, dict):
        return settings
    for name, raw in found.items():
        name = str(name)
        if strings_only and not isinstance(raw, str):
            ctx.problem(obj, (*keys, name), f"{strings_only} needs string values: "
                        f"`{name}: {raw}` is refused by the API server (write it quoted)",
                        fatal=True, program="Kubernetes")
        setting = bouncer_setting(name, str(raw), _src(obj, *keys, name), version)
        if setting is None:
            known = name in params(version)
            ctx.problem(obj, (*keys, name), (
                f'invalid value "{raw}" for parameter {name}' if known else
                f"unknown PgBouncer {version.text} parameter {name!r}"), fatal=known,
                program="PgBouncer")
            continue
        settings[name] = setting
    return settings


def settings_from_bitnami_pgbouncer_env(env: tuple[EnvVar, ...]) -> dict[str, Setting]:
    """[pgbouncer] settings the Bitnami pgbouncer image writes from its environment
    (non-empty PGBOUNCER_* variables; empty ones are skipped as the image skips
    them), plus the image's own defaults where the variable is not set."""
    version = BouncerVersion()
    settings: dict[str, Setting] = {}
    for key, value in BITNAMI_PGBOUNCER_DEFAULTS.items():
        setting = bouncer_setting(key, value, Source.default_of(BITNAMI_PGBOUNCER_WHO, key=key),
                                  version)
        if setting is not None:
            settings[key] = setting
    for var in env:
        key = BITNAMI_PGBOUNCER_ENV.get(var.name)
        if key is None or var.secret or var.value is None or not var.value.strip():
            continue
        setting = bouncer_setting(key, var.value, var.source, version)
        if setting is not None:
            settings[key] = setting
    return settings


def bitnami_pgbouncer_databases(env: tuple[EnvVar, ...], location: Location
                                ) -> list[PoolerDatabase]:
    """The one [databases] entry the Bitnami image writes."""
    values = {v.name: v.value for v in env if v.value is not None and not v.secret}
    name = values.get("PGBOUNCER_DATABASE") or "postgres"
    host = values.get("POSTGRESQL_HOST") or "postgresql"
    try:
        port = int(values.get("POSTGRESQL_PORT") or 5432)
    except ValueError:
        port = 5432
    dbname = None if name == "*" else (values.get("POSTGRESQL_DATABASE") or name)
    return [PoolerDatabase(name=name, host=host, port=port, dbname=dbname, location=location)]


# --- Zalando -------------------------------------------------------------------------


def _zalando(ctx: _Ctx, obj: K8sObject) -> None:
    version = _version_term(obj, ("spec", "postgresql", "version"), ctx.version_default,
                            "spec.postgresql.version missing")
    settings = pg_parameter_settings(ctx, obj, ("spec", "postgresql", "parameters"),
                                     int(version.value),
                                     strings_only="Zalando spec.postgresql.parameters")
    total = _term(obj, "instances", ("spec", "numberOfInstances"), 1,
                  "Zalando spec.numberOfInstances missing")
    primary_n, standby_n = _split_instances(obj, total)
    memory = _memory_term(obj, ("spec", "resources", "limits", "memory"))
    cpu = _cpu_term(obj, ("spec", "resources"))
    ident = _ident("zalando", obj)
    _server(ctx, obj, ident, obj.name, version=version, settings=settings,
            instances=primary_n, memory=memory, cpu=cpu, hosts=[obj.name])
    replica_id = ident
    if standby_n is not None:
        replica_id = f"{ident}/replicas"
        _server(ctx, obj, replica_id, f"{obj.name} replicas", version=version,
                settings=settings, instances=standby_n, memory=memory, cpu=cpu,
                hosts=[f"{obj.name}-repl"], role="standby", primary_id=ident)
    else:
        ctx.services([f"{obj.name}-repl"], obj.namespace, "server", ident)
    ctx.out.notices.append(
        f"zalando: {obj.ref}: max_connections and the other parameters not set in "
        "spec.postgresql.parameters are PostgreSQL's defaults here; Spilo/Patroni may set "
        "its own, which pool-advisor has not verified")
    section = get(obj.body, "spec", "connectionPooler")
    enabled = get(obj.body, "spec", "enableConnectionPooler")
    master = enabled is True or (enabled is None and isinstance(section, dict) and bool(section))
    if master:
        _zalando_pooler(ctx, obj, f"{obj.name}-pooler", ident, obj.name)
    if get(obj.body, "spec", "enableReplicaConnectionPooler") is True:
        _zalando_pooler(ctx, obj, f"{obj.name}-pooler-repl", replica_id, f"{obj.name}-repl")
    ctx.out.claimed.append(obj.ref)


def _zalando_pooler(ctx: _Ctx, obj: K8sObject, name: str, server_id: str, target: str) -> None:
    base = ("spec", "connectionPooler")
    replicas = _term(obj, "pooler pods", (*base, "numberOfInstances"), ZALANDO_POOLER_INSTANCES,
                     "Zalando operator configuration connection_pooler_number_of_instances")
    replicas = replace(replicas, value=max(1, replicas.value))
    max_db = _term(obj, "maxDBConnections", (*base, "maxDBConnections"),
                   ZALANDO_MAX_DB_CONNECTIONS,
                   "Zalando operator connection_pooler_max_db_connections default")
    per_pod = int(max_db.value) // int(replicas.value)
    default_size = per_pod // 2
    min_size = default_size // 2
    how = (f"Zalando operator: maxDBConnections {int(max_db.value)} ({max_db.source.label()}) "
           f"// {int(replicas.value)} pooler pods = {per_pod} per pod")
    derived = Source(path=max_db.source.path, line=max_db.source.line, key="maxDBConnections",
                     default=how)
    mode_raw = get(obj.body, *base, "mode")
    version = BouncerVersion()
    values = {
        "max_db_connections": (str(per_pod), derived),
        "default_pool_size": (str(default_size), replace(
            derived, default=f"{how}; default pool size = {per_pod} // 2")),
        "min_pool_size": (str(min_size), replace(
            derived, default=f"{how}; min pool size = {default_size} // 2")),
        "reserve_pool_size": (str(min_size), replace(
            derived, default=f"{how}; reserve = min pool size {min_size}")),
        "max_client_conn": (str(ZALANDO_MAX_CLIENT_CONN), Source.default_of(
            "Zalando operator constant ConnectionPoolerMaxClientConnections",
            key="max_client_conn")),
        "pool_mode": (str(mode_raw or ZALANDO_MODE),
                      _src(obj, *base, "mode") if mode_raw else Source.default_of(
                          "Zalando operator connection_pooler_mode default", key="pool_mode")),
    }
    settings = {}
    for key, (raw, source) in values.items():
        setting = bouncer_setting(key, raw, source, version)
        if setting is not None:
            settings[key] = setting
    ident = f"zalando-pooler:{obj.namespace + '/' if obj.namespace else ''}{name}"
    ctx.out.poolers.append(Pooler(
        id=ident, name=name, namespace=obj.namespace, replicas=replicas, version=version,
        settings=settings, server_id=server_id, location=_loc(obj, *base)
        if get(obj.body, *base) is not None else _loc(obj, "spec", "enableConnectionPooler"),
        databases=[PoolerDatabase(name="*", host=target, port=5432, location=_loc(obj))],
        hosts=host_forms(name, obj.namespace or ctx.default_ns)))
    ctx.services([name], obj.namespace, "pooler", ident)


# --- Crunchy ---------------------------------------------------------------------------


def _crunchy(ctx: _Ctx, obj: K8sObject) -> None:
    version = _version_term(obj, ("spec", "postgresVersion"), ctx.version_default,
                            "spec.postgresVersion missing")
    settings = pg_parameter_settings(
        ctx, obj, ("spec", "patroni", "dynamicConfiguration", "postgresql", "parameters"),
        int(version.value))
    sets = get(obj.body, "spec", "instances")
    sets = sets if isinstance(sets, list) and sets else [{}]
    counts = [_term(obj, f"instances[{get(s, 'name') or i}].replicas",
                    ("spec", "instances", i, "replicas"), 1,
                    "PGO instances[].replicas default") for i, s in enumerate(sets)]
    total_value = sum(t.value for t in counts)
    first = counts[0].source if len(counts) == 1 else Source(
        path=obj.path, line=_loc(obj, "spec", "instances").line, key="spec.instances",
        default=" + ".join(t.show() for t in counts))
    total = Term(label="instances", value=total_value, source=first)
    primary_n, standby_n = _split_instances(obj, total)
    memory = _memory_term(obj, ("spec", "instances", 0, "resources", "limits", "memory"))
    cpu = _cpu_term(obj, ("spec", "instances", 0, "resources"))
    ident = _ident("crunchy", obj)
    _server(ctx, obj, ident, obj.name, version=version, settings=settings,
            instances=primary_n, memory=memory, cpu=cpu, hosts=[f"{obj.name}-primary"])
    replica_id = ident
    if standby_n is not None:
        replica_id = f"{ident}/replicas"
        _server(ctx, obj, replica_id, f"{obj.name} replicas", version=version,
                settings=settings, instances=standby_n, memory=memory, cpu=cpu,
                hosts=[f"{obj.name}-replicas"], role="standby", primary_id=ident)
    del replica_id
    bouncer = get(obj.body, "spec", "proxy", "pgBouncer")
    if isinstance(bouncer, dict):
        base = ("spec", "proxy", "pgBouncer")
        version_b = _bouncer_version(obj, (*base, "image"))
        pooler_settings = bouncer_parameter_settings(
            ctx, obj, (*base, "config", "global"), version_b,
            strings_only="PGO proxy.pgBouncer.config.global")
        databases = _crunchy_databases(ctx, obj, (*base, "config", "databases"))
        users = _crunchy_users(ctx, obj, (*base, "config", "users"))
        name = f"{obj.name}-pgbouncer"
        pid = f"crunchy-pooler:{obj.namespace + '/' if obj.namespace else ''}{name}"
        ctx.out.poolers.append(Pooler(
            id=pid, name=name, namespace=obj.namespace,
            replicas=_term(obj, "PgBouncer pods", (*base, "replicas"), 1,
                           "PGO proxy.pgBouncer.replicas default"),
            version=version_b, settings=pooler_settings, databases=databases, users=users,
            server_id=ident, location=_loc(obj, *base),
            hosts=host_forms(name, obj.namespace or ctx.default_ns)))
        ctx.services([name], obj.namespace, "pooler", pid)
    ctx.out.claimed.append(obj.ref)


def _crunchy_databases(ctx: _Ctx, obj: K8sObject, keys: tuple[str | int, ...]
                       ) -> list[PoolerDatabase]:
    from advisor.read.sources.pgbouncer_ini import parse_connstr

    found = get(obj.body, *keys)
    if not isinstance(found, dict) or not found:
        return [PoolerDatabase(name="*", host=f"{obj.name}-primary", port=5432,
                               location=_loc(obj, *keys[:-1]))]
    out: list[PoolerDatabase] = []
    for name, connstr in found.items():
        pairs, bad = parse_connstr(str(connstr))
        if bad:
            ctx.problem(obj, (*keys, str(name)), f"PgBouncer cannot parse the connection "
                        f"string of database {name!r}", fatal=True, program="PgBouncer")
        values = dict(pairs)
        src = _src(obj, *keys, str(name))

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
            location=_loc(obj, *keys, str(name))))
    return out


def _crunchy_users(ctx: _Ctx, obj: K8sObject, keys: tuple[str | int, ...]) -> list[PoolerUser]:
    """config.users: name -> "pool_mode=... max_user_connections=..." ([users] lines)."""
    from advisor.read.sources.pgbouncer_ini import parse_connstr

    found = get(obj.body, *keys)
    out: list[PoolerUser] = []
    if not isinstance(found, dict):
        return out
    for name, line in found.items():
        pairs, bad = parse_connstr(str(line))
        src = _src(obj, *keys, str(name))
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
            name=str(name), location=_loc(obj, *keys, str(name)),
            pool_mode=Setting(name="pool_mode", raw=mode, value=mode, source=src)
            if mode else None,
            pool_size=term("pool_size"), max_user_connections=term("max_user_connections")))
    return out


# --- Bitnami postgresql chart --------------------------------------------------------------


def _is_bitnami_postgresql(obj: K8sObject) -> bool:
    if obj.kind != "StatefulSet":
        return False
    labels = obj.labels
    return (labels.get("app.kubernetes.io/name") == "postgresql"
            and labels.get("app.kubernetes.io/component") in ("primary", "read"))


def _bitnami_postgresql(ctx: _Ctx) -> None:
    sets = [o for o in ctx.objects if _is_bitnami_postgresql(o)]
    if not sets:
        return
    configmaps = {(o.namespace, o.name): o for o in ctx.objects if o.kind == "ConfigMap"}
    primaries: dict[tuple[str | None, str], Server] = {}
    for obj in sorted(sets, key=lambda o: o.labels.get("app.kubernetes.io/component") != "primary"):
        component = obj.labels["app.kubernetes.io/component"]
        instance = obj.labels.get("app.kubernetes.io/instance", "")
        image = ("spec", "template", "spec", "containers", 0, "image")
        version = _image_version(obj, image, ctx.version_default,
                                 "the Bitnami image tag does not give the major version")
        settings = _mounted_conf(ctx, obj, configmaps, int(version.value))
        settings.update(_bitnami_env_settings(ctx, obj, int(version.value)))
        replicas = _term(obj, "replicas", ("spec", "replicas"), 1,
                         "StatefulSet spec.replicas default")
        memory = _memory_term(obj, (*image[:-1], "resources", "limits", "memory"))
        cpu = _cpu_term(obj, (*image[:-1], "resources"))
        hosts = [obj.name, f"{obj.name}-hl"]
        ident = _ident("bitnami-postgresql", obj)
        if component == "primary":
            primaries[(obj.namespace, instance)] = _server(
                ctx, obj, ident, obj.name, version=version, settings=settings,
                instances=replicas, memory=memory, cpu=cpu, hosts=hosts)
        else:
            primary = primaries.get((obj.namespace, instance))
            _server(ctx, obj, ident, obj.name, version=version, settings=settings,
                    instances=replicas, memory=memory, cpu=cpu, hosts=hosts, role="standby",
                    primary_id=primary.id if primary else None)
            ctx.out.notices.append(f"bitnami-postgresql: traffic to {obj.name} is budgeted "
                                   f"against its {int(replicas.value)} read replicas")
        ctx.out.claimed.append(obj.ref)


def _bitnami_env_settings(ctx: _Ctx, obj: K8sObject, version: int) -> dict[str, Setting]:
    """POSTGRESQL_MAX_CONNECTIONS of the Bitnami image (postgresql-env.sh: written to
    postgresql.conf as max_connections, over the mounted configuration)."""
    from advisor.read.sources.pgconf import parse_postgres_args_checked

    env = get(obj.body, "spec", "template", "spec", "containers", 0, "env")
    for i, var in enumerate(env if isinstance(env, list) else []):
        if get(var, "name") == "POSTGRESQL_MAX_CONNECTIONS" and get(var, "value") is not None:
            found, problems = parse_postgres_args_checked(
                [f"--max_connections={get(var, 'value')}"],
                _src(obj, "spec", "template", "spec", "containers", 0, "env", i, "value"),
                version)
            ctx.out.problems.extend(problems)
            return found
    return {}


def _mounted_conf(ctx: _Ctx, obj: K8sObject, configmaps: dict[tuple[str | None, str], K8sObject],
                  version: int) -> dict[str, Setting]:
    """postgresql.conf then override.conf from the ConfigMaps the StatefulSet mounts
    (later files win, as the image includes override.conf last)."""
    from advisor.read.sources.pgconf import read_pgconf

    volumes = get(obj.body, "spec", "template", "spec", "volumes") or []
    names = [str(get(v, "configMap", "name")) for v in volumes if get(v, "configMap", "name")]
    settings: dict[str, Setting] = {}
    for key in ("postgresql.conf", "override.conf"):
        for name in names:
            cm = configmaps.get((obj.namespace, name))
            text = get(cm.body, "data", key) if cm is not None else None
            if not isinstance(text, str):
                continue
            origin = text_origin(cm, "data", key)
            if origin is not None:
                display, offset = origin
            else:
                display = cm.path
                offset = block_offset(cm.body["data"], key) + cm.line_offset
            conf = read_pgconf(ctx.root, display, text=text, line_offset=offset,
                               display_path=display, auto_conf=False, version=version)
            ctx.out.problems.extend(conf.problems)
            settings.update(conf.settings)
            ctx.out.claimed.append(cm.ref)
    return settings


# --- plain postgres containers ---------------------------------------------------------------


def settings_from_postgres_args(obj: K8sObject, container_keys: tuple[str | int, ...],
                                version: int = 15) -> tuple[dict[str, Setting],
                                                            list[ConfigProblem]]:
    """`postgres -c max_connections=200 ...` in a container's command/args: each
    setting at the line of its own list item."""
    from advisor.read.sources.pgconf import parse_postgres_args_checked

    settings: dict[str, Setting] = {}
    problems: list[ConfigProblem] = []
    for part in ("command", "args"):
        items = get(obj.body, *container_keys, part)
        if not isinstance(items, list):
            continue
        words = [str(x) for x in items]
        for i in range(len(words)):
            # parse each option with its argument, so each Setting gets its own line
            if not words[i].startswith("-"):
                continue
            chunk = words[i:i + 2] if i + 1 < len(words) and not words[i + 1].startswith("-") \
                else words[i:i + 1]
            at = i + len(chunk) - 1  # the item holding name=value
            found, probs = parse_postgres_args_checked(chunk, _src(obj, *container_keys,
                                                                   part, at), version)
            settings.update(found)
            problems.extend(probs)
    return settings, problems


# --- PgBouncer images configured by environment ------------------------------------------

EDOBURU_WHO = "edoburu/pgbouncer entrypoint.sh default"


def pooler_config_from_env(env: tuple[EnvVar, ...]) -> tuple[dict[str, Setting],
                                                              list[PoolerDatabase]]:
    """[pgbouncer] settings and [databases] entries of a PgBouncer container configured
    by environment: the Bitnami image (PGBOUNCER_* variables, see
    `settings_from_bitnami_pgbouncer_env`) or edoburu/pgbouncer (entrypoint.sh writes
    each set upper-case variable named like a [pgbouncer] key, e.g. POOL_MODE,
    DEFAULT_POOL_SIZE, MAX_DB_CONNECTIONS, as that key, `ignore_startup_parameters`
    defaulting to extra_float_digits, and `* = host=$DB_HOST port=$DB_PORT` or the
    host of DATABASE_URL as its database)."""
    names = {v.name for v in env}
    if any(n.startswith("PGBOUNCER_") for n in names) or "POSTGRESQL_HOST" in names:
        where = next((v.source.location() for v in env if v.name == "POSTGRESQL_HOST"), None)
        first = next((v.source.location() for v in env if v.source.location()), None)
        location = where or first or Location(path="", line=None)
        return settings_from_bitnami_pgbouncer_env(env), bitnami_pgbouncer_databases(
            env, location)
    if not names & {"DB_HOST", "DATABASE_URL"}:
        return {}, []
    return _edoburu(env)


def _edoburu(env: tuple[EnvVar, ...]) -> tuple[dict[str, Setting], list[PoolerDatabase]]:
    from urllib.parse import urlsplit

    from advisor.facts.pgbouncer import params

    version = BouncerVersion()
    known = params(version)
    settings: dict[str, Setting] = {}
    setting = bouncer_setting("ignore_startup_parameters", "extra_float_digits",
                              Source.default_of(EDOBURU_WHO, key="ignore_startup_parameters"),
                              version)
    if setting is not None:
        settings["ignore_startup_parameters"] = setting
    values: dict[str, EnvVar] = {}
    for var in env:
        values[var.name] = var
        key = var.name.lower()
        if key in known and var.value and not var.secret and var.name.isupper():
            found = bouncer_setting(key, var.value, var.source, version)
            if found is not None:
                settings[key] = found
    databases: list[PoolerDatabase] = []
    url = values.get("DATABASE_URL")
    host_var = values.get("DB_HOST")
    if url is not None and url.value and not url.secret:
        parts = urlsplit(url.value)
        dbname = parts.path.lstrip("/") or None
        databases.append(PoolerDatabase(
            name=dbname or "*", host=parts.hostname, port=parts.port or 5432, dbname=dbname,
            location=url.source.location() or Location(path="", line=None)))
    elif host_var is not None and host_var.value:
        port_var = values.get("DB_PORT")
        name_var = values.get("DB_NAME")
        try:
            port = int(port_var.value) if port_var and port_var.value else 5432
        except ValueError:
            port = 5432
        databases.append(PoolerDatabase(
            name=(name_var.value if name_var and name_var.value else "*"),
            host=host_var.value, port=port,
            location=host_var.source.location() or Location(path="", line=None)))
    return settings, databases


# --- Secrets the operators create -------------------------------------------------------

CNPG_SECRETS_WHO = "CloudNativePG operator (pkg/specs/secrets.go CreateSecret)"
CRUNCHY_SECRETS_WHO = "Crunchy PGO (generatePostgresUserSecret)"
ZALANDO_SECRETS_WHO = ("Zalando operator secret_name_template "
                       "{username}.{cluster}.credentials.postgresql.acid.zalan.do")


class MadeSecret(Record, kw_only=True):
    """A Secret an operator creates at run time (not in the repository): its
    connection keys (never a password), derived from the resource at `source`."""

    namespace: str | None
    name: str
    data: dict[str, str]
    source: Source
    obj: K8sObject


def _uri(user: str | None, host: str, port: str, dbname: str | None) -> str:
    who = f"{user}@" if user else ""
    return f"postgresql://{who}{host}:{port}/{dbname or ''}"


def _jdbc(user: str | None, host: str, port: str, dbname: str | None, extra: str = "") -> str:
    query = f"?user={user}{extra}" if user else ""
    return f"jdbc:postgresql://{host}:{port}/{dbname or ''}{query}"


def operator_secrets(objects: list[K8sObject], default_namespace: str = "default"
                     ) -> list[MadeSecret]:
    """The connection Secrets CloudNativePG, Crunchy PGO and the Zalando operator
    create for the clusters among `objects`, with the keys they write:

    - CloudNativePG `<cluster>-app` (user and database of bootstrap initdb, default
      app/app) and `<cluster>-superuser` (postgres, dbname `*`): username, user,
      dbname, host `<cluster>-rw`, port 5432, uri and jdbc-uri at `<host>.<ns>`,
      fqdn-uri and fqdn-jdbc-uri at `<host>.<ns>.svc.cluster.local`.
    - Crunchy `<cluster>-pguser-<user>` per spec.users entry (default: user and
      database named like the cluster): user, dbname (first database), host
      `<cluster>-primary.<ns>.svc`, port, uri, jdbc-uri; with a pgBouncer proxy also
      pgbouncer-host `<cluster>-pgbouncer.<ns>.svc`, pgbouncer-port (proxy.pgBouncer.port,
      default 5432), pgbouncer-uri, pgbouncer-jdbc-uri.
    - Zalando `<user>.<cluster>.credentials.postgresql.acid.zalan.do` per spec.users
      entry and postgres: username (the operator writes no host)."""
    out: list[MadeSecret] = []
    for obj in objects:
        ns = obj.namespace or default_namespace
        if obj.kind == "Cluster" and obj.api_version.startswith(CNPG_API):
            out += _cnpg_secrets(obj, ns)
        elif obj.kind == "PostgresCluster" and obj.api_version.startswith(CRUNCHY_API):
            out += _crunchy_secrets(obj, ns)
        elif obj.kind == "postgresql" and obj.api_version.startswith(ZALANDO_API):
            out += _zalando_secrets(obj)
    return out


def _made(obj: K8sObject, name: str, data: dict[str, str], who: str) -> MadeSecret:
    at = _src(obj, "metadata", "name")
    return MadeSecret(namespace=obj.namespace, name=name, data=data, obj=obj,
                      source=Source(path=at.path, line=at.line, key=name,
                                    default=f"Secret {name} made by the {who}"))


def _cnpg_secrets(obj: K8sObject, ns: str) -> list[MadeSecret]:
    bootstrap = get(obj.body, "spec", "bootstrap")
    bootstrap = bootstrap if isinstance(bootstrap, dict) else {}
    method = next((m for m in ("initdb", "recovery", "pg_basebackup")
                   if isinstance(bootstrap.get(m), dict)), None)
    section = bootstrap.get(method) if method else {}
    dbname = str(section.get("database") or "app")
    owner = str(section.get("owner") or dbname)
    custom = get(section, "secret", "name")
    host = f"{obj.name}-rw"
    out = []
    for name, user, db, made in ((f"{obj.name}-app", owner, dbname, not custom),
                                 (f"{obj.name}-superuser", "postgres", "*", True)):
        if not made:
            continue  # the user's own Secret (spec.bootstrap.<method>.secret)
        data = {"username": user, "user": user, "dbname": db, "host": host, "port": "5432",
                "uri": _uri(user, f"{host}.{ns}", "5432", db),
                "jdbc-uri": _jdbc(user, f"{host}.{ns}", "5432", db),
                "fqdn-uri": _uri(user, f"{host}.{ns}.svc.cluster.local", "5432", db),
                "fqdn-jdbc-uri": _jdbc(user, f"{host}.{ns}.svc.cluster.local", "5432", db)}
        out.append(_made(obj, name, data, CNPG_SECRETS_WHO))
    return out


def _crunchy_secrets(obj: K8sObject, ns: str) -> list[MadeSecret]:
    users = get(obj.body, "spec", "users")
    entries = [u for u in users if isinstance(u, dict) and u.get("name")] \
        if isinstance(users, list) and users else [{"name": obj.name, "databases": [obj.name]}]
    bouncer = get(obj.body, "spec", "proxy", "pgBouncer")
    host = f"{obj.name}-primary.{ns}.svc"
    out = []
    for entry in entries:
        user = str(entry["name"])
        dbs = entry.get("databases")
        db = str(dbs[0]) if isinstance(dbs, list) and dbs else None
        data = {"user": user, "host": host, "port": "5432"}
        if db is not None:
            data |= {"dbname": db, "uri": _uri(user, host, "5432", db),
                     "jdbc-uri": _jdbc(user, host, "5432", db)}
        if isinstance(bouncer, dict):
            bhost = f"{obj.name}-pgbouncer.{ns}.svc"
            bport = str(bouncer.get("port") or 5432)
            data |= {"pgbouncer-host": bhost, "pgbouncer-port": bport}
            if db is not None:
                data |= {"pgbouncer-uri": _uri(user, bhost, bport, db),
                         "pgbouncer-jdbc-uri": _jdbc(user, bhost, bport, db,
                                                     "&prepareThreshold=0")}
        out.append(_made(obj, f"{obj.name}-pguser-{user}", data, CRUNCHY_SECRETS_WHO))
    return out


def _zalando_secrets(obj: K8sObject) -> list[MadeSecret]:
    users = get(obj.body, "spec", "users")
    names = ["postgres", *(str(u) for u in users)] if isinstance(users, dict) else ["postgres"]
    return [_made(obj, f"{u.replace('_', '-')}.{obj.name}.credentials.postgresql.acid.zalan.do",
                  {"username": u}, ZALANDO_SECRETS_WHO) for u in names]
