"""GitOps releases of charts that are not in the repository: Flux HelmRelease
(helm.toolkit.fluxcd.io) and Argo CD Application (argoproj.io) objects whose chart comes
from a Helm or OCI repository, or from a git path the repository does not hold. Such a
chart cannot be rendered, so its workloads are not read; what the repository does say
is the release's values, and the database routes they name (env in the values, and the
Secrets and ConfigMaps they reference) make the release a client of unknown size.

Pure functions over already-loaded objects: whether a folder exists is asked through
the `in_repo` callable the caller gives.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from advisor.model import EnvVar, Source
from advisor.read.render.kustomize_tree import CHART_API, CHART_KIND
from advisor.read.sources.k8s import K8sObject, block_offset, get, load_yaml_stream
from advisor.read.workloads import ConfigIndex, lookup

FLUX_HELM_GROUP = "helm.toolkit.fluxcd.io/"
ARGO_GROUP = "argoproj.io/"
FLUX_KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io/"
# A helmfile release of a chart from a chart repository, as an object of the run
# (advisor.engine.repository._helmfile_releases): body `spec` {name, repo}, `values` the
# documents of its values files, `valuesPaths` their files
HELMFILE_KIND = "HelmfileRelease"
HELMFILE_API = "builtin"


class Values(Struct):
    """A release's values tree and where its keys are written: `obj.source(*at, *keys)`
    is the file line of the value at `keys` below `node`."""

    node: Any
    obj: K8sObject
    at: tuple = ()
    release: str = ""  # the release's name: what `{{ .Release.Name }}` in a value is
    namespace: str = ""

    def source(self, keys: tuple, key: str) -> Source:
        return self.obj.source(*self.at, *keys, key=key)

    def name_of(self, text: str) -> str:
        """An object name as the chart renders it: app-template passes names through
        `tpl`, so `{{ .Release.Name }}-secret` is `<release>-secret`."""
        if "{{" not in text:
            return text
        text = _RELEASE_NAME.sub(self.release, text) if self.release else text
        return _RELEASE_NAMESPACE.sub(self.namespace, text) if self.namespace else text


_RELEASE_NAME = re.compile(r"\{\{-?\s*\.Release\.Name\s*-?\}\}")
_RELEASE_NAMESPACE = re.compile(r"\{\{-?\s*\.Release\.Namespace\s*-?\}\}")


class Release(Struct):
    """A release whose chart is not rendered from the repository."""

    kind: str  # "HelmRelease" | "Application" | "helmCharts" (kustomize)
    name: str
    namespace: str | None
    chart: str  # as the release names it: "app-template", "oci://...", a git path
    origin: str  # where the chart comes from: "HelmRepository flux-system/bjw-s"
    obj: K8sObject
    values: list[Values] = field(default_factory=list)
    # a git path that the repository does not hold (Flux GitRepository, Argo path)
    git_path_missing: bool = False

    @property
    def id(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{ns}{self.name}"

    def describe(self) -> str:
        """'HelmRelease miniflux (chart app-template from HelmRepository bjw-s)'."""
        return f"{self.kind} {self.name} (chart {self.chart} from {self.origin})"


def repo_folder(path: str, root_parts: tuple[str, ...], exists: Callable[[str], bool]
                ) -> str | None:
    """A path a GitOps object gives relative to its git repository's top
    (`./kubernetes/main/apps/x`) as a folder of the scanned root, which may be a folder
    below that top (kubernetes/main): the path itself when it exists, else the path
    less the root's own last folders when it starts with them. None: not in the
    repository."""
    parts = tuple(p for p in path.strip().replace("\\", "/").split("/") if p not in ("", "."))
    if ".." in parts:
        return None  # nothing is read outside the repository
    candidates = ["/".join(parts)]
    for k in range(min(len(root_parts), len(parts)), 0, -1):
        if tuple(root_parts[-k:]) == parts[:k]:
            candidates.append("/".join(parts[k:]))
    for candidate in candidates:
        if exists(candidate):
            return candidate
    return None


def find_releases(objects: list[K8sObject], chart_in_repo: Callable[[str], bool]
                  ) -> list[Release]:
    """Flux HelmReleases and Argo CD Applications whose chart is not in the repository.
    `chart_in_repo(path)`: whether a git chart path is a chart folder of the scanned
    repository (then it is rendered from there, not read here)."""
    out: list[Release] = []
    for obj in objects:
        if obj.kind == "HelmRelease" and obj.api_version.startswith(FLUX_HELM_GROUP):
            found = _flux_release(obj, chart_in_repo)
            if found is not None:
                out.append(found)
        elif obj.kind == "Application" and obj.api_version.startswith(ARGO_GROUP):
            out += _argo_releases(obj, chart_in_repo)
        elif obj.kind == CHART_KIND and obj.api_version == CHART_API:
            out.append(_kustomize_release(obj))
        elif obj.kind == HELMFILE_KIND and obj.api_version == HELMFILE_API:
            out.append(_helmfile_release(obj))
    return out


def _text(value: Any) -> str:
    return str(value) if isinstance(value, str | int | float) else ""


def _flux_release(obj: K8sObject, chart_in_repo: Callable[[str], bool]) -> Release | None:
    spec = obj.body.get("spec")
    if not isinstance(spec, dict):
        return None
    namespace = _text(spec.get("targetNamespace")) or obj.namespace
    ref = spec.get("chartRef")
    missing = False
    if isinstance(ref, dict):  # an OCIRepository or HelmChart object holds the chart
        chart = _text(ref.get("name")) or "?"
        origin = f"{_text(ref.get('kind')) or 'chartRef'} {chart}"
    else:
        chart_spec = get(spec, "chart", "spec")
        if not isinstance(chart_spec, dict):
            return None
        chart = _text(chart_spec.get("chart")) or "?"
        source = chart_spec.get("sourceRef") if isinstance(chart_spec.get("sourceRef"),
                                                           dict) else {}
        kind = _text(source.get("kind")) or "sourceRef"
        origin = f"{kind} {_text(source.get('name')) or '?'}"
        if kind == "GitRepository":
            if chart_in_repo(chart):
                return None  # the chart folder is in the repository: rendered from there
            missing = True
    values = spec.get("values")
    name = _text(spec.get("releaseName")) or obj.name
    trees = [Values(node=values, obj=obj, at=("spec", "values"), release=name,
                    namespace=namespace or "")] if isinstance(values, dict) else []
    return Release(kind="HelmRelease", name=name, namespace=namespace, chart=chart,
                   origin=origin, obj=obj, values=trees, git_path_missing=missing)


def _argo_releases(obj: K8sObject, chart_in_repo: Callable[[str], bool]) -> list[Release]:
    spec = obj.body.get("spec")
    if not isinstance(spec, dict):
        return []
    sources: list[tuple[tuple, dict]] = []
    if isinstance(spec.get("source"), dict):
        sources.append((("spec", "source"), spec["source"]))
    if isinstance(spec.get("sources"), list):
        sources += [(("spec", "sources", i), s) for i, s in enumerate(spec["sources"])
                    if isinstance(s, dict)]
    namespace = _text(get(spec, "destination", "namespace")) or None
    out: list[Release] = []
    for at, source in sources:
        repo = _text(source.get("repoURL")) or "?"
        missing = False
        if source.get("chart"):
            chart, origin = _text(source["chart"]), f"Helm repository {repo}"
        elif source.get("path") and isinstance(source.get("helm"), dict):
            chart, origin = _text(source["path"]), f"git repository {repo}"
            if chart_in_repo(chart):
                continue
            missing = True
        else:
            continue  # plain manifests or kustomize from git: no chart values to read
        helm = source.get("helm") if isinstance(source.get("helm"), dict) else {}
        trees: list[Values] = []
        if isinstance(helm.get("valuesObject"), dict):
            trees.append(Values(node=helm["valuesObject"], obj=obj,
                                at=(*at, "helm", "valuesObject")))
        if isinstance(helm.get("values"), str):
            parsed = _values_text(obj, helm, at)
            if parsed is not None:
                trees.append(parsed)
        name = _text(helm.get("releaseName")) or obj.name
        trees = [replace(t, release=name, namespace=namespace or "") for t in trees]
        out.append(Release(kind="Application", name=name, namespace=namespace, chart=chart,
                           origin=origin, obj=obj, values=trees, git_path_missing=missing))
    if len(out) > 1:  # several charts in one Application: one client each
        out = [Release(kind=r.kind, name=f"{r.name}/{r.chart.rsplit('/', 1)[-1]}",
                       namespace=r.namespace, chart=r.chart, origin=r.origin, obj=r.obj,
                       values=r.values, git_path_missing=r.git_path_missing) for r in out]
    return out


def _kustomize_release(obj: K8sObject) -> Release:
    """A kustomize helmCharts entry (advisor.read.render.kustomize_tree.chart_objects):
    its values, the one that wins first (valuesInline over the files, a later file over
    an earlier one, as kustomize merges them)."""
    entry = obj.body["spec"]
    trees = [Values(node=entry["valuesInline"], obj=obj, at=("spec", "valuesInline"))] \
        if isinstance(entry.get("valuesInline"), dict) else []
    for doc, shown in reversed(list(zip(obj.body["values"], obj.body["valuesPaths"],
                                        strict=True))):
        trees.append(Values(node=doc, obj=K8sObject(
            kind="values", api_version="", name=shown, namespace=None, body=doc,
            path=shown, line=1)))
    trees = [replace(t, release=obj.name, namespace=obj.namespace or "") for t in trees]
    return Release(kind="helmCharts", name=obj.name, namespace=obj.namespace,
                   chart=str(entry["name"]),
                   origin=f"Helm repository {_text(entry.get('repo')) or '?'}", obj=obj,
                   values=trees)


def _helmfile_release(obj: K8sObject) -> Release:
    """A helmfile release of a chart from a chart repository: its values files, a later
    one first (it wins, as helmfile passes them to Helm in order)."""
    trees = [Values(node=doc, obj=K8sObject(kind="values", api_version="", name=shown,
                                            namespace=None, body=doc, path=shown, line=1),
                    release=obj.name, namespace=obj.namespace or "")
             for doc, shown in reversed(list(zip(obj.body["values"], obj.body["valuesPaths"],
                                                 strict=True)))]
    spec = obj.body["spec"]
    return Release(kind="helmfile", name=obj.name, namespace=obj.namespace,
                   chart=str(spec["name"]),
                   origin=f"Helm repository {_text(spec.get('repo')) or '?'}", obj=obj,
                   values=trees)


def _values_text(obj: K8sObject, helm: Any, at: tuple) -> Values | None:
    """`helm.values`, a YAML document written as a string, read with its lines in the
    Application's file (a block scalar's first line is the line after `values: |`)."""
    offset = obj.line_offset + block_offset(helm, "values")
    docs, _problems = load_yaml_stream(str(helm["values"]), obj.path, offset)
    if not docs or not isinstance(docs[0][0], dict):
        return None  # a values text that is no mapping: Argo CD refuses it too
    doc = docs[0][0]
    shown = K8sObject(kind=obj.kind, api_version=obj.api_version, name=obj.name,
                      namespace=obj.namespace, body=doc, path=obj.path, line=obj.line,
                      line_offset=offset)
    return Values(node=doc, obj=shown, at=())


# Keys of a values tree that hold container environment in the charts' own forms: `env`
# (app-template, most charts), `extraEnv`, `extraEnvVars` (Bitnami), `envVars`...
_ENV_KEY = re.compile(r"(?:extra|additional|global|common)?_?env(?:s|vars?|ironment)?",
                      re.I)
_ENV_FROM_KEY = re.compile(r"(?:extra)?_?envfrom", re.I)
# Bitnami: a Secret or ConfigMap (by name) whose keys become environment variables
_ENV_SECRET_KEYS = {"extraenvvarssecret": "secret", "extraenvvarscm": "configmap",
                    "envfromsecret": "secret", "envfromconfigmap": "configmap"}
_MAX_DEPTH = 24
_MAX_NODES = 20_000  # values trees are small; a huge one is not walked past this


def env_scopes(values: Values, index: ConfigIndex, namespace: str | None
               ) -> list[tuple[EnvVar, ...]]:
    """One environment per mapping of the values that holds env-like keys (a container
    of app-template, a Bitnami chart's top level): envFrom first, then env (which
    overrides it, as the kubelet does). Secret and ConfigMap references are read from
    `index` in the release's namespace; one not in the repository is kept as a
    reference without a value."""
    out: list[tuple[EnvVar, ...]] = []
    for keys, node in _mappings(values.node):
        env: list[EnvVar] = []
        for k, v in node.items():
            name = str(k)
            lower = name.lower()
            if _ENV_FROM_KEY.fullmatch(name) and isinstance(v, list):
                for j, item in enumerate(v):
                    env += _env_from(values, (*keys, name, j), item, index, namespace)
            elif lower in _ENV_SECRET_KEYS and isinstance(v, str) and v:
                env += _referenced(values, (*keys, name), _ENV_SECRET_KEYS[lower], v, "",
                                   index, namespace)
        for k, v in node.items():
            name = str(k)
            if _ENV_KEY.fullmatch(name) and not _ENV_FROM_KEY.fullmatch(name):
                env += _env_items(values, (*keys, name), v, index, namespace)
        if env:
            last: dict[str, EnvVar] = {}
            for var in env:
                last[var.name] = var
            out.append(tuple(last.values()))
    return out


def _mappings(node: Any) -> Iterator[tuple[tuple, dict]]:
    """Every mapping of a values tree with its keys, breadth first, bounded."""
    from collections import deque

    queue: deque[tuple[tuple, Any]] = deque([((), node)])
    seen = 0
    while queue and seen < _MAX_NODES:
        keys, cur = queue.popleft()
        seen += 1
        if len(keys) > _MAX_DEPTH:
            continue
        if isinstance(cur, dict):
            yield keys, cur
            queue.extend(((*keys, str(k)), v) for k, v in cur.items()
                         if isinstance(v, dict | list))
        elif isinstance(cur, list):
            queue.extend(((*keys, i), v) for i, v in enumerate(cur)
                         if isinstance(v, dict | list))


def _env_items(values: Values, keys: tuple, node: Any, index: ConfigIndex,
               namespace: str | None) -> list[EnvVar]:
    """Env in the Kubernetes list form (`- name: X / value: y`) or a chart's mapping form
    (`X: y`, `X: {value: y}`, `X: {valueFrom: {secretKeyRef: ...}}`)."""
    out: list[EnvVar] = []
    if isinstance(node, list):
        for j, item in enumerate(node):
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                out += _env_var(values, (*keys, j), item["name"], item, index, namespace)
    elif isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, str | int | float) and not isinstance(v, bool):
                # app-template passes env values through `tpl` too:
                # `{{ .Release.Name }}-rw.downloads.svc` (joryirving/home-ops)
                out.append(EnvVar(name=str(k), value=values.name_of(str(v)),
                                  source=values.source((*keys, str(k)), str(k))))
            elif isinstance(v, dict):
                out += _env_var(values, (*keys, str(k)), str(k), v, index, namespace)
    return out


def _env_var(values: Values, keys: tuple, name: str, item: dict, index: ConfigIndex,
             namespace: str | None) -> list[EnvVar]:
    if "value" in item and isinstance(item["value"], str | int | float):
        return [EnvVar(name=name, value=values.name_of(str(item["value"])),
                       source=values.source((*keys, "value"), name))]
    holder = item.get("valueFrom") if isinstance(item.get("valueFrom"), dict) else item
    for kind, ref_key in (("secret", "secretKeyRef"), ("configmap", "configMapKeyRef")):
        ref = holder.get(ref_key)
        if not isinstance(ref, dict):
            continue
        ref_name, key = values.name_of(_text(ref.get("name"))), _text(ref.get("key"))
        data = lookup(index, kind, namespace, ref_name)
        if data is not None and key in data.data:
            return [EnvVar(name=name, value=data.data[key], source=data.source(key),
                           from_ref=f"{kind}:{ref_name}/{key}", secret=kind == "secret")]
        if data is not None and (why := data.remote(key)) is not None:
            return [EnvVar(name=name, source=data.source(key),
                           from_ref=f"{kind}:{ref_name}/{key} (remote: {why})", secret=True)]
        return [EnvVar(name=name, source=values.source(keys, name),
                       from_ref=f"{kind}:{ref_name}/{key} (not in repository)",
                       secret=kind == "secret")]
    return []


def _env_from(values: Values, keys: tuple, item: Any, index: ConfigIndex,
              namespace: str | None) -> list[EnvVar]:
    """An envFrom item: `secretRef: {name}` / `configMapRef: {name}` (Kubernetes), or
    app-template's `secret: name` / `configMap: name`."""
    if not isinstance(item, dict):
        return []
    prefix = _text(item.get("prefix"))
    for kind, long_key, short_key in (("secret", "secretRef", "secret"),
                                      ("configmap", "configMapRef", "configMap")):
        ref = item.get(long_key)
        name = _text(ref.get("name")) if isinstance(ref, dict) else _text(item.get(short_key))
        if name:
            return _referenced(values, keys, kind, name, prefix, index, namespace)
    return []


def _referenced(values: Values, keys: tuple, kind: str, name: str, prefix: str,
                index: ConfigIndex, namespace: str | None) -> list[EnvVar]:
    name = values.name_of(name)
    data = lookup(index, kind, namespace, name)
    if data is None:
        return [EnvVar(name=f"{prefix}*", source=values.source(keys, ".".join(map(str, keys))),
                       from_ref=f"{kind}:{name} (not in repository)", secret=kind == "secret")]
    known = [EnvVar(name=prefix + k, value=v, source=data.source(k), from_ref=f"{kind}:{name}/{k}",
                    secret=kind == "secret") for k, v in data.data.items()]
    # values not in the repository (an ExternalSecret's, a SOPS-encrypted one): unknown
    return known + [EnvVar(name=prefix + k, source=data.source(k),
                           from_ref=f"{kind}:{name}/{k} (remote: {why})", secret=True)
                    for k, why in data.unknown.items()]


# A values key that names a database host (`externalDatabase.host`, `postgresql.host`,
# `database.hostname`, Temporal's `sql.connectAddr`): the key itself, and an ancestor
# that says it is a database.
_HOST_KEY = re.compile(r"host|hostname|server|address|addr|endpoint|connectAddr", re.I)
# whole words of a key (camelCase, snake_case, kebab-case split): `upgrade` holds no `pg`
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_DB_WORDS = frozenset({"postgres", "postgresql", "pg", "pgsql", "psql", "database", "databases",
                       "db", "sql", "cnpg", "pgbouncer"})


def _db_like(key: str) -> bool:
    return any(w.lower() in _DB_WORDS for w in _WORD.findall(key))


def value_hosts(values: Values) -> Iterator[tuple[str, str, Source, dict]]:
    """("url" | "host", the string, its source, the mapping holding it) for every string
    of the values that is a PostgreSQL URL, and every host-like key under a
    database-like key; the caller keeps those that lead to a server or pooler."""
    from advisor.read.apps.urls import _ANY_PG_URL

    for keys, node in _mappings(values.node):
        db_parent = any(isinstance(k, str) and _db_like(k) for k in keys)
        for k, v in node.items():
            if not isinstance(v, str) or not v.strip():
                continue
            name = str(k)
            if _ANY_PG_URL.match(v):
                yield "url", v, values.source((*keys, name), name), node
            elif db_parent and _HOST_KEY.fullmatch(name):
                yield "host", v, values.source((*keys, name), ".".join(
                    [str(x) for x in (*keys, name)])), node
