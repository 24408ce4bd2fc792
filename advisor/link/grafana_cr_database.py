"""The Grafana a grafana-operator Grafana CR makes, as a client of its own [database]: the
operator writes spec.config into the grafana.ini of the Deployment it makes
(`<name>-deployment`), and the env of spec.deployment's grafana container overrides it
(GF_DATABASE_<KEY>, Grafana's env override). Grafana keeps one database/sql pool on that
database, max_open_conn (default 0: no limit, PA102). Without this, a Grafana CR whose
database is a server of the repository was read by nothing (audit 11a: tscibilia/home-ops
Grafana grafana, [database] type postgres on pgsql-cluster-rw, left out of its budget;
the GrafanaDatasource reader counts the data sources' pools only)."""

from __future__ import annotations

from typing import Any

from advisor.link.grafana_datasources import OPERATOR_GROUP, _cr_pods, _grafana_container
from advisor.link.hosts import resolve_host
from advisor.link.inputs import suppressed_codes
from advisor.model import Client, Pool, Route, Source, Term
from advisor.read.apps.images import GRAFANA, GRAFANA_DEFAULT
from advisor.read.sources.k8s import K8sObject, get

_KEYS = ("url", "type", "host", "name", "user", "max_open_conn")


def _settings(g: K8sObject) -> dict[str, tuple[str | None, Source]]:
    """[database] as the Grafana the operator makes reads it: each key of spec.config.
    database, over which a GF_DATABASE_<KEY> of the grafana container wins (a value from
    a reference not held here: None)."""
    out: dict[str, tuple[str | None, Source]] = {}
    database = get(g.body, "spec", "config", "database")
    if isinstance(database, dict):
        for key in _KEYS:
            if key in database and database[key] is not None:
                out[key] = (str(database[key]), g.source(
                    "spec", "config", "database", key, key=f"database.{key}"))
    found = _grafana_container(g)
    if found is not None:
        i, container = found
        env = container.get("env")
        for j, e in enumerate(env if isinstance(env, list) else []):
            if not isinstance(e, dict) or not str(e.get("name", "")).startswith("GF_DATABASE_"):
                continue
            key = str(e["name"])[len("GF_DATABASE_"):].lower()
            if key in _KEYS:
                value: Any = e.get("value") if "value" in e else None
                out[key] = (str(value) if value is not None else None, g.source(
                    "spec", "deployment", "spec", "template", "spec", "containers", i,
                    "env", j, key=str(e["name"])))
    return out


def _route(settings: dict[str, tuple[str | None, Source]]) -> Route | None:
    """Where [database] leads when it is PostgreSQL: `url` (its scheme) wins over `type`
    and the host, name and user (sqlstore database_config.go); None for SQLite (the
    default), MySQL, or a value not held here."""
    from advisor.read.apps.urls import route_from_parts, route_from_url

    url, url_at = settings.get("url", (None, None))
    if url:
        return route_from_url(url, url_at) if url.partition("://")[0].lower() == "postgres" \
            else None
    kind = (settings.get("type", ("sqlite3", None))[0] or "").strip().lower()
    host, host_at = settings.get("host", (None, None))
    if kind != "postgres" or not host or host_at is None:
        return None
    return route_from_parts(host, None, settings.get("name", (None, None))[0],
                            settings.get("user", (None, None))[0], host_at)


def _pool(settings: dict[str, tuple[str | None, Source]], route: Route) -> Pool | None:
    """max_open_conn: unset or <= 0 is database/sql without a limit; None when it is a
    value not held here or no number."""
    given = settings.get("max_open_conn")
    if given is None:
        return Pool(label=GRAFANA, size=Term(label=GRAFANA, value=0, source=Source.default_of(
            GRAFANA_DEFAULT, key="max_open_conn")), route=route, bound="unbounded",
            note=f"max_open_conn unset: {GRAFANA_DEFAULT}")
    value, at = given
    try:
        n = int(str(value).strip()) if value is not None else None
    except ValueError:
        n = None
    if n is None:
        return None
    if n <= 0:
        return Pool(label=GRAFANA, size=Term(label=GRAFANA, value=0, source=at),
                    route=route, bound="unbounded",
                    note=f"max_open_conn={n}: database/sql without a limit")
    return Pool(label=GRAFANA, size=Term(label=GRAFANA, value=n, source=at), route=route)


def _unread(g: K8sObject, given: tuple[str | None, Source]) -> str:
    value, at = given
    what = f"is {value!r}, not a pool size pool-advisor can read" if value is not None \
        else "is set from a reference not held here"
    return f"connections per pod unknown: {GRAFANA} of Grafana {g.name} ({at.label()}) {what}"


def cr_database_clients(objects: list[K8sObject], peaks: dict,
                        host_map: dict[str, tuple[str, str]], default_ns: str
                        ) -> list[Client]:
    """A client for each Grafana CR (not spec.external) whose [database] is PostgreSQL
    on a server or pooler read here: its pods x max_open_conn."""
    out: list[Client] = []
    for g in objects:
        if g.kind != "Grafana" or not g.api_version.startswith(OPERATOR_GROUP) \
                or not isinstance(g.body, dict) or get(g.body, "spec", "external") is not None:
            continue
        settings = _settings(g)
        route = _route(settings)
        target = resolve_host(route.host, g.namespace or default_ns, host_map) \
            if route is not None else None
        if route is None or target is None:
            continue
        replicas, surge = _cr_pods(g, peaks, default_ns)
        pool = _pool(settings, route)
        client = Client(
            id=f"{g.ref}#database", name=g.name, namespace=g.namespace, kind="Deployment",
            replicas=replicas, surge=surge, pools=[pool] if pool is not None else [],
            location=g.location(), suppressed=suppressed_codes(g), route=route,
            unknown="" if pool is not None else _unread(g, settings["max_open_conn"]))
        client.target_kind, client.target_id = target  # type: ignore[assignment]
        out.append(client)
    return out
