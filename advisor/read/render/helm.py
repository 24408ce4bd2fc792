"""Helm charts rendered in-process by the real Helm engine (PyPI helm-python-sdk:
Helm v4's Go SDK behind a C ABI, no helm binary, no cluster, no network).

What happens, in the order `helm template` does it:
1. values: the chart's values.yaml (applied by the engine), then each `--values`
   file merged in order (Helm CLI `mergeMaps`: maps merge, anything else replaces),
   then each `--set` (parsed by Helm's own strvals parser). Values files are parsed
   by the engine's YAML reader (`values_from_yaml`), so `yes`/`on` and number
   handling are Helm's; ruamel.yaml reads the same files only for line numbers.
2. render: `Chart.render(values, name=release, namespace=...)`: templates of the
   chart and of its vendored subcharts (charts/<dir> and charts/*.tgz). `lookup`
   returns nothing and `getHostByName` is disabled offline; `.Files` cannot leave
   the chart. Helm test hooks (`helm.sh/hook: test`, or Helm 2's `test-success`, which
   Helm 3 and 4 still read as `test`) are dropped: they are not part of the running
   deployment; so are objects whose hook names an event Helm does not know (Helm 2's
   `test-failure`): Helm skips them. Other hooks (migration Jobs) are kept.
3. positions: each rendered object reports its template file; every line of the
   rendered document is aligned to the template line that produced it (a diff over
   the YAML keys of both; lines emitted by `toYaml` get the line of the nearest
   template line above them). A field an `include`d helper writes is cited at the
   helper's line that writes it (advisor.read.render.helm_include_lines), unless
   values tracing finds the values line it came from.
4. values tracing (`K8sObject.value_sources`): advisor.read.render.helm_trace.

Without the engine (the `helm` extra not installed), advisor.read.render.helm_fallback
reads values only.
The values layers and their lines are read by advisor.read.render.helm_values, the
template positions by advisor.read.render.helm_positions.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from advisor.model import ConfigProblem, Location
from advisor.read.fs import InputError, Root
from advisor.read.render import Rendered, helm_trace
from advisor.read.render.helm_dep_versions import read_locks
from advisor.read.render.helm_fallback import MissingDep, missing_bitnami, values_only
from advisor.read.render.helm_include_lines import field_places
from advisor.read.render.helm_local_deps import (
    LocalDependency,
    declared,
    local_dependencies,
    with_local,
)
from advisor.read.render.helm_local_deps import notices as local_notices
from advisor.read.render.helm_positions import (
    chart_dir,
    in_chart,
    line_map,
    mark_generated,
    relocate,
    template_display,
    template_text,
)
from advisor.read.render.helm_process import (
    EngineCalls,
    EngineProcess,
    EngineView,
    RenderLimit,
)
from advisor.read.render.helm_trace import (
    BaselineRead,
    ChartRenderer,
    ValuesTracer,
    apply_traces,
    baseline_read,
    varying_chart,
)
from advisor.read.render.helm_values import (
    ValuesLayer,
    default_layers,
    helm_problem,
    layer_values,
    merge_maps,
    nest,
    short_error,
    subchart_dirs,
    user_layers,
)
from advisor.read.sources.k8s import K8sObject, k8s_objects, line_of
from advisor.read.yamlpos import Composed


def render_chart(root: Root, chart_dir: str, *, values_files: list[str] | None = None,
                 set_values: list[str] | None = None, release: str = "release",
                 namespace: str | None = None, use_engine: bool = True,
                 engine: EngineProcess | None = None, cache: Any = None,
                 engine_id: str | None = None) -> Rendered:
    """Render the chart at `chart_dir` (inside `root`) as `helm template` would; in
    `engine` (advisor.read.render.helm_process) when given, so that a run's charts share one
    engine process, else in a process of its own. With a `cache` (advisor.read.cache) and
    the `engine_id` (advisor.read.render.helm_cache.engine_identity), a render of the same
    inputs is taken from it, and no engine is loaded or started."""
    values_files = list(values_files or [])
    set_values = list(set_values or [])
    out = Rendered()
    try:
        chart_path = root.resolve(chart_dir)
    except InputError as exc:
        out.problems.append(helm_problem(exc.path, exc.message))
        return out
    chart_rel = root.rel(chart_path)
    if not (chart_path / "Chart.yaml").is_file():
        out.problems.append(helm_problem(chart_rel, "not a Helm chart: no Chart.yaml"))
        return out
    # file:// dependencies charts/ lacks, placed as `helm dependency build` would
    local = local_dependencies(root, chart_path) if use_engine else []
    placed = {d.name: d.where for d in local if d.where is not None}
    key = None
    if use_engine and engine_id is not None and cache is not None and cache.enabled:
        from advisor.read.render.helm_cache import known_key, lookup

        # (chart_key reads no symlink: it has no key for a chart that holds one; known
        # from the files' stat signatures when none changed since a run that made it)
        key = known_key(cache, root, chart_path, chart_rel, values_files, set_values,
                        release, namespace, engine_id, tuple(placed.values()))
        cached = lookup(cache, chart_rel, key) if key is not None else None
        if cached is not None:
            return cached
    # A chart with a key holds no symlink, unless in the cache folder its key leaves out
    # (a chart at the repository root): nothing in it can point outside the root.
    if key is None or chart_path == root.path or placed:
        escaping = next(filter(None, (_links_outside(root, folder)
                                      for folder in (chart_path, *placed.values()))), None)
        if escaping:
            out.problems.append(helm_problem(escaping, "symlink points outside the scanned "
                                             "root; the chart is not rendered"))
            return out
    owned = None
    if use_engine and engine is None:
        from advisor.read.render.helm_process import EngineProcess

        engine = owned = EngineProcess()
    try:
        helm = _engine(engine) if engine is not None else None
        layers, problems = user_layers(root, chart_path, values_files, set_values, helm)
        out.problems.extend(problems)
        if any(p.fatal for p in problems):
            return out
        defaults = default_layers(root, chart_path, helm, out, placed)
        if helm is None or engine is None:
            return values_only(root, chart_path, defaults + layers, release=release,
                               namespace=namespace, out=out, reason=_engine_missing_reason())
        out.notices.extend(local_notices(chart_rel, root, local))
        out, deterministic = _render_with_engine(helm, root, chart_path, chart_rel,
                                                 defaults, layers, release, namespace, out,
                                                 engine, local)
    finally:
        if owned is not None:
            owned.close()
    if key is not None and deterministic:
        from advisor.read.render.helm_cache import store

        store(cache, chart_rel, key, out)
    return out


# --- engine ---------------------------------------------------------------------------


def _engine(process: EngineProcess) -> EngineCalls | None:
    """The library's calls, answered by the engine process; None when helm-python-sdk is
    not installed or its native library does not load (asked by its version, the first
    request of a run's process)."""
    from advisor.read.render.helm_process import EngineError

    calls = process.calls()
    # (the library looked for once a run's process answered: find_spec searches the
    # import path each time, and a run's charts ask once each)
    if not calls.answered() and importlib.util.find_spec("helm_python") is None:
        return None
    try:
        calls.helm_sdk_version()
    except EngineError:
        return None
    return calls


def _engine_missing_reason() -> str:
    return ("the Helm engine is not installed (helm-python-sdk, a default dependency: "
            "left out by a slim install, or it does not load on this platform)")


def _render_with_engine(helm: Any, root: Root, chart_path: Path, chart_rel: str,
                        defaults: list[ValuesLayer], layers: list[ValuesLayer],
                        release: str, namespace: str | None, out: Rendered,
                        engine: EngineProcess | None = None,
                        local: list[LocalDependency] | None = None) -> tuple[Rendered, bool]:
    """The chart rendered and traced; and whether the same inputs always give this
    (no limit stopped a render, the engine did not die, tracing was not cut short by
    its time or render budget). `local`: its `file://` dependencies charts/ lacks, the
    placed ones in the engine's view (helm_local_deps)."""
    placed = {d.name: d.where for d in local or [] if d.where is not None}
    try:
        with EngineView(root.path, chart_path, local=placed) as view:
            return _render_in(helm, root, chart_path, chart_rel, defaults, layers, release,
                              namespace, out, engine, view, local or [])
    except _TestHookFailed as failed:
        # A test hook (templates/tests/) is never deployed and is skipped from the output
        # anyway; one that does not render (it reads a subchart's values from a charts/
        # folder git ignores) must not cost the chart's real objects.
        out.notices.append(f"helm: {chart_rel}: rendered without templates/tests/ (test "
                           f"hooks, not deployed): {short_error(failed.error)}")
        with EngineView(root.path, chart_path, without_tests=True, local=placed) as view:
            return _render_in(helm, root, chart_path, chart_rel, defaults, layers, release,
                              namespace, out, engine, view, local or [])


class _TestHookFailed(Exception):
    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _render_in(helm: Any, root: Root, chart_path: Path, chart_rel: str,
               defaults: list[ValuesLayer], layers: list[ValuesLayer], release: str,
               namespace: str | None, out: Rendered, engine: EngineProcess | None,
               view: EngineView, local: list[LocalDependency]) -> tuple[Rendered, bool]:
    for note in view.notes:  # a schema's references Helm would fetch, left out
        said = f"helm: {chart_rel}: {note.text()}"
        if said not in out.notices:
            out.notices.append(said)
    refused = helm.release_name_error(release)
    if refused is not None:
        out.problems.append(helm_problem(chart_rel, f"invalid release name {release!r}: "
                                         f"{refused}"))
        return out, True
    from advisor.read.render.helm_process import EngineChart, EngineError

    user = {}
    for layer in layers:
        user = merge_maps(user, layer.plain)
    failures = engine.failures if engine is not None else 0
    try:
        chart = EngineChart.load(view.path, engine, said=view.said)
    except EngineError as exc:
        out.problems.append(helm_problem(in_chart(chart_rel, "Chart.yaml"), "Helm cannot load the "
                                         f"chart: {short_error(view.error(exc))}",
                                         fatal=True))
        return out, engine is not None and engine.failures == failures
    with chart:
        process = chart.process
        missing = _note_missing_dependencies(helm, chart, chart_path, chart_rel, out,
                                             {d.name for d in local})
        _note_nested_missing(root, chart_path, chart_rel, out, top=local)
        renderer = ChartRenderer(chart, release, namespace)
        try:
            baseline = renderer.render(user)
        except RenderLimit as exc:
            out.problems.append(helm_problem(in_chart(chart_rel, "Chart.yaml"), "Helm render "
                                             f"{exc}; the chart is not read", fatal=True))
            out.notices.append(f"helm: {chart_rel}: the render was {exc}")
            _warnings(chart_rel, chart.warnings, out)
            return out, False
        except EngineError as exc:
            if not view.without_tests and "/templates/tests/" in str(exc):
                raise _TestHookFailed(view.error(exc)) from None
            problem = _render_problem(root, chart_path, chart_rel, view.error(exc))
            if missing and "no template" in str(exc):
                names = ", ".join(dep.name for dep in missing)
                problem = replace(problem, message=(
                    f"Helm cannot render the chart: a template it calls is defined in no "
                    f"vendored chart; {names} declared in Chart.yaml but not vendored in "
                    "charts/ (a library chart such as Bitnami `common` must be vendored: "
                    f"`helm dependency build`). {problem.message}"))
            elif (dep := _missing_values_of(missing, str(exc))) is not None:
                problem = replace(problem, message=(
                    f"Helm cannot render the chart: a template reads a value of dependency "
                    f"{dep.key!r} ({dep.name} {dep.version}) that only its chart's own "
                    "values.yaml sets, and that chart is not vendored in charts/ (`helm "
                    f"dependency build` vendors it). {problem.message}"))
            out.problems.append(problem)
            _warnings(chart_rel, chart.warnings, out)
            return out, process.failures == failures
        merged: dict[str, Any] | None
        try:
            effective = merged = chart.merge_values(user)
        except EngineError:
            effective, merged = user, None  # the chart's defaults not in it
        reads: dict[str, BaselineRead] = {}
        objects = _objects_of(root, chart_path, chart_rel, baseline, namespace, out, reads,
                              local, merged)
        tracer = ValuesTracer(renderer, user, effective, defaults + layers, baseline, reads,
                              may_vary=lambda: varying_chart(chart_path))
        tracer.trace()
        apply_traces(objects, tracer)
        if tracer.limit:
            out.notices.append(f"helm: {chart_rel}: values tracing stopped: a render with "
                               f"traced values was {tracer.limit}; some numbers are reported "
                               "at their template line instead of the values file")
        elif tracer.timed_out:
            limit = helm_trace.MAX_TRACE_SECONDS
            out.notices.append(f"helm: {chart_rel}: values tracing stopped at its time limit "
                               f"({limit:g} s) after {tracer.renders} renders; some numbers "
                               "are reported at their template line instead of the values "
                               "file, and which ones may differ from run to run")
        elif tracer.stopped:
            out.notices.append(f"helm: {chart_rel}: values tracing stopped after "
                               f"{tracer.renders} renders; some numbers are reported at "
                               "their template line instead of the values file")
        _warnings(chart_rel, chart.warnings, out)
        deterministic = process.failures == failures and not tracer.stopped
    out.objects.extend(objects.values())
    if missing:
        every: dict[str, Any] = {}
        for layer in defaults + layers:
            every = merge_maps(every, nest(layer.prefix, layer_values(layer, helm)))
        locks = read_locks(root, chart_path, chart_rel)
        missing = [dep._replace(locked=locks.get((dep.name, dep.repository)))
                   for dep in missing]
        out.objects.extend(missing_bitnami(missing, every, defaults + layers, release,
                                           chart_rel, namespace, out,
                                           {d.name: d.own for d in local if d.own}))
    shown = ", ".join(x.display for x in layers) or "no values files"
    out.notices.append(f"helm: rendered {chart_rel} as release {release!r}"
                       f"{' in namespace ' + repr(namespace) if namespace else ''} with "
                       f"values.yaml + {shown} (Helm {helm.helm_sdk_version()} engine)")
    return out, deterministic


def _warnings(chart_rel: str, warnings: list[str], out: Rendered) -> None:
    """Helm's own messages (coalesce warnings, a skipped symlink), once each."""
    for line in warnings[:20]:
        out.notices.append(f"helm: {chart_rel}: Helm says: {line}")
    if len(warnings) > 20:
        out.notices.append(f"helm: {chart_rel}: {len(warnings) - 20} more Helm messages "
                           "not shown")


def _render_problem(root: Root, chart_path: Path, chart_rel: str, exc: Exception) -> ConfigProblem:
    text = short_error(exc)
    # "app/templates/x.yaml:6:56\n executing ...", "execution error at
    # (app/templates/x.yaml:6:8): need b", "parse error at (app/templates/x.yaml:7): ..."
    match = re.search(r"([\w.-]+(?:/[\w.-]+)*/templates/[^:\s()]+):(\d+)", text)
    if match:
        shown = template_display(chart_rel, _all_subdirs(root, chart_path,
                                                         top=local_dependencies(root, chart_path)),
                                 match.group(1))
        return ConfigProblem(location=Location(path=shown, line=int(match.group(2))),
                             message=f"Helm cannot render the chart: {text}", fatal=True,
                             program="Helm")
    return helm_problem(in_chart(chart_rel, "Chart.yaml"), f"Helm cannot render the chart: {text}",
                        fatal=True)


_NIL_VALUE = re.compile(r"at <\.Values\.([A-Za-z0-9_-]+)\.[^>]*>:\s*nil pointer evaluating")


def _missing_values_of(missing: list[MissingDep], error: str) -> MissingDep | None:
    """The dependency not vendored whose values a failed template read: `at
    <.Values.kafka.service.ports.client>: nil pointer evaluating interface {}.ports`
    (sentry-kubernetes/charts' sentry: kafka.service.ports is set by the Bitnami kafka
    chart's values.yaml, not the parent's). Audit 47 D4: the finding said only the nil
    pointer, not that a dependency left unvendored is why."""
    m = _NIL_VALUE.search(error)
    if m is None:
        return None
    return next((d for d in missing if d.key == m.group(1)), None)


def _note_missing_dependencies(helm: Any, chart: Any, chart_path: Path, chart_rel: str,
                               out: Rendered, said: set[str] | None = None
                               ) -> list[MissingDep]:
    """The dependencies declared but not vendored. `said`: those a notice of their own
    names already (a `file://` dependency not placed, helm_local_deps)."""
    loaded = {d.get("name") for d in chart.dependencies}
    declared = chart.metadata.get("dependencies") or []
    pairs = [MissingDep(str(d.get("name")), str(d.get("alias") or d.get("name")),
                        str(d.get("condition") or ""), str(d.get("version") or ""),
                        str(d.get("repository") or ""))
             for d in declared if d.get("name") not in loaded]
    missing = [dep.name for dep in pairs if dep.name not in (said or ())]
    if missing:
        out.notices.append(f"helm: {chart_rel}: dependencies {', '.join(map(str, missing))} "
                           "are declared in Chart.yaml but not vendored in charts/; they are "
                           "not rendered (run `helm dependency build` to vendor them)")
    return pairs


def _note_nested_missing(root: Root, chart_path: Path, chart_rel: str, out: Rendered,
                         prefix: str = "", depth: int = 0, *,
                         top: list[LocalDependency] | None = None) -> None:
    """The dependencies a vendored subchart declares that are not vendored in its own
    charts/ (the engine says only the top chart's), one notice per subchart: khuedoan/
    homelab's matrix vendoring dendrite named nothing of dendrite's own postgresql, and
    said 'no PostgreSQL server found'. A subchart vendored as a .tgz is not opened."""
    if depth > 5:
        return
    found = with_local(root, chart_path, top) if top is not None \
        else subchart_dirs(root, chart_path)
    for name, where in found.items():
        if not where.is_dir():
            continue
        vendored = set(subchart_dirs(root, where))
        missing = [d for d in _declared_names(root, where) if d not in vendored]
        if missing:
            out.notices.append(
                f"helm: {chart_rel}: subchart {prefix}{name} ({root.rel(where)}) declares "
                f"dependencies {', '.join(missing)} that are not vendored in its charts/; they "
                "are not rendered (run `helm dependency build` in it)")
        _note_nested_missing(root, where, chart_rel, out, f"{prefix}{name}/", depth + 1)


def _declared_names(root: Root, chart_path: Path) -> list[str]:
    """The chart names of the dependencies a chart folder declares (Chart.yaml, or
    requirements.yaml of an apiVersion v1 chart)."""
    return list(dict.fromkeys(str(d["name"]) for d in declared(root, chart_path)
                              if d.get("name")))


def _all_subdirs(root: Root, chart_path: Path, prefix: str = "", depth: int = 0, *,
                 top: list[LocalDependency] | None = None) -> dict[str, str]:
    """"db" / "db/inner" -> the subchart's folder as shown; `top`: the rendered chart's
    `file://` dependencies (local_dependencies, read once per render), whose placed ones
    are among its subcharts."""
    out: dict[str, str] = {}
    if depth > 5:
        return out
    found = with_local(root, chart_path, top) if top is not None \
        else subchart_dirs(root, chart_path)
    for name, where in found.items():
        key = f"{prefix}{name}"
        out[key] = root.rel(where)
        if where.is_dir():
            out.update(_all_subdirs(root, where, f"{key}/", depth + 1))
    return out


def _objects_of(root: Root, chart_path: Path, chart_rel: str, rendered: dict[str, str],
                namespace: str | None, out: Rendered,
                reads: dict[str, BaselineRead] | None = None,
                local: list[LocalDependency] | None = None,
                values: dict[str, Any] | None = None) -> dict[Any, K8sObject]:
    """(template key, kind, index) -> object, positioned in its template. `reads`: where
    what tracing reads of each template is kept, from the nodes read here
    (advisor.read.render.helm_trace.baseline_read). `values`: the chart's merged values
    (which branch of a helper's `if` Helm took), None when not known."""
    subdirs = _all_subdirs(root, chart_path, top=local if local is not None
                           else local_dependencies(root, chart_path))
    places = _TextPlacer(root, chart_rel, subdirs, values)
    objects: dict[Any, K8sObject] = {}
    dropped: list[str] = []
    unknown: list[str] = []  # objects Helm skips for a hook event it does not know
    for key in sorted(rendered):
        text = rendered[key]
        if key.endswith("NOTES.txt") or not text.strip():
            continue
        display = template_display(chart_rel, subdirs, key)
        composed = Composed(text) if reads is not None else None
        found, problems = k8s_objects(text, display, origin=f"helm:{chart_rel}",
                                      composed=composed)
        if reads is not None and composed is not None:
            reads[key] = baseline_read(composed)
        for p in problems:
            out.problems.append(replace(p, message=f"{p.message} (in the "
                                                     "rendered output of this template)"))
        template = places.template(display)
        mapping = line_map(template, text) if template is not None else {}
        template_lines = template.splitlines() if template is not None else []
        helper_lines = places.helper_lines(template, display, text, mapping) \
            if template is not None and not all(o.kind in _NO_NUMBERS for o in found) else {}
        wanted = sorted(helper_lines)
        for index, obj in enumerate(found):
            # a random part of its name masked, from the template line that wrote it
            # (before the test hooks' notice names it): the same name at every run
            name0 = line_of(obj.body, "metadata", "name")
            tline = mapping.get(name0) if name0 is not None else None
            if tline is not None and 0 <= tline < len(template_lines):
                obj.name = unrandom_name(obj.name, template_lines[tline])
            why = _not_installed(obj.annotations.get("helm.sh/hook"))
            if why == "test":
                dropped.append(obj.ref)
                continue
            if why:
                unknown.append(f"{obj.ref} ({why})")
                continue
            # the helper lines of its fields, read while its positions are the rendered
            # text's (values tracing, applied later, replaces those a values line set)
            written = field_places(obj.body, helper_lines, wanted) if helper_lines else {}
            relocate(obj.body, mapping)
            obj.line = mapping.get(obj.line - 1, obj.line - 1) + 1
            if obj.namespace is None and namespace:
                obj.namespace = namespace
            obj.value_sources = written
            if template is not None:
                mark_generated(obj, template_lines, places.for_template(key))
            obj.origin = f"helm:{chart_rel}"
            objects[(key, obj.kind, index)] = obj
    if dropped:
        out.notices.append(f"helm: {chart_rel}: skipped Helm test hooks {', '.join(dropped)}")
    if unknown:
        out.notices.append(f"helm: {chart_rel}: skipped objects whose helm.sh/hook Helm does "
                           f"not know (it installs none of them): {', '.join(unknown)}")
    return objects


# A Sprig call whose text differs at every render (random strings and numbers, a UUID);
# the clock (`now`) is not here: a render time in a name is advisor.report.compare's
# unstamped.
_RANDOM_CALL = re.compile(r"(?<![\w.$])(?:rand[A-Z]\w*|uuidv4|shuffle)\b")
# A pipeline that is a random string of a known length: `randAlphaNum 5 | lower`.
_RANDOM_LENGTH = re.compile(r"\s*\(?\s*rand(?:AlphaNum|Alpha|Numeric|Ascii)\s+(\d+)\s*\)?"
                            r"\s*(?:\|\s*(?:lower|upper|quote|squote|toString)\s*)*")
_ACTION = re.compile(r"\{\{-?(.*?)-?\}\}")
RANDOM = "<random>"


def unrandom_name(name: str, template_line: str) -> str:
    """`name` with the text a random call of its template line wrote as `<random>`: the
    line `name: "{{ include "app.fullname" . }}-app-test-{{ randAlphaNum 5 | lower }}"`
    and `release-app-app-test-x7k2q` -> `release-app-app-test-<random>`, so a report, a
    `check --base` comparison and a pre-commit diff name the object alike at every run
    (audit 56: mattermost-helm's test Pod had another name each run). The name unchanged
    when the line writes no name, calls nothing random, or does not match the name."""
    key, sep, value = template_line.partition(":")
    if not sep or key.strip().strip("\"'") != "name" or not _RANDOM_CALL.search(value):
        return name
    value = value.split(" #", 1)[0].strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    parts: list[str] = []
    pos = 0
    for m in _ACTION.finditer(value):
        parts.append(re.escape(value[pos:m.start()]))
        action = m.group(1)
        sized = _RANDOM_LENGTH.fullmatch(action)
        if sized is not None:
            parts.append(f"(.{{{int(sized.group(1))}}})")
        elif _RANDOM_CALL.search(action):
            parts.append("(.+?)")
        else:
            parts.append("(?:.*?)")
        pos = m.end()
    parts.append(re.escape(value[pos:]))
    found = re.fullmatch("".join(parts), name, re.DOTALL)
    if found is None or not found.re.groups:
        return name
    out, last = [], 0
    for g in range(1, found.re.groups + 1):
        out += [name[last:found.start(g)], RANDOM]
        last = found.end(g)
    return "".join(out) + name[last:]


# Kinds no reader takes a number from: the helper lines of their fields are not looked for.
_NO_NUMBERS = frozenset({
    "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
    "Ingress", "IngressClass", "NetworkPolicy", "Namespace", "CustomResourceDefinition",
    "ServiceMonitor", "PodMonitor", "PrometheusRule", "Certificate", "Issuer",
    "ClusterIssuer", "PersistentVolumeClaim", "StorageClass"})


class _TextPlacer:
    """The chart file lines of a generated ConfigMap/Secret text (helm_text_lines) and
    of the fields an included helper wrote (helm_include_lines), each chart's files read
    once, and only when a text or an include needs them."""

    def __init__(self, root: Root, chart_rel: str, subdirs: dict[str, str],
                 values: dict[str, Any] | None = None) -> None:
        self.root = root
        self.chart_rel = chart_rel
        self.subdirs = subdirs
        self.values = values
        self.texts: dict[str, Any] = {}
        self.helpers: Any = None
        # template text by path as shown, read once for positions and for chart_text
        self.templates: dict[str, str | None] = {}

    def template(self, display: str) -> str | None:
        """helm_positions.template_text, each file read once with chart_text's reads."""
        if "#" in display:
            return None  # inside a .tgz (template_text)
        if display not in self.templates:
            self.templates[display] = template_text(self.root, display)
        return self.templates[display]

    def _text(self, where: str) -> Any:
        from advisor.read.render.helm_text_lines import chart_text

        if where not in self.texts:
            self.texts[where] = chart_text(self.root, where, self.templates)
        return self.texts[where]

    def for_template(self, key: str) -> Any:
        where = chart_dir(self.chart_rel, self.subdirs, key)
        if where is None:
            return None

        def place(text: str) -> dict[int, Any]:
            from advisor.read.render.helm_text_lines import place_text

            return place_text(text, self._text(where).parts)

        return place

    def helper_lines(self, template: str, display: str, rendered: str,
                     mapping: dict[int, int]) -> dict[int, Any]:
        """Rendered line -> the helper line that writes it (helm_include_lines)."""
        if "include" not in template and "template" not in template:
            return {}
        from advisor.read.render.helm_include_lines import helper_places

        # a subchart's templates see its own values, not the chart's
        own = display.startswith(in_chart(self.chart_rel, "templates/"))
        return helper_places(template, display, rendered, mapping, self._helpers(),
                             self.values if own else None)

    def _helpers(self) -> Any:
        """The helpers of the chart and of its unpacked subcharts: one namespace in Helm,
        where a parent's definition replaces a subchart's (helm/helm v4 pkg/engine
        engine.go sortTemplates: the deepest templates are parsed first, and a later
        `define` of a name replaces the earlier one)."""
        if self.helpers is None:
            from advisor.read.render.helm_include_lines import Helpers

            found: dict[str, Any] = {}
            dirs = [self.chart_rel, *(d for d in self.subdirs.values()
                                      if not d.endswith(".tgz"))]
            for where in sorted(dirs, key=lambda d: -d.count("/")):
                found.update(self._text(where).defines)
            self.helpers = Helpers(found)
        return self.helpers


def _not_installed(hook: str | None) -> str:
    """Why an object with this helm.sh/hook annotation is not part of the deployment:
    "test" for a test hook (run by `helm test` alone), the unknown value for one Helm
    skips (advisor.read.render.hooks); "" when it is: no annotation, or an install,
    upgrade, rollback or delete hook. A hook Job or Pod is budgeted as Helm runs it, one
    at a time with the release's other hooks (advisor.budget.hooks)."""
    from advisor.read.render.hooks import HOOK_EVENTS, TEST_EVENTS, hook_events

    if hook is None:
        return ""
    events = hook_events(hook)
    bad = next((e for e in events if e not in HOOK_EVENTS | TEST_EVENTS), None)
    if bad is not None:
        return f"hook {bad!r}"
    # a hook of `test` and an install event runs at both (manifest_sorter.go:188-196)
    return "test" if all(e in TEST_EVENTS for e in events) else ""


# --- safety ---------------------------------------------------------------------------


def _links_outside(root: Root, chart_path: Path) -> str | None:
    """A symlink under the chart that resolves outside the root, if any: Helm's
    loader would follow it. The first in os.walk's order (top down; in each folder its
    folders, symlinks to folders included, then the rest, each in listing order), told
    from the listing (d_type) rather than by a stat per file."""
    try:
        with os.scandir(chart_path) as it:
            entries = list(it)
    except OSError:
        return None
    folders, files = [], []
    for entry in entries:
        try:
            is_folder = entry.is_dir()
        except OSError:
            is_folder = False
        (folders if is_folder else files).append(entry)
    for entry in folders + files:
        if entry.is_symlink():
            p = Path(entry.path)
            try:
                root.resolve(p)
            except InputError:
                return root.rel(p)
    for entry in folders:
        if not entry.is_symlink():
            found = _links_outside(root, Path(entry.path))
            if found is not None:
                return found
    return None
