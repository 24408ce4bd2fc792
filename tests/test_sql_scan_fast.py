"""The SQL/app scan's faster paths give what the slower ones gave (issue 19): a source read
with one lstat (Root.read_below) is the text read_text gives and is read once; built
JavaScript (minified, bundles, dist/ and build/) is not scanned; literals blanked by
bisection are blanked as by a look at every literal; the Python call index lists the
calls ast.walk finds, in its order."""

from __future__ import annotations

import ast
import os
import random
from pathlib import Path

import pytest

from advisor.read.apps.pysource import _nodes
from advisor.read.fs import InputError, ReadOnce, Root
from advisor.read.sql.context import _blank_literals, _merged
from advisor.read.sql.extract import classify, scan_sql_sources

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("path", [
    "static/js/jquery-3.6.0.min.js", "web/app.bundle.js", "public/vendor.chunk.mjs",
    "dist/index.js", "packages/api/dist/server.cjs", "frontend/build/main.ts",
    "static/JS/zxcvbn.MIN.JS",
])
def test_built_javascript_is_not_scanned(path):
    assert classify(path) is None


@pytest.mark.parametrize(("path", "kind"), [
    ("src/db.js", "js"), ("server/minify.ts", "js"), ("lib/bundler.js", "js"),
    ("dist/schema.sql", "sql"), ("build/tools.py", "python"), ("distance/q.ts", "js"),
    ("app/admin.min.py", "python"),
])
def test_sources_beside_built_javascript_still_are(path, kind):
    assert classify(path) == kind


def test_a_minified_file_with_sql_in_it_gives_no_hazard(tmp_path):
    (tmp_path / "static").mkdir()
    sql = 'db.query("SET search_path = app");'
    (tmp_path / "static" / "app.min.js").write_text(sql)
    (tmp_path / "app.js").write_text(sql)
    hazards, _ = scan_sql_sources(Root.of(tmp_path), ["static/app.min.js", "app.js"])
    assert [h.location.path for h in hazards] == ["app.js"]


def test_read_below_is_read_text_with_one_read(tmp_path, reads):
    (tmp_path / "src").mkdir()
    target = tmp_path / "src" / "q.py"
    target.write_text("SQL = 'SELECT 1'\n")
    root = Root(Root.of(tmp_path).path, ReadOnce())
    text, st = root.read_below("src/q.py", keep=True)
    assert text == Root.of(tmp_path).read_text("src/q.py")
    assert st is not None and st.st_ino == os.lstat(target).st_ino
    assert root.read_below("src/q.py") == (text, None)  # kept: not read again
    assert root.read_text("src/q.py") == text
    assert reads == {str(target): 2}  # one here, one by the plain Root above


def test_read_below_leaves_what_is_not_plainly_a_file_to_read_text(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "q.py").write_text("x = 1\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "src" / "q.py")
    (tmp_path / "linked").symlink_to(tmp_path / "src")
    (tmp_path / "bad.py").write_bytes(b"\xff\xfe")
    root = Root.of(tmp_path)
    for rel in ("link.py", "linked/q.py", "src/../src/q.py", "missing.py", "src", "",
                "/etc/passwd", "src//q.py", "./src/q.py"):
        assert root.read_below(rel) is None, rel
    with pytest.raises(InputError) as err:
        root.read_below("bad.py")
    assert (err.value.path, err.value.message) == ("bad.py", "not valid UTF-8 (byte 0xff)")


def test_sql_scan_of_this_repository_is_the_same_through_either_read(monkeypatch):
    root = Root.of(REPO)
    files = [str(p.relative_to(REPO)) for p in sorted((REPO / "tests" / "hazard_corpus")
                                                        .rglob("*")) if p.is_file()]
    fast = scan_sql_sources(root, files)
    monkeypatch.setattr(Root, "read_below", lambda self, rel, keep=False: None)
    assert scan_sql_sources(root, files) == fast
    assert fast[0]  # the corpus has hazards: the comparison is not of two empty lists


def _blank_naive(text: str, a: int, b: int, spans: list[tuple[int, int]]) -> str:
    chunk = list(text[a:b])
    for s, e in spans:
        if e > a and s < b:
            for k in range(max(s, a), min(e, b)):
                chunk[k - a] = " "
    return "".join(chunk)


def test_literals_blanked_by_bisection_as_by_looking_at_each():
    rnd = random.Random(19)
    for _ in range(5000):
        n = rnd.randint(0, 50)
        text = "".join(rnd.choice("ab(),") for _ in range(n))
        spans = []
        for _ in range(rnd.randint(0, 8)):
            s = rnd.randint(0, n)
            spans.append((s, rnd.randint(s, n)))
        a = rnd.randint(0, n)
        b = rnd.randint(a, n)
        assert _blank_literals(text, a, b, _merged(sorted(spans))) == \
            _blank_naive(text, a, b, spans), (text, a, b, spans)


def test_python_calls_indexed_in_ast_walk_order():
    for path in sorted((REPO / "advisor" / "read").rglob("*.py")):
        tree = ast.parse(path.read_text())
        kinds = (ast.Call, ast.Import, ast.ImportFrom)
        assert _nodes(tree, kinds) == [n for n in ast.walk(tree) if isinstance(n, kinds)]
