"""Releases of charts that are not in the repository (Flux HelmRelease, Argo CD
Application, a kustomize helmCharts entry; advisor.read.releases) as clients: their
values name where they connect, but their pods and pools are in a chart that is not
rendered, so their connections are unknown, never 0. The budget of the server they
reach is a floor and PA106 asks for the numbers; one notice names every release not
rendered (a helmCharts entry has its PA901 finding instead)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from advisor.link.hosts import host_variable_route, resolve_host
from advisor.link.inputs import Inputs, suppressed_codes
from advisor.link.operators import operator_credentials_route, operator_secret_route
from advisor.model import (
    Client,
    ConfigProblem,
    Container,
    Pool,
    Route,
    Source,
    Term,
    Topology,
)
from advisor.read.releases import (
    Release,
    Values,
    env_scopes,
    find_releases,
    repo_folder,
    value_hosts,
)
from advisor.read.sources.k8s import K8sObject
from advisor.read.workloads import ConfigIndex

if TYPE_CHECKING:
    from advisor.config.schema import WorkloadDecl

NOT_RENDERED = "the chart is not in the repository, so it is not rendered"


def release_clients(inputs: Inputs, topo: Topology, index: ConfigIndex,
                    operator_secrets: ConfigIndex, host_map: dict[str, tuple[str, str]],
                    default_ns: str, declared: dict[str, WorkloadDecl]) -> list[Client]:
    """A client for every release not rendered whose values lead to a database (the
    notice naming them all is `not_rendered_notice`, once per run)."""
    found = releases_in(inputs.root.path, inputs.objects)
    clients = []
    for release in found:
        if server_chart(release):
            topo.problems.append(_server_not_budgeted(release))
        client = release_client(release, index, operator_secrets, host_map, default_ns,
                                declared.get(release.name), inputs.settings.origin,
                                topo.notices)
        # a grafana chart's PostgreSQL data sources (its `datasources:` value)
        from advisor.link.grafana_datasources import release_clients as grafana_release_clients

        clients += grafana_release_clients(release, inputs.objects, host_map, default_ns,
                                           topo.notices, topo.unplaced_clients,
                                           client.id if client is not None else None,
                                           declared.get(release.name),
                                           inputs.settings.origin)
        if client is not None:
            clients.append(client)
        else:
            note = _unknown_connection_note(release, index, release.namespace or default_ns)
            templated = release.obj.body.get("valuesTemplated") \
                if release.kind == "helmfile" else None
            if not note and templated:
                # its values files are helmfile templates, not read: where it connects
                # is not known (every server's peak a floor), never left out silently
                note = (f"{release.describe()}: its values file"
                        f"{'s' if len(templated) > 1 else ''} {', '.join(templated)} "
                        f"{'are' if len(templated) > 1 else 'is a'} helmfile template"
                        f"{'s' if len(templated) > 1 else ''}, not read: where it connects "
                        "is not known, so it is in no budget and every server's peak is a "
                        "floor (declare it: [[workloads]] target and connections)")
            decl = declared.get(release.name)
            if note and not (decl is not None and decl.target):
                topo.notices.append(note)
                if release.name not in topo.unplaced_clients:
                    topo.unplaced_clients.append(release.name)
    return clients


def _unknown_connection_note(release: Release, index: ConfigIndex, namespace: str
                             ) -> str | None:
    """A release that names no route but whose connection variables' values are not
    known here (an ExternalSecret's, a SOPS-encrypted Secret's): one notice naming them
    (Diaoul/home-ops: four apps whose hosts are encrypted printed 'peak 0 fits' without
    a word)."""
    from advisor.link.clients import unknown_connection_note

    who = f"{release.kind} {release.namespace + '/' if release.namespace else ''}{release.name}"
    found: dict[str, str] = {}
    for values in release.values:
        for env in env_scopes(values, index, namespace):
            for var in env:
                if var.name not in found and unknown_connection_note(who, var):
                    ref = var.from_ref or ""
                    found[var.name] = ref[ref.index("(remote: ") + 9:-1] \
                        if "(remote: " in ref else "templated from remote values"
    if not found:
        return None
    reasons = sorted(set(found.values()))
    return (f"{who}: {', '.join(found)} {'is' if len(found) == 1 else 'are'} unknown here "
            f"({'; '.join(reasons[:2])}{' and more' if len(reasons) > 2 else ''}): where it "
            "connects is not known, so it is in no budget and every server's peak is a "
            "floor (declare it: [[workloads]] target and connections)")


def releases_in(root: Path, objects: list[K8sObject]) -> list[Release]:
    """The releases among `objects` whose chart is not a chart folder under `root`, less
    the app-template releases rendered from their values (app_template_renders)."""
    found = _all_releases(root, objects)
    rendered = app_template_renders(objects, found)
    return [r for r in found if r.id not in rendered]


def _all_releases(root: Path, objects: list[K8sObject]) -> list[Release]:
    return find_releases(objects, lambda path: repo_folder(
        path, root.parts, lambda rel: (root / rel / "Chart.yaml").is_file()) is not None)


def app_template_renders(objects: list[K8sObject], releases: list[Release] | None = None,
                         root: Path | None = None) -> dict[str, tuple[str, list[K8sObject]]]:
    """The bjw-s app-template releases whose workloads are made from their values
    (advisor.read.render.app_template): release id -> (chart version, objects)."""
    from advisor.read.render.app_template import app_template_objects, chart_version, renders

    if releases is None:
        releases = _all_releases(root or Path("."), objects)
    out: dict[str, tuple[str, list[K8sObject]]] = {}
    for release in releases:
        version = chart_version(release, objects)
        if version is None or not renders(version):
            continue
        made = app_template_objects(release, version)
        if made:
            out[release.id] = (version, made)
    return out


def not_rendered_notice(root: Path, objects: list[K8sObject]) -> str | None:
    """One line for all the releases not rendered (each once, by id): how many, and
    which; None without any."""
    # a kustomize helmCharts entry has its PA901 finding, which says so already
    # (a PostgreSQL server's chart has a PA901 finding of its own: _server_not_budgeted)
    found = list({r.id: r for r in releases_in(root, objects)
                  if r.kind != "helmCharts" and not server_chart(r)}.values())
    if not found:
        return None
    names = ", ".join(f"{r.kind} {r.namespace + '/' if r.namespace else ''}{r.name}"
                      for r in found)
    git = [r.name for r in found if r.git_path_missing]
    missing = (f"; {len(git)} of them name{'s' if len(git) == 1 else ''} a chart path of a "
               f"git repository that is not in the scanned repository ({', '.join(git)})") \
        if git else ""
    return (f"{len(found)} chart release{'s' if len(found) != 1 else ''} not rendered: "
            "the chart is not in the repository (a Helm or OCI repository, or another git "
            "repository), so its workloads are not read; its values are read for database "
            f"connections only, and one that connects is a client of unknown size (PA106): "
            f"{names}{missing}")


# Charts that are a PostgreSQL server themselves: Bitnami's postgresql and postgresql-ha
# (and the charts named so after them), CloudNativePG's `cluster` chart.
_SERVER_CHARTS = {"postgresql": "PostgreSQL", "postgresql-ha": "PostgreSQL with Pgpool"}


def server_chart(release: Release) -> str:
    """What PostgreSQL server the release's chart deploys ("" when it is no server's)."""
    name = release.chart.rstrip("/").rsplit("/", 1)[-1].lower()
    if name == "cluster" and "cloudnative-pg" in f"{release.chart} {release.origin}".lower():
        return "a CloudNativePG Cluster"
    return _SERVER_CHARTS.get(name, "")


def _server_not_budgeted(release: Release) -> ConfigProblem:
    """A release of a PostgreSQL server's chart is not rendered, so the server is in no
    budget: a warning (PA901), not the notice every release not rendered is named in
    (padminisys/keycloak-ops: Bitnami postgresql 13.2.26 by an Argo CD Application, 'no
    PostgreSQL server found' and exit 0)."""
    bitnami = release.chart.rstrip("/").rsplit("/", 1)[-1].lower() == "postgresql"
    # the chart's Service is <release> when the release name holds the chart's name
    host = (release.name if "postgresql" in release.name else f"{release.name}-postgresql") \
        if bitnami else "<its Service>"
    ns = f".{release.namespace}.svc" if release.namespace and bitnami else ""
    what = "" if bitnami else f" ({server_chart(release)})"
    return ConfigProblem(
        location=release.obj.location(), program="pool-advisor",
        message=(f"{release.describe()} is a PostgreSQL server not budgeted{what}: "
                 f"{NOT_RENDERED}; its max_connections and the clients that connect to it "
                 "are in no budget. Declare it: [[servers]] "
                 f"name = \"{release.name}\" hosts = [\"{host}{ns}\"] max_connections = N"
                 + (" (the chart sets none unless primary.extendedConfiguration or "
                    "postgresql.conf values do: PostgreSQL's default 100)" if bitnami else "")))


def release_client(release: Release, index: ConfigIndex, operator_secrets: ConfigIndex,
                   host_map: dict[str, tuple[str, str]], default_ns: str,
                   decl: WorkloadDecl | None, origin: str | None,
                   notes: list[str] | None = None) -> Client | None:
    """The release as a client when its values name a database route; None otherwise.
    `notes`: where a sentence on a route taken from credentials alone goes."""
    namespace = release.namespace or default_ns
    route = None
    for values in release.values:
        route = _env_route(release, values, index, operator_secrets, host_map, namespace) \
            or _value_route(values, host_map, namespace)
        if route is not None:
            break
    if route is None:
        # only a password (user, database) of an operator's Secret: its cluster's
        # (jory's synapse, PGPASSWORD from synapse-app: 'fits, peak 0' before)
        for values in release.values:
            for env in env_scopes(values, index, namespace):
                found = operator_credentials_route(
                    Container(name=release.name, env=env, source=release.obj.source()),
                    operator_secrets)
                if found is not None:
                    route, credentials = found
                    if notes is not None:
                        notes.append(f"{release.describe()}: {credentials}")
                    break
            if route is not None:
                break
    if route is None:
        return None
    pools: list[Pool] = []
    replicas = Term(label="replicas unknown", value=1,
                    source=Source.default_of(f"{NOT_RENDERED}; 1 is not counted"))
    unknown_parts = ["connections per pod", "replicas"]
    if decl is not None:
        src = Source(path=origin, key=f"workloads.{decl.name}")
        per_pod = decl.connections if decl.connections is not None else decl.pool_size
        if per_pod is not None:
            processes = Term(label="declared processes", value=decl.processes, source=src) \
                if decl.connections is None and decl.processes else None
            pools = [Pool(label="declared connections per pod", size=Term(
                label="declared connections per pod", value=per_pod, source=src),
                processes=processes, route=route)]
            unknown_parts.remove("connections per pod")
        if decl.replicas is not None:
            replicas = Term(label="declared replicas", value=decl.replicas, source=src)
            unknown_parts.remove("replicas")
    client = Client(id=release.id, name=release.name, namespace=release.namespace,
                    kind=release.kind, replicas=replicas, pools=pools,
                    location=release.obj.location(), suppressed=suppressed_codes(release.obj),
                    route=route, replicas_unknown="replicas" in unknown_parts,
                    unknown=(f"{' and '.join(unknown_parts)} unknown: {release.describe()}: "
                             f"{NOT_RENDERED}, and its values say only where it connects")
                    if unknown_parts else "")
    target = resolve_host(route.host, namespace, host_map)
    if target is not None:
        client.target_kind, client.target_id = target  # type: ignore[assignment]
    return client


def _env_route(release: Release, values: Values, index: ConfigIndex,
               operator_secrets: ConfigIndex, host_map: dict[str, tuple[str, str]],
               namespace: str) -> Route | None:
    """The route an environment of the values names (a URL or PGHOST-style variables,
    also from referenced Secrets and ConfigMaps, or an operator Secret's keys), else an
    application's own database host variable that leads to a server or pooler."""
    from advisor.read.apps import route_from_env

    for env in env_scopes(values, index, namespace):
        route = route_from_env(env) or operator_secret_route(
            Container(name=release.name, env=env, source=release.obj.source()),
            operator_secrets) or host_variable_route(env, host_map, namespace)
        if route is not None:
            return route
    return None


def _value_route(values: Values, host_map: dict[str, tuple[str, str]], namespace: str
                 ) -> Route | None:
    """A PostgreSQL URL anywhere in the values, else a database host key
    (`externalDatabase.host`) that leads to a server or pooler of the repository."""
    from advisor.read.apps.urls import route_from_url, split_port

    for kind, text, source, node in value_hosts(values):
        if kind == "url":
            route = route_from_url(text, source)
            if route is not None:
                return route
        elif resolve_host(text, namespace, host_map) is not None:
            # a host that carries its port: Temporal's connectAddr `db-rw:5432`
            host, port_text = split_port(text.strip())
            port = node.get("port")
            port = port if isinstance(port, int) else int(port_text) if port_text else None
            dbname = node.get("database") or node.get("dbname") or node.get("databaseName")
            user = node.get("user") or node.get("username")
            return Route(host=host, port=port,
                         dbname=dbname if isinstance(dbname, str) else None,
                         user=user if isinstance(user, str) else None, source=source)
    return None
