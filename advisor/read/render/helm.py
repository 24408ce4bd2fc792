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
   the chart. Helm test hooks (`helm.sh/hook: test`) are dropped: they are not part
   of the running deployment. Other hooks (migration Jobs) are kept.
3. positions: each rendered object reports its template file; every line of the
   rendered document is aligned to the template line that produced it (a diff over
   the YAML keys of both; lines emitted by `include`/`toYaml` get the line of the
   nearest template line above them).
4. values tracing (`K8sObject.value_sources`): each scalar of the effective values
   (defaults and user files) is replaced by a unique sentinel and the chart is
   rendered again; a rendered field that then carries the sentinel came from that
   values key, and is reported at the values file line that set it (the last
   writer: a later `--values` file or `--set` wins). Many keys are perturbed per
   render and groups are split when a render fails or a sentinel disappears (a
   branch flipped), so the cost is about a few renders per hundred keys, plus one
   per key that does not show up verbatim, except that a render that is the
   baseline once its sentinels are put back flipped no branch and derived nothing:
   the keys that did not show up in it are not tried again (a `helm create` chart
   takes two renders). Traced: values copied into a field as is
   or as part of a string (`"{{ .Values.db.host }}:5432"`, `| quote`, `| nindent`),
   including multi-line config text, line by line. A key that only reaches the
   output through arithmetic or encoding (`mul`, `b64enc`) is traced as "derived"
   when it is tested alone and the field changes without carrying the sentinel.
   Not traced: values that only select a branch (`if .Values.autoscaling.enabled`),
   lookups and randomness.

Without the engine (the `helm` extra not installed), `values_only` reads the
scaffold's conventional keys (replicaCount, autoscaling.*, env, image, resources)
and the Bitnami postgresql subchart's keys into synthetic objects at the values
file's lines, and says exactly that in a notice.
"""

from __future__ import annotations

import copy
import difflib
import functools
import io
import os
import re
import tarfile
import time
from pathlib import Path
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from advisor.model import ConfigProblem, Location, Source
from advisor.read.fs import InputError, Root
from advisor.read.render import Rendered, field_path, flatten
from advisor.read.render.helm_process import EngineProcess, RenderLimit
from advisor.read.sources.k8s import K8sObject, block_offset, get, k8s_objects, line_of

Key = tuple[str | int, ...]

# Tracing budget: renders are ~1 ms for a scaffold-sized chart; stop refining after
# this many renders or seconds and say so.
MAX_TRACE_RENDERS = 400
MAX_TRACE_SECONDS = 5.0
MAX_RETEST_DEPTH = 2  # re-renders of keys that vanished in a group (a flipped branch)
MAX_DERIVED_RENDERS = 60  # numbers tested alone for arithmetic in templates
TRACE_RENDER_SECONDS = 2.0  # the least a tracing render may take before it is stopped
# Sentinels for numbers are 1.9xxxxx: printed exactly by Helm (six decimals, no exponent)
# and never a loop bound: `int` makes them 1 (`until`, `untilStep` and `range` then run
# once), and a numeric string ("1.900001") is 0 to `int`. A sentinel of 900001 made
# Bitnami postgresql-ha's `until` build 900,000 entries (55 s and 2.4 GB per check).
SENTINEL_BASE = 900_001


class ValuesLayer(Struct):
    """One values source: a file (with positions) or a --set expression."""

    display: str  # path shown to users, or "--set"
    plain: dict[str, Any]  # as Helm parsed it
    positions: dict[Key, int] = field(default_factory=dict)  # leaf key path -> 1-based line
    prefix: Key = ()  # subchart defaults live under their chart name
    block_lines: dict[Key, int] = field(default_factory=dict)  # block scalar -> offset
    set_text: str = ""


def render_chart(root: Root, chart_dir: str, *, values_files: list[str] | None = None,
                 set_values: list[str] | None = None, release: str = "release",
                 namespace: str | None = None, use_engine: bool = True,
                 engine: EngineProcess | None = None) -> Rendered:
    """Render the chart at `chart_dir` (inside `root`) as `helm template` would; in
    `engine` (advisor.read.render.helm_process) when given, so that a run's charts share one
    engine process, else in a process of its own."""
    values_files = list(values_files or [])
    set_values = list(set_values or [])
    out = Rendered()
    try:
        chart_path = root.resolve(chart_dir)
    except InputError as exc:
        out.problems.append(_problem(exc.path, exc.message))
        return out
    chart_rel = root.rel(chart_path)
    if not (chart_path / "Chart.yaml").is_file():
        out.problems.append(_problem(chart_rel, "not a Helm chart: no Chart.yaml"))
        return out
    escaping = _links_outside(root, chart_path)
    if escaping:
        out.problems.append(_problem(escaping, "symlink points outside the scanned root; "
                                     "the chart is not rendered"))
        return out
    helm = _engine() if use_engine else None
    layers, problems = _user_layers(root, chart_path, values_files, set_values, helm)
    out.problems.extend(problems)
    if any(p.fatal for p in problems):
        return out
    defaults = _default_layers(root, chart_path, helm, out)
    if helm is None:
        return values_only(root, chart_path, defaults + layers, release=release,
                           namespace=namespace, out=out, reason=_engine_missing_reason())
    return _render_with_engine(helm, root, chart_path, chart_rel, defaults, layers,
                               release, namespace, out, engine)


# --- engine ---------------------------------------------------------------------------


def _engine() -> Any:
    try:
        import helm_python
    except Exception:  # ImportError, or the native library failing to load
        return None
    return helm_python


@functools.cache
def _sdk_version(helm: Any) -> str:
    """The engine's version, asked once per run (a call into the Go library each time)."""
    return str(helm.helm_sdk_version())


def _engine_missing_reason() -> str:
    return ("the Helm engine is not installed (helm-python-sdk, a default dependency: "
            "left out by a slim install, or it does not load on this platform)")


def _render_with_engine(helm: Any, root: Root, chart_path: Path, chart_rel: str,
                        defaults: list[ValuesLayer], layers: list[ValuesLayer],
                        release: str, namespace: str | None, out: Rendered,
                        engine: EngineProcess | None = None) -> Rendered:
    try:
        helm.validate_release_name(release)
    except helm.HelmError as exc:
        out.problems.append(_problem(chart_rel, f"invalid release name {release!r}: {exc}"))
        return out
    from advisor.read.render.helm_process import EngineChart, EngineError

    user = {}
    for layer in layers:
        user = merge_maps(user, layer.plain)
    try:
        chart = EngineChart.load(chart_path, engine)
    except EngineError as exc:
        out.problems.append(_problem(f"{chart_rel}/Chart.yaml", f"Helm cannot load the chart: "
                                     f"{_short(exc)}", fatal=True))
        return out
    with chart:
        missing = _note_missing_dependencies(helm, chart, chart_path, chart_rel, out)
        renderer = _Renderer(chart, release, namespace)
        try:
            baseline = renderer.render(user)
        except RenderLimit as exc:
            out.problems.append(_problem(f"{chart_rel}/Chart.yaml", "Helm render "
                                         f"{exc}; the chart is not read", fatal=True))
            out.notices.append(f"helm: {chart_rel}: the render was {exc}")
            _warnings(chart_rel, chart.warnings, out)
            return out
        except EngineError as exc:
            problem = _render_problem(root, chart_path, chart_rel, exc)
            if missing and "no template" in str(exc):
                names = ", ".join(name for name, _key, _cond in missing)
                problem = replace(problem, message=(
                    f"Helm cannot render the chart: a template it calls is defined in no "
                    f"vendored chart; {names} declared in Chart.yaml but not vendored in "
                    "charts/ (a library chart such as Bitnami `common` must be vendored: "
                    f"`helm dependency build`). {problem.message}"))
            out.problems.append(problem)
            _warnings(chart_rel, chart.warnings, out)
            return out
        try:
            effective = chart.merge_values(user)
        except EngineError:
            effective = user
        objects = _objects_of(root, chart_path, chart_rel, baseline, namespace, out)
        tracer = _Tracer(renderer, user, effective, defaults + layers, baseline)
        tracer.trace()
        _apply_traces(objects, tracer)
        if tracer.limit:
            out.notices.append(f"helm: {chart_rel}: values tracing stopped: a render with "
                               f"traced values was {tracer.limit}; some numbers are reported "
                               "at their template line instead of the values file")
        elif tracer.stopped:
            out.notices.append(f"helm: {chart_rel}: values tracing stopped after "
                               f"{tracer.renders} renders; some numbers are reported at "
                               "their template line instead of the values file")
        _warnings(chart_rel, chart.warnings, out)
    out.objects.extend(objects.values())
    every: dict[str, Any] = {}
    for layer in defaults + layers:
        every = merge_maps(every, _nest(layer.prefix, layer.plain))
    out.objects.extend(_missing_bitnami(missing, every, defaults + layers, release, chart_rel,
                                        namespace, out))
    shown = ", ".join(x.display for x in layers) or "no values files"
    out.notices.append(f"helm: rendered {chart_rel} as release {release!r}"
                       f"{' in namespace ' + repr(namespace) if namespace else ''} with "
                       f"values.yaml + {shown} (Helm {_sdk_version(helm)} engine)")
    return out


class _Renderer:
    """Renders of one chart; the first (the baseline) sets how long a tracing render may
    take: a few times the baseline, never the full limit of a render."""

    def __init__(self, chart: Any, release: str, namespace: str | None) -> None:
        self.chart = chart
        self.release = release
        self.namespace = namespace
        self.count = 0
        self.baseline_seconds: float | None = None

    def render(self, values: dict[str, Any]) -> dict[str, str]:
        from advisor.read.render.helm_process import RENDER_SECONDS

        self.count += 1
        timeout = RENDER_SECONDS if self.baseline_seconds is None else min(
            RENDER_SECONDS, max(TRACE_RENDER_SECONDS, 5 * self.baseline_seconds))
        started = time.monotonic()
        rendered = self.chart.render(values=values, name=self.release,
                                     namespace=self.namespace, is_install=True, timeout=timeout)
        if self.baseline_seconds is None:
            self.baseline_seconds = time.monotonic() - started
        return rendered


def _warnings(chart_rel: str, warnings: list[str], out: Rendered) -> None:
    """Helm's own messages (coalesce warnings, a skipped symlink), once each."""
    for line in warnings[:20]:
        out.notices.append(f"helm: {chart_rel}: Helm says: {line}")
    if len(warnings) > 20:
        out.notices.append(f"helm: {chart_rel}: {len(warnings) - 20} more Helm messages "
                           "not shown")


def _render_problem(root: Root, chart_path: Path, chart_rel: str, exc: Exception) -> ConfigProblem:
    text = _short(exc)
    # "app/templates/x.yaml:6:56\n executing ...", "execution error at
    # (app/templates/x.yaml:6:8): need b", "parse error at (app/templates/x.yaml:7): ..."
    match = re.search(r"([\w.-]+(?:/[\w.-]+)*/templates/[^:\s()]+):(\d+)", text)
    if match:
        shown = _template_display(chart_rel, _all_subdirs(root, chart_path), match.group(1))
        return ConfigProblem(location=Location(path=shown, line=int(match.group(2))),
                             message=f"Helm cannot render the chart: {text}", fatal=True,
                             program="Helm")
    return _problem(f"{chart_rel}/Chart.yaml", f"Helm cannot render the chart: {text}",
                    fatal=True)


def _note_missing_dependencies(helm: Any, chart: Any, chart_path: Path, chart_rel: str,
                               out: Rendered) -> list[tuple[str, str, str]]:
    """(chart name, values key, condition) of dependencies declared but not vendored."""
    loaded = {d.get("name") for d in chart.dependencies}
    declared = chart.metadata.get("dependencies") or []
    pairs = [(str(d.get("name")), str(d.get("alias") or d.get("name")),
              str(d.get("condition") or "")) for d in declared if d.get("name") not in loaded]
    missing = [name for name, _key, _cond in pairs]
    if missing:
        out.notices.append(f"helm: {chart_rel}: dependencies {', '.join(map(str, missing))} "
                           "are declared in Chart.yaml but not vendored in charts/; they are "
                           "not rendered (run `helm dependency build` to vendor them)")
    return pairs


# --- values ---------------------------------------------------------------------------


def merge_maps(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Helm CLI's mergeMaps (pkg/cli/values/options.go): maps merge key by key,
    anything else (lists included) replaces."""
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge_maps(out[k], v)
        else:
            out[k] = v
    return out


def _find_values_file(root: Root, chart_path: Path, name: str) -> Path:
    """`--values` paths: relative to the chart directory when the file is there, else
    to the scanned root."""
    candidate = Path(name)
    if not candidate.is_absolute() and (chart_path / candidate).exists():
        return root.resolve(candidate, relative_to=chart_path)
    return root.resolve(candidate)


def _user_layers(root: Root, chart_path: Path, values_files: list[str], set_values: list[str],
                 helm: Any) -> tuple[list[ValuesLayer], list[ConfigProblem]]:
    layers: list[ValuesLayer] = []
    problems: list[ConfigProblem] = []
    for name in values_files:
        try:
            real = _find_values_file(root, chart_path, name)
            text = root.read_text(real)
        except InputError as exc:
            problems.append(_problem(exc.path, exc.message, fatal=True, line=exc.line))
            continue
        layer = _layer_from_text(root.rel(real), text, helm, problems)
        if layer is not None:
            layers.append(layer)
    for expr in set_values:
        try:
            plain = _parse_set(expr, helm)
        except ValueError as exc:
            problems.append(_problem("--set", f"invalid --set {expr!r}: {exc}", fatal=True))
            continue
        layers.append(ValuesLayer(display="--set", plain=plain, set_text=expr,
                                  positions=dict.fromkeys(flatten(plain), 0)))
    return layers, problems


def _default_layers(root: Root, chart_path: Path, helm: Any, out: Rendered) -> list[ValuesLayer]:
    """values.yaml of the chart and of each vendored subchart (under its name), for
    positions; the engine applies them itself."""
    layers: list[ValuesLayer] = []
    sink: list[ConfigProblem] = []

    def add(display: str, text: str, prefix: Key) -> None:
        layer = _layer_from_text(display, text, helm, sink)
        if layer is not None:
            layer.prefix = prefix
            layers.append(layer)

    def walk(chart: Path, prefix: Key, depth: int) -> None:
        values = chart / "values.yaml"
        if values.is_file():
            try:
                add(root.rel(values), root.read_text(values), prefix)
            except InputError as exc:
                out.problems.append(_problem(exc.path, exc.message, line=exc.line))
        if depth > 5:
            return
        for name, where in _subchart_dirs(root, chart).items():
            if where.is_dir():
                walk(where, (*prefix, name), depth + 1)
            else:
                for display, text in _tgz_values(root, where, name):
                    add(display, text, (*prefix, name))

    walk(chart_path, (), 0)
    # Parent values.yaml is applied after subchart defaults: order parents last.
    layers.sort(key=lambda layer: -len(layer.prefix))
    out.problems.extend(p for p in sink if p.fatal)
    return layers


def _layer_from_text(display: str, text: str, helm: Any,
                     problems: list[ConfigProblem]) -> ValuesLayer | None:
    from advisor.read.sources.k8s import load_yaml_stream

    docs, yaml_problems = load_yaml_stream(text, display)
    if yaml_problems:
        problems.extend(yaml_problems)
        return None
    doc = docs[0][0] if docs else {}
    if helm is not None:
        try:
            plain = helm.values_from_yaml(text)
        except helm.HelmError as exc:
            problems.append(_problem(display, f"Helm cannot read the values: {_short(exc)}",
                                     fatal=True))
            return None
    else:
        plain = _to_plain(doc)
    if not isinstance(plain, dict):
        problems.append(_problem(display, "values file is not a mapping", fatal=True))
        return None
    positions: dict[Key, int] = {}
    blocks: dict[Key, int] = {}
    _positions(doc, (), positions, blocks)
    return ValuesLayer(display=display, plain=plain, positions=positions, block_lines=blocks)


def _positions(node: Any, prefix: Key, out: dict[Key, int], blocks: dict[Key, int]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            key = (*prefix, str(k))
            line0 = line_of(node, k)
            if not isinstance(v, dict | list):
                out[key] = (line0 or 0) + 1
                if isinstance(v, str) and "\n" in v:
                    blocks[key] = block_offset(node, k)
            _positions(v, key, out, blocks)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            key = (*prefix, i)
            if not isinstance(v, dict | list):
                out[key] = (line_of(node, i) or 0) + 1
            _positions(v, key, out, blocks)


def _to_plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k): _to_plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_to_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return str(node)


def _parse_set(expr: str, helm: Any) -> dict[str, Any]:
    if helm is not None:
        try:
            return helm.parse_set_string(expr)
        except helm.HelmError as exc:
            raise ValueError(_short(exc)) from None
    # Without the engine: `a.b=1,c=x` (no lists or escapes).
    out: dict[str, Any] = {}
    for part in expr.split(","):
        if "=" not in part:
            raise ValueError(f"key {part!r} has no value")
        dotted, raw = part.split("=", 1)
        value: Any = raw
        if re.fullmatch(r"-?\d+", raw):
            value = int(raw)
        elif raw in ("true", "false"):
            value = raw == "true"
        node = out
        keys = dotted.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return out


def leaf_source(layers: list[ValuesLayer], key: Key) -> Source | None:
    """The last layer that sets `key` wins (Helm's order); its line."""
    for layer in reversed(layers):
        n = len(layer.prefix)
        if key[:n] != layer.prefix:
            continue
        inner = key[n:]
        if inner in layer.positions:
            dotted = ".".join(str(k) for k in key)
            if layer.display == "--set":
                return Source(path="--set", key=f"{dotted} (--set {layer.set_text})")
            return Source(path=layer.display, line=layer.positions[inner], key=dotted)
    return None


def block_start(layers: list[ValuesLayer], key: Key) -> tuple[str, int] | None:
    """(path, offset) of a block-scalar values key: content line k is offset + k."""
    for layer in reversed(layers):
        n = len(layer.prefix)
        if key[:n] == layer.prefix and key[n:] in layer.positions:
            offset = layer.block_lines.get(key[n:])
            return (layer.display, offset) if offset is not None else None
    return None


# --- objects and positions ------------------------------------------------------------


def _subchart_dirs(root: Root, chart: Path) -> dict[str, Path]:
    """Chart name -> its directory or .tgz under charts/."""
    found: dict[str, Path] = {}
    charts = chart / "charts"
    if not charts.is_dir():
        return found
    for entry in sorted(charts.iterdir()):
        if entry.is_dir() and (entry / "Chart.yaml").is_file():
            name = _chart_name(root, entry / "Chart.yaml") or entry.name
            found[name] = entry
        elif entry.name.endswith(".tgz") and entry.is_file():
            name = _tgz_chart_name(entry)
            if name:
                found.setdefault(name, entry)
    return found


def _chart_name(root: Root, chart_yaml: Path) -> str | None:
    try:
        text = root.read_text(chart_yaml)
    except InputError:
        return None
    match = re.search(r"^name:\s*['\"]?([\w.-]+)", text, re.M)
    return match.group(1) if match else None


def _tgz_chart_name(archive: Path) -> str | None:
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                top = member.name.split("/", 1)[0]
                if top:
                    return top
    except (tarfile.TarError, OSError, EOFError):
        return None
    return None


def _tgz_values(root: Root, archive: Path, name: str) -> list[tuple[str, str]]:
    try:
        with tarfile.open(archive, "r:gz") as tar:
            member = tar.getmember(f"{name}/values.yaml")
            handle = tar.extractfile(member)
            if handle is None or member.size > 8 * 1024 * 1024:
                return []
            data = handle.read()
    except (KeyError, tarfile.TarError, OSError, EOFError):
        return []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return []
    return [(f"{root.rel(archive)}#{name}/values.yaml", text)]


def _template_display(chart_rel: str, subdirs: dict[str, str], key: str) -> str:
    """`api/charts/db/templates/x.yaml` (engine key) -> path shown to users: the
    template under the chart (or subchart) directory, `archive.tgz#db/templates/x.yaml`
    inside a packaged subchart. `subdirs`: "db" / "db/inner" -> its path."""
    rest = key.split("/")[1:]
    base = chart_rel
    chain: list[str] = []
    while len(rest) >= 3 and rest[0] == "charts":
        chain.append(rest[1])
        where = subdirs.get("/".join(chain))
        if where is None:
            break
        if where.endswith(".tgz"):
            return f"{where}#{'/'.join(rest[1:])}"
        base, rest = where, rest[2:]
    return "/".join([base, *rest]) if base else "/".join(rest)


def _all_subdirs(root: Root, chart_path: Path, prefix: str = "", depth: int = 0
                 ) -> dict[str, str]:
    out: dict[str, str] = {}
    if depth > 5:
        return out
    for name, where in _subchart_dirs(root, chart_path).items():
        key = f"{prefix}{name}"
        out[key] = root.rel(where)
        if where.is_dir():
            out.update(_all_subdirs(root, where, f"{key}/", depth + 1))
    return out


def _objects_of(root: Root, chart_path: Path, chart_rel: str, rendered: dict[str, str],
                namespace: str | None, out: Rendered) -> dict[Any, K8sObject]:
    """(template key, kind, index) -> object, positioned in its template."""
    subdirs = _all_subdirs(root, chart_path)
    objects: dict[Any, K8sObject] = {}
    dropped: list[str] = []
    for key in sorted(rendered):
        text = rendered[key]
        if key.endswith("NOTES.txt") or not text.strip():
            continue
        display = _template_display(chart_rel, subdirs, key)
        found, problems = k8s_objects(text, display, origin=f"helm:{chart_rel}")
        for p in problems:
            out.problems.append(replace(p, message=f"{p.message} (in the "
                                                     "rendered output of this template)"))
        template = _template_text(root, display)
        mapping = _line_map(template, text) if template is not None else {}
        for index, obj in enumerate(found):
            hook = obj.annotations.get("helm.sh/hook", "")
            if "test" in [h.strip() for h in hook.split(",")]:
                dropped.append(obj.ref)
                continue
            _relocate(obj.body, lambda line0, m=mapping: m.get(line0, line0))
            obj.line = mapping.get(obj.line - 1, obj.line - 1) + 1
            if obj.namespace is None and namespace:
                obj.namespace = namespace
            obj.value_sources = {}
            obj.origin = f"helm:{chart_rel}"
            objects[(key, obj.kind, index)] = obj
    if dropped:
        out.notices.append(f"helm: {chart_rel}: skipped Helm test hooks {', '.join(dropped)}")
    return objects


def _template_text(root: Root, display: str) -> str | None:
    if "#" in display:
        return None  # inside a .tgz: positions stay those of the rendered stream
    try:
        return root.read_text(display)
    except InputError:
        return None


_KEY = re.compile(r"^\s*(?:-\s+)*([\"']?[\w./-]+[\"']?)\s*:(?:\s|$)")


def _line_key(line: str) -> str:
    stripped = line.strip()
    if stripped.startswith("{{") and stripped.endswith("}}"):
        return "\0ctl"
    match = _KEY.match(line)
    if match:
        return match.group(1).strip("\"'") + ":"
    return stripped


def _line_map(template: str, rendered: str) -> dict[int, int]:
    """0-based rendered line -> 0-based template line, by aligning YAML keys."""
    t_keys = [_line_key(x) for x in template.splitlines()]
    r_keys = [_line_key(x) for x in rendered.splitlines()]
    matcher = difflib.SequenceMatcher(None, t_keys, r_keys, autojunk=False)
    mapping: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            mapping[block.b + k] = block.a + k
    last = 0
    for r in range(len(r_keys)):
        if r in mapping:
            last = mapping[r]
        else:
            mapping[r] = last
    return mapping


def _relocate(node: Any, move: Any, depth: int = 0) -> None:
    """Rewrite ruamel line info in place (0-based lines) so `location()` reports
    positions in the file the object really comes from."""
    if depth > 100:
        return
    lc = getattr(node, "lc", None)
    if lc is not None:
        if getattr(lc, "line", None) is not None:
            lc.line = move(lc.line)
        data = getattr(lc, "data", None) or {}
        for k, pos in list(data.items()):
            pos = list(pos)
            pos[0] = move(pos[0])
            if len(pos) >= 3:
                pos[2] = move(pos[2])
            data[k] = pos
    if isinstance(node, dict):
        for v in node.values():
            _relocate(v, move, depth + 1)
    elif isinstance(node, list):
        for v in node:
            _relocate(v, move, depth + 1)


# --- tracing --------------------------------------------------------------------------


class _Leaf(Struct):
    key: Key
    value: Any
    source: Source
    sentinel: Any = None
    marker: str = ""  # what identifies the sentinel in rendered text


class _Hit(Struct):
    leaf: _Leaf
    verbatim: bool  # the field is exactly the sentinel (vs part of a string / derived)
    derived: bool = False
    at: int = 0  # where in the field's text (a URL's host comes before its port)


class _Tracer:
    def __init__(self, renderer: _Renderer, user: dict[str, Any], effective: dict[str, Any],
                 layers: list[ValuesLayer], baseline: dict[str, str]) -> None:
        self.renderer = renderer
        self.user = user
        self.effective = effective
        self.layers = layers
        self.baseline_text = "\n".join(baseline.values())
        self.baseline_texts = dict(baseline)
        self.found: set[str] = set()
        # Markers another render cannot add to: tested alone already, or absent from a
        # render that differed from the baseline by the sentinels only.
        self.settled: set[str] = set()
        self.derived_renders = 0
        try:
            self.baseline = _parse_all(baseline)
        except Exception:  # not YAML: k8s_objects already reported it; nothing to trace
            self.baseline = {}
        self.hits: dict[tuple[Any, Key], list[_Hit]] = {}
        self.started = time.monotonic()
        self.renders = 0
        self.stopped = False
        self.limit = ""  # why a render was stopped, when one was

    def leaves(self) -> list[_Leaf]:
        leaves: list[_Leaf] = []
        used: set[str] = set()
        number = SENTINEL_BASE
        for key, value in flatten(self.effective).items():
            if not key or isinstance(value, bool) or value is None:
                continue
            if isinstance(value, str) and not value.strip():
                continue
            if not isinstance(value, int | float | str):
                continue
            source = leaf_source(self.layers, key)
            if source is None:
                continue
            while (number % 10 == 0 or f"1.{number}" in self.baseline_text
                   or f"1.{number}" in used):
                number += 1  # a trailing zero would not be printed
            marker = f"1.{number}"
            used.add(marker)
            number += 1
            if isinstance(value, int | float):
                sentinel: Any = float(marker)
            elif re.fullmatch(r"-?\d+", value.strip()):
                sentinel = marker  # numeric string ("20"): keep it a number-looking string
            else:
                marker = f"zq{marker[2:]}x"
                sentinel = (value + marker) if "\n" not in value else (value.rstrip("\n")
                                                                      + marker + "\n")
            leaves.append(_Leaf(key, value, source, sentinel, marker))
        return leaves

    def budget_left(self) -> bool:
        if (self.renders >= MAX_TRACE_RENDERS
                or time.monotonic() - self.started > MAX_TRACE_SECONDS):
            self.stopped = True
            return False
        return True

    def trace(self) -> None:
        leaves = self.leaves()
        numbers = [x for x in leaves if not isinstance(x.sentinel, str)]
        strings = [x for x in leaves if isinstance(x.sentinel, str)]
        for group in (numbers, strings):
            self._group(group, 0)
        # Numbers that never showed up verbatim may still reach a field through
        # arithmetic: test them alone (one render each), within the budget.
        for leaf in numbers:
            if leaf.marker in self.settled:
                continue
            if leaf.marker not in self.found and _appears(leaf.value, self.baseline_text):
                if self.derived_renders >= MAX_DERIVED_RENDERS:
                    self.stopped = True
                    break
                self.derived_renders += 1
                self._group([leaf], MAX_RETEST_DEPTH)

    def _group(self, group: list[_Leaf], depth: int) -> None:
        if not group or not self.budget_left():
            return
        values = copy.deepcopy(self.user)
        for leaf in group:
            _set_path(values, leaf.key, leaf.sentinel, self.effective)
        self.renders += 1
        if len(group) == 1:
            self.settled.add(group[0].marker)  # rendering it alone again says the same
        try:
            rendered = self.renderer.render(values)
            fields = self._parse_changed(rendered, group)
        except RenderLimit as exc:  # not split: each half could take as long again
            self.stopped = True
            self.limit = str(exc)
            return
        except Exception:  # a perturbed value failed schema/template checks, or not YAML
            if len(group) > 1:
                half = len(group) // 2
                self._group(group[:half], depth)
                self._group(group[half:], depth)
            return
        found = self._collect(group, fields)
        self.found |= found
        missing = [x for x in group if x.marker not in found
                   and _appears(x.value, self.baseline_text)]
        if len(group) == 1:
            if missing:
                self._derived(group[0], fields)
            return
        if missing and self._sentinels_only(rendered, group):
            # Nothing but the sentinels changed: no branch flipped and no value went
            # through arithmetic, so the keys that did not show up are not in the output.
            self.settled.update(x.marker for x in missing)
            return
        # A key that did not show up may sit under a branch another key of the group
        # flipped: try those again without the others, a bounded number of times.
        if not missing or depth >= MAX_RETEST_DEPTH:
            return
        if len(missing) < len(group):
            self._group(missing, depth + 1)
        else:
            half = len(missing) // 2
            self._group(missing[:half], depth + 1)
            self._group(missing[half:], depth + 1)

    def _sentinels_only(self, rendered: dict[str, str], group: list[_Leaf]) -> bool:
        """Whether `rendered` is the baseline once each sentinel is put back to its
        value (where `_collect` finds them: a number's marker not inside a longer
        number). A sentinel a template transformed (upper, trunc, b64enc, arithmetic)
        is not put back, and then the render does not count as the baseline."""
        if rendered.keys() != self.baseline_texts.keys():
            return False
        back: dict[str, str] = {}
        for leaf in group:
            if isinstance(leaf.sentinel, str) and leaf.sentinel != leaf.marker:
                back[leaf.marker] = ""  # value + marker: drop the marker
            else:
                value = leaf.value
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                back[leaf.marker] = str(value)

        def put_back(match: re.Match[str]) -> str:
            return back.get(match.group(0), match.group(0))

        for key, text in rendered.items():
            base = self.baseline_texts[key]
            if text == base:
                continue
            if len(text) > 4 * len(base) + 4096:  # a sentinel drove a loop (`until`)
                return False
            if _MARKERS.sub(put_back, text) != base:
                return False
        return True

    def _parse_changed(self, rendered: dict[str, str], group: list[_Leaf]
                       ) -> dict[Any, dict[Key, Any]]:
        """Fields of the templates that changed; a template whose text is the
        baseline's, or (for a group of more than one) carries none of the group's
        markers, is not parsed again."""
        markers = [x.marker for x in group]
        changed: dict[str, str] = {}
        for key, text in rendered.items():
            if text == self.baseline_texts.get(key):
                continue
            if len(group) > 1 and not any(m in text for m in markers):
                continue
            changed[key] = text
        return _parse_all(changed)

    def _collect(self, group: list[_Leaf], fields: dict[Any, dict[Key, Any]]) -> set[str]:
        by_marker = {x.marker: x for x in group}
        pattern = re.compile("|".join(re.escape(m) for m in sorted(by_marker, key=len,
                                                                     reverse=True)))
        found: set[str] = set()
        for obj_key, leaves in fields.items():
            base = self.baseline.get(obj_key)
            if base is None:
                continue
            for path, value in leaves.items():
                if path not in base:
                    continue
                text = str(value)
                for match in pattern.finditer(text):
                    m = match.group(0)
                    if not m.startswith("zq") and _digit_neighbours(text, match.start(),
                                                                    match.end()):
                        continue
                    found.add(m)
                    leaf = by_marker[m]
                    verbatim = text == str(leaf.sentinel) or (
                        isinstance(value, int | float) and value == leaf.sentinel)
                    self._add(obj_key, path, _Hit(leaf, verbatim, at=match.start()))
        return found

    def _derived(self, leaf: _Leaf, fields: dict[Any, dict[Key, Any]]) -> None:
        for obj_key, leaves in fields.items():
            base = self.baseline.get(obj_key)
            if base is None or len(base) != len(leaves):
                continue  # the object changed shape: a branch, not a value
            for path, value in leaves.items():
                if path in base and str(base[path]) != str(value):
                    self._add(obj_key, path, _Hit(leaf, verbatim=False, derived=True))

    def _add(self, obj_key: Any, path: Key, hit: _Hit) -> None:
        bucket = self.hits.setdefault((obj_key, path), [])
        if all(h.leaf.key != hit.leaf.key for h in bucket):
            bucket.append(hit)


# Every marker `leaves` hands out: 1.<six digits> not inside a longer number, or zq<digits>x.
_MARKERS = re.compile(r"zq\d+x|(?<![\d.])1\.\d{6}(?!\d)")


def _digit_neighbours(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else ""
    return before.isdigit() or before == "." or (end < len(text) and text[end].isdigit())


def _appears(value: Any, text: str) -> bool:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    shown = str(value)
    if "\n" in shown:
        shown = shown.strip().splitlines()[0]
    return shown in text


def _set_path(tree: dict[str, Any], key: Key, value: Any, effective: Any) -> None:
    """Set `key` in the user values, copying containers from the effective values
    where the user values do not have them (lists are replaced whole by Helm)."""
    node: Any = tree
    ref: Any = effective
    for i, k in enumerate(key[:-1]):
        ref = ref[k] if isinstance(ref, dict | list) else None
        nxt = key[i + 1]
        if isinstance(node, dict):
            child = node.get(k)
            want_list = isinstance(nxt, int)
            if not isinstance(child, list if want_list else dict):
                child = copy.deepcopy(ref) if ref is not None else ([] if want_list else {})
                node[k] = child
        else:
            child = node[k]
        node = child
    last = key[-1]
    if isinstance(node, list) and isinstance(last, int):
        while len(node) <= last:
            node.append(None)
    node[last] = value


def _parse_all(rendered: dict[str, str]) -> dict[Any, dict[Key, Any]]:
    """(template key, kind, index) -> flattened scalar fields of each object, indexed
    as `k8s_objects` indexes them. Tracing parses every perturbed render, so this uses
    libyaml (PyYAML's C loader, part of the `helm` extra) when present; positions are
    not needed here."""
    load = _fast_loader()
    out: dict[Any, dict[Key, Any]] = {}
    for key, text in rendered.items():
        if key.endswith("NOTES.txt") or not text.strip():
            continue
        index = 0
        for doc in load(text):
            for body in _unpack_plain(doc):
                if isinstance(body.get("kind"), str) and isinstance(
                        get(body, "metadata", "name"), str):
                    out[(key, body["kind"], index)] = flatten(body)
                    index += 1
    return out


def _unpack_plain(doc: Any) -> list[dict[str, Any]]:
    if not isinstance(doc, dict):
        return []
    if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        return [x for x in doc["items"] if isinstance(x, dict)]
    return [doc]


def _fast_loader() -> Any:
    try:
        import yaml

        # Scalars stay the text Helm printed: `{{ .Values.port }}0` is "1.9000020", not
        # the float 1.900002 that would pass for the sentinel itself.
        loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)

        def load(text: str) -> list[Any]:
            return list(yaml.load_all(text, Loader=loader))  # no tags executed
    except ImportError:
        from ruamel.yaml import YAML

        safe = YAML(typ="base")

        def load(text: str) -> list[Any]:
            return list(safe.load_all(text))
    return load


def _apply_traces(by_key: dict[Any, K8sObject], tracer: _Tracer) -> None:
    for (obj_key, path), hits in tracer.hits.items():
        obj = by_key.get(obj_key)
        if obj is None:
            continue
        hits.sort(key=lambda h: (not h.verbatim, h.derived, h.at))
        first = hits[0]
        how = "" if first.verbatim else " (derived)" if first.derived else " (part of)"
        names = ", ".join(h.leaf.source.key or ".".join(map(str, h.leaf.key)) for h in hits)
        source = replace(first.leaf.source, key=f"values: {names}{how}")
        obj.value_sources[field_path(*path)] = source
        value = get(obj.body, *path)
        if isinstance(value, str) and "\n" in value:
            _trace_text_lines(obj, path, value, hits, tracer.layers)


def _trace_text_lines(obj: K8sObject, path: Key, rendered: str, hits: list[_Hit],
                      layers: list[ValuesLayer]) -> None:
    """A multi-line field holding values text verbatim (a postgresql.conf block):
    map each of its lines to the values file line it came from."""
    rendered_lines = [x.rstrip() for x in rendered.splitlines()]
    for hit in hits:
        if not isinstance(hit.leaf.value, str) or "\n" not in hit.leaf.value:
            continue
        start = block_start(layers, hit.leaf.key)
        if start is None:
            continue
        value_lines = [x.rstrip() for x in hit.leaf.value.splitlines()]
        at = _find_run(rendered_lines, value_lines)
        if at is None:
            continue
        shown, offset = start
        for k in range(len(value_lines)):
            obj.value_sources[f"{field_path(*path)}#{at + k + 1}"] = Source(
                path=shown, line=offset + k + 1,
                key=f"values: {'.'.join(map(str, hit.leaf.key))}")


def _find_run(haystack: list[str], needle: list[str]) -> int | None:
    while needle and not needle[-1]:
        needle = needle[:-1]
    if not needle:
        return None
    for i in range(len(haystack) - len(needle) + 1):
        if haystack[i:i + len(needle)] == needle:
            return i
    return None


# --- safety ---------------------------------------------------------------------------


def _links_outside(root: Root, chart_path: Path) -> str | None:
    """A symlink under the chart that resolves outside the root, if any: Helm's
    loader would follow it."""
    for dirpath, dirnames, filenames in os.walk(chart_path, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                try:
                    root.resolve(p)
                except InputError:
                    return root.rel(p)
    return None


def _problem(path: str, message: str, *, fatal: bool = False, line: int | None = None
             ) -> ConfigProblem:
    return ConfigProblem(location=Location(path=path, line=line), message=message,
                         fatal=fatal, program="Helm")


def _short(exc: Exception) -> str:
    text = str(exc).strip()
    return text if len(text) < 600 else text[:600] + "..."


# --- values-only reading (no engine) --------------------------------------------------


def values_only(root: Root, chart_path: Path, layers: list[ValuesLayer], *, release: str,
                namespace: str | None, out: Rendered, reason: str) -> Rendered:
    """Synthetic objects from the conventional values keys of `helm create`'s scaffold
    (replicaCount, autoscaling.enabled/minReplicas/maxReplicas, env, image,
    resources) and of the Bitnami postgresql chart when it is a dependency."""
    chart_rel = root.rel(chart_path)
    values: dict[str, Any] = {}
    for layer in layers:
        values = merge_maps(values, _nest(layer.prefix, layer.plain))
    chart_name = _chart_name(root, chart_path / "Chart.yaml") or chart_path.name
    charts: list[tuple[Key, str, dict[str, Any]]] = [((), chart_name, values)]
    subcharts = list(_subchart_dirs(root, chart_path)) + _declared_dependencies(root, chart_path)
    for sub in dict.fromkeys(subcharts):
        if isinstance(values.get(sub), dict):
            charts.append(((sub,), sub, values[sub]))
    built: list[K8sObject] = []
    for prefix, name, section in charts:
        if name == "postgresql" and any(k in section for k in ("primary", "architecture")):
            built.extend(_bitnami_postgresql(section, layers, prefix, release, name,
                                             chart_rel, namespace))
        else:
            built.extend(_synthetic_workload(section, layers, prefix,
                                             _fullname(section, name, release), name,
                                             chart_rel, namespace))
    out.objects.extend(built)
    out.notices.append(
        f"helm: {chart_rel} was NOT rendered: {reason}. Read instead from values only: "
        "replicaCount, autoscaling.enabled/minReplicas/maxReplicas, env, image and "
        "resources.limits (the `helm create` scaffold's keys) and the Bitnami postgresql "
        "keys (architecture, primary/readReplicas configuration and extendedConfiguration, "
        "readReplicas.replicaCount); templates, other keys, ConfigMaps, Services and any "
        "custom template logic were not evaluated")
    return out


def _missing_bitnami(missing: list[tuple[str, str, str]], user: dict[str, Any],
                     layers: list[ValuesLayer], release: str, chart_rel: str,
                     namespace: str | None, out: Rendered) -> list[K8sObject]:
    """A Bitnami postgresql dependency that is not vendored: read from its values
    (unless its Chart.yaml `condition`, the first path of it that is set, is false)."""
    built: list[K8sObject] = []
    for name, key, condition in missing:
        section = user.get(key)
        if name != "postgresql" or not isinstance(section, dict):
            continue
        if _condition_false(user, condition):
            continue
        found = _bitnami_postgresql(section, layers, (key,), release, key, chart_rel, namespace)
        if found:
            built.extend(found)
            out.notices.append(
                f"helm: {chart_rel}: dependency {key!r} (Bitnami postgresql) is not vendored; "
                "its StatefulSets and configuration ConfigMaps were built from the values "
                "(architecture, primary/readReplicas configuration, extendedConfiguration, "
                "readReplicas.replicaCount), not rendered")
    return built


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


def _nest(prefix: Key, plain: dict[str, Any]) -> dict[str, Any]:
    node: dict[str, Any] = plain
    for k in reversed(prefix):
        node = {str(k): node}
    return node


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


class _Builder:
    """Builds a synthetic manifest while recording, per field, the values key it
    reads; then loads it with ruamel and pins every position to the values lines."""

    def __init__(self, layers: list[ValuesLayer], prefix: Key) -> None:
        self.layers = layers
        self.prefix = prefix
        self.sources: dict[str, Source] = {}

    def src(self, field_keys: Key, *value_key: str | int) -> None:
        source = leaf_source(self.layers, (*self.prefix, *value_key))
        if source is not None:
            self.sources[field_path(*field_keys)] = replace(source, key=f"values: {source.key}")

    def build(self, body: dict[str, Any], anchor: Source | None, chart_rel: str,
              namespace: str | None) -> K8sObject:
        from ruamel.yaml import YAML

        yaml = YAML(typ="rt")
        buffer = io.StringIO()
        yaml.dump(body, buffer)
        objects, _ = k8s_objects(buffer.getvalue(), anchor.path if anchor and anchor.path
                                 else f"{chart_rel}/values.yaml")
        obj = objects[0]
        line0 = ((anchor.line or 1) - 1) if anchor else 0
        _relocate(obj.body, lambda _line: line0)
        obj.line = line0 + 1
        obj.value_sources = dict(self.sources)
        obj.origin = f"helm-values:{chart_rel}"
        if obj.namespace is None and namespace:
            obj.namespace = namespace
        return obj


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


def _bitnami_postgresql(values: dict[str, Any], layers: list[ValuesLayer], prefix: Key,
                        release: str, name: str, chart_rel: str, namespace: str | None
                        ) -> list[K8sObject]:
    """What bitnami/postgresql renders that matters for the budget: the primary
    StatefulSet (and read replicas with architecture=replication) and the ConfigMaps
    holding primary.configuration / primary.extendedConfiguration. Names follow the
    chart's `postgresql.v1.primary.fullname` (<release>-postgresql, with -read for
    replicas); see advisor.read.sources.operators for the field paths and their source."""
    if not any(k in values for k in ("primary", "architecture", "readReplicas", "auth")):
        return []
    base = f"{release}-{name}" if name not in release else release
    fullname = values.get("fullnameOverride") or base
    built: list[K8sObject] = []
    labels = {"app.kubernetes.io/name": "postgresql", "app.kubernetes.io/instance": release,
              "helm.sh/chart": "postgresql"}

    def statefulset(component: str, sts_name: str, replicas_key: Key, config_keys: list[str]
                    ) -> None:
        b = _Builder(layers, prefix)
        section = get(values, component) if isinstance(get(values, component), dict) else {}
        replicas = section.get("replicaCount", 1)
        mounts: list[dict[str, Any]] = []
        body: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": sts_name,
                         "labels": {**labels, "app.kubernetes.io/component":
                                    "read" if component == "readReplicas" else component}},
            "spec": {"replicas": int(replicas),
                     "template": {"spec": {"containers": [{
                         "name": "postgresql", "image": image}],
                         "volumes": mounts}}}}
        b.src(("spec", "replicas"), *replicas_key)
        b.src(("spec", "template", "spec", "containers", 0, "image"), "image", "tag")
        anchor = leaf_source(layers, (*prefix, *replicas_key)) or leaf_source(
            layers, (*prefix, "architecture"))
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
        if not mounts:
            del body["spec"]["template"]["spec"]["volumes"]
        built.append(b.build(body, anchor, chart_rel, namespace))
        built.extend(configmaps)

    # values image.registry/repository/tag (the chart's defaults are not known here)
    image_values = values.get("image") if isinstance(values.get("image"), dict) else {}
    image = (f"{image_values.get('registry') or 'docker.io'}/"
             f"{image_values.get('repository') or 'bitnami/postgresql'}")
    if image_values.get("tag"):
        image += f":{image_values['tag']}"

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
