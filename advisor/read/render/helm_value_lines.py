"""The line of each key of a values file, read from libyaml's nodes: what
advisor.read.render.helm_values `_positions` makes of the tree advisor.read.yamlpos builds,
without building it (PosMaps with packed positions, every scalar resolved), for the
files that tree would hold nothing unusual in. With the engine installed, Helm reads the
values themselves; only the lines are read here.

Read here: a stream whose documents are plain trees of mappings, sequences and scalars.
Anything else raises NotPlain and the file is read with positions as before: an alias
(yamlpos shares the object and moves a repeated key to the end of its mapping), a merge
key, an explicit tag, a key written twice (yamlpos keeps the last, moved), a key that is
not a scalar, or documents much larger or deeper than a values file is (yamlpos refuses
alias bombs and trees past its limits with a problem). Scalars are resolved as yamlpos
resolves them where that matters: a key's text is the text of its resolved value
(`true:` is the key "True", `0x10:` is "16"), and a number that does not construct
(`_`) is yamlpos's error, so the file is read as before to report it.
"""

from __future__ import annotations

from typing import Any

from yaml.nodes import Node, ScalarNode, SequenceNode

from advisor.read.yamlpos import (
    _IMPLICIT_BY_FIRST,
    _MERGE_TAG,
    _TAG,
    _WILDCARD,
    _Parser,
    _scalar,
)

Key = tuple[str | int, ...]

MAX_NODES = 50_000  # far below yamlpos's alias-bomb bound (200,000): never refused there
MAX_DEPTH = 100  # below yamlpos's 200, and Python's recursion limit here
_NULL_TAG = _TAG + "null"
_PLAIN = "?"  # the tag of a plain scalar left to resolve (libyaml's composer asks us)
# First characters of the plain scalars yamlpos may build as a number (its int and float
# resolvers'): the only ones that can fail to construct.
_NUMBER_STARTS = frozenset("-+0123456789.")


class NotPlain(Exception):
    """The text holds what only the full read handles (see the module's docstring)."""


def first_document_lines(text: str) -> tuple[dict[Key, int], dict[Key, int]]:
    """(1-based line of each leaf's key or item, line offset of each multi-line string)
    of the first non-empty document; every document is read, as load_yaml_stream reads
    them. Raises NotPlain, or yaml.YAMLError for text libyaml refuses."""
    walk = _Walk()
    first = True
    for node in _documents(text):
        walk.visit(node, (), 0, record=first)
        # load_yaml_stream skips a document that is null (`---` with nothing after it)
        first = first and _is_null(node)
    return walk.lines, walk.blocks


def _documents(text: str) -> list[Node]:
    parser = _UnresolvedParser(str(text))
    try:
        found = []
        while parser.check_node():
            node = parser.get_node()
            if node is not None:
                found.append(node)
        return found
    finally:
        parser.dispose()


class _UnresolvedParser(_Parser):  # type: ignore[misc, valid-type]
    """libyaml's composer with the tags left unresolved: a plain scalar is tagged "?",
    anything else "" (yamlpos's resolver then gives it the str tag); an explicit tag
    stays as written. Resolving each node in Python was most of composing."""

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        return _PLAIN if kind is ScalarNode and implicit[0] else ""


class _Walk:
    """One pass over the documents: checks they are plain trees (the module's docstring)
    and, for the first, records what helm_values `_positions` would: a mapping's leaves
    at their key's line, a sequence's at the item's, a multi-line string's content
    offset beside its line."""

    def __init__(self) -> None:
        self.seen: set[int] = set()  # containers: one seen twice is an alias
        self.nodes = 0
        self.lines: dict[Key, int] = {}
        self.blocks: dict[Key, int] = {}

    def visit(self, node: Node, prefix: Key, depth: int, record: bool) -> None:
        if isinstance(node, ScalarNode):
            _check_scalar(node)
            return
        if id(node) in self.seen:
            raise NotPlain("an alias")
        self.seen.add(id(node))
        self.nodes += len(node.value)
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            raise NotPlain("a large or deep document")
        if node.tag:
            raise NotPlain("an explicit tag")
        lines = self.lines
        if isinstance(node, SequenceNode):
            for i, item in enumerate(node.value):
                if isinstance(item, ScalarNode):
                    _check_scalar(item)
                    if record:
                        lines[(*prefix, i)] = item.start_mark.line + 1
                else:
                    self.visit(item, (*prefix, i), depth + 1, record)
            return
        keys: set[Any] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise NotPlain("a key that is not a scalar")
            key = _resolved(key_node)
            if key in keys:
                raise NotPlain("a key written twice")
            keys.add(key)
            path = (*prefix, str(key))
            if isinstance(value_node, ScalarNode):
                _check_scalar(value_node)
                if record:
                    lines[path] = key_node.start_mark.line + 1
                    if "\n" in value_node.value and _is_str(value_node):
                        line = value_node.start_mark.line
                        self.blocks[path] = line + 1 if value_node.style in ("|", ">") else line
            else:
                self.visit(value_node, path, depth + 1, record)


def _check_scalar(node: ScalarNode) -> None:
    """Raises where yamlpos would not build the scalar: an explicit tag (left to it), a
    number that does not construct (its error)."""
    tag = node.tag
    if tag == _PLAIN:
        if node.value[:1] in _NUMBER_STARTS:
            _resolved(node)
    elif tag:
        raise NotPlain("an explicit tag")


def _resolved(node: ScalarNode) -> Any:
    """The scalar as yamlpos builds it, where that can differ from its text: a plain
    scalar an implicit resolver claims; else its text. A merge key raises."""
    tag = node.tag
    if tag == _PLAIN:
        resolved = _tag_of(node.value)
        if resolved is None:
            return node.value
        if resolved == _MERGE_TAG:
            raise NotPlain("a merge key")
        return _scalar(ScalarNode(resolved, node.value, node.start_mark, node.end_mark))
    if tag:
        raise NotPlain("an explicit tag")
    return node.value


def _tag_of(text: str) -> str | None:
    """yamlpos's tag for the plain scalar `text`; None when it is a string (no implicit
    resolver is registered for its first character, the common case, or none matches).
    The resolvers are yamlpos's own table by first character (a list made per scalar
    was a fifth of reading a values file's lines)."""
    for tag, pattern in _IMPLICIT_BY_FIRST.get(text[:1], _WILDCARD):
        if pattern.match(text):
            return str(tag)
    return None


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == _PLAIN and _tag_of(node.value) == _NULL_TAG


def _is_str(node: ScalarNode) -> bool:
    return node.tag != _PLAIN or _tag_of(node.value) is None
