"""Helpers shared by the machine-readable and markdown formats: rule metadata for a
finding (also for codes no registered rule owns), rule-doc links, and where exactly on
its line a one-value fix applies."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct

from advisor.model import Finding, Location, Replacement, Severity
from advisor.read.fs import InputError, Root

if TYPE_CHECKING:
    from advisor.model import CheckResult
    from advisor.rules import Registry, Rule

TOOL_NAME = "pool-advisor"
# Placeholder for the project's public repository (a code host, not a package registry);
# pass `docs_url=` (CLI: --docs-url / POOL_ADVISOR_DOCS_URL) to point at your own copy.
DEFAULT_REPO_URL = "https://github.com/pool-advisor/pool-advisor"
DEFAULT_DOCS_URL = f"{DEFAULT_REPO_URL}/blob/main"

SECTION_TITLES = (
    "What it does",
    "Why is this bad",
    "Example",
    "Use instead",
    "Options",
    "References",
)

SEVERITY_ORDER = (Severity.error, Severity.warning, Severity.info)


class RuleInfo(Struct, frozen=True):
    """What a reporter needs to describe a rule, whether or not it is registered."""

    code: str
    name: str
    severity: Severity
    summary: str
    doc: str
    registered: bool = True  # False: a code the engine emits, with no rules/ page


def rule_info(registry: Registry, finding: Finding) -> RuleInfo:
    found = registry.rules.get(finding.code)
    if found is not None:
        return _info(found)
    # Findings the engine emits itself (unreadable files, configuration problems) have
    # no rule module; describe them from the finding.
    return RuleInfo(finding.code, finding.name, finding.severity, finding.name, "", False)


def _info(r: Rule) -> RuleInfo:
    # Dedent: before Python 3.13 docstrings keep their source indentation, which
    # markdown would read as code blocks.
    return RuleInfo(r.code, r.name, r.severity, r.summary, inspect.cleandoc(r.doc))


def rules_for(result: CheckResult, registry: Registry) -> list[RuleInfo]:
    """Every registered rule, then any code only findings carry, in code order."""
    infos = {r.code: _info(r) for r in registry.ordered()}
    for f in [*result.findings, *result.suppressed]:
        infos.setdefault(f.code, rule_info(registry, f))
    return [infos[c] for c in sorted(infos)]


def long_message(f: Finding, *, fix: bool = True) -> str:
    """The finding's message, then its arithmetic one step a line, then its fix: what a
    format with a single text field (SARIF, GitLab, rdjson, annotations) carries."""
    text = f.message
    if f.detail:
        text += "\n" + "\n".join(x.strip() for x in f.detail.splitlines() if x.strip())
    if fix and f.fix is not None:
        text += f"\nFix: {f.fix.description}"
    return text


def rule_doc_url(docs_url: str, code: str, name: str) -> str:
    return f"{docs_url.rstrip('/')}/rules/{code}-{name}.md"


def sentence(text: str) -> str:
    """`text` as one sentence ending in a full stop (SARIF validators ask for it)."""
    text = " ".join(text.split())
    if not text:
        return text
    return text if text[-1] in ".!?" else f"{text}."


_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def doc_sections(doc: str) -> dict[str, str]:
    """Split a ruff-style rule docstring into its sections. Titles may be written as
    markdown headings (`## What it does`) or as plain lines (`What it does:`)."""
    sections: dict[str, list[str]] = {}
    current = ""
    for line in doc.splitlines():
        title = _section_title(line)
        if title is not None:
            current = title
            sections.setdefault(current, [])
        else:
            sections.setdefault(current, []).append(line)
    return {k: "\n".join(v).strip() for k, v in sections.items()}


def _section_title(line: str) -> str | None:
    m = _HEADING.match(line)
    text = m.group(2) if m else line.strip().rstrip(":")
    for title in SECTION_TITLES:
        if text.lower() == title.lower():
            return title
    return None


def doc_markdown(doc: str) -> str:
    """The docstring as markdown: section title lines become `##` headings."""
    out = []
    for line in doc.splitlines():
        title = _section_title(line)
        out.append(f"## {title}" if title is not None and not _HEADING.match(line) else line)
    return "\n".join(out).strip()


def full_description(info: RuleInfo) -> str:
    what = doc_sections(info.doc).get("What it does", "")
    first = what.split("\n\n", 1)[0] if what else ""
    return sentence(first or info.summary or info.name)


# --- notices -------------------------------------------------------------------------

# Notices whose words say the numbers may be incomplete (a chart not rendered, a values-
# only reading, a value not read, a file skipped, clients unknown): these are warnings in
# every format; the rest (which profile was read, how a chart was rendered) are notes.
_DEGRADES = re.compile(
    r"NOT rendered|values[- ]only|not (?:read|readable|checked|followed|installed|"
    r"evaluated|available|budgeted)|cannot be read|could not|skipped|unknown|stopped|"
    r"missing|unresolved|ignored|assum", re.IGNORECASE)
_NOTICE_PATH = re.compile(r"([\w.@+-]*[\w@+-]/?[\w./@+-]*\.[A-Za-z0-9]+)(?::(\d+))?")


def degrades(notice: str) -> bool:
    """True when the notice says what the numbers mean changed (accuracy is lower)."""
    return _DEGRADES.search(notice) is not None


def notice_location(notice: str, result: CheckResult,
                    exists: Callable[[str], bool] | None = None) -> Location | None:
    """Where a notice belongs, for formats that need a file (GitLab, reviewdog): the
    first file it names that exists in the repository, else the first server's or
    finding's file. Paths are relative to the repository root, as the report's are."""
    base = Path(result.root) if getattr(result, "root", "") else Path(".")
    exists = exists or (lambda p: (base / p).is_file())
    for m in _NOTICE_PATH.finditer(notice):
        if exists(m.group(1)):
            return Location(path=m.group(1), line=int(m.group(2)) if m.group(2) else None)
    for loc in [*(b.location for b in result.budgets), *(f.location for f in result.findings)]:
        if exists(loc.path):
            return Location(path=loc.path, line=loc.line)
    return None


# --- where a one-value fix sits on its line ------------------------------------------

LineReader = Callable[[str, int], "str | None"]


class ValueSpan(Struct, frozen=True):
    """The characters of `line_text[start:end]` (0-based, end exclusive) that a
    Replacement's `old` value occupies."""

    line: int
    line_text: str
    start: int
    end: int

    def columns(self, unit: str) -> tuple[int, int]:
        """1-based start and exclusive end column, counted in `unit`: "utf8" bytes
        (reviewdog), "utf16" code units (SARIF's default columnKind) or "chars"."""
        return (
            _width(self.line_text[: self.start], unit) + 1,
            _width(self.line_text[: self.end], unit) + 1,
        )


def _width(text: str, unit: str) -> int:
    if unit == "utf8":
        return len(text.encode("utf-8"))
    if unit == "utf16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def locate_value(line_text: str, repl: Replacement) -> tuple[int, int] | None:
    """Offsets of `repl.old` on its line: the first occurrence after the key when the
    key is on the line, else the only occurrence; None when it cannot be told."""
    if not repl.old:
        return None
    key_at = line_text.find(repl.key) if repl.key else -1
    if key_at < 0 and repl.key:
        key_at = line_text.lower().find(repl.key.lower())
    if key_at >= 0:
        at = line_text.find(repl.old, key_at + len(repl.key))
        if at >= 0:
            return at, at + len(repl.old)
    if line_text.count(repl.old) == 1:
        at = line_text.find(repl.old)
        return at, at + len(repl.old)
    return None


def file_line_reader(root: str) -> LineReader:
    """Read line N of a reported path (relative to the repository root `root`; the
    working directory when empty, for a JSON report read back), through `Root` so
    nothing outside it is read. Caches per path."""
    base = Root.of(root or ".")
    cache: dict[str, list[str] | None] = {}

    def read(path: str, line: int) -> str | None:
        if path not in cache:
            cache[path] = _read_lines(base, path)
        lines = cache[path]
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1]

    return read


def _read_lines(root: Root, path: str) -> list[str] | None:
    try:
        return root.read_text(path).splitlines()
    except InputError:
        return None


def value_span(repl: Replacement, read_line: LineReader) -> ValueSpan | None:
    text = read_line(repl.path, repl.line)
    if text is None:
        return None
    found = locate_value(text, repl)
    if found is None:
        return None
    return ValueSpan(repl.line, text, found[0], found[1])
