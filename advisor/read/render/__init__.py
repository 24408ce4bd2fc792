"""Rendering what users deploy from: Helm charts (advisor.read.render.helm) and kustomize
overlays (advisor.read.render.kustomize) into K8sObjects, with numbers traced back to the
values file or overlay line that set them.

The Helm modules, one job each: helm (render a chart: its values files, the render call,
limits, notices), helm_process and helm_worker (the engine in a child process with limits),
helm_values (the values layers and the file line of each key), helm_positions (the
template line of each rendered line), helm_trace (which values line set each rendered
field) and helm_fallback (objects read from values only when the engine cannot render).
The kustomize modules: kustomize (run the binary in the sandbox, read its output),
kustomize_tree (the files a kustomization names, checked before anything runs),
kustomize_positions (each object placed back in the file it came from) and
kustomize_trace (which overlay line set each field).

Rendered objects carry two kinds of position:
- `K8sObject.path`/`line` and `location(*keys)`: the rendered stream's positions,
  mapped to the template (Helm) or the file the object came from (kustomize) where
  that is known, see each renderer;
- `K8sObject.value_sources`: field path -> Source of the line a user edits to change
  that value (a values file line, an overlay patch line). Ask `field_source` rather
  than `obj.source` for rendered objects: it prefers the traced source.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct, field

from advisor.model import ConfigProblem, Source
from advisor.read.sources.k8s import K8sObject


class Rendered(Struct):
    objects: list[K8sObject] = field(default_factory=list)
    problems: list[ConfigProblem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def in_packaged_chart(path: str) -> bool:
    """Whether a shown path is a template inside a packaged (.tgz) subchart: a
    dependency `helm dependency build` fetched, not the repository's own chart. Here,
    not in helm_positions: a check of plain manifests asks it, and needs none of that
    module (difflib, its patterns)."""
    return ".tgz#" in path


def field_path(*keys: str | int) -> str:
    """The dotted key of `value_sources`: `spec.template.spec.containers.0.env.3.value`.
    A line inside a multi-line string (a config file held in a ConfigMap) is
    `data.postgresql.conf#12` (12 = 1-based line within the string)."""
    return ".".join(str(k) for k in keys)


def field_source(obj: K8sObject, *keys: str | int, text_line: int | None = None,
                 key: str | None = None) -> Source:
    """Where the value at `keys` was set: the traced values-file/overlay line when
    known, else the object's own position."""
    sources = obj.value_sources
    if sources:
        dotted = field_path(*keys)
        if text_line is not None:
            traced = sources.get(f"{dotted}#{text_line}")
            if traced is not None:
                return traced
        traced = sources.get(dotted)
        if traced is not None:
            return traced
    return obj.source(*keys, key=key)


def text_origin(obj: K8sObject, *keys: str | int) -> tuple[str, int] | None:
    """For a multi-line string copied verbatim from a values file (a postgresql.conf
    block in values), the (path, line_offset) to parse it at its real position, so a
    parser's line 1 lands on the values file's first content line. None otherwise."""
    if not obj.value_sources:
        return None
    first = obj.value_sources.get(f"{field_path(*keys)}#1")
    if first is None or first.path is None or first.line is None:
        return None
    return first.path, first.line - 1


def generated_key(dotted: str) -> str:
    """The `value_sources` key saying the text at `dotted` is not in its template line
    for line (`include`, `tpl`, `nindent` of a helper): its Source is the field's key
    line, where every line of the text is cited."""
    return f"{dotted}#*"


def written_line_key(dotted: str, text_line: int) -> str:
    """The `value_sources` key of the chart file line that line `text_line` (1-based) of
    the generated text at `dotted` is written at (a `tpl (.Files.Get ...)` file, a
    helper's body: advisor.read.render.helm_text_lines)."""
    return f"{dotted}#L{text_line}"


def written_lines(obj: K8sObject, dotted: str) -> dict[int, Source]:
    """text line -> the chart file line it is written at (written_line_key)."""
    prefix = f"{dotted}#L"
    return {int(key[len(prefix):]): source
            for key, source in (obj.value_sources or {}).items()
            if key.startswith(prefix) and key[len(prefix):].isdigit()}


def traced_line_key(dotted: str, text_line: int, column: int) -> str:
    """The `value_sources` key of a values key traced into line `text_line` (1-based) of
    the text at `dotted`, its value starting at `column` of that line."""
    return f"{dotted}#{text_line}@{column}"


def traced_lines(obj: K8sObject, dotted: str) -> dict[int, tuple[tuple[int, Source], ...]]:
    """text line -> (column, Source) of the values keys traced into the text at `dotted`."""
    found: dict[int, list[tuple[int, Source]]] = {}
    prefix = f"{dotted}#"
    for key, source in (obj.value_sources or {}).items():
        if key.startswith(prefix) and "@" in key:
            line, _, column = key[len(prefix):].partition("@")
            found.setdefault(int(line), []).append((int(column), source))
    return {n: tuple(sorted(at)) for n, at in found.items()}


def flatten(node: Any, prefix: tuple[str | int, ...] = ()) -> dict[tuple[str | int, ...], Any]:
    """Scalar leaves of a YAML/JSON tree keyed by their key path."""
    out: dict[tuple[str | int, ...], Any] = {}
    if isinstance(node, dict):
        for k, v in node.items():
            out.update(flatten(v, (*prefix, str(k))))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.update(flatten(v, (*prefix, i)))
    else:
        out[prefix] = node
    return out
