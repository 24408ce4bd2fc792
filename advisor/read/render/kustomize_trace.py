"""Which overlay line set each field kustomize changed (`K8sObject.value_sources`):
`replicas:` and `images:` entries, strategic-merge patches (files, inline `patch:`,
patchesStrategicMerge; list items matched by `name`), JSON 6902 patches (replace/add of
a path), and configMapGenerator/secretGenerator literals and env files. Labels,
prefixes, namespaces and replacements are applied but not traced to a line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from advisor.model import Source
from advisor.read.fs import InputError, Root
from advisor.read.render import field_path, flatten
from advisor.read.render.kustomize_tree import Layer, Tree, as_list
from advisor.read.sources.k8s import K8sObject, block_offset, get, line_of, load_yaml_stream

Key = tuple[str | int, ...]


def match_item(items: list[Any], item: Any, index: int) -> Any:
    """Strategic-merge list matching: by `name` when both have one, else by index."""
    name = item.get("name") if isinstance(item, dict) else None
    if name is not None:
        return next((x for x in items if isinstance(x, dict) and x.get("name") == name), None)
    return items[index] if index < len(items) else None


def overlay_sources(root: Root, tree: Tree, obj: K8sObject, base: K8sObject | None
                    ) -> dict[str, Source]:
    """Field path -> overlay line, for fields the overlays set; base-most layer first so
    the top overlay wins, as kustomize applies them."""
    found: dict[str, Source] = {}
    original = base.name if base is not None else obj.name
    names = {original, obj.name}
    for layer in tree.layers:
        doc = layer.doc
        _replicas(layer, doc, obj, names, found)
        _images(layer, doc, obj, found)
        _patches(root, layer, doc, obj, names, found)
        _generators(root, layer, doc, obj, found)
    return found


def _at(layer: Layer, node: Any, *keys: str | int, key: str) -> Source:
    line0 = line_of(node, *keys)
    return Source(path=layer.shown, line=None if line0 is None else line0 + 1, key=key)


# Kinds kustomize's ReplicaCountTransformer edits (api/konfig/builtinpluginconsts).
REPLICA_KINDS = ("Deployment", "ReplicationController", "ReplicaSet", "StatefulSet")


def _replicas(layer: Layer, doc: Any, obj: K8sObject, names: set[str],
              found: dict[str, Source]) -> None:
    if obj.kind not in REPLICA_KINDS:
        return
    for i, item in enumerate(as_list(doc.get("replicas"))):
        if (isinstance(item, dict) and item.get("name") in names and "count" in item
                and _same(get(obj.body, "spec", "replicas"), item["count"])):
            found["spec.replicas"] = _at(layer, doc, "replicas", i, "count",
                                         key=f"replicas[{item['name']}].count")


def _images(layer: Layer, doc: Any, obj: K8sObject, found: dict[str, Source]) -> None:
    images = as_list(doc.get("images"))
    if not images:
        return
    for path, value in flatten(obj.body).items():
        if not path or path[-1] != "image" or not isinstance(value, str):
            continue
        for i, item in enumerate(images):
            if not isinstance(item, dict) or not item.get("name"):
                continue
            new = item.get("newName") or item["name"]
            if value.split("@")[0].rsplit(":", 1)[0] in (new, item["name"]):
                which = next((k for k in ("newTag", "digest", "newName") if k in item), "name")
                found[field_path(*path)] = _at(layer, doc, "images", i, which,
                                               key=f"images[{item['name']}].{which}")


def _patch_targets(patch_doc: Any, selector: Any, obj: K8sObject, names: set[str]) -> bool:
    if isinstance(selector, dict) and selector:
        kind = selector.get("kind")
        name = selector.get("name")
        if kind and kind != obj.kind:
            return False
        if name:
            try:
                if not any(re.fullmatch(str(name), n) for n in names):
                    return False
            except re.error:
                return False
        return True
    if isinstance(patch_doc, dict):
        return patch_doc.get("kind") == obj.kind and get(patch_doc, "metadata", "name") in names
    return False


def _patches(root: Root, layer: Layer, doc: Any, obj: K8sObject, names: set[str],
             found: dict[str, Source]) -> None:
    entries: list[tuple[Any, Any]] = []  # (entry, selector)
    for item in as_list(doc.get("patches")) + as_list(doc.get("patchesJson6902")):
        if isinstance(item, dict):
            entries.append((item, item.get("target")))
    for item in as_list(doc.get("patchesStrategicMerge")):
        entries.append(({"path": item} if "\n" not in str(item) else {"patch": item}, None))
    for entry, selector in entries:
        if "path" in entry and isinstance(entry["path"], str):
            try:
                real = root.resolve(entry["path"], relative_to=layer.directory)
                text = root.read_text(real)
            except InputError:
                continue
            shown, offset = root.rel(real), 0
        elif isinstance(entry.get("patch"), str):
            text = entry["patch"]
            shown = layer.shown
            offset = block_offset(entry, "patch") if hasattr(entry, "lc") else 0
        else:
            continue
        docs, _ = load_yaml_stream(text, shown, offset)
        for patch_doc, _start in docs:
            if isinstance(patch_doc, list):
                if _patch_targets(None, selector, obj, names):
                    _json6902(patch_doc, obj, shown, offset, found)
            elif _patch_targets(patch_doc, selector, obj, names):
                _strategic(patch_doc, obj.body, (), shown, offset, found)


def _strategic(patch: Any, target: Any, prefix: Key, shown: str, offset: int,
               found: dict[str, Source]) -> None:
    """Record the line of every scalar a strategic-merge patch sets, at the rendered
    field it lands on (list items matched by `name`, as the merge keys of containers,
    env and volumes are)."""
    if isinstance(patch, dict):
        for k, v in patch.items():
            if prefix == () and k in ("apiVersion", "kind"):
                continue
            if prefix == ("metadata",) and k in ("name", "namespace"):
                continue
            child = target.get(k) if isinstance(target, dict) else None
            if isinstance(v, dict | list):
                _strategic(v, child, (*prefix, str(k)), shown, offset, found)
            elif _same(child, v):  # not overridden later, and the patch did apply here
                _patch_source(patch, k, shown, offset, (*prefix, k), found)
    elif isinstance(patch, list):
        items = target if isinstance(target, list) else []
        for i, item in enumerate(patch):
            counterpart = match_item(items, item, i)
            if counterpart is None:
                continue
            j = next(n for n, x in enumerate(items) if x is counterpart)
            if isinstance(item, dict | list):
                _strategic(item, counterpart, (*prefix, j), shown, offset, found)
            elif _same(counterpart, item):
                _patch_source(patch, i, shown, offset, (*prefix, j), found)


def _same(rendered: Any, written: Any) -> bool:
    """Did this value survive into the output? (a later layer may have replaced it, or
    a patch's target selector may not have matched this object)."""
    if rendered is None:
        return False
    if isinstance(rendered, bool) or isinstance(written, bool):
        return str(rendered).lower() == str(written).lower()
    return str(rendered).strip() == str(written).strip()


def _patch_source(node: Any, key: str | int, shown: str, offset: int, path: Key,
                  found: dict[str, Source]) -> None:
    line0 = line_of(node, key)
    dotted = field_path(*path)
    found[dotted] = Source(path=shown, line=None if line0 is None else line0 + 1 + offset,
                           key=f"patch: {dotted}")
    value = node[key]
    if isinstance(value, str) and "\n" in value and isinstance(key, str):
        start = block_offset(node, key) + offset  # content line n is at start + n
        for n in range(1, len(value.splitlines()) + 1):
            found[f"{dotted}#{n}"] = Source(path=shown, line=start + n, key=f"patch: {dotted}")


def _json6902(ops: list[Any], obj: K8sObject, shown: str, offset: int,
              found: dict[str, Source]) -> None:
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or op.get("op") not in ("replace", "add"):
            continue
        pointer = str(op.get("path", ""))
        tokens: list[str | int] = []
        node = obj.body
        for raw in pointer.split("/")[1:]:
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list):
                idx = len(node) - 1 if token == "-" else int(token) if token.isdigit() else -1
                if not 0 <= idx < len(node):
                    break
                tokens.append(idx)
                node = node[idx]
            else:
                tokens.append(token)
                node = get(node, token)
        line0 = line_of(ops, i, "value") if "value" in op else line_of(ops, i)
        line = None if line0 is None else line0 + 1 + offset
        value = op.get("value")
        if isinstance(value, dict | list):
            for sub, scalar in flatten(value).items():
                if not _same(get(obj.body, *tokens, *sub), scalar):
                    continue
                sub0 = line_of(value, *sub)
                found[field_path(*tokens, *sub)] = Source(
                    path=shown, line=line if sub0 is None else sub0 + 1 + offset,
                    key=f"patch: {pointer}")
        elif _same(get(obj.body, *tokens), value):
            found[field_path(*tokens)] = Source(path=shown, line=line, key=f"patch: {pointer}")


def _generators(root: Root, layer: Layer, doc: Any, obj: K8sObject,
                found: dict[str, Source]) -> None:
    gen_key = {"ConfigMap": "configMapGenerator", "Secret": "secretGenerator"}.get(obj.kind)
    if gen_key is None:
        return
    for i, item in enumerate(as_list(doc.get(gen_key))):
        if not isinstance(item, dict) or not item.get("name"):
            continue
        if str(item["name"]) not in obj.name:
            continue
        for j, literal in enumerate(as_list(item.get("literals"))):
            if isinstance(literal, str) and "=" in literal:
                key, _, value = literal.partition("=")
                key = key.strip()
                if not _same(get(obj.body, "data", key), value.strip().strip("\"'")) \
                        and obj.kind == "ConfigMap":
                    continue
                found[field_path("data", key)] = _at(layer, doc, gen_key, i, "literals", j,
                                                     key=f"{item['name']}: {key}")
        envs = as_list(item.get("envs")) + ([item["env"]] if isinstance(item.get("env"), str)
                                            else [])
        for env_file in envs:
            try:
                real = root.resolve(env_file, relative_to=layer.directory)
                text = root.read_text(real)
            except InputError:
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                stripped = line.strip()
                if stripped and not stripped.startswith("#") and "=" in stripped:
                    key, _, value = stripped.partition("=")
                    key = key.strip()
                    if obj.kind == "ConfigMap" and not _same(get(obj.body, "data", key),
                                                             value.strip()):
                        continue
                    found[field_path("data", key)] = Source(path=root.rel(real), line=number,
                                                            key=key)
        for entry in as_list(item.get("files")):
            if not isinstance(entry, str):
                continue
            key, _, name = entry.partition("=")
            path = name or key
            key = key if name else Path(path).name
            try:
                real = root.resolve(path, relative_to=layer.directory)
                lines = root.read_text(real).splitlines()
            except InputError:
                continue
            found[field_path("data", key)] = Source(path=root.rel(real), line=1, key=key)
            for n in range(1, len(lines) + 1):
                found[f"{field_path('data', key)}#{n}"] = Source(path=root.rel(real), line=n,
                                                                  key=key)
