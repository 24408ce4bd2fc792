"""Tracing's put-back of sentinels (advisor.read.render.helm_trace._put_back): splitting on
the markers gives what `_MARKERS.sub` with a function per match gave, on texts holding
markers of the group, of other groups, and look-alikes inside longer numbers."""

from __future__ import annotations

import random

from advisor.model import Source
from advisor.read.render.helm_trace import _MARKERS, SENTINEL_BASE, _Leaf, _put_back


def _leaf(number: int, value, string: bool) -> _Leaf:
    marker = f"1.{number}"
    if string:
        marker = f"zq{marker[2:]}x"
        return _Leaf(("k", number), value, Source(path="values.yaml"), value + marker, marker)
    return _Leaf(("k", number), value, Source(path="values.yaml"), float(marker), marker)


def _by_sub(group: list[_Leaf], text: str) -> str:
    back = {}
    for leaf in group:
        if isinstance(leaf.sentinel, str) and leaf.sentinel != leaf.marker:
            back[leaf.marker] = ""
        else:
            value = leaf.value
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            back[leaf.marker] = str(value)
    return _MARKERS.sub(lambda m: back.get(m.group(0), m.group(0)), text)


def test_put_back_is_the_substitution_it_replaces():
    rng = random.Random(19)
    leaves = [_leaf(SENTINEL_BASE + i, rng.choice(["orders-db", "x", "a b"]), string=True)
              if i % 3 == 0 else _leaf(SENTINEL_BASE + i, rng.choice([5432, 2.5, 10.0]),
                                       string=False) for i in range(1, 40)]
    pieces = [x.marker for x in leaves] + [
        "1.9000011", "11.900002", "1.90000", "zq12x", "a.1.900003", ": ", "\n", "port ",
        "-", "x", "  - ", "1.900004.5", "zqx", "zq900001x"]
    for _ in range(300):
        group = rng.sample(leaves, rng.randint(0, len(leaves)))
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        assert _put_back(group)(text) == _by_sub(group, text)
    assert _put_back([])("no markers") == "no markers"


# The markers as first written: the look-behind before the "1" (re tries it at every
# character); `_MARKERS` checks the same character after the "1", which is faster.
_LOOK_BEHIND_FIRST = r"zq\d+x|(?<![\d.])1\.\d{6}(?!\d)"


def test_markers_match_where_the_look_behind_first_pattern_does():
    import re

    reference = re.compile(_LOOK_BEHIND_FIRST)
    rng = random.Random(7)
    pieces = ["1", "1.", "9", "0", ".", "zq", "x", " ", "\n", "a", "-", "11", "1.900001"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 24)))
        found = [(m.start(), m.group(0)) for m in _MARKERS.finditer(text)]
        assert found == [(m.start(), m.group(0)) for m in reference.finditer(text)], text
    # Each boundary the look-behind guards: a digit or a dot before the "1", the start.
    assert [m.group(0) for m in _MARKERS.finditer("1.900001 51.900002 .1.900003 "
                                                  "x1.900004 1.9000055")] == [
        "1.900001", "1.900004"]


# Documents for the fields tracing reads: plain objects, and what is left to `_plain`.
TRACE_DOCS = [
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n  n: 1.900001\n",
    "kind: Service\nmetadata: {name: s}\nspec:\n  ports:\n  - port: 80\n  - {port: 81}\n"
    "  empty: []\n  none: {}\n  null_value:\n",
    "kind: A\nmetadata:\n  name: a\n---\n---\nkind: B\nmetadata:\n  name: b\n",
    "kind: NoName\nmetadata: {}\n---\n- a list\n---\njust text\n---\nkind: [x]\nmetadata:\n"
    "  name: n\n",
    "kind: ConfigMapList\nitems:\n- kind: ConfigMap\n  metadata: {name: one}\n- scalar\n",
    "kind: PodList\nitems: {}\n",  # a List kind without a list of items is an object
    "kind: A\nmetadata:\n  name: a\n  name: again\nspec: 1\nspec: {x: 2}\n",  # twice
    "kind: A\nmetadata: &m\n  name: a\nspec:\n  copy: *m\n  <<: *m\n",  # an alias, `<<`
    "kind: A\nmetadata:\n  name: a\n  labels: &l\n    self: *l\n",  # a node inside itself
    "kind: A\nmetadata:\n  name: a\n? [not, scalar]\n: v\n",
    "- ? {a: b}\n  : c\n",  # not an object, and not a tree _plain builds
]


def _fields_by_plain(text: str) -> list:
    from advisor.read.render import flatten
    from advisor.read.render.helm_trace import _nodes, _plain, _unpack_plain
    from advisor.read.sources.k8s import get

    docs = [None if n is None else _plain(n, {}, set()) for n in _nodes(text)]
    return [(body["kind"], flatten(body)) for doc in docs for body in _unpack_plain(doc)
            if isinstance(body.get("kind"), str)
            and isinstance(get(body, "metadata", "name"), str)]


def _outcome(read, text: str):
    try:
        return read(text)
    except Exception as exc:  # what the trace catches: the render is then split
        return type(exc).__name__


def test_fields_read_from_nodes_are_those_of_the_documents_plain_builds():
    from advisor.read.render.helm_trace import _objects_fields

    outcomes = []
    for text in TRACE_DOCS:
        ours = _outcome(_objects_fields, text)
        assert ours == _outcome(_fields_by_plain, text), text
        outcomes.append(ours)
    assert outcomes[0] == [("ConfigMap", {
        ("apiVersion",): "v1", ("kind",): "ConfigMap", ("metadata", "name"): "a",
        ("data", "k"): "v", ("data", "n"): "1.900001"})]
    assert [kind for kind, _ in outcomes[2]] == ["A", "B"]
    assert [kind for kind, _ in outcomes[4]] == ["ConfigMap"]
    assert outcomes[8] == outcomes[9] == outcomes[10] == "ConstructorError"
