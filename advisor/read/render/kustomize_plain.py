"""A kustomization read as written when kustomize cannot build it (it failed, or no binary
is on PATH): its resource files as plain manifests, with the two things the rest of the
run needs to link a pod to its database and that need no build:
- the namespace kustomize gives each file's objects: the `namespace:` of the outermost
  kustomization on the way from the built one to the one listing the file (kustomize
  applies each layer's namespace transformer after the layers below it, so the outer
  one wins); kinds without a namespace are left alone;
- the ConfigMaps and Secrets the tree's configMapGenerator and secretGenerator make,
  under the name the manifests use (kustomize adds a hash suffix and renames the
  references with it, so the written names still meet), from their literals, env
  files and files (kubernetes-sigs/kustomize api/kv/kv.go: parseLiteralSource with
  removeQuotes, keyValuesFromLine), `behavior: merge` or `replace` applied to the
  object of that name read before.
Patches, replicas, images, prefixes and labels are not applied (the notice says so)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from advisor.model import ConfigProblem, Source
from advisor.read.flux import CLUSTER_SCOPED
from advisor.read.fs import InputError, Root
from advisor.read.render import field_path
from advisor.read.render.kustomize_tree import Layer, Tree, as_list, generator_file, is_remote
from advisor.read.render.kustomize_tree import problem as tree_problem
from advisor.read.sources.k8s import K8sObject, line_of

_GENERATORS = (("configMapGenerator", "ConfigMap"), ("secretGenerator", "Secret"))


def namespace_of(tree: Tree, directory: Path) -> str | None:
    """The namespace kustomize gives the objects of the kustomization in `directory`:
    the outermost `namespace:` on its way up to the built kustomization."""
    layers = {layer.directory: layer for layer in tree.layers}
    found: str | None = None
    seen: set[Path] = set()
    current: Path | None = directory
    while current is not None and current not in seen:
        seen.add(current)
        layer = layers.get(current)
        namespace = layer.doc.get("namespace") if layer is not None else None
        if isinstance(namespace, str) and namespace.strip():
            found = namespace.strip()
        current = tree.included_by.get(current)
    return found


def in_namespace(objects: list[K8sObject], namespace: str | None) -> list[K8sObject]:
    if not namespace:
        return objects
    return [obj if obj.kind in CLUSTER_SCOPED or obj.namespace == namespace
            else replace(obj, namespace=namespace) for obj in objects]


def generated(root: Root, tree: Tree, shown: str, objects: list[K8sObject]
              ) -> tuple[list[K8sObject], list[ConfigProblem]]:
    """`objects` (the resource files' objects, namespaced) with the tree's generated
    ConfigMaps and Secrets added, base-most kustomization first; a `merge` or `replace`
    generator edits the object of its name read before it."""
    out = list(objects)
    problems: list[ConfigProblem] = []
    for layer in tree.layers:
        for gen_key, kind in _GENERATORS:
            for i, item in enumerate(as_list(layer.doc.get(gen_key))):
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    continue
                # the kustomizations' namespace transformer runs after the generators and
                # sets every object's namespace: an item's own `namespace:` stands only
                # where no kustomization on the way sets one (kubectl kustomize 5.5.0)
                namespace = namespace_of(tree, layer.directory) or item.get("namespace")
                values = _values(root, layer, gen_key, i, item, problems)
                _add(out, layer, gen_key, i, kind, item, str(namespace) if namespace else None,
                     values, shown)
    return out, problems


# key -> (value, where it is set, whether the value is a file's text traced line by line)
Values = dict[str, tuple[str, Source, bool]]


def _add(out: list[K8sObject], layer: Layer, gen_key: str, i: int, kind: str, item: dict,
         namespace: str | None, values: Values, shown: str) -> None:
    name = str(item["name"])
    behavior = str(item.get("behavior") or "create")
    earlier = next((j for j in range(len(out) - 1, -1, -1)
                    if out[j].kind == kind and out[j].name == name
                    and (out[j].namespace or None) == namespace), None)
    if behavior == "merge" and earlier is not None:
        values = {**_held(out[earlier]), **values}
    line0 = line_of(layer.doc, gen_key, i)
    obj = _object(kind, name, namespace, values, layer.shown,
                  line0 + 1 if line0 is not None else 1, shown)
    if behavior in ("merge", "replace") and earlier is not None:
        out[earlier] = obj
    else:
        out.append(obj)


def _object(kind: str, name: str, namespace: str | None, values: Values, path: str,
            line: int, shown: str) -> K8sObject:
    """A generated object as kustomize prints it (a Secret's data base64-encoded), each
    key traced to the line that set it."""
    data = {key: (base64.b64encode(value.encode()).decode() if kind == "Secret" else value)
            for key, (value, _src, _file) in values.items()}
    sources = {field_path("data", key): src for key, (_value, src, _file) in values.items()}
    for key, (value, src, file) in values.items():
        # a file's text (a postgresql.conf): each of its lines at its own line
        for n in range(1, len(value.splitlines()) + 1) if file else ():
            sources[f"{field_path('data', key)}#{n}"] = replace(src, line=n)
    return K8sObject(kind=kind, api_version="v1", name=name, namespace=namespace,
                     body={"apiVersion": "v1", "kind": kind,
                           "metadata": {"name": name, **({"namespace": namespace}
                                                         if namespace else {})},
                           "data": data},
                     path=path, line=line, origin=f"kustomize-plain:{shown}",
                     value_sources=sources)


def _held(obj: K8sObject) -> Values:
    """What a ConfigMap or Secret read before holds, each key at its own line."""
    from advisor.read.workloads import configmap_index

    data = next(iter(configmap_index([obj]).values()), None)
    return {} if data is None else {key: (value, data.source(key), False)
                                    for key, value in data.data.items()}


def _values(root: Root, layer: Layer, gen_key: str, i: int, item: dict,
            problems: list[ConfigProblem]) -> Values:
    """The keys a generator entry sets, in kustomize's order: env files, literals,
    files (a later key wins)."""
    values: Values = {}
    name = str(item["name"])
    envs = as_list(item.get("envs")) + ([item["env"]] if isinstance(item.get("env"), str)
                                        else [])
    for entry in envs:
        text, shown = _read(root, layer, entry, f"{gen_key} {name}", problems)
        for number, raw in enumerate((text or "").splitlines(), start=1):
            line = raw.lstrip().removeprefix("\ufeff") if number == 1 else raw.lstrip()
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition("=")
            values[key] = (value, Source(path=shown, line=number, key=key), False)
    for j, literal in enumerate(as_list(item.get("literals"))):
        if isinstance(literal, str) and "=" in literal and not literal.startswith("="):
            key, _, value = literal.partition("=")
            line0 = line_of(layer.doc, gen_key, i, "literals", j)
            values[key] = (_unquoted(value), Source(
                path=layer.shown, line=line0 + 1 if line0 is not None else None,
                key=f"{name}: {key}"), False)
    for entry in as_list(item.get("files")):
        if not isinstance(entry, str) or is_remote(entry):
            continue  # a remote file: the scan reported it, the object lacks that key
        path = generator_file(entry)
        key = entry.partition("=")[0] if "=" in entry else Path(path).name
        text, shown = _read(root, layer, path, f"{gen_key} {name}", problems)
        if text is not None:
            values[key] = (text, Source(path=shown, line=1, key=key), True)
    return values


def _read(root: Root, layer: Layer, entry: Any, what: str, problems: list[ConfigProblem]
          ) -> tuple[str | None, str]:
    if not isinstance(entry, str):
        return None, layer.shown
    try:
        real = root.resolve(entry.strip(), relative_to=layer.directory)
    except InputError:
        return None, layer.shown  # outside the root: the scan's PA901 error says so
    if not real.is_file():
        return None, layer.shown  # not there: the scan's PA901 error says so
    try:
        return root.read_text(real), root.rel(real)
    except InputError as exc:
        problems.append(tree_problem(layer.shown, f"{what}: {entry!r} not read: "
                                     f"{exc.message}"))
        return None, layer.shown


def _unquoted(value: str) -> str:
    """kustomize's removeQuotes: surrounding quotes of one kind, on both sides."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
