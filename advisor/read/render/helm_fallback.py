"""The values-only fallback: objects built from a chart's values when the Helm engine
cannot render it, and for a Bitnami postgresql dependency that is not vendored.

Without the engine (the `helm` extra not installed), `values_only` reads the
scaffold's conventional keys (replicaCount, autoscaling.*, env, image, resources)
and the Bitnami postgresql subchart's keys into synthetic objects at the values
file's lines, and says exactly that in a notice.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

from advisor.model import ConfigProblem, Location, Source
from advisor.read.fs import InputError, Root
from advisor.read.render import Rendered, field_path
from advisor.read.render.helm_bitnami_defaults import (
    ChartVersion,
    default_resources,
    exporter_tag,
    requires_database,
    resolve,
)
from advisor.read.render.helm_builder import ValuesBuilder as _Builder
from advisor.read.render.helm_cloudpirates import SHOWN as CLOUDPIRATES_SHOWN
from advisor.read.render.helm_cloudpirates import (
    chart_version,
    cloudpirates_postgres,
    is_cloudpirates_postgres,
)
from advisor.read.render.helm_dep_versions import Locked, bitnami_pg_major, constraint_major
from advisor.read.render.helm_positions import in_chart
from advisor.read.render.helm_values import (
    Key,
    ValuesLayer,
    block_start,
    chart_yaml_name,
    leaf_source,
    merge_maps,
    nest,
    subchart_dirs,
)
from advisor.read.sources.k8s import K8sObject, get


def values_only(root: Root, chart_path: Path, layers: list[ValuesLayer], *, release: str,
                namespace: str | None, out: Rendered, reason: str) -> Rendered:
    """Synthetic objects from the conventional values keys of `helm create`'s scaffold
    (replicaCount, autoscaling.enabled/minReplicas/maxReplicas, env, image,
    resources) and of the Bitnami postgresql chart when it is a dependency."""
    chart_rel = root.rel(chart_path)
    values: dict[str, Any] = {}
    for layer in layers:
        values = merge_maps(values, nest(layer.prefix, layer.plain))
    chart_name = chart_yaml_name(root, chart_path / "Chart.yaml") or chart_path.name
    charts: list[tuple[Key, str, dict[str, Any]]] = [((), chart_name, values)]
    subcharts = list(subchart_dirs(root, chart_path)) + _declared_dependencies(root, chart_path)
    for sub in dict.fromkeys(subcharts):
        if isinstance(values.get(sub), dict):
            charts.append(((sub,), sub, values[sub]))
    built: list[K8sObject] = []
    unread: list[str] = []
    glob = values.get("global") if isinstance(values.get("global"), dict) else {}
    conditions = _dependency_conditions(root, chart_path)
    servers: list[K8sObject] = []  # the PostgreSQL servers built from the values
    for prefix, name, section in charts:
        if prefix and _condition_false(values, conditions.get(name, "")):
            continue  # a dependency its Chart.yaml condition leaves out (Helm does too)
        if name == "postgresql" and any(k in section for k in ("primary", "architecture")):
            made = _bitnami_postgresql(section, layers, prefix, release, name, chart_rel,
                                       namespace, glob=glob, unread=unread)
            built += made
            servers += [o for o in made if o.kind == "StatefulSet"]
        elif name == "postgresql" and any(k in section for k in _LEGACY_KEYS):
            # bitnami/postgresql before 11.0 (airflow-helm/charts' stable postgresql 8.6.4:
            # postgresqlDatabase, postgresqlUsername): audit 47 D2, no server was built
            made = _bitnami_postgresql_legacy(section, layers, prefix, release, name, "",
                                              chart_rel, namespace)
            built += made
            servers += made
        else:
            built.extend(_synthetic_workload(section, layers, prefix,
                                             _fullname(section, name, release), name,
                                             chart_rel, namespace))
    out.objects.extend(built)
    _say_unread(unread, "postgresql", "", chart_rel, out)
    # A server this reading built, or one its values or templates name, beside templates
    # that were not evaluated: who connects to it (and, for one not built, whether it
    # runs) is not known, so the chart is a file not read (PA901 error: every budget a
    # floor), never "no PostgreSQL server found" or "fits, peak 0" (audit 47 D2)
    servers += [o for o in built if o not in servers and _runs_postgres(o)]
    named = [] if servers else _server_images_unread(root, chart_path, values, layers,
                                                      conditions)
    if servers or named:
        out.problems.append(_templates_server_problem(chart_rel, reason, named, servers))
    out.notices.append(
        f"helm: {chart_rel} was NOT rendered: {reason}. Read instead from values only: "
        "replicaCount, autoscaling.enabled/minReplicas/maxReplicas, env, image and "
        "resources.limits (the `helm create` scaffold's keys) and the Bitnami postgresql "
        "keys (architecture, primary/readReplicas configuration, extendedConfiguration and "
        "resources, readReplicas.replicaCount, metrics.enabled); templates, other keys, "
        "ConfigMaps, Services and any custom template logic were not evaluated")
    return out


class MissingDep(NamedTuple):
    """A dependency Chart.yaml declares that is not vendored in charts/."""

    name: str
    key: str  # its alias, or its name: where its values are
    condition: str
    version: str  # as Chart.yaml asks for it
    repository: str = ""
    locked: Locked | None = None  # what Chart.lock / requirements.lock pins


def missing_bitnami(missing: list[MissingDep], user: dict[str, Any],
                    layers: list[ValuesLayer], release: str, chart_rel: str,
                    namespace: str | None, out: Rendered,
                    own_names: dict[str, str] | None = None) -> list[K8sObject]:
    """A Bitnami postgresql or CloudPirates postgres dependency that is not vendored:
    read from its values (unless its Chart.yaml `condition`, the first path of it that
    is set, is false). `own_names`: a `file://` dependency's name in its own Chart.yaml,
    where it was read."""
    built: list[K8sObject] = []
    for dep in missing:
        name, key, condition, version = dep.name, dep.key, dep.condition, dep.version
        if _condition_false(user, condition):
            continue
        section = user.get(key)
        if is_cloudpirates_postgres(name, dep.repository) and \
                (section is None or isinstance(section, dict)):
            shown, modelled = chart_version(version, dep.locked)
            if modelled:
                glob = user.get("global") if isinstance(user.get("global"), dict) else {}
                built.extend(cloudpirates_postgres(section or {}, layers, (key,), release, key,
                                                   shown, glob, chart_rel, namespace))
                out.notices.append(
                    f"helm: {chart_rel}: dependency {key!r} (CloudPirates postgres {shown}) "
                    "is not vendored; its StatefulSet, Service and postgresql.conf ConfigMap "
                    "were built from the values (image, replicaCount, resources, args, "
                    "config.postgresql.* and config.postgresqlMaxConnections, "
                    "config.extraConfig), not rendered; other postgresql.conf lines are the "
                    "PostgreSQL defaults")
                continue
            _unread_server(name, key, section, layers, chart_rel, out,
                           (own_names or {}).get(name, ""),
                           why=f"CloudPirates postgres {shown} is built from values only for "
                               f"charts {CLOUDPIRATES_SHOWN}")
            continue
        _unread_server(name, key, section, layers, chart_rel, out,
                       (own_names or {}).get(name, ""))
        if name != "postgresql" or (section is not None and not isinstance(section, dict)):
            continue
        built.extend(bitnami_server(section or {}, layers, (key,), release, key, version,
                                    dep.locked, chart_rel, namespace, out,
                                    user.get("global") if isinstance(user.get("global"),
                                                                     dict) else {}))
    return built


class Stand(NamedTuple):
    """How the stand-in's notices name the server it built: a chart's dependency that
    is not vendored, or a release a script's `helm install` makes (helm_installs)."""

    what: str  # "dependency 'postgresql'", "release 'my-pg'"
    how: str  # "is not vendored"
    read: str  # "not vendored, read from the values"
    fix: str  # what gives the resources the chart's version leaves unknown
    anchor: Source | None = None  # where an object no values line places is said to be


def _dependency(key: str) -> Stand:
    return Stand(f"dependency {key!r}", "is not vendored", "not vendored, read from the values",
                 "set resources in the values, or vendor the chart")


def bitnami_server(section: dict[str, Any], layers: list[ValuesLayer], prefix: Key,
                   release: str, key: str, version: str, locked: Locked | None,
                   chart_rel: str, namespace: str | None, out: Rendered,
                   glob: dict[str, Any], stand: Stand | None = None) -> list[K8sObject]:
    """The server a Bitnami postgresql chart makes, built from its values `section`
    (under `prefix` in `layers`) by the stand-in rather than rendered: the chart's
    defaults, one primary, when the values set nothing of it (Helm enables a dependency
    whose condition path is unset); the PostgreSQL major of the chart version the lock
    file pins, else the one `version` asks for (helm_dep_versions)."""
    stand = stand or _dependency(key)
    pg, pg_source = bitnami_pg_major(version, locked)
    chart_major = constraint_major(locked.version if locked else version)
    modern = chart_major is None or chart_major >= 11  # before 11.0: another shape
    chart = resolve(version, locked)
    if modern and _refuses_metrics(section, glob, chart, prefix, layers, chart_rel, out, stand):
        return []
    unread: list[str] = []
    found = _bitnami_postgresql(section, layers, prefix, release, key, chart_rel,
                                namespace, defaults=modern, pg=(pg, pg_source),
                                chart=chart, glob=glob, unread=unread, anchor=stand.anchor)
    if not found:
        found = _bitnami_postgresql_legacy(section, layers, prefix, release, key, version,
                                           chart_rel, namespace, defaults=not modern,
                                           pg=(pg, pg_source), anchor=stand.anchor)
        if found:
            out.notices.append(
                f"helm: {chart_rel}: {stand.what} (Bitnami postgresql {version or '?'}, the values "
                f"of its charts before 11.0) {stand.how}; its StatefulSets were built from "
                "the values (postgresqlMaxConnections, replication), not rendered"
                + ("" if get(section, "image", "tag") else
                   f"; without image.tag in the values, PostgreSQL {pg}: "
                   f"{pg_source.key or pg_source.default}"))
        return found
    out.notices.append(
        f"helm: {chart_rel}: {stand.what} (Bitnami postgresql) {stand.how}; its StatefulSets "
        "and configuration ConfigMaps were built from the values (architecture, "
        "primary/readReplicas configuration, extendedConfiguration, resources and "
        "resourcesPreset, readReplicas.replicaCount, metrics.enabled and metrics.image), "
        "not rendered"
        + (f"; the defaults of chart {chart.shown} ({chart.source.label()}) where the values "
           "set none: resources, the metrics exporter's version" if chart is not None else "")
        + ("" if get(section, "image", "tag") else
           f"; no image.tag in the values, so PostgreSQL {pg}: "
           f"{pg_source.key or pg_source.default}"))
    _say_unread(unread, key, version, chart_rel, out, stand)
    return found


def _refuses_metrics(section: dict[str, Any], glob: dict[str, Any],
                     chart: ChartVersion | None, prefix: Key, layers: list[ValuesLayer],
                     chart_rel: str, out: Rendered, stand: Stand) -> bool:
    """metrics.enabled without a database, which charts 11.0.0-15.5.11 refuse to render
    (helm_bitnami_defaults): the PA901 error the engine gives for the vendored chart, and
    nothing built (Helm installs nothing)."""
    if chart is None or not requires_database(chart) or \
            get(section, "metrics", "enabled") is not True or _database(section, glob):
        return False
    at = leaf_source(layers, (*prefix, "metrics", "enabled"))
    if at is not None:
        location = Location(path=at.path or in_chart(chart_rel, "values.yaml"), line=at.line)
    elif stand.anchor is not None and stand.anchor.path:
        location = Location(path=stand.anchor.path, line=stand.anchor.line)
    else:
        location = Location(path=in_chart(chart_rel, "Chart.yaml"))
    out.problems.append(ConfigProblem(
        location=location, fatal=True, program="Helm",
        message=f"Helm cannot render the chart: {stand.what} (Bitnami postgresql "
                f"{chart.shown}, {chart.source.label()}; {stand.read}) "
                "fails in templates/primary/statefulset.yaml: \"In order to enable metrics "
                "you need to specify a database (.Values.auth.database or "
                ".Values.global.postgresql.auth.database)\" (its `required`, charts "
                "11.0.0-15.5.11)"))
    return True


def _say_unread(unread: list[str], key: str, version: str, chart_rel: str,
                out: Rendered, stand: Stand | None = None) -> None:
    """The server's resources when neither the values nor a known chart version give
    them: said, so that PA111/PA301 not running is never read as a pass."""
    if unread:
        stand = stand or _dependency(key)
        keys = ", ".join(f"{key}.{c}" if stand.what.startswith("dependency") else c
                         for c in unread)
        out.notices.append(
            f"helm: {chart_rel}: {stand.what} (Bitnami postgresql {version or '?'}): "
            f"the CPU and memory of {keys} are unknown: "
            "the values set no resources, and what this chart version adds by default "
            "(resources, resourcesPreset) is known here only for charts 11.0.0-17.x; the "
            "CPU-knee (PA111) and memory (PA301) checks did not run for it "
            f"({stand.fix})")


# Charts whose only purpose is a PostgreSQL server (Bitnami postgresql, read from its
# values above, aside): not vendored, their server is in no budget. By name: these, and
# `postgres` or a name ending in `-postgres`/`-postgresql` (hasura/helm-charts' own
# `postgres` chart, file://../postgres), not a `postgres-operator` or `-exporter`.
_SERVER_CHARTS = frozenset({"postgresql-ha", "timescaledb-single", "timescaledb-multinode",
                            "timescaledb", "postgres"})
_SERVER_SUFFIX = re.compile(r"-postgres(?:ql)?$")


def _server_chart(name: str) -> bool:
    return name in _SERVER_CHARTS or bool(_SERVER_SUFFIX.search(name))
# Subcharts of another chart that run PostgreSQL, enabled from the parent's values
# (`dendrite.postgresql.enabled: true`, `gitea.postgresql-ha.enabled: true`).
_NESTED_SERVER_KEYS = ("postgresql", "postgresql-ha")


def _unread_server(name: str, key: str, section: Any, layers: list[ValuesLayer],
                   chart_rel: str, out: Rendered, own: str = "", why: str = "") -> None:
    """A dependency that is not vendored and deploys a PostgreSQL server (a chart of
    one by its name or by the name in its own Chart.yaml, `own`, or its own postgresql
    subchart enabled by these values): a PA901 warning at the line that says so.
    Without it, "no PostgreSQL server found" and exit 0 stood beside a server the
    repository deploys (khuedoan/homelab's dendrite)."""
    at: Source | None = None
    what = ""
    if _server_chart(name) or (own and _server_chart(own)):
        at = leaf_source(layers, (key, "enabled")) or leaf_source(layers, (key,))
        told = f"; its Chart.yaml names it {own!r}" if own and own != name else ""
        what = f"dependency {key!r} ({name}{told}) runs PostgreSQL"
    elif isinstance(section, dict):
        for sub in _NESTED_SERVER_KEYS:
            node = section.get(sub)
            if isinstance(node, dict) and node.get("enabled") is True:
                at = leaf_source(layers, (key, sub, "enabled"))
                what = f"the values enable {key}.{sub}, a PostgreSQL server of dependency " \
                       f"{key!r}"
                break
    if not what:
        return
    location = Location(path=at.path or in_chart(chart_rel, "Chart.yaml"), line=at.line) \
        if at is not None else Location(path=in_chart(chart_rel, "Chart.yaml"))
    out.problems.append(ConfigProblem(
        location=location,
        message=f"helm: {chart_rel}: {what}, which is not vendored in charts/"
                f"{' (' + why + ')' if why else ''}: that server and its clients are in no "
                "budget (run `helm dependency build`, or declare it: [[servers]] with its "
                "hosts and max_connections)"))


_LEGACY_KEYS = ("postgresqlUsername", "postgresqlPassword", "postgresqlDatabase",
                "postgresqlMaxConnections", "postgresqlPostgresPassword", "replication",
                "postgresqlConfiguration", "postgresqlExtendedConf", "existingSecret")


def _bitnami_postgresql_legacy(values: dict[str, Any], layers: list[ValuesLayer], prefix: Key,
                               release: str, name: str, version: str, chart_rel: str,
                               namespace: str | None, defaults: bool = False,
                               pg: tuple[int, Source] | None = None,
                               anchor: Source | None = None) -> list[K8sObject]:
    """bitnami/postgresql before 11.0 (values postgresqlUsername, postgresqlMaxConnections,
    replication.enabled/readReplicas): the primary StatefulSet, named like the chart's
    Service (<fullname>), with
    POSTGRESQL_MAX_CONNECTIONS as its templates set it, and the read replicas. Its image
    is the chart's appVersion's major (8.x-10.x: PostgreSQL 11) when values name none."""
    if not any(k in values for k in _LEGACY_KEYS) and not defaults:
        return []
    name = str(values.get("nameOverride") or name)  # common.names.fullname
    base = f"{release}-{name}" if name not in release else release
    fullname = str(values.get("fullnameOverride") or base)
    image_values = values.get("image") if isinstance(values.get("image"), dict) else {}
    tag = image_values.get("tag") or (f"{pg[0]}" if pg else "")
    repository = image_values.get("repository") or "bitnami/postgresql"
    image = f"{image_values.get('registry') or 'docker.io'}/{repository}" + \
        (f":{tag}" if tag else "")
    replication = get(values, "replication", "enabled") is True
    labels = {"app.kubernetes.io/name": "postgresql", "app.kubernetes.io/instance": release}
    built: list[K8sObject] = []
    # The primary is named like its Service (<fullname>), which clients name; the chart
    # calls the StatefulSet <fullname>-primary when replication is on.
    for role, sts_name, count, count_key in (
            ("primary", fullname, 1, None),
            ("read", f"{fullname}-read", get(values, "replication", "readReplicas"),
             ("replication", "readReplicas"))):
        if role == "read" and not replication:
            continue
        b = _Builder(layers, prefix)
        container: dict[str, Any] = {"name": "postgresql", "image": image}
        if values.get("postgresqlMaxConnections") is not None:
            container["env"] = [{"name": "POSTGRESQL_MAX_CONNECTIONS",
                                 "value": str(values["postgresqlMaxConnections"])}]
            b.src(("spec", "template", "spec", "containers", 0, "env", 0, "value"),
                  "postgresqlMaxConnections")
        replicas = int(count) if isinstance(count, int) else 1
        body = {"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": sts_name,
                             "labels": {**labels, "app.kubernetes.io/component": role}},
                "spec": {"replicas": replicas,
                         "template": {"spec": {"containers": [container]}}}}
        if count_key is not None:
            b.src(("spec", "replicas"), *count_key)
        _image_source(b, image_values, pg)
        first = _first_key(values, _LEGACY_KEYS)
        at = leaf_source(layers, (*prefix, first)) if first is not None else None
        built.append(b.build(body, at or anchor, chart_rel, namespace))
    return built


def _first_leaf(layers: list[ValuesLayer], prefix: Key) -> Source | None:
    """The first line that sets a value under `prefix` (the dependency's values), where
    an object built from its defaults is said to be, rather than the file's first line."""
    for layer in reversed(layers):
        n = len(layer.prefix)
        if prefix[:n] != layer.prefix or layer.display == "--set":
            continue
        lines = [line for key, line in layer.positions.items()
                 if key[:len(prefix) - n] == prefix[n:] and line]
        if lines:
            return Source(path=layer.display, line=min(lines), key=".".join(prefix))
    return None


def _image_source(b: _Builder, image_values: dict[str, Any],
                  pg: tuple[int, Source] | None) -> None:
    """The image's tag cited at its values line, else at the chart version it comes from."""
    field = ("spec", "template", "spec", "containers", 0, "image")
    if image_values.get("tag"):
        b.src(field, "image", "tag")
    elif pg is not None:
        b.sources[field_path(*field)] = pg[1]


def _first_key(values: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if k in values), None)


def _condition_false(values: dict[str, Any], condition: str) -> bool:
    """Helm's dependency condition: comma-separated value paths, the first that is a
    bool decides."""
    for path in (p.strip() for p in condition.split(",") if p.strip()):
        node: Any = values
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, bool):
            return not node
    return False


def _runs_postgres(obj: K8sObject) -> bool:
    from advisor.read.workloads import is_postgres_image

    containers = get(obj.body, "spec", "template", "spec", "containers")
    return any(isinstance(c, dict) and is_postgres_image(str(c.get("image") or ""))
               for c in (containers if isinstance(containers, list) else []))


_TEMPLATE_IMAGE = re.compile(r"^\s*(?:-\s+)?image:\s*[\"']?([^\s\"'{}#]+)[\"']?\s*(?:#.*)?$",
                             re.M)
# An operator's PostgreSQL cluster written in a template (zitadel-charts'
# examples/cloudnativepg/postgres-cluster: a CloudNativePG Cluster): apiVersion, then kind
_OPERATOR_SERVER = re.compile(
    r"^apiVersion:\s*[\"']?(postgresql\.cnpg\.io|acid\.zalan\.do|"
    r"postgres-operator\.crunchydata\.com|stackgres\.io)/\S+\s*\n(?:.*\n){0,3}?"
    r"kind:\s*[\"']?(Cluster|postgresql|PostgresCluster|SGCluster)\b", re.M)
_OPERATOR_GROUPS = frozenset({"postgresql.cnpg.io", "acid.zalan.do",
                              "postgres-operator.crunchydata.com", "stackgres.io"})
_OPERATOR_KINDS = frozenset({"Cluster", "postgresql", "PostgresCluster", "SGCluster"})
_MAX_TEMPLATES = 400  # a chart's templates/ (harbor: 90 files); past this, not read


def _server_images_unread(root: Root, chart_path: Path, values: dict[str, Any],
                          layers: list[ValuesLayer], conditions: dict[str, str]
                          ) -> list[tuple[str, Source]]:
    """The PostgreSQL server images (advisor.read.workloads.is_postgres_image) a chart
    read from values only names: an image repository of its values (harbor's
    database.internal.image.repository goharbor/harbor-db, supabase's image.db.repository
    supabase/postgres), outside a mapping whose `enabled` is false and a dependency its
    condition leaves out, and an image written as such in a template (windmill's
    templates/postgresql-demo-app.yaml `image: postgres:18`). Without the engine these
    servers were not read, and the check said "no findings (no PostgreSQL server found)",
    exit 0, for charts that deploy one (audit 47 D2). Each with where it is written."""
    from advisor.read.workloads import is_postgres_image

    found: list[tuple[str, Source]] = []

    def walk(keys: Key, node: Any) -> None:
        if isinstance(node, list) and len(keys) <= 12:
            for i, item in enumerate(node[:200]):
                walk((*keys, i), item)
            return
        if not isinstance(node, dict) or node.get("enabled") is False or len(keys) > 12:
            return
        if len(keys) == 1 and _condition_false(values, conditions.get(str(keys[0]), "")):
            return
        # an operator's cluster written in the values, which a template writes out (8gears'
        # n8n examples/values_full.yaml: a CloudNativePG Cluster in extraManifests)
        group = str(node.get("apiVersion") or "").split("/", 1)[0]
        if group in _OPERATOR_GROUPS and node.get("kind") in _OPERATOR_KINDS:
            found.append((f"resource {node['kind']} ({group})", leaf_source(
                layers, (*keys, "kind")) or Source(path=in_chart(
                    root.rel(chart_path), "values.yaml"), key=".".join(map(str, keys)))))
            return
        for k, v in node.items():
            if isinstance(v, dict | list):
                walk((*keys, k), v)
            elif isinstance(v, str) and k in ("repository", "image") and is_postgres_image(v):
                found.append((f"image {v}", leaf_source(layers, (*keys, k)) or Source(
                    path=in_chart(root.rel(chart_path), "values.yaml"),
                    key=".".join(map(str, (*keys, k))))))

    walk((), values)
    templates = chart_path / "templates"
    # (Helm test hooks, templates/tests/, are no part of the release's workloads)
    files = sorted(p for p in templates.rglob("*") if p.suffix in (".yaml", ".yml", ".tpl")
                   and p.is_file() and not {"test", "tests"} & set(p.relative_to(
                       templates).parts[:-1]))[:_MAX_TEMPLATES] if templates.is_dir() else []
    for path in files:
        try:
            text = root.read_text(path)
        except InputError:
            continue
        for m in _OPERATOR_SERVER.finditer(text):
            found.append((f"resource {m.group(2)} ({m.group(1)})", Source(
                path=root.rel(path), line=text.count("\n", 0, m.start()) + 1, key="kind")))
        for m in _TEMPLATE_IMAGE.finditer(text):
            if is_postgres_image(m.group(1)):
                found.append((f"image {m.group(1)}", Source(path=root.rel(path),
                                                 line=text.count("\n", 0, m.start()) + 1,
                                                 key="image")))
    return found


def _templates_server_problem(chart_rel: str, reason: str, named: list[tuple[str, Source]],
                              servers: list[K8sObject]) -> ConfigProblem:
    """A chart read from values only that deploys a PostgreSQL server (built here from its
    Bitnami postgresql values) or names a server image in its values or templates: a
    PA901 error (fatal: the templates are a file not read, so every budget is a floor)."""
    if servers:
        at = servers[0].source()
        what = (f"its PostgreSQL server {servers[0].name} was built from the values only, "
                "and its templates, which hold its clients, were not evaluated: who "
                "connects to that server is not known")
    else:
        at = named[0][1]
        images = list(dict.fromkeys(img for img, _ in named))
        where = ", ".join(f"{src.path}{':' + str(src.line) if src.line else ''}"
                          for _, src in named[:4]) + (" and more" if len(named) > 4 else "")
        what = (f"it names PostgreSQL server {', '.join(images[:4])} ({where}) and its "
                "templates were not evaluated: "
                "whether that server runs, its max_connections and who connects to it are "
                "not known")
    return ConfigProblem(
        location=Location(path=at.path or in_chart(chart_rel, "Chart.yaml"), line=at.line),
        message=f"helm: {chart_rel} was NOT rendered ({reason}); {what}, so every budget "
                "is a floor (install the Helm engine, helm-python-sdk, to render the chart, "
                "or declare the server: [[servers]] with its hosts and max_connections)",
        fatal=True, program="Helm")


def _dependency_conditions(root: Root, chart_path: Path) -> dict[str, str]:
    """Chart.yaml's dependencies: their values key (alias, else name) -> condition."""
    from advisor.read.sources.k8s import load_yaml_stream

    try:
        text = root.read_text(chart_path / "Chart.yaml")
    except InputError:
        return {}
    docs, _ = load_yaml_stream(text, "Chart.yaml")
    deps = get(docs[0][0], "dependencies") if docs else None
    out: dict[str, str] = {}
    for dep in deps if isinstance(deps, list) else []:
        key = get(dep, "alias") or get(dep, "name")
        if isinstance(key, str) and isinstance(get(dep, "condition"), str):
            out[key] = get(dep, "condition")
    return out


def _declared_dependencies(root: Root, chart_path: Path) -> list[str]:
    from advisor.read.sources.k8s import load_yaml_stream

    try:
        text = root.read_text(chart_path / "Chart.yaml")
    except InputError:
        return []
    docs, _ = load_yaml_stream(text, "Chart.yaml")
    if not docs:
        return []
    deps = get(docs[0][0], "dependencies") or []
    names = []
    for dep in deps if isinstance(deps, list) else []:
        name = get(dep, "alias") or get(dep, "name")
        if isinstance(name, str):
            names.append(name)
    return names


def _fullname(values: dict[str, Any], chart_name: str, release: str) -> str:
    """The scaffold's `<chart>.fullname` helper."""
    override = values.get("fullnameOverride")
    if isinstance(override, str) and override:
        return override[:63].rstrip("-")
    name = values.get("nameOverride") or chart_name
    if str(name) in release:
        return release[:63].rstrip("-")
    return f"{release}-{name}"[:63].rstrip("-")


def _synthetic_workload(values: dict[str, Any], layers: list[ValuesLayer], prefix: Key,
                        fullname: str, chart_name: str, chart_rel: str,
                        namespace: str | None) -> list[K8sObject]:
    if "replicaCount" not in values and "autoscaling" not in values:
        return []
    b = _Builder(layers, prefix)
    container: dict[str, Any] = {"name": chart_name}
    cpath: Key = ("spec", "template", "spec", "containers", 0)
    image = values.get("image")
    if isinstance(image, dict) and image.get("repository"):
        tag = image.get("tag") or ""
        container["image"] = f"{image['repository']}:{tag}" if tag else str(image["repository"])
        b.src((*cpath, "image"), "image", "repository")
    env = _env_list(values.get("env"))
    if env:
        container["env"] = env
        for i, item in enumerate(env):
            raw = values.get("env")
            b.src((*cpath, "env", i, "value"), "env", *((i, "value") if isinstance(raw, list)
                                                        else (item["name"],)))
    limits = get(values, "resources", "limits")
    if isinstance(limits, dict) and limits:
        container["resources"] = {"limits": {k: limits[k] for k in limits}}
        for k in limits:
            b.src((*cpath, "resources", "limits", k), "resources", "limits", k)
    labels = {"app.kubernetes.io/name": chart_name, "app.kubernetes.io/instance": fullname}
    autoscaling = values.get("autoscaling") if isinstance(values.get("autoscaling"), dict) else {}
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": fullname, "labels": labels},
        "spec": {"selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [container]}}}}
    if not autoscaling.get("enabled"):
        deployment["spec"]["replicas"] = int(values.get("replicaCount", 1) or 1)
        b.src(("spec", "replicas"), "replicaCount")
    anchor = leaf_source(layers, (*prefix, "replicaCount")) or leaf_source(
        layers, (*prefix, "autoscaling", "enabled"))
    built = [b.build(deployment, anchor, chart_rel, namespace)]
    if autoscaling.get("enabled"):
        h = _Builder(layers, prefix)
        hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": fullname},
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                           "name": fullname},
                        "minReplicas": autoscaling.get("minReplicas", 1),
                        "maxReplicas": autoscaling.get("maxReplicas", 100)}}
        h.src(("spec", "minReplicas"), "autoscaling", "minReplicas")
        h.src(("spec", "maxReplicas"), "autoscaling", "maxReplicas")
        built.append(h.build(hpa, leaf_source(layers, (*prefix, "autoscaling", "maxReplicas"))
                             or anchor, chart_rel, namespace))
    return built


def _env_list(raw: Any) -> list[dict[str, str]]:
    """`env:` as a list of {name, value} or as a name -> value map."""
    out: list[dict[str, str]] = []
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict) and "name" in item and "value" in item:
                out.append({"name": str(item["name"]), "value": str(item["value"])})
    elif isinstance(raw, dict):
        for k, v in raw.items():
            if not isinstance(v, dict | list):
                out.append({"name": str(k), "value": str(v)})
    return out


def _resources(body: dict[str, Any], b: _Builder, section: dict[str, Any],
               component: str, chart: ChartVersion | None) -> bool:
    """<component>.resources as the postgresql container's resources (limits and requests:
    the server's cores and memory), each cited at its values line, with what the chart
    version adds when the values leave them (helm_bitnami_defaults: the default map of
    11.0.0-14.0.x, the resourcesPreset from 14.1.0), cited as its named default. The
    chart writes the whole map when it is not empty (bitnami/charts postgresql 14.x
    templates/primary/statefulset.yaml and read/statefulset.yaml: `{{- if
    .Values.primary.resources }} resources: {{- toYaml .Values.primary.resources }}`).
    False when the version is not known and the values set none: the resources are
    unknown (said by the caller)."""
    resources = section.get("resources")
    resources = resources if isinstance(resources, dict) else {}
    kept = {part: {k: v for k, v in limits.items() if isinstance(v, str | int | float)}
            for part in ("limits", "requests")
            if isinstance(limits := resources.get(part), dict)}
    kept = {part: items for part, items in kept.items() if items}
    cpath = ("spec", "template", "spec", "containers", 0, "resources")
    for part, items in kept.items():
        for k in items:
            b.src((*cpath, part, k), component, "resources", part, k)
    defaults = default_resources(chart, component, section) if chart is not None else None
    for part, items in (defaults.items if defaults is not None else {}).items():
        for k, v in items.items():
            if k in kept.get(part, {}):
                continue
            kept.setdefault(part, {})[k] = v
            b.sources[field_path(*cpath, part, k)] = Source.default_of(
                defaults.said, key=f"{component}.resources.{part}.{k}")
    if kept:
        body["spec"]["template"]["spec"]["containers"][0]["resources"] = kept
    return chart is not None or bool(resources)


def _metrics(values: dict[str, Any], glob: dict[str, Any], b: _Builder,
             chart: ChartVersion | None) -> dict[str, Any] | None:
    """The `metrics` container the chart adds beside the server with metrics.enabled
    (bitnami/charts postgresql 13.4.4 templates/primary/statefulset.yaml:489-525,
    read/statefulset.yaml:404; 17.1.0 primary/statefulset.yaml:517-559): the
    postgres-exporter image of the chart version (its metrics.image.tag) scraping
    DATA_SOURCE_URI 127.0.0.1:<port>/<database>, so that it is counted as the render's
    is (advisor.link.sidecars, advisor.read.apps.pgexporter)."""
    if get(values, "metrics", "enabled") is not True:
        return None
    image_values = get(values, "metrics", "image")
    image_values = image_values if isinstance(image_values, dict) else {}
    tag = image_values.get("tag") or (exporter_tag(chart) if chart is not None else "")
    image = f"{image_values.get('registry') or 'docker.io'}/" \
            f"{image_values.get('repository') or 'bitnami/postgres-exporter'}" + \
            (f":{tag}" if tag else "")
    cpath = ("spec", "template", "spec", "containers", 1)
    if image_values.get("tag"):
        b.src((*cpath, "image"), "metrics", "image", "tag")
    elif chart is not None:
        b.sources[field_path(*cpath, "image")] = Source.default_of(
            f"Bitnami postgresql chart {chart.shown} values.yaml metrics.image.tag "
            f"{tag}.x (bitnami/postgres-exporter)", key="metrics.image.tag")
    database = _database(values, glob) or "postgres"
    port = get(values, "primary", "service", "ports", "postgresql") or 5432
    user = get(values, "auth", "username") or "postgres"
    b.src((*cpath, "env", 0, "value"), "metrics", "enabled")
    return {"name": "metrics", "image": image,
            "env": [{"name": "DATA_SOURCE_URI",
                     "value": f"127.0.0.1:{port}/{database}?sslmode=disable"},
                    {"name": "DATA_SOURCE_USER", "value": str(user)}]}


def _database(values: dict[str, Any], glob: dict[str, Any]) -> str:
    """postgresql.v1.database: global.postgresql.auth.database, else auth.database."""
    got = get(glob, "postgresql", "auth", "database") or get(values, "auth", "database")
    return str(got) if got else ""


def _bitnami_postgresql(values: dict[str, Any], layers: list[ValuesLayer], prefix: Key,
                        release: str, name: str, chart_rel: str, namespace: str | None,
                        defaults: bool = False, pg: tuple[int, Source] | None = None,
                        chart: ChartVersion | None = None, glob: dict[str, Any] | None = None,
                        unread: list[str] | None = None, anchor: Source | None = None
                        ) -> list[K8sObject]:
    """What bitnami/postgresql renders that matters for the budget: the primary
    StatefulSet (and read replicas with architecture=replication) and the ConfigMaps
    holding primary.configuration / primary.extendedConfiguration. Names follow the
    chart's `postgresql.v1.primary.fullname` (<release>-postgresql, with -read for
    replicas); see advisor.read.sources.operators.bitnami for the field paths and their source.
    `chart`: the chart version Helm installs, for what it adds by default (resources, the
    metrics sidecar's exporter); `unread` gets the components whose resources are unknown."""
    if not any(k in values for k in ("primary", "architecture", "readReplicas", "auth")) \
            and not (defaults and not any(k in values for k in _LEGACY_KEYS)):
        return []
    name = str(values.get("nameOverride") or name)  # common.names.fullname
    base = f"{release}-{name}" if name not in release else release
    fullname = values.get("fullnameOverride") or base
    built: list[K8sObject] = []
    labels = {"app.kubernetes.io/name": "postgresql", "app.kubernetes.io/instance": release,
              "helm.sh/chart": "postgresql"}

    def statefulset(component: str, sts_name: str, replicas_key: Key, config_keys: list[str]
                    ) -> None:
        b = _Builder(layers, prefix)
        section = get(values, component) if isinstance(get(values, component), dict) else {}
        role = "read" if component == "readReplicas" else component
        # templates/primary/statefulset.yaml `replicas: 1` (11.0.0 .. 17.1.0: no value
        # sizes the primary); read/statefulset.yaml `{{ .Values.readReplicas.replicaCount }}`
        replicas = 1 if component == "primary" else section.get("replicaCount", 1)
        mounts: list[dict[str, Any]] = []
        # templates/primary/statefulset.yaml: primary.configuration at
        # <persistence.mountPath>/conf, the extended configuration at its conf/conf.d/,
        # and POSTGRESQL_VOLUME_DIR = persistence.mountPath (where the image looks).
        volume_dir = get(section, "persistence", "mountPath")
        volume_dir = volume_dir if isinstance(volume_dir, str) and volume_dir \
            else "/bitnami/postgresql"
        at = {"configuration": f"{volume_dir}/conf",
              "extended-configuration": f"{volume_dir}/conf/conf.d/"}
        body: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": sts_name,
                         "labels": {**labels, "app.kubernetes.io/component": role}},
            "spec": {"replicas": int(replicas),
                     "template": {"spec": {"containers": [{
                         "name": "postgresql", "image": image,
                         "env": [{"name": "POSTGRESQL_VOLUME_DIR", "value": volume_dir}]}],
                         "volumes": mounts}}}}
        b.sources["spec.replicas"] = Source.default_of(
            "Bitnami postgresql templates/primary/statefulset.yaml `replicas: 1`"
            if component == "primary" else
            "Bitnami postgresql values.yaml readReplicas.replicaCount 1", key="replicas")
        if component != "primary":
            b.src(("spec", "replicas"), *replicas_key)
        _image_source(b, image_values, pg)
        if not _resources(body, b, section, component, chart) and unread is not None:
            unread.append(component)
        metrics = _metrics(values, glob or {}, b, chart)
        if metrics is not None:
            body["spec"]["template"]["spec"]["containers"].append(metrics)
        placed = leaf_source(layers, (*prefix, *replicas_key)) or leaf_source(
            layers, (*prefix, "architecture")) or _first_leaf(layers, prefix) or anchor
        configmaps: list[K8sObject] = []
        for key, cm_suffix, data_key in (("configuration", "configuration", "postgresql.conf"),
                                         ("extendedConfiguration", "extended-configuration",
                                          "override.conf")):
            text = section.get(key)
            if key not in config_keys or not isinstance(text, str) or not text.strip():
                continue
            c = _Builder(layers, prefix)
            cm_name = f"{sts_name}-{cm_suffix}"
            mounts.append({"name": cm_suffix, "configMap": {"name": cm_name}})
            cm = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": cm_name,
                               "labels": {**labels, "app.kubernetes.io/component": component}},
                  "data": {data_key: text}}
            c.src(("data", data_key), component, key)
            start = block_start(layers, (*prefix, component, key))
            if start is not None:
                shown, offset = start
                for k in range(len(text.splitlines())):
                    c.sources[f"data.{data_key}#{k + 1}"] = Source(
                        path=shown, line=offset + k + 1,
                        key=f"values: {'.'.join(map(str, (*prefix, component, key)))}")
            configmaps.append(c.build(cm, leaf_source(layers, (*prefix, component, key)),
                                      chart_rel, namespace))
        args = section.get("args")
        if isinstance(args, list) and all(isinstance(a, str) for a in args):
            # primary.args: the command line a chart may give another image (goauthentik's
            # `-c config_file=...` for library/postgres)
            body["spec"]["template"]["spec"]["containers"][0]["args"] = list(args)
        if not mounts:
            del body["spec"]["template"]["spec"]["volumes"]
        else:
            body["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
                {"name": m["name"], "mountPath": at[m["name"]]} for m in mounts]
        built.append(b.build(body, placed, chart_rel, namespace))
        built.extend(configmaps)

    # values image.registry/repository/tag (the chart's defaults are not known here)
    image_values = values.get("image") if isinstance(values.get("image"), dict) else {}
    image = (f"{image_values.get('registry') or 'docker.io'}/"
             f"{image_values.get('repository') or 'bitnami/postgresql'}")
    if image_values.get("tag"):
        image += f":{image_values['tag']}"
    elif pg is not None:  # the chart version's appVersion major (helm_dep_versions)
        image += f":{pg[0]}"

    # templates/_helpers.tpl postgresql.v1.primary.fullname / readReplica.fullname
    replication = values.get("architecture") == "replication"
    primary_name = get(values, "primary", "name") or "primary"
    read_name = get(values, "readReplicas", "name") or "read"
    statefulset("primary", f"{fullname}-{primary_name}" if replication else str(fullname),
                ("primary", "replicaCount"), ["configuration", "extendedConfiguration"])
    if replication:
        statefulset("readReplicas", f"{fullname}-{read_name}", ("readReplicas", "replicaCount"),
                    ["extendedConfiguration"])
    return built
