"""CloudNativePG `Cluster` and `Pooler` resources, and the Secrets the operator makes.

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
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import (
    BouncerVersion,
    NotSubtracted,
    Pooler,
    PoolerDatabase,
    Setting,
    Source,
    Term,
)
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
    image_version,
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

CNPG_API = "postgresql.cnpg.io/"
# The settings the operator writes when spec.postgresql.parameters does not (cloudnative-pg
# pkg/postgres/configuration.go CnpConfigurationSettings.GlobalDefaultSettings), of those
# the budget reads: PostgreSQL's own 8 background workers were printed.
CNPG_DEFAULT_SETTINGS = {"max_worker_processes": 32, "max_parallel_workers": 32}


# --- CloudNativePG --------------------------------------------------------------------


def cnpg_cluster(ctx: ReadContext, obj: K8sObject) -> None:
    version = _cnpg_version(ctx, obj)
    settings = pg_parameter_settings(ctx, obj, ("spec", "postgresql", "parameters"),
                                     int(version.value),
                                     strings_only="CloudNativePG spec.postgresql.parameters")
    for name, value in CNPG_DEFAULT_SETTINGS.items():
        settings.setdefault(name, Setting(
            name=name, raw=str(value), value=value, source=Source.default_of(
                f"CloudNativePG default (pkg/postgres/configuration.go CnpConfigurationSettings"
                f".GlobalDefaultSettings: {name} {value} unless the parameters set it)",
                key=name)))
    total = int_term(obj, "instances", ("spec", "instances"), 1,
                     "CloudNativePG spec.instances default")
    primary_n, standby_n = split_instances(obj, total)
    memory = memory_term(obj, ("spec", "resources", "limits", "memory"))
    cpu = cpu_term(obj, ("spec", "resources"))
    ident = entity_id("cnpg", obj)
    primary = add_server(ctx, obj, ident, obj.name, version=version, settings=settings,
                         instances=primary_n, memory=memory, cpu=cpu, hosts=[f"{obj.name}-rw"],
                         unsubtracted=manager_sessions(obj, standby_n))
    standby = None
    if standby_n is not None:
        standby = add_server(ctx, obj, f"{ident}/replicas", f"{obj.name} replicas",
                             version=version, settings=settings, instances=standby_n,
                             memory=memory, cpu=cpu, hosts=[f"{obj.name}-ro", f"{obj.name}-r"],
                             role="standby", primary_id=ident,
                             unsubtracted=manager_sessions(obj, None))
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


# The instance manager's own sessions (cloudnative-pg at a95a534d). Each is a database/sql
# pool of at most 3 connections per database with no idle connection kept
# (pkg/management/postgres/pool/pool.go:130-131 SetMaxOpenConns(3), SetMaxIdleConns(0)):
# opened for a query and closed after it, so none holds a slot between uses, and they are
# named under the budget, not subtracted from it.
CNPG_AT = "cloudnative-pg@a95a534d"
CNPG_POOL = (f"at most 3 connections per database, closed after each use ({CNPG_AT} "
             "pkg/management/postgres/pool/pool.go:130-131 SetMaxOpenConns(3), "
             "SetMaxIdleConns(0))")
CNPG_MANAGER = (
    "the instance manager's probes, declarative role and replication slot reconcilers and "
    "online backups connect as superuser postgres (pkg/management/postgres/instance.go:967-"
    f"983 ConnectionPool), {CNPG_POOL}: transient, and a superuser is admitted into the "
    "reserved slots when the ordinary ones are full")
CNPG_METRICS = (
    "the metrics exporter queries each scraped database as cnpg_metrics_exporter, not a "
    "superuser, from 1.30 (instance.go:986-999; metrics_exporter_role.go:43-62 LOGIN "
    f"NOSUPERUSER; as postgres before), {CNPG_POOL}: ordinary slots while a scrape runs, "
    "transient")
CNPG_SLOT_SYNC = (
    "each replica's replication slot synchronizer connects to the primary's postgres "
    "database every 30 s (api/v1/cluster_types.go:1324) as streaming_replica, a regular "
    "backend of a non-superuser role (internal/management/controller/slots/runner/"
    "runner.go:128-130; instance.go:1579-1580; lifecycle/run.go:230 CREATE USER "
    f"streaming_replica REPLICATION), {CNPG_POOL}: ordinary slots while it runs, "
    "transient; the replicas' WAL streams are WAL senders, in max_wal_senders")


def manager_sessions(obj: K8sObject, standbys: Term | None) -> list[NotSubtracted]:
    """The sessions CloudNativePG itself opens on an instance (CNPG_MANAGER, CNPG_METRICS),
    and on the primary those of its replicas' slot synchronizers (CNPG_SLOT_SYNC), unless
    spec.replicationSlots turns both highAvailability and synchronizeReplicas off
    (api/v1/cluster_funcs.go:260-265, 295-297, 333-338: each on by default)."""
    def per_db(label: str, why: str) -> NotSubtracted:
        return NotSubtracted(term=Term(label=label, value=3, source=Source.default_of(
            "CloudNativePG pool limit per database")), why=why)

    out = [per_db("CloudNativePG instance manager, user postgres", CNPG_MANAGER),
           per_db("CloudNativePG metrics exporter, user cnpg_metrics_exporter", CNPG_METRICS)]
    slots = get(obj.body, "spec", "replicationSlots")
    off = isinstance(slots, dict) and all(
        get(slots, key, "enabled") is False
        for key in ("highAvailability", "synchronizeReplicas"))
    if standbys is not None and not off:
        out.append(NotSubtracted(term=Term(
            label=f"CloudNativePG slot synchronizers of {standbys.value:g} replicas x 3, "
                  "user streaming_replica",
            value=3 * standbys.value, source=standbys.source), why=CNPG_SLOT_SYNC))
    return out


def _cnpg_version(ctx: ReadContext, obj: K8sObject) -> Term:
    major = get(obj.body, "spec", "imageCatalogRef", "major")
    if major is not None:
        return version_term(obj, ("spec", "imageCatalogRef", "major"), ctx.version_default,
                            "image catalog major")
    if get(obj.body, "spec", "imageName") is not None:
        return image_version(obj, ("spec", "imageName"), ctx.version_default,
                             "the tag of spec.imageName names no major (set --pg-version)")
    if ctx.declared_version is not None:
        return replace(ctx.declared_version, label="PostgreSQL version")
    return Term(label="PostgreSQL version", value=CNPG_DEFAULT_MAJOR,
                source=Source.default_of(CNPG_DEFAULT_IMAGE_WHY))


# The image a Cluster without spec.imageName (or imageCatalogRef) runs is the operator's
# DefaultImageName (pkg/versions/versions.go): postgresql:16.x in CloudNativePG 1.22-1.24,
# 17.x in 1.25-1.27, 18.x from 1.28 (1.30.0 at a95a534d: postgresql:18.6-system-trixie).
# Which operator runs is not in the repository: the newest release's is assumed, and said.
CNPG_DEFAULT_MAJOR = 18
CNPG_DEFAULT_IMAGE_WHY = (
    f"assumed PostgreSQL {CNPG_DEFAULT_MAJOR}: spec.imageName not set, so the operator's "
    "default image decides, and the operator's version is not in the repository: "
    f"PostgreSQL {CNPG_DEFAULT_MAJOR} is the default of CloudNativePG 1.28 to 1.30 "
    "(pkg/versions/versions.go DefaultImageName; 17 in 1.25-1.27, 16 in 1.22-1.24); set "
    "spec.imageName or --pg-version")


def cnpg_pooler(ctx: ReadContext, obj: K8sObject) -> None:
    cluster = get(obj.body, "spec", "cluster", "name")
    kind = str(get(obj.body, "spec", "type") or "rw")
    version = bouncer_version(*_pooler_image(ctx, obj))
    if version == BouncerVersion():
        # the operator's default image: 1.23 at the oldest release whose template this
        # reader reads (auth_dbname, 1.19+, is in it): not Debian's 1.18 assumption
        version = CNPG_DEFAULT_BOUNCER
    settings = bouncer_parameter_settings(
        ctx, obj, ("spec", "pgbouncer", "parameters"), version,
        strings_only="CloudNativePG spec.pgbouncer.parameters")
    mode = get(obj.body, "spec", "pgbouncer", "poolMode")
    settings["pool_mode"] = Setting(
        name="pool_mode", raw=str(mode or "session"), value=str(mode or "session"),
        source=source_at(obj, "spec", "pgbouncer", "poolMode") if mode else
        Source.default_of("CloudNativePG spec.pgbouncer.poolMode default", key="pool_mode"))
    settings.setdefault("ignore_startup_parameters", Setting(
        name="ignore_startup_parameters", raw="extra_float_digits,options",
        value="extra_float_digits,options",
        source=Source.default_of("CloudNativePG operator (pgbouncer config strings.go)",
                                 key="ignore_startup_parameters")))
    _cnpg_auth(obj, settings, version)
    replicas = _autoscaled(ctx, obj, int_term(
        obj, "PgBouncer pods", ("spec", "instances"), 1,
        "CloudNativePG Pooler spec.instances default"))
    pair = ctx.cnpg.get((obj.namespace, str(cluster)))
    server_id = None
    if pair is None:
        ctx.out.notices.append(f"cnpg: {obj.ref} points at Cluster {cluster!r}, which is not "
                               "among the scanned resources")
    else:
        primary, standby = pair
        server_id = primary.id if kind == "rw" or standby is None else standby.id
    service = {"rw": "rw", "ro": "ro", "r": "r"}.get(kind, "rw")
    ident = entity_id("cnpg-pooler", obj)
    pooler = Pooler(
        id=ident, name=obj.name, namespace=obj.namespace, replicas=replicas, version=version,
        surge=pooler_surge(obj, replicas, "CloudNativePG leaves the pooler Deployment's "
                           "strategy to Kubernetes without spec.deploymentStrategy",
                           ("spec", "deploymentStrategy")),
        settings=settings, server_id=server_id, location=location_at(obj),
        databases=[PoolerDatabase(name="*", host=f"{cluster}-{service}", port=5432,
                                  location=location_at(obj, "spec", "cluster", "name"))],
        hosts=host_forms(obj.name, obj.namespace or ctx.default_ns))
    ctx.out.poolers.append(pooler)
    ctx.services([obj.name], obj.namespace, "pooler", ident)
    ctx.out.claimed.append(obj.ref)


# Why an autoscaler moves a Pooler only into its bounds: the Pooler's scale subresource
# has no labelSelectorPath (api/v1/pooler_types.go@a95a534d:386 `+kubebuilder:subresource:
# scale:specpath=.spec.instances,statuspath=.status.instances`; the Cluster's has one
# since 1.28.4), and Kubernetes' HPA controller computes no metric for a target whose
# scale serves no selector (podautoscaler/horizontal.go validateAndParseSelector: "the
# HPA target's scale is missing a selector"). Before the metrics, reconcileAutoscaler
# still raises replicas below minReplicas and lowers those above maxReplicas; KEDA's
# ScaledObject makes such an HPA (and scales a target at 0 to its minimum itself).
NO_SELECTOR = ("the Pooler's scale subresource serves no selector (CloudNativePG "
               "api/v1/pooler_types.go: no labelSelectorPath), so the HPA cannot scale it on "
               "metrics (\"the HPA target's scale is missing a selector\"), only into its "
               "minimum and maximum")


def _pooler_scalers(ctx: ReadContext) -> dict[tuple[str, str], list[K8sObject]]:
    """HPAs and KEDA ScaledObjects whose scaleTargetRef is a CloudNativePG Pooler, by
    the Pooler's (namespace, name). The reference must name the API group: without it
    the HPA looks the kind up in the core group and KEDA assumes apps/v1."""
    if ctx.pooler_scalers is None:
        found: dict[tuple[str, str], list[K8sObject]] = {}
        for o in ctx.objects:
            if not (o.kind == "HorizontalPodAutoscaler"
                    or (o.kind == "ScaledObject" and "keda.sh" in o.api_version)):
                continue
            ref = get(o.body, "spec", "scaleTargetRef")
            if (isinstance(ref, dict) and ref.get("kind") == "Pooler"
                    and str(ref.get("apiVersion") or "").startswith(CNPG_API)):
                key = (o.namespace or ctx.default_ns, str(ref.get("name")))
                found.setdefault(key, []).append(o)
        ctx.pooler_scalers = found
    return ctx.pooler_scalers


def _scaler_bounds(scaler: K8sObject) -> tuple[Term, Term]:
    """(minimum, maximum) replicas of an HPA, or of the HPA a KEDA ScaledObject makes
    (apis/keda/v1alpha1/scaledobject_types.go GetHPAMinReplicas: minReplicaCount when
    above 0, else 1; GetHPAMaxReplicas: maxReplicaCount, else 100)."""
    if scaler.kind == "HorizontalPodAutoscaler":
        return (int_term(scaler, "HPA minReplicas", ("spec", "minReplicas"), 1,
                         "Kubernetes HPA minReplicas default 1"),
                int_term(scaler, "HPA maxReplicas", ("spec", "maxReplicas"), 1,
                         "Kubernetes requires HPA maxReplicas"))
    low = int_term(scaler, "KEDA ScaledObject minReplicaCount", ("spec", "minReplicaCount"),
                   1, "KEDA: the HPA it makes has minReplicas 1 without minReplicaCount")
    if low.value < 1:
        low = Term(label=low.label, value=1, source=Source.default_of(
            "KEDA: the HPA it makes has minReplicas 1 when minReplicaCount is 0",
            key="minReplicaCount"))
    return low, int_term(scaler, "KEDA ScaledObject maxReplicaCount",
                         ("spec", "maxReplicaCount"), 100, "KEDA default maxReplicaCount 100")


def _autoscaled(ctx: ReadContext, obj: K8sObject, instances: Term) -> Term:
    """The Pooler's PgBouncer pods at peak under the autoscalers that target it:
    spec.instances moved into each one's [minimum, maximum] (NO_SELECTOR), the most of
    them; an HPA leaves a Pooler at 0 alone (scaling disabled), KEDA activates it."""
    best: Term | None = None
    for scaler in _pooler_scalers(ctx).get((obj.namespace or ctx.default_ns, obj.name), []):
        low, high = _scaler_bounds(scaler)
        n = instances.value
        if n == 0 and scaler.kind == "HorizontalPodAutoscaler":
            term, how = instances, "left at 0 (an HPA does not scale a target at 0)"
        elif n < low.value:
            term = Term(label=f"PgBouncer pods ({low.label}, above spec.instances {n:g})",
                        value=low.value, source=low.source)
            how = "raised to its minimum"
        elif n > high.value:
            term = Term(label=f"PgBouncer pods ({high.label}, below spec.instances {n:g})",
                        value=high.value, source=high.source)
            how = "lowered to its maximum"
        else:
            term, how = instances, f"within its bounds ({low.value:g} to {high.value:g})"
        ctx.out.notices.append(
            f"cnpg: {obj.ref} is scaled by {scaler.kind} {scaler.name} ({scaler.path}:"
            f"{scaler.line}): counted at {term.value:g} PgBouncer pods, spec.instances "
            f"{how}: {NO_SELECTOR}; were it scaled on metrics (a Pooler CRD with a "
            f"labelSelectorPath), it would reach {high.value:g}")
        if best is None or term.value > best.value:
            best = term
    return instances if best is None else best


CNPG_INI = "CloudNativePG pgbouncer.ini template (pkg/management/pgbouncer/config/config.go)"
CNPG_DEFAULT_BOUNCER = BouncerVersion(major=1, minor=23, source=Source.default_of(
    "CloudNativePG operator's default PgBouncer image (pkg/versions/versions.go "
    "DefaultPgbouncerImage: 1.23.0 in 1.25, 1.24.1 in 1.26-1.27, 1.25.1 from 1.28): the "
    "oldest assumed"))


def _cnpg_auth(obj: K8sObject, settings: dict[str, Setting], version: BouncerVersion) -> None:
    """The template's auth_user, auth_query and auth_dbname lines, above the parameters
    (which come later in the section, so a parameter of the same name would win):
    auth_user is the auth query Secret's username, by default the operator's
    cnpg_pooler_pgbouncer (api/v1 PGBouncerPoolerUserName), auth_dbname postgres
    (PoolerAuthDBName), auth_query spec.pgbouncer.authQuery or "SELECT usename, passwd
    FROM public.user_search($1)" (DefaultPgBouncerPoolerAuthQuery)."""
    secret = get(obj.body, "spec", "pgbouncer", "authQuerySecret", "name")
    query = get(obj.body, "spec", "pgbouncer", "authQuery")
    lines = {
        "auth_user": (f"username of Secret {secret}" if secret else "cnpg_pooler_pgbouncer",
                      source_at(obj, "spec", "pgbouncer", "authQuerySecret", "name")
                      if secret else Source.default_of(
                          f"{CNPG_INI}: the operator's auth user PGBouncerPoolerUserName",
                          key="auth_user")),
        "auth_dbname": ("postgres", Source.default_of(
            f"{CNPG_INI}: PoolerAuthDBName", key="auth_dbname")),
        "auth_query": (str(query) if query else
                       "SELECT usename, passwd FROM public.user_search($1)",
                       source_at(obj, "spec", "pgbouncer", "authQuery") if query else
                       Source.default_of(f"{CNPG_INI}: DefaultPgBouncerPoolerAuthQuery",
                                         key="auth_query")),
    }
    for key, (raw, source) in lines.items():
        if key in settings:
            continue
        setting = bouncer_setting(key, raw, source, version)
        if setting is not None:
            settings[key] = setting


def _pooler_image(ctx: ReadContext, obj: K8sObject
                  ) -> tuple[K8sObject, tuple[str | int, ...]]:
    """Where the Pooler's PgBouncer image is written, in CloudNativePG's order
    (api/v1/pooler_types.go PgBouncerSpec.Image, 1.30): the pod template's pgbouncer
    container (the first container, for a template that names none), then
    spec.pgbouncer.image, then the spec.pgbouncer.imageCatalogRef entry (key) of an
    ImageCatalog in the Pooler's namespace or a ClusterImageCatalog among the scanned
    resources. Else the operator's default image, which depends on the operator's
    release (pkg/specs/pgbouncer/deployments.go, pkg/versions/versions.go
    DefaultPgbouncerImage: 1.23.0 in 1.25, 1.24.1 in 1.26-1.27, 1.25.1 from 1.28): not
    known here, and bouncer_version's assumption stands."""
    template = ("spec", "template", "spec", "containers")
    containers = get(obj.body, *template)
    if isinstance(containers, list):
        for i, c in enumerate(containers):
            if isinstance(c, dict) and c.get("name") == "pgbouncer" \
                    and isinstance(c.get("image"), str):
                return obj, (*template, i, "image")
    if isinstance(get(obj.body, "spec", "pgbouncer", "image"), str):
        return obj, ("spec", "pgbouncer", "image")
    ref = get(obj.body, "spec", "pgbouncer", "imageCatalogRef")
    if isinstance(ref, dict):
        kind, name, key = ref.get("kind"), ref.get("name"), ref.get("key")
        for cat in ctx.objects:
            if cat.kind != kind or cat.name != name or not cat.api_version.startswith(CNPG_API):
                continue
            if kind == "ImageCatalog" and (cat.namespace or ctx.default_ns) != (
                    obj.namespace or ctx.default_ns):
                continue
            images = get(cat.body, "spec", "componentImages")
            for j, entry in enumerate(images if isinstance(images, list) else []):
                if isinstance(entry, dict) and entry.get("key") == key:
                    return cat, ("spec", "componentImages", j, "image")
    return obj, (*template, 0, "image")


# --- Secrets the operator creates --------------------------------------------------------

CNPG_SECRETS_WHO = "CloudNativePG operator (pkg/specs/secrets.go CreateSecret)"


def cnpg_secrets(obj: K8sObject, ns: str) -> list[MadeSecret]:
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
                "uri": pg_uri(user, f"{host}.{ns}", "5432", db),
                "jdbc-uri": jdbc_uri(user, f"{host}.{ns}", "5432", db),
                "fqdn-uri": pg_uri(user, f"{host}.{ns}.svc.cluster.local", "5432", db),
                "fqdn-jdbc-uri": jdbc_uri(user, f"{host}.{ns}.svc.cluster.local", "5432", db)}
        out.append(made_secret(obj, name, data, CNPG_SECRETS_WHO))
    return out
