"""Kubernetes manifests read with positions (advisor.read.yamlpos: libyaml, with ruamel.yaml's
`lc` line/column interface).

Objects keep their YAML node (a PosMap) so any field's line can be asked for later; nothing
here interprets workloads: that is topology's job.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from msgspec import Raw, Struct

from advisor.lazyregex import lazy
from advisor.model import TEMPLATE_PROGRAM, ConfigProblem, Location, Source

if TYPE_CHECKING:
    from advisor.read.yamlpos import Composed

# A YAML "billion laughs" expands aliases exponentially. Loading shares nodes, so it
# is cheap; we refuse documents whose expanded size would exceed this before anything
# walks them.
MAX_EXPANDED_NODES = 200_000


class K8sObject(Struct):
    kind: str
    api_version: str
    name: str
    namespace: str | None
    body: Any  # advisor.read.yamlnodes.PosMap (positions in `lc`, as ruamel.yaml lays them out)
    path: str  # as shown to users
    line: int  # 1-based line of the document start
    line_offset: int = 0  # lines before this stream in `path` (ConfigMap, rendered)
    origin: str = ""  # "helm:charts/api", "kustomize:overlays/prod" when rendered
    # Rendered field -> the values file or overlay line that set it (Helm, kustomize);
    # None (no dict at all) for a plain manifest: an empty dict per object was 64 bytes
    # of every manifest held. Renderers assign a dict before they trace into it.
    value_sources: dict[str, Source] | None = None

    @property
    def ref(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{ns}{self.name}"

    def line0(self, keys: tuple) -> int | None:
        """line_of(self.body, *keys): the 0-based line linking records for `keys`."""
        return line_of(self.body, *keys)

    def extract(self) -> Any:
        """What its kind's reader takes from this object, as the parse cache kept it
        (advisor.read.extract); NO_EXTRACT: read the body."""
        return NO_EXTRACT

    def location(self, *keys: str | int) -> Location:
        line0 = self.line0(keys)
        line = self.line if line0 is None else line0 + 1 + self.line_offset
        return Location(path=self.path, line=line)

    def source(self, *keys: str | int, key: str | None = None) -> Source:
        """Where the value at `keys` was set. For rendered objects (Helm, kustomize)
        that is the traced values-file or overlay line when known."""
        # Linking asks this for every env item, limit and word of every container: the
        # dotted key is joined only when a traced source or the shown key needs it.
        dotted = None
        if self.value_sources:
            dotted = ".".join([str(k) for k in keys])
            traced = self.value_sources.get(dotted)
            if traced is not None:
                return traced
        line0 = self.line0(keys)
        if not key:
            if dotted is None:
                dotted = ".".join([str(k) for k in keys])
            key = dotted or None
        return Source(path=self.path,
                      line=self.line if line0 is None else line0 + 1 + self.line_offset,
                      key=key)

    def line_in(self, base: Any, *keys: str | int) -> int:
        """location(*at, *keys).line, where `base` is the node at some keys `at` and
        `keys` are not empty: the walk starts at `base` (a container, an env item)
        instead of the document's root, and ends where the whole walk would."""
        line0 = line_of(base, *keys)
        return self.line if line0 is None else line0 + 1 + self.line_offset

    def source_in(self, base: Any, at: tuple, *keys: str | int, key: str | None = None
                  ) -> Source:
        """source(*at, *keys), `base` being the node at `at` and `keys` not empty (see
        line_in)."""
        if self.value_sources:
            return self.source(*at, *keys, key=key)
        if not key:
            key = ".".join([str(k) for k in (*at, *keys)]) or None
        return Source(path=self.path, line=self.line_in(base, *keys), key=key)

    @property
    def annotations(self) -> dict[str, str]:
        meta = self.body.get("metadata") or {}
        found = meta.get("annotations") or {}
        return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}

    @property
    def labels(self) -> dict[str, str]:
        meta = self.body.get("metadata") or {}
        found = meta.get("labels") or {}
        return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


NO_EXTRACT = object()  # K8sObject.extract(): nothing kept, the reader reads the body
_MISSING = object()
_BODY = K8sObject.__dict__["body"]  # the field's own slot, under LazyK8sObject's property


class LazyK8sObject(K8sObject):
    """A K8sObject from the parse cache: its body is decoded from the cached bytes when a
    reader first asks for it. The reader of its kind (ConfigMap data, a Service's
    selector, an HPA's target: advisor.read.extract) takes what the cache kept of it
    instead, with the lines it records, and a warm run builds no tree for those.
    Equal to the K8sObject it was cached from (the body is decoded to compare)."""

    raw: Any = None  # the body as advisor.read.cache encoded it (msgpack bytes)
    # extract(), when `lines` is not None: msgpack bytes until first asked for
    # (advisor.read.extract.decode_extract), then what they decode to
    kept: Any = None
    # decodes `kept` (advisor.read.extract.decode_extract, given by whoever makes the
    # object: that module reads workloads, which sit above this one)
    decode: Any = None
    lines: dict[tuple, int | None] | None = None  # keys -> line0, as the reader asks
    # The body parsed again from the file (`reparse.body_of(self)`), when the cached bytes
    # do not decode (a damaged entry is a miss, never a crash) or none were kept
    # (--no-cache); None: the error is raised.
    reparse: Any = None

    @property
    def body(self) -> Any:  # type: ignore[override]
        found = _BODY.__get__(self)
        if found is None:
            found = self._decoded_body()
            _BODY.__set__(self, found)
        return found

    def _decoded_body(self) -> Any:
        """The cached bytes decoded; the file parsed again (`reparse`) when none were kept
        (--no-cache) or they do not decode."""
        if self.raw is not None:
            from advisor.read.cache import decode_body

            try:
                return decode_body(self.raw)
            except (ValueError, TypeError, KeyError, IndexError):
                if self.reparse is None:
                    raise
        elif self.reparse is None:
            raise ValueError("no cached body and no file to parse it from")
        return self.reparse.body_of(self)

    def line0(self, keys: tuple) -> int | None:
        if self.lines is not None:
            found = self.lines.get(keys, _MISSING)
            if found is not _MISSING:
                return found  # type: ignore[return-value]
        return line_of(self.body, *keys)

    def extract(self) -> Any:
        if self.lines is None:
            return NO_EXTRACT
        kept = self.kept
        if kept.__class__ is Raw:
            kept = self.kept = self.decode(self.kind, kept) if self.decode is not None \
                else NO_EXTRACT
            if kept is NO_EXTRACT:  # not what this version writes: the body answers
                self.lines = None
        return kept

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, K8sObject):
            return NotImplemented
        return _fields(self) == _fields(other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal


def _fields(obj: K8sObject) -> tuple:
    return (obj.kind, obj.api_version, obj.name, obj.namespace, obj.body, obj.path,
            obj.line, obj.line_offset, obj.origin, obj.value_sources)


def get(node: Any, *keys: str | int, default: Any = None) -> Any:
    """Walk mappings/sequences; `default` when any step is missing or of the wrong type."""
    for k in keys:
        if isinstance(k, int):
            if not isinstance(node, list) or not -len(node) <= k < len(node):
                return default
            node = node[k]
        else:
            if not isinstance(node, dict) or k not in node:
                return default
            node = node[k]
    return node


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return f"the {type(value).__name__} {str(value)[:40]}"


def _wrong(obj: Any, keys: tuple, expected: str, value: Any):
    from advisor.model import WrongType

    where = ".".join(str(k) for k in keys)
    return WrongType(obj.location(*keys), f"{obj.ref} {where}: expected {expected}, found "
                     f"{type_name(value)}; Kubernetes refuses this object, so it is not read")


def listed(obj: Any, keys: tuple, value: Any) -> list:
    """`value` (found at `keys` of `obj`) as a list: [] when unset; WrongType otherwise."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise _wrong(obj, keys, "a list", value)


def mapped(obj: Any, keys: tuple, value: Any) -> dict:
    """`value` as a mapping: {} when unset; WrongType otherwise."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    raise _wrong(obj, keys, "a mapping", value)


INT32_MAX = 2**31 - 1


def count_field(obj: Any, keys: tuple, value: Any) -> int | None:
    """A replica or parallelism count: None when unset; a non-negative int32 as the API
    server accepts, else WrongType (a string, a float, 1e308, 400 digits, -3)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
        raise _wrong(obj, keys, "a count from 0 to 2147483647", value)
    return value


def line_of(node: Any, *keys: str | int) -> int | None:
    """0-based line of the value at `keys` (the key's line for scalars), if known."""
    if not keys:
        lc = getattr(node, "lc", None)
        return lc.line if lc is not None else None
    # get()'s walk, inline: this runs for every source linking records
    parent, last = node, keys[0]
    cur = node
    for k in keys:
        parent, last = cur, k
        if isinstance(k, int):
            if not isinstance(cur, list) or not -len(cur) <= k < len(cur):
                break
        elif not isinstance(cur, dict) or k not in cur:
            break
        cur = cur[k]
        if cur is None:
            break
    lc = getattr(parent, "lc", None)
    if lc is None:
        return None
    try:
        if isinstance(last, int):
            return lc.item(last)[0]
        return lc.key(last)[0]
    except (KeyError, IndexError, TypeError, AttributeError):
        return getattr(lc, "line", None)


def block_offset(node: Any, key: str) -> int:
    """Line offset to pass a parser for the text of `node[key]` (a YAML block scalar):
    content line 1 then maps to the line after `key: |`. For plain or quoted
    single-line scalars the value's own line is used."""
    lc = getattr(node, "lc", None)
    if lc is None:
        return 0
    try:
        value_line, _col = lc.value(key)
    except (KeyError, TypeError):
        return 0
    value = node.get(key)
    style = getattr(value, "style", None) if value is not None else None
    if style in ("|", ">"):
        return value_line + 1  # content starts on the line after the indicator
    return value_line


def line_for_line(node: Any, key: str) -> bool:
    """Whether the text of `node[key]` is in the file line for line, as block_offset
    counts: one line, or a literal block (`|`). An escaped string ("a\\nb") or a folded
    block (`>`) joins or splits lines."""
    value = node.get(key) if isinstance(node, dict) else None
    if not isinstance(value, str) or "\n" not in value.rstrip("\n"):
        return True
    return getattr(value, "style", None) == "|"


def too_big(data: Any) -> bool:
    """More than MAX_EXPANDED_NODES nodes once aliases are expanded (an alias bomb), or
    nested deeper than 200: any YAML reader checks this before walking what it loaded."""
    return _expanded_size(data, {}) > MAX_EXPANDED_NODES


def _expanded_size(node: Any, memo: dict[int, int], depth: int = 0) -> int:
    if depth > 200:
        return MAX_EXPANDED_NODES + 1
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # cycles count once
    if isinstance(node, dict):
        total = 1 + sum(_expanded_size(v, memo, depth + 1) for v in node.values()) + len(node)
    elif isinstance(node, list):
        total = 1 + sum(_expanded_size(v, memo, depth + 1) for v in node)
    else:
        total = 1
    memo[key] = min(total, MAX_EXPANDED_NODES + 1)
    return memo[key]


def load_yaml_stream(text: str, display_path: str, line_offset: int = 0,
                     composed: Composed | None = None
                     ) -> tuple[list[tuple[Any, int]], list[ConfigProblem]]:
    """All documents of a YAML stream with their 1-based start lines; YAML errors and
    alias bombs become ConfigProblems with file:line. `composed`: where the documents'
    nodes are kept (advisor.read.yamlpos.Composed)."""
    from advisor.read.yamlpos import MarkedYAMLError, YAMLError, load_all_sized

    docs: list[tuple[Any, int]] = []
    problems: list[ConfigProblem] = []
    try:
        # a repeated key keeps its last value, as kubectl does (see advisor.read.yamlpos)
        for doc, known in load_all_sized(text, composed):
            if doc is None:
                continue
            start = (doc.lc.line if hasattr(doc, "lc") else 0) + 1 + line_offset
            if known is not None:  # a tree: its size and depth came with the reading
                nodes, deepest = known
                refused = nodes > MAX_EXPANDED_NODES or deepest > 200
            else:
                refused = _expanded_size(doc, {}) > MAX_EXPANDED_NODES
            if refused:
                problems.append(ConfigProblem(
                    location=Location(path=display_path, line=start),
                    message=f"YAML document expands to more than {MAX_EXPANDED_NODES} nodes "
                    "through aliases; refusing to read it (possible alias bomb)",
                    fatal=True, program="YAML"))
                continue
            docs.append((doc, start))
    except MarkedYAMLError as exc:
        if "duplicate anchor" in f"{exc.context} {exc.problem}" and (
                renamed := _anchors_renamed(text)) is not None:
            # YAML 1.2 lets an anchor be defined again (an alias names the latest), and
            # kustomize and Flux read such files: read as if each were named apart
            if composed is not None:
                composed.nodes.clear()
            return load_yaml_stream(renamed, display_path, line_offset, composed)
        mark = exc.problem_mark or exc.context_mark
        line = (mark.line + 1 + line_offset) if mark is not None else None
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        template = _template_at(text, exc)
        if template is not None:
            # An Ansible/Jinja or Go template kept beside manifests (roles/*/templates):
            # not YAML until its tool renders it, so not a broken manifest.
            problems.append(ConfigProblem(
                location=Location(path=display_path, line=template + 1 + line_offset),
                message=f"not read: a template ({text.splitlines()[template].strip()[:60]!r}),"
                " not YAML until the tool that owns it renders it", fatal=False,
                program=TEMPLATE_PROGRAM))
            return docs, problems
        problems.append(ConfigProblem(location=Location(path=display_path, line=line),
                                      message=f"invalid YAML: {what}", fatal=True,
                                      program="YAML"))
    except (YAMLError, RecursionError, ValueError) as exc:
        problems.append(ConfigProblem(location=Location(path=display_path, line=None),
                                      message=f"invalid YAML: {exc}", fatal=True,
                                      program="YAML"))
    return docs, problems


def _anchors_renamed(text: str) -> str | None:
    """`text` with each anchor defined again renamed apart (`&x` ... `&x` -> `&x` ...
    `&x__2`) and each alias naming the latest definition; lines stay where they are.
    None when nothing is renamed or the text does not scan."""
    import yaml

    try:
        tokens = [t for t in yaml.scan(text, Loader=getattr(yaml, "CSafeLoader",
                                                            yaml.SafeLoader))
                  if isinstance(t, yaml.AnchorToken | yaml.AliasToken)]
    except yaml.YAMLError:
        return None
    defined: dict[str, int] = {}
    current: dict[str, str] = {}
    edits: list[tuple[int, int, str]] = []
    for t in tokens:
        if isinstance(t, yaml.AnchorToken):
            defined[t.value] = defined.get(t.value, 0) + 1
            current[t.value] = t.value if defined[t.value] == 1 \
                else f"{t.value}__{defined[t.value]}"
            sigil = "&"
        else:
            sigil = "*"
        name = current.get(t.value, t.value)
        if name != t.value:
            edits.append((t.start_mark.index, t.end_mark.index, sigil + name))
    if not edits:
        return None
    out, at = [], 0
    for start, end, new in edits:
        out += [text[at:start], new]
        at = end
    return "".join(out) + text[at:]


# Jinja/Ansible, Go templates, and mustache sections, triple braces, comments and
# partials (spring-cloud-skipper's src/main/resources/**/cf-template.yml)
_TEMPLATE_SYNTAX = lazy(r"\{%-?\s*\w|\{\{-?\s*[\w.$\"'(]|\{\{[#/^{!>]")


_QUOTED = lazy(r"\"[^\"]*\"|'[^']*'")


def _template_at(text: str, exc: Exception) -> int | None:
    """The 0-based line, where YAML failed or the line before it, that holds template
    syntax (`{% for x in y %}`, `{{ .Values.x }}`, `{{ cidr }}`) outside a quoted
    string; None when the failure is not a template's."""
    lines = text.splitlines()
    for mark in (getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)):
        if mark is None:
            continue
        for n in (mark.line, mark.line - 1):
            if 0 <= n < len(lines) and _TEMPLATE_SYNTAX.search(
                    _QUOTED.sub("", lines[n])):
                return n
    return None


def k8s_objects(text: str, display_path: str, *, line_offset: int = 0, origin: str = "",
                composed: Composed | None = None
                ) -> tuple[list[K8sObject], list[ConfigProblem]]:
    """Kubernetes objects in a YAML stream (documents with kind + metadata.name);
    `List` kinds are unpacked. Other YAML documents are ignored. `composed`: where the
    documents' nodes are kept (advisor.read.yamlpos.Composed)."""
    docs, problems = load_yaml_stream(text, display_path, line_offset, composed)
    objects: list[K8sObject] = []
    for doc, start in docs:
        for body in _unpack(doc):
            kind = body.get("kind")
            name = get(body, "metadata", "name")
            if not isinstance(kind, str) or not isinstance(name, str):
                continue
            ns = get(body, "metadata", "namespace")
            objects.append(K8sObject(
                kind=kind, api_version=str(body.get("apiVersion", "")), name=name,
                namespace=str(ns) if ns else None, body=body, path=display_path,
                line=((body.lc.line + 1 + line_offset) if hasattr(body, "lc") else start),
                line_offset=line_offset, origin=origin))
    return objects, problems


def _unpack(doc: Any) -> Iterator[Any]:
    if not isinstance(doc, dict):
        return
    if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            if isinstance(item, dict):
                yield item
    else:
        yield doc


def looks_like_k8s(text: str) -> bool:
    """Cheap pre-check before a full YAML parse: has both `kind:` and `apiVersion:`."""
    return "kind:" in text and "apiVersion:" in text
