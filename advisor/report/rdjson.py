"""reviewdog's rdjson (a DiagnosticResult, reviewdog/reviewdog proto/rdf/reviewdog.proto):
`reviewdog -f=rdjson` posts these as review comments, and a one-value fix as a GitHub
suggestion. Columns are 1-based UTF-8 byte offsets, ranges end-exclusive, as the
proto specifies."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from advisor.model import Finding, Location, Replacement, Severity
from advisor.report.common import (
    DEFAULT_DOCS_URL,
    DEFAULT_REPO_URL,
    TOOL_NAME,
    LineReader,
    degrades,
    file_line_reader,
    long_message,
    notice_location,
    rule_doc_url,
    rule_info,
    value_span,
)

if TYPE_CHECKING:
    from advisor.model import CheckResult
    from advisor.rules import Registry

SEVERITY = {Severity.error: "ERROR", Severity.warning: "WARNING", Severity.info: "INFO"}


def render(
    result: CheckResult,
    registry: Registry,
    *,
    docs_url: str = DEFAULT_DOCS_URL,
    read_line: LineReader | None = None,
) -> str:
    reader = read_line or file_line_reader(result.root)
    doc = {
        "source": {"name": TOOL_NAME, "url": DEFAULT_REPO_URL},
        "diagnostics": [
            d for f in result.findings
            for d in _diagnostics(f, registry, docs_url, reader)
        ] + [d for n in result.notices if degrades(n) and (d := _notice(n, result))],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _notice(notice: str, result: CheckResult) -> dict[str, Any] | None:
    loc = notice_location(notice, result)
    if loc is None:
        return None
    return {"message": f"pool-advisor notice: {notice}",
            "location": _location(loc),
            "severity": "WARNING" if degrades(notice) else "INFO",
            "code": {"value": "notice"}}


def _location(loc: Location) -> dict[str, Any]:
    out: dict[str, Any] = {"path": loc.path}
    if loc.line is not None:
        start: dict[str, int] = {"line": loc.line}
        if loc.column is not None:
            start["column"] = loc.column
        out["range"] = {"start": start}
        if loc.end_line is not None and loc.end_line > loc.line:
            out["range"]["end"] = {"line": loc.end_line}
    return out


def _diagnostics(
    f: Finding, registry: Registry, docs_url: str, read_line: LineReader
) -> list[dict[str, Any]]:
    info = rule_info(registry, f)
    code = {"value": f.code}
    if info.registered:
        code["url"] = rule_doc_url(docs_url, info.code, info.name)
    message = long_message(f)
    main: dict[str, Any] = {
        "message": message,
        "location": _location(f.location),
        "severity": SEVERITY[f.severity],
        "code": code,
    }
    if f.related:
        main["related_locations"] = [
            {"message": rel.message, "location": _location(rel.location)}
            for rel in f.related
        ]
    out = [main]
    repl = f.fix.replacement if f.fix is not None else None
    suggestion = _suggestion(repl, read_line) if repl is not None else None
    if repl is None or suggestion is None or f.fix is None:
        return out
    if repl.path == f.location.path:
        main["suggestions"] = [suggestion]
    else:
        # A suggestion applies to its diagnostic's own file, and the value to change
        # often sits elsewhere (the pool size, not the server): say so where it sits.
        out.append({
            "message": f"Fix for {f.code} ({f.message}): {f.fix.description}",
            "location": {"path": repl.path, "range": suggestion["range"]},
            "severity": SEVERITY[f.severity],
            "code": code,
            "suggestions": [suggestion],
        })
    return out


def _suggestion(repl: Replacement, read_line: LineReader) -> dict[str, Any] | None:
    span = value_span(repl, read_line)
    if span is None:
        return None
    start, end = span.columns("utf8")
    return {
        "range": {
            "start": {"line": repl.line, "column": start},
            "end": {"line": repl.line, "column": end},
        },
        "text": repl.new,
    }
