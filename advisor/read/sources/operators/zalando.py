"""The Zalando operator's `postgresql` resources, their connection poolers, and the Secrets
the operator makes.

- Zalando postgres-operator (github.com/zalando/postgres-operator,
  pkg/cluster/connection_pooler.go getConnectionPoolerEnvVars at commit 3de15d2b,
  pkg/util/constants/pooler.go at 3cb9b938, docs/reference/cluster_manifest.md and
  operator_parameters.md): `postgresql` (acid.zalan.do/v1) spec.numberOfInstances,
  spec.postgresql.version, spec.postgresql.parameters (map[string]string),
  spec.enableConnectionPooler / spec.connectionPooler,
  spec.enableReplicaConnectionPooler. Pooler: numberOfInstances (operator
  configuration default 2), mode (default transaction), maxDBConnections (default
  60). Per pooler pod the operator sets maxDBConn = maxDBConnections /
  numberOfInstances (integer division), default pool size = maxDBConn / 2, min pool
  size = default / 2, reserve = min, max client conn 10000, passed to the pooler image
  as CONNECTION_POOLER_* variables. The operator's own image (pooler/pgbouncer.ini.tmpl
  at a7aaad0a, the default connection_pooler_image from v2.0.0:
  ghcr.io/zalando/postgres-operator/pgbouncer:v2.0.1) writes them as max_db_connections,
  default_pool_size, reserve_pool_size and max_client_conn; its min_pool_size line is
  commented out ("For now disable it"), so PgBouncer's 0 applies. The template also sets
  idle_transaction_timeout = 600, max_prepared_statements = 200 and
  ignore_startup_parameters = extra_float_digits,options, and pooler/Dockerfile builds
  the newest PgBouncer tag (1.25.2 when v2.0.x was built); a spec.connectionPooler
  .dockerImage of the user's own is an image of unknown version and template, and
  gets none of these. A connectionPooler section, even `{}`, enables the master pooler when
  enableConnectionPooler is unset. Services `<cluster>` (master), `<cluster>-repl`,
  `<cluster>-pooler`, `<cluster>-pooler-repl`.

- The operator's own configuration (operator_config.go importConfigurationFromCRD and
  pkg/util/config/config.go at v2.0.1) gives what a manifest leaves out: an
  `OperatorConfiguration` (configuration.connection_pooler.connection_pooler_*,
  configuration.postgres_pod_resources.default_memory_limit; its pooler pods are at least
  2: util.MaxInt32(..., 2)) or the ConfigMap of the ConfigMap-based configuration (the
  same keys, flat under data). The shipped values above stand only when the repository
  holds neither.
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.facts.patroni import patroni_floors, patroni_sessions
from advisor.model import BouncerVersion, Pooler, PoolerDatabase, Setting, Source, Term
from advisor.read.sources.k8s import K8sObject, get
from advisor.read.sources.operators.common import (
    MadeSecret,
    ReadContext,
    add_server,
    bouncer_setting,
    cpu_term,
    entity_id,
    host_forms,
    int_term,
    location_at,
    made_secret,
    memory_term,
    pg_parameter_settings,
    pooler_surge,
    quantity,
    source_at,
    split_instances,
    version_term,
)

ZALANDO_API = "acid.zalan.do/"

ZALANDO_POOLER_INSTANCES = 2  # operator configuration connection_pooler_number_of_instances
ZALANDO_MAX_DB_CONNECTIONS = 60  # constants.ConnectionPoolerMaxDBConnections
ZALANDO_MAX_CLIENT_CONN = 10000  # constants.ConnectionPoolerMaxClientConnections
ZALANDO_MODE = "transaction"  # constants.ConnectionPoolerDefaultMode
# What the operator's pooler image writes whatever the manifest says
ZALANDO_TEMPLATE = "Zalando operator pooler image (pooler/pgbouncer.ini.tmpl)"
ZALANDO_IDLE_TRANSACTION_TIMEOUT = 600
ZALANDO_POOLER_USER = "pooler"  # constants.ConnectionPoolerUserName
ZALANDO_TEMPLATE_SETTINGS = {
    "auth_type": "md5",
    "auth_dbname": "postgres",
    "idle_transaction_timeout": str(ZALANDO_IDLE_TRANSACTION_TIMEOUT),
    "max_prepared_statements": "200",
    "ignore_startup_parameters": "extra_float_digits,options",
}
# The default image's PgBouncer: pooler/Dockerfile checks out the newest tag
ZALANDO_BOUNCER = (1, 25, "Zalando operator v2.0 default connection_pooler_image "
                   "ghcr.io/zalando/postgres-operator/pgbouncer:v2.0.1 (pooler/Dockerfile "
                   "builds the newest PgBouncer tag: 1.25.2, May 2026)")


# --- the operator's configuration ---------------------------------------------------

# keys of the operator configuration that change a budget (config.go `name:` tags)
_POOLER_KEYS = ("connection_pooler_number_of_instances", "connection_pooler_max_db_connections",
                "connection_pooler_mode", "connection_pooler_user")
_MEMORY_KEY = "default_memory_limit"


def operator_config(objects: list[K8sObject]) -> tuple[dict[str, tuple[str, Source]], bool]:
    """The Zalando operator's configuration in the repository, key -> (value, where), and
    whether it is the CRD-based one (whose pooler pods are at least 2): the first
    `OperatorConfiguration`, else the values of a HelmRelease of the operator's chart,
    else the first ConfigMap carrying connection_pooler_* keys (the ConfigMap-based
    configuration); empty when there is none."""
    for obj in objects:
        if obj.kind == "OperatorConfiguration" and obj.api_version.startswith(ZALANDO_API):
            found = {key: (str(raw), source_at(obj, "configuration", "connection_pooler", key))
                     for key in _POOLER_KEYS
                     if (raw := get(obj.body, "configuration", "connection_pooler", key))
                     is not None}
            raw = get(obj.body, "configuration", "postgres_pod_resources", _MEMORY_KEY)
            if raw is not None:
                found[_MEMORY_KEY] = (str(raw), source_at(
                    obj, "configuration", "postgres_pod_resources", _MEMORY_KEY))
            return found, True
    for obj in objects:
        # the operator's Helm chart not rendered (a HelmRelease of a remote chart): its
        # values configConnectionPooler / configPostgresPodResources become the
        # OperatorConfiguration, or with configTarget ConfigMap the ConfigMap
        # (charts/postgres-operator/values.yaml, templates/configmap.yaml at v2.0.1)
        if obj.kind != "HelmRelease":
            continue
        values = get(obj.body, "spec", "values")
        if isinstance(values, dict) and (
                "configConnectionPooler" in values or "configPostgresPodResources" in values):
            keys = {key: ("configConnectionPooler", key) for key in _POOLER_KEYS}
            keys[_MEMORY_KEY] = ("configPostgresPodResources", _MEMORY_KEY)
            found = {key: (str(raw), source_at(obj, "spec", "values", *path))
                     for key, path in keys.items()
                     if (raw := get(values, *path)) is not None}
            return found, values.get("configTarget", "OperatorConfigurationCRD") != "ConfigMap"
    from advisor.read.workloads import configmap_data

    for obj in objects:
        if obj.kind != "ConfigMap":
            continue
        data = configmap_data(obj)  # as the parse cache keeps it: no tree built
        if any(k.startswith("connection_pooler_") for k in data):
            return {key: (data[key], source_at(obj, "data", key))
                    for key in (*_POOLER_KEYS, _MEMORY_KEY) if key in data}, False
    return {}, False


def _configured_int(obj: K8sObject, label: str, keys: tuple[str | int, ...],
                    config: dict[str, tuple[str, Source]], key: str, shipped: int,
                    who: str) -> Term:
    """The manifest's integer at `keys`, else the operator configuration's `key`, else
    the `shipped` default named `who`."""
    if get(obj.body, *keys) is None and key in config:
        raw, source = config[key]
        if raw.strip().isdigit():
            return Term(label=label, value=int(raw), source=source)
    return int_term(obj, label, keys, shipped, who)


# --- Zalando -------------------------------------------------------------------------


def zalando_cluster(ctx: ReadContext, obj: K8sObject) -> None:
    version = version_term(obj, ("spec", "postgresql", "version"), ctx.version_default,
                           "spec.postgresql.version missing")
    settings = pg_parameter_settings(ctx, obj, ("spec", "postgresql", "parameters"),
                                     int(version.value),
                                     strings_only="Zalando spec.postgresql.parameters")
    total = int_term(obj, "instances", ("spec", "numberOfInstances"), 1,
                     "Zalando spec.numberOfInstances missing")
    primary_n, standby_n = split_instances(obj, total)
    memory = memory_term(obj, ("spec", "resources", "limits", "memory"))
    config, crd = operator_config(ctx.objects)
    # the operator puts the parameters into Patroni's bootstrap.dcs (k8sres.go
    # getLocalAndBoostrapPostgreSQLParameters), over Spilo's (configure_spilo.py
    # deep_update): Patroni's validation decides, and its default replaces a refused value
    settings, notices = patroni_floors(settings, f"zalando: {obj.ref}")
    ctx.out.notices.extend(notices)
    settings = {**_spilo_defaults(memory, config.get(_MEMORY_KEY)), **settings}  # the spec's win
    cpu = cpu_term(obj, ("spec", "resources"))
    ident = entity_id("zalando", obj)
    # Spilo runs Patroni on every instance: its own sessions hold slots on each
    held = [patroni_sessions()]
    add_server(ctx, obj, ident, obj.name, version=version, settings=settings,
               instances=primary_n, memory=memory, cpu=cpu, hosts=[obj.name], held=held)
    replica_id = ident
    if standby_n is not None:
        replica_id = f"{ident}/replicas"
        add_server(ctx, obj, replica_id, f"{obj.name} replicas", version=version,
                   settings=settings, instances=standby_n, memory=memory, cpu=cpu,
                   hosts=[f"{obj.name}-repl"], role="standby", primary_id=ident, held=held)
    else:
        ctx.services([f"{obj.name}-repl"], obj.namespace, "server", ident)
    section = get(obj.body, "spec", "connectionPooler")
    enabled = get(obj.body, "spec", "enableConnectionPooler")
    # connection_pooler.go needMasterConnectionPoolerWorker: the section, even `{}`,
    # enables it when enableConnectionPooler is not set
    master = enabled is True or (enabled is None and isinstance(section, dict))
    if master:
        _zalando_pooler(ctx, obj, f"{obj.name}-pooler", ident, obj.name, config, crd)
    if get(obj.body, "spec", "enableReplicaConnectionPooler") is True:
        _zalando_pooler(ctx, obj, f"{obj.name}-pooler-repl", replica_id, f"{obj.name}-repl",
                        config, crd)
    ctx.out.claimed.append(obj.ref)


# The operator's default_memory_limit as its shipped configuration sets it
# (manifests/configmap.yaml, the chart's values.yaml): the pod's limit without one.
ZALANDO_DEFAULT_MEMORY_MB = 500


def _spilo_defaults(memory: Term | None, configured: tuple[str, Source] | None = None
                    ) -> dict[str, Setting]:
    """What Spilo writes into Patroni's parameters when the spec sets none
    (advisor.facts.spilo): max_connections = min(max(100, memory limit in MB / 30), 1000)
    and shared_buffers = MB / 5 from the container's cgroup limit, which is the operator's
    default_memory_limit when the spec sets none; autovacuum_max_workers 5."""
    from advisor.facts.spilo import spilo_settings

    if memory is None and configured is not None and (value := quantity(configured[0])):
        # the operator gives the pod its configuration's default_memory_limit
        memory = Term(label="memory limit", value=value, source=configured[1])
    if memory is not None:
        return spilo_settings(memory, f"{int(memory.value / 1048576)} MB memory limit "
                                      f"({memory.source.label()})")
    default = Term(label="memory limit", value=ZALANDO_DEFAULT_MEMORY_MB * 1048576,
                   source=Source.default_of("Zalando operator default_memory_limit 500Mi"))
    return spilo_settings(default, f"{ZALANDO_DEFAULT_MEMORY_MB} MB, the operator's "
                                   "default_memory_limit as shipped (no "
                                   "spec.resources.limits.memory)")


def pool_sizes(per_pod: int) -> tuple[int, int]:
    """(default_pool_size, reserve_pool_size) the operator derives from a pod's
    max_db_connections (connection_pooler.go: maxDBConn / 2, then / 2)."""
    default = per_pod // 2
    return default, default // 2


def _zalando_pooler(ctx: ReadContext, obj: K8sObject, name: str, server_id: str,
                    target: str, config: dict[str, tuple[str, Source]], crd: bool) -> None:
    base = ("spec", "connectionPooler")
    replicas = _configured_int(
        obj, "pooler pods", (*base, "numberOfInstances"), config,
        "connection_pooler_number_of_instances", ZALANDO_POOLER_INSTANCES,
        "Zalando operator configuration connection_pooler_number_of_instances")
    if crd and get(obj.body, *base, "numberOfInstances") is None:
        # importConfigurationFromCRD: util.MaxInt32(connection_pooler_number_of_instances, 2)
        replicas = replace(replicas, value=max(ZALANDO_POOLER_INSTANCES, replicas.value))
    replicas = replace(replicas, value=max(1, replicas.value))
    max_db = _configured_int(obj, "maxDBConnections", (*base, "maxDBConnections"), config,
                             "connection_pooler_max_db_connections", ZALANDO_MAX_DB_CONNECTIONS,
                             "Zalando operator connection_pooler_max_db_connections default")
    per_pod = int(max_db.value) // int(replicas.value)
    default_size, min_size = pool_sizes(per_pod)
    how = (f"Zalando operator: maxDBConnections {int(max_db.value)} ({max_db.source.label()}) "
           f"// {int(replicas.value)} pooler pods = {per_pod} per pod")
    derived = Source(path=max_db.source.path, line=max_db.source.line, key="maxDBConnections",
                     default=how)
    mode_raw = get(obj.body, *base, "mode")
    mode_source = source_at(obj, *base, "mode") if mode_raw else None
    if not mode_raw and "connection_pooler_mode" in config:
        mode_raw, mode_source = config["connection_pooler_mode"]
    own_image = get(obj.body, *base, "dockerImage")
    major, minor, who = ZALANDO_BOUNCER
    version = BouncerVersion() if own_image else BouncerVersion(
        major=major, minor=minor, source=Source.default_of(who))
    values = {
        "max_db_connections": (str(per_pod), derived),
        "default_pool_size": (str(default_size), replace(
            derived, default=f"{how}; default pool size = {per_pod} // 2")),
        "reserve_pool_size": (str(min_size), replace(
            derived, default=f"{how}; reserve = default pool size {default_size} // 2")),
        "max_client_conn": (str(ZALANDO_MAX_CLIENT_CONN), Source.default_of(
            "Zalando operator constant ConnectionPoolerMaxClientConnections",
            key="max_client_conn")),
        "pool_mode": (str(mode_raw or ZALANDO_MODE),
                      mode_source or Source.default_of(
                          "Zalando operator connection_pooler_mode default", key="pool_mode")),
    }
    if not own_image:
        values |= {key: (raw, Source.default_of(ZALANDO_TEMPLATE, key=key))
                   for key, raw in ZALANDO_TEMPLATE_SETTINGS.items()}
    settings = {}
    for key, (raw, source) in values.items():
        setting = bouncer_setting(key, raw, source, version)
        if setting is not None:
            settings[key] = setting
    ident = f"zalando-pooler:{obj.namespace + '/' if obj.namespace else ''}{name}"
    ctx.out.poolers.append(Pooler(
        id=ident, name=name, namespace=obj.namespace, replicas=replicas, version=version,
        surge=pooler_surge(obj, replicas, "the Zalando operator sets no strategy on the "
                           "connection pooler Deployment"),
        settings=settings, server_id=server_id, location=location_at(obj, *base)
        if get(obj.body, *base) is not None else location_at(obj, "spec", "enableConnectionPooler"),
        databases=_zalando_databases(obj, target, own_image is not None,
                                     config.get("connection_pooler_user")),
        hosts=host_forms(name, obj.namespace or ctx.default_ns), sized_by=max_db))
    ctx.services([name], obj.namespace, "pooler", ident)


def _zalando_databases(obj: K8sObject, target: str, own_image: bool,
                       configured: tuple[str, Source] | None = None) -> list[PoolerDatabase]:
    """The template's [databases]: `*` and `postgres` (the auth_dbname), both with
    auth_user=$PGUSER, the pooler user: spec.connectionPooler.user, else the operator
    configuration's connection_pooler_user, default "pooler"; an image of the user's own
    has a template of its own, unknown here: `*` only."""
    location = location_at(obj)
    if own_image:
        return [PoolerDatabase(name="*", host=target, port=5432, location=location)]
    user = get(obj.body, "spec", "connectionPooler", "user")
    where = source_at(obj, "spec", "connectionPooler", "user") if user else None
    if not user and configured is not None:
        user, where = configured
    auth_user = Setting(
        name="auth_user", raw=str(user or ZALANDO_POOLER_USER),
        value=str(user or ZALANDO_POOLER_USER),
        source=where if where is not None else
        Source.default_of(f"{ZALANDO_TEMPLATE}: auth_user=$PGUSER, the operator's "
                          "connection_pooler_user default", key="auth_user"))
    return [PoolerDatabase(name=name, host=target, port=5432, auth_user=auth_user,
                           location=location) for name in ("*", "postgres")]


# --- Secrets the operator creates --------------------------------------------------------

ZALANDO_SECRETS_WHO = ("Zalando operator secret_name_template "
                       "{username}.{cluster}.credentials.postgresql.acid.zalan.do")


def zalando_secrets(obj: K8sObject) -> list[MadeSecret]:
    users = get(obj.body, "spec", "users")
    names = ["postgres", *(str(u) for u in users)] if isinstance(users, dict) else ["postgres"]
    return [made_secret(obj,
                        f"{u.replace('_', '-')}.{obj.name}.credentials.postgresql.acid.zalan.do",
                        {"username": u}, ZALANDO_SECRETS_WHO) for u in names]
