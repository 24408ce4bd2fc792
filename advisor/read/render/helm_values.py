"""A chart's values as Helm merges them: the layers (the chart's and its vendored
subcharts' values.yaml, each `--values` file, each `--set`) with the file line of
every key, which layer sets a key last, and where the vendored subcharts are;
plus the Helm-flavoured problem these readers report."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from advisor.model import ConfigProblem, Location, Source
from advisor.read.fs import InputError, Root
from advisor.read.render import Rendered, flatten
from advisor.read.sources.k8s import block_offset, line_of

Key = tuple[str | int, ...]


class ValuesLayer(Struct):
    """One values source: a file (with positions), or the --set expressions."""

    display: str  # path shown to users, or "--set"
    plain: dict[str, Any]  # as Helm parsed it
    positions: dict[Key, int] = field(default_factory=dict)  # leaf key path -> 1-based line
    prefix: Key = ()  # subchart defaults live under their chart name
    block_lines: dict[Key, int] = field(default_factory=dict)  # block scalar -> offset
    set_text: str = ""
    set_by: dict[Key, str] = field(default_factory=dict)  # leaf -> the --set that wrote it
    # A chart's own values.yaml whose lines are known: the engine reads it itself when it
    # loads the chart, so it is read here only when asked (layer_values).
    unread: str | None = None


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


def find_values_file(root: Root, chart_path: Path, name: str) -> Path:
    """`--values` paths: relative to the chart directory when the file is there, else
    to the scanned root."""
    candidate = Path(name)
    if not candidate.is_absolute() and (chart_path / candidate).exists():
        return root.resolve(candidate, relative_to=chart_path)
    return root.resolve(candidate)


def user_layers(root: Root, chart_path: Path, values_files: list[str], set_values: list[str],
                helm: Any) -> tuple[list[ValuesLayer], list[ConfigProblem]]:
    layers: list[ValuesLayer] = []
    problems: list[ConfigProblem] = []
    for name in values_files:
        try:
            real = find_values_file(root, chart_path, name)
            text = root.read_text(real)
        except InputError as exc:
            problems.append(helm_problem(exc.path, exc.message, fatal=True, line=exc.line))
            continue
        layer = _layer_from_text(root.rel(real), text, helm, problems)
        if layer is not None:
            layers.append(layer)
    # Helm parses every --set into one map (strvals.ParseInto, pkg/cli/values/options.go):
    # `--set env[0].name=A --set env[0].value=b` is one list item with both keys, as
    # `--set env[0].name=A,env[0].value=b` is; merged as layers, the second list would
    # replace the first.
    written: list[str] = []
    set_by: dict[Key, str] = {}
    plain: dict[str, Any] = {}
    for expr in set_values:
        try:
            plain = _parse_set(expr, helm)
        except ValueError as exc:
            problems.append(helm_problem("--set", f"invalid --set {expr!r}: {exc}", fatal=True))
            continue
        written.append(expr)
        set_by.update(dict.fromkeys(flatten(plain), expr))
    if not written:
        return layers, problems
    if len(written) > 1:
        try:
            plain = _parse_set(",".join(written), helm)
        except ValueError as exc:
            problems.append(helm_problem("--set", f"invalid --set {' --set '.join(written)!r} "
                                         f"taken together: {exc}", fatal=True))
            return layers, problems
    layers.append(ValuesLayer(display="--set", plain=plain, set_text=",".join(written),
                              positions=dict.fromkeys(flatten(plain), 0), set_by=set_by))
    return layers, problems


def default_layers(root: Root, chart_path: Path, helm: Any, out: Rendered,
                   placed: dict[str, Path] | None = None) -> list[ValuesLayer]:
    """values.yaml of the chart and of each vendored subchart (under its name), for
    positions; the engine applies them itself. `placed`: the chart's `file://`
    dependencies the engine's view puts in its charts/ (helm_local_deps)."""
    layers: list[ValuesLayer] = []
    sink: list[ConfigProblem] = []

    def add(display: str, text: str, prefix: Key) -> None:
        layer = _layer_from_text(display, text, helm, sink, deferred=True)
        if layer is not None:
            layer.prefix = prefix
            layers.append(layer)

    def walk(chart: Path, prefix: Key, depth: int) -> None:
        values = chart / "values.yaml"
        if values.is_file():
            try:
                add(root.rel(values), root.read_text(values), prefix)
            except InputError as exc:
                out.problems.append(helm_problem(exc.path, exc.message, line=exc.line))
        if depth > 5:
            return
        found = subchart_dirs(root, chart)
        if depth == 0:
            found = {**found, **{n: w for n, w in (placed or {}).items() if n not in found}}
        for name, where in found.items():
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


def _layer_from_text(display: str, text: str, helm: Any, problems: list[ConfigProblem],
                     *, deferred: bool = False) -> ValuesLayer | None:
    """`deferred`: a chart's default values, which the engine applies itself: when the
    text is a plain tree its values are read only if asked (layer_values); a file Helm
    cannot read is then said by Helm when it loads the chart."""
    from advisor.read.sources.k8s import load_yaml_stream

    # With the engine, the values come from Helm's own reader and only the lines from
    # ours: read straight from the YAML nodes when the text is a plain tree (most files).
    known = key_lines(text) if helm is not None else None
    if known is not None and deferred:
        positions, blocks = known
        return ValuesLayer(display=display, plain={}, positions=positions,
                           block_lines=blocks, unread=text)
    if known is not None:
        return _engine_layer(display, text, helm, problems, *known)
    docs, yaml_problems = load_yaml_stream(text, display)
    if yaml_problems:
        problems.extend(yaml_problems)
        return None
    doc = docs[0][0] if docs else {}
    if helm is not None:
        try:
            plain = helm.values_from_yaml(text)
        except helm.HelmError as exc:
            problems.append(helm_problem(display,
                                         f"Helm cannot read the values: {short_error(exc)}",
                                         fatal=True))
            return None
    else:
        plain = _to_plain(doc)
    if not isinstance(plain, dict):
        problems.append(helm_problem(display, "values file is not a mapping", fatal=True))
        return None
    positions: dict[Key, int] = {}
    blocks: dict[Key, int] = {}
    _positions(doc, (), positions, blocks)
    return ValuesLayer(display=display, plain=plain, positions=positions, block_lines=blocks)


def _engine_layer(display: str, text: str, helm: Any, problems: list[ConfigProblem],
                  positions: dict[Key, int], blocks: dict[Key, int]) -> ValuesLayer | None:
    """The layer of a values file read by the engine, its lines already known."""
    try:
        plain = helm.values_from_yaml(text)
    except helm.HelmError as exc:
        problems.append(helm_problem(display, f"Helm cannot read the values: {short_error(exc)}",
                                     fatal=True))
        return None
    if not isinstance(plain, dict):
        problems.append(helm_problem(display, "values file is not a mapping", fatal=True))
        return None
    return ValuesLayer(display=display, plain=plain, positions=positions, block_lines=blocks)


def layer_values(layer: ValuesLayer, helm: Any) -> dict[str, Any]:
    """The values of `layer` as Helm reads them (a deferred values.yaml read now; {} when
    Helm cannot read it, as Helm already said when it loaded the chart)."""
    if layer.unread is None:
        return layer.plain
    try:
        plain = helm.values_from_yaml(layer.unread)
    except helm.HelmError:
        return {}
    return plain if isinstance(plain, dict) else {}


def key_lines(text: str) -> tuple[dict[Key, int], dict[Key, int]] | None:
    """What `_positions` makes of the first document of `text` read with positions (1-based
    line of each leaf, line offset of each multi-line string), read from libyaml's nodes
    without building the positioned tree (half of reading a values file). None when the
    text is not a plain tree that load_yaml_stream reads without a problem: a YAML error,
    an alias, a merge key, an explicit tag, a key written twice, a key that is not a
    scalar or very large or deep documents; the caller then reads it as before."""
    from yaml import YAMLError

    from advisor.read.render.helm_value_lines import NotPlain, first_document_lines

    try:
        return first_document_lines(text)
    except (NotPlain, YAMLError, ValueError, RecursionError):
        return None


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
            raise ValueError(short_error(exc)) from None
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
                return Source(path="--set", key=f"{dotted} (--set "
                              f"{layer.set_by.get(inner, layer.set_text)})")
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


def subchart_dirs(root: Root, chart: Path) -> dict[str, Path]:
    """Chart name -> its directory or .tgz under charts/."""
    found: dict[str, Path] = {}
    charts = chart / "charts"
    if not charts.is_dir():
        return found
    for entry in sorted(charts.iterdir()):
        if entry.is_dir() and (entry / "Chart.yaml").is_file():
            name = chart_yaml_name(root, entry / "Chart.yaml") or entry.name
            found[name] = entry
        elif entry.name.endswith(".tgz") and entry.is_file():
            name = _tgz_chart_name(entry)
            if name:
                found.setdefault(name, entry)
    return found


def chart_yaml_name(root: Root, chart_yaml: Path) -> str | None:
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


def nest(prefix: Key, plain: dict[str, Any]) -> dict[str, Any]:
    node: dict[str, Any] = plain
    for k in reversed(prefix):
        node = {str(k): node}
    return node


def helm_problem(path: str, message: str, *, fatal: bool = False, line: int | None = None
                 ) -> ConfigProblem:
    return ConfigProblem(location=Location(path=path, line=line), message=message,
                         fatal=fatal, program="Helm")


def short_error(exc: Exception) -> str:
    """Helm's error on one line: its continuation lines (`\n  executing ...`,
    `\n    error calling include:`) joined by a space, as a finding prints one line. A
    long one keeps its start (the template Helm was rendering) and its end, where Helm
    says the cause (`wrong type for value; ...`) after a chain of includes."""
    text = re.sub(r"\s*\n\s*", " ", str(exc).strip())
    return text if len(text) < 600 else f"{text[:250]} ... {text[-340:]}"
