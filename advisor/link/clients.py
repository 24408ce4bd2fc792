"""Clients: the application workloads, their pools per pod (read from the application's
source folder, mounted configuration, or a stack's default), where they connect, and
clients declared in the configuration or deployed as Lambda functions."""

from __future__ import annotations

import os
import re
from functools import partial
from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.guard import guarded
from advisor.lazyregex import lazy
from advisor.link.argo import LEADER_ONLY, argo_workflows_pools
from advisor.link.hosts import (
    host_variable_route,
    resolve_host,
    runs_db_proxy,
    service_host_routes,
)
from advisor.link.inputs import Inputs, suppressed_codes, workload_id
from advisor.link.operators import operator_credentials_route, operator_secret_route
from advisor.model import (
    Client,
    Container,
    EnvVar,
    Location,
    Pool,
    Pooler,
    Route,
    Source,
    SqlHazard,
    Term,
    Topology,
)
from advisor.read.apps import (
    AppSource,
    default_pools_for_container,
    mounted_app_file,
    no_database_library,
    pools_for_container,
    reads_pod_files,
    route_from_env,
    scan_app_dir,
)
from advisor.read.apps.cmdline import non_client_server
from advisor.read.apps.locate import (
    DEPENDENCY_FILES,
    SERVICE_PARENTS,
    BuildHints,
    ImageDockerfile,
    app_files_in,
    claimed_folders,
    compose_env_dir,
    copied_folders,
    copied_sources,
    fallback_app_dir,
    frontend_word,
    go_command_dir,
    image_dockerfile,
    image_name,
    image_repository,
    in_test_tree,
    is_build_script,
    ko_app_dir,
    loose_name,
    match_app_dir,
    maybe_built_here,
    named_as_build,
    named_service_dir,
    package_named_dir,
    placeholder_image,
    prefixed_folder,
    project_image,
    project_part_dir,
    project_prefixes,
    python_only_root,
    role_named_image,
    root_build_name,
    root_image_owner,
    root_mix_app,
    root_project_name,
    unfilled_image,
    variable_image,
)
from advisor.read.apps.poolcache import container_pools
from advisor.read.apps.source import AppFile
from advisor.read.apps.urls import (
    hidden_dsn_vars,
    other_scheme_hosts,
    route_from_args,
    route_from_url,
    route_key,
    routes_after,
)
from advisor.read.apps.var_names import may_name_where, meaning, name_parts, names_where
from advisor.read.render import in_packaged_chart
from advisor.read.sources.k8s import get
from advisor.read.workloads import (
    POD_SPEC_PATHS,
    SHELLS,
    ConfigIndex,
    Workload,
    is_pgbouncer_container,
    lookup,
    scaled_job_overrun,
    surge,
    workload_shape,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from advisor.config.schema import WorkloadDecl
    from advisor.read.sources.serverless import LambdaFunction


def sidecars_by_workload(topo: Topology) -> dict[str, Pooler]:
    """Workload id -> the first pooler that is a container of it (id `<workload>#<name>`),
    indexed once: a scan of every pooler per client was clients x poolers."""
    out: dict[str, Pooler] = {}
    for p in topo.poolers:
        at = p.id.find("#")
        while at >= 0:  # every "<prefix>#" the id starts with (a name may hold a "#")
            out.setdefault(p.id[:at], p)
            at = p.id.find("#", at + 1)
    return out


# Configuration files a reader takes from a mounted ConfigMap (apps/temporal.py,
# apps/images.py SonarQube, apps/airflow.py; Apache's and PHP-FPM's, apps/nextcloud.py;
# Spring Boot's application*.yml, apps/spring.py, read where its locations say)
_MOUNTED_CONFIG_KINDS = ("temporal-config", "sonar-properties", "airflow-cfg",
                         "zitadel-config", "apache-conf", "php-fpm", "spring-config")


def mounted_files(w: Workload, index: ConfigIndex) -> list:
    """Application config files the pod mounts from ConfigMaps in the repository (a
    Temporal config_template.yaml, a Spring application.yml): classified by key name,
    with the ConfigMap's own lines."""
    out = []
    for mounts in w.mounts.values():
        for vol, path in mounts:
            kind, name = w.volumes.get(vol, ("", ""))
            data = lookup(index, "configmap", w.namespace, name) if kind == "configMap" \
                else lookup(index, "secret", w.namespace, name) if kind == "secret" else None
            if data is None:
                continue
            for key, text in data.data.items():
                directory = path.rsplit("/", 1)[0] if path.endswith("/" + key) else path
                shown, offset = data.text_origin(key)
                found = mounted_app_file(shown, key, text, mount_path=directory,
                                         line_offset=offset, places=data.text_places(key))
                if found is None:
                    continue
                if found.kind in _MOUNTED_INI or (kind == "configMap" and (
                        found.kind in _MOUNTED_CONFIG_KINDS
                        or (found.kind == "python" and "DATABASES" in text))):
                    # Temporal config; Airflow's airflow.cfg (the official chart's
                    # ConfigMap); SonarQube's sonar.properties (the charts copy it
                    # from a ConfigMap into conf/ in an init container); Django settings
                    # (sentry.conf.py); Grafana's grafana.ini, Gitea's app.ini and the
                    # section files its chart's init container writes app.ini from (a
                    # Secret, the chart's inline config); Piped's config.properties (its
                    # database password: a Secret)
                    out.append(found)
    return out


_MOUNTED_INI = frozenset({"grafana-ini", "gitea-app-ini", "gitea-env-to-ini",
                          "pgpool-conf", "config-properties"})


def client_from_workload(inputs: Inputs, topo: Topology, w: Workload,
                          peaks: dict, host_map: dict, decl: WorkloadDecl | None,
                          default_ns: str = "default",
                          operator_secrets: ConfigIndex | None = None,
                          mounted: list | None = None,
                          index: ConfigIndex | None = None,
                          sidecars: dict[str, Pooler] | None = None,
                          own: Callable[..., dict | None] | None = None,
                          credentials: dict[tuple[str, str], str] | None = None,
                          ports: Callable[[str, str], list[dict]] | None = None
                          ) -> list[Client]:
    """`own(host, w)`: the Service at host when it selects w's own pods (hosts.own_service);
    routes to it are dropped, and a workload left with none is no client. `credentials`:
    (namespace, Secret) -> the id of the server whose user or password it holds.
    `ports(host, namespace)`: the port entries of the Service at host (hosts.service_ports)."""
    replicas = peaks.get((w.namespace or default_ns, w.kind, w.name), w.replicas)
    if decl is not None and decl.replicas is not None:
        replicas = Term(label="declared replicas", value=decl.replicas,
                        source=Source(path=inputs.settings.origin, key=f"workloads.{w.name}"))
    pools: list[Pool] = []
    route: Route | None = None
    further: list[Route] = []  # every other route the containers' env names
    hidden: list[str] = []  # pools whose size is set where its value cannot be read
    # why a reader says some of its connections go where the repository does not say
    # (StackContext.hidden_route): its pools so marked are placed on no route here
    unrouted: list[str] = []
    ds_routes: list[Route] = []  # Grafana data sources' routes
    # service_host_routes of containers that read no pool: the route when nothing else is
    service_only: list[Route] = []
    sidecar = (sidecars if sidecars is not None else sidecars_by_workload(topo)).get(workload_id(w))
    directory = _app_directory(inputs, w, topo)
    app = None
    if directory is not None:
        if directory not in inputs.app_cache:  # web and worker often share one codebase
            inputs.app_cache[directory] = guarded(
                topo.problems, directory, partial(scan_app_dir, inputs.root, directory), None,
                "reading this application folder")
        app = inputs.app_cache[directory]
        if app is not None and (chosen := _image_dockerfiles(inputs, w)):
            app = _copied_only(inputs, w, replace(app, image_dockerfiles=chosen), topo)
    if mounted:
        app = app.with_files(mounted) if app is not None else AppSource(
            root=inputs.root, directory="", files=tuple(mounted))
    runs_app = _app_containers(w) if app is not None else set()
    pod_files = None
    non_clients = 0  # running containers whose program opens no connection
    # the pools of each init container (a migration before the app starts), and whether a
    # running container connects with pools not read: then the init pools are not the pod's
    init_runs: list[tuple[str, list[Pool]]] = []
    unread_running = False
    # only an init container writes app.ini (forge_init_writers): a pod without one
    # does not import the image readers (advisor.read.apps.images and the fifteen
    # readers it imports, 6 ms of a warm check whose pools come from the cache)
    has_init = any(c.role == "init" for c in w.containers)
    if has_init:
        from advisor.read.apps.images import forge_init_writers
    for c in w.containers:
        if is_pgbouncer_container(c):
            continue
        if (server := non_client_server(c)) is not None:
            if route_from_env(c.env) is not None or any(names_where(e.name) for e in c.env):
                # a URL from a Secret too (laa-court-data-adaptor's metrics: DATABASE_URL)
                topo.notices.append(
                    f"{workload_id(w)}: container {c.name} runs {server.text} "
                    f"({server.source.label()}), which opens no PostgreSQL connection: "
                    "the database env it is given is not counted")
            non_clients += c.role != "init"
            continue
        # the init container writing Gitea's app.ini
        writers = forge_init_writers(w, c) if has_init else ()
        if reads_pod_files(c, app if c.name in runs_app else None):
            # a program that reads its configuration files from the pod (Synapse)
            from advisor.read.apps.podfiles import PodFiles

            pod_files = pod_files or PodFiles(w, index or {})
            read = partial(pools_for_container, c, app if c.name in runs_app else None,
                           node_cpus=inputs.settings.node(),
                           pod_files=pod_files.view(c.name))
        elif c.name in runs_app or writers:
            read = partial(pools_for_container, c, app if c.name in runs_app else None,
                           node_cpus=inputs.settings.node(), init_writers=writers)
        else:
            read = partial(container_pools, c, parse_cache(inputs),
                           node_cpus=inputs.settings.node())
        # Argo Workflows' controller and server: pools from the ConfigMap they read
        argo = argo_workflows_pools(c, index or {}, w.namespace or default_ns)
        found = argo if argo is not None else guarded(
            topo.problems, directory or w.obj.path, read, None,
            f"reading the pool settings of container {c.name!r}",
            None if directory else w.obj.line)
        # Grafana's PostgreSQL data sources: a pool each, on the server each names (a
        # part of the client where it leads, as a further route)
        ds = guarded(topo.problems, w.obj.path, partial(
            _grafana_datasource_pools, w, c, index or {}, mounted or [],
            w.namespace or default_ns), None,
            f"reading the Grafana data sources of container {c.name!r}", w.obj.line) \
            if "grafana" in c.image.lower() else None
        if ds is not None:
            topo.notices.extend(ds.notices)
            hidden += ds.unknown
            pools += ds.pools
            further += ds.routes
            ds_routes += ds.routes
            if ds.unplaced and w.name not in topo.unplaced_clients:
                topo.unplaced_clients.append(w.name)
        if found is None:
            continue
        topo.notices.extend(found.notices)
        topo.problems.extend(found.problems)
        if found.monitor and not found.pools:
            # Flower or `celery events`: runs no task, opens none of the app's pools
            non_clients += c.role != "init"
            continue
        hidden += found.unknown
        unrouted += [why for why in found.unrouted if why not in unrouted]
        # an operator's Secret lists one connection several ways (uri, jdbc-uri,
        # pgbouncer-uri): taken by envFrom, those are alternatives, not further routes
        env_route = route_from_env(c.env)
        c_routes = routes_after(env_route, _not_operator_made(c.env, operator_secrets))
        if found.cli_only:
            env_route, c_routes = _without_cli_routes(w, c.name, found.cli_only, env_route,
                                                      c_routes, topo.notices)
        bound = _service_binding_route(w, c, index or {}, topo) if c.env else None
        # (not those of an operator's Secret: its host and pgbouncer-host are alternatives)
        services = [] if found.no_postgres else service_host_routes(
            _not_operator_made(c.env, operator_secrets), host_map, w.namespace or default_ns,
            ports)
        c_route = bound or env_route or operator_secret_route(c, operator_secrets or {}) \
            or route_from_args(c.command, c.args, c.source) or next(iter(c_routes), None) \
            or host_variable_route(c.env, host_map, w.namespace or default_ns,
                                   runs_db_proxy([x.image for x in w.containers])) \
            or (_pgpool_route(c, app if c.name in runs_app else None)
                if not found.pools else None)
        literal = _literal_route(found.pools) if bound is None else None
        if literal is not None and c_route is not None and (c_route.host or "").lower() \
                != (literal.host or "").lower():
            # the application's configuration writes its host (a Spring URL with no ${}):
            # the container's host variables (DB_HOST) are read by nothing (audit 33 D2)
            topo.notices.append(
                f"{workload_id(w)}: {c_route.source.key or 'its environment'} "
                f"({c_route.source.label()}) names host {c_route.host}, but its datasource "
                f"URL ({literal.source.label()}) writes host {literal.host} with no "
                "placeholder: the variable is not read, and its pools connect there")
        if literal is not None:
            # the pools' own routes decide: the container's host variable goes (read by
            # nothing when it names another host), its further routes to other hosts stay
            # (Sourcegraph's CODEINTEL_PGHOST beside a literal SPRING_DATASOURCE_URL)
            gone = (c_route.host or "").lower() if c_route is not None else None
            c_route = None
            c_routes = [r for r in c_routes if (r.host or "").lower() != gone]
            services = [r for r in services if (r.host or "").lower() != gone]
        services = _service_host_links(w, services, [c_route, *c_routes], host_map,
                                       w.namespace or default_ns, topo.notices)
        # further routes only, never c_route: a pool with no route of its own (its URL
        # in a Secret not held here) is not put on a pooler PG_BOUNCER_HOST names
        c_routes = [*c_routes, *services]
        if not found.pools and not found.unknown:
            service_only += services
        # a pool with no route of its own connects where the container's URL says, unless
        # its reader said where is not known (route_unknown: the variable that names its
        # database is set where the repository does not hold it; Mattermost's
        # MM_SQLSETTINGS_DATASOURCE from a Secret beside MM_CONFIG, its config store's
        # DSN, went on the store's server)
        placed = [replace(pool, route=c_route)
                  if not pool.route_unknown and (bound or (not pool.route and c_route))
                  else pool for pool in found.pools]
        if c_route is None and any(p.route is None and "DSN served by the frontend" in p.label
                                   for p in placed):
            placed = _frontend_served(inputs, w, placed, topo)
        # a binding configures the datasource, whatever URL the app's config names
        if c.role == "init" and placed:
            init_runs.append((c.name, placed))
        else:
            pools += placed
        if c.role != "init" and (c_route is not None or services) and not found.pools \
                and not found.unknown:
            unread_running = True
        route = route or c_route
        further += c_routes
        # a pool's own route to another host (each Pgpool-II backend, Mastodon's read
        # replica) is a further route: a part of the client where it leads
        # (_split_by_target), not a sum on the first target
        main_host = (c_route.host or "").lower() if c_route is not None else ""
        further += [p.route for p in placed if p.route is not None and p.route.host
                    and p.route.host.lower() not in (main_host, *_LOOPBACK_HOSTS)]
    init_only = _one_init_run(w, init_runs, topo)
    pools += init_only
    if pod_files is not None:
        topo.notices += [f"{workload_id(w)}: {n}" for n in pod_files.notices]
    if non_clients and non_clients == sum(c.role != "init" and not is_pgbouncer_container(c)
                                          for c in w.containers):
        return []  # it runs nothing that connects (Synapse's `python -m synapse.config`)
    targeted = decl is not None and bool(decl.target)
    # The pools whose reader said where they connect is not known: on no route found here
    # (not the host a mounted file or an operator's Secret names, nor the client's); a
    # declared target takes them, else they are a part of the client that no budget holds
    lost = [] if targeted else [p for p in pools if p.route_unknown]
    pools = [p for p in pools if targeted or not p.route_unknown]
    if route is None:
        # no URL in the env: the host the application's own configuration names
        # (application.yml, database.yml, a config file) links it, or says it links nowhere
        route = next((p.route for p in pools if p.route is not None and p.route.host), None)
    if route is None and ds_routes:
        route = ds_routes[0]  # a data source whose size is not known still connects there
    if route is None and service_only and not pools and not hidden and not unrouted:
        # a host variable naming a pooler's Service is all the workload says of a
        # database (pachd's PG_BOUNCER_HOST alone): it connects there, and no pool read
        # elsewhere is put on it
        route = service_only[0]
    extra = _other_routes(route, further)
    dropped: list[tuple[Route, dict]] = []  # routes to the workload's own Service
    if own is not None:
        pools, route, extra = _without_own_routes(w, pools, route, extra, own, dropped)
    if route is None and index:
        # the host a mounted configuration file names (Temporal's connectAddr, Django
        # settings in a ConfigMap, OpenMeter's config.yaml): linked, so that its pools
        # (or its unknown size) count where it connects
        route = _mounted_config_route(w, index, host_map, w.namespace or default_ns)
        if route is not None and own is not None and (svc := own(route.host, w)) is not None:
            dropped.append((route, svc))
            route = None
        if route is not None:
            pools = [p if p.route is not None else replace(p, route=route) for p in pools]
    if route is None and operator_secrets:
        # only a password (user, database) of an operator's Secret: its cluster's
        for c in w.containers:
            found = None if is_pgbouncer_container(c) else \
                operator_credentials_route(c, operator_secrets)
            if found is not None:
                route, why = found
                topo.notices.append(f"{workload_id(w)}: {why}")
                pools = [p if p.route is not None else replace(p, route=route) for p in pools]
                break
    if route is None and not lost and not hidden and credentials:
        # given the database credentials a server's pod is given (one Secret), and no host
        # read: it connects to that server (a Flask app whose host is in its code, not
        # found: flask-vue-kubernetes' budget said "fits, peak 0"), with the pools read
        # for it, else how many connections unknown; its pools were left out of every
        # budget when its source was declared
        shared = _shared_credentials_route(w, credentials, host_map, default_ns)
        if shared is not None and not pools and (why_not := _no_database_library(
                w, app, runs_app)) is not None:
            # the credentials alone link it, and its own dependencies hold no database
            # library (shinjbin/jaybee-lab's bitcoin-trader, given the app Secret by envFrom)
            topo.notices.append(f"{workload_id(w)}: {shared[1]}, but {why_not}: not "
                                "counted as its client")
            shared = None
        if shared is not None:
            route, why = shared
            if pools:
                labels = ", ".join(dict.fromkeys(p.label for p in pools))
                topo.notices.append(f"{workload_id(w)}: opens {labels} on no host it names; "
                                    f"{why}: linked to it")
                pools = [_on_shared_route(p, route) for p in pools]
            else:
                topo.notices.append(f"{workload_id(w)}: {why}: linked to it, connections "
                                    "unknown")
    if dropped and not pools and not lost and route is None:
        first, svc = dropped[0]
        topo.notices.append(
            f"{workload_id(w)}: connects to host {first.host!r} ({first.source.label()}), "
            f"which is Service {svc['name']} ({svc['obj'].location().label()}) selecting "
            "its own pods: a server's own pods are not its clients, so it is not counted "
            "as one")
        return []
    running = [p for p in pools if not any(p is q for q in init_only)]
    if init_only and running and _init_within_running(init_only, running):
        # an init container's pool (a migration) is closed before the running containers
        # connect: the pod's peak is the larger of the two, not their sum
        topo.notices.append(f"{workload_id(w)}: {', '.join(p.label for p in init_only)} of "
                            "its init containers not counted at peak: they exit before the "
                            "running containers, which hold more, connect")
        pools = running
    elif unread_running and init_only and len(init_only) == len(pools):
        # only an init container's pool was read (twentyhq/twenty's chart: `typeorm
        # migration:run` before the server starts): it exits before the running
        # containers connect, so it is not their count; theirs is identified or unknown
        topo.notices.append(f"{workload_id(w)}: only init containers' pools were read "
                            f"({', '.join(p.label for p in init_only)}); they exit before "
                            "the running containers connect, whose pools are not read")
        pools = []
    floor_pools: list[Pool] = []
    if hidden:
        # A pool whose size the repository does not hold leaves the workload's
        # connections unknown (the budget a floor), never a default's or a part's; the
        # bounded pools read are kept as the least it holds (FCFColin/backtest-platform:
        # a pg.Client made in start() dropped its known Pool of 20 to 1 per pod)
        floor_pools = [p for p in pools if p.bound != "unbounded"]
        pools, lost = [], []
    elif not pools and not lost and not unrouted and route is not None and \
            (why_none := _go_opens_none(w, app, runs_app)) is not None:
        # its env names the database, its Go code cannot open a connection (a gateway
        # given DB_HOST beside the services that use it): 0, said, not a floor of 1 a pod
        topo.notices.append(f"{workload_id(w)}: names database host {route.host!r} "
                            f"({route.source.label()}), but {why_none}: not counted as a "
                            "client")
        return []
    elif not pools and not lost and not unrouted and route is not None:
        identified = _identified_defaults(inputs, topo, w, app, route)
        if identified is None:
            return []  # a Celery monitor (Flower): runs no task, opens no pool
        pools = identified
    if decl is not None and decl.pool_size is not None:
        pools = [_declared_pool(decl, inputs.settings.origin, w.name, pools + lost, route)]
        lost = []
    if decl is not None and decl.connections is not None:
        lost = []
        src = Source(path=inputs.settings.origin, line=decl.line_of("connections"),
                     key=f"workloads.{w.name}.connections")
        pools = [Pool(label="declared connections per pod", size=Term(
            label="declared connections per pod", value=decl.connections, source=src),
            route=route)]
    if unrouted and not targeted:
        # as a program whose database is set where the repository does not say: it may
        # connect to any server here, so none's peak is more than a floor
        topo.notices += [f"{workload_id(w)}: {why}: it may connect to any server here, so "
                         "each peak is a floor (declare [[workloads]] target)"
                         for why in unrouted]
        if w.name not in topo.unplaced_clients:
            topo.unplaced_clients.append(w.name)
    if route is None and not pools and lost:
        pools, lost = lost, []  # the client itself connects where it is not known
    if route is None:
        unplaced = _remote_connection_notes(w)
        if unplaced and not pools and (why_none := _no_database_library(w, app, runs_app)):
            # its host is in a Secret not here, but its code cannot open a connection
            # (DeepakGiri2/GoConnect's gateway: DATABASE_HOST from goconnect-secrets, a
            # Go binary importing no driver): not "may connect to any server here"
            topo.notices.append(f"{workload_id(w)}: its database variables' values are not "
                                f"in the repository ({len(unplaced)} noted), but {why_none}: "
                                "not counted as a client of any server")
            unplaced = []
        # declared with a target ([[workloads]] target, as the notice asks): placed, and
        # the notice that asks for it (and says "in no budget") is not printed
        if not targeted:
            topo.notices.extend(unplaced)
        if unplaced and not targeted and w.name not in topo.unplaced_clients:
            topo.unplaced_clients.append(w.name)
        if any(not p.route_unknown for p in pools) and not targeted:
            # a pool read from its code, and no host in its env or mounted files: it
            # connects somewhere, maybe to a server here, so no server's peak is more than
            # a floor (a Knex pool whose URL is a template literal, a Flask config class,
            # left out of every budget, let a server print "fits, peak 0")
            topo.notices.append(
                f"{workload_id(w)}: opens "
                f"{', '.join(sorted({p.label for p in pools if not p.route_unknown}))} "
                "but names no database host in its env, arguments or mounted configuration "
                "the repository holds: it may connect to any server here, so each peak is "
                "a floor (declare [[workloads]] target)")
            if w.name not in topo.unplaced_clients:
                topo.unplaced_clients.append(w.name)
        elif hidden and not (decl is not None and decl.target):
            # a reader knows the program connects but not how much nor where (Synapse's
            # `-c /data/homeserver.yaml` on a volume the repository does not hold): not
            # dropped, since it may connect to any server here
            topo.notices.append(
                f"{workload_id(w)}: connects to a database it names in nothing the "
                f"repository holds ({'; '.join(hidden)}): it may connect to any server here, "
                "so each peak is a floor (declare [[workloads]] target and connections)")
            if w.name not in topo.unplaced_clients:
                topo.unplaced_clients.append(w.name)
    if decl is not None and (decl.database or decl.user):
        route, pools, extra = _declared_pair(decl, inputs.settings.origin, workload_id(w),
                                             route, pools, extra, topo.notices)
    if not pools and route is None and not targeted:
        topo.notices.extend(_dropped_connection_note(w, directory))
        if decl is None and (empty := _empty_connection_note(w)) is not None:
            # its database is filled in where it is deployed: it connects, somewhere
            topo.notices.append(empty)
            if w.name not in topo.unplaced_clients:
                topo.unplaced_clients.append(w.name)
        elif directory is None and decl is None and \
                (image := _unsourced_app_image(inputs, w)) is not None:
            topo.notices.append(
                f"{workload_id(w)}: runs {image}, an image this repository builds or may "
                "build, but no application source was found for it and its env names no "
                "database: not counted as a client; it may connect to a server no client "
                "is linked to, whose peak is then a floor (declare [[workloads]] source, "
                "or target and connections)")
            if w.name not in topo.unsourced_apps:
                topo.unsourced_apps.append(w.name)
        return []  # talks to no database we can see
    # declared with a target and no pool read: it connects there, how much is unknown
    # (PA106), not 0 (a Deployment whose source was not found made its server "fits")
    client = Client(id=workload_id(w), name=w.name, namespace=w.namespace, kind=w.kind,
                    replicas=replicas, surge=_client_surge(inputs, w, replicas),
                    pools=pools, location=w.obj.location(), suppressed=suppressed_codes(w.obj),
                    source_dir=directory, route=route,
                    floor_pools=[] if pools else _on_route(floor_pools, route),
                    unknown="" if pools else "; ".join(hidden) or (
                        _why_unknown_unrouted(lost, route) if lost and route is not None
                        else _why_unknown(w, directory, app)),
                    release=w.obj.origin if w.obj.origin.startswith("helm:") else "",
                    hook=_helm_hook(w))
    if topo.poolers:  # as advisor.engine.repository._sql: hazards only matter behind a pooler
        topo.sql_hazards.extend(_env_hazards(w, client.id))
        topo.client_env[client.id] = [e for c in w.containers if not is_pgbouncer_container(c)
                                      for e in c.env if not e.secret]
        hidden_dsn = hidden_dsn_vars([e for c in w.containers if not is_pgbouncer_container(c)
                                      for e in c.env])
        if hidden_dsn:
            topo.client_hidden_dsn[client.id] = hidden_dsn
    if w.kind == "CronJob" and get(w.obj.body, "spec", "concurrencyPolicy",
                                   default="Allow") == "Allow":
        topo.notices.append(
            f"{client.id}: concurrencyPolicy Allow ({w.obj.source('spec').label()}, the "
            "Kubernetes default): a run that outlasts the schedule overlaps the next, each "
            "with its own pools; counted as one run (set concurrencyPolicy: Forbid, or "
            "declare replicas for the overlap)")
    if w.kind == "ScaledJob" and (overrun := scaled_job_overrun(w.obj)) is not None:
        topo.notices.append(
            f"{client.id}: KEDA ScaledJob {overrun}: more than the "
            f"{int(replicas.value)} pods counted may run at once (declare replicas for them)")
    namespace = w.namespace or default_ns

    def target_of(r: Route | None) -> tuple[str, str] | None:
        if r is not None:
            host = (r.host or "").lower()
            if sidecar is not None and host in ("localhost", "127.0.0.1", "::1", ""):
                return ("pooler", sidecar.id)
            found = resolve_host(r.host, namespace, host_map)
            if found is not None:
                return found
        return ("pooler", sidecar.id) if sidecar is not None else None

    declared = _named_target(decl.target, topo) if decl is not None and decl.target else None
    target = declared or target_of(route)
    if target is not None:  # else PA107 reports the host it connects to
        client.target_kind, client.target_id = target  # type: ignore[assignment]
    leader = _leader_part(client)
    if declared is not None:
        # the declared target takes the routes that reach no server or pooler here; one
        # that reaches another is a part of the client there, with the pools read for it
        # (not the declared ones), or unknown (PA106, a floor), never dropped unsaid
        elsewhere = [r for r in ([route] if route is not None else []) + extra
                     if target_of(r) not in (None, declared)]
        client.extra_routes = [r for r in extra if r not in elsewhere]
        ours = [p for p in client.pools if p.label.startswith("declared")]
        view = replace(client, pools=[p for p in client.pools if p not in ours],
                       extra_routes=[], unknown="")
        parts = _split_by_target(topo, view, elsewhere, declared, target_of)
        client.pools = ours + view.pools
        where = f"{inputs.settings.origin or 'configuration'}:{decl.line_of('target')}" \
            if decl is not None else "configuration"
        for part in parts:
            part.part_of = client.id
            if not part.pools and part.route is not None and decl is not None:
                part.unknown = (
                    f"its declaration ([[workloads]] target = {decl.target!r}, {where}) "
                    f"counts its connections to {decl.target} only; none is known for its "
                    f"connection to {part.route.host} ({part.route.source.label()}, "
                    f"{part.route.source.key or 'its route'})")
        return [client, *leader, *parts]
    return [client, *leader, *_unrouted_part(client, lost),
            *_split_by_target(topo, client, extra, target, target_of)]


def _declared_pair(decl: WorkloadDecl, origin: str | None, who: str, route: Route | None,
                   pools: list[Pool], extra: list[Route], notices: list[str]
                   ) -> tuple[Route | None, list[Pool], list[Route]]:
    """The main route (and the pools on it) with the declared database and user where
    what was read leaves them out (`[[workloads]] database/user`): the pool it opens
    behind a PgBouncer is then known. A further route (a second database: Airflow's
    Celery result backend) is not the declared one: left as read, so an unknown pair
    there is still said (PA106). A route that names another is kept as read, and said;
    a client declared with a target and no route read gets one with the pair alone."""
    key = "database" if decl.database else "user"
    src = Source(path=origin, line=decl.line_of(key), key=f"workloads.{decl.name}.{key}")
    lines = ", ".join(f"{k} at line {decl.line_of(k)}" for k in ("database", "user")
                      if getattr(decl, k) and decl.line_of(k))
    clashes: list[str] = []

    def filled(r: Route | None) -> Route | None:
        if r is None:
            return None
        for read, declared, what in ((r.dbname, decl.database, "database"),
                                     (r.user, decl.user, "user")):
            if read and declared and read != declared:
                clashes.append(f"{what} {read!r} ({r.source.label()})")
        return replace(r, dbname=r.dbname or decl.database, user=r.user or decl.user)

    main = route
    if route is None and decl.target:
        route = Route(dbname=decl.database, user=decl.user, source=src)
    else:
        route = filled(route)
    pools = [replace(p, route=filled(p.route)) if p.route is not None and (
        p.route == main or p.route.host == (main.host if main else None)) else p
        for p in pools]
    notices.append(f"{who}: connects as database {decl.database or '(as read)'}, user "
                   f"{decl.user or '(as read)'} where what it reads leaves them out "
                   f"(declared, {origin or 'configuration'}{': ' + lines if lines else ''})")
    notices += [f"{who}: reads {c}, not the declared one: kept as read"
                for c in dict.fromkeys(clashes)]
    return route, pools, extra


def _unrouted_part(client: Client, lost: list[Pool]) -> list[Client]:
    """The pools whose reader said where they connect is not known (Pool.route_unknown),
    as a part of the client with no route and no target: in no server's budget (the
    workload is unplaced: each peak a floor), still seen by the pool rules."""
    if not lost:
        return []
    return [Client(id=f"{client.id}>unknown-database", name=client.name,
                   namespace=client.namespace, kind=client.kind, replicas=client.replicas,
                   surge=client.surge, pools=lost, location=client.location,
                   suppressed=client.suppressed, source_dir=client.source_dir,
                   part_of=client.id)]


def _on_route(pools: list[Pool], route: Route | None) -> list[Pool]:
    """The pools that connect where the client does (no route of their own, or its
    host): another host's pool is no floor of this server's."""
    host = (route.host or "").lower() if route is not None else ""
    return [p for p in pools if p.route is None or (p.route.host or "").lower() == host]


def _why_unknown_unrouted(lost: list[Pool], route: Route) -> str:
    """Why a client's connections on `route` are unknown when every pool read for it
    connects where the repository does not say."""
    labels = ", ".join(dict.fromkeys(p.label for p in lost))
    return (f"the pools read for it ({labels}) connect where the repository does not say; "
            f"none is known for its connection to {route.host} ({route.source.label()}, "
            f"{route.source.key or 'its route'})")


def _without_cli_routes(w: Workload, container: str, cli_only: dict[str, str],
                        env_route: Route | None, routes: list[Route], notices: list[str]
                        ) -> tuple[Route | None, list[Route]]:
    """The container's routes without those of variables only the application's CLI
    opens (Prisma's directUrl: `prisma migrate`, not Prisma Client): the running program
    holds no connection there, so it is no client of that server (youssefhesham2000/
    Catalog-Service's shape: a direct URL beside the pooled one gave a PA106 part)."""
    def cli(r: Route | None) -> bool:
        return r is not None and (r.source.key or "") in cli_only

    for r in dict.fromkeys(r for r in (env_route, *routes) if cli(r)):
        notices.append(f"{workload_id(w)}: {r.source.key} ({r.source.label()}, to "
                       f"{r.host}) is {cli_only[r.source.key or '']}: container "
                       f"{container} holds no connection on it, not counted")
    return (None if cli(env_route) else env_route), [r for r in routes if not cli(r)]


def _literal_route(pools: list[Pool]) -> Route | None:
    """The host every pool read writes literally in its own configuration, when all do
    (Pool.literal_host): where the container connects, whatever its env names."""
    if not pools or not all(p.literal_host and p.route is not None for p in pools):
        return None
    return pools[0].route


def _helm_hook(w: Workload):
    """The Helm hook a chart's Job or Pod is run as (advisor.read.render.hooks), read
    only for objects of a chart render."""
    if w.kind not in ("Job", "Pod") or not w.obj.origin.startswith("helm:"):
        return None
    from advisor.read.render.hooks import helm_hook

    return helm_hook(w.obj)


# a config file's own default host (a pod's sidecar, or a development default the env
# overrides): not a further route of its own
_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


# a database user or password variable (POSTGRES_PASSWORD, DB_USER, PGPASSWORD)
_CREDENTIAL = lazy(r"(?:POSTGRES|PG|DB|DATABASE)\w*(?:PASSWORD|PASS|USER)", re.I)


def credential_secret(var: EnvVar) -> str | None:
    """The Secret a database user or password variable takes its value from."""
    ref = var.from_ref or ""
    if not ref.startswith("secret:") or not _CREDENTIAL.search(var.name):
        return None
    return ref[len("secret:"):].split(" ", 1)[0].split("/", 1)[0] or None


def _shared_credentials_route(w: Workload, credentials: dict[tuple[str, str], str],
                              host_map: dict[str, tuple[str, str]], default_ns: str
                              ) -> tuple[Route, str] | None:
    namespace = w.namespace or default_ns
    for c in w.containers:
        for var in c.env:
            secret = credential_secret(var)
            server_id = credentials.get((namespace, secret)) if secret else None
            if server_id is None:
                continue
            host = next((h for h, t in host_map.items() if t == ("server", server_id)), None)
            if host is None:
                continue
            return (Route(host=host, source=replace(var.source, key=var.name)),
                    f"{var.name} ({var.source.label()}) comes from Secret {secret}, which "
                    f"also gives server {server_id} its credentials")
    return None


def _root_built_elsewhere(hints: BuildHints | None) -> bool:
    """The repository's image builds (compose, skaffold, build commands) all run from
    folders other than the root, and the root holds no Dockerfile: an image none of them
    names is not built from the root's files (skanehira/url-shortener's kibana beside its
    Cargo workspace, built from docker/)."""
    if hints is None or not hints.contexts or "" in hints.dockerfile_dirs:
        return False
    return all(ctx not in ("", ".") for _, ctx, _ in hints.contexts)


def _no_database_library(w: Workload, app: AppSource | None, runs_app: set[str]
                         ) -> str | None:
    """Why the workload's application is no database client: its containers that run
    it read dependency files that name no database library (and none runs anything else)."""
    mine = [c for c in w.containers if c.role != "init"]
    if app is None or not mine or any(c.name not in runs_app for c in mine):
        return None
    whys = [no_database_library(c, app) for c in mine]
    return whys[0] if all(whys) else None


def _go_opens_none(w: Workload, app: AppSource | None, runs_app: set[str]) -> str | None:
    """Why the workload opens no connection when every running container runs its Go
    application and that application's Go code imports no database driver or pool
    (identify.go_imports_no_database); else None."""
    mine = [c for c in w.containers if c.role != "init"]
    if app is None or not mine or any(c.name not in runs_app for c in mine) or \
            not app.of_kind("go"):
        return None
    from advisor.read.apps.identify import go_imports_no_database

    return go_imports_no_database(app.of_kind("go", "go-mod"))


def _on_shared_route(pool: Pool, shared: Route) -> Pool:
    """A pool that names no host, put on the host of the server whose credentials its
    workload shares; a database name or port its own route gives is kept."""
    if pool.route is not None and pool.route.host:
        return pool
    if pool.route is None:
        return replace(pool, route=shared)
    return replace(pool, route=replace(pool.route, host=shared.host,
                                       port=pool.route.port or shared.port))


def _pgpool_route(c: Container, app: AppSource | None) -> Route | None:
    """A Pgpool-II container's first backend, when its reader gave no pool (its sizes are
    unknown): where those connections count. With pools, each pool carries its route."""
    if "pgpool" not in c.image.lower():
        return None
    from advisor.read.apps.pgpool import backend_route

    return backend_route(c, app)


def _leader_part(client: Client) -> list[Client]:
    """A pool only the leader of a leader-elected workload opens (Argo Workflows'
    synchronization pool) as a part of the client on one pod: the others, and the pod a
    rollout adds, wait for the lease."""
    mine = [p for p in client.pools if p.label == LEADER_ONLY]
    if not mine:
        return []
    client.pools = [p for p in client.pools if p.label != LEADER_ONLY]
    part = Client(
        id=f"{client.id}>leader", name=client.name, namespace=client.namespace,
        kind=client.kind, replicas=Term(label="leader (one pod holds the lease)", value=1,
                                        source=Source.default_of(
                                            "leader election: one pod at a time",
                                            key="leader")),
        pools=mine, location=client.location, suppressed=client.suppressed,
        source_dir=client.source_dir, route=mine[0].route or client.route, part_of=client.id,
        release=client.release, hook=client.hook)
    part.target_kind, part.target_id = client.target_kind, client.target_id
    return [part]


# The variables of a database connection asked about when their value is unknown are
# var_names.may_name_where's, by whole words (DB_HOSTNAME is a host, DB_NAME is not;
# audit 10a D1): REDIS_HOST, SENTRY_DSN or szinn's PGADMIN_DEFAULT_EMAIL are not (audit H).
_NOT_HERE = "(not in repository)"  # what workloads._env writes of a Secret absent here
_ELSEWHERE = "(elsewhere: "  # ... of one in the repository, not in the pod's namespace
# a Secret's name (database-app, photos-postgres-secret) or a variable's that says database
_CONNECTION_NAME = lazy(r"DATABASE|(^|_)DB|POSTGRES|(^|_)PG|JDBC|SQL", re.I)


def _remote_connection_notes(w: Workload) -> list[str]:
    """A connection variable whose value (or host) is fetched from a remote store when
    applied (an ExternalSecret's): where the workload connects is unknown here, and
    said so, instead of the workload quietly talking to no database."""
    notes = []
    for c in w.containers:
        if is_pgbouncer_container(c):
            continue
        for var in c.env:
            ref = var.from_ref or ""
            if var.name.endswith("*") and var.value is None and "(remote: " in ref:
                notes.append(f"{workload_id(w)}: takes variables of names not known here "
                             f"from {ref.split(' ', 1)[0]} ({var.source.label()}): "
                             f"{ref[ref.index('(remote: ') + 9:-1]}; if where it connects "
                             "is among them, it is unknown, and in no budget (declare it: "
                             "[[workloads]] target and connections)")
                continue
            secret = ref.split(" ", 1)[0].removeprefix("secret:")
            if var.name.endswith("*") and var.value is None and _CONNECTION_NAME.search(
                    secret) and (_NOT_HERE in ref or _ELSEWHERE in ref):
                # a database Secret made where it is deployed (ext-postgres-operator's
                # database-<app>): what it holds, and where the pods connect, is unknown
                notes.append(f"{workload_id(w)}: takes its variables from Secret {secret} "
                             f"({var.source.label()}), {_why_absent(ref, secret)}; "
                             "if where it connects is among them, it is unknown, and in "
                             "no budget (declare it: [[workloads]] target and connections)")
                continue
            note = unknown_connection_note(workload_id(w), var)
            if note:
                notes.append(note)
    return notes


def _names_no_server(value: str) -> bool:
    """A connection string that is a file (an SQLite database: GizmoTickler/home-ops's
    pocket-id DB_CONNECTION_STRING=/data/pocket-id.db) or another engine's URL."""
    text = value.strip().lower()
    return text.startswith(("/", "./", "../", "~/", "file:", "sqlite:", "sqlite3:")) \
        or bool(other_scheme_hosts(text))


def _unsourced_app_image(inputs: Inputs, w: Workload) -> str | None:
    """The image of a running container that is the repository's own program (built
    here, named as its project or build, or, in a repository that holds application
    source, named for a project's part, with a placeholder owner or left for the deploy
    to fill), when the workload is not named for a JavaScript front end; None. Its
    program was not read, so whether it connects is not known. An image with an owner
    and nothing more (jaegertracing/all-in-one, aquasec/trivy) is a publisher's: not it."""
    runs = [c for c in w.containers if c.role != "init" and not is_pgbouncer_container(c)
            and non_client_server(c) is None and _configmap_script(w, c) is None
            and _idle(c) is None]
    names = {w.name, *_label_names(w), *(c.image for c in runs)}
    if not runs or frontend_word(names, ui=True):
        return None
    project = root_project_name(inputs.root)
    build = root_build_name(inputs.root)
    for c in runs:
        if _built_here(inputs, c.image) or project_image(c.image, project) \
                or named_as_build(c.image, build) or _names_the_mix_app(inputs, c.image):
            return c.image
        if inputs.app_candidates and not in_packaged_chart(w.obj.path) and (
                role_named_image(c.image) or placeholder_image(c.image)
                or unfilled_image(c.image)):
            return c.image
    return None


def _empty_connection_note(w: Workload) -> str | None:
    """Said of a workload whose running container is given a connection variable
    (DATABASE_URL) empty: a chart's `secrets: {DATABASE_URL: ""}` the deploy script fills
    (sima94/rust-microservices-architecture's scripts/deploy-services.sh passes a secrets
    values file). Its database is set where it is deployed; None when there is none."""
    for c in w.containers:
        if c.role == "init" or is_pgbouncer_container(c) or non_client_server(c) is not None:
            continue
        for var in c.env:
            if var.value is not None and not var.value.strip() and may_name_where(var.name):
                where = ", ".join(x for x in (var.from_ref, var.source.label()) if x)
                return (f"{workload_id(w)}: container {c.name} is given {var.name} empty "
                        f"({where}): it is set where it is deployed, so it may connect "
                        "to any server here and each peak is a floor (declare [[workloads]] "
                        "target and connections)")
    return None


def _dropped_connection_note(w: Workload, directory: str | None) -> list[str]:
    """Said of a workload left out as talking to no database while a container's env
    names a database host in a variable no URL reader knows (learningequality/studio's
    DATA_DB_HOST, read by settings that were not found): never dropped silently."""
    for c in w.containers:
        if c.role == "init" or is_pgbouncer_container(c):
            continue
        for var in c.env:
            if var.value and names_where(var.name) and not _names_no_server(var.value):
                where = "no application source was found for it" if directory is None else \
                    f"its source {directory or '.'}/ names no pool or host read here"
                return [f"{workload_id(w)}: container {c.name} is given {var.name}="
                        f"{var.value!r} ({var.source.label()}), but {where}: not counted in "
                        "any budget (declare [[workloads]] source, or target and connections)"]
    return []


def _why_absent(ref: str, secret: str = "") -> str:
    """Why a Secret a pod names gives it nothing here, as `from_ref` says (`secret`: said
    in front of it, when named): absent, or in the repository but not where the pod
    reads it (another namespace, or without the key)."""
    head = "which is " if secret else "is "
    if _ELSEWHERE in ref:
        return head + ref[ref.index(_ELSEWHERE) + len(_ELSEWHERE):].removesuffix(")")
    return head + ("not in the repository" if secret else
                   "not in the repository (made where it is deployed: by hand, by an "
                   "operator, by a pipeline)")


def unknown_connection_note(who: str, var: EnvVar) -> str | None:
    """The notice for a connection variable (DATABASE_URL, *_POSTGRES_HOST) whose value
    is not known here: fetched by an ExternalSecret, encrypted with SOPS; None for any
    other variable."""
    ref = var.from_ref or ""
    if not may_name_where(var.name):
        return None
    if var.value is None and "(remote: " in ref:
        why = ref[ref.index("(remote: ") + 9:-1]
    elif var.value is None and (_NOT_HERE in ref or _ELSEWHERE in ref):
        why = f"Secret {ref.split('/', 1)[0].removeprefix('secret:')} " + _why_absent(ref)
    elif var.value is not None and "{{ ." in var.value and ref.startswith("secret:"):
        why = "its host is templated from values fetched from the remote store when applied"
    else:
        return None
    return (f"{who}: {var.name} ({ref.split(' ', 1)[0]}, {var.source.label()}) is unknown "
            f"here: {why}; where it connects is not known, so it is in no budget (declare "
            "it: [[workloads]] target and connections)")


def _not_operator_made(env: tuple[EnvVar, ...], made: ConfigIndex | None
                       ) -> tuple[EnvVar, ...]:
    """The variables that do not come from a Secret an operator makes."""
    if not made:
        return env
    names = {f"secret:{name}/" for (_kind, _ns, name) in made}
    return tuple(e for e in env if not (e.from_ref and e.from_ref[:e.from_ref.find("/") + 1]
                                        in names))


def _split_by_target(topo: Topology, client: Client, extra: list[Route],
                     target: tuple[str, str] | None,
                     target_of: Callable[[Route], tuple[str, str] | None]) -> list[Client]:
    """The client's further routes: those reaching its own target stay its
    `extra_routes` (their pairs open pools on that pooler); each other target reached
    gets a part of the client (same pods, `part_of` its id) holding the pools read for
    those routes, so every server or pooler the workload reaches counts it, each pool
    once. A part none of whose pools is known is unknown there (PA106), never 0."""
    groups: dict[tuple[str, str] | None, list[Route]] = {}
    for r in extra:
        at = target_of(r)
        if at == target:
            client.extra_routes.append(r)
        else:
            groups.setdefault(at, []).append(r)
    parts = []
    for at, routes in groups.items():
        keys = {route_key(r) for r in routes}
        moved = [p for p in client.pools if p.route is not None and route_key(p.route) in keys]
        first = routes[0]
        part = Client(
            id=f"{client.id}>{at[1] if at is not None else first.host}", name=client.name,
            namespace=client.namespace, kind=client.kind, replicas=client.replicas,
            surge=client.surge, pools=moved, location=client.location,
            suppressed=client.suppressed, source_dir=client.source_dir, route=first,
            extra_routes=routes[1:], part_of=client.id,
            unknown="" if moved else client.unknown or _why_unknown_route(client, first),
            release=client.release, hook=client.hook)
        if at is not None:  # else PA107 reports the host this part connects to
            part.target_kind, part.target_id = at  # type: ignore[assignment]
        parts.append(part)
        if moved:
            had = [p.label for p in client.pools]
            gone = {id(p) for p in moved}
            client.pools = [p for p in client.pools if id(p) not in gone]
            if not client.pools and not client.unknown and client.route is not None:
                client.unknown = _why_unknown_route(part, client.route, had)
    return parts


def _why_unknown_route(other: Client, route: Route, labels: list[str] | None = None) -> str:
    """Why a client's connections on `route` are unknown when its pools read are all
    on other routes."""
    read = ", ".join(dict.fromkeys(labels or [p.label for p in other.pools])) or "none"
    where = f"elsewhere ({other.route.host})" if other.route else \
        "where the repository does not say"
    return (f"the pools read for it ({read}) connect {where}; none is known for its "
            f"connection to {route.host} ({route.source.label()}, "
            f"{route.source.key or 'its route'})")


def _without_own_routes(w: Workload, pools: list[Pool], route: Route | None,
                        extra: list[Route], own: Callable[..., dict | None],
                        dropped: list[tuple[Route, dict]]
                        ) -> tuple[list[Pool], Route | None, list[Route]]:
    """The pools, route and further routes left once those reaching the workload's own
    Service are taken off (each taken off is added to `dropped` with its Service): a
    database StatefulSet whose env names its own Service (bank-of-anthos ledger-db's
    SPRING_DATASOURCE_URL, shared with its clients through one ConfigMap) is not a
    client of itself."""
    verdicts: dict[Route, dict | None] = {}
    # own() reads only the host (and w): asked once per host, not per route (a pool's
    # route and the container's name one host, cited at two places)
    by_host: dict[str | None, dict | None] = {}

    def is_own(r: Route | None) -> bool:
        if r is None:
            return False
        if r not in verdicts:
            if r.host not in by_host:
                by_host[r.host] = own(r.host, w)
            verdicts[r] = by_host[r.host]
            if verdicts[r] is not None:
                dropped.append((r, verdicts[r]))  # type: ignore[arg-type]
        return verdicts[r] is not None

    own_route = is_own(route)
    kept = [p for p in pools if not is_own(p.route)]
    extra = [r for r in extra if not is_own(r)]
    if own_route:
        route = next((p.route for p in kept if p.route is not None and p.route.host), None)
        if route is None and extra:
            route, extra = extra[0], extra[1:]
    return kept, route, _other_routes(route, extra)


def _server_key(route: Route | None) -> tuple[str, int | None]:
    """The server a route leads to (its database and user share that server's slots)."""
    # no port is libpq's default, 5432: `db` and `db:5432` are one server
    return ("", None) if route is None else ((route.host or "").lower(), route.port or 5432)


def _init_within_running(init_pools: list[Pool], running: list[Pool]) -> bool:
    """Whether the running containers hold, where each init pool leads, at least as many
    connections as the init container did: only then is the init container's count not
    the pod's at any server (a migration to a database the app does not use is still
    that server's connection while it runs)."""
    held: dict[tuple[str, int | None], float] = {}
    for p in running:
        # an unbounded pool holds at least one per process (what its budget counts)
        n = p.per_pod() if p.bound != "unbounded" else max(
            p.per_pod(), p.processes.value if p.processes else 1)
        held[_server_key(p.route)] = held.get(_server_key(p.route), 0) + n
    needed: dict[tuple[str, int | None], float] = {}
    for p in init_pools:
        needed[_server_key(p.route)] = needed.get(_server_key(p.route), 0) + p.per_pod()
    return all(held.get(key, 0) >= n for key, n in needed.items())


def _one_init_run(w: Workload, runs: list[tuple[str, list[Pool]]], topo: Topology
                  ) -> list[Pool]:
    """The pools of the init container that holds the most: init containers run one
    after another, each to completion before the next starts (Kubernetes, "Init
    Containers"), so a pod holds one's connections at a time, not their sum (Temporal's
    schema Job: create-database and setup/update-schema per store, four runs of one
    connection each)."""
    if len(runs) <= 1:
        return runs[0][1] if runs else []
    name, most = max(runs, key=lambda run: sum(p.size.value for p in run[1]))
    topo.notices.append(
        f"{workload_id(w)}: its init containers {', '.join(r[0] for r in runs)} run one "
        f"after another: counted as {name}'s, the most one of them holds")
    return most


def _service_host_links(w: Workload, services: list[Route], known: list[Route | None],
                        host_map: dict[str, tuple[str, str]], namespace: str,
                        notices: list[str]) -> list[Route]:
    """The routes of host variables no database-host rule reads whose value is a
    server's or pooler's Service here (hosts.service_host_routes), less those reaching a
    target another route of the container already reaches (KC_DB_URL_HOST beside the
    Keycloak family it belongs to): each said, with the variable that links it."""
    reached = {resolve_host(r.host, namespace, host_map) for r in known
               if r is not None and not any(r is s for s in services)}
    out: list[Route] = []
    for r in services:
        at = resolve_host(r.host, namespace, host_map)
        if at is None or at in reached:
            continue
        reached.add(at)
        out.append(r)
        notices.append(
            f"{workload_id(w)}: {r.source.key} = {r.host} ({r.source.label()}) is the "
            f"Service of {at[0]} {at[1]}: counted as a connection to it (a host variable "
            "whose value is a PostgreSQL server's or pooler's Service here); its database "
            "and user are not read")
    return out


def _other_routes(route: Route | None, routes: list[Route]) -> list[Route]:
    """`routes` less `route` and repeats (the same host, port, database and user)."""
    seen = {route_key(route)} if route is not None else set()
    out = []
    for r in routes:
        if route_key(r) not in seen:
            seen.add(route_key(r))
            out.append(r)
    return out


def _identified_defaults(inputs: Inputs, topo: Topology, w: Workload, app: object,
                         route: Route) -> list[Pool] | None:
    """No reader found a pool: the default of the stack the URL or dependencies name;
    None when the only container a stack was identified for runs a Celery monitor
    (Flower, `celery events`), which opens none of the application's pools."""
    monitors: list[str] = []
    others = 0  # containers identified as neither a pool nor a monitor
    for c in w.containers:
        if is_pgbouncer_container(c) or c.role == "init" or non_client_server(c):
            continue
        found = guarded(topo.problems, w.obj.path, partial(
            default_pools_for_container, c, app, route, node_cpus=inputs.settings.node()),
            None, f"identifying the stack of container {c.name!r}", w.obj.line)
        if found is not None and found.pools:
            topo.notices.extend(found.notices)
            return found.pools
        if found is not None and found.monitor:
            monitors += [n for n in found.notices if "runs Celery" in n]
        else:
            others += 1
    if monitors and not others:
        topo.notices.extend(monitors)
        return None
    return []


def _why_unknown(w: Workload, directory: str | None, app: object | None) -> str:
    """What was looked for, and where, when a client's connections per pod stay unknown."""
    jdbc = next((e for c in w.containers for e in c.env
                 if (e.value or "").strip().lower().startswith("jdbc:")), None)
    if jdbc is not None:
        return f"{_why_unknown_read(w, directory, app)}; {jdbc.name} ({jdbc.source.label()}) " \
            "is a JDBC URL, which names the driver, not the pool (HikariCP, c3p0, DBCP, " \
            "Agroal, WildFly each have their own default)"
    return _why_unknown_read(w, directory, app) + _env_seen_unused(w)


# Variables that size a pool only through the application's own configuration, which is
# not read: why the value seen in the env was not taken (chatwoot's chart sets
# RAILS_MAX_THREADS 5; its pool is config/database.yml's `pool:`, in the image)
_POOL_VIA_APP_CONFIG = {
    "RAILS_MAX_THREADS": "sizes a Rails pool only through config/database.yml's `pool:` "
                         "(Rails' template: ENV.fetch(\"RAILS_MAX_THREADS\") { 5 })",
    "SIDEKIQ_CONCURRENCY": "sizes a pool only through config/database.yml's `pool:`, when "
                           "that reads it",
}


def _env_seen_unused(w: Workload) -> str:
    """'; NAME=v (where) is in its env, but ...' for each variable of the env that sizes
    a pool only through application configuration not read here; '' when none."""
    seen = [(e, why) for c in w.containers if c.role != "init" for e in c.env
            if (why := _POOL_VIA_APP_CONFIG.get(e.name)) is not None]
    return "".join(
        f"; {e.name}{'=' + e.value if e.value is not None else ''} ({e.source.label()}) is in "
        f"its env, but it {why}, which is not read here, so it is not taken for the pool "
        "size" for e, why in dict((e.name, (e, why)) for e, why in seen).values())


def _why_unknown_read(w: Workload, directory: str | None, app: object | None) -> str:
    if directory is None:
        return ("no application source folder found for it (looked for: [[workloads]] "
                "source, skaffold/compose build contexts and `docker build -t` commands "
                "naming its image, a folder with a "
                "Dockerfile or build file named like the image or workload, the root's "
                "application files, the repository's only application folder or only one "
                "with a Dockerfile); its container env "
                "names no pool size of a known stack")
    files = getattr(app, "files", ())
    return (f"read {directory or '.'}/ ({len(files)} application files) and the container "
            "env: no pool of a known stack (HikariCP/Spring, Quarkus, Dropwizard, Vert.x, "
            "SQLAlchemy, Django, "
            "psycopg_pool, asyncpg, node-postgres, Sequelize, Knex, TypeORM, Prisma, pgx, "
            "database/sql, Rails, Npgsql, Ecto, sqlx, deadpool-postgres, r2d2, tokio-postgres, "
            "Laravel) and no "
            "driver dependency to take a default from")


# A line of a configuration file that names where to connect.
_CONNECTION_LINE = lazy(r"host|addr|server|dsn|url|uri|endpoint|seeds|://", re.I)
_HOST_TOKEN = lazy(r"[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?")
# a PostgreSQL URL on a mounted configuration line (quotes and spaces end it)
_PG_URL = lazy(r"\bpostgres(?:ql)?://[^\s'\"]+", re.I)
_MAX_CONFIG_SCAN = 256 * 1024  # characters of one mounted file looked through
# A comment line of YAML, TOML, INI or a .conf (`#`, `;`) or of JS/JSONC (`//`): prose
# that names a pooler ("the readiness probe goes through pgbouncer-ro") connects nowhere
_COMMENT = lazy(r"\s*(?:#|;|//)")


def _app_containers(w: Workload) -> set[str]:
    """The containers that run the application whose source folder was found: in a pod
    with sidecars (a kubectl token syncer, a log shipper), the ones with the image of a
    container whose env names a database (by a URL reader, else by a variable's name:
    learningequality/studio's DATA_DB_HOST beside an nginx), else the images this
    repository may build; all of them when that does not tell. The others are read from
    their env alone: a sidecar does not open the application's pools."""
    names = {c.name for c in w.containers}
    running = [c for c in w.containers if c.role != "init" and not is_pgbouncer_container(c)]
    if len(running) <= 1:
        return names
    keep = {image_repository(c.image) for c in running if route_from_env(c.env)} or \
        {image_repository(c.image) for c in running if any(
            e.value and _CONNECTION_NAME.search(e.name) for e in c.env)} or \
        {image_repository(c.image) for c in running if maybe_built_here(c.image)}
    if not keep:
        return names
    return {c.name for c in w.containers
            if c.role == "init" or image_repository(c.image) in keep}


def _service_binding_route(w: Workload, c: Container, index: ConfigIndex, topo: Topology
                           ) -> Route | None:
    """The PostgreSQL server a Service Binding (servicebinding.io) gives the container: a
    Secret whose `type` entry is postgresql, mounted below $SERVICE_BINDING_ROOT. A
    binding-aware library (Spring Cloud Bindings, which Paketo's Spring Boot buildpack
    adds; Quarkus kubernetes-service-binding) sets the datasource from its host, port
    and database, ahead of the application's own URL; a notice says it is assumed."""
    root = next((e.value for e in c.env if e.name == "SERVICE_BINDING_ROOT" and e.value), None)
    if root is None:
        return None
    base = root.rstrip("/") + "/"
    for vol, path in w.mounts.get(c.name, []):
        if not (path.rstrip("/") + "/").startswith(base):
            continue
        for kind, name in w.volume_sources.get(vol, []):
            data = lookup(index, kind, w.namespace, name) if kind == "secret" else None
            if data is None or data.data.get("type", "").strip().lower() != "postgresql" \
                    or not data.data.get("host"):
                continue
            port = data.data.get("port", "").strip()
            route = Route(host=data.data["host"].strip(),
                          port=int(port) if port.isdigit() else None,
                          dbname=data.data.get("database") or None,
                          user=data.data.get("username") or None, source=data.source("host"))
            topo.notices.append(
                f"{workload_id(w)}: connects to {route.host!r} ({route.source.label()}) "
                f"through the Service Binding Secret {name} mounted at {path} "
                f"(SERVICE_BINDING_ROOT={root}): a binding-aware library (Spring Cloud "
                "Bindings, Quarkus kubernetes-service-binding) is assumed to set the "
                "datasource from it, ahead of the application's own URL")
            return route
    return None


def _mounted_config_route(w: Workload, index: ConfigIndex, host_map: dict,
                          namespace: str) -> Route | None:
    """A route to a known server or pooler named on a connection line (host, addr,
    url, dsn...) of a ConfigMap or Secret file mounted into one of the workload's
    containers; the source is that line. Else the host of a `postgres://` URL there
    that names no server here (OpenMeter's config.yaml `postgres.url` under a release
    name its chart's DSN does not match): the workload connects there (PA107), not
    "names no database host". A bare host on another connection line may be any
    service's (Kafka, ClickHouse), so only a known server's is taken."""
    unknown: Route | None = None
    # a PgBouncer container's own files, mounted or copied in by an init container
    # (Workload.copied_config_sources): the pooler's [databases] hosts, not a client's
    bouncer_files = {(kind, name) for c in w.containers if is_pgbouncer_container(c)
                     for kind, name, _by in w.copied_config_sources(c.name)}
    for c in w.containers:
        if is_pgbouncer_container(c):
            continue
        for kind, name in w.config_sources(c.name):
            if (kind, name) in bouncer_files:
                continue
            data = lookup(index, kind, w.namespace, name)
            if data is None or data.made_by is not None:
                continue
            for key, text in data.data.items():
                for number, line in enumerate(text[:_MAX_CONFIG_SCAN].splitlines(), start=1):
                    if not _CONNECTION_LINE.search(line) or _COMMENT.match(line):
                        continue
                    shown, offset = data.text_origin(key)
                    where = Source(path=shown, line=offset + number, key=f"{name}/{key}")
                    elsewhere = other_scheme_hosts(line)
                    for token in _HOST_TOKEN.findall(line.lower()):
                        if token in elsewhere or resolve_host(token, namespace,
                                                              host_map) is None:
                            continue
                        return Route(host=token, source=where)
                    if unknown is None and (m := _PG_URL.search(line)):
                        found = route_from_url(m.group(0), where)
                        unknown = found if found is not None and found.host else None
                if unknown is None and key.lower().endswith(_SECTIONED):
                    unknown = _section_route(text[:_MAX_CONFIG_SCAN], *data.text_origin(key),
                                             f"{name}/{key}")
    return unknown


# a file by its key's extension, or a ConfigMap key named so without the dot (the zitadel
# chart's zitadel-config-yaml, mounted as /config/zitadel-config-yaml: audit 47 D3)
_SECTIONED = (".json", ".yaml", ".yml", "-json", "-yaml", "-yml")


def _section_route(text: str, shown: str, offset: int, where: str) -> Route | None:
    """The host of a PostgreSQL section of a mounted JSON/YAML file that names no server
    here (`"Postgres": {"Host": ...}`): the workload connects there (PA107), not "names
    no database host" (mattfenwick/scaling's config.json, audit 13e N3). A host under a
    section named only database/db is taken for a known server only (the line scan)."""
    from advisor.read.config_sections import section_hosts

    for found in section_hosts(text):
        if found.postgres and found.host.lower() not in _LOOPBACK_HOSTS:
            return Route(host=found.host, port=found.port, dbname=found.dbname,
                         user=found.user, source=Source(path=shown, line=offset + found.line,
                                                        key=f"{where} {found.section}"))
    return None


def parse_cache(inputs: Inputs) -> object | None:
    """The run's parse cache (advisor.read.cache.FileCache), None without one."""
    once = inputs.root.once
    return once.cache if once is not None else None


def _env_hazards(w: Workload, client_id: str) -> list[SqlHazard]:
    """Startup options and prepared-statement settings in the containers' connection
    env (PGOPTIONS, URLs). Values from Secrets are not looked at: they would end up in
    a finding's text."""
    # imported here: called only behind a pooler, which most runs (the demo too) lack
    from advisor.read.sql.drivers import command_hazards, env_hazards, may_hold_env_hazard

    return [h for c in w.containers if not is_pgbouncer_container(c)
            for e in c.env if not e.secret and may_hold_env_hazard(e)
            for h in env_hazards(e, client_id)] + [
        h for c in w.containers if not is_pgbouncer_container(c) and "prisma" in
        " ".join(c.command + c.args)
        for h in command_hazards(c.command + c.args, c.word_sources, c.source, client_id)]


def _client_surge(inputs: Inputs, w: Workload, replicas: Term) -> Term | None:
    return surge(w.obj, replicas.value) if inputs.settings.count_surge else None


def _app_directory(inputs: Inputs, w: Workload, topo: Topology) -> str | None:
    """The workload's application source folder: declared, else inferred by name."""
    directory = inputs.app_dirs.get(w.name)
    return directory if directory is not None else _inferred_app_dir(inputs, w, topo)


def _inferred(topo: Topology, w: Workload, directory: str, reason: str) -> str:
    """`directory` as the workload's source, with the notice that says why."""
    topo.notices.append(f"{workload_id(w)}: application source inferred as "
                        f"{directory or '.'}/ ({reason}); declare [[workloads]] source = ... "
                        "to choose another")
    return directory


def _inferred_app_dir(inputs: Inputs, w: Workload, topo: Topology) -> str | None:
    """The source folder named like the workload or its image (services/checkout for
    Deployment checkout or image acme/checkout:1.2); only when exactly one matches."""
    for c in w.containers:
        if c.role != "init" and (ko := ko_app_dir(inputs.root, c.image)) is not None:
            return _inferred(topo, w, ko, f"ko builds {c.image} from that Go package")
    hinted = inputs.build_hints is not None and bool(inputs.build_hints.contexts)
    if not inputs.app_candidates and not hinted:
        # no folder holds an application and no build context names one: none of what
        # follows finds a folder (asked before the images are parsed: ~10 M
        # instructions of a warm check of 5,000 manifests without application sources)
        return None
    scripted = {c.name: found for c in w.containers
                if c.role != "init" and (found := _configmap_script(w, c) or _idle(c))
                is not None}
    runs = [c for c in w.containers if c.role != "init" and c.name not in scripted]
    if scripted:
        topo.notices.append(
            f"{workload_id(w)}: " + "; ".join(
                f"container {name} runs {why}, not the repository's application"
                for name, why in scripted.items())
            + ("" if runs else ": no application source is looked for"))
        if not runs:
            return None
    running = [c.image for c in runs]
    # a bare name pulled Never and named like its workload (tech-challenge-api:latest of
    # Deployment tech-challenge-api) is no official image: the node has it because it was
    # built there (an official redis:7 pulled Never is still redis)
    own = {w.name.lower(), *(n.lower() for n in _label_names(w))}
    local = [c.image for c in w.containers if c.role != "init" and c.local_image
             and image_name(c.image).lower() in own]
    if running and not local and (only := _only_dockerfile_pulled_never(inputs, w)):
        return _inferred(topo, w, only, f"the repository's only Dockerfile "
                         f"({only + '/' if only else ''}Dockerfile) and the image is pulled "
                         "Never, so built on the node")
    release = any(_names_the_mix_app(inputs, image) for image in running)
    project = root_project_name(inputs.root)
    if running and not local and not release and all(
            _published_program(image) and not _built_here(inputs, image)
            and not project_image(image, project) for image in running):
        # rabbitmq:3-management, mysql, redis: a published program, not the application a
        # folder named like the release holds (aws-containers' retail-store chart labels
        # its orders-rabbitmq pods app.kubernetes.io/name=orders, like src/orders)
        return None
    if inputs.build_hints is not None and inputs.build_hints.contexts:
        guess = match_app_dir(inputs.build_hints, w.name, [c.image for c in w.containers],
                              _label_names(w))
        if guess is not None:
            return _inferred(topo, w, guess.directory, guess.reason)
    if not inputs.app_candidates:
        # no folder holds an application: none is named like the workload, no module has
        # a cmd/ of its name, and fallback_app_dir has none to take (the root is taken
        # only as the candidate ""): what follows finds None (~85k instructions a
        # workload, 4% of a warm check of 5,000 manifests without application sources)
        return None
    names = {w.name.lower(), *(n.lower() for n in _label_names(w))}
    for c in w.containers:
        repo = image_name(c.image).lower()
        if repo:
            names.add(repo)
    matches = []
    for d in inputs.app_candidates:
        if in_test_tree(d, w.obj.path):
            continue  # a test's fixture project named like it (audit 46 D2)
        parts = [p.lower() for p in d.split("/")]
        # application.yml sits in src/main/resources: the app is the folder above src/
        # (not a repository's own src/<team>/<service>/ folders: src/ must hold main/)
        cut = next((i for i, p in enumerate(parts[:-1]) if p == "src" and parts[i + 1] == "main"),
                   None)
        top = parts[:cut] if cut is not None else parts
        if top and top[-1] in names:
            matches.append("/".join(d.split("/")[:len(top)]))
    matches = sorted(set(matches))
    if not matches:
        # a Python package folder builds an image named with - for _ (osstorres/
        # django-k8s-pycon2024: applications/core_application, image core-application)
        loose = {loose_name(n) for n in names} - {""}
        alike = {d for d in inputs.app_candidates
                 if loose_name(d.rsplit("/", 1)[-1]) in loose
                 and not in_test_tree(d, w.obj.path)}
        if len(alike) == 1:
            return _inferred(topo, w, alike.pop(), "folder named like the workload or "
                             "its image, but for - and _")
    if not matches and (pkg := package_named_dir(
            inputs.root, [d for d in inputs.app_candidates
                          if not in_test_tree(d, w.obj.path)], names)) is not None:
        # backend/ whose package.json is todo-backend, the image and workload's name,
        # beside frontend/ (audit 46 D3: no folder was inferred, the peak a floor)
        return _inferred(topo, w, pkg, "its package.json name is the workload's or its "
                         "image's")
    if not matches and (pre := prefixed_folder(inputs.app_candidates, running,
                                               project_prefixes(inputs.root))) is not None:
        # airbyte/server built from airbyte-server/ (not the root's Gradle build, whose
        # every module's pools it was given)
        return _inferred(topo, w, pre.directory, pre.reason)
    if not matches and (go := go_command_dir(inputs.root, inputs.app_candidates,
                                             names)) is not None:
        return _inferred(topo, w, go, "the Go command of that name in its module's cmd/ "
                         "(read with the module's packages it imports)")
    if not matches:
        if not local and not release and not any(
                maybe_built_here(i) or project_image(i, project)
                or named_as_build(i, root_build_name(inputs.root)) for i in running):
            return None
        if in_packaged_chart(w.obj.path):
            return None  # a fetched dependency's image (cert-manager) is not built here
        part = project_part_dir(inputs.app_candidates, tuple(running),
                                root_project_name(inputs.root))
        if part is not None:
            # marquezproject/marquez-web is web/ (a Node UI), not the root's Dropwizard app
            return _inferred(topo, w, part.directory, part.reason)
        named = named_service_dir(inputs.root, inputs.app_candidates, names)
        if named is not None:
            # services/driver-service of a root go.mod, its Dockerfile in infra/: the
            # folder of its name, not the repository's one other application (web/)
            return _inferred(topo, w, named, "folder named like the workload or its image, "
                             "in the services/, cmd/ or apps/ of an application folder")
        # not an init container's image's name: changelog.com's app pod runs its backups
        # image first, and the app is not built by backups.Dockerfile
        own = {w.name.lower(), *(n.lower() for n in _label_names(w)),
               *(image_name(i).lower() for i in running)}
        built = image_dockerfile(_hints(inputs), running, own)
        copied: list[str] = []
        if built is not None:
            decided = _own_dockerfile_source(inputs, w, topo, built, own)
            if decided is not None:
                return decided[0]
            copied = copied_folders(inputs.root, built.path)[0]
        shared = compose_env_dir(_hints(inputs), {e.name for c in w.containers
                                                  if c.role != "init" for e in c.env})
        if shared is not None:
            return _inferred(topo, w, shared.directory, shared.reason)
        guess = fallback_app_dir(inputs.root, inputs.app_candidates, names,
                                 tuple(c.image for c in w.containers if c.role != "init"),
                                 claimed_folders(_hints(inputs), names),
                                 local=bool(local) and len(local) == len(running),
                                 built_elsewhere=_root_built_elsewhere(_hints(inputs)))
        if guess is None:
            return None
        if guess.directory == "" and (owner := root_image_owner(
                _hints(inputs), root_build_name(inputs.root), project,
                _run_images(inputs, w.namespace), names)) is not None:
            topo.notices.append(
                f"{workload_id(w)}: application source not inferred: the repository root's "
                f"application is not what it runs ({owner}; it runs "
                f"{', '.join(running)}), though {guess.reason}; declare [[workloads]] "
                "source = ... to read its pools")
            return None
        if guess.directory == "" and (word := frontend_word(names)) is not None and \
                python_only_root(inputs.root):
            # krish-96/FlaskPostgresK8s: react-app (react-builds, a Vite server) was
            # given the root's Flask code, and its SQLAlchemy pool "may connect here"
            topo.notices.append(
                f"{workload_id(w)}: application source not inferred: it is named for "
                f"{word}, a JavaScript front end, and the repository root's application is "
                f"Python ({guess.reason}); declare [[workloads]] source = ... to read its "
                "pools")
            return None
        if guess.directory == "" and (other := _parent_chart_image(inputs, w)) is not None:
            # Sajeyks/Django-Helm: charts/freeradius's sajeyks/radius beside the chart's
            # own sajeyks/hello-world: the root's one application is not both
            topo.notices.append(
                f"{workload_id(w)}: application source not inferred: it is rendered from "
                f"a subchart ({w.obj.path}) and runs {running[0]}, while the parent "
                f"chart's own {other[0]} runs {other[1]}: {guess.reason}, but the root's "
                "application is taken for the parent chart's image; declare [[workloads]] "
                "source = ... to read its pools")
            return None
        if built is not None and guess.directory and guess.directory not in copied and \
                not built.path.startswith(f"{guess.directory}/"):
            # a weak guess against what builds the image: unknown, said, not a wrong folder
            topo.notices.append(
                f"{workload_id(w)}: application source not inferred: {built.path} builds "
                f"its image ({built.reason}) and does not copy {guess.directory}/, "
                f"{guess.reason}; declare [[workloads]] source = ... to read its pools")
            return None
        return _inferred(topo, w, guess.directory, guess.reason)
    if len(matches) != 1:
        return None

    if "/" not in matches[0] and "" in inputs.app_candidates and \
            not app_files_in(inputs.root, matches[0], DEPENDENCY_FILES) and \
            app_files_in(inputs.root, "", DEPENDENCY_FILES):
        # the package one level down (netbox/netbox, app/<pkg>): the application's own
        # files (requirements, configs the command names) are at the root
        return _inferred(topo, w, "", f"the folder {matches[0]}/ named like it is a package "
                         "of the root's application: "
                         f"{', '.join(app_files_in(inputs.root, '', DEPENDENCY_FILES)[:3])}")
    return _inferred(topo, w, matches[0], "folder named like the workload or its image")


def _frontend_served(inputs: Inputs, w: Workload, pools: list[Pool], topo: Topology
                     ) -> list[Pool]:
    """A Sourcegraph service's pools whose DSNs the frontend serves
    (read.apps.sourcegraph), put on the databases the env of the sourcegraph/frontend
    workload of its namespace names: where the frontend's serviceConnections send it.
    Left with no route (it may connect to any server here) when no frontend, or several,
    or its env names no such database."""
    from advisor.read.apps.sourcegraph import (
        PREFIX_OF,
        env_route,
        served_database,
        sourcegraph_service,
    )

    fronts = []
    for obj in inputs.objects:
        if obj.kind not in POD_SPEC_PATHS or obj.namespace != w.namespace:
            continue
        shape = workload_shape(obj)
        fronts += [] if shape is None else [
            (obj.name, c) for c in shape.containers if c.container.role != "init"
            and sourcegraph_service(c.container.image) == "frontend"]
    if len(fronts) != 1:
        return pools
    front, shape = fronts[0]
    values = {e.name: e for e in shape.env if e.form == "value"}
    out, said = [], []
    for pool in pools:
        db = served_database(pool.label) if pool.route is None else None
        route = env_route(lambda name: values[name].value if name in values else None,
                          lambda name: replace(values[name].source, key=name),
                          PREFIX_OF[db]) if db in PREFIX_OF else None
        if route is None:
            # not on the container's other routes: where it goes is the frontend's to say
            out.append(replace(pool, route_unknown=(
                f"its {db} DSN is served by Sourcegraph's frontend {front}, whose env names "
                "no such database") if db else pool.route_unknown))
            continue
        out.append(replace(pool, route=route))
        said.append(f"{db} -> {route.host} ({route.source.label()})")
    if said:
        topo.notices.append(f"{workload_id(w)}: its database DSNs are served by Sourcegraph's "
                            f"frontend {front}, whose env names them: {'; '.join(said)}")
    return out


def _run_images(inputs: Inputs, namespace: str | None
                ) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(workload name, the images its non-init containers run) of every workload object
    of the run, those of `namespace` first (an overlay's own build, not another's),
    worked out once per object list (asked only of a workload the root is guessed for)."""
    memo = inputs.root.__dict__.setdefault("run_images", {})
    kept = memo.get(id(inputs.objects))
    if kept is None or kept[0] is not inputs.objects:
        kept = (inputs.objects, _workload_images(inputs.objects))
        memo[id(inputs.objects)] = kept  # the list kept: its id is not reused
    return tuple((name, images) for _ns, name, images in
                 sorted(kept[1], key=lambda found: found[0] != namespace))


def _workload_images(objects: list) -> tuple[tuple[str | None, str, tuple[str, ...]], ...]:
    out = []
    for obj in objects:
        if obj.kind not in POD_SPEC_PATHS:
            continue
        shape = workload_shape(obj)
        if shape is not None:
            out.append((obj.namespace, obj.name, tuple(
                c.container.image for c in shape.containers if c.container.role != "init")))
    return tuple(out)


_SUBCHART = lazy(r"^(.*?)charts/[^/]+/templates/")


def _parent_chart_image(inputs: Inputs, w: Workload) -> tuple[str, str] | None:
    """(a workload, its image) of the chart that vendors `w`'s subchart, in that
    chart's own templates, that may be built here (no postgres:16) and none of whose
    images is of the repository of one of `w`'s: a
    subchart that runs another image than its parent's is a program of its own, not the
    repository's application the parent deploys."""
    found = _SUBCHART.match(w.obj.path)
    if found is None or not w.obj.origin.startswith("helm:"):
        return None
    parent = found.group(1)
    mine = {image_repository(c.image) for c in w.containers if c.role != "init"}
    for obj in inputs.objects:
        if obj.origin != w.obj.origin or not obj.path.startswith(f"{parent}templates/") \
                or obj.kind not in POD_SPEC_PATHS:
            continue
        shape = workload_shape(obj)
        images = [] if shape is None else [
            c.container.image for c in shape.containers
            if c.container.role != "init" and maybe_built_here(c.container.image)]
        if images and not mine & {image_repository(i) for i in images}:
            return obj.name, images[0]
    return None


# stock operating-system images: what runs in them is what the pod gives them
_OS_IMAGES = frozenset({"alpine", "debian", "ubuntu", "busybox", "centos", "fedora",
                        "rockylinux", "almalinux", "amazonlinux", "bash"})


def _idle(c: Container) -> str | None:
    """What a container runs when its command only waits (`sleep 43200`, `sleep
    infinity`, `tail -f /dev/null`, also as a shell's -c text): a toolbox kept alive for
    `kubectl exec`, not the application (pasiol/django-k8s-demo's debug-pod, almalinux
    running `sleep 43200`, was given the root's Django app and its pool)."""
    words = [*c.command, *c.args]
    if len(words) == 3 and words[0].rsplit("/", 1)[-1] in SHELLS and words[1] == "-c":
        words = words[2].split()
    if (len(words) == 2 and words[0].rsplit("/", 1)[-1] == "sleep") or \
            words == ["tail", "-f", "/dev/null"]:
        return f"`{' '.join(words)}` in {c.image}, which only waits"
    return None


def _configmap_script(w: Workload, c: Container) -> str | None:
    """What a stock OS image's container runs when its command is a script (`/bin/sh
    /scripts/poll.sh`, or the script itself) under the mount path of a ConfigMap volume:
    that ConfigMap's script, not the repository's application (singla-shivam/
    AirRun-server's kaniko Job: alpine:3.13 running /scripts/kaniko-poll.sh of
    air-run-scripts-configmap was given the root's Elixir app and its Ecto pool)."""
    if image_name(c.image).lower() not in _OS_IMAGES:
        return None
    words = [*c.command, *c.args]
    while words and (words[0].rsplit("/", 1)[-1] in SHELLS or words[0].startswith("-")):
        if words[0][:1] == "-" and words[0][1:2] != "-" and "c" in words[0][1:]:
            return None  # an inline script, not a file
        words = words[1:]
    script = words[0] if words else ""
    if not script.startswith("/"):
        return None
    for volume, path in w.mounts.get(c.name, []):
        kind, name = w.volumes.get(volume, ("", ""))
        if kind == "configMap" and script.startswith(path.rstrip("/") + "/"):
            return f"{script}, a script of ConfigMap {name} mounted at {path}, in {c.image}"
    return None


def _only_dockerfile_pulled_never(inputs: Inputs, w: Workload) -> str | None:
    """The folder of the repository's only Dockerfile, when it holds an application and
    every container of the workload runs a bare-named image (no registry, no owner)
    pulled Never: the node has it because it was built there, from that Dockerfile
    (TSI-Projects/group-project: simple_go_server:latest of Deployment release-go-server,
    built from backend/Dockerfile by a Python script; its source was never looked for and
    its database/sql pool, with no SetMaxOpenConns, went unread)."""
    hints = _hints(inputs)
    running = [c for c in w.containers if c.role != "init"]
    # every Dockerfile of the repository, variants included (the engine's hints)
    if hints is None or len(hints.dockerfile_files) != 1 or not running:
        return None
    path = hints.dockerfile_files[0][0]
    only = path.rsplit("/", 1)[0] if "/" in path else ""
    if path.rsplit("/", 1)[-1] != "Dockerfile" or only not in inputs.app_candidates:
        return None
    if all(c.local_image and "/" not in image_repository(c.image) for c in running):
        return only
    return None


def _hints(inputs: Inputs) -> BuildHints | None:
    hints = inputs.build_hints
    return hints if isinstance(hints, BuildHints) else None


def _image_dockerfiles(inputs: Inputs, w: Workload) -> tuple[tuple[str, str], ...]:
    """(image, the Dockerfile that builds it) of the workload's containers, where the
    repository says (a build's dockerfile, a Dockerfile named like the image)."""
    hints = _hints(inputs)
    if hints is None or not (hints.dockerfiles or hints.dockerfile_files):
        return ()
    names = {w.name.lower(), *(n.lower() for n in _label_names(w))}
    out = []
    for c in w.containers:
        if c.image and (built := image_dockerfile(hints, [c.image], names)) is not None:
            out.append((c.image, built.path))
    return tuple(out)


def _copied_only(inputs: Inputs, w: Workload, app: AppSource, topo: Topology) -> AppSource:
    """The app's files the workload's images can hold: when the Dockerfiles that build
    every image it runs copy named paths of the folder (not `COPY . .`), files in its
    other subfolders are left out (FCFColin/backtest-platform's Dockerfile.backend copies
    packages/shared and packages/backend from the root: the Go data-fetcher/ beside them
    is another image's, whose pgxpool pools were the api's). The folder's own top-level
    files and its Dockerfiles stay (the command is read from them)."""
    built = dict(app.image_dockerfiles)
    if not all(c.image in built for c in w.containers if c.image):
        return app
    sources: list[str] = []
    for path in sorted(set(built.values())):
        copied = copied_sources(inputs.root, path, app.directory)
        if copied is None:
            return app
        sources += copied
    prefix = f"{app.directory}/" if app.directory else ""

    def held(f: AppFile) -> bool:
        if f.kind == "dockerfile" or (f.path.startswith(prefix)
                                      and "/" not in f.path[len(prefix):]):
            return True
        return any(f.path == s or f.path.startswith(f"{s}/") for s in sources)

    kept = tuple(f for f in app.files if held(f))
    if len(kept) == len(app.files):
        return app
    dockerfiles = ", ".join(sorted(set(built.values())))
    # the folders it copies, a file inside one or at the top not named again
    shown = [s for s in dict.fromkeys(sources)
             if not any(s.startswith(f"{o}/") for o in sources)
             and ("/" in s[len(prefix):] or os.path.isdir(os.path.join(inputs.root.path, s)))]
    notice = (f"{workload_id(w)}: application source {app.directory or '.'}/ read as what "
              f"{dockerfiles} copies into its image ({', '.join(shown) or 'its files'}): "
              f"{len(app.files) - len(kept)} files elsewhere in it are not read")
    if notice not in topo.notices:
        topo.notices.append(notice)
    return replace(app, files=kept)


def _own_dockerfile_source(inputs: Inputs, w: Workload, topo: Topology,
                           built: ImageDockerfile, names: set[str]
                           ) -> tuple[str | None] | None:
    """What the Dockerfile that builds the workload's image says of its source: (None,)
    when it is no application's (FROM postgres: a backup image running pg_dump, which
    took the root Elixir app's Ecto pool on thechangelog/changelog.com; or it copies no
    application folder and no project file), (folder,) for the one application folder
    it copies; None when it copies a whole context or a project file (undecided)."""
    from advisor.read.workloads import is_postgres_image

    if built.base and is_postgres_image(built.base):
        topo.notices.append(
            f"{workload_id(w)}: its image is built by {built.path} ({built.reason}) FROM "
            f"{built.base}, PostgreSQL's own image: no application source is read for it")
        return (None,)
    folders, whole = copied_folders(inputs.root, built.path)
    # an application's folder, or a service's: services/<any name>, cmd/<any name>
    apps = [f for f in folders if f in inputs.app_candidates
            or f.rsplit("/", 1)[-1].lower() in names
            or (f.count("/") == 1 and f.split("/", 1)[0] in SERVICE_PARENTS)]
    if len(apps) == 1:
        return (_inferred(topo, w, apps[0], f"{built.path} builds its image "
                          f"({built.reason}) and copies it"),)
    if whole or apps or built.by_bare_name:
        # (by_bare_name: requarks/wiki's chart beside dev/containers/docker-compose.yml's
        # service `wiki`, a dev container that copies nothing and waits: not the image's
        # build, whose source is looked for further; audit 46 D4)
        return None
    topo.notices.append(
        f"{workload_id(w)}: application source not inferred: {built.path} builds its image "
        f"({built.reason}) and copies no application folder or project file; declare "
        "[[workloads]] source = ... to read its pools")
    return (None,)


# Official images that run code they are given (a mounted or copied application),
# unlike the programs official images are (redis, rabbitmq, mysql)
_RUNTIME_IMAGES = frozenset({
    "python", "pypy", "node", "ruby", "jruby", "openjdk", "eclipse-temurin",
    "amazoncorretto", "ibmjava", "sapmachine", "golang", "php", "perl", "elixir", "erlang",
    "clojure", "groovy", "gradle", "maven", "mono", "swift", "rust", "haskell", "julia",
    "r-base", "bun", "deno", "tomcat", "jetty", "dart"}) | _OS_IMAGES


def _built_here(inputs: Inputs, image: str) -> bool:
    """Whether a `docker build -t` command or build file of the repository tags exactly
    this image: fapcon/preAIproject's minikube/main.sh builds tradeapi:latest, which its
    Deployment runs; named like an official image (no organisation), it was taken for a
    published program and its source folder was never looked for."""
    if inputs.build_hints is None:
        return False
    bare = image.removesuffix(":latest")
    repo = image_repository(image)
    # an untagged key matches a tagged image only from a build command (`docker build -t
    # hrm-app .` tags hrm-app:latest, audit 35): a compose service name is no image tag
    return any(key.removesuffix(":latest") == bare for key, _ctx, where in
               inputs.build_hints.contexts if ":" in key or ":" not in image
               or is_build_script(where.split(":", 1)[0].rsplit("/", 1)[-1])) or any(
        # the same name at another tag: a release retag of the build (andarpratama/
        # banking-api's README builds banking-api:latest, its prod overlay's kustomize
        # `images: newTag: v1.0.0` runs banking-api:v1.0.0): built here, not an official
        # image, whichever folder builds it (match_app_dir tells versions apart)
        ":" in key and "/" not in repo and image_repository(key) == repo
        for key, _ctx, _where in inputs.build_hints.contexts) or any(
        # Tilt's docker_build("web", ...) builds every tag of web the manifests run:
        # it puts its own tag in their place (Tiltfile: image refs are matched by name)
        key == image_repository(image) for key, _ctx, where in inputs.build_hints.contexts
        if where.split(":", 1)[0].rsplit("/", 1)[-1] == "Tiltfile")


def _names_the_mix_app(inputs: Inputs, image: str) -> bool:
    """An image named exactly like the OTP application of the root's mix.exs
    (phoenixkubernetes:release beside `app: :phoenixkubernetes`): the release built here,
    no official image of that name (Nor145/phoenixK8s builds it with Dockerfile.release
    from the tarball `mix release` makes)."""
    app = root_mix_app(inputs.root)
    return app is not None and image_name(image).lower().replace("-", "_") == app


def _published_program(image: str) -> bool:
    """An official library image (no organisation) of a program, not a runtime that runs
    the repository's own code."""
    repo = image_repository(image.lower())
    if variable_image(image):
        return False  # `${FHI_BASE}:${FHI_VERSION}`: a name the deploy script gives
    # rabbitmq, docker.io/library/redis, public.ecr.aws/docker/library/rabbitmq
    official = "/" not in repo or repo.split("/")[-2] == "library"
    return bool(image) and official and image_name(image).lower() not in _RUNTIME_IMAGES


def _label_names(w: Workload) -> tuple[str, ...]:
    """What the workload's pod labels call the application: a chart's workload is named
    <release>-<chart> (release-orders) while its app.kubernetes.io/name is the chart's,
    orders, as its source folder and compose service are (aws-containers'
    retail-store-sample-app: src/orders). The pod labels, not the object's: they are
    kept with the workload, and its body is not parsed again for them."""
    labels = w.pod_labels
    return tuple(labels[k] for k in ("app.kubernetes.io/name", "app")
                 if labels.get(k) and labels[k] != w.name)


def _named_target(name: str, topo: Topology) -> tuple[str, str] | None:
    for s in topo.servers:
        if name in (s.name, s.id):
            return ("server", s.id)
    for p in topo.poolers:
        if name in (p.name, p.id):
            return ("pooler", p.id)
    return None


def _declared_pool(decl: WorkloadDecl, origin: str | None, name: str, read: list[Pool],
                   route: Route | None) -> Pool:
    """A declared `pool-size` is one process's pool: it replaces the size read, not the
    process count. Without a declared `processes`, the count read from the container
    (Puma workers, gunicorn workers) still multiplies it, with its CPU formula if any."""
    src = Source(path=origin, line=decl.line_of("pool-size"), key=f"workloads.{name}.pool-size")
    pool = Pool(label="declared pool", size=Term(label="declared pool size",
                                                 value=decl.pool_size or 0, source=src),
                route=route)
    if decl.processes:
        return replace(pool, processes=Term(
            label="declared processes", value=decl.processes,
            source=replace(src, line=decl.line_of("processes"))))
    base = next((p for p in read if p.processes is not None), None)
    if base is None:
        return pool
    formula = base.cpu_formula if base.cpu_formula is not None \
        and base.cpu_formula.applies_to == "processes" else None
    return replace(pool, processes=base.processes, cpu_formula=formula,
                   cpus=base.cpus if formula is not None else None,
                   node=base.node if formula is not None else None,
                   bound="cpu" if formula is not None else "fixed")


def declared_client(decl: WorkloadDecl, inputs: Inputs, topo: Topology) -> Client | None:
    if decl.pool_size is None and decl.connections is None:
        return None
    src = Source(path=inputs.settings.origin, line=decl.line_of(""), key=f"workloads.{decl.name}")
    size_key = "pool-size" if decl.pool_size is not None else "connections"
    lines = {k: decl.line_of(k) for k in ("replicas", size_key, "processes")}
    if decl.pool_size is None:
        decl = decl.model_copy(update={"pool_size": decl.connections, "processes": None})
    client = Client(
        id=f"declared/{decl.name}", name=decl.name, namespace=decl.namespace,
        kind="declared",
        replicas=Term(label="declared replicas", value=decl.replicas or 1,
                      source=replace(src, line=lines["replicas"]) if decl.replicas else src),
        pools=[Pool(label="declared pool",
                    size=Term(label="declared pool size", value=decl.pool_size,
                              source=replace(src, line=lines[size_key])),
                    processes=Term(label="declared processes", value=decl.processes,
                                   source=replace(src, line=lines["processes"]))
                    if decl.processes else None)],
        location=Location(path=inputs.settings.origin or "configuration", line=src.line))
    if decl.database or decl.user:  # the pool it opens behind a declared PgBouncer
        key = "database" if decl.database else "user"
        client.route = Route(dbname=decl.database, user=decl.user,
                             source=replace(src, line=decl.line_of(key)))
    if decl.target and (target := _named_target(decl.target, topo)):
        client.target_kind, client.target_id = target  # type: ignore[assignment]
    return client


def lambda_client(fn: LambdaFunction, host_map: dict, topo: Topology) -> Client:
    """A Lambda function as a client: concurrency x connections per execution
    environment (advisor.read.sources.serverless). A database setting that links nowhere is
    the client's route, so PA107 names it and how to declare the server."""
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
# that name them their own way (rds_endpoint, DB_HOST, PG_URL, database_dsn, dbHostname),
# by whole words: the NAME of DB_HOSTNAME or the RDS of RECORDS_TABLE is no word of it
_LAMBDA_DB_WORDS = frozenset({"RDS", "DB", "DSN", "ENDPOINT"})
_LAMBDA_NOT_A_HOST = frozenset({"REGION", "ARN", "TIMEOUT"})


def _lambda_db_name(name: str) -> bool:
    words = name_parts(name)
    if not words or meaning(name) == "not-where" or _LAMBDA_NOT_A_HOST.intersection(words):
        return False
    return bool(_LAMBDA_DB_WORDS.intersection(words)) or words[0].startswith("PG") or any(
        "DATABASE" in w or "POSTGRES" in w for w in words)


def _lambda_db_setting(fn: LambdaFunction) -> Route | None:
    """The value of a database-looking variable as the host, when no URL or PGHOST-style
    variable is there: a CloudFormation `!Ref DbEndpoint` arrives as its parameter's
    name, which a [[servers]] entry's hosts can then name."""
    for var in fn.env:
        if var.value and _lambda_db_name(var.name):
            return Route(host=var.value, source=replace(var.source, key=var.name))
    return None


def _grafana_datasource_pools(*args):
    """advisor.link.grafana_datasources.workload_pools, imported for a Grafana image only
    (the caller tests the image's name first)."""
    from advisor.link.grafana_datasources import workload_pools

    return workload_pools(*args)
