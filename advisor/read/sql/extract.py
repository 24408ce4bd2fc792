"""Where the SQL is: find statements in a repository's files and classify them.

Contract for discovery (`advisor/read/discover.py` calls this):

    is_sql_candidate(path) -> bool
        True for files this module reads: *.sql (any migration layout: Flyway
        V1__x.sql, golang-migrate 1_x.up.sql, Liquibase formatted-SQL changelogs),
        Python (*.py: Alembic op.execute, Django RunSQL, any SQL string), Java and
        Kotlin (*.java, *.kt, *.kts), Go (*.go), JS/TS (*.js, *.mjs, *.cjs, *.jsx,
        *.ts, *.mts, *.cts, *.tsx), Ruby (*.rb, *.rake: Rails db/migrate `execute`
        strings and heredocs), and the driver/ORM settings files (see drivers.py):
        database.yml, application*.properties / application*.y(a)ml,
        schema.prisma, .env files. Paths under node_modules/, vendor/, .git/,
        virtualenvs and site-packages are never candidates. Pure: looks at the path only.

    scan_sql_sources(root, paths) -> (hazards, problems)
        `paths` are the candidate files (relative to root.path, or absolute inside it).
        Each file is read through `root` (never imported or executed; Python is read
        with `ast`). Returns every SqlHazard found (location.path relative to the
        root, exact 1-based file line of the statement's first token, `origin` the
        language, `client_id` None: mapping a file to its workload is discovery's
        job) and ConfigProblems for files that could not be read or a .sql file the
        PostgreSQL parser rejects (non-fatal: the other files are still scanned).
        String literals in code that do not parse as SQL are ignored silently.
        `-- pool-advisor: ignore[PA401] reason` (or `#`/`//` comments in code) on the
        statement's line or the line above fills SqlHazard.suppressed with the codes.

    assign_clients(hazards, source_dirs) -> hazards
        Sets client_id from the workload -> source folder mapping (see its docstring).

Placeholders that drivers rewrite (`%s`, `%(name)s`, `?`, `:name`, `${x}`, `#{x}`)
make a statement unparseable for PostgreSQL; a text that fails to parse is retried
once with each placeholder replaced by an identifier (outside SQL quotes).
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from msgspec import Struct
from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import ConfigProblem, Location, SqlHazard
from advisor.read.fs import InputError, Root, relative_posix
from advisor.read.sql import drivers
from advisor.read.sql.context import CodeContext, python_sql_positions
from advisor.read.sql.hazards import scan_sql_text
from advisor.read.sql.literals import (
    PLACEHOLDER,
    STATEMENT_WORDS,
    Literal,
    clike_literals,
    elixir_literals,
    elixir_source,
    may_hold_clike_sql_literal,
    may_hold_ruby_sql_literal,
    may_hold_sql_literal,
    python_literals,
    python_text_literals,
    ruby_literals,
)
from advisor.read.suppress import scan_suppressions

if TYPE_CHECKING:
    from advisor.read.cache import FileCache

_CODE_SUFFIXES = {
    ".py": "python",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".go": "go",
    ".js": "js",
    ".mjs": "js",
    ".cjs": "js",
    ".jsx": "js",
    ".ts": "js",
    ".mts": "js",
    ".cts": "js",
    ".tsx": "js",
    ".rb": "ruby",
    ".rake": "ruby",
    ".ex": "elixir",
    ".exs": "elixir",
    ".rs": "rust",  # driver settings only (drivers.rust_settings), no SQL literal scan
}
_NEVER_UNDER = frozenset(
    {"node_modules", "vendor", ".git", ".venv", "venv", "site-packages", "__pycache__", ".tox"}
)
_STATEMENT_WORDS = STATEMENT_WORDS


# JavaScript built for browsers or shipped bundled: minified files (jquery.min.js), bundles
# (app.bundle.js, vendor.chunk.js) and what a build wrote to dist/ or build/. Generated
# from sources the scan reads (or from dependencies), never where a query is written;
# a minified file is one line of up to megabytes that every scanner crosses whole.
_BUILT_JS = lazy(r"(?i).*[.-](min|bundle|chunk)\.[cm]?js")
_BUILT_DIRS = frozenset({"dist", "build"})


def classify(path: str) -> str | None:
    """The reader for `path`: "sql", a language, or a drivers.py settings kind."""
    p = PurePosixPath(path.replace("\\", "/"))
    folders = p.parts[:-1]
    if any(part in _NEVER_UNDER for part in folders):
        return None
    suffix = p.suffix.lower()
    if suffix == ".sql":
        return "sql"
    if suffix in _CODE_SUFFIXES:
        kind = _CODE_SUFFIXES[suffix]
        if kind == "js" and (_BUILT_JS.fullmatch(p.name) or not _BUILT_DIRS.isdisjoint(folders)):
            return None
        return kind
    return drivers.classify_settings_file(p)


def is_sql_candidate(path: str) -> bool:
    return classify(path) is not None


# Folders and file names of code that does not run in production: skipped unless the
# settings say scan-test-code = true.
_TEST_DIRS = frozenset(
    {"test", "tests", "spec", "specs", "__tests__", "__test__", "__mocks__", "fixtures",
     "fixture", "testdata", "test_data", "testing", "example", "examples", "e2e",
     "cypress", "playwright", "testutil", "testutils", "testhelpers", "factories",
     "sample", "samples", "demo", "benchmarks"}
)  # fmt: skip
_TEST_FILE = lazy(
    r"(^test_.*\.(py|rs)|.*_test\.(py|go|rb|exs?)|.*_tests?\.rs|tests?\.rs|conftest\.py|"
    r".*_spec\.rb|"
    r".*\.(test|spec)\.[cm]?[jt]sx?|.*(Test|Tests|IT|Spec)\.(java|kt)|"
    r".*[a-z][._-](example|sample|dist)\.(?!sql$)\w+|.*\.(example|sample|dist|template))$"
)


def is_test_path(path: str) -> bool:
    """Test, spec, fixture or example code (by folder or file name)."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    return any(_test_dir(p) for p in parts[:-1]) or bool(
        parts and _TEST_FILE.fullmatch(parts[-1])
    )


def _test_dir(name: str) -> bool:
    """test/, spec/, fixtures/ ...; Go test-helper packages (riverdbtest, httptest);
    hidden folders (.github, .devcontainer, .claude: tooling, not the application)."""
    low = name.lower()
    return (
        low in _TEST_DIRS
        or (low.endswith(("test", "tests")) and low not in ("latest", "contest"))
        or (name.startswith(".") and name not in (".", ".."))
    )


def not_checked_notices(
    problems: list[ConfigProblem],
) -> tuple[list[str], list[ConfigProblem]]:
    """NOT_CHECKED problems as one notice per file (with their lines); the rest."""
    by_file: dict[str, list[ConfigProblem]] = {}
    rest: list[ConfigProblem] = []
    for p in problems:
        if p.program == NOT_CHECKED:
            by_file.setdefault(p.location.path or "?", []).append(p)
        else:
            rest.append(p)
    notices = []
    for path, found in by_file.items():
        messages = sorted({p.message for p in found})
        lines = sorted({p.location.line for p in found if p.location.line})
        at = f" (line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))})" if lines else ""
        notices.append(f"{path}{at}: {'; '.join(messages)}")
    return notices, rest


class SqlEntry(Struct, array_like=True):
    """What scan_text found in one file, and the file's facts _RepoFacts looks for: the
    cache's entry (advisor.read.cache), keyed by the file's path as shown, its reader
    kind, `pinning` and its content. Nothing in it depends on another file."""

    hazards: list[SqlHazard]
    problems: list[ConfigProblem]
    iterator: bool = False
    unnamed: bool = False
    migrate_driver: bool = False  # imports golang-migrate's postgres/pgx driver
    oban_other_notifier: bool = False  # names an Oban notifier that does not LISTEN
    laravel_config: bool = False  # a Laravel config/database.php of the repository


def scan_sql_sources(
    root: Root, paths: list[str], *, pinning: bool = False, cache: FileCache | None = None
) -> tuple[list[SqlHazard], list[ConfigProblem]]:
    """Every candidate file read (once) and scanned; with an enabled `cache`, a file whose
    content was scanned before (same path, kind and `pinning`) takes the last scan's
    result. What depends on other files (_RepoFacts) is applied to the whole list."""
    hazards: list[SqlHazard] = []
    problems: list[ConfigProblem] = []
    repo = _RepoFacts()
    cached = cache is not None and cache.enabled
    for name in paths:
        kind = classify(str(name))
        if kind is None:
            continue
        try:
            # A candidate is its real path as shown (sql_candidates): read with one lstat,
            # or from the app scan's read of it (Root.read_below); anything else (a
            # symlink, `..`, a missing file) the long way, which says what is wrong.
            below = root.read_below(name) if name.__class__ is str else None
            if below is not None:
                shown, text = name, below[0]
            else:
                real = root.resolve(name)
                # resolved once: real (symlink-free, inside the root) is its own shown path
                shown = relative_posix(str(real), str(root.path)) or root.rel(real)
                text = root.read_text(real, resolved=True)
        except InputError as exc:
            problems.append(
                ConfigProblem(
                    location=Location(path=exc.path, line=exc.line),
                    message=f"not scanned for SQL hazards: {exc.message}",
                )
            )
            continue
        if root.once is not None:
            root.once.note_marks(shown, text)
        entry = _scan_file(shown, text, kind, pinning, cache) if cached \
            else _scan_entry(shown, text, kind, pinning)
        if kind == "python" and entry.hazards and root.once is not None:
            # the one-off-script check (read.sql.scripts) reads each Python file with a
            # hazard next: from here, not from the disk again (issue 19: read once)
            root.keep(shown, text)
        hazards.extend(entry.hazards)
        problems.extend(entry.problems)
        repo.iterator = repo.iterator or entry.iterator
        repo.unnamed = repo.unnamed or entry.unnamed
        repo.migrate_driver = repo.migrate_driver or entry.migrate_driver
        repo.oban_other_notifier = repo.oban_other_notifier or entry.oban_other_notifier
        repo.laravel_config = repo.laravel_config or entry.laravel_config
    return repo.keep(hazards), problems


def _scan_entry(shown: str, text: str, kind: str, pinning: bool) -> SqlEntry:
    found, trouble = scan_text(shown, text, kind, pinning=pinning)
    # the regex tries every line of a file: only where the call is written at all
    iterator = kind == "python" and ".iterator(" in text and \
        _ITERATOR_CALL.search(text) is not None
    return SqlEntry(found, trouble, iterator,
                    kind == "elixir" and drivers.ecto_unnamed(shown, text),
                    kind == "go" and drivers.migrate_driver(text),
                    kind == "elixir" and drivers.oban_other_notifier(shown, text),
                    kind == drivers.LARAVEL_DATABASE)


def _scan_file(shown: str, text: str, kind: str, pinning: bool, cache: FileCache) -> SqlEntry:
    """_scan_entry through the cache: the kind and `pinning` are part of the entry's key
    (a symlink's name may give another reader than its target's; RDS Proxy adds kinds)."""
    key = f"sql-{kind}-pin" if pinning else f"sql-{kind}"
    entry = cache.get(key, shown, text, SqlEntry)
    if entry is None:
        entry = _scan_entry(shown, text, kind, pinning)
        cache.put(key, shown, text, entry)
    return entry


_ITERATOR_CALL = lazy(r"^[^#\n]*\.iterator\(", re.MULTILINE)  # not in a comment


class _RepoFacts:
    """What one file's hazard depends on elsewhere in the repository: Django's server-side
    cursors matter only where QuerySet.iterator() is called; an Ecto repo's named
    prepares are off when a config file says `prepare: :unnamed`; a golang-migrate
    constructor in a file without its postgres/pgx driver locks only when another file
    registers that driver; Oban's default notifier does not LISTEN when a file sets
    another (each file's part in SqlEntry)."""

    def __init__(self) -> None:
        self.iterator = False
        self.unnamed = False
        self.migrate_driver = False
        self.oban_other_notifier = False
        self.laravel_config = False

    def keep(self, hazards: list[SqlHazard]) -> list[SqlHazard]:
        return [h for h in hazards if not self._moot(h)]

    def _moot(self, h: SqlHazard) -> bool:
        if h.origin != drivers.ORIGIN:
            return False
        if h.kind == "with-hold-cursor" and h.detail.startswith("Django"):
            return not self.iterator
        if h.detail.startswith(drivers.MIGRATE_ELSEWHERE):
            return not self.migrate_driver
        if h.detail.startswith(drivers.OBAN_DETAIL):
            return self.oban_other_notifier
        if h.detail.startswith(drivers.LARAVEL_SKELETON_DETAIL):
            # the repository's own config/database.php is judged instead
            return self.laravel_config
        return self.unnamed and h.detail.startswith(drivers.ECTO_REPO_DETAIL)


def scan_text(
    path: str, text: str, kind: str, *, pinning: bool = False
) -> tuple[list[SqlHazard], list[ConfigProblem]]:
    """Hazards in one file's text (`kind` from `classify`), suppressions applied;
    `pinning` adds RDS Proxy's pinning-only kinds (hazards.PINNING_ONLY_KINDS).
    Problems whose `program` is NOT_CHECKED are notices (SQL skipped on purpose, or
    SQL in code the parser rejects), not unreadable input."""
    problems: list[ConfigProblem] = []
    if kind == "sql":
        found, problem = _sql_file_hazards(path, text, pinning)
        if problem:
            problems.append(problem)
    elif kind == "python":
        may_hold = may_hold_sql_literal(text)
        if not may_hold and not drivers.python_settings_may_apply(text):
            # No literal the scan would use and no driver setting it reads: nothing the
            # parse could give (half of a Django project's files, half its scan time).
            return [], problems
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as exc:
            # Syntax newer than this Python (PEP 695 generics on 3.11) or broken code:
            # its strings are still read, by a scanner instead of `ast`.
            problems.append(
                ConfigProblem(
                    location=Location(path=path, line=exc.lineno),
                    message=f"Python's parser stops at '{exc.msg}' (syntax newer than this "
                    "Python?): its strings were read by a plain scanner to check their SQL",
                    program=NOT_CHECKED,
                )
            )
            literals = python_text_literals(text)
            context = CodeContext(text, literals, "python")
            as_sql = [lit for lit in literals if looks_like_statement(lit.text)
                      and context.is_sql(lit)]
            found = _literals_hazards(path, as_sql, "python", pinning, problems)
            found.sort(key=lambda h: (h.location.line or 0, h.location.column or 0))
            return _apply_suppressions(found, text), problems
        # Only a literal that looks like a statement or names postgres/options is used
        # below: a source that cannot hold one is not walked (may_hold_sql_literal).
        literals = python_literals(tree) if may_hold else []
        # Only a literal that looks like a statement can be SQL (literal_scan): the walk
        # that decides which are used as SQL runs only for the files that have one.
        statements = [lit for lit in literals if looks_like_statement(lit.text)]
        wanted = {(lit.line, lit.start) for lit in statements}
        used = python_sql_positions(tree, wanted) if statements else set()
        as_sql = [lit for lit in statements if (lit.line, lit.start) in used]
        found = _literals_hazards(path, as_sql, "python", pinning, problems)
        # (a connection in autocommit mode has no transaction to roll back)
        if found and "rollback" in text and "autocommit" not in text.lower():
            found = _not_rolled_back(found, tree)
        found += drivers.python_settings(path, tree, literals, text)
    elif kind in ("ruby", "java", "kotlin", "go", "js", "elixir"):
        if kind == "ruby" and not may_hold_ruby_sql_literal(text):
            literals = []  # none the scan would use: not scanned (may_hold_ruby_sql_literal)
        elif kind in ("ruby", "elixir"):
            literals = ruby_literals(text) if kind == "ruby" else elixir_literals(text)
        elif not may_hold_clike_sql_literal(text, kind):
            literals = []  # none the scan would use: not scanned (may_hold_clike_sql_literal)
        else:
            literals = clike_literals(text, kind)
        context = CodeContext(elixir_source(text) if kind == "elixir" else text, literals, kind)
        as_sql = [lit for lit in literals if looks_like_statement(lit.text) and context.is_sql(lit)]
        found = _literals_hazards(path, as_sql, kind, pinning, problems)
        found += drivers.literal_settings(path, literals, kind, text)
    elif kind == "rust":
        found = drivers.rust_settings(path, text)
    else:
        found, problems = drivers.settings_file(path, text, kind)
    found.sort(key=lambda h: (h.location.line or 0, h.location.column or 0))
    return _apply_suppressions(found, text), problems


# What a rolled-back transaction takes back (PostgreSQL docs, SET: "the effects of the
# SET command disappear when the transaction is rolled back"; a temporary table created
# in it is dropped; LISTEN takes effect at commit): not advisory locks, not prepares.
_UNDONE_BY_ROLLBACK = frozenset({"session-set", "temp-table", "listen"})


def _not_rolled_back(found: list[SqlHazard], tree: ast.AST) -> list[SqlHazard]:
    """Drop the hazards of statements run between a `try:` and the `.rollback()` its
    `finally:` always calls, when nothing in that try commits: a SQLAlchemy session (or
    a DB-API connection) runs them in the transaction it rolls back, on every path
    (AcadMix's SQL sandbox: temp tables and `SET search_path`, then
    `await session.rollback()` in `finally`; audit 13f D7)."""
    spans: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try) or not node.finalbody:
            continue
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)
                 and isinstance(c.func, ast.Attribute)]
        if any(c.func.attr == "commit" for c in calls):  # type: ignore[union-attr]
            continue
        ends = [c.lineno for part in node.finalbody for c in ast.walk(part)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                and c.func.attr == "rollback"]
        if ends:
            spans.append((node.lineno, max(ends)))
    if not spans:
        return found
    return [h for h in found if h.kind not in _UNDONE_BY_ROLLBACK or not any(
        start <= (h.location.line or 0) < end for start, end in spans)]


# ConfigProblem.program of a notice: SQL deliberately not checked (another dialect, a
# template, a statement the parser rejects with placeholders stood in). Not PA901.
NOT_CHECKED = "not checked"

_DIALECT_PATH = lazy(r"(^|/)(mysql|mariadb|clickhouse|sqlite3?|mssql|sqlserver|oracle)(/|$)")
_DIALECT_NAMES = {
    "mysql": "MySQL", "mariadb": "MySQL", "clickhouse": "ClickHouse", "sqlite": "SQLite",
    "sqlite3": "SQLite", "mssql": "SQL Server", "sqlserver": "SQL Server", "oracle": "Oracle",
}  # fmt: skip
_DIALECT_MARKERS = (
    ("MySQL", lazy(
        r"ENGINE\s*=\s*(InnoDB|MyISAM)|AUTO_INCREMENT|^\s*DELIMITER\s|/\*!\d{5}|"
        r"\bUNSIGNED\b|^\s*LOCK TABLES|\bSET\s+(NAMES|FOREIGN_KEY_CHECKS|SQL_MODE)\b|"
        r"CHARSET\s*=|`\w+`\s*\(", re.IGNORECASE | re.MULTILINE)),
    ("ClickHouse", lazy(
        r"ENGINE\s*=\s*\w*MergeTree|\bON CLUSTER\b|LowCardinality\(|\bDateTime64\b|"
        r"\bNullable\(|\bMATERIALIZED VIEW\b.*\bTO\b", re.IGNORECASE)),
    ("SQLite", lazy(r"^\s*PRAGMA\s|\bAUTOINCREMENT\b", re.IGNORECASE | re.MULTILINE)),
    ("SQL Server", lazy(r"^\s*GO\s*$|\[dbo\]\.", re.MULTILINE)),
    ("a template", lazy(r"\{\{.*?\}\}|\{%.*?%\}|<%.*?%>", re.DOTALL)),
)  # fmt: skip


def other_dialect(path: str, text: str) -> str | None:
    """The SQL dialect or template language of a .sql file that is not PostgreSQL's
    SQL, or None. Only asked when PostgreSQL's parser rejects the file, or when a
    dialect's own statements would look like hazards (SET NAMES, PRAGMA)."""
    folder = _DIALECT_PATH.search(path.lower())
    if folder:
        return _DIALECT_NAMES[folder.group(2)]
    for name, marker in _DIALECT_MARKERS:
        if marker.search(text):
            return name
    return None


# pg_dump's preamble (and its `SET default_tablespace = ''` between tables): a schema
# dump (db/structure.sql) is loaded once by psql, not run by the application.
_PG_DUMP = lazy(r"^-- (PostgreSQL database dump|Dumped (from|by) )", re.MULTILINE)
_PG_DUMP_SETTINGS = frozenset(
    {"statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout",
     "transaction_timeout", "client_encoding", "standard_conforming_strings",
     "check_function_bodies", "xmloption", "client_min_messages", "row_security",
     "default_tablespace", "default_table_access_method", "default_with_oids", "search_path"}
)  # fmt: skip
_SET_NAME = lazy(r"(?:SET\s+(\w+)|set_config\('(\w+)')", re.IGNORECASE)


def _pg_dump_preamble(hazard: SqlHazard) -> bool:
    if hazard.kind != "session-set":
        return False
    m = _SET_NAME.search(hazard.detail)
    return m is not None and (m.group(1) or m.group(2) or "").lower() in _PG_DUMP_SETTINGS


def _sql_file_hazards(
    path: str, text: str, pinning: bool = False
) -> tuple[list[SqlHazard], ConfigProblem | None]:
    dialect = other_dialect(path, text) if _DIALECT_PATH.search(path.lower()) else None
    if dialect is None:
        scan = scan_sql_text(text, Location(path=path, line=1), pinning=pinning)
        if scan.problem is None:
            return _without_dump_preamble(path, text, scan.hazards), None
        normalized, lines, src = normalize_placeholders(text, sql_file=True)

        def shown(a: int, b: int) -> str:
            return text[src[a] : src[b - 1] + 1] if b > a else ""

        retry = scan_sql_text(
            normalized, Location(path=path, line=1), char_lines=lines, shown=shown,
            pinning=pinning,
        )
        if retry.problem is None:
            return _without_dump_preamble(path, text, retry.hazards), None
        # psql/graphile-style :NAME variables inside dollar-quoted bodies whose quotes
        # the normalizer cannot follow: stood in everywhere (same length: lines kept).
        blunt = _ANY_VARIABLE.sub(lambda m: PLACEHOLDER.ljust(len(m.group()), "_"), text)
        last = scan_sql_text(blunt, Location(path=path, line=1), pinning=pinning)
        if last.problem is None:
            return _without_dump_preamble(path, text, last.hazards), None
        dialect = other_dialect(path, text)
        if dialect is None:
            return [], scan.problem
    return [], ConfigProblem(
        location=Location(path=path, line=1),
        message=f"SQL not checked for pooling hazards: written for {dialect}, not PostgreSQL",
        program=NOT_CHECKED,
    )


_ANY_VARIABLE = lazy(r"(?<![:\w]):[A-Za-z_]\w*|\$\{[^}\n]*\}")


def _is_schema_dump(path: str, text: str) -> bool:
    """pg_dump output: its header comment, Rails' db/structure.sql (comments stripped),
    or a file that opens with pg_dump's `SET statement_timeout = 0;` preamble."""
    name = PurePosixPath(path).name.lower()
    return (
        _PG_DUMP.search(text[:2000]) is not None
        or (name in ("structure.sql", "schema.sql") and "set_config('search_path'" in text)
        or text.lstrip().startswith("SET statement_timeout = 0;")
    )


def _without_dump_preamble(path: str, text: str, hazards: list[SqlHazard]) -> list[SqlHazard]:
    if not hazards or not _is_schema_dump(path, text):
        return hazards
    return [h for h in hazards if not _pg_dump_preamble(h)]


def _literals_hazards(
    path: str,
    literals: list[Literal],
    origin: str,
    pinning: bool = False,
    problems: list[ConfigProblem] | None = None,
) -> list[SqlHazard]:
    found: list[SqlHazard] = []
    for lit in literals:
        hazards, problem = literal_scan(path, lit, origin, pinning=pinning)
        found.extend(hazards)
        if problem is not None and problems is not None:
            problems.append(problem)
    return found


def literal_hazards(
    path: str, lit: Literal, origin: str, *, pinning: bool = False
) -> list[SqlHazard]:
    """Hazards of one code string literal, or none when it is not SQL."""
    return literal_scan(path, lit, origin, pinning=pinning)[0]


def literal_scan(
    path: str, lit: Literal, origin: str, *, pinning: bool = False
) -> tuple[list[SqlHazard], ConfigProblem | None]:
    """Hazards of one code string literal used as SQL, and a NOT_CHECKED notice when
    PostgreSQL's parser rejects it even with the placeholders stood in."""
    if not looks_like_statement(lit.text):
        return [], None
    where = Location(path=path, line=lit.line)
    scan = scan_sql_text(lit.text, where, origin=origin, char_lines=lit.lines, pinning=pinning)
    if scan.problem is not None:
        text, lines, src = normalize_placeholders(
            lit.text, lit.lines, first_line=lit.line, code=True
        )

        def shown(a: int, b: int) -> str:  # the statement as written, placeholders kept
            return lit.text[src[a] : src[b - 1] + 1] if b > a else ""

        scan = scan_sql_text(
            text, where, origin=origin, char_lines=lines, shown=shown, pinning=pinning
        )
    if scan.problem is not None:
        by_words = lexical_hazards(lit.text, where, origin)
        if by_words:
            return _self_contained(lit.text, by_words), None
        return [], ConfigProblem(
            location=where,
            message="SQL not checked for pooling hazards: PostgreSQL's parser rejects it "
            "with the placeholders stood in",
            program=NOT_CHECKED,
        )
    return _self_contained(lit.text, scan.hazards), None


_DEALLOCATE = lazy(r"\bDEALLOCATE\b", re.IGNORECASE)
_PREPARE = lazy(r"\bPREPARE\s+\w+", re.IGNORECASE)


def _self_contained(text: str, hazards: list[SqlHazard]) -> list[SqlHazard]:
    """PREPARE, EXECUTE and DEALLOCATE in one code string go to the server as one
    simple-protocol message, which a transaction pooler runs on one server connection."""
    if not any(h.kind == "sql-prepare" for h in hazards) or not (
        _DEALLOCATE.search(text) and _PREPARE.search(text)
    ):
        return hazards
    return [h for h in hazards if h.kind != "sql-prepare"]


# The session forms, by their first words, for SQL in code the parser rejects even with
# placeholders stood in (`SET SESSION CHARACTERISTICS AS TRANSACTION {mode}`: no stand-in
# is a valid mode). Only unambiguous heads: `LOAD DATA INFILE` (MySQL) is no LOAD, and
# `SET NAMES utf8` (MySQL) has no `=`/TO.
_HEADS = (
    ("session-set", lazy(
        r"^\s*SET\s+(SESSION\s+(?!AUTHORIZATION\b)\w+|(?!LOCAL\b|TRANSACTION\b|CONSTRAINTS\b)"
        r"[\w.\"]+\s*(=|\bTO\b))|^\s*RESET\s+(ALL\b|[\w.\"]+\s*;?\s*$)", re.I)),
    ("listen", lazy(r"^\s*(UN)?LISTEN\s+[\w\"*]", re.I)),
    ("load", lazy(r"^\s*LOAD\s+'", re.I)),
    ("sql-prepare", lazy(r"^\s*(PREPARE\s+\w+\s*(\(|AS\b)|DEALLOCATE\b)", re.I)),
    ("with-hold-cursor", lazy(r"^\s*DECLARE\s+\w+[^;]*\bWITH\s+HOLD\b", re.I)),
    ("temp-table", lazy(
        r"^\s*CREATE\s+(TEMP|TEMPORARY)\s+TABLE\b(?![^;]*ON\s+COMMIT\s+DROP)", re.I)),
    ("advisory-lock", lazy(
        r"\bpg_(try_)?advisory_(lock|unlock)(_shared|_all)?\s*\(", re.I)),
)  # fmt: skip


def lexical_hazards(text: str, where: Location, origin: str) -> list[SqlHazard]:
    """Hazards of a statement PostgreSQL's parser rejects, read from its first words."""
    shown = " ".join(text.split())
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return [
        SqlHazard(
            kind=kind,
            detail=f"{shown} (not parsed: read by its first words)",
            location=where,
            origin=origin,
        )
        for kind, head in _HEADS
        if head.search(text)
    ][:1]


def looks_like_statement(text: str) -> bool:
    words = text.split(None, 1)
    if not words:
        return False
    first = words[0].rstrip(";(").lower()
    if first not in _STATEMENT_WORDS:
        return False
    # A lone word ("set", "begin") in code is far more often a key than a statement,
    # except written the way SQL is: BEGIN.
    return len(words) > 1 or words[0].rstrip(";").isupper()


def normalize_placeholders(
    text: str,
    lines: list[int] | None = None,
    *,
    first_line: int = 1,
    sql_file: bool = False,
    code: bool = False,
) -> tuple[str, list[int], list[int]]:
    """Replace driver placeholders outside SQL quotes with an identifier; returns the new
    text, the file line of each of its characters (from `lines`, the old text's; or
    counted from `first_line`) and the old text's offset of each. In .sql files also
    blank psql meta-command lines (\\set, \\connect) and replace psql variables (:name,
    :'name') and Flyway's ${name}."""
    if not lines:  # the text's lines are 1:1 with the file's from `first_line`
        lines, line = [], first_line
        for ch in text:
            lines.append(line)
            line += ch == "\n"
    out: list[str] = []
    out_lines: list[int] = []
    src: list[int] = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        if sql_file and line_start and _meta_command_at(text, i):
            end = text.find("\n", i)
            i = n if end < 0 else end  # the newline itself is kept
            continue
        found = _PLACEHOLDER_START.search(text, i)
        j = found.start() if found else n
        if j > i:  # an ordinary run, copied as is
            out.append(text[i:j])
            out_lines.extend(lines[i:j])
            src.extend(range(i, j))
            line_start = text[j - 1] == "\n"
            i = j
            continue
        ch = text[i]
        line_start = ch == "\n"
        end = _placeholder_end(text, i, sql_file, code)
        if end > i:
            out.append(PLACEHOLDER)
            out_lines.extend([lines[i]] * len(PLACEHOLDER))
            src.extend([end - 1] * len(PLACEHOLDER))  # shown up to the placeholder's end
            i = end
        elif ch == "'":  # SQL string: copied as is
            close = text.find("'", i + 1)
            close = n - 1 if close < 0 else close
            out.append(text[i : close + 1])
            out_lines.extend(lines[i : close + 1])
            src.extend(range(i, close + 1))
            i = close + 1
        else:
            out.append(ch)
            out_lines.append(lines[i])
            src.append(i)
            i += 1
    return "".join(out), out_lines, src


_PLACEHOLDER_START = lazy(r"[%$#?:'\n{]")


def _meta_command_at(text: str, i: int) -> bool:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i < len(text) and text[i] == "\\"


def _placeholder_end(text: str, i: int, sql_file: bool, code: bool = False) -> int:
    """End offset of a placeholder starting at i, or i when there is none. In `code`
    also printf verbs (%d, %v, %q: fmt.Sprintf, Python %) and str.format fields ({},
    {name}, {0!r})."""
    n = len(text)
    ch = text[i]
    nxt = text[i + 1] if i + 1 < n else ""
    if ch == "%" and nxt == "s":
        return i + 2
    if code and ch == "%" and nxt and nxt in "dvqifx":
        return i + 2
    if code and ch == "{":
        j = text.find("}", i)
        if j > 0 and re.fullmatch(r"[\w.!:\[\]]*", text[i + 1 : j]):
            return j + 1
    if ch == "%" and nxt == "(":
        j = text.find(")", i)
        if j > 0 and j + 1 < n and text[j + 1] == "s" and "\n" not in text[i:j]:
            return j + 2
    if ch in "$#" and nxt == "{":
        j = text.find("}", i)
        if j > 0 and "\n" not in text[i:j]:
            return j + 1
    if ch == "?" and not sql_file:
        return i + 1
    if ch == ":" and (i == 0 or text[i - 1] != ":"):
        if nxt.isalpha() or nxt == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            return j
        if sql_file and nxt in "'\"":
            j = text.find(nxt, i + 2)
            if j > 0 and "\n" not in text[i:j]:
                return j + 1
    return i


def _apply_suppressions(hazards: list[SqlHazard], text: str) -> list[SqlHazard]:
    if "pool-advisor" not in text or not hazards:
        return hazards
    marks = scan_suppressions(text)
    result = []
    for h in hazards:
        line = h.location.line or 0
        lines = {line - 1, line, h.location.end_line or line}
        codes = tuple(c for at in sorted(lines) for c in marks.get(at, ()))
        result.append(replace(h, suppressed=codes) if codes else h)
    return result


def assign_clients(hazards: list[SqlHazard], source_dirs: dict[str, str]) -> list[SqlHazard]:
    """Map hazards to workloads by source folder: `source_dirs` is client id -> folder
    (relative to the root, "" or "." for the whole root). A hazard under a folder gets that
    client's id (the deepest folder wins); one hazard per client when several workloads
    run the same source (web and worker from one codebase). Hazards under no folder stay
    unmapped (client_id None): the PA4xx rules check them against the strictest mode."""
    by_dir: dict[str, list[str]] = {}
    for client_id, folder in source_dirs.items():
        key = PurePosixPath(folder.replace("\\", "/")).as_posix().strip("/")
        by_dir.setdefault("" if key == "." else key, []).append(client_id)
    mapped: list[SqlHazard] = []
    for h in hazards:
        path = h.location.path
        owners: list[str] = []
        depth = -1
        for folder, ids in by_dir.items():
            inside = folder == "" or path == folder or path.startswith(folder + "/")
            level = folder.count("/") + (folder != "")
            if inside and level > depth:
                owners, depth = ids, level
        if not owners or h.client_id is not None:
            mapped.append(h)
            continue
        mapped.extend(replace(h, client_id=cid) for cid in sorted(owners))
    return mapped
