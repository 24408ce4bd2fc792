"""Flux Kustomization `spec.postBuild` variable substitution: the kustomize-controller
replaces `${VAR}` in every object it builds from `spec.path` with the variables of
`postBuild.substitute` and of the ConfigMaps and Secrets `postBuild.substituteFrom`
names, so that home-ops style app folders (`name: ${APP}`, a database host
`${APP}-rw.database.svc`) are read as deployed, not as the same placeholder in every
folder.

What Flux does (fluxcd/pkg kustomize/kustomize_varsub.go, drone/envsubst, read there):
- the variables: each substituteFrom source in order (ConfigMap `data`, Secret `data`,
  newlines removed; a later one wins), then `substitute` over them; an optional source
  that does not exist is skipped; nothing is substituted when there are no variables;
- looked up in the Kustomization's own namespace;
- `${NAME}` is the value, "" when the name has none; `${NAME:=d}`, `${NAME:-d}`,
  `${NAME=d}`, `${NAME:?d}`, `${NAME:+d}` all give d when the value is empty (drone's
  toDefault); `$$` is one `$` and `\\\\` / `\\/` one character; a `-` belongs to the name
  (`${A-b}` is the variable `A-b`); a plain `$NAME` is text;
- an object labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled`
  is left alone.

What is not read is said, never guessed: a Secret that is encrypted (SOPS) or not in the
repository, a ConfigMap not found, makes the variables it may hold unknown. A placeholder
whose variable may come from such a source is left as written (readers then report it
unread, as without Flux: advisor.link.urls), unless it has a default, which is taken
with a notice. The substitution functions other than defaults (`${A:1:2}`, `${A/x/y}`,
`${A^^}`) are left as written too.

A Kustomization's own fields are those of the folder that builds it (a child's
`substitute: {CLUSTER: ${CLUSTER}}`, a `path` with a variable): the variables are worked
out from the top down. A parent's `spec.patches` that sets `postBuild` on every child
Kustomization (a strategic merge patch of kind Kustomization) is applied first.

Pure functions over loaded objects.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from advisor.model import Source
from advisor.read.flux import builders, deepest_folder, is_flux_kustomization
from advisor.read.releases import FLUX_KUSTOMIZE_GROUP
from advisor.read.sources.k8s import K8sObject, get
from advisor.read.yamlnodes import BlockStr, PosList, PosMap

DISABLED_KEY = "kustomize.toolkit.fluxcd.io/substitute"
MAX_ROUNDS = 6  # parents' variables reach children through at most this many levels

# Fields Kubernetes types as strings: a value substituted into them stays a string,
# as it must have been quoted in a manifest that applies. Elsewhere a whole `${N}`
# that gives an integer is an integer, as Flux's YAML round trip reads an unquoted one
# (`replicas: ${REPLICAS}`).
_STRING_FIELDS = frozenset({"value", "data", "stringData", "annotations", "labels", "args",
                            "command", "name", "namespace", "image", "host", "hosts"})
_INT = re.compile(r"-?(0|[1-9][0-9]{0,9})")


class Variable(Struct, frozen=True):
    value: str
    source: Source


class Variables(Struct):
    """The variables of one Flux Kustomization, for the folder it builds."""

    kustomization: str  # "Kustomization/ns/name (path:line)"
    values: dict[str, Variable]
    # sources not read (an encrypted Secret, a ConfigMap not in the repository): any
    # variable not in `values` may be in them
    unread: list[str]
    # how many variables Flux has: none (and no unread source) means no substitution
    any_known: bool = True


class Expanded(Struct):
    text: str
    used: list[str]  # variable names substituted (for sources)
    unknown: list[str]  # placeholders left as written
    defaulted: list[str]  # defaults taken while a source was not read


def expand(text: str, variables: Variables) -> Expanded:
    """`text` with its placeholders replaced as Flux's envsubst does; placeholders whose
    value may come from a source not read are kept as written."""
    out: list[str] = []
    used: list[str] = []
    unknown: list[str] = []
    defaulted: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "$" and i + 1 < n and text[i + 1] == "{":
            end, node = _placeholder(text, i)
            if node is None:
                out.append(text[i:end])  # not Flux's syntax: left, as a failed parse
                unknown.append(text[i:end])
                i = end
                continue
            got = _evaluate(node, variables, used, defaulted)
            if got is None:
                out.append(text[i:end])
                unknown.append(text[i:end])
            else:
                out.append(got)
            i = end
            continue
        if c == "$" and i + 1 < n and text[i + 1] == "$":
            out.append("$")
            i += 2
            continue
        if c == "\\" and i + 1 < n and text[i + 1] in "/\\":
            out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return Expanded("".join(out), used, unknown, defaulted)


# A parsed placeholder: (name, op, default parts) where op is None for `${NAME}`, a
# default operator, or "?" for a function we do not evaluate.
_Node = tuple[str, str | None, list[Any]]
_DEFAULT_OPS = (":=", ":-", ":?", ":+", "=")


def _placeholder(text: str, start: int) -> tuple[int, _Node | None]:
    """The placeholder at text[start] ("${"): (index after it, node); node None when it
    is not one Flux evaluates as a variable or a default."""
    i = start + 2
    n = len(text)
    j = i
    while j < n and (text[j].isalnum() or text[j] in "_-"):
        j += 1
    name = text[i:j]
    if not name:
        close = text.find("}", j)
        return (n if close < 0 else close + 1), None
    if j < n and text[j] == "}":
        return j + 1, (name, None, [])
    op = next((o for o in _DEFAULT_OPS if text.startswith(o, j)), None)
    if op is None:
        close = text.find("}", j)
        return (n if close < 0 else close + 1), None
    # the default: text up to the closing brace, with nested placeholders
    k = j + len(op)
    parts: list[Any] = []
    chunk: list[str] = []
    while k < n and text[k] != "}":
        if text.startswith("${", k):
            if chunk:
                parts.append("".join(chunk))
                chunk = []
            k, inner = _placeholder(text, k)
            if inner is None:
                close = text.find("}", k)
                return (n if close < 0 else close + 1), None
            parts.append(inner)
            continue
        chunk.append(text[k])
        k += 1
    if k >= n:
        return n, None
    if chunk:
        parts.append("".join(chunk))
    return k + 1, (name, op, parts)


def _evaluate(node: _Node, variables: Variables, used: list[str], defaulted: list[str]
              ) -> str | None:
    name, op, parts = node
    known = variables.values.get(name)
    if known is not None and known.value != "":
        used.append(name)
        return known.value
    if op is None:
        if known is not None or not variables.unread:
            return ""  # Flux: a name with no value is the empty string
        return None
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, str):
            pieces.append(part)
            continue
        got = _evaluate(part, variables, used, defaulted)
        if got is None:
            return None
        pieces.append(got)
    if known is None and variables.unread:
        defaulted.append(name)
    return "".join(pieces)


# --- the variables of each Kustomization ----------------------------------------------


def _ref(obj: K8sObject) -> str:
    return f"{obj.ref} ({obj.path}:{obj.line})"


def _is_encrypted(body: Any) -> bool:
    return isinstance(body, dict) and "sops" in body


def _source_values(obj: K8sObject) -> dict[str, Variable] | None:
    """A ConfigMap's or Secret's variables; None when they cannot be read (encrypted,
    a Secret value that is not base64)."""
    if _is_encrypted(obj.body):
        return None
    out: dict[str, Variable] = {}
    if obj.kind == "Secret":
        for key, raw in (get(obj.body, "data") or {}).items():
            try:
                value = base64.b64decode(str(raw), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError, ValueError):
                return None
            out[str(key)] = Variable(value.replace("\n", ""), obj.source("data", key))
        for key, value in (get(obj.body, "stringData") or {}).items():
            if isinstance(value, str) and value.startswith("ENC["):
                return None
            out[str(key)] = Variable(str(value).replace("\n", ""),
                                     obj.source("stringData", key))
        return out
    data = get(obj.body, "data") or {}
    if not isinstance(data, dict):
        return None
    for key, value in data.items():
        if isinstance(value, str) and value.startswith("ENC["):
            return None
        out[str(key)] = Variable("" if value is None else str(value).replace("\n", ""),
                                 obj.source("data", key))
    return out


class Sources:
    """The ConfigMaps and Secrets substituteFrom may name, by kind and name, each read
    once (every app's Kustomization names the same cluster settings, every round)."""

    def __init__(self, objects: list[K8sObject]) -> None:
        self.by_name: dict[tuple[str, str], list[K8sObject]] = {}
        for obj in objects:
            if obj.kind in ("ConfigMap", "Secret"):
                self.by_name.setdefault((obj.kind, obj.name), []).append(obj)
        self.read: dict[int, dict[str, Variable] | None] = {}

    def find(self, kind: str, name: str, namespace: str | None) -> K8sObject | None:
        found = self.by_name.get((kind, name), [])
        if namespace is not None:
            exact = [o for o in found if o.namespace == namespace]
            if exact:
                return exact[0]
            # a ConfigMap whose manifest names no namespace is applied into the one Flux
            # gives it; one named elsewhere is not this one
            found = [o for o in found if o.namespace is None]
        return found[0] if found else None

    def values(self, obj: K8sObject) -> dict[str, Variable] | None:
        if id(obj) not in self.read:
            self.read[id(obj)] = _source_values(obj)
        return self.read[id(obj)]


def variables_of(ks: K8sObject, body: Any, sources: Sources) -> Variables | None:
    """The variables Flux has for Kustomization `ks` whose spec is `body` (its own
    fields substituted, patches applied); None without a postBuild."""
    post = get(body, "spec", "postBuild")
    if not isinstance(post, dict):
        return None
    values: dict[str, Variable] = {}
    unread: list[str] = []
    read_any = False
    for item in get(post, "substituteFrom") or []:
        if not isinstance(item, dict):
            continue
        kind, name = str(item.get("kind") or ""), str(item.get("name") or "")
        optional = item.get("optional") is True
        found = sources.find(kind, name, ks.namespace) if kind in ("ConfigMap", "Secret") \
            else None
        if found is None:
            if not optional or kind == "Secret":
                # a Secret is seldom in a repository unencrypted: one not found is one
                # not read, optional or not
                unread.append(f"{kind} {name} (not in the repository)")
            continue
        got = sources.values(found)
        if got is None:
            unread.append(f"{kind} {name} ({found.path}:{found.line}: encrypted)")
            continue
        read_any = read_any or bool(got)
        values.update(got)
    substitute = post.get("substitute")
    if isinstance(substitute, dict):
        for key, value in substitute.items():
            values[str(key)] = Variable(
                "" if value is None else str(value).replace("\n", ""),
                ks.source("spec", "postBuild", "substitute", key))
    return Variables(_ref(ks), values, unread, any_known=bool(values) or read_any)


def _child_patches(body: Any) -> list[tuple[dict, dict]]:
    """The strategic-merge patches of a Kustomization's `spec.patches` that target Flux
    Kustomizations (what it sets on the children it builds), as (target, mapping)."""
    import yaml

    out = []
    for item in get(body, "spec", "patches") or []:
        if not isinstance(item, dict):
            continue
        target = item.get("target") or {}
        if not isinstance(target, dict) or target.get("kind") != "Kustomization":
            continue
        try:
            patch = yaml.safe_load(str(item.get("patch") or ""))
        except yaml.YAMLError:
            continue
        if isinstance(patch, dict) and str(patch.get("apiVersion", "")).startswith(
                FLUX_KUSTOMIZE_GROUP) and isinstance(patch.get("spec"), dict):
            # the patch's metadata (name: _) only stands for the target
            out.append((target, {"spec": patch["spec"]}))
    return out


def _selects(target: dict, obj: K8sObject) -> bool:
    """Whether a patch's `target` selects the Kustomization `obj`, as kustomize selects
    (api/types/selector.go: group, version, name and namespace are regular expressions
    matched whole, `^(?:...)$`; label and annotation selectors as Kubernetes parses
    them). A selector that cannot be read selects nothing (the patch is not applied)."""
    group, _, version = obj.api_version.rpartition("/")
    fields = (("group", group), ("version", version), ("name", obj.name),
              ("namespace", obj.namespace or ""))
    for key, value in fields:
        pattern = target.get(key)
        if pattern in (None, ""):
            continue
        try:
            if re.fullmatch(f"(?:{pattern})", value) is None:
                return False
        except (re.error, TypeError):
            return False
    metadata = obj.body.get("metadata") if isinstance(obj.body, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    for key, field in (("labelSelector", "labels"), ("annotationSelector", "annotations")):
        selector = target.get(key)
        if selector in (None, ""):
            continue
        have = metadata.get(field)
        matched = _selector_matches(str(selector), have if isinstance(have, dict) else {})
        if not matched:
            return False
    return True


# One requirement of a Kubernetes label selector (k8s.io/apimachinery labels.Parse):
# `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a, b)`, `key notin (a, b)`.
_REQUIREMENT = re.compile(
    r"\s*(?:(?P<absent>!)\s*(?P<akey>[\w./-]+)"
    r"|(?P<key>[\w./-]+)\s*(?:(?P<op>==|=|!=)\s*(?P<value>[\w.-]*)"
    r"|\s+(?P<set>in|notin)\s*\((?P<values>[^)]*)\))?)\s*$")


def _selector_matches(selector: str, labels: dict) -> bool | None:
    """Whether `labels` satisfy `selector`; None when it cannot be read."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(selector):
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(selector[start:i])
            start = i + 1
    parts.append(selector[start:])
    have = {str(k): str(v) for k, v in labels.items()}
    for part in parts:
        m = _REQUIREMENT.fullmatch(part)
        if m is None:
            return None
        if m["absent"]:
            if m["akey"] in have:
                return False
            continue
        key = m["key"]
        if m["op"] in ("=", "=="):
            ok = have.get(key) == m["value"]
        elif m["op"] == "!=":
            ok = have.get(key) != m["value"]
        elif m["set"]:
            values = {v.strip() for v in m["values"].split(",") if v.strip()}
            ok = have.get(key) in values if m["set"] == "in" else have.get(key) not in values
        else:
            ok = key in have
        if not ok:
            return False
    return True


def _merged(body: Any, patch: Any) -> Any:
    """A JSON merge patch (what a strategic merge patch is for a custom resource): maps
    merged, anything else replaced."""
    if not isinstance(patch, dict) or not isinstance(body, dict):
        return patch
    out = dict(body)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merged(body.get(key), value)
    return out


class ObjectPatch(Struct, frozen=True):
    """A strategic-merge patch of a Flux Kustomization's `spec.patches` for the objects
    it builds (not a child Kustomization): the mapping merged, and where each of its
    values is written (dotted key -> the Kustomization's file:line)."""

    target: dict
    patch: dict
    sources: dict[str, Source]


def _object_patches(ks: K8sObject) -> tuple[list[ObjectPatch], list[tuple[dict, str]]]:
    """The `spec.patches` of `ks` that patch the objects it builds (kustomize-controller
    adds them to the kustomization it builds, before postBuild substitution: fluxcd/pkg
    kustomize/kustomize_generator.go), and notices for those not applied (a JSON 6902
    list of operations, a patch that cannot be read): what they set is read as the
    folder writes it, never guessed (said when it selects an object built: `skipped`
    holds each with its target)."""
    import yaml

    out: list[ObjectPatch] = []
    skipped: list[tuple[dict, str]] = []
    for i, item in enumerate(get(ks.body, "spec", "patches") or []):
        if not isinstance(item, dict):
            continue
        target = item.get("target")
        text = str(item.get("patch") or "")
        try:
            node = yaml.compose(text)
            patch = yaml.safe_load(text)
        except yaml.YAMLError:
            node, patch = None, None
        if isinstance(patch, dict) and str(patch.get("apiVersion", "")).startswith(
                FLUX_KUSTOMIZE_GROUP):
            continue  # for child Kustomizations: _child_patches
        if (not isinstance(target, dict) or not target) and isinstance(patch, dict):
            # no target: the patch's own group, version, kind and name select (kustomize)
            group, _, version = str(patch.get("apiVersion", "")).rpartition("/")
            target = {"group": group, "version": version, "kind": patch.get("kind"),
                      "name": str(get(patch, "metadata", "name") or "")}
        # A built-in kind's lists merge by key (containers by name: strategic merge),
        # which a JSON merge would replace: such a patch is not evaluated either.
        builtin_lists = isinstance(patch, dict) and "." not in str(
            patch.get("apiVersion", "")).rpartition("/")[0] and _has_list(patch)
        if not isinstance(patch, dict) or not isinstance(patch.get("kind"), str) \
                or builtin_lists:
            where = ks.source("spec", "patches", i)
            selects = target if isinstance(target, dict) else {}
            skipped.append((selects, f"Flux: {_ref(ks)} spec.patches[{i}] "
                            f"({where.path}:{where.line}) "
                            "is not a patch pool-advisor merges (a JSON 6902 list, lists "
                            "of a built-in kind, or unreadable): not evaluated, so the "
                            "objects it targets are read as their folder writes them"))
            continue
        assert isinstance(target, dict)
        body = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")}
        meta = body.get("metadata")
        if isinstance(meta, dict):  # the target's name and namespace stay its own
            meta = {k: v for k, v in meta.items() if k not in ("name", "namespace")}
            body["metadata"] = meta
            if not meta:
                del body["metadata"]
        first = ks.line0(("spec", "patches", i, "patch"))
        base = ks.line if first is None else first + 2 + ks.line_offset  # block below
        sources: dict[str, Source] = {}
        if node is not None:
            _leaf_lines(node, (), base, ks.path, sources)
        out.append(ObjectPatch(target=target, patch=body, sources=sources))
    return out, skipped


def _has_list(node: Any) -> bool:
    if isinstance(node, list):
        return True
    return isinstance(node, dict) and any(_has_list(v) for v in node.values())


def _leaf_lines(node: Any, keys: tuple, base: int, path: str,
                sources: dict[str, Source]) -> None:
    """Each scalar or sequence of a patch's YAML node: its dotted key -> its line in the
    Kustomization's file (`base`: the line of the patch's first line)."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            top = keys == () and k.value in ("apiVersion", "kind")
            own = keys == ("metadata",) and k.value in ("name", "namespace")
            if top or own:
                continue  # not merged: the target's own
            _leaf_lines(v, (*keys, k.value), base, path, sources)
    elif keys:
        dotted = ".".join(keys)
        sources[dotted] = Source(path=path, line=base + node.start_mark.line, key=dotted)


def _selects_object(target: dict, obj: K8sObject) -> bool:
    kind = target.get("kind")
    if kind not in (None, ""):
        try:
            if re.fullmatch(f"(?:{kind})", obj.kind) is None:
                return False
        except (re.error, TypeError):
            return False
    return _selects(target, obj)


def _merged_keeping(body: Any, patch: Any) -> Any:
    """_merged, keeping the positions of what the patch does not replace."""
    if not isinstance(patch, dict) or not isinstance(body, dict):
        return patch
    copy: dict = PosMap() if isinstance(body, PosMap) else {}
    copy.update(body)
    for key, value in patch.items():
        if value is None:
            copy.pop(key, None)
        else:
            copy[key] = _merged_keeping(body.get(key), value)
    if isinstance(body, PosMap):
        try:
            data = body.lc.data
        except AttributeError:
            return copy
        copy.place(body.lc.line, body.lc.col)
        for key, pos in data.items():
            if key in copy:
                copy.lc.data[key] = list(pos)
    return copy


def patched(obj: K8sObject, patches: list[ObjectPatch]) -> K8sObject:
    """`obj` with the patches that select it merged in, each value it sets traced to the
    Kustomization's line."""
    body = obj.body
    traced = dict(obj.value_sources or {})
    for p in patches:
        if _selects_object(p.target, obj):
            body = _merged_keeping(body, p.patch)
            traced.update(p.sources)
    if body is obj.body:
        return obj
    return replace(obj, body=body, value_sources=traced or None)


class Plan(Struct):
    """Variables per folder a Flux Kustomization builds, and the Kustomizations as
    their parents substitute and patch them (for targetNamespace and the rest)."""

    folders: dict[str, Variables]
    kustomizations: dict[int, K8sObject]  # id(object as read) -> as Flux applies it
    # Per folder built: the Kustomization's patches of the objects it builds.
    patches: dict[str, list[ObjectPatch]] = {}
    skipped: dict[str, list[tuple[dict, str]]] = {}


def plan(kustomizations: list[tuple[str, K8sObject]], sources: Sources,
         resolve: Callable[[str], str | None]) -> Plan:
    """`kustomizations`: (folder it sits in, object). Top down: each Kustomization is
    patched and substituted by the one that builds its folder, then its own variables
    are read, until nothing changes (a level deeper per round)."""
    current = {id(obj): obj for _where, obj in kustomizations}
    folders: dict[str, Variables] = {}
    for _round in range(MAX_ROUNDS):
        # folder (or instance label, advisor.read.flux.builders) -> id of the
        # Kustomization building it, as read
        read_as = {id(ks): key for key, ks in current.items()}
        built = {label: read_as[id(ks)]
                 for label, ks in builders(list(current.values()), resolve).items()}
        new_folders: dict[str, Variables] = {}
        for folder, key in built.items():
            found = variables_of(current[key], current[key].body, sources)
            if found is not None:
                new_folders[folder] = found
        # what each parent sets on its children, parsed once a round
        patches = {key: _child_patches(current[key].body) for key in set(built.values())}
        new_current: dict[int, K8sObject] = {}
        for where, obj in kustomizations:
            parent_folder = deepest_folder(where, built)
            ks = obj
            if parent_folder is not None and built[parent_folder] != id(obj):
                body = obj.body
                for target, patch in patches[built[parent_folder]]:
                    if _selects(target, obj):
                        body = _merged(body, patch)
                if body is not obj.body:
                    ks = replace(obj, body=body)
                parent_vars = new_folders.get(parent_folder)
                if parent_vars is not None:
                    ks = substituted(ks, parent_vars)[0]
            new_current[id(obj)] = ks
        stable = _same(new_folders, folders) and all(
            new_current[k].body == current[k].body for k in current)
        folders, current = new_folders, new_current
        if stable:
            break
    read_as = {id(ks): key for key, ks in current.items()}
    patches: dict[str, list[ObjectPatch]] = {}
    skipped: dict[str, list[tuple[dict, str]]] = {}
    for label, ks in builders(list(current.values()), resolve).items():
        found, left = _object_patches(current[read_as[id(ks)]])
        if found:
            patches[label] = found
        if left:
            skipped[label] = left
    return Plan(folders, current, patches, skipped)


def _same(a: dict[str, Variables], b: dict[str, Variables]) -> bool:
    return a.keys() == b.keys() and all(a[k].values == b[k].values and
                                        a[k].unread == b[k].unread for k in a)


def variables_for(place: str, folders: dict[str, Variables]) -> Variables | None:
    """The variables for a folder or file `place`: those of the deepest built folder
    holding it (as targetNamespace: advisor.read.flux.namespace_of)."""
    folder = deepest_folder(place, folders)
    return None if folder is None else folders[folder]


# --- substituting an object -----------------------------------------------------------


class Outcome(Struct):
    unknown: set[str]
    defaulted: set[str]


def substituted(obj: K8sObject, variables: Variables) -> tuple[K8sObject, Outcome]:
    """`obj` as Flux applies it with `variables` (the same object when nothing changes).
    Fields whose whole value is one variable are traced to where it was set."""
    outcome = Outcome(set(), set())
    if not variables.any_known and not variables.unread:
        return obj, outcome  # Flux substitutes nothing without variables
    if _disabled(obj):
        return obj, outcome
    body = obj.body
    sources: dict[str, Source] = {}
    new = _walk(body, (), variables, sources, outcome)
    if new is body:
        return obj, outcome
    traced = dict(obj.value_sources or {})
    traced.update(sources)
    meta = get(new, "metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace")
    return K8sObject(kind=obj.kind, api_version=obj.api_version,
                     name=str(name) if name is not None else obj.name,
                     namespace=str(namespace) if namespace is not None else obj.namespace,
                     body=new, path=obj.path, line=obj.line, line_offset=obj.line_offset,
                     origin=obj.origin, value_sources=traced or None), outcome


def _disabled(obj: K8sObject) -> bool:
    meta = get(obj.body, "metadata") or {}
    for key in ("labels", "annotations"):
        marks = meta.get(key) if isinstance(meta, dict) else None
        if isinstance(marks, dict) and marks.get(DISABLED_KEY) == "disabled":
            return True
    return False


def _walk(node: Any, keys: tuple, variables: Variables, sources: dict[str, Source],
          outcome: Outcome) -> Any:
    """`node` with its strings substituted; the same object when nothing changed (a
    changed mapping or sequence is a copy with the same positions)."""
    if isinstance(node, dict):
        changed: dict[Any, Any] = {}
        for key, value in node.items():
            new_key = key
            new = _walk(value, (*keys, key), variables, sources, outcome)
            if isinstance(key, str) and ("$" in key or "\\" in key):
                new_key = _text(key, (), variables, {}, outcome)
            if new is not value or new_key is not key:
                changed[key] = (new_key, new)
        if not changed:
            return node
        copy = PosMap() if isinstance(node, PosMap) else {}
        for key, value in node.items():
            new_key, new = changed.get(key, (key, value))
            copy[new_key] = new
        if isinstance(node, PosMap):
            _copy_positions(node, copy, changed)
        return copy
    if isinstance(node, list):
        items = [_walk(v, (*keys, i), variables, sources, outcome) for i, v in enumerate(node)]
        if all(a is b for a, b in zip(items, node, strict=True)):
            return node
        copy_list = PosList(items) if isinstance(node, PosList) else items
        if isinstance(node, PosList):
            _share_positions(node, copy_list)
        return copy_list
    if isinstance(node, str) and ("$" in node or "\\" in node):
        return _text(node, keys, variables, sources, outcome)
    return node


def _text(text: str, keys: tuple, variables: Variables, sources: dict[str, Source],
          outcome: Outcome) -> Any:
    got = expand(text, variables)
    outcome.unknown.update(got.unknown)
    outcome.defaulted.update(got.defaulted)
    if got.text == text:
        return text
    # one placeholder and nothing else (`${REPLICAS}`, `${MAX:=1}`): its value alone,
    # traced to where the variable was set (a default's is this line)
    whole = not got.unknown and len(got.used) <= 1 and re.fullmatch(
        r"\$\{[A-Za-z0-9_-]+(?:(?::=|:-|:\?|:\+|=)[^${}]*)?\}", text.strip()) is not None
    if whole and keys:
        if got.used:
            sources[".".join(str(k) for k in keys)] = variables.values[got.used[0]].source
        field = next((k for k in reversed(keys) if isinstance(k, str)), "")
        if field not in _STRING_FIELDS and not _inside_strings(keys) \
                and _INT.fullmatch(got.text):
            return int(got.text)
    if isinstance(text, BlockStr):
        block = BlockStr(got.text)
        block.style = getattr(text, "style", None)
        return block
    return got.text


def _inside_strings(keys: tuple) -> bool:
    # string maps of the API (an operator's postgresql `parameters` too)
    return any(isinstance(k, str) and k in ("data", "stringData", "annotations", "labels",
                                             "env", "args", "command", "parameters")
               for k in keys)


def _share_positions(old: Any, new: Any) -> None:
    try:
        new._keys = old._keys
        new._pos = old._pos
    except AttributeError:  # no positions were set on the original
        pass


def _copy_positions(old: PosMap, new: PosMap, changed: dict) -> None:
    """The copy keeps the positions of the original; a key renamed by substitution
    keeps the position of the key it replaces."""
    renamed = {k: v[0] for k, v in changed.items() if v[0] is not k}
    if not renamed:
        _share_positions(old, new)
        return
    try:
        data = old.lc.data
    except AttributeError:
        return
    new.place(old.lc.line, old.lc.col)
    for key, pos in data.items():
        new.lc.data[renamed.get(key, key)] = list(pos)


# --- a run's objects ------------------------------------------------------------------


def apply_substitution(leaves: list[tuple[str, list[K8sObject]]], plain: list[K8sObject],
                       resolve: Callable[[str], str | None]
                       ) -> tuple[list[tuple[str, list[K8sObject]]], list[K8sObject], list[str]]:
    """Kustomize outputs (by their folder) and plain manifests (by their file) as Flux
    applies them after postBuild substitution, the Kustomizations as their parents
    substitute them, and notices for what was not known or only assumed. Rendered Helm
    charts are left alone (Flux builds no chart from a path)."""
    every = plain + [o for _label, objs in leaves for o in objs]
    kustomizations = [(label, o) for label, objs in leaves for o in objs
                      if is_flux_kustomization(o)]
    kustomizations += [(o.path, o) for o in plain if is_flux_kustomization(o)]
    if not kustomizations:
        return leaves, plain, []
    found = plan(kustomizations, Sources(every), resolve)
    if not found.folders and not found.patches and not found.skipped:
        return leaves, plain, []
    not_applied: list[str] = []
    unknown: dict[str, set[str]] = {}
    defaulted: dict[str, set[str]] = {}

    def applied(obj: K8sObject, place: str) -> K8sObject:
        if is_flux_kustomization(obj):
            return found.kustomizations.get(id(obj), obj)
        by = deepest_folder(place, found.patches)
        if by is not None and not obj.origin.startswith("helm"):
            obj = patched(obj, found.patches[by])  # kustomize's patches, then postBuild
        by = deepest_folder(place, found.skipped)
        if by is not None and not obj.origin.startswith("helm"):
            not_applied.extend(text for target, text in found.skipped[by]
                               if _selects_object(target, obj) and text not in not_applied)
        variables = variables_for(place, found.folders)
        if variables is None or obj.origin.startswith("helm"):
            return obj
        new, outcome = substituted(obj, variables)
        if outcome.unknown:
            unknown.setdefault(variables.kustomization, set()).update(outcome.unknown)
        if outcome.defaulted:
            defaulted.setdefault(variables.kustomization, set()).update(outcome.defaulted)
        return new

    out_leaves = [(label, [applied(o, label) for o in objs]) for label, objs in leaves]
    out_plain = [applied(o, o.path) for o in plain]
    notices = _notices(found.folders, unknown, defaulted) + not_applied
    return out_leaves, out_plain, notices


def _notices(folders: dict[str, Variables], unknown: dict[str, set[str]],
             defaulted: dict[str, set[str]]) -> list[str]:
    """One notice per set of sources not read (the same cluster Secret behind every
    app's Kustomization is one notice, not one per app)."""
    unread = {v.kustomization: tuple(v.unread) for v in folders.values()}
    left: dict[tuple[str, ...], tuple[set[str], set[str]]] = {}
    for ks, names in unknown.items():
        entry = left.setdefault(unread.get(ks) or (), (set(), set()))
        entry[0].add(ks)
        entry[1].update(names)
    out: list[str] = []
    for why, (kss, names) in sorted(left.items()):
        because = "; ".join(why) if why else "a substitution function not evaluated"
        out.append(f"Flux postBuild: {_few(names)} not known in what {_few(kss, 2)} "
                   f"build{'s' if len(kss) == 1 else ''} ({because}): read as written, "
                   "so a host or size holding one is not read")
    assumed: dict[tuple[str, ...], tuple[set[str], set[str]]] = {}
    for ks, names in defaulted.items():
        entry = assumed.setdefault(unread.get(ks) or (), (set(), set()))
        entry[0].add(ks)
        entry[1].update("${" + n + "}" for n in names)
    for why, (kss, names) in sorted(assumed.items()):
        out.append(f"Flux postBuild: the default of {_few(names)} assumed in what "
                   f"{_few(kss, 2)} build{'s' if len(kss) == 1 else ''}; "
                   f"{'; '.join(why)} could set {'it' if len(names) == 1 else 'them'}")
    return out


def _few(names: Any, limit: int = 5) -> str:
    shown = sorted(names)
    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return ", ".join(shown[:limit]) + more
