"""bjw-s app-template releases (Flux HelmRelease) rendered from their values: the chart
that most home-ops repositories deploy every self-hosted app with is a Helm or OCI
repository's, not the repository's, so it is not rendered by Helm here; its controllers
are a plain function of `controllers.<id>` in the values, which the HelmRelease holds.
Each is made as the chart makes it, each field traced to its values line or to the
chart's default, so that the workload readers (image knowledge, env, Secrets, mounted
files, surge, autoscalers) read it as any Deployment, StatefulSet, DaemonSet, CronJob or
Job.

What the chart does, read in bjw-s-labs/helm-charts, library `common` (the dependency
of app-template of the same major): every tag 3.0.0-4.1.1 (the fetched repository),
4.1.2-4.6.2 and the 5.0.0 branch (the fork horjulf/bjw-s-helm-charts, which holds that
history: git log 72cbacc..4b012e4), and 5.x files of the index (5.0.0's Chart.yaml
changelog at commit 413deefb; 5.3.0 classes/ and render/ templates at 002305d5, d45792a7,
b0934b05, 370d6c85). Lines are common-4.1.1's unless said:
- the type: `deployment` when empty (3.x lib/controller/_valuesToObject.tpl:10-12,
  4.x lib/controller/_getByIdentifier.tpl:13-15); deployment, daemonset, statefulset,
  cronjob and job are the only ones (lib/controller/_validate.tpl:8, compared exactly;
  render/_controllers.tpl:16-40), and a controller needs an enabled container
  (_validate.tpl:15-17): otherwise the chart fails and the release is left unrendered;
- Deployment (classes/_deployment.tpl:38-58): `replicas` 1 when the controller has no
  `replicas` key, none when it is null; strategy `Recreate` unless set
  (lib/deployment/_valuesToObject.tpl:9); `rollingUpdate` only with RollingUpdate, from
  `surge`/`unavailable` when truthy (`with`) up to 5.0.0, from `maxSurge` or else
  `surge` (hasKey) in 5.3.0 (002305d5 classes/_deployment.tpl); 5.0-5.2 were not read
  for this, so a release of those naming maxSurge/maxUnavailable is left unrendered;
- StatefulSet (classes/_statefulset.tpl:38): `replicas: {{ .replicas }}`, empty (so
  Kubernetes' 1) without the key; DaemonSet (classes/_daemonset.tpl): no replicas, one
  pod per node, counted as every DaemonSet is (advisor.read.workloads.base_replicas);
- CronJob (classes/_cronjob.tpl:41-42,58-60): `suspend` false and `concurrencyPolicy`
  Forbid unless `cronjob.suspend`/`cronjob.concurrencyPolicy` say otherwise, the Job's
  `parallelism` only from a truthy `cronjob.parallelism` (Kubernetes' 1 otherwise);
  Job (classes/_job.tpl:39,46-48): `suspend` and `parallelism` from `job.*` the same way;
- HorizontalPodAutoscaler (5.x; 5.0.0 changelog "Allow creating HorizontalPodAutoscaler
  objects for controllers"; render/_controllers.tpl at 370d6c85): with
  `horizontalPodAutoscaler` set on a deployment or statefulset controller, an HPA named
  as the controller scales it up to its required `maxReplicas`;
- the name is the release's (app-template's templates/common.yaml sets
  global.nameOverride to the release name, so lib/chart/_names.tpl fullname is the
  release name), with `-<id>` when more than one controller is enabled: 3.x when the
  id is not that name (lib/controller/_valuesToObject.tpl, `nameOverride`); 4.0.x when
  the name does not end in `-<id>`; 4.1.0+ when neither, or always with
  global.alwaysAppendIdentifierToResourceName (lib/common/
  _determineResourceNameFromValues.tpl, with forceRename/prefix/suffix);
- a container's image (lib/container/fields/_image.tpl:12-13) is `repository:tag`,
  nothing without both, before 4.4.0; from 4.4.0 (lib/common/
  _imageSpecificationToImage.tpl) a string as written, or `repository`, `:tag` and
  `@digest` each when given; env is a list as written, or a map whose entries become
  `{name, value}` (tpl'd) or `{name, valueFrom}` (a map with `valueFrom`, or the map
  itself: `secretKeyRef` at the top) (lib/container/fields/_env.tpl); envFrom takes
  `secret: name`, `configMap: name`, `secretRef`/`configMapRef` (fields/_envFrom.tpl);
- `persistence` items of type configMap or secret with a `name` (lib/pod/fields/
  _volumes.tpl, fields/_volumeMounts.tpl, the same from 3.0.0 to the 5.0.0 branch): a
  volume of the controllers it mounts in (globalMounts, advancedMounts.<controller>, or
  every controller without either), mounted at each mount's `path` (default
  `/<item>`) in its containers, so that a configuration file the pod reads from a
  ConfigMap or Secret is read (advisor.link.clients.mounted_files); other persistence
  types hold no configuration and are not made.

Values split over several sources, a controller with `defaultContainerOptions` (merged
into its containers, not read here), and other majors are not rendered: the release
stays a client of unknown size (advisor.link.releases).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from advisor.model import Source
from advisor.read.releases import Release, Values
from advisor.read.sources.k8s import K8sObject

CHART = "app-template"
# The major versions whose library was read (common 3.0.0 - 5.3.0; see above)
VERIFIED_MAJORS = frozenset({3, 4, 5})
# controllers.<id>.type -> (kind, apiVersion) as render/_controllers.tpl makes it
_TYPES = {"deployment": ("Deployment", "apps/v1"), "statefulset": ("StatefulSet", "apps/v1"),
          "daemonset": ("DaemonSet", "apps/v1"), "cronjob": ("CronJob", "batch/v1"),
          "job": ("Job", "batch/v1")}
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")
# where each kind's pod spec sits (advisor.read.workloads.POD_SPEC_PATHS)
_POD_AT = {"Deployment": ("spec", "template", "spec"),
           "StatefulSet": ("spec", "template", "spec"),
           "DaemonSet": ("spec", "template", "spec"),
           "Job": ("spec", "template", "spec"),
           "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}


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


def _semver(version: str | None) -> tuple[int, int, int] | None:
    found = _VERSION.fullmatch(version.strip()) if version else None
    return (int(found.group(1)), int(found.group(2)), int(found.group(3))) if found else None


def renders(version: str | None) -> bool:
    """Whether this app-template version is one whose library was read."""
    found = _semver(version)
    return found is not None and found[0] in VERIFIED_MAJORS


def app_template_objects(release: Release, version: str) -> list[K8sObject] | None:
    """The controllers the release's values make (and, 5.x, their autoscalers); None
    when one of them is not made as the chart makes it (the release is then left as not
    rendered: a client of unknown size, never a partial count)."""
    trees = [v for v in release.values if isinstance(v.node, dict)
             and isinstance(v.node.get("controllers"), dict)]
    semver = _semver(version)
    if len(trees) != 1 or len(release.values) != 1 or semver is None:
        return None
    values = trees[0]
    controllers = {str(k): c for k, c in values.node["controllers"].items()
                   if isinstance(c, dict) and _enabled(c)}
    always_append = semver >= (4, 1, 0) and isinstance(values.node.get("global"), dict) \
        and bool(values.node["global"].get("alwaysAppendIdentifierToResourceName"))
    out: list[K8sObject] = []
    for ident, c in controllers.items():
        ctype = c.get("type") or "deployment"  # `empty` type: deployment
        kind_api = _TYPES.get(ctype) if isinstance(ctype, str) else None
        if kind_api is None or c.get("defaultContainerOptions"):
            return None
        name = _name(release, values, semver, ident, c, len(controllers), always_append)
        obj = _controller(release, values, version, semver, ident, c, name, *kind_api)
        if obj is None:
            return None
        out.append(obj)
        hpa = c.get("horizontalPodAutoscaler")
        if semver[0] >= 5 and _truthy(hpa):
            # the chart fails for another kind, or without maxReplicas
            # (lib/horizontalpodautoscaler/_validate.tpl)
            if obj.kind not in ("Deployment", "StatefulSet") or not isinstance(hpa, dict) \
                    or not _truthy(hpa.get("maxReplicas")):
                return None
            out.append(_autoscaler(release, values, version, ident, hpa, obj))
    return out


def _enabled(item: dict) -> bool:
    """Enabled unless its `enabled` key is falsy (lib/controller/_enabled_controllers.tpl,
    _enabled_containers.tpl)."""
    return "enabled" not in item or _truthy(item["enabled"])


def _name(release: Release, values: Values, semver: tuple[int, int, int], ident: str,
          c: dict, count: int, always_append: bool) -> str:
    name = release.name
    if semver[0] == 3:  # lib/controller/_valuesToObject.tpl
        override = c.get("nameOverride")
        if isinstance(override, str) and override:
            override = values.name_of(override)
            return name if override == name else f"{name}-{override}"
        return f"{name}-{ident}" if count > 1 and ident != name else name
    force = c.get("forceRename")  # 4.x, 5.x lib/common/_determineResourceNameFromValues.tpl
    if isinstance(force, str) and force:
        return values.name_of(force).lower()
    if isinstance(c.get("prefix"), str) and c["prefix"]:
        prefix = values.name_of(c["prefix"])
        name = name if prefix == name else f"{prefix}-{name}"
    if (count > 1 or always_append) and not name.endswith(f"-{ident}") \
            and (semver < (4, 1, 0) or ident != name):
        name = f"{name}-{ident}"
    if isinstance(c.get("suffix"), str) and c["suffix"]:
        suffix = values.name_of(c["suffix"])
        name = name if name.endswith(f"-{suffix}") else f"{name}-{suffix}"
    return name.lower()


def _truthy(value: Any) -> bool:
    """Go template truth (`with`, `default`): not false, 0, "", null or empty."""
    return value not in (None, False, 0, "") and value != {} and value != []


def _controller(release: Release, values: Values, version: str,
                semver: tuple[int, int, int], ident: str, c: dict, name: str, kind: str,
                api: str) -> K8sObject | None:
    at = ("controllers", ident)
    sources: dict[str, Source] = {}
    chart = f"app-template {version}"

    def traced(field: str, keys: tuple, key: str) -> None:
        sources[field] = values.source((*at, *keys), key)

    def chart_default(field: str, what: str) -> None:
        sources[field] = Source.default_of(f"{chart}: {what}", key=field)

    spec: dict[str, Any] = {}
    if kind in ("Deployment", "StatefulSet") and "replicas" in c and c["replicas"] is not None:
        spec["replicas"] = c["replicas"]
        traced("spec.replicas", ("replicas",), "replicas")
    elif kind == "Deployment" and "replicas" not in c:
        spec["replicas"] = 1
        chart_default("spec.replicas", "a controller without replicas has 1 (common "
                      "classes/_deployment.tpl)")
    if kind == "Deployment":
        strategy = c.get("strategy") or "Recreate"
        spec["strategy"] = {"type": strategy}
        if _truthy(c.get("strategy")):
            traced("spec.strategy.type", ("strategy",), "strategy")
        else:
            chart_default("spec.strategy.type", "strategy Recreate unless set (common "
                          "lib/deployment/_valuesToObject.tpl)")
        rolling = c.get("rollingUpdate")
        if strategy == "RollingUpdate" and isinstance(rolling, dict):
            made = _rolling_update(rolling, semver)
            if made is None:
                return None
            for field, key in made.items():
                spec["strategy"].setdefault("rollingUpdate", {})[field] = rolling[key]
                traced(f"spec.strategy.rollingUpdate.{field}", ("rollingUpdate", key), key)
    elif kind in ("CronJob", "Job"):
        settings_key = "cronjob" if kind == "CronJob" else "job"
        settings = c.get(settings_key) if isinstance(c.get(settings_key), dict) else {}
        job_at = ("spec", "jobTemplate", "spec") if kind == "CronJob" else ("spec",)
        file = f"common classes/_{settings_key}.tpl"
        suspend = settings.get("suspend")
        spec["suspend"] = suspend is True or str(suspend).lower() == "true"
        if _truthy(suspend):
            traced("spec.suspend", (settings_key, "suspend"), "suspend")
        else:
            chart_default("spec.suspend", f"suspend false unless {settings_key}.suspend "
                          f"({file})")
        if kind == "CronJob":
            policy = settings.get("concurrencyPolicy")
            spec["concurrencyPolicy"] = policy if _truthy(policy) else "Forbid"
            if _truthy(policy):
                traced("spec.concurrencyPolicy", (settings_key, "concurrencyPolicy"),
                       "concurrencyPolicy")
            else:
                chart_default("spec.concurrencyPolicy", "concurrencyPolicy Forbid unless "
                              f"cronjob.concurrencyPolicy ({file})")
            spec["jobTemplate"] = {"spec": {}}
        if _truthy(settings.get("parallelism")):
            job = spec["jobTemplate"]["spec"] if kind == "CronJob" else spec
            job["parallelism"] = settings["parallelism"]
            traced(".".join((*job_at, "parallelism")), (settings_key, "parallelism"),
                   "parallelism")
    pod_at = _POD_AT[kind]
    prefix = ".".join(pod_at)
    pod: dict[str, Any] = {}
    volumes = _volumes(values, ident)
    for part in ("containers", "initContainers"):
        node = c.get(part)
        if not isinstance(node, dict):
            continue
        made_list = []
        for cname, container in node.items():
            if not isinstance(container, dict) or not _enabled(container):
                continue
            i = len(made_list)
            sources[f"{prefix}.{part}.{i}"] = values.source((*at, part, str(cname)),
                                                             str(cname))
            made = _container(values, semver, (*at, part, str(cname)), str(cname), container,
                              lambda field, keys, key, i=i, part=part: sources.__setitem__(
                                  f"{prefix}.{part}.{i}.{field}", values.source(keys, key)))
            mounts = [m for vol in volumes for m in vol.mounts(ident, str(cname))]
            if mounts:
                made["volumeMounts"] = mounts
            made_list.append(made)
        if made_list:
            pod[part] = made_list
    if not pod.get("containers"):
        return None
    if volumes:
        pod["volumes"] = [vol.volume for vol in volumes]
    template: dict[str, Any] = {"template": {"spec": pod}}
    if kind == "CronJob":
        spec["jobTemplate"]["spec"].update(template)
    else:
        spec.update(template)
    body = {"apiVersion": api, "kind": kind,
            "metadata": {"name": name, "namespace": release.namespace}, "spec": spec}
    return K8sObject(kind=kind, api_version=api, name=name, namespace=release.namespace,
                     body=body, path=release.obj.path,
                     line=release.obj.location(*values.at, *at).line,
                     origin=f"{chart}:{release.id}", value_sources=sources)


def _rolling_update(rolling: dict, semver: tuple[int, int, int]) -> dict[str, str] | None:
    """The Deployment's rollingUpdate field -> the values key it is written from; None
    when this version was not read for the keys given (5.0-5.2 with maxSurge or
    maxUnavailable)."""
    made: dict[str, str] = {}
    pairs = (("maxUnavailable", "unavailable"), ("maxSurge", "surge"))
    if semver >= (5, 3, 0):  # hasKey maxX, else hasKey X
        for long, short in pairs:
            key = long if long in rolling else short if short in rolling else None
            if key is not None and rolling[key] is not None:
                made[long] = key
        return made
    if semver[0] >= 5 and any(long in rolling for long, _ in pairs):
        return None
    for long, short in pairs:  # `with .surge`, `with .unavailable`
        if _truthy(rolling.get(short)):
            made[long] = short
    return made


def _autoscaler(release: Release, values: Values, version: str, ident: str, hpa: dict,
                target: K8sObject) -> K8sObject:
    """The 5.x HorizontalPodAutoscaler of a controller: named as it, scaling it up to
    `maxReplicas` (classes/_horizontalPodAutoscaler.tpl)."""
    keys = ("controllers", ident, "horizontalPodAutoscaler")
    spec: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": target.kind,
                                               "name": target.name}}
    spec["maxReplicas"] = hpa["maxReplicas"]
    sources = {"spec.maxReplicas": values.source((*keys, "maxReplicas"), "maxReplicas")}
    body = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": target.name, "namespace": release.namespace}, "spec": spec}
    return K8sObject(kind="HorizontalPodAutoscaler", api_version="autoscaling/v2",
                     name=target.name, namespace=release.namespace, body=body,
                     path=release.obj.path, line=release.obj.location(*values.at, *keys).line,
                     origin=f"app-template {version}:{release.id}", value_sources=sources)


class _Volume:
    """A configMap or secret `persistence` item: its volume, and where it mounts."""

    def __init__(self, values: Values, ident: str, item: dict, volume: dict) -> None:
        self.values = values
        self.ident = ident
        self.item = item
        self.volume = volume

    def mounts(self, controller: str, container: str) -> list[dict]:
        """The volumeMounts of one container (fields/_volumeMounts.tpl): globalMounts and
        advancedMounts.<controller>.<container>, each at its path (the last path given
        stays for a later mount without one, as the template's variable does), or one
        mount at /<item> when neither is set."""
        item, name_of = self.item, self.values.name_of
        path = f"/{self.ident}"
        if not (_truthy(item.get("globalMounts")) or _truthy(item.get("advancedMounts"))):
            return [{"name": self.ident, "mountPath": path}]
        listed = list(item["globalMounts"]) if isinstance(item.get("globalMounts"), list) \
            else []
        advanced = item.get("advancedMounts")
        if isinstance(advanced, dict) and isinstance(advanced.get(controller), dict):
            mine = advanced[controller].get(container)
            listed += mine if isinstance(mine, list) else []
        out = []
        for mount in listed:
            if not isinstance(mount, dict):
                continue
            if _truthy(mount.get("path")):
                path = name_of(str(mount["path"]))
            made = {"name": self.ident, "mountPath": path}
            if _truthy(mount.get("subPath")):
                made["subPath"] = name_of(str(mount["subPath"]))
            out.append(made)
        return out


def _volumes(values: Values, controller: str) -> list[_Volume]:
    """The configMap and secret volumes of one controller's pods (fields/_volumes.tpl):
    an enabled item named by `name` with globalMounts, with advancedMounts for this
    controller, or with neither."""
    persistence = values.node.get("persistence")
    if not isinstance(persistence, dict):
        return []
    out = []
    for ident, item in persistence.items():
        if not isinstance(item, dict) or ("enabled" in item and not _truthy(item["enabled"])):
            continue
        kind = item.get("type")
        if kind not in ("configMap", "secret") or not isinstance(item.get("name"), str):
            continue  # no configuration file (a claim, emptyDir, a chart-made object)
        advanced = item.get("advancedMounts")
        if _truthy(item.get("globalMounts")) or (
                _truthy(advanced) and isinstance(advanced, dict)
                and _truthy(advanced.get(controller))) or (
                not _truthy(item.get("globalMounts")) and not _truthy(advanced)):
            name = values.name_of(item["name"])
            volume = {"name": str(ident), "configMap": {"name": name}} if kind == "configMap" \
                else {"name": str(ident), "secret": {"secretName": name}}
            out.append(_Volume(values, str(ident), item, volume))
    return out


def _image(values: Values, semver: tuple[int, int, int], image: Any) -> str:
    """The container's image as fields/_image.tpl writes it ("" for none)."""
    if semver < (4, 4, 0):
        if isinstance(image, dict) and image.get("repository") and image.get("tag"):
            return f"{image['repository']}:{image['tag']}"
        return ""
    if isinstance(image, str):  # lib/common/_imageSpecificationToImage.tpl
        return values.name_of(image)
    if not isinstance(image, dict) or not image.get("repository"):
        return ""
    made = values.name_of(str(image["repository"]))
    if image.get("tag"):
        made += f":{values.name_of(str(image['tag']))}"
    if image.get("digest"):
        made += f"@{values.name_of(str(image['digest']))}"
    return made


def _container(values: Values, semver: tuple[int, int, int], keys: tuple, name: str, c: dict,
               trace: Callable[[str, tuple, str], None]) -> dict:
    out: dict[str, Any] = {"name": name}
    image = _image(values, semver, c.get("image"))
    if image:
        out["image"] = image
        trace("image", (*keys, "image", "tag") if isinstance(c.get("image"), dict)
              and c["image"].get("tag") else (*keys, "image"), "image")
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
