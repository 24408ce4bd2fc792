"""Poolers: PgBouncer from workloads (pgbouncer.ini in a ConfigMap, or environment),
standalone pgbouncer.ini files, declared RDS Proxies, the server each pooler points at,
and the (database, user) pairs its clients will open."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from advisor.guard import guarded
from advisor.lazyregex import lazy
from advisor.link.hosts import resolve_host
from advisor.link.inputs import Inputs, merge_suppressions, suppressed_codes, workload_id
from advisor.model import (
    BouncerVersion,
    Client,
    ConfigProblem,
    Container,
    Location,
    Pooler,
    Source,
    Term,
    Topology,
)
from advisor.read.apps.urls import declared_hosts
from advisor.read.workloads import (
    ConfigIndex,
    Workload,
    image_version,
    lookup,
    surge,
)

if TYPE_CHECKING:
    from pathlib import Path

    from advisor.config.schema import PgBouncerDecl, ProxyDecl
    from advisor.read.fs import Root
    from advisor.read.sources.pgbouncer_ini import PgBouncerIni


def standalone_inis(inputs: Inputs, topo: Topology) -> None:
    """pgbouncer.ini files in the repository that no workload mounts: one PgBouncer
    process each (a VM or a container configured outside the manifests)."""
    if not inputs.bouncer_ini_files:
        return
    from advisor.read.sources.pgbouncer_ini import pooler_from_ini

    for path in inputs.bouncer_ini_files:
        shown = inputs.root.rel(path)
        ini = guarded(topo.problems, shown, partial(_standalone_ini, inputs.root, path, shown),
                      None)
        if ini is None:
            continue
        topo.problems.extend(ini.problems)
        merge_suppressions(topo, ini.suppressions)
        topo.poolers.append(pooler_from_ini(
            ini, id=f"file/{shown}", name=shown,
            replicas=Term(label="PgBouncer processes", value=1,
                          source=Source.default_of("one PgBouncer process per pgbouncer.ini")),
            location=Location(path=shown, line=1)))
        topo.poolers[-1].databases_complete = ini.complete


def _standalone_ini(root: Root, path: Path, shown: str) -> PgBouncerIni:
    """A pgbouncer.ini file read as the PgBouncer that runs it: its version is not known
    (assumed), so, as for a ConfigMap's ini (pooler_from_workload), a key only a newer
    PgBouncer has raises the assumed version: PgBouncer does not start with an unknown
    parameter (version_floor). The file is read from the disk once. Audit 48: a standalone
    ini with max_prepared_statements = 200 was read as 1.18's, a false PA209 ("unknown
    parameter") and a false PA405 ("1.18 does not track protocol-level prepared
    statements")."""
    from advisor.facts.pgbouncer import version_floor
    from advisor.read.fs import InputError
    from advisor.read.sources.pgbouncer_ini import read_pgbouncer_ini

    try:
        text = root.read_text(root.resolve(path), bom=True)
    except InputError:
        return read_pgbouncer_ini(root, path)  # says what is wrong, as it always did
    read = partial(read_pgbouncer_ini, root, path, text=text, display_path=shown)
    probe = read(version=BouncerVersion(major=1, minor=99))
    version = version_floor(BouncerVersion(), [(k, st.source) for k, st in probe.settings.items()])
    return read(version=version)


def declared_proxy(decl: ProxyDecl, inputs: Inputs, topo: Topology) -> Pooler:
    """An RDS Proxy: reached by its hosts, linked to the declared server it targets; or a
    PgBouncer the repository does not deploy (declared_bouncer)."""
    if decl.kind == "pgbouncer":
        return declared_bouncer(decl, inputs, topo)
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
        hosts=declared_hosts(decl.hosts))



# The [pgbouncer] keys a `[[proxies]] kind = "pgbouncer"` declaration may set
DECLARED_BOUNCER_KEYS = ("pool_mode", "default_pool_size", "max_db_connections",
                         "max_client_conn", "max_prepared_statements",
                         "idle_transaction_timeout")


def declared_bouncer(decl: PgBouncerDecl, inputs: Inputs, topo: Topology) -> Pooler:
    """A PgBouncer the repository does not deploy (Fly's, a provider's, one on a VM),
    declared in the configuration: its clients are those whose host is one of its hosts;
    its server side counts in its target's budget as a repository PgBouncer's does, and
    the PA4xx hazards are checked against its pool_mode and version. It forwards every
    database to its target (a `*` entry, as a managed pooler does), so one pool opens per
    (database, user) its clients use. Keys not declared are PgBouncer's defaults for its
    version (advisor.facts.pgbouncer bouncer_default)."""
    from advisor.facts.pgbouncer import params, parse_param_value, version_floor
    from advisor.model import PoolerDatabase, Setting

    origin = inputs.settings.origin or "configuration"

    def at(key: str) -> Source:
        return Source(path=origin, line=decl.line_of(key), key=f"proxies.{decl.name}.{key}")

    version = BouncerVersion()  # assumed, as for any PgBouncer whose version is not read
    if decl.version is not None:
        minor = int(decl.version.split(".")[1])
        version = BouncerVersion(major=1, minor=minor, source=at("version"))
    settings: dict[str, Setting] = {}
    for key in DECLARED_BOUNCER_KEYS:
        value = getattr(decl, key)
        if value is None:
            continue
        raw = str(value)
        kind = params(BouncerVersion(major=1, minor=99))[key][0]
        ok, parsed, unit = parse_param_value(kind, raw, version)
        settings[key] = Setting(name=key, raw=raw, value=parsed if ok else value, unit=unit,
                                source=at(key))
    # a key only a newer PgBouncer has (max_prepared_statements, 1.21) raises the
    # assumed version, as for a pgbouncer.ini read without one (version_floor)
    version = version_floor(version, [(k, st.source) for k, st in settings.items()])
    target = next((s for s in topo.servers if decl.target in (s.name, s.id)), None)
    if target is None:
        topo.problems.append(problem(
            origin, decl.line_of("target"),
            f"proxy {decl.name}: target {decl.target!r} is no declared server nor a server "
            "of the repository; declare it under [[servers]] (name, hosts, max_connections) "
            "to budget the pooler"))
    where = Location(path=origin, line=decl.line_of(""))
    return Pooler(
        id=f"declared-proxy/{decl.name}", name=decl.name, kind="pgbouncer",
        replicas=Term(label="PgBouncer processes", value=decl.instances,
                      source=at("instances") if "instances" in decl.model_fields_set
                      else Source.default_of("one PgBouncer process (instances unset)",
                                             key="instances")),
        version=version, settings=settings,
        databases=[PoolerDatabase(name="*", location=where)],
        server_id=target.id if target is not None else None,
        location=where, hosts=declared_hosts(decl.hosts))


# PgBouncer's version inside a longer tag (Airflow's airflow-pgbouncer-2025.03.05-1.23.1)
_TAG_BOUNCER_VERSION = lazy(r"(?:^|[-_v])1\.(\d+)(?:\.\d+)?(?=$|[-_])")


def _bouncer_version(c: Container | None) -> BouncerVersion:
    if c is None:
        return BouncerVersion()
    v = image_version(c.image)
    minor = v[1] if v and v[0] == 1 else None
    if minor is None:
        tag = c.image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
        found = _TAG_BOUNCER_VERSION.findall(tag)
        minor = int(found[-1]) if found else None
    if minor is None:
        return _latest_bouncer(c)
    return BouncerVersion(major=1, minor=minor, source=Source(
        path=c.source.path, line=c.source.line, key=f"image {c.image}"))


# Images whose `latest` tag is rebuilt with each PgBouncer release, and the version their
# `latest` has been at least since: edoburu/docker-pgbouncer builds `latest` from its
# Dockerfile (Makefile IMAGE_VERSION?=latest) and that says ARG VERSION=1.24.0 since
# commit 36ac8ff (2025-01-21; 1.25.2 at 91a581b7, 2026-06-09).
_LATEST_BOUNCER = {"edoburu/pgbouncer": (24, "edoburu/docker-pgbouncer 36ac8ff, 2025-01-21")}


def _latest_bouncer(c: Container) -> BouncerVersion:
    """An image tagged `latest` (or untagged) that the kubelet pulls at every start runs
    the release current then: imagePullPolicy Always, which Kubernetes sets when the
    field is omitted and the tag is `latest` or absent (audit 9a D3: such an image was
    taken for 1.18, a false PA405 where 1.24's max_prepared_statements = 200 applies).
    IfNotPresent / Never may keep an old pull: the assumption stands."""
    ref = c.image.split("@", 1)[0]
    name, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "")
    name = name.removeprefix("docker.io/").removeprefix("library/")
    known = _LATEST_BOUNCER.get(name)
    if known is None or tag not in ("", "latest") or c.pull_policy not in ("", "Always"):
        return BouncerVersion()
    minor, since = known
    return BouncerVersion(major=1, minor=minor, floor=True, source=Source.default_of(
        f"assumed: at least 1.{minor}, because {c.image} is pulled at every start "
        f"(imagePullPolicy {c.pull_policy or 'Always, the default for :latest'}) and has "
        f"been 1.{minor} or later since {since}", key="image"))


def pooler_from_workload(inputs: Inputs, topo: Topology, w: Workload, c: Container,
                          index: ConfigIndex, replicas: Term) -> Pooler:
    from advisor.read.sources.pgbouncer_ini import read_pgbouncer_ini

    version = _bouncer_version(c)
    if version.assumed and not _ini_source(w, c, index):
        from advisor.facts.pgbouncer import version_floor
        from advisor.read.sources.operators.containers import env_bouncer_keys

        version = version_floor(version, [(k, v.source)
                                          for k, v in env_bouncer_keys(c.env, c.image)])
    wid = workload_id(w)
    pooler = Pooler(id=f"{wid}#{c.name}" if c.role == "sidecar" or len(w.containers) > 1
                    else wid, name=w.name if len(w.containers) == 1 else f"{w.name}/{c.name}",
                    namespace=w.namespace, replicas=replicas, version=version,
                    location=w.obj.location(), suppressed=suppressed_codes(w.obj),
                    surge=surge(w.obj, replicas.value))
    for cm_kind, cm_name, copier in _config_sources(w, c):
        cm = lookup(index, cm_kind, w.namespace, cm_name)
        if cm is None:
            continue
        ini_keys = [k for k in cm.data if k.endswith(".ini")]
        if not ini_keys:
            continue
        key = "pgbouncer.ini" if "pgbouncer.ini" in ini_keys else ini_keys[0]
        if copier:
            topo.notices.append(f"{pooler.name}: {key} of {cm_kind} {cm_name} read as its "
                                f"configuration: init container {copier} copies it into a "
                                f"volume the {c.name} container mounts")
        siblings = {k: (cm.data[k], cm.text_origin(k)[1]) for k in cm.data}
        shown, offset = cm.text_origin(key)
        if version.assumed:
            # read once as the newest version would, to see which keys are set: one only a
            # newer PgBouncer has raises the assumed version (version_floor)
            from advisor.facts.pgbouncer import version_floor

            probe = read_pgbouncer_ini(inputs.root, key, text=cm.data[key], line_offset=offset,
                                       display_path=shown, siblings=siblings,
                                       version=BouncerVersion(major=1, minor=99),
                                       places=cm.text_places(key))
            version = version_floor(version, [(k, st.source) for k, st in
                                              probe.settings.items()])
            pooler.version = version
        ini = read_pgbouncer_ini(inputs.root, key, text=cm.data[key], line_offset=offset,
                                 display_path=shown, siblings=siblings, version=version,
                                 places=cm.text_places(key))
        topo.problems.extend(ini.problems)
        merge_suppressions(topo, ini.suppressions)
        pooler.settings, pooler.databases, pooler.users = ini.settings, ini.databases, ini.users
        pooler.main_end, pooler.databases_end = ini.main_end, ini.databases_end
        pooler.databases_complete = ini.complete
        break
    else:
        _pooler_from_env(pooler, c)
        from advisor.read.sources.operators.containers import (
            bitnami_unprefixed_notices,
            dropped_env_notices,
            edoburu_prefixed_notices,
            sections_notices,
        )

        topo.notices.extend(dropped_env_notices(c.env, version, pooler.name, c.image))
        if pooler.env_style == "bitnami":
            topo.notices.extend(bitnami_unprefixed_notices(c.env, pooler.name))
        elif pooler.env_style == "edoburu":
            topo.notices.extend(edoburu_prefixed_notices(c.env, pooler.name))
        elif pooler.env_style == "sections":
            topo.notices.extend(sections_notices(c.env, pooler.name))
    return pooler


def _config_sources(w: Workload, c: Container) -> list[tuple[str, str, str]]:
    """The ConfigMaps and Secrets mounted into the container (copier ""), then those an
    init container copies into a volume it mounts (Workload.copied_config_sources)."""
    return [(kind, name, "") for kind, name in w.config_sources(c.name)] + \
        w.copied_config_sources(c.name)


def _ini_source(w: Workload, c: Container, index: ConfigIndex) -> bool:
    """Whether the container's pgbouncer.ini comes from a ConfigMap or Secret held here
    (then its keys, not the env, say which settings are set)."""
    for cm_kind, cm_name, _copier in _config_sources(w, c):
        cm = lookup(index, cm_kind, w.namespace, cm_name)
        if cm is not None and any(k.endswith(".ini") for k in cm.data):
            return True
    return False


def _pooler_from_env(pooler: Pooler, c: Container) -> None:
    """PgBouncer images configured by environment (Bitnami PGBOUNCER_*, edoburu)."""
    from advisor.read.sources.operators.containers import bouncer_env_style, pooler_config_from_env

    settings, databases = pooler_config_from_env(c.env, pooler.version, c.image)
    pooler.settings.update(settings)
    pooler.databases.extend(databases)
    pooler.env_style = bouncer_env_style(c.env, c.image)
    pooler.env_first = c.env_first if pooler.env_style else None


def pooler_server(p: Pooler, host_map: dict, topo: Topology, default_ns: str) -> str | None:
    if p.server_id:
        return p.server_id
    for db in p.databases:
        target = resolve_host(db.host, p.namespace or default_ns, host_map)
        if target and target[0] == "server":
            return target[1]
    return None


def upstream_poolers(p: Pooler, host_map: dict, topo: Topology, default_ns: str
                     ) -> list[Pooler]:
    """The other poolers p's [databases] entries lead to (a PgBouncer in front of a
    PgBouncer)."""
    ids = {target[1] for db in p.databases
           if (target := resolve_host(db.host, p.namespace or default_ns, host_map))
           and target[0] == "pooler" and target[1] != p.id}
    return [x for x in topo.poolers if x.id in ids]


def _pairs_matter(p: Pooler) -> bool:
    """Whether clients' (database, user) pairs decide how many pools PgBouncer opens:
    a `*` fallback or an entry without a forced user makes one pool per pair."""
    return p.kind == "pgbouncer" and (not p.databases or any(
        d.name == "*" or d.user is None for d in p.databases))


def pooler_pairs(topo: Topology) -> None:
    """Which (database, user) pools each pooler will open, from its clients' routes."""
    behind: dict[str, list[Client]] = {}  # pooler id -> its clients, in order: built once
    for c in topo.clients:
        if c.target_kind == "pooler" and c.target_id is not None:
            behind.setdefault(c.target_id, []).append(c)
    for p in topo.poolers:
        pairs: list[tuple[str, str]] = []
        unnamed: dict[object, str] = {}  # the app (or setting line) -> a client of it
        for c in behind.get(p.id, ()):
            for r in c.routes():
                if r is None:
                    continue
                if r.dbname is None and r.user is None:
                    # a URL or Secret not held here: the workloads of one application
                    # (web and worker built from one folder) share it; others may each
                    # be a pool more
                    key = c.source_dir if c.source_dir is not None else \
                        (r.source.path, r.source.line)
                    unnamed.setdefault(key, c.name)
                    continue
                # a part the URL leaves out is one unknown name: one pool, not none
                pair = (r.dbname or "*", r.user or "*")
                if pair not in pairs:
                    pairs.append(pair)
        p.pairs = pairs
        # one unnamed setting alone is the one pair assumed below; more may be more pools
        p.unnamed_pairs = list(unnamed.values()) \
            if unnamed and len(unnamed) + len(pairs) > 1 and _pairs_matter(p) else []
        # no client here at all: any pair may come (PgBouncer makes a database per name
        # asked through `*` and a pool per (database, user): src/objects.c@pgbouncer_1_25_1
        # register_auto_database 488, get_pool 768)
        p.pairs_open = not behind.get(p.id) and not p.fed_by and _pairs_matter(p)
        if p.pairs_open:
            topo.notices.append(
                f"{p.id}: no client in the repository connects to it, and its [databases] "
                "entries open a pool per (database, user) a client uses: the pairs are not "
                "known, so its server side is a floor unless max_db_connections / "
                "max_user_connections bound it")
        elif not pairs and p.kind == "pgbouncer" and p.databases and all(
                d.name == "*" for d in p.databases):
            topo.notices.append(
                f"{p.id}: [databases] holds only the * fallback and no client names the "
                "database and user it connects as: assumed one (database, user) pair, "
                "one pool (each further pair a client uses opens another)")


def problem(path: str, line: int | None, message: str, program: str = "pool-advisor"
            ) -> ConfigProblem:
    return ConfigProblem(location=Location(path=path, line=line), message=message,
                         program=program)
