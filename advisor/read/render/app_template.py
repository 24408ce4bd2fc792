"""bjw-s app-template releases (Flux HelmRelease) rendered from their values: the chart
that most home-ops repositories deploy every self-hosted app with is a Helm or OCI
repository's, not the repository's, so it is not rendered by Helm here; its Deployments
and StatefulSets are a plain function of `controllers.<id>` in the values, which the
HelmRelease holds. Each is made as the chart makes it, each field traced to its values
line, so that the workload readers (image knowledge, env, Secrets, surge) read it as any
Deployment.

What the chart does, read in bjw-s-labs/helm-charts (library `common` 3.0.0 to 4.1.1,
the dependency of app-template 3.x and 4.x; every tag checked for the first three):
- a controller's `type` defaults to deployment (common 3.x
  templates/lib/controller/_valuesToObject.tpl `set $objectValues "type" "deployment"`;
  4.x lib/controller/_getByIdentifier.tpl);
- a Deployment's `replicas` is 1 when the controller has no `replicas` key, none when it
  is null (templates/classes/_deployment.tpl `{{- else }} replicas: 1`), and its strategy
  `Recreate` unless set (lib/deployment/_valuesToObject.tpl `default "Recreate"`);
  `rollingUpdate` (surge/unavailable) is written only with RollingUpdate and a value;
- the name is the release's (app-template's templates/common.yaml sets
  global.nameOverride to the release name, so lib/chart/_names.tpl fullname is the
  release name), with `-<id>` when more than one controller is enabled and the id is
  not that name (3.x lib/controller/_valuesToObject.tpl; 4.x
  lib/common/_determineResourceNameFromValues.tpl);
- a container's image is `repository:tag`, nothing without both
  (lib/container/fields/_image.tpl); env is a list as written, or a map whose entries
  become `{name, value}` (tpl'd) or `{name, valueFrom}` (a map with `valueFrom`, or the
  map itself: `secretKeyRef` at the top) (lib/container/fields/_env.tpl); envFrom takes
  `secret: name`, `configMap: name`, `secretRef`/`configMapRef` (fields/_envFrom.tpl).

Other chart versions (app-template 5.x), controller types other than deployment and
statefulset, and values split over several sources are not rendered: the release stays
a client of unknown size (advisor.link.releases).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from advisor.model import Source
from advisor.read.releases import Release, Values
from advisor.read.sources.k8s import K8sObject

CHART = "app-template"
# The major versions whose library was read (common 3.0.0 - 4.1.1)
VERIFIED_MAJORS = frozenset({3, 4})
_TYPES = {"deployment": ("Deployment", "apps/v1"), "statefulset": ("StatefulSet", "apps/v1")}
_VERSION = re.compile(r"v?(\d+)\.\d+\.\d+")


def _bjw_s(url: object) -> bool:
    """A bjw-s chart source: https://bjw-s(-labs).github.io/helm-charts,
    oci://ghcr.io/bjw-s(-labs)/helm (another repository's chart named app-template is
    not known to be this one)."""
    return isinstance(url, str) and "bjw-s" in url.lower()


def _source(objects: list[K8sObject], kind: str, name: object, ns: object) -> dict | None:
    for obj in objects:
        if obj.kind == kind and obj.name == name and obj.namespace == ns \
                and isinstance(obj.body.get("spec"), dict):
            return obj.body["spec"]
    return None


def chart_version(release: Release, objects: list[K8sObject]) -> str | None:
    """The app-template version a Flux HelmRelease deploys: chart.spec.version with
    chart app-template from a HelmRepository of bjw-s, or the tag of the OCIRepository
    its chartRef names whose url is bjw-s's .../app-template; None otherwise (another
    chart, a repository not known to be bjw-s's, a version not written)."""
    if release.kind != "HelmRelease":
        return None
    spec = release.obj.body.get("spec") if isinstance(release.obj.body, dict) else None
    if not isinstance(spec, dict):
        return None
    ref = spec.get("chartRef")
    if isinstance(ref, dict):
        if ref.get("kind") != "OCIRepository":
            return None
        oci = _source(objects, "OCIRepository", ref.get("name"),
                      ref.get("namespace") or release.obj.namespace)
        if oci is None:
            return None
        url = str(oci.get("url") or "").rstrip("/")
        tag = oci["ref"].get("tag") if isinstance(oci.get("ref"), dict) else None
        return str(tag) if url.endswith("/" + CHART) and _bjw_s(url) and tag else None
    chart = spec.get("chart", {}).get("spec") if isinstance(spec.get("chart"), dict) else None
    if not isinstance(chart, dict) or chart.get("chart") != CHART:
        return None
    ref = chart.get("sourceRef") if isinstance(chart.get("sourceRef"), dict) else {}
    repo = _source(objects, str(ref.get("kind") or "HelmRepository"), ref.get("name"),
                   ref.get("namespace") or release.obj.namespace)
    version = chart.get("version")
    return str(version) if version and repo is not None and _bjw_s(repo.get("url")) \
        else None


def renders(version: str | None) -> bool:
    """Whether this app-template version is one whose library was read."""
    found = _VERSION.fullmatch(version.strip()) if version else None
    return found is not None and int(found.group(1)) in VERIFIED_MAJORS


def app_template_objects(release: Release, version: str) -> list[K8sObject] | None:
    """The Deployments and StatefulSets the release's values make; None when they are
    not all of a kind rendered here (the release is then left as not rendered)."""
    trees = [v for v in release.values if isinstance(v.node, dict)
             and isinstance(v.node.get("controllers"), dict)]
    if len(trees) != 1 or len(release.values) != 1:
        return None
    values = trees[0]
    controllers = {str(k): c for k, c in values.node["controllers"].items()
                   if isinstance(c, dict) and c.get("enabled", True) is not False}
    out: list[K8sObject] = []
    for ident, c in controllers.items():
        kind_api = _TYPES.get(str(c.get("type") or "deployment").lower())
        if kind_api is None:
            return None
        obj = _controller(release, values, version, ident, c, len(controllers), *kind_api)
        if obj is None:
            return None
        out.append(obj)
    return out


def _name(release: Release, values: Values, ident: str, c: dict, count: int) -> str:
    name = release.name
    force = c.get("forceRename")
    if isinstance(force, str) and force:
        return values.name_of(force).lower()
    override = c.get("nameOverride")  # 3.x
    if isinstance(override, str) and override:
        override = values.name_of(override)
        return name if override == name else f"{name}-{override}"
    if isinstance(c.get("prefix"), str) and c["prefix"]:
        prefix = values.name_of(c["prefix"])
        name = name if prefix == name else f"{prefix}-{name}"
    if count > 1 and ident != name and not name.endswith(f"-{ident}"):
        name = f"{name}-{ident}"
    if isinstance(c.get("suffix"), str) and c["suffix"]:
        suffix = values.name_of(c["suffix"])
        name = name if name.endswith(f"-{suffix}") else f"{name}-{suffix}"
    return name.lower()


def _controller(release: Release, values: Values, version: str, ident: str, c: dict,
                count: int, kind: str, api: str) -> K8sObject | None:
    at = ("controllers", ident)
    sources: dict[str, Source] = {}
    chart = f"app-template {version}"

    def traced(field: str, keys: tuple, key: str) -> None:
        sources[field] = values.source((*at, *keys), key)

    spec: dict[str, Any] = {}
    if "replicas" in c:
        if c["replicas"] is not None:
            spec["replicas"] = c["replicas"]
            traced("spec.replicas", ("replicas",), "replicas")
    else:
        spec["replicas"] = 1
        sources["spec.replicas"] = Source.default_of(
            f"{chart}: a controller without replicas has 1 (common "
            "classes/_deployment.tpl)", key="spec.replicas")
    if kind == "Deployment":
        strategy = c.get("strategy") or "Recreate"
        spec["strategy"] = {"type": strategy}
        if "strategy" in c:
            traced("spec.strategy.type", ("strategy",), "strategy")
        else:
            sources["spec.strategy.type"] = Source.default_of(
                f"{chart}: strategy Recreate unless set (common "
                "lib/deployment/_valuesToObject.tpl)", key="spec.strategy.type")
        rolling = c.get("rollingUpdate")
        if strategy == "RollingUpdate" and isinstance(rolling, dict):
            made = {}
            for field, names in (("maxSurge", ("maxSurge", "surge")),
                                 ("maxUnavailable", ("maxUnavailable", "unavailable"))):
                for n in names:
                    if rolling.get(n) is not None:
                        made[field] = rolling[n]
                        traced(f"spec.strategy.rollingUpdate.{field}", ("rollingUpdate", n), n)
                        break
            if made:
                spec["strategy"]["rollingUpdate"] = made
    pod: dict[str, Any] = {}
    for part in ("containers", "initContainers"):
        node = c.get(part)
        if not isinstance(node, dict):
            continue
        made_list = []
        for cname, container in node.items():
            if not isinstance(container, dict) or container.get("enabled", True) is False:
                continue
            i = len(made_list)
            sources[f"spec.template.spec.{part}.{i}"] = values.source(
                (*at, part, str(cname)), str(cname))
            made_list.append(_container(values, (*at, part, str(cname)), str(cname),
                                        container, lambda field, keys, key, i=i, part=part:
                                        sources.__setitem__(
                                            f"spec.template.spec.{part}.{i}.{field}",
                                            values.source(keys, key))))
        if made_list:
            pod[part] = made_list
    if not pod.get("containers"):
        return None
    spec["template"] = {"spec": pod}
    body = {"apiVersion": api, "kind": kind,
            "metadata": {"name": _name(release, values, ident, c, count),
                         "namespace": release.namespace},
            "spec": spec}
    return K8sObject(kind=kind, api_version=api, name=body["metadata"]["name"],
                     namespace=release.namespace, body=body, path=release.obj.path,
                     line=release.obj.location(*values.at, *at).line,
                     origin=f"{chart}:{release.id}", value_sources=sources)


def _container(values: Values, keys: tuple, name: str, c: dict,
               trace: Callable[[str, tuple, str], None]) -> dict:
    out: dict[str, Any] = {"name": name}
    image = c.get("image")
    if isinstance(image, dict) and image.get("repository") and image.get("tag"):
        out["image"] = f"{image['repository']}:{image['tag']}"
        trace("image", (*keys, "image", "tag"), "image")
    for part in ("command", "args"):
        words = c.get(part)
        if isinstance(words, str):
            words = [words]
        if isinstance(words, list):
            out[part] = [str(w) for w in words]
            for j in range(len(words)):
                trace(f"{part}.{j}", (*keys, part, j), f"{part}[{j}]")
    env = c.get("env")
    made_env: list[dict] = []
    if isinstance(env, list):
        for j, item in enumerate(env):
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                made_env.append(_env_item(values, item["name"], item))
                trace(f"env.{j}.{'value' if 'value' in item else 'name'}",
                      (*keys, "env", j, "value" if "value" in item else "name"),
                      item["name"])
    elif isinstance(env, dict):
        for k, v in env.items():
            j = len(made_env)
            made_env.append(_env_item(values, str(k), v))
            trace(f"env.{j}.{'value' if 'value' in made_env[-1] else 'name'}",
                  (*keys, "env", str(k)), str(k))
    if made_env:
        out["env"] = made_env
    env_from = c.get("envFrom")
    if isinstance(env_from, list):
        made_from = []
        for item in env_from:
            if not isinstance(item, dict):
                continue
            ref: dict[str, Any] = {}
            for short, long in (("secret", "secretRef"), ("configMap", "configMapRef")):
                if isinstance(item.get(short), str):
                    ref[long] = {"name": values.name_of(item[short])}
                elif isinstance(item.get(long), dict) and item[long].get("name"):
                    ref[long] = {"name": values.name_of(str(item[long]["name"]))}
            if ref:
                if item.get("prefix"):
                    ref["prefix"] = str(item["prefix"])
                trace(f"envFrom.{len(made_from)}", (*keys, "envFrom", len(made_from)),
                      "envFrom")
                made_from.append(ref)
        if made_from:
            out["envFrom"] = made_from
    for part in ("resources",):
        if isinstance(c.get(part), dict):
            out[part] = c[part]
    return out


def _env_item(values: Values, name: str, v: Any) -> dict:
    """One env entry as fields/_env.tpl writes it: a scalar is a tpl'd value; a map with
    `value` or `valueFrom` is merged; any other map is the valueFrom itself."""
    if isinstance(v, dict):
        if "value" in v:
            value = v["value"]
            return {"name": name, "value": values.name_of(str(value))
                    if isinstance(value, str) else _scalar(value)}
        holder = v.get("valueFrom") if isinstance(v.get("valueFrom"), dict) else \
            {k: x for k, x in v.items() if k != "dependsOn"}
        return {"name": name, "valueFrom": _tpl_refs(values, holder)}
    return {"name": name, "value": values.name_of(v) if isinstance(v, str) else _scalar(v)}


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _tpl_refs(values: Values, holder: dict) -> dict:
    out: dict[str, Any] = {}
    for k, ref in holder.items():
        if isinstance(ref, dict):
            out[k] = {rk: values.name_of(rv) if isinstance(rv, str) else rv
                      for rk, rv in ref.items()}
        else:
            out[k] = ref
    return out
