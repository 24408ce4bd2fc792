"""Grafana's PostgreSQL data sources: every Grafana pod that has one opens a pool on the
server it names, beside (and apart from) its own [database] (advisor/read/apps/images.py
grafana_pools). audit: billimek/k8s-gitops's GrafanaDatasource teslamate on postgres-ro
left the replica server "peak 0, fits".

Where data sources are declared (each read here):
- Provisioning files: Grafana reads every *.yaml/*.yml file directly in
  <paths.provisioning>/datasources (grafana/grafana pkg/services/provisioning/datasources
  config_reader.go readConfig: os.ReadDir, the two suffixes), the `datasources:` list of
  each; GF_PATHS_PROVISIONING is that path (the official image sets
  /etc/grafana/provisioning). Read from a ConfigMap or Secret mounted there, and from those
  a kiwigrid/k8s-sidecar container of the pod copies into that folder (src/sidecar.py
  main(), 2.10.1: LABEL line 54, LABEL_VALUE line 59 (unset: any value, resources.py:162
  `label` alone as the selector), FOLDER line 63, RESOURCE line 68 default "configmap",
  "both"; NAMESPACE line 125, default the pod's own, a comma list or ALL) when its volume
  is the one Grafana mounts there. The grafana chart (grafana/helm-charts
  charts/grafana at 10.5.15, its last version there before grafana-community/helm-charts)
  renders its `datasources:` value into its ConfigMap
  (templates/_config.tpl:42-47, through `tpl`) mounted with subPath at
  /etc/grafana/provisioning/datasources/<key> (templates/_pod.tpl:1300-1309), and its
  sidecar looks for the label `grafana_datasource` (values.yaml:1222, labelValue "").
  A ConfigMap or Secret labelled `grafana_datasource` that no Grafana pod of the
  repository reads (a kube-prometheus-stack release not rendered) is a client with
  pods unknown. The chart's release not rendered (Flux HelmRelease, Argo CD Application
  of chart grafana, or kube-prometheus-stack's `grafana.datasources` and
  `grafana.additionalDataSources`): its values, pods unknown.
  Values are expanded as Grafana does (pkg/services/provisioning/values/values.go
  interpolateValue: `$$` is a `$`, then $VAR/${VAR} from the process env and
  $__env{VAR}); a variable whose value is not held here leaves that value unknown.
- grafana-operator (grafana.integreatly.org/v1beta1) GrafanaDatasource: spec.datasource
  pushed through Grafana's API to every Grafana CR its spec.instanceSelector matches
  (grafana/grafana-operator v5.24.0 controllers/controller_shared.go:107
  GetScopedMatchingInstances: matchLabels and matchExpressions on the Grafana's labels,
  in its own namespace unless allowCrossNamespaceImport, line 123); `${key}`/`$key` in a
  string field at a valuesFrom targetPath is the referenced key's value
  (datasource_controller.go:476). The Grafana CR's pods: the Deployment
  `<name>-deployment` the operator makes with no replicas of its own
  (deployment_reconciler.go:345 getDeploymentSpec), then spec.deployment merged over it
  (line 70): spec.deployment.spec.replicas, else Kubernetes' 1 (an autoscaler of that
  Deployment wins), and no strategy: Kubernetes' maxSurge 25% unless
  spec.deployment.spec.strategy says otherwise. A Grafana with spec.external, or none
  matched: pods unknown.

Which types: `grafana-postgresql-datasource` and its alias `postgres`
(public/app/plugins/datasource/grafana-postgresql-datasource/plugin.json: `"id":
"grafana-postgresql-datasource", "aliasIDs": ["postgres"]`; older releases name it
`postgres`).

The pool, per Grafana process (one Go process per pod) per data source:
- One pool per data source, not per user or org: grafana-plugin-sdk-go
  backend/datasource instance_provider.go GetKey (the data source's numeric id) caches
  one instance; pkg/tsdb/grafana-postgresql-datasource/postgres.go newInstanceSettings
  opens its pool (sql.OpenDB + SetMaxOpenConns; from 12.4.0 pgxpool with MaxConns). It is
  made on the data source's first query or health check (instancemgmt Get), and
  database/sql and pgxpool open connections only as queries need them: the maximum is
  still the bound at peak. The same definition in two orgs is two data sources.
- jsonData.maxOpenConns, else [sql_datasources] max_open_conns_default (env
  GF_SQL_DATASOURCES_MAX_OPEN_CONNS_DEFAULT over grafana.ini), 100 by default
  (pkg/setting/setting.go readSqlDataSourceSettings `MustInt(100)`; postgres.go
  newInstanceSettings starts jsonData from it). That came with grafana/grafana#65834
  (backported #66651 to v9.5.x; CHANGELOG.md lists it under 10.0.0-preview); Grafana's
  docs date it 9.5.1 (docs/sources/datasources/mssql provisioning example,
  `maxIdleConnsAuto: true # Grafana v9.5.1+`, the same change), so 9.5.0 counts as
  before. Before, pkg/tsdb/postgres/postgres.go started from `MaxOpenConns: 0` (8.x),
  database/sql's no limit. `maxOpenConns:` with no value is JSON null, which Go's
  encoding/json leaves as it was (Unmarshal: null into a non-pointer has no effect): the
  default.
- maxOpenConns <= 0: database/sql's no limit until 12.4.0; from 12.4.0 the data source
  is pgx only (release notes: "PostgreSQL: Remove feature toggle postgresDSUsePGX
  #113675"), where 0 failed to open the pool (grafana#119810, "MaxSize must be >= 1")
  until grafana#122556 left pgxpool its max(4, NumCPU): unknown here. A quoted number
  is a JSON string Go does not unmarshal into the int: unknown too.
- The release: the image tag (the Grafana CR's spec.version, else the operator's default:
  operator v5.7.0 and later default to 9.5.17 or newer, controllers/config/
  operator_constants.go GrafanaVersion (v5.6.3: 9.1.6), and from v5.9.0 write it into
  spec.version at the first reconcile, grafana_controller.go:101 there, :121 at v5.24.0;
  its chart's version is the operator's from v5.15.0, deploy/helm/grafana-operator/
  Chart.yaml); a grafana chart release's image.tag, else chart 6.56.0 or later ships
  Grafana 9.5.1 or later (charts/grafana/Chart.yaml). A tag that names no release
  (latest): 9.5.1 or later assumed, said in the pool's note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from msgspec import Struct, field

from advisor.guard import guarded
from advisor.link.grafana_files import SIDECAR_LABEL, may_hold_datasources, yaml_key
from advisor.link.hosts import resolve_host
from advisor.link.inputs import suppressed_codes
from advisor.model import (
    Client,
    ConfigProblem,
    Container,
    EnvVar,
    Pool,
    Route,
    Source,
    Term,
)
from advisor.read.sources.k8s import K8sObject, get, line_of, load_yaml_stream
from advisor.read.workloads import (
    ConfigIndex,
    ConfigMapData,
    SurgeSpec,
    Workload,
    lookup,
    surge_term,
)

PG_TYPES = frozenset({"postgres", "grafana-postgresql-datasource"})
GRAFANA_IMAGES = frozenset({"grafana", "grafana-enterprise", "grafana-oss"})
OPERATOR_GROUP = "grafana.integreatly.org/"
PROVISIONING = "/etc/grafana/provisioning"
DEFAULT_SINCE = (9, 5, 1)
DEFAULT_OPEN = 100
PGX_ONLY_SINCE = (12, 4, 0)
OPERATOR_DEFAULTS_SINCE = (5, 7, 0)  # operator default Grafana 9.5.17 and later
OPERATOR_DEFAULT_FLOOR = (9, 5, 17)
CHART_DEFAULTS_SINCE = (6, 56, 0)  # grafana chart appVersion 9.5.1 and later

DEFAULT_TEXT = ("Grafana [sql_datasources] max_open_conns_default 100 (pkg/setting/setting.go "
                "readSqlDataSourceSettings MustInt(100)), the data source's jsonData "
                "default since 9.5.1")
BEFORE_TEXT = ("Grafana before 9.5.1: maxOpenConns unset is 0 (pkg/tsdb/postgres/postgres.go "
               "JsonData{MaxOpenConns: 0}), database/sql without a limit")
ZERO_PGX = ("from 12.4.0 (pgx only) a maxOpenConns of 0 fails to open the pool "
            "(grafana#119810) until pgxpool's max(4, NumCPU) applies (grafana#122556)")


class GrafanaRelease(Struct, frozen=True):
    """The Grafana a pool is read for: `number` exactly, or at least `number` when not
    `exact`; None: not known here. `how`: where that was read."""

    number: tuple[int, ...] | None = None
    exact: bool = False
    how: str = "not read"


class DefaultSetting(Struct, frozen=True):
    """[sql_datasources] max_open_conns_default as written (value None: from a reference
    whose value the repository does not hold)."""

    value: Any
    source: Source


class Found(Struct):
    """What the data sources of one Grafana add: pools, the route of each (sized or not),
    why a size is not known, notices, and data sources whose host is not known here."""

    pools: list[Pool] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)
    # each PostgreSQL data source with a known host: (name, route, pool or None, why)
    entries: list[tuple[str, Route, Pool | None, str]] = field(default_factory=list)

    def add(self, name: str, route: Route, pool: Pool | None, why: str = "") -> None:
        self.routes.append(route)
        if pool is not None:
            self.pools.append(pool)
        else:
            self.unknown.append(why)
        self.entries.append((name, route, pool, why))


# (text, the field's path: "type", "url", "user", "database", "jsonData.database")
Expand = Callable[[str, str], str | None]
At = Callable[..., Source]


def _numbers(text: str) -> tuple[int, ...] | None:
    # digit runs bounded: int() of more than 4,300 digits raises ValueError (Python 3.11)
    m = re.match(r"v?([0-9]{1,9})\.([0-9]{1,9})(?:\.([0-9]{1,9}))?", text.strip())
    return tuple(int(n) for n in m.groups() if n is not None) if m else None


def tag_release(tag: str, how: str) -> GrafanaRelease:
    """The release a tag names (`12.3.1`, `11.0.0-ubuntu`); a floating `11.3` is that
    minor's newest patch (at least .0); `latest`, `main`: not known."""
    number = _numbers(tag)
    if number is None:
        return GrafanaRelease(how=f"{how}: tag {tag or 'latest'!r} names no release")
    if len(number) == 2:
        return GrafanaRelease((*number, 0), False, f"{how}: tag {tag}, a minor's newest patch")
    return GrafanaRelease(number, True, f"{how} {tag}")


def image_release(image: str) -> GrafanaRelease:
    """The release a Grafana image's tag names."""
    return tag_release(image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2],
                       f"image {image.split(':', 1)[0] if ':' in image else image}")


def is_grafana(image: str) -> bool:
    return image.split("@", 1)[0].lower().rsplit("/", 1)[-1].split(":", 1)[0] in GRAFANA_IMAGES


# ---------------------------------------------------------------- one data source


def _expand_with(env: dict[str, EnvVar] | dict[str, str] | None) -> Expand:
    """Grafana's interpolation of a provisioning value ($$, $VAR, ${VAR}, $__env{VAR})
    with `env`; None when a variable's value is not held here ($__file, $__vault, a
    Secret's variable, one not set in `env`)."""
    def value_of(name: str) -> str | None:
        var = (env or {}).get(name)
        return var.value if isinstance(var, EnvVar) else var

    def expand(text: str, _path: str = "") -> str | None:
        parts = []
        for part in text.split("$$"):
            unknown = False

            def sub(m: re.Match) -> str:
                nonlocal unknown
                if m.group(1) is not None and m.group(1) != "env":
                    unknown = True  # $__file{...}, $__vault{...}
                    return ""
                found = value_of(m.group(2) or m.group(3) or m.group(4))
                unknown = unknown or found is None
                return found or ""

            done = _VAR.sub(sub, part)
            if unknown:
                return None
            parts.append(done)
        return "$".join(parts)

    return expand


_VAR = re.compile(r"\$__(\w+)\{([^}]*)\}|\$\{(\w+)\}|\$(\w+)")


def _parse_url(url: str) -> tuple[str | None, int | None, str]:
    """(host, port, why not) as Grafana splits a data source url: `host[:port]`
    (postgres.go generateConnectionString / parseNetworkAddress: SplitN on ':', Atoi)."""
    if url.startswith("/"):
        return None, None, f"url {url!r} is a Unix socket of the Grafana pod"
    if url.startswith("["):
        host, _, rest = url[1:].partition("]")
        port = rest.lstrip(":")
    else:
        host, _, port = url.partition(":")
    if port and not re.fullmatch(r"[0-9]{1,5}", port):  # not str.isdigit: "²" is one
        return None, None, (f"url {url!r} is not the host:port Grafana reads (invalid "
                            "port): the data source does not connect")
    return host or None, int(port) if port else None, ""


def read_datasource(node: Any, at: At, expand: Expand, release: GrafanaRelease,
                    default: DefaultSetting | None, who: str, out: Found) -> None:
    """Add to `out` the pool (or why its size is unknown) and the route of one data
    source definition, when it is PostgreSQL's."""
    if not isinstance(node, dict):
        return
    kind = expand(str(node.get("type") or ""), "type")
    if kind is None or kind.strip().lower() not in PG_TYPES:
        return
    name = str(node.get("name") or node.get("uid") or "?")
    label = f"Grafana data source {name!r}"
    raw_url = node.get("url")
    url = expand(str(raw_url), "url") if raw_url is not None else None
    if url and any(mark in url for mark in ("${", "{{", "<")):
        url = None  # a template or placeholder not filled in here (`{{ .Values.x }}`)
    if not url:
        why = "its url is set from a value not held here" if raw_url else "it names no url"
        out.notices.append(f"{who}: {label} ({at().label()}) is PostgreSQL and {why}: where "
                           "it connects is unknown, so every server's peak is a floor")
        out.unplaced.append(name)
        return
    host, port, why = _parse_url(url.strip())
    if host is None:
        out.notices.append(f"{who}: {label} ({at('url').label()}): {why}; not counted")
        return
    json_data = node.get("jsonData") if isinstance(node.get("jsonData"), dict) else {}
    db_path = "jsonData.database" if json_data.get("database") else "database"
    dbname = json_data.get("database") or node.get("database")
    user = node.get("user")
    route = Route(host=host, port=port,
                  dbname=(expand(str(dbname), db_path) or None) if dbname else None,
                  user=(expand(str(user), "user") or None) if user else None,
                  source=at("url"))
    size = f"{label} maxOpenConns"
    if json_data.get("maxOpenConns") is not None:  # null: Go's json leaves the default
        _given(json_data["maxOpenConns"], at("jsonData", "maxOpenConns"), label,
               "jsonData.maxOpenConns", release, name, route, out)
        return
    if release.number is not None and release.number < DEFAULT_SINCE and release.exact:
        out.add(name, route, Pool(label=label, size=Term(
            label=size, value=0,
            source=Source.default_of(BEFORE_TEXT, key="jsonData.maxOpenConns")),
            route=route, bound="unbounded",
            note=f"maxOpenConns unset: {BEFORE_TEXT} ({release.how})"))
        return
    if default is not None:
        if default.value is None:
            out.add(name, route, None, f"{label}: [sql_datasources] max_open_conns_default "
                    f"is set at {default.source.label()} from a value not held here")
            return
        _given(default.value, default.source, label, "[sql_datasources] "
               "max_open_conns_default", release, name, route, out)
        return
    known = release.number is not None and release.number >= DEFAULT_SINCE
    out.add(name, route, Pool(label=label, size=Term(
        label=size, value=DEFAULT_OPEN,
        source=Source.default_of(DEFAULT_TEXT, key="jsonData.maxOpenConns")),
        route=route, bound="default",
        note=f"jsonData.maxOpenConns unset ({release.how}"
             f"{'' if known else ': 9.5.1 or later assumed, before it no limit'}); one pool "
             "per data source per Grafana pod"))


def _given(raw: Any, source: Source, label: str, what: str, release: GrafanaRelease,
           name: str, route: Route, out: Found) -> None:
    """A maxOpenConns (or its default) written in the repository: a YAML/JSON number
    (a quoted one is a JSON string Grafana's int does not take), or the text of an ini
    key or env variable (ini.v1 MustInt)."""
    n = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    if n is None and isinstance(raw, str) and what.startswith("[sql_datasources]"):
        try:
            n = int(raw.strip(), 0)
        except ValueError:
            n = None
    if n is None:
        out.add(name, route, None, f"{label} {what} at {source.label()} is {raw!r}, not a "
                "number Grafana reads into its int")
        return
    size = f"{label} maxOpenConns"
    if n > 0:
        out.add(name, route, Pool(label=label, size=Term(label=size, value=n, source=source),
                                  route=route))
        return
    if release.exact and release.number is not None and release.number < PGX_ONLY_SINCE:
        out.add(name, route, Pool(label=label, size=Term(label=size, value=0, source=source),
                                  route=route, bound="unbounded",
                                  note=f"{what} {n}: database/sql without a limit "
                                       f"({release.how})"))
        return
    out.add(name, route, None, f"{label} {what} at {source.label()} is {n}: database/sql's "
            f"no limit before Grafana 12.4.0, and {ZERO_PGX}; {release.how}")


def provisioning_file(text: str, shown: str, offset: int, expand: Expand,
                      release: GrafanaRelease, default: DefaultSetting | None, who: str,
                      out: Found) -> None:
    """The PostgreSQL data sources of one provisioning file's `datasources:` list."""
    docs, _problems = load_yaml_stream(text, shown, offset)
    for doc, _line in docs:
        items = doc.get("datasources") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            continue
        for i, node in enumerate(items):
            def at(*keys: str | int, i: int = i, doc: Any = doc) -> Source:
                line = line_of(doc, "datasources", i, *keys)
                return Source(path=shown, line=offset + line + 1 if line is not None else None,
                              key=".".join(str(k) for k in ("datasources", i, *keys)))
            read_datasource(node, at, expand, release, default, who, out)


# ------------------------------------------------------- a Grafana pod of the repository


class Selector(Struct, frozen=True):
    """The ConfigMaps and Secrets a k8s-sidecar copies into Grafana's folder."""

    label: str
    value: str | None
    namespaces: tuple[str, ...] | None  # None: every namespace
    kinds: tuple[str, ...]

    def takes(self, kind: str, namespace: str | None, data: ConfigMapData) -> bool:
        if kind not in self.kinds or data.made_by is not None or \
                not may_hold_datasources(data):
            return False
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        labels = data.obj.labels
        return self.label in labels and (self.value is None or labels[self.label] == self.value)


def _env_value(c: Container, name: str) -> str | None:
    var = next((e for e in c.env if e.name == name), None)
    return var.value if var is not None else None


def _datasource_dir(c: Container, mounted: list) -> str:
    base = _env_value(c, "GF_PATHS_PROVISIONING")
    if base is None:
        from advisor.read.apps.goini import parse_ini

        for f in mounted:
            if f.kind == "grafana-ini":
                found = parse_ini(f.text).get("paths", {}).get("provisioning")
                base = found.value if found is not None else base
    return (base or PROVISIONING).rstrip("/") + "/datasources"


def _sidecar_selectors(w: Workload, c: Container, folder: str, namespace: str
                       ) -> list[Selector]:
    """The k8s-sidecar containers of the pod that write into the volume Grafana mounts
    at `folder`."""
    grafana_vols = {vol for vol, path in w.mounts.get(c.name, []) if path.rstrip("/") == folder}
    out = []
    for s in w.containers:
        if s is c or "k8s-sidecar" not in s.image.lower():
            continue
        label, target = _env_value(s, "LABEL"), _env_value(s, "FOLDER")
        if not label or not target:
            continue
        vols = {vol for vol, path in w.mounts.get(s.name, [])
                if path.rstrip("/") == target.rstrip("/")}
        if not vols & grafana_vols:
            continue
        spaces = _env_value(s, "NAMESPACE")
        namespaces = None if spaces and spaces.strip() == "ALL" else tuple(
            n.strip() for n in (spaces or namespace).split(",") if n.strip())
        resource = (_env_value(s, "RESOURCE") or "configmap").strip().lower()
        kinds = ("secret", "configmap") if resource == "both" else (resource,)
        out.append(Selector(label=label, value=_env_value(s, "LABEL_VALUE") or None,
                            namespaces=namespaces, kinds=kinds))
    return out


def provisioning_files(w: Workload, c: Container, index: ConfigIndex, mounted: list,
                       namespace: str) -> Iterator[tuple[tuple[str, str | None, str], str,
                                                         ConfigMapData]]:
    """((kind, namespace, name), key, data) of every file Grafana finds in its data
    sources folder: mounted from a ConfigMap or Secret, or copied there by a sidecar."""
    folder = _datasource_dir(c, mounted)
    for vol, path in w.mounts.get(c.name, []):
        for kind, name in w.volume_sources.get(vol, []):
            data = lookup(index, kind, w.namespace, name)
            if data is None:
                continue
            for key in data.data:
                file = path if path.endswith("/" + key) else path.rstrip("/") + "/" + key
                if file.rsplit("/", 1)[0] == folder and yaml_key(key):
                    yield (kind, data.obj.namespace, name), key, data
    for selector in _sidecar_selectors(w, c, folder, namespace):
        for (kind, ns, name), data in index.items():
            if selector.takes(kind, ns, data):
                for key in data.data:
                    if yaml_key(key):
                        yield (kind, data.obj.namespace, name), key, data


def _default_of_env(env: dict[str, EnvVar]) -> DefaultSetting | None:
    var = env.get("GF_SQL_DATASOURCES_MAX_OPEN_CONNS_DEFAULT")
    if var is None:
        return None
    return DefaultSetting(var.value, Source(path=var.source.path, line=var.source.line,
                                            key=var.name))


def workload_pools(w: Workload, c: Container, index: ConfigIndex, mounted: list,
                   namespace: str) -> Found | None:
    """The data source pools of a Grafana container of the repository; None for any
    other container."""
    if c.role == "init" or not is_grafana(c.image):
        return None
    words = " ".join((*c.command, *c.args))
    if c.command and not any(s in words for s in ("run.sh", "grafana-server", "grafana server")):
        return None  # another program of the image (grafana-cli, a shell script)
    env = {e.name: e for e in c.env}
    default = _default_of_env(env)
    if default is None:
        from advisor.read.apps.goini import parse_ini

        for f in mounted:
            if f.kind == "grafana-ini":
                found = parse_ini(f.text).get("sql_datasources", {}).get(
                    "max_open_conns_default")
                if found is not None:
                    default = DefaultSetting(found.value, f.cite(
                        found.line, "sql_datasources.max_open_conns_default"))
    out = Found()
    release = image_release(c.image)
    who = f"{w.kind}/{w.namespace + '/' if w.namespace else ''}{w.name}"
    seen = set()
    for ref, key, data in provisioning_files(w, c, index, mounted, namespace):
        if (ref, key) in seen:
            continue
        seen.add((ref, key))
        shown, offset = data.text_origin(key)
        provisioning_file(data.data[key], shown, offset, _expand_with(env), release, default,
                          who, out)
    return out


def read_by_workloads(loads: list[Workload], index: ConfigIndex, default_ns: str
                      ) -> set[tuple[str, str | None, str]]:
    """(kind, namespace, name) of the ConfigMaps and Secrets a Grafana pod of the
    repository reads data sources from."""
    out: set[tuple[str, str | None, str]] = set()
    for w in loads:
        for c in w.containers:
            if c.role != "init" and is_grafana(c.image):
                out |= {ref for ref, _key, _data in provisioning_files(
                    w, c, index, [], w.namespace or default_ns)}
    return out


# ------------------------------------------------- clients without a workload read here


class Pods(Struct, frozen=True):
    """The Grafana pods a data source is opened in: `replicas` (a placeholder when
    `unknown`, then `why`), the rolling-update surge."""

    replicas: Term
    surge: Term | None = None
    unknown: bool = False
    why: str = ""


def _pods_declared(pods: Pods, decl: Any, origin: str | None) -> Pods:
    if decl is None or decl.replicas is None:
        return pods
    return Pods(replicas=Term(label="declared replicas", value=decl.replicas,
                              source=Source(path=origin, key=f"workloads.{decl.name}")))


def _clients_of(found: Found, base_id: str, name: str, obj: K8sObject,
                namespace: str | None, kind: str, pods: Pods,
                host_map: dict[str, tuple[str, str]], default_ns: str,
                decl: Any = None, origin: str | None = None,
                part_of: str | None = None) -> list[Client]:
    """One client per PostgreSQL data source found, named after the Grafana (the same
    pods: a [[workloads]] declaration of that name gives their replicas, or their
    connections): those pods x its pool, or its size unknown (PA106). The first is the
    whole (or a part of `part_of`), each further one a part of it."""
    pods = _pods_declared(pods, decl, origin)
    out: list[Client] = []
    for ds, route, pool, why in found.entries:
        pools = [pool] if pool is not None else []
        if decl is not None and decl.connections is not None:
            pools = [Pool(label="declared connections per pod", route=route, size=Term(
                label="declared connections per pod", value=decl.connections,
                source=Source(path=origin, key=f"workloads.{decl.name}.connections")))]
        parts = (["connections per pod"] if not pools else []) + \
            (["replicas"] if pods.unknown else [])
        unknown = (f"{' and '.join(parts)} unknown: {pods.why}" + (
            f"; {why}" if why and not pools else "")) if parts else ""
        cid = base_id if not out else f"{base_id}#{ds}"
        client = Client(
            id=cid, name=name, namespace=namespace, kind=kind, replicas=pods.replicas,
            surge=pods.surge, pools=pools,
            location=route.source.location() or obj.location(),
            suppressed=suppressed_codes(obj), route=route, replicas_unknown=pods.unknown,
            unknown=unknown, part_of=part_of if not out else (part_of or base_id))
        target = resolve_host(route.host, namespace or default_ns, host_map)
        if target is not None:
            client.target_kind, client.target_id = target  # type: ignore[assignment]
        out.append(client)
    return out


def orphan_clients(index: ConfigIndex, read: set[tuple[str, str | None, str]],
                   host_map: dict[str, tuple[str, str]], default_ns: str,
                   notices: list[str], unplaced: list[str], declared: dict | None = None,
                   origin: str | None = None) -> list[Client]:
    """A ConfigMap or Secret labelled for the grafana chart's sidecar
    (`grafana_datasource`) that no Grafana pod of the repository reads: its PostgreSQL
    data sources are clients whose pods are unknown (the Grafana that reads it is
    deployed from elsewhere), never nothing."""
    out: list[Client] = []
    for (kind, _ns, name), data in index.items():
        ref = (kind, data.obj.namespace, name)
        if ref in read or data.made_by is not None or not may_hold_datasources(data) \
                or SIDECAR_LABEL not in data.obj.labels:
            continue
        found = Found()
        for key in data.data:
            if yaml_key(key):
                shown, offset = data.text_origin(key)
                provisioning_file(data.data[key], shown, offset, _expand_with(None),
                                  GrafanaRelease(how="the Grafana reading it is not in the "
                                                     "repository"), None, data.obj.ref, found)
        notices += found.notices
        unplaced += [f"{data.obj.name}:{n}" for n in found.unplaced]
        pods = Pods(replicas=_ONE_UNKNOWN, unknown=True, why=(
            f"{data.obj.ref} is labelled {SIDECAR_LABEL} for a Grafana sidecar, and no "
            "Grafana pod of the repository reads it"))
        out += _clients_of(found, data.obj.ref, data.obj.name, data.obj, data.obj.namespace,
                           data.obj.kind, pods, host_map, default_ns,
                           (declared or {}).get(data.obj.name), origin)
    return out


_ONE_UNKNOWN = Term(label="replicas unknown", value=1, source=Source.default_of(
    "the Grafana pods that read it are not in the repository; 1 is not counted"))


# ------------------------------------------------------------------- grafana-operator


def _not_a_selector(selector: Any) -> str:
    """Why `selector` is not a metav1.LabelSelector ("" when it is one, or absent)."""
    if selector is None:
        return ""
    if not isinstance(selector, dict):
        return "is not a map"
    if not isinstance(selector.get("matchLabels") or {}, dict):
        return "matchLabels is not a map"
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list) or not all(
            isinstance(e, dict) and isinstance(e.get("values") or [], list)
            for e in expressions):
        return "matchExpressions is not a list of {key, operator, values}"
    return ""


def _selects(selector: Any, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector: matchLabels all equal, matchExpressions all hold (False
    for anything else: _not_a_selector says why)."""
    if not isinstance(selector, dict) or _not_a_selector(selector):
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(str(k)) != str(v):
            return False
    for e in selector.get("matchExpressions") or []:
        key, op = str(e.get("key")), str(e.get("operator"))
        values = [str(v) for v in e.get("values") or []]
        if (op == "In" and labels.get(key) not in values) or \
                (op == "NotIn" and key in labels and labels[key] in values) or \
                (op == "Exists" and key not in labels) or \
                (op == "DoesNotExist" and key in labels):
            return False
    return True


def operator_release(objects: list[K8sObject]) -> tuple[int, ...] | None:
    """The grafana-operator release the repository deploys: its chart's version (an
    OCIRepository tag or a HelmRelease's chart version; equal to the operator's from
    v5.15.0), or its image tag."""
    for o in objects:
        found = None
        if o.kind == "OCIRepository" and str(get(o.body, "spec", "url") or "").rstrip(
                "/").endswith("/grafana-operator"):
            found = get(o.body, "spec", "ref", "tag")
        elif o.kind == "HelmRelease" and get(o.body, "spec", "chart", "spec", "chart") == \
                "grafana-operator":
            found = get(o.body, "spec", "chart", "spec", "version")
        number = _numbers(str(found)) if found is not None else None
        if number is not None and number >= (5,):
            return number
    for o in objects:
        if o.kind != "Deployment":
            continue
        containers = get(o.body, "spec", "template", "spec", "containers")
        for c in containers if isinstance(containers, list) else []:
            image = str(c.get("image") or "") if isinstance(c, dict) else ""
            if "/grafana-operator:" in image:
                number = _numbers(image.rpartition(":")[2])
                if number is not None:
                    return number
    return None


def _cr_release(g: K8sObject, operator: tuple[int, ...] | None) -> GrafanaRelease:
    version = get(g.body, "spec", "version")
    if isinstance(version, str) and version.strip():
        text = version.strip()
        return tag_release(text.rpartition(":")[2] if any(ch in text for ch in ":/@")
                           else text, f"{g.ref} spec.version")
    if operator is not None and operator >= OPERATOR_DEFAULTS_SINCE:
        return GrafanaRelease(OPERATOR_DEFAULT_FLOOR, False, (
            f"{g.ref} names no spec.version: grafana-operator "
            f"{'.'.join(map(str, operator))} runs its default, 9.5.17 or later"))
    return GrafanaRelease(how=f"{g.ref} names no spec.version and the grafana-operator "
                              "release is not read")


def _grafana_container(g: K8sObject) -> tuple[int, dict] | None:
    containers = get(g.body, "spec", "deployment", "spec", "template", "spec", "containers")
    for i, c in enumerate(containers if isinstance(containers, list) else []):
        if isinstance(c, dict) and c.get("name") == "grafana":
            return i, c
    return None


def _cr_default(g: K8sObject) -> DefaultSetting | None:
    found = _grafana_container(g)
    if found is not None:
        i, c = found
        env = c.get("env")
        for j, e in enumerate(env if isinstance(env, list) else []):
            if isinstance(e, dict) and e.get("name") == "GF_SQL_DATASOURCES_MAX_OPEN_CONNS_DEFAULT":
                at = ("spec", "deployment", "spec", "template", "spec", "containers", i,
                      "env", j)
                return DefaultSetting(e.get("value") if "value" in e else None,
                                      g.source(*at, key=str(e["name"])))
    value = get(g.body, "spec", "config", "sql_datasources", "max_open_conns_default")
    if value is not None:
        return DefaultSetting(str(value), g.source(
            "spec", "config", "sql_datasources", "max_open_conns_default",
            key="sql_datasources.max_open_conns_default"))
    return None


def _cr_pods(g: K8sObject, peaks: dict, default_ns: str) -> tuple[Term, Term | None]:
    """The pods of the Deployment the operator makes for `g`, and its rolling surge."""
    ns = g.namespace or default_ns
    deployment = f"{g.name}-deployment"
    spec = ("spec", "deployment", "spec")
    given = get(g.body, *spec, "replicas")
    scaled = peaks.get((ns, "Deployment", deployment))
    if scaled is not None:
        replicas = scaled
    elif isinstance(given, int) and not isinstance(given, bool):
        replicas = Term(label="replicas", value=given,
                        source=g.source(*spec, "replicas", key="spec.deployment.spec.replicas"))
    else:
        replicas = Term(label="replicas", value=1, source=Source.default_of(
            "grafana-operator: the Deployment it makes sets no replicas "
            "(deployment_reconciler.go getDeploymentSpec): Kubernetes default 1",
            key="spec.deployment.spec.replicas"))
    if get(g.body, *spec, "strategy", "type") == "Recreate":
        return replicas, None
    keys = (*spec, "strategy", "rollingUpdate", "maxSurge")
    raw = get(g.body, *keys)
    # Kubernetes' rule, as for any Deployment (advisor.read.workloads.surge_term: rounded
    # up, never more than the replicas)
    surge_spec = SurgeSpec("default", keys="spec.deployment.spec.strategy") if raw is None \
        else SurgeSpec("given", text=str(raw).strip(), source=g.source(*keys, key="maxSurge"))
    return replicas, surge_term(surge_spec, replicas.value,
                                "Kubernetes default: maxSurge 25%")


def _values_from(ds: K8sObject, index: ConfigIndex
                 ) -> dict[str, list[tuple[str, str | None]]] | None:
    """targetPath -> [(key, value or None when not held here)] of spec.valuesFrom; None
    when spec.valuesFrom is not a list (what it substitutes is not known)."""
    out: dict[str, list[tuple[str, str | None]]] = {}
    items = get(ds.body, "spec", "valuesFrom") or []
    if not isinstance(items, list):
        return None
    for item in items:
        if not isinstance(item, dict) or not item.get("targetPath"):
            continue
        for ref_key, kind in (("secretKeyRef", "secret"), ("configMapKeyRef", "configmap")):
            ref = get(item, "valueFrom", ref_key)
            if isinstance(ref, dict) and ref.get("name") and ref.get("key"):
                data = lookup(index, kind, ds.namespace, str(ref["name"]))
                value = data.data.get(str(ref["key"])) if data is not None else None
                out.setdefault(str(item["targetPath"]), []).append((str(ref["key"]), value))
    return out


def _cr_expand(values: dict[str, list[tuple[str, str | None]]] | None) -> Expand:
    """The operator's substitution of `${key}`/`$key` in the string at a valuesFrom
    targetPath (a data source created through the API is not interpolated by Grafana
    itself); None when the referenced value is not held here, or for any `$` when
    valuesFrom is not read (`values` None)."""
    def expand(text: str, path: str = "") -> str | None:
        if values is None:
            return None if "$" in text else text
        for key, value in values.get(path, []):
            if f"${{{key}}}" in text or re.search(rf"\${re.escape(key)}(?!\w)", text):
                if value is None:
                    return None
                text = text.replace(f"${{{key}}}", value).replace(f"${key}", value)
        return text
    return expand


def operator_clients(objects: list[K8sObject], index: ConfigIndex, peaks: dict,
                     host_map: dict[str, tuple[str, str]], default_ns: str,
                     notices: list[str], unplaced: list[str], problems: list[ConfigProblem],
                     declared: dict | None = None, origin: str | None = None) -> list[Client]:
    """The clients of every Grafana CR that GrafanaDatasources of PostgreSQL are pushed
    to: its pods x each one's pool; pods unknown for a data source no Grafana CR of the
    repository matches (or one that is spec.external), never nothing. Each
    GrafanaDatasource and each Grafana CR is read on its own (advisor.guard.guarded): one
    that crashes is a problem of its own (PA901), and the others are still read."""
    sources = [o for o in objects if o.kind == "GrafanaDatasource"
               and o.api_version.startswith(OPERATOR_GROUP)]
    if not sources:
        return []
    grafanas = [o for o in objects if o.kind == "Grafana"
                and o.api_version.startswith(OPERATOR_GROUP)]
    operator = operator_release(objects)
    settings: dict[str, tuple[GrafanaRelease, DefaultSetting | None] | None] = {}

    def settings_of(g: K8sObject) -> tuple[GrafanaRelease, DefaultSetting | None] | None:
        """The release and max_open_conns_default of a Grafana CR; None when reading
        it crashed (its problem said once)."""
        if g.ref not in settings:
            settings[g.ref] = guarded(problems, g.path, lambda: (
                _cr_release(g, operator), _cr_default(g)), None, "reading this Grafana",
                g.line)
        return settings[g.ref]

    per_grafana: dict[str, Found] = {}
    out: list[Client] = []
    for ds in sources:
        read = guarded(problems, ds.path, partial(
            _operator_datasource, ds, grafanas, settings_of, index, host_map, default_ns,
            declared, origin), None, "reading this GrafanaDatasource", ds.line)
        if read is None:
            continue
        clients, found_per, ds_notices, ds_unplaced = read
        out += clients
        notices += ds_notices
        unplaced += ds_unplaced
        for ref, found in found_per.items():
            _merge(per_grafana.setdefault(ref, Found()), found)
    for g in grafanas:
        found = per_grafana.get(g.ref)
        if found is not None and found.entries:
            out += guarded(problems, g.path, partial(
                _grafana_clients, g, found, peaks, host_map, default_ns, declared, origin),
                [], "reading this Grafana", g.line)
    return out


def _merge(into: Found, more: Found) -> None:
    into.pools += more.pools
    into.routes += more.routes
    into.unknown += more.unknown
    into.notices += more.notices
    into.unplaced += more.unplaced
    into.entries += more.entries


def _operator_datasource(ds: K8sObject, grafanas: list[K8sObject],
                         settings_of: Callable[[K8sObject], Any], index: ConfigIndex,
                         host_map: dict[str, tuple[str, str]], default_ns: str,
                         declared: dict | None, origin: str | None
                         ) -> tuple[list[Client], dict[str, Found], list[str], list[str]]:
    """One GrafanaDatasource: the client it is when no Grafana CR here matches it, what
    it adds to each Grafana CR it matches (by ref), its notices and unplaced names."""
    node = get(ds.body, "spec", "datasource")
    if not isinstance(node, dict):
        return [], {}, [], []
    ns = ds.namespace or default_ns
    cross = get(ds.body, "spec", "allowCrossNamespaceImport") is True
    selector = get(ds.body, "spec", "instanceSelector")
    bad = _not_a_selector(selector)
    matched = [g for g in grafanas if (cross or (g.namespace or default_ns) == ns)
               and _selects(selector, g.labels)]
    expand = _cr_expand(_values_from(ds, index))

    def at(*keys: str | int) -> Source:
        return ds.source("spec", "datasource", *keys,
                         key=".".join(str(k) for k in ("spec.datasource", *keys)))

    notices: list[str] = []
    unplaced: list[str] = []
    out: list[Client] = []
    if not matched:
        reason = f"its instanceSelector {bad}: the Grafana CRs it goes to are not " \
            "known" if bad else "no Grafana CR of the repository matches its instanceSelector"
        found = Found()
        read_datasource(node, at, expand, GrafanaRelease(how=reason), None, ds.ref, found)
        notices += found.notices
        unplaced += [f"{ds.name}:{n}" for n in found.unplaced]
        pods = Pods(replicas=_ONE_UNKNOWN, unknown=True, why=f"{ds.ref}: {reason}")
        out += _clients_of(found, ds.ref, ds.name, ds, ds.namespace, ds.kind, pods,
                           host_map, default_ns, (declared or {}).get(ds.name), origin)
    per_grafana: dict[str, Found] = {}
    for g in matched:
        read = settings_of(g)
        if read is None:
            continue  # the Grafana CR could not be read: its own problem says so
        release, default = read
        found = per_grafana.setdefault(g.ref, Found())
        read_datasource(node, at, expand, release, default, ds.ref, found)
        notices += found.notices
        unplaced += [f"{g.name}:{n}" for n in found.unplaced]
    return out, per_grafana, notices, unplaced


def _grafana_clients(g: K8sObject, found: Found, peaks: dict,
                     host_map: dict[str, tuple[str, str]], default_ns: str,
                     declared: dict | None, origin: str | None) -> list[Client]:
    """The clients of the data sources pushed to one Grafana CR: its pods x each pool."""
    if get(g.body, "spec", "external") is not None:
        pods = Pods(replicas=_ONE_UNKNOWN, unknown=True, why=(
            f"{g.ref} is an external Grafana (spec.external): its pods are not the "
            "operator's, nor in the repository"))
    else:
        replicas, surge = _cr_pods(g, peaks, default_ns)
        pods = Pods(replicas=replicas, surge=surge)
    return _clients_of(found, f"{g.ref}#datasources", g.name, g, g.namespace,
                       "GrafanaDatasource", pods, host_map, default_ns,
                       (declared or {}).get(g.name), origin)


# --------------------------------------------------- a grafana chart release not rendered


def _chart_of(release: Any, objects: list[K8sObject]) -> tuple[str, str | None]:
    """(chart name, chart version) of a release: an OCIRepository chartRef is looked up
    for its url and tag."""
    chart = release.chart.rstrip("/").rsplit("/", 1)[-1].lower()
    version = get(release.obj.body, "spec", "chart", "spec", "version")
    if release.origin.startswith("OCIRepository"):
        ref_name = release.origin.split(" ", 1)[1]
        for o in objects:
            if o.kind == "OCIRepository" and o.name == ref_name and \
                    (o.namespace or None) in (release.obj.namespace, None):
                chart = str(get(o.body, "spec", "url") or chart).rstrip("/").rsplit(
                    "/", 1)[-1].lower()
                version = get(o.body, "spec", "ref", "tag") or version
    if version is None:
        version = get(release.obj.body, "spec", "source", "targetRevision")
    return chart, str(version) if version is not None else None


def _values_at(values: Any, base: tuple) -> At:
    def at(*keys: str | int) -> Source:
        return values.source((*base, *keys), ".".join(str(k) for k in (*base, *keys)))
    return at


def release_clients(release: Any, objects: list[K8sObject],
                    host_map: dict[str, tuple[str, str]], default_ns: str,
                    notices: list[str], unplaced: list[str], part_of: str | None,
                    decl: Any = None, origin: str | None = None) -> list[Client]:
    """The PostgreSQL data sources in the values of a grafana chart release (or of
    kube-prometheus-stack's grafana) that is not rendered: pods unknown."""
    if not any(isinstance(v.node, dict) and ("datasources" in v.node or isinstance(
            v.node.get("grafana"), dict)) for v in release.values):
        return []  # no data source in its values: the chart is not looked up
    chart, version = _chart_of(release, objects)
    if chart not in ("grafana", "kube-prometheus-stack"):
        return []
    out: list[Client] = []
    for values in release.values:
        root: tuple = ("grafana",) if chart == "kube-prometheus-stack" else ()
        node = get(values.node, *root)
        if not isinstance(node, dict):
            continue
        tag = get(node, "image", "tag")
        chart_number = _numbers(version) if version and chart == "grafana" else None
        if tag is not None and str(tag).strip():
            grafana = tag_release(str(tag), f"{release.describe()} image.tag")
        elif chart_number is not None and chart_number >= CHART_DEFAULTS_SINCE:
            grafana = GrafanaRelease(DEFAULT_SINCE, False, (
                f"grafana chart {version}: its appVersion is 9.5.1 or later"))
        else:
            grafana = GrafanaRelease(how=f"{release.describe()}: the Grafana it runs is not "
                                         "read")
        env = node.get("env") if isinstance(node.get("env"), dict) else {}
        env = {str(k): str(v) for k, v in env.items()}
        default = None
        raw = env.get("GF_SQL_DATASOURCES_MAX_OPEN_CONNS_DEFAULT")
        if raw is not None:
            default = DefaultSetting(raw, values.source((*root, "env",
                                                         "GF_SQL_DATASOURCES_MAX_OPEN_CONNS_DEFAULT"),
                                                        "GF_SQL_DATASOURCES_MAX_OPEN_CONNS_DEFAULT"))
        ini = get(node, "grafana.ini", "sql_datasources", "max_open_conns_default")
        if default is None and ini is not None:
            default = DefaultSetting(str(ini), values.source(
                (*root, "grafana.ini", "sql_datasources", "max_open_conns_default"),
                "sql_datasources.max_open_conns_default"))
        found = Found()
        who = release.describe()
        files = node.get("datasources") if isinstance(node.get("datasources"), dict) else {}
        for fname, doc in files.items():
            keys: tuple = (*root, "datasources", fname)
            if isinstance(doc, dict) and isinstance(doc.get("secret"), dict):
                doc, keys = doc["secret"], (*keys, "secret")
            items = doc.get("datasources") if isinstance(doc, dict) else None
            for i, item in enumerate(items if isinstance(items, list) else []):
                read_datasource(item, _values_at(values, (*keys, "datasources", i)),
                                _expand_with(env), grafana, default, who, found)
        extra = node.get("additionalDataSources") if chart == "kube-prometheus-stack" else None
        for i, item in enumerate(extra if isinstance(extra, list) else []):
            read_datasource(item, _values_at(values, (*root, "additionalDataSources", i)),
                            _expand_with(env), grafana, default, who, found)
        notices += found.notices
        unplaced += [f"{release.name}:{n}" for n in found.unplaced]
        pods = Pods(replicas=_ONE_UNKNOWN, unknown=True, why=(
            f"{release.describe()}: the chart is not in the repository, so its pods are "
            "not read"))
        out += _clients_of(found, f"{release.id}#datasources", release.name, release.obj,
                           release.namespace, release.kind, pods, host_map, default_ns,
                           decl, origin, part_of)
    return out
