"""The SQL scan skips the literal walk of a Python file none of whose strings can matter
(advisor.read.sql.literals.may_hold_sql_literal, issue 19): every literal the scan uses
(one that looks like a statement, or holds "postgres"/"options") is in a file the filter
lets through, however the source writes it, and the scan's result is the same."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from advisor.read.sql import extract
from advisor.read.sql.extract import looks_like_statement, scan_text
from advisor.read.sql.literals import may_hold_sql_literal, python_literals

REPO = Path(__file__).resolve().parent.parent

# Each source has a literal the scan uses, written the ways decoding can hide its word.
MATTERS = [
    'cur.execute("SELECT 1")',
    'q = "" "select 1"',
    'q = ("" # a comment between joined literals\n      "select 1")',
    'q = "\\n  SET search_path = app"',
    'q = """\nLISTEN jobs"""',
    'q = rf"  begin; select 1"',
    'q = u"BEGIN"',
    'q = ("\\\n" "do $$ begin end $$")',
    'q = "SEL" "ECT 1"',
    'q = "SEL" + "ECT 1"',
    'q = ("SEL"\n     # split\n     "ECT 1")',
    'q = "SEL\\\nECT 1"',
    'q = "SEL\\\r\nECT 1"',
    'q = "\\x53ELECT 1"',
    'q = "\\u0053ELECT 1"',
    'q = "\\N{LATIN CAPITAL LETTER S}ELECT 1"',
    'q = "\\123ELECT 1"',
    'q = f"e{x}ecute p"',
    'q = "e" + x + "ecute p"',
    'q = "e" f"{x}ecute p"',
    'q = ("e"  # c\n     + x + "ecute p")',
    'dsn = "postgresql://app@db/app"',
    'dsn = "post" "gres://app@db/app"',
    'dsn = "host=db options=\'-c search_path=app\'"',
    'dsn = "host=db opt" + "ions=-c x=1"',
    'q = "update" " t set a = 1"',
    'q = ("update "\n     "t set a = 1")',
    'q = "update" + " t set a = 1"',
    'q = "BEGIN;"',
    'q = (\n    """\n    select 1""")\n',
    'class C:\n    q = """\n    select 1"""\n',
]


def _used(source: str) -> list[str]:
    """The literals extract.scan_text uses: statements, and what drivers.literal_settings
    reads (a URL holds "postgres"; `options` counts with a URL or host=/dbname=)."""
    return [lit.text for lit in python_literals(ast.parse(source))
            if looks_like_statement(lit.text) or "postgres" in lit.text
            or ("options" in lit.text and ("postgres" in lit.text.casefold()
                                           or "host=" in lit.text or "dbname=" in lit.text))]


@pytest.mark.parametrize("source", MATTERS)
def test_every_way_of_writing_a_used_literal_is_let_through(source):
    assert _used(source)  # the case is one the scan uses
    assert may_hold_sql_literal(source)


@pytest.mark.parametrize("source", [
    'x = "hello"\nitems = set(a)\n',
    'name = "settings"\nlabel = "Resetting MFA"\n',
    'a = b \\\n    + c\nmsg = "a" + str(b)\n',
    'flags = {"sel": 1, "selected": True}\n',
    # a lone word is no statement; a docstring is never used; code after a closing quote
    'action = "update"\nchoices = [("create", "Create"), ("delete", "Delete")]\n',
    'def f():\n    """Update the cache."""\n',
    'async def f(\n    a,\n) -> None:\n    # why\n    """Create it."""\n',
    '"""Set up the module."""\nimport os\n',
    'name = f"{x}"\nwith open(name) as f:\n    pass\n',
    'opts = {"options": 1}\n',
])
def test_a_source_without_such_a_literal_is_skipped(source):
    assert not _used(source)
    assert not may_hold_sql_literal(source)


def test_a_commented_out_block_after_a_quote_is_read_in_linear_time():
    """A quote, then lines commented twice (`#     # note`): each line's comment could be
    split at its second `#`, 2^lines ways to try (tandoor's cookbook/apps.py, 2 KB,
    took 20 s in the filter)."""
    import time

    source = 'x = "a"\n' + "#     # note\n" * 40 + "y = 1\n"
    started = time.process_time()
    may_hold_sql_literal(source)
    assert time.process_time() - started < 0.5


def _python_files() -> list[Path]:
    return sorted(p for base in ("advisor", "tests", "fixtures", "bench")
                  for p in (REPO / base).rglob("*.py") if "__pycache__" not in p.parts)


def test_no_used_literal_is_skipped_in_this_repository():
    checked = skipped = 0
    for path in _python_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            used = _used(text)
        except SyntaxError:
            continue
        checked += 1
        if used:
            assert may_hold_sql_literal(text), path
        skipped += not may_hold_sql_literal(text)
    assert checked > 300 and skipped > 50  # the filter skips files (else it buys nothing)


def test_the_scan_finds_the_same_with_and_without_the_filter(monkeypatch):
    files = [p for p in _python_files() if p.parent.name != "sql"]
    texts = {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8", errors="replace")
             for p in files}
    filtered = {path: _scan(path, text) for path, text in texts.items()}
    monkeypatch.setattr(extract, "may_hold_sql_literal", lambda text: True)
    assert filtered == {path: _scan(path, text) for path, text in texts.items()}


def test_a_source_neither_filter_lets_through_is_not_parsed(monkeypatch):
    files = [p for p in _python_files() if p.parent.name != "sql"]
    texts = {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8", errors="replace")
             for p in files}
    parsed: list[str] = []
    real = ast.parse

    def counting(text, *args, **kwargs):
        parsed.append(kwargs.get("filename", ""))
        return real(text, *args, **kwargs)

    monkeypatch.setattr(extract.ast, "parse", counting)
    filtered = {path: _scan(path, text) for path, text in texts.items()}
    skipped = {path for path in texts if path not in parsed}
    assert len(skipped) > 50  # else the filter buys nothing
    assert all(not may_hold_sql_literal(texts[p]) and not any(
        w in texts[p] for w in ("django_pglocks", "asyncpg", "psycopg", "DATABASES"))
        for p in skipped)
    monkeypatch.setattr(extract, "may_hold_sql_literal", lambda text: True)
    monkeypatch.setattr(extract.drivers, "python_settings_may_apply", lambda text: True)
    assert filtered == {path: _scan(path, text) for path, text in texts.items()}
    driver_only = 'import psycopg\nconn = psycopg.connect(dsn)\n'  # no statement literal
    assert not may_hold_sql_literal(driver_only)
    assert extract.drivers.python_settings_may_apply(driver_only)


def _scan(path: str, text: str) -> object:
    try:
        return scan_text(path, text, "python")
    except ValueError as exc:  # urlsplit on a literal "postgresql://[..." (tests/test_advise.py)
        return repr(exc)


# --- JS/TS: the same filter before clike_literals ---------------------------------------

JS_MATTERS = [
    'db.query("SELECT 1")',
    "db.query('  select 1')",
    "db.query(`\n  LISTEN jobs`)",
    'db.query("" + "select 1")',
    'db.query("\\n" + "select 1")',
    'db.query("SEL" + "ECT 1")',
    'db.query("SEL" +\n  "ECT 1")',
    'db.query("SEL\\\nECT 1")',
    'db.query("\\SELECT 1")',
    'db.query("S\\ELECT 1")',
    'db.query("\\u0053ELECT 1")',
    "db.query(`e${x}ecute p`)",
    'db.query("e" + x + "ecute p")',
    'const url = "postgres://app@db/app?options=-c%20x%3D1"',
    'const url = "POSTGRESQL://app@db/app?options=-c%20x%3D1"',
    'const url = "post" + "gres://app@db/app?options=-c%20x%3D1"',
    'const dsn = "host=db options=\'-c search_path=app\'"',
    'const dsn = "host" + "=db options=\'-c search_path=app\'"',
    'const dsn = "host=db opt\\ions=\'-c search_path=app\'"',
]


def _code_used(lang: str, source: str) -> list[str]:
    """What the scan uses of a C-like or Ruby source: its literals that look like a
    statement, and what drivers.literal_settings makes of them."""
    from advisor.read.sql.drivers import literal_settings
    from advisor.read.sql.literals import clike_literals, ruby_literals

    literals = ruby_literals(source) if lang == "ruby" else clike_literals(source, lang)
    return [lit.text for lit in literals if looks_like_statement(lit.text)] + \
        [h.detail for h in literal_settings(f"a.{lang}", literals, lang, source)]


def _may_hold(lang: str, source: str) -> bool:
    from advisor.read.sql.literals import may_hold_clike_sql_literal, may_hold_ruby_sql_literal

    return (may_hold_ruby_sql_literal(source) if lang == "ruby"
            else may_hold_clike_sql_literal(source, lang))


def _same_with_and_without_the_filter(monkeypatch, texts: dict[tuple[str, str], str]) -> None:
    """Each (path, language) text scanned with the filters, then with both letting every
    file through: the same hazards and problems, and some found."""
    filtered = {key: scan_text(key[0], text, key[1]) for key, text in texts.items()}
    assert any(found for found, _problems in filtered.values())
    monkeypatch.setattr(extract, "may_hold_clike_sql_literal", lambda text, lang: True)
    monkeypatch.setattr(extract, "may_hold_ruby_sql_literal", lambda text: True)
    assert filtered == {key: scan_text(key[0], text, key[1]) for key, text in texts.items()}


def _repo_sources(suffixes: dict[str, str]) -> dict[tuple[str, str], str]:
    return {(p.relative_to(REPO).as_posix(), suffixes[p.suffix]):
            p.read_text(encoding="utf-8", errors="replace")
            for base in ("tests", "fixtures") for p in (REPO / base).rglob("*")
            if p.suffix in suffixes and "node_modules" not in p.parts and p.is_file()}


@pytest.mark.parametrize("source", JS_MATTERS)
def test_every_way_of_writing_a_used_js_literal_is_let_through(source):
    assert _code_used("js", source)  # the case is one the scan uses
    assert _may_hold("js", source)


@pytest.mark.parametrize("source", [
    'const label = "Resetting"; const options = {a: "b"};\n',
    "el.setAttribute('selected', x) // don't\n",
    'const re = /a+/; const msg = "a" + name;\n',
])
def test_a_js_source_without_such_a_literal_is_skipped(source):
    assert not _code_used("js", source)
    assert not _may_hold("js", source)


def test_the_js_scan_finds_the_same_with_and_without_the_filter(monkeypatch):
    texts = _repo_sources(dict.fromkeys((".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx"), "js"))
    texts.update({(f"case{i}.js", "js"): source for i, source in enumerate(JS_MATTERS)})
    _same_with_and_without_the_filter(monkeypatch, texts)


# --- Go, Java, Kotlin: the same filter (may_hold_clike_sql_literal) ----------------------

CLIKE_MATTERS = [
    ("go", 'db.Exec("SELECT 1")'),
    ("go", "db.Exec(`\n\tLISTEN jobs`)"),
    ("go", 'db.Exec("SEL" +\n\t"ECT 1")'),
    ("go", 'db.Exec("\\u0053ELECT 1")'),
    ("go", 'db.Exec("e\\xecute p")'),
    ("go", 'db.Exec("e" + name + "ecute p")'),
    ("go", 'import (\n\t"context"\n\t"github.com/jackc/pgx/v5/pgxpool"\n)\n'
           'func f() { pgxpool.New(ctx, url) }'),
    # golang-migrate: its constructor where its postgres/pgx driver is imported (a blank
    # import alone registers the driver and migrates nothing)
    ("go", 'import (\n\t"github.com/golang-migrate/migrate/v4"\n'
           '\t_ "github.com/golang-migrate/migrate/v4/database/postgres"\n)\n'
           'func f() { migrate.New(src, url) }'),
    ("go", 'import (\n\tm "github.com/golang-migrate/migrate/v4"\n'
           '\t_ "github.com/golang-migrate/migrate/v4/database/pgx"\n)\n'
           'func f() { m.NewWithDatabaseInstance(src, "pgx", d) }'),
    ("java", 'String url = "jdbc:POSTGRESQL://db/app?options=-c%20x%3D1";'),
    ("go", 'dsn := "host=db options=\'-c search_path=app\'"'),
    ("java", 'String q = "SELECT 1";'),
    ("java", 'String q = """\n    SET search_path = app""";'),
    ("java", 'String q = "\\nupdate t set a = 1";'),
    ("java", 'String url = "jdbc:postgresql://db/app";'),
    ("kotlin", 'val q = "SELECT 1"'),
    ("kotlin", 'val q = "e${x}ecute p"'),
    ("kotlin", 'val q = "e$x" + "ecute p"'),
    ("kotlin", 'val q = """\n  LISTEN jobs"""'),
]


@pytest.mark.parametrize(("lang", "source"), CLIKE_MATTERS)
def test_every_way_of_writing_a_used_clike_literal_is_let_through(lang, source):
    assert _code_used(lang, source)  # the case is one the scan uses
    assert _may_hold(lang, source)


@pytest.mark.parametrize(("lang", "source"), [
    # an import block: strings one under the other are not joined in Go
    ("go", 'import (\n\t"context"\n\t"errors"\n\t"time"\n)\n'),
    # a protobuf descriptor: hex escapes decode to no letter the scan reads
    ("go", 'var raw = "\\n\\x0e\\x12\\x1ftemporal.api\\x18\\x01 \\x01(\\tR\\x04name"\n'),
    ("java", 'log.info("Resetting " + name); char c = \'s\';\n'),
    ("kotlin", 'val label = "Selected: $count items"\n'),
])
def test_a_clike_source_without_such_a_literal_is_skipped(lang, source):
    assert not _code_used(lang, source)
    assert not _may_hold(lang, source)


def test_the_clike_scan_finds_the_same_with_and_without_the_filter(monkeypatch):
    texts = _repo_sources({".go": "go", ".java": "java", ".kt": "kotlin", ".kts": "kotlin"})
    texts.update({(f"case{i}.{lang}", lang): source
                  for i, (lang, source) in enumerate(CLIKE_MATTERS)})
    _same_with_and_without_the_filter(monkeypatch, texts)


@pytest.mark.parametrize(("lang", "literal"), [
    ("go", '"a\\tb\\n\\"c\\" \\u0041\\x41 \\\\ \\q"'),
    ("go", '"\\u00e9t\\u00E9 $1 #x"'),
    ("java", '"tab\\there \\u12 end"'),
    ("js", "'it\\'s \\u0053ELECT'"),
    ("js", '"\\r\\0\\b\\f\\v"'),
])
def test_a_one_line_literal_decodes_as_the_character_scanner_does(lang, literal):
    """clike_literals decodes a one-line literal with escapes in one pass (_one_line);
    the character scanner (_quoted) is what it stands in for: same text, same lines."""
    from advisor.read.sql.literals import _Cursor, _quoted, clike_literals

    source = f"x = {literal};\n"
    (fast,) = clike_literals(source, lang)
    cursor = _Cursor(source)
    cursor.pos = source.index(literal[0])
    slow = _quoted(cursor, literal[0], single_line=True)
    assert (fast.text, fast.lines, fast.line, fast.start, fast.end) == \
        (slow.text, slow.lines, slow.line, slow.start, slow.end)


# --- Ruby: may_hold_ruby_sql_literal ----------------------------------------------------

RUBY_MATTERS = [
    'execute("SELECT 1")',
    "execute('  select 1')",
    'execute(%q(LISTEN jobs))',
    'execute(%Q{\n  SET search_path = app})',
    'execute(%(BEGIN))',
    'execute(<<~SQL)\n  SELECT 1\nSQL\n',
    'execute(<<-"SQL")\n  update t set a = 1\n  SQL\n',
    'execute("\\nupdate t set a = 1")',
    'execute("SEL\\\nECT 1")',
    'execute("\\u0053ELECT 1")',
    'execute("e#{x}ecute p")',
    'url = "postgres://app@db/app?options=-c%20x%3D1"',
    'dsn = "host=db options=\'-c search_path=app\'"',
]


@pytest.mark.parametrize("source", RUBY_MATTERS)
def test_every_way_of_writing_a_used_ruby_literal_is_let_through(source):
    assert _code_used("ruby", source)  # the case is one the scan uses
    assert _may_hold("ruby", source)


@pytest.mark.parametrize("source", [
    'class User < ApplicationRecord\n  has_many :posts\n  validates :name, presence: true\nend\n',
    # a line continued in code, and an array append: no string, no heredoc
    'scope = User.where(active: true) \\\n  .order(:name)\nitems << "Selected items"\n',
])
def test_a_ruby_source_without_such_a_literal_is_skipped(source):
    assert not _code_used("ruby", source)
    assert not _may_hold("ruby", source)


def test_the_ruby_scan_finds_the_same_with_and_without_the_filter(monkeypatch):
    texts = _repo_sources({".rb": "ruby"})
    texts.update({(f"case{i}.rb", "ruby"): source for i, source in enumerate(RUBY_MATTERS)})
    _same_with_and_without_the_filter(monkeypatch, texts)
