"""kustomize's output placed back in the files it came from: each object reported in the
file its `config.kubernetes.io/origin` annotation names, at that file's lines (the
annotation is removed again), and its overlay-set fields traced
(advisor.read.render.kustomize_trace)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.read.fs import InputError, Root
from advisor.read.render.kustomize_trace import match_item, overlay_sources
from advisor.read.render.kustomize_tree import Tree
from advisor.read.sources.k8s import K8sObject, get, k8s_objects, line_of, load_yaml_stream

ORIGIN = "config.kubernetes.io/origin"


def place(root: Root, top: Path, tree: Tree, obj: K8sObject) -> None:
    origin_text = obj.annotations.get(ORIGIN)
    _drop_origin_annotation(obj)
    if not origin_text:
        return
    docs, _ = load_yaml_stream(origin_text, ORIGIN)
    origin = docs[0][0] if docs else {}
    rel = get(origin, "path") or get(origin, "configuredIn")
    if not isinstance(rel, str):
        return
    try:
        source_file = root.resolve(rel, relative_to=top)
    except InputError:
        return
    shown = root.rel(source_file)
    base = _base_object(root, source_file, shown, obj) if get(origin, "path") else None
    if base is not None:
        _relocate_pair(obj.body, base.body, (base.line or 1) - 1 - base.line_offset)
        obj.line = base.line
    else:
        line0 = (line_of_configured(root, source_file, origin) or 1) - 1
        _relocate_all(obj.body, line0)
        obj.line = line0 + 1
    obj.path = shown
    obj.line_offset = 0
    obj.value_sources = overlay_sources(root, tree, obj, base)


def line_of_configured(root: Root, kfile: Path, origin: Any) -> int | None:
    """A generated object (configMapGenerator): the generator entry's line."""
    kind = get(origin, "configuredBy", "kind")
    try:
        docs, _ = load_yaml_stream(root.read_text(kfile), root.rel(kfile))
    except InputError:
        return None
    doc = docs[0][0] if docs else {}
    key = {"ConfigMapGenerator": "configMapGenerator",
           "SecretGenerator": "secretGenerator"}.get(str(kind))
    line0 = line_of(doc, key) if key else None
    return None if line0 is None else line0 + 1


def _drop_origin_annotation(obj: K8sObject) -> None:
    meta = obj.body.get("metadata")
    annotations = get(meta, "annotations")
    if isinstance(annotations, dict) and ORIGIN in annotations:
        del annotations[ORIGIN]
        if not annotations:
            del meta["annotations"]


def _base_object(root: Root, path: Path, shown: str, obj: K8sObject) -> K8sObject | None:
    try:
        text = root.read_text(path)
    except InputError:
        return None
    objects, _ = k8s_objects(text, shown)
    same_kind = [o for o in objects if o.kind == obj.kind]
    exact = [o for o in same_kind if o.name == obj.name]
    if exact:
        return exact[0]
    # namePrefix/nameSuffix: the original name is inside the rendered one.
    inside = sorted((o for o in same_kind if o.name in obj.name), key=lambda o: -len(o.name))
    if inside:
        return inside[0]
    return same_kind[0] if len(same_kind) == 1 else None


def _relocate_pair(node: Any, base: Any, fallback0: int) -> None:
    """Give every node of the rendered `node` the line of its counterpart in `base`
    (0-based), or the nearest enclosing counterpart's line when the overlay added it."""
    lc = getattr(node, "lc", None)
    if isinstance(node, dict):
        for k in list(node.keys()):
            base_child = base.get(k) if isinstance(base, dict) else None
            line0 = line_of(base, k) if isinstance(base, dict) and k in base else None
            here = fallback0 if line0 is None else line0
            if lc is not None:
                lc.data[k] = [here, 0, here, 0]
            _relocate_pair(node[k], base_child, here)
    elif isinstance(node, list):
        base_items = base if isinstance(base, list) else []
        for i, item in enumerate(node):
            counterpart = match_item(base_items, item, i)
            here = fallback0
            if counterpart is not None:
                j = next(n for n, x in enumerate(base_items) if x is counterpart)
                got = line_of(base_items, j)
                here = fallback0 if got is None else got
            if lc is not None:
                lc.data[i] = [here, 0]
            _relocate_pair(item, counterpart, here)
    if lc is not None:
        lc.line = fallback0


def _relocate_all(node: Any, line0: int) -> None:
    lc = getattr(node, "lc", None)
    if lc is not None:
        lc.line = line0
        for k in list(lc.data.keys()):
            lc.data[k] = [line0, 0, line0, 0] if isinstance(node, dict) else [line0, 0]
    if isinstance(node, dict):
        for v in node.values():
            _relocate_all(v, line0)
    elif isinstance(node, list):
        for v in node:
            _relocate_all(v, line0)
