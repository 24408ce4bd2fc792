"""advisor.read.yamlpos (libyaml + positions) against ruamel.yaml's round-trip loader, which
it replaces for reading manifests: the same values and the same line/column of every
key, value and item, over every YAML file of the fixtures and a corpus of scalars."""

from __future__ import annotations

import datetime
import math
import warnings
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from advisor.read import yamlpos

REPO = Path(__file__).resolve().parent.parent

# Plain scalars whose type a YAML 1.1 reader (PyYAML's own resolver) and a 1.2 one
# (ruamel.yaml, Kubernetes' JSON-compatible view) tell apart, and numbers in every form.
SCALARS = [
    "on", "yes", "no", "off", "y", "n", "True", "TRUE", "tRue", "true", "false", "False",
    "FALSE", "0o17", "017", "0x1F", "-0x1F", "+0x1f", "0X1F", "1_000", "1:30", "~", "null",
    "Null", "NULL", "nULL", "", ".inf", "-.Inf", "+.inf", ".NaN", ".nan", "NaN", "1e3",
    "1E3", "1e+3", "1.5e-3", "1.5", "+1", "-0", "0b101", "-0b11", "12e03", ".5", "+.5",
    "-.5", "1.", "-1.", "0.", "00", "09", "0o8", "08", "1__2", "_1", "1_", "0x_1",
    "3.14_15", "1,000", "12:30:45", "0.0.1", "v1", "1.2.3", "apps/v1", "'3'", '"3"',
    "!!str 3", "!!int '3'", "!!float 3", "!!bool true", "!!null ''", "1e", "e3", ".e3",
    "1.e3", "-", "+", "--1", "0o", "0x", "0b", "1 2", "8080", "80m", "2Gi", "512Mi", "0.5",
    "100%", "|\n  a\n  b", ">\n  folded\n  text", "|-\n  x", "'it''s'", '"tab\\tx"',
]


def _ruamel(text: str) -> list:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(yaml.load_all(text))


def _plain(value, positions: list | None = None, path: str = ""):
    """Values made comparable (ruamel's int/float/str subclasses as the base type; dates
    as the text yamlpos keeps), and every position collected on the way."""
    lc = getattr(value, "lc", None)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = _plain(k)
            if positions is not None and lc is not None and k in lc.data:
                positions.append((f"{path}/{key}", tuple(lc.data[k])))
            out[key] = _plain(v, positions, f"{path}/{key}")
        if positions is not None and lc is not None:
            positions.append((path, (lc.line, lc.col)))
        return out
    if isinstance(value, list):
        if positions is not None and lc is not None:
            positions.append((path, (lc.line, lc.col)))
            positions.extend((f"{path}[{i}]", tuple(lc.data[i])) for i in lc.data or {})
        return [_plain(v, positions, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return ("int", int(value))
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else float(value))
    if isinstance(value, datetime.date):
        return ("date", value.isoformat()[:10])
    return ("str", str(value))


@pytest.mark.parametrize("scalar", SCALARS)
def test_scalars_resolve_as_ruamel_does(scalar: str) -> None:
    text = f"k: {scalar}\n"
    from ruamel.yaml.error import YAMLError

    try:
        theirs = _plain(_ruamel(text)[0]["k"])
    except YAMLError:  # e.g. `k: -`: both refuse it
        with pytest.raises(yamlpos.YAMLError):
            yamlpos.load(text)
        return
    ours = _plain(yamlpos.load(text)["k"])
    assert ours == theirs


def test_dates_stay_text() -> None:
    # ruamel.yaml builds datetime.date; Kubernetes reads these fields as strings
    doc = yamlpos.load("d: 2001-12-14\nt: 2001-12-14T21:59:43.10-05:00\n")
    assert doc == {"d": "2001-12-14", "t": "2001-12-14T21:59:43.10-05:00"}


def _yaml_files() -> list[Path]:
    found = [p for p in sorted((REPO / "fixtures").rglob("*")) + sorted(
        (REPO / "tests").rglob("*")) if p.suffix in (".yaml", ".yml") and p.is_file()]
    # Helm templates are not YAML until rendered
    return [p for p in found if "templates" not in p.parts]


def test_corpus_is_large() -> None:
    assert len(_yaml_files()) >= 50


@pytest.mark.parametrize("path", _yaml_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_files_read_as_ruamel_reads_them(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    theirs_pos: list = []
    ours_pos: list = []
    theirs = [_plain(d, theirs_pos) for d in _ruamel(text)]
    ours = [_plain(d, ours_pos) for d in yamlpos.load_all(text)]
    assert ours == theirs
    # the same positions as ruamel, and besides them only merged keys' (ruamel has none
    # for a key a `<<` brings): each where the anchor writes that key
    written = {where for where, _ in theirs_pos}
    assert [p for p in ours_pos if p[0] in written] == theirs_pos
    lines = text.splitlines()
    for where, (line, col, *_value) in (p for p in ours_pos if p[0] not in written):
        key = where.rsplit("/", 1)[-1]
        assert lines[line][col:].startswith(key.split("'")[-2]), (where, line, col)


def test_block_scalar_positions_and_style() -> None:
    doc = yamlpos.load("data:\n  postgresql.conf: |\n    max_connections = 100\n")
    value = doc["data"]["postgresql.conf"]
    assert value == "max_connections = 100\n" and value.style == "|"
    assert doc["data"].lc.key("postgresql.conf") == (1, 2)
    assert doc["data"].lc.value("postgresql.conf") == (1, 19)


def test_aliases_share_one_object_and_merge_keys_merge() -> None:
    doc = yamlpos.load("base: &b {x: 1, y: 2}\nuse: *b\nmerged:\n  <<: *b\n  y: 3\n")
    assert doc["use"] is doc["base"]
    assert doc["merged"] == {"y": 3, "x": 1}
    # a merged key is cited where the anchor writes it, not at the `<<` line
    assert doc["merged"].lc.key("x") == (0, 10) and doc["merged"].lc.value("x") == (0, 13)
    assert doc["merged"].lc.key("y") == (4, 2)  # written here: its own line


def test_last_repeated_key_wins_as_in_kubernetes() -> None:
    doc = yamlpos.load("replicas: 2\nname: a\nreplicas: 5\n")
    assert doc == {"replicas": 5, "name": "a"}
    assert doc.lc.key("replicas") == (2, 0)


def test_errors_carry_their_line() -> None:
    with pytest.raises(yamlpos.MarkedYAMLError) as info:
        list(yamlpos.load_all("a: 1\nb: [1, 2\nc: 3\n"))
    assert info.value.problem_mark is not None and info.value.problem_mark.line >= 1
    with pytest.raises(yamlpos.MarkedYAMLError):
        yamlpos.load("? [a]\n: 1\n")  # a sequence as a key: not a dict key


def test_a_block_scalar_is_read_again_as_yaml() -> None:
    # kustomize inline patches: YAML text inside a YAML block scalar
    outer = yamlpos.load("patch: |\n  spec:\n    replicas: 3\n")
    assert yamlpos.load(outer["patch"]) == {"spec": {"replicas": 3}}


def test_unique_keys_refuses_a_repeated_key() -> None:
    with pytest.raises(yamlpos.MarkedYAMLError) as info:
        yamlpos.load("a: 1\nb: 2\na: 3\n", unique_keys=True)
    assert "duplicate key 'a'" in str(info.value) and info.value.problem_mark.line == 2


def test_primed_reader_pattern_matches_the_same_code_points() -> None:
    import re

    everything = "".join(map(chr, range(0x110000)))
    # re.UNICODE (the default for str) gives another cache key: compiled afresh
    theirs = re.compile(yamlpos.PYYAML_NON_PRINTABLE, re.UNICODE)
    ours = re.compile(yamlpos.SAME_SET)
    assert theirs is not ours
    assert theirs.findall(everything) == ours.findall(everything)


def test_primed_pattern_is_what_pyyaml_uses() -> None:
    """In a fresh interpreter, importing advisor.read.yamlpos leaves yaml.reader with the
    cheaper pattern (the start-up saving took; see advisor/read/yamlpos.py)."""
    import subprocess
    import sys

    code = ("import advisor.read.yamlpos as y, yaml.reader as r;"
            "print(r.Reader.NON_PRINTABLE.pattern == y.SAME_SET)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.strip() == "True"


def _positions(node) -> list:
    """Every position of a tree, as lc reads them (line, col, key/value/item pairs)."""
    out: list = []
    if isinstance(node, dict):
        out.append(("map", node.lc.line, node.lc.col))
        for k, v in node.items():
            out.append((k, node.lc.key(k), node.lc.value(k)))
            out += _positions(v)
    elif isinstance(node, list):
        out.append(("seq", node.lc.line, node.lc.col))
        for i, v in enumerate(node):
            out.append((i, node.lc.item(i)))
            out += _positions(v)
    return out


@pytest.mark.parametrize("pad", [0, 65_530, 70_000])
def test_positions_past_two_byte_lines_and_columns(pad: int) -> None:
    """Positions are held two bytes each when they fit, four when a line or column passes
    65,535: both read the same, through lc, `data` and the parse cache."""
    from advisor.read.cache import decode_tree, encode_tree

    text = "\n" * pad + (
        "a:\n  b: [1, {c: 2}]\n  d:\n    - e: 3\n      f: x\n"
        + "  wide: {" + " " * 70_000 + "g: 4}\n")
    ours = yamlpos.load(text)
    theirs = YAML().load(text)
    assert ours.lc.line == pad and ours["a"].lc.line == pad + 1
    assert ours["a"]["d"][0].lc.key("f") == (pad + 4, 6)
    assert ours["a"]["wide"].lc.key("g")[1] > 65_536
    expected = _positions(ours)
    assert expected == _positions(decode_tree(encode_tree(ours)))
    assert [p for p in expected if p[0] == "map"] == [
        ("map", n.lc.line, n.lc.col) for n in (theirs, theirs["a"], theirs["a"]["b"][1],
                                              theirs["a"]["d"][0], theirs["a"]["wide"])]
    for node in (ours, ours["a"], ours["a"]["b"], ours["a"]["d"]):
        node.lc.data  # noqa: B018 - unpacked: the same positions from the dict
    assert _positions(ours) == expected
    moved = yamlpos.load(text)
    moved["a"].lc.line = pad + 70_000  # a renderer moving a node (helm_positions)
    assert moved["a"].lc.line == pad + 70_000 and moved["a"].lc.key("b") == (pad + 1, 2)


def test_the_loader_resolves_as_base_resolver_does():
    # _Loader.resolve skips BaseResolver's path-resolver steps (yamlpos registers none):
    # the same tag for every scalar of the corpus, plain or not, and for containers.
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode
    from yaml.resolver import BaseResolver

    loader = yamlpos._Loader("a: 1\n")
    try:
        reference = yamlpos._Resolver()
        for text in [*SCALARS, "<<", "<", "0", "~x", "nulls", "f", "t", "-.", ".", "_"]:
            for implicit in ((True, False), (False, True), (False, False)):
                assert loader.resolve(ScalarNode, text, implicit) == BaseResolver.resolve(
                    reference, ScalarNode, text, implicit), (text, implicit)
        for kind in (SequenceNode, MappingNode):
            assert loader.resolve(kind, None, True) == BaseResolver.resolve(
                reference, kind, None, True)
    finally:
        loader.dispose()


def test_an_anchor_defined_again_is_read_as_kustomize_reads_it():
    """YAML lets an anchor be defined again, an alias naming the latest; kustomize and
    Flux read such files (billimek/k8s-gitops' plex release, JJGadgets' authentik: each
    was dropped as 'invalid YAML: found duplicate anchor', audit D). Lines stay."""
    from advisor.read.sources.k8s import load_yaml_stream

    text = ("kind: ConfigMap\nmetadata: {name: a}\ndata:\n  one: &v '1'\n  two: *v\n"
            "  three: &v '3'\n  four: *v\n  text: '&v *v'\n---\nkind: ConfigMap\n"
            "metadata: {name: b}\ndata: {x: &v '5', y: *v}\n")
    docs, problems = load_yaml_stream(text, "x.yaml")
    assert problems == []
    assert [d["data"] for d, _line in docs] == [
        {"one": "1", "two": "1", "three": "3", "four": "3", "text": "&v *v"},
        {"x": "5", "y": "5"}]
    assert [line for _d, line in docs] == [1, 10]
    # an alias of no anchor at all is still an error, at its line
    docs, problems = load_yaml_stream("a: &v 1\nb: &v 2\nc: *w\n", "y.yaml")
    assert docs == [] and problems[0].location.line == 3
