"""The lines of a values file read from libyaml's nodes (advisor.read.render.helm_value_lines)
are what helm_values `_positions` makes of the tree advisor.read.yamlpos builds; a file
that tree holds something unusual in is left to that read (key_lines is None)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from advisor.read.render.helm_values import _positions, key_lines
from advisor.read.sources.k8s import load_yaml_stream

REPO = Path(__file__).resolve().parent.parent


def _by_tree(text: str) -> tuple[dict, dict]:
    docs, problems = load_yaml_stream(text, "values.yaml")
    assert not problems, problems
    lines: dict = {}
    blocks: dict = {}
    _positions(docs[0][0] if docs else {}, (), lines, blocks)
    return lines, blocks


PLAIN = [
    "replicaCount: 1\nimage:\n  repository: nginx\n  tag: ''\n",
    # keys yamlpos resolves: their text is the resolved value's
    "true: a\nFalse: b\n0x10: c\n017: d\n1_000: e\n1.50: f\n~: g\n'quoted': h\n\"1\": i\n",
    "null: 1\n.5: 2\n1e3: 3\n-0: 4\n+7: 5\non: 6\nyes: 7\n",
    # multi-line strings: block (content on the next line), quoted and plain across lines
    "conf: |\n  a = 1\n  b = 2\nfolded: >\n  x\n\n  y\nquoted: \"a\\nb\"\nplain: a\n\n  b\n",
    "list:\n  - 1\n  - name: x\n    port: 80\n  -\n    - nested\n  - |\n    text\n"
    "empty: []\nnone: {}\n",
    "a: {b: 1, c: [2, 3]}\nd: [x, {e: f}]\n",
    "",
    "# only a comment\n",
    "--- \n--- ~\n---\nfirst: 1\n---\nsecond: 2\n",  # the first document that is not null
    "--- ''\n---\nsecond: 2\n",  # an empty string is not null: it is the first
    "- top\n- level: list\n",
    "just a scalar\n",
    "key: <<\nstr_of_merge: '<<'\n'<<': quoted merge key is a string\n",
    "scalar_alias: &a 5\nagain: *a\nitems:\n  - *a\n",  # a scalar's alias is its text again
    "long_key_list:\n" + "".join(f"  k{i}: {i}\n" for i in range(30)),
]


@pytest.mark.parametrize("text", PLAIN)
def test_lines_from_nodes_are_the_lines_of_the_tree(text):
    found = key_lines(text)
    assert found is not None
    expected = _by_tree(text)
    assert found == expected
    assert list(found[0]) == list(expected[0]) and list(found[1]) == list(expected[1])


NOT_PLAIN = [
    "base: &b {x: 1}\nother: *b\n",  # an alias of a mapping
    "base: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n",  # a merge key
    "a: 1\nb: 2\na: 3\n",  # a key written twice (yamlpos keeps the last, moved)
    "1: a\ntrue: b\n",  # 1 == True: written twice once resolved
    "n: !!int '5'\n",  # an explicit tag
    "m: !!map {a: 1}\n",
    "? [a, b]\n: c\n",  # a key that is not a scalar
    "bad: -_\n",  # yamlpos's int resolver claims it and cannot build it: its error
    "bad: ._\n",  # and its float resolver
    "0x_: key\n",
    "a: [1, 2\n",  # not YAML
    "ok: 1\n---\nlater: [\n",  # a later document that is not YAML
    "x:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(120)) + "  " * 121 + "v\n",
]


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_what_only_the_tree_handles_is_left_to_it(text):
    assert key_lines(text) is None


def test_values_files_of_the_fixtures_read_the_same_both_ways():
    files = sorted(p for top in ("fixtures", "tests/realworld")
                   for p in (REPO / top).rglob("values*.yaml"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert key_lines(text) == _by_tree(text), path


def test_a_chart_layer_is_the_same_read_from_nodes_or_from_the_tree(monkeypatch):
    helm = pytest.importorskip("helm_python")
    from advisor.read.render import helm_values

    text = textwrap.dedent("""\
        replicaCount: 2
        db:
          host: orders-db
          port: 5432
          conf: |
            max_connections = 100
        true: yes
        """)
    fast = helm_values._layer_from_text("app/values.yaml", text, helm, [])
    monkeypatch.setattr(helm_values, "key_lines", lambda text: None)
    slow = helm_values._layer_from_text("app/values.yaml", text, helm, [])
    assert fast is not None and fast == slow
    assert fast.positions[("db", "port")] == 4 and fast.block_lines[("db", "conf")] == 5
    assert fast.positions[("True",)] == 7
    problems_fast: list = []
    problems_slow: list = []
    monkeypatch.undo()
    assert helm_values._layer_from_text("v.yaml", "- a\n", helm, problems_fast) is None
    monkeypatch.setattr(helm_values, "key_lines", lambda text: None)
    assert helm_values._layer_from_text("v.yaml", "- a\n", helm, problems_slow) is None
    assert problems_fast == problems_slow and problems_fast


def test_random_values_texts_read_the_same_or_are_left_to_the_tree():
    import random

    rng = random.Random(19)
    keys = ["a", "b", "true", "0x1F", "1", "1.0", "~", "'q'", "<<", "-_", "on", "1_0", ""]
    values = ["", " 1", " x", " |\n    t\n    u", " >\n    f", " [1, 2]", " {c: d}", " &n 3",
              " *n", " !!str 4", " '5'", " \"l\\nm\"", " ._", " -", " null"]
    read = 0
    for _ in range(1500):
        lines = []
        for _ in range(rng.randint(1, 6)):
            indent = "  " * rng.randint(0, 2)
            lead = rng.choice(["", "", "- "])
            lines.append(f"{indent}{lead}{rng.choice(keys)}:{rng.choice(values)}")
        if rng.random() < 0.2:
            lines.insert(rng.randint(0, len(lines)), "---")
        text = "\n".join(lines) + "\n"
        docs, problems = load_yaml_stream(text, "values.yaml")
        found = key_lines(text)
        if problems:
            assert found is None, text
            continue
        if found is not None:
            read += 1
            lines_, blocks = {}, {}
            _positions(docs[0][0] if docs else {}, (), lines_, blocks)
            assert found == (lines_, blocks), text
    assert read > 100  # enough of them plain trees, read from the nodes and compared
