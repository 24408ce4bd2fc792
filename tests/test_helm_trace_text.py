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
