"""The parent's cheaper paths through a Helm chart give what the slower ones gave (issue 19):
a template is read with one lstat (Root.read_below) when it is a plain file, else as
read_text reads it."""

from __future__ import annotations

import textwrap

import pytest

from advisor.read.fs import InputError, Root
from advisor.read.render.helm_positions import template_text


def _read_text_or_none(root: Root, display: str) -> str | None:
    """template_text before Root.read_below: read_text, None for what it refuses."""
    if "#" in display:
        return None
    try:
        return root.read_text(display)
    except InputError:
        return None


def test_a_plain_template_is_read_without_read_text(tmp_path, monkeypatch, reads):
    (tmp_path / "app" / "templates").mkdir(parents=True)
    (tmp_path / "app" / "templates" / "cm.yaml").write_text("kind: ConfigMap\n")
    root = Root.of(tmp_path)

    def refused(*_a, **_k):
        raise AssertionError("read_text")

    monkeypatch.setattr(Root, "read_text", refused)
    assert template_text(root, "app/templates/cm.yaml") == "kind: ConfigMap\n"
    assert list(reads.values()) == [1]


@pytest.mark.parametrize("display", [
    "app/templates/cm.yaml", "app/templates/link.yaml", "linked/templates/cm.yaml",
    "app/templates/bad.yaml", "app/templates/missing.yaml", "app/templates",
    "./app/templates/cm.yaml", "app/../app/templates/cm.yaml", "app/templates/bom.yaml",
    "app/charts/db.tgz#db/templates/x.yaml", "app/templates/outside.yaml",
    "app/templates/empty.yaml",
])
def test_template_text_is_what_read_text_gives(tmp_path, display):
    templates = tmp_path / "repo" / "app" / "templates"
    templates.mkdir(parents=True)
    (templates / "cm.yaml").write_text("kind: ConfigMap\nmetadata:\n  name: x\n")
    (templates / "link.yaml").symlink_to(templates / "cm.yaml")
    (tmp_path / "repo" / "linked").symlink_to(tmp_path / "repo" / "app")
    (templates / "bad.yaml").write_bytes(b"kind: \xff\n")
    (templates / "bom.yaml").write_bytes(b"\xef\xbb\xbfkind: ConfigMap\n")
    (templates / "empty.yaml").write_text("")
    (tmp_path / "elsewhere.yaml").write_text("kind: Secret\n")
    (templates / "outside.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    root = Root.of(tmp_path / "repo")
    assert template_text(root, display) == _read_text_or_none(Root.of(tmp_path / "repo"),
                                                               display)


# --- the baseline flattened from the nodes its positioned read composed ------------------

_DOCUMENTS = [
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  port: \"5432\"\n",
    "---\n# only a comment\n---\nkind: Service\nmetadata: {name: b}\nspec:\n  ports: [80, 443]\n",
    "kind: List\nitems:\n- kind: ConfigMap\n  metadata: {name: c}\n- kind: Secret\n"
    "  metadata: {name: d}\n  stringData: {x: y}\n",
    "kind: ConfigMap\nmetadata: {name: e}\nbase: &b {x: 1, y: [1, 2]}\ncopy: *b\n"
    "merged:\n  <<: *b\n  z: 3\n",
    "kind: ConfigMap\nmetadata: {name: f}\ndata: {k: 1, k: 2}\n",
    "kind: ConfigMap\nmetadata: {name: g}\n? [a, b]\n: complex key\n",
    "kind: ConfigMap\nmetadata: {name: h}\n1: int key\ntrue: bool key\nnull: x\n",
    "kind: ConfigMap\nmetadata: {name: i}\ndata:\n  b: !!binary aGVsbG8=\n  c: !custom x\n"
    "  n: !!int 12\n",
    "kind: ConfigMap\nmetadata: {name: j}\ndata:\n  n: !!int twelve\n",
    "kind: ConfigMap\nmetadata: {name: k}\ndata: [\n",
    "kind: ConfigMap\nmetadata: {name: l}\n---\nkind: Secret\nmetadata: {name: m\n",
    "kind: 1\nmetadata: {name: n}\n---\nkind: ConfigMap\nmetadata: {name: 2}\n",
    "a: &a [*a]\nkind: ConfigMap\nmetadata: {name: o}\n",
    "kind: ConfigMap\nmetadata: {name: p}\nconf: |\n  max_connections = 100\n  x = 'y'\n",
    "",
    "\n\n",
    "kind: ConfigMap\nmetadata: {name: q}\nd:\n" + "".join(f"{' ' * i}- \n" for i in range(1, 5)),
    "kind: ConfigMap\nmetadata: {name: r}\nd: " + "[" * 300 + "]" * 300 + "\n",
    "kind: ConfigMapList\nitems: 3\nmetadata: {name: s}\n",
    "\ufeffkind: ConfigMap\nmetadata: {name: t}\n",
]


def _fields_or_error(rendered, reads=None):
    from advisor.read.render.helm_trace import _parse_all

    try:
        return _parse_all(rendered, reads)
    except Exception as exc:  # the tracer's baseline is {} then; which error is the same
        return type(exc)


def _read(text, key="x.yaml"):
    """The BaselineRead of `text` as advisor.read.render.helm._objects_of makes it."""
    from advisor.read.render.helm_trace import baseline_read
    from advisor.read.sources.k8s import k8s_objects
    from advisor.read.yamlpos import Composed

    composed = Composed(text)
    k8s_objects(text, key, composed=composed)
    return baseline_read(composed)


@pytest.mark.parametrize("text", _DOCUMENTS)
def test_baseline_fields_from_the_positioned_read_are_those_of_a_new_read(text):
    rendered = {"app/templates/x.yaml": text, "app/templates/NOTES.txt": text}
    reads = {key: _read(value, key) for key, value in rendered.items()}
    assert _fields_or_error(rendered, reads) == _fields_or_error(rendered)


def test_a_baseline_template_read_whole_is_not_read_again(monkeypatch):
    from advisor.read.render import helm_trace

    text = _DOCUMENTS[0] + "---\n" + _DOCUMENTS[2]
    read = _read(text)
    assert read.fields is not None and read.error is None
    expected = helm_trace._parse_all({"x.yaml": text})

    def refused(*_a):
        raise AssertionError("read again")

    monkeypatch.setattr(helm_trace, "_objects_fields", refused)
    assert helm_trace._parse_all({"x.yaml": text}, {"x.yaml": read}) == expected
    assert len(expected) == 3


def test_a_baseline_template_whose_read_stopped_is_read_again():
    from advisor.read.render import helm_trace

    text = "kind: ConfigMap\nmetadata: {name: j}\ndata:\n  n: !!int twelve\n"
    read = _read(text)
    assert read.fields is None and read.error is None
    assert helm_trace._parse_all({"x.yaml": text}, {"x.yaml": read}) == \
        helm_trace._parse_all({"x.yaml": text})
    other = "kind: ConfigMap\nmetadata: {name: z}\n"  # the same key, another text
    assert helm_trace._parse_all({"x.yaml": other}, {"x.yaml": read}) == \
        helm_trace._parse_all({"x.yaml": other})


def test_a_baseline_template_that_is_not_traced_raises_as_before():
    from advisor.read.render import helm_trace

    text = "a: &a [*a]\nkind: ConfigMap\nmetadata: {name: o}\n"  # a node inside itself
    read = _read(text)
    assert read.error is not None
    with pytest.raises(type(read.error)):
        helm_trace._parse_all({"x.yaml": text})
    with pytest.raises(type(read.error)):
        helm_trace._parse_all({"x.yaml": text}, {"x.yaml": read})


# --- relocating short packed positions in their own form ----------------------------------

_RELOCATED = [
    "a:\n  b: 1\n  c: [1, 2]\nd:\n- x: 1\n- 2\n- []\n- {}\n",
    "a: 1\na: 2\nb:\n  c: 3\n  c: 4\n",
    "base: &b\n  x: 1\n  y: 2\nuse:\n  <<: *b\n  z: 3\nlist: &l [1, 2]\nagain: *l\n",
    "k: |\n  text\n  more\nn: null\ne: ''\n",
    "1: x\ntrue: y\n1.0: z\n",
]


def _packed_bytes(node, out):
    from advisor.read.yamlnodes import Positions

    if isinstance(node, Positions):
        out.append((node._keys, node._pos, getattr(node, "_data", None)))
    if isinstance(node, dict | list):
        for child in node.values() if isinstance(node, dict) else node:
            _packed_bytes(child, out)
    return out


@pytest.mark.parametrize("text", _RELOCATED)
@pytest.mark.parametrize("moves", [
    {0: 7, 1: 9, 3: 2, 5: 40}, {0: 65535, 2: 65536}, {1: -1}, {0: None}, {},
    {i: 3 * i for i in range(12)},
])
def test_short_positions_moved_in_place_are_the_general_paths_bytes(text, moves, monkeypatch):
    from advisor.read.render import helm_positions
    from advisor.read.yamlpos import load_all

    general = next(load_all(text))
    monkeypatch.setattr(helm_positions, "_moved_short", lambda *_a: None)
    try:
        helm_positions.relocate(general, moves)
        expected: object = _packed_bytes(general, [])
    except TypeError as exc:  # a line that is not an int, where a path reaches it
        expected = type(exc)
    monkeypatch.undo()
    short = next(load_all(text))
    try:
        helm_positions.relocate(short, moves)
        found: object = _packed_bytes(short, [])
    except TypeError as exc:
        found = type(exc)
    assert found == expected


def test_short_positions_are_moved_without_repacking(monkeypatch):
    from advisor.read.render import helm_positions
    from advisor.read.yamlpos import load_all

    tree = next(load_all(_RELOCATED[0]))
    expected = next(load_all(_RELOCATED[0]))
    helm_positions.relocate(expected, {0: 7, 3: 2})

    def refused(*_a):
        raise AssertionError("repacked")

    monkeypatch.setattr(helm_positions, "pack_positions", refused)
    helm_positions.relocate(tree, {0: 7, 3: 2})
    assert _packed_bytes(tree, []) == _packed_bytes(expected, [])


# --- a values file's plain scalars resolved by yamlpos's table ------------------------------

def _tag_of_by_list(text):
    """helm_value_lines._tag_of before yamlpos's table: a list of resolvers per scalar."""
    from advisor.read.yamlpos import _Resolver

    table = _Resolver.yaml_implicit_resolvers
    for tag, pattern in [*table.get(text[0] if text else "", ()), *table.get(None, ())]:
        if pattern.match(text):
            return str(tag)
    return None


@pytest.mark.parametrize("text", [
    "", "~", "null", "Null", "NULL", "nil", "true", "True", "yes", "no", "on", "off", "y",
    "0", "-1", "+12", "0x1F", "0o17", "017", "1_000", "1.5", "-.5", ".inf", "-.Inf", ".nan",
    "1e3", "1.0e+3", "<<", "=", "2024-01-02", "2001-12-14t21:59:43.10-05:00", "a", "-", ".",
    "._", "nginx", "8080", "1.16.0", "10Gi", "é", "?", "1:30", "190:20:30",
])
def test_a_plain_scalars_tag_is_what_the_list_of_resolvers_gives(text):
    from advisor.read.render.helm_value_lines import _tag_of

    assert _tag_of(text) == _tag_of_by_list(text)


# --- the numbers and the strings read from one parse of their render ----------------------

@pytest.fixture
def one_parse_taken(monkeypatch) -> list[bool]:
    """Whether each ValuesTracer._together of the test took the one parse of both groups
    (the render of both was in the baseline's shape): else a test of it proves nothing."""
    pytest.importorskip("helm_python")
    from advisor.read.render import helm_trace

    real = helm_trace.ValuesTracer._parsed_in_shape
    taken: list[bool] = []

    def counted(self, changed):
        found = real(self, changed)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(helm_trace.ValuesTracer, "_parsed_in_shape", counted)
    return taken


# Charts whose render of both groups is the baseline once the sentinels are put back (the
# Airflow chart's is not, so each group renders alone; tests/realworld/bitnami-chart has
# no number to trace).
_TRACED_CHARTS = ["fixtures/helm-chart-prod", "fixtures/bitnami-values"]


@pytest.mark.parametrize("fixture", _TRACED_CHARTS)
def test_one_parse_of_both_groups_gives_what_a_parse_each_gave(fixture, monkeypatch,
                                                              one_parse_taken):
    """ValuesTracer._together reads the render of numbers and strings once and derives
    each group's fields by putting the other's markers back; the check's whole answer
    (every value_sources line, notice and finding) is the one each group's own parse
    gave, and the one parse is taken on these charts (else the test proves nothing)."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from advisor.read.render import helm_trace
    from advisor.report.json import render
    from advisor.rules import load_rules
    from tests.cli_helpers import REPO

    registry = load_rules()

    def check() -> str:
        result = run_check([str(REPO / fixture)], CheckOptions(cache=False), registry)
        return render(result, registry)

    once = check()
    assert any(one_parse_taken)
    monkeypatch.setattr(helm_trace.ValuesTracer, "_parsed_in_shape", lambda *_a: None)
    assert once == check()


_MIXED_VALUES = """\
db:
  user: app
  password: secret
  host: db.example.internal
  port: 5432
  name: shop
pool: 20
maxClient: 400
mode: transaction
"""

_MIXED_CONFIG = """\
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-pgbouncer
data:
  pgbouncer.ini: |
    [databases]
    {{ .Values.db.name }} = host={{ .Values.db.host }} port={{ .Values.db.port }} \
dbname={{ .Values.db.name }}
    [pgbouncer]
    pool_mode = {{ .Values.mode }}
    default_pool_size = {{ .Values.pool }}
    max_client_conn = {{ .Values.maxClient }}
"""


def _mixed_template() -> str:
    """tests/test_helm_trace_sources' Deployment with a URL of both groups' values, and a
    pgbouncer.ini whose lines hold both."""
    from tests.test_helm_trace_sources import DEPLOYMENT

    url = ("postgres://{{ .Values.db.user }}:{{ .Values.db.password }}@{{ .Values.db.host }}"
           ":{{ .Values.db.port }}/{{ .Values.db.name }}?pool={{ .Values.pool }}")
    return (textwrap.dedent(DEPLOYMENT % "{{ .Values.pool }}")
            + f"          env:\n            - name: DATABASE_URL\n              value: \"{url}\"\n"
            + _MIXED_CONFIG)


def test_a_field_of_numbers_and_strings_is_traced_as_by_a_parse_each(tmp_path, monkeypatch,
                                                                    one_parse_taken):
    """A URL and a pgbouncer.ini line that hold markers of both groups: each group's hits
    are found where a render of it alone puts them (the other group's markers put back
    before a position in the text is taken), as with a parse of each group's own text."""
    from advisor.read.fs import Root
    from advisor.read.render import helm_trace
    from advisor.read.render.helm import render_chart
    from tests.test_helm_trace_sources import _chart

    _chart(tmp_path, _MIXED_VALUES, _mixed_template())

    def traced() -> list:
        r = render_chart(Root.of(tmp_path), "app", release="r1")
        assert not r.problems, r.problems
        return [(o.ref, o.value_sources) for o in r.objects]

    once = traced()
    assert one_parse_taken == [True]
    sources = dict(once)
    assert len(sources["ConfigMap/r1-pgbouncer"]) >= 1 and len(sources["Deployment/r1-db"]) >= 2
    monkeypatch.setattr(helm_trace.ValuesTracer, "_parsed_in_shape", lambda *_a: None)
    assert once == traced()


def _declared_parsing_each(root: Root, chart_path) -> list[dict[str, object]]:
    """helm_local_deps.declared before its shortcuts: each file read and parsed."""
    from advisor.read.sources.k8s import get, load_yaml_stream

    deps: list[dict[str, object]] = []
    for file in ("Chart.yaml", "requirements.yaml"):
        try:
            text = root.read_text(chart_path / file)
        except InputError:
            continue
        docs, _problems = load_yaml_stream(text, root.rel(chart_path / file))
        listed = get(docs[0][0], "dependencies") if docs else None
        if isinstance(listed, list):
            deps += [d for d in listed if isinstance(d, dict)]
    return deps


@pytest.mark.parametrize(("chart", "requirements"), [
    ("apiVersion: v2\nname: app\nversion: 0.1.0\n", None),
    ("apiVersion: v2\nname: app\ndependencies:\n  - name: db\n    repository: file://../db\n",
     None),
    ('apiVersion: v2\nname: app\n"dependenc\\x69es":\n  - name: db\n', None),
    ("apiVersion: v1\nname: app\n", "dependencies:\n  - name: db\n    version: 1.0.0\n"),
    ("apiVersion: v1\nname: app\n", "# none\n"),
    ("apiVersion: v1\nname: app\n", "link"),
    ("name: [\n", None),
])
def test_declared_is_what_parsing_each_file_gives(tmp_path, chart, requirements):
    from advisor.read.render.helm_local_deps import declared

    app = tmp_path / "app"
    app.mkdir()
    (app / "Chart.yaml").write_text(chart)
    if requirements == "link":
        (app / "requirements.yaml").symlink_to(tmp_path / "missing.yaml")
    elif requirements is not None:
        (app / "requirements.yaml").write_text(requirements)
    root = Root.of(tmp_path)
    assert declared(root, app) == _declared_parsing_each(root, app)
    assert declared(root, app.relative_to(tmp_path)) == _declared_parsing_each(root, app)


def test_a_chart_without_dependencies_is_not_parsed_for_them(tmp_path, monkeypatch):
    from advisor.read.render import helm_local_deps

    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")

    def refused(*_a, **_k):
        raise AssertionError("parsed")

    monkeypatch.setattr(helm_local_deps, "load_yaml_stream", refused)
    assert helm_local_deps.declared(Root.of(tmp_path), tmp_path) == []


def test_each_template_is_read_once_for_positions_and_helpers(tmp_path, reads):
    """_objects_of's template reads and chart_text's walk share their texts."""
    from advisor.read.render.helm import _TextPlacer
    from advisor.read.render.helm_text_lines import chart_text

    templates = tmp_path / "app" / "templates"
    templates.mkdir(parents=True)
    (templates / "_helpers.tpl").write_text('{{- define "app.labels" -}}\na: b\nc: d\n{{- end }}\n')
    (templates / "cm.yaml").write_text('metadata:\n  labels:\n    {{- include "app.labels" . '
                                       '| nindent 4 }}\n')
    (templates / "odd#name.yaml").write_text("kind: ConfigMap\n")
    expected = chart_text(Root.of(tmp_path), "app")
    reads.clear()
    places = _TextPlacer(Root.of(tmp_path), "app", {})
    assert places.template("app/templates/cm.yaml") == (templates / "cm.yaml").read_text()
    assert places.template("app/templates/odd#name.yaml") is None  # as template_text
    assert places._text("app") == expected
    assert places._helpers().defines.keys() == {"app.labels"}
    assert places.template("app/templates/cm.yaml") == (templates / "cm.yaml").read_text()
    assert reads == {str(templates / name): 1
                     for name in ("_helpers.tpl", "cm.yaml", "odd#name.yaml")}


def test_the_library_is_looked_for_until_the_engine_answers(monkeypatch):
    """helm._engine: find_spec searched sys.path again for every chart of a run."""
    import importlib.util

    from advisor.read.render import helm
    from advisor.read.render.helm_process import EngineCalls

    looked: list[str] = []
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: looked.append(name) or object())

    class Process:
        def __init__(self) -> None:
            self.answers = 0
            self._calls = EngineCalls(self)

        def calls(self) -> EngineCalls:
            return self._calls

        def request(self, payload, timeout=None):
            self.answers += 1
            return "4.0.0"

    process = Process()
    assert helm._engine(process) is process.calls()
    assert helm._engine(process) is process.calls()
    assert looked == ["helm_python"] and process.answers == 1
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert helm._engine(Process()) is None  # not installed: still said as before
