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
