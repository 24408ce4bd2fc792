"""YAML with positions, read fast: libyaml (PyYAML's C parser) composes the node tree,
and this module builds plain dicts and lists from it that carry the `lc` line/column
interface of ruamel.yaml's round-trip loader (`lc.line`, `lc.col`, `lc.key(k)`,
`lc.value(k)`, `lc.item(i)`, `lc.data`), which advisor.read.sources.k8s and the renderers
read and rewrite.

Why not ruamel.yaml's round-trip loader itself: it is pure Python and was most of the
time `check` spent on a small repository (51 ms of YAML for the 5 manifests of
fixtures/acme-shop, against 1.6 ms for libyaml's parse). ruamel.yaml still reads what
it must keep byte for byte (advise --write, Helm values for their comments).

Scalars resolve as ruamel.yaml's round-trip loader resolves them (YAML 1.2 core
schema: `yes`/`on` stay strings, `True`/`TRUE` are booleans, `0o17` is octal, `017`
decimal, `_` allowed in numbers), checked against ruamel.yaml by
tests/test_yamlpos.py, with two deliberate differences:
- a key written twice keeps its last value, as Kubernetes (sigs.k8s.io/yaml) does;
  ruamel.yaml with allow_duplicate_keys keeps the first;
- dates and timestamps stay the strings they are written as.
Aliases share one object, as in ruamel.yaml, so alias bombs stay small in memory and
advisor.read.sources.k8s can refuse them by their expanded size. Merge keys (`<<`) merge.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from sys import intern
from typing import Any

# PyYAML's pure-Python reader, which libyaml replaces here, compiles at import a negated
# class of every printable code point (yaml.reader.Reader.NON_PRINTABLE); sre builds a
# bitmap of the Basic Multilingual Plane for it: 58 M instructions, a third of what
# `import yaml` costs and 12% of the demo's whole check. The same set written as its
# complement (the few non-printable ranges) compiles in a fraction of that; putting it
# in re's cache under PyYAML's pattern gives yaml.reader the same matcher, cheaper.
# tests/test_yamlpos.py checks both match the same code points, and that it took.
PYYAML_NON_PRINTABLE = "[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]"
SAME_SET = "[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x84\x86-\x9F\uD800-\uDFFF\uFFFE\uFFFF]"


def _prime_pyyaml_reader_pattern() -> None:
    cache = getattr(re, "_cache", None)  # re._compile's cache: (type, pattern, flags) keys
    if isinstance(cache, dict):
        key = (str, PYYAML_NON_PRINTABLE, 0)
        cache.setdefault(key, re.compile(SAME_SET))


_prime_pyyaml_reader_pattern()

import yaml  # noqa: E402  (after the pattern above is in re's cache)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode  # noqa: E402
from yaml.resolver import BaseResolver  # noqa: E402

from advisor.read.yamlnodes import BlockStr, PosList, PosMap, shared_keys  # noqa: E402

try:  # libyaml; the pure-Python parser gives the same nodes, only slower
    from yaml.cyaml import CParser as _Parser

    LIBYAML = True  # the nodes are libyaml's (see Composed)
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    LIBYAML = False
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser, Composer):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)

YAMLError = yaml.YAMLError
MarkedYAMLError = yaml.MarkedYAMLError

_TAG = "tag:yaml.org,2002:"
_STR_TAG = _TAG + "str"
_MERGE_TAG = _TAG + "merge"


class _Resolver(BaseResolver):
    """YAML 1.2 core schema for plain scalars, as ruamel.yaml's round-trip loader."""


def _implicit(tag: str, pattern: str, first: str | list[str]) -> None:
    _Resolver.add_implicit_resolver(_TAG + tag, re.compile(pattern, re.X), list(first))


_implicit("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF")
_implicit("int", r"""^(?:[-+]?0b[0-1_]+
                    |[-+]?0o?[0-7_]+
                    |[-+]?[0-9_]+
                    |[-+]?0x[0-9a-fA-F_]+)$""", "-+0123456789")
_implicit("float", r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                      |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                      |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
                      |[-+]?\.(?:inf|Inf|INF)
                      |\.(?:nan|NaN|NAN))$""", "-+0123456789.")
_implicit("merge", r"^(?:<<)$", "<")
_implicit("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""])


# The implicit resolvers BaseResolver.resolve tries for a plain scalar, by its first
# character ("" for an empty one), the wildcard ones after them: looked up once here
# instead of a list made per scalar.
_IMPLICIT_BY_FIRST = {
    first: tuple(pairs) + tuple(_Resolver.yaml_implicit_resolvers.get(None, ()))
    for first, pairs in _Resolver.yaml_implicit_resolvers.items() if first is not None}
_WILDCARD = tuple(_Resolver.yaml_implicit_resolvers.get(None, ()))


class _Loader(_Parser, _Resolver):
    """libyaml's composer with _Resolver's tags. What BaseResolver.resolve and its
    descend/ascend give for a resolver without path resolvers (yamlpos registers none),
    in fewer steps: the composer calls the three for every node, and they were a fifth
    of composing a manifest."""

    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)
        _Resolver.__init__(self)

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode:
            if implicit[0]:
                for tag, pattern in _IMPLICIT_BY_FIRST.get(value[:1], _WILDCARD):
                    if pattern.match(value):
                        return tag
            return self.DEFAULT_SCALAR_TAG
        if kind is SequenceNode:
            return self.DEFAULT_SEQUENCE_TAG
        if kind is MappingNode:
            return self.DEFAULT_MAPPING_TAG
        return None


def load_all(text: str, *, unique_keys: bool = False) -> Iterator[Any]:
    """The documents of a YAML stream: PosMap/PosList/scalars (None for empty ones).
    Raises yaml.YAMLError (MarkedYAMLError with 0-based marks for syntax errors); with
    `unique_keys`, also for a key written twice in one mapping."""
    for doc, _builder in _documents(text, unique_keys):
        yield doc


class Composed:
    """The root node of each document of a text as load_all_sized composed it (None for
    an empty one), kept for another reader of the same text that wants the nodes, not
    the positioned tree (advisor.read.render.helm_trace flattens a rendered template
    from them instead of composing it again); `complete` once the whole stream was read
    and built without an error."""

    __slots__ = ("complete", "nodes", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.nodes: list[Node | None] = []
        self.complete = False


def load_all_sized(text: str, composed: Composed | None = None
                   ) -> Iterator[tuple[Any, int | None]]:
    """load_all's documents, each with its node count and nesting depth when these are
    known from the reading (a tree: no alias, merge or repeated key), else None: an alias
    bomb is then found by walking the document (advisor.read.sources.k8s). `composed`:
    where the documents' nodes are kept (see Composed)."""
    for doc, builder in _documents(text, False, composed):
        known = builder is not None and builder.simple
        yield doc, ((builder.nodes, builder.deepest) if known else None)


def _documents(text: str, unique_keys: bool, composed: Composed | None = None
               ) -> Iterator[tuple[Any, _Builder | None]]:
    loader = _Loader(str(text))  # libyaml takes exact str only, not a BlockStr
    try:
        while loader.check_node():
            node = loader.get_node()
            if composed is not None:
                composed.nodes.append(node)
            if node is None:
                yield None, None
                continue
            builder = _Builder(unique_keys, len(text) < 65536)
            yield builder.build(node), builder
        if composed is not None:
            composed.complete = True
    finally:
        loader.dispose()


def load(text: str, *, unique_keys: bool = False) -> Any:
    """The first document of `text` (None when empty)."""
    return next(load_all(text, unique_keys=unique_keys), None)


class _Builder:
    """Python values from one document's nodes; an alias is the same object."""

    def __init__(self, unique_keys: bool, short: bool = False) -> None:
        self.unique_keys = unique_keys
        # A text shorter than 65,536 characters has no line or column past 65,535: its
        # positions are built two bytes each at once (pack_positions' narrowing of an
        # int array costs a microsecond or more per node).
        self.code = "H" if short else "i"
        self.tail = b"\0" if short else b""
        self.done: dict[int, Any] = {}
        # For a tree, what advisor.read.sources.k8s's alias-bomb walk would find: its nodes
        # (values, items and keys) and the depth of the deepest; `simple` turns False at
        # an alias, a merge or a repeated key (the walk is needed then).
        self.simple = True
        self.nodes = 1
        self.deepest = 0
        self.level = 0

    def build(self, node: Node) -> Any:
        if isinstance(node, ScalarNode):  # most nodes; never in `done`
            return _scalar(node)
        found = self.done.get(id(node))
        if found is not None:
            self.simple = False
            return found
        if node.value:
            self.deepest = max(self.deepest, self.level + 1)
        else:
            self.deepest = max(self.deepest, self.level)
        self.level += 1
        try:
            return self._container(node)
        finally:
            self.level -= 1

    def _container(self, node: Node) -> Any:
        if isinstance(node, SequenceNode):
            self.nodes += len(node.value)
            seq = PosList()
            self.done[id(node)] = seq
            start = node.start_mark
            places = array(self.code, (start.line, start.column))  # Positions' packed form
            for child in node.value:
                mark = child.start_mark
                places.append(mark.line)
                places.append(mark.column)
                seq.append(self.build(child))
            seq._keys = None
            seq._pos = places.tobytes() + self.tail
            return seq
        self.nodes += 2 * len(node.value)
        mapping = PosMap()
        self.done[id(node)] = mapping
        merged: list[MappingNode] = []
        keys: list[Any] = []  # in the order of `places`: a repeated key keeps its first slot
        all_str = True
        start = node.start_mark
        places = array(self.code, (start.line, start.column))  # Positions' packed form
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                self.simple = False
                merged.extend(_merge_sources(value_node))
                continue
            key = _scalar(key_node) if isinstance(key_node, ScalarNode) else self.build(key_node)
            if type(key) is not str:
                all_str = False
                try:
                    hash(key)
                except TypeError:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        "found unhashable key", key_node.start_mark) from None
            mark, value_mark = key_node.start_mark, value_node.start_mark
            here = (mark.line, mark.column, value_mark.line, value_mark.column)
            if key in mapping:
                self.simple = False
                if self.unique_keys:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found duplicate key {key!r}", key_node.start_mark)
                del mapping[key]  # the last of a repeated key wins, in its place
                slot = 2 + 4 * keys.index(key)
                places[slot:slot + 4] = array(self.code, here)
            else:
                keys.append(key)
                places.extend(here)
            mapping[key] = self.build(value_node)
        for source in merged:  # written keys win over merged ones; earlier merges first
            built = self.build(source)
            for key, value in built.items():
                if key in mapping:
                    continue
                mapping[key] = value
                keys.append(key)
                all_str = all_str and type(key) is str
                # where the anchor writes it (PostHog's `pgbouncer: {<<: *_pgbouncer}`
                # cited the `<<` line for every key it brings)
                places.extend((*built.lc.key(key), *built.lc.value(key)))
        mapping._keys = shared_keys(tuple(keys)) if all_str else tuple(keys)
        mapping._pos = places.tobytes() + self.tail
        return mapping


def _merge_sources(node: Node) -> list[MappingNode]:
    if isinstance(node, MappingNode):
        return [node]
    if isinstance(node, SequenceNode) and all(isinstance(x, MappingNode) for x in node.value):
        return list(node.value)
    raise yaml.constructor.ConstructorError(
        "while constructing a mapping", None,
        f"expected a mapping or list of mappings for merging, but found {node.id}",
        node.start_mark)


_INTERNED_LENGTH = 64


def _scalar(node: ScalarNode) -> Any:
    tag, text = node.tag, node.value
    if tag == _STR_TAG or not tag.startswith(_TAG):
        if node.style in ("|", ">"):
            block = BlockStr(text)
            block.style = node.style
            return block
        # Keys and short values repeat from manifest to manifest (kind, apiVersion,
        # name, "8080"): one copy of each, not one per document.
        return intern(text) if len(text) <= _INTERNED_LENGTH else text
    kind = tag[len(_TAG):]
    try:
        if kind == "null":
            return None
        if kind == "bool":
            return text.lower() == "true"
        if kind == "int":
            return _int(text)
        if kind == "float":
            return _float(text)
    except ValueError:
        raise yaml.constructor.ConstructorError(
            None, None, f"invalid {kind} value {text!r}", node.start_mark) from None
    return text  # timestamps, binary, merge keys used as values: the text


def _int(text: str) -> int:
    digits = text.replace("_", "")
    sign = -1 if digits.startswith("-") else 1
    digits = digits.lstrip("+-")
    for prefix, base in (("0b", 2), ("0x", 16), ("0o", 8)):
        if digits.startswith(prefix):
            return sign * int(digits[2:], base)
    return sign * int(digits, 10)


def _float(text: str) -> float:
    digits = text.replace("_", "").lower()
    if digits.endswith(".inf"):
        return float("-inf") if digits.startswith("-") else float("inf")
    if digits.endswith(".nan"):
        return float("nan")
    return float(digits)
