"""SARIF 2.1.0, shaped for GitHub code scanning (`sarif-multitool validate
--rule-kind "Gh;Sarif"` passes with no errors and no warnings).

- Paths are relative URIs against the `SRCROOT` base id, as GitHub expects.
- `partialFingerprints` carry `Finding.fingerprint` (rule, file, subject; not the line),
  so an alert survives unrelated edits above it.
- Every number's source is a `relatedLocation`; a one-value fix becomes a SARIF `fix`
  when its value can be found on its line.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from advisor.model import Finding, Location, Severity
from advisor.report.common import (
    DEFAULT_DOCS_URL,
    DEFAULT_REPO_URL,
    TOOL_NAME,
    LineReader,
    RuleInfo,
    degrades,
    doc_markdown,
    file_line_reader,
    full_description,
    rule_doc_url,
    rules_for,
    sentence,
    value_span,
)

if TYPE_CHECKING:
    from advisor.model import CheckResult
    from advisor.rules import Registry

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "SRCROOT"
FINGERPRINT_KEY = "poolAdvisorFinding/v1"

SUPPRESSION = {
    "kind": "inSource",
    "justification": "pool-advisor: ignore[...] comment or pool-advisor.io/ignore annotation",
}

LEVELS = {Severity.error: "error", Severity.warning: "warning", Severity.info: "note"}
# GitHub's `problem.severity` for non-security alerts.
PROBLEM_SEVERITY = {
    Severity.error: "error",
    Severity.warning: "warning",
    Severity.info: "recommendation",
}


def render(
    result: CheckResult,
    registry: Registry,
    *,
    docs_url: str = DEFAULT_DOCS_URL,
    srcroot: str | None = None,
    read_line: LineReader | None = None,
) -> str:
    log = build_log(result, registry, docs_url=docs_url, srcroot=srcroot, read_line=read_line)
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def build_log(
    result: CheckResult,
    registry: Registry,
    *,
    docs_url: str = DEFAULT_DOCS_URL,
    srcroot: str | None = None,
    read_line: LineReader | None = None,
) -> dict[str, Any]:
    """The SARIF log as a dict. `srcroot`: the absolute repository root the result's
    paths are relative to; omitted, SRCROOT is described but left for the consumer to
    bind, as GitHub does with the checkout."""
    reader = read_line or file_line_reader(result.root)
    infos = rules_for(result, registry)
    index = {info.code: i for i, info in enumerate(infos)}
    driver: dict[str, Any] = {
        "name": TOOL_NAME,
        "fullName": f"{TOOL_NAME} {result.tool_version}",
        "version": result.tool_version,
        "semanticVersion": _semver(result.tool_version),
        "informationUri": DEFAULT_REPO_URL,
        "rules": [_descriptor(info, docs_url) for info in infos],
    }
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "invocations": [_invocation(result)],
        "originalUriBaseIds": {SRCROOT: _srcroot(srcroot)},
        "columnKind": "utf16CodeUnits",
        "results": [_result(f, index[f.code], reader) for f in result.findings] + [
            # Suppressed in the source: GitHub shows these as closed, not as open alerts.
            _result(f, index[f.code], reader) | {"suppressions": [SUPPRESSION]}
            for f in result.suppressed],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


_SEMVER = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


def _semver(version: str) -> str:
    """SemVer 2.0 form of a PEP 440 version: 0.1.0.dev3 -> 0.1.0-dev3, 1.2 -> 1.2.0."""
    if _SEMVER.match(version):
        return version
    m = re.match(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)$", version)
    if m is None:
        return "0.0.0+" + _ident(version)
    core = ".".join(part or "0" for part in m.groups()[:3])
    local, _, build = m.group(4).partition("+")
    out = core + (f"-{_ident(local)}" if _ident(local) else "")
    return out + (f"+{_ident(build)}" if _ident(build) else "")


def _ident(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z.-]", "-", text).strip(".-")


def _srcroot(srcroot: str | None) -> dict[str, Any]:
    description = {
        "text": "The repository root; result paths are relative to it."
    }
    if srcroot is None:
        return {"description": description}
    uri = PurePosixPath(srcroot).as_posix()
    uri = "file://" + quote(uri if uri.startswith("/") else f"/{uri}")
    return {"uri": uri.rstrip("/") + "/", "description": description}


def _invocation(result: CheckResult) -> dict[str, Any]:
    inv: dict[str, Any] = {"executionSuccessful": True}
    if result.notices:
        inv["toolExecutionNotifications"] = [
            {"message": {"text": sentence(n)}, "level": "warning" if degrades(n) else "note"}
            for n in result.notices
        ]
    return inv


def _descriptor(info: RuleInfo, docs_url: str) -> dict[str, Any]:
    help_text = info.doc or sentence(info.summary or info.name)
    help_md = doc_markdown(info.doc) if info.doc else help_text
    descriptor: dict[str, Any] = {
        "id": info.code,
        "name": _pascal(info.name),
        "shortDescription": {"text": sentence(info.summary or info.name)},
        "fullDescription": {"text": full_description(info)},
        "help": {"text": help_text, "markdown": help_md},
    }
    if info.registered:
        url = rule_doc_url(docs_url, info.code, info.name)
        descriptor["help"]["markdown"] += f"\n\n[Rule documentation]({url})"
        descriptor["helpUri"] = url
    return descriptor | {
        "defaultConfiguration": {"level": LEVELS[info.severity]},
        "properties": {
            "tags": ["postgresql", "connections", info.name],
            "precision": "very-high",
            "problem.severity": PROBLEM_SEVERITY[info.severity],
        },
    }


def _pascal(kebab: str) -> str:
    # SARIF's rule `name` is an identifier-like friendly name; GitHub shows it as is.
    return "".join(part[:1].upper() + part[1:] for part in kebab.replace("_", "-").split("-"))


def artifact_location(path: str) -> dict[str, Any]:
    if path.startswith("/"):
        return {"uri": "file://" + quote(path)}
    return {"uri": quote(PurePosixPath(path).as_posix()), "uriBaseId": SRCROOT}


def physical_location(loc: Location) -> dict[str, Any]:
    return {"artifactLocation": artifact_location(loc.path), "region": _region(loc)}


def _region(loc: Location) -> dict[str, Any]:
    if loc.line is None:
        # A finding about a whole file (a declared server, a missing key): GitHub and the
        # validator want a region, and line 1 is where a reader starts.
        return {"startLine": 1}
    region: dict[str, Any] = {"startLine": loc.line}
    if loc.column is not None:
        region["startColumn"] = loc.column
    if loc.end_line is not None and loc.end_line >= loc.line:
        region["endLine"] = loc.end_line
    return region


def _result(
    f: Finding, rule_index: int, read_line: LineReader
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": rule_index,
        "level": LEVELS[f.severity],
        "message": {"text": _message(f)},
        "locations": [{"physicalLocation": physical_location(f.location)}],
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
    }
    if f.related:
        out["relatedLocations"] = [
            {
                "id": i,
                "physicalLocation": physical_location(rel.location),
                "message": {"text": sentence(rel.message)},
            }
            for i, rel in enumerate(f.related, start=1)
        ]
    fix = _fix(f, read_line)
    if fix is not None:
        out["fixes"] = [fix]
    return out


def _message(f: Finding) -> str:
    """The sentence, the arithmetic one step a line (GitHub keeps the line breaks), the
    fix; ending in a full stop, as the validator asks."""
    lines = [sentence(f.message)]
    lines += [x.strip() for x in f.detail.splitlines() if x.strip()]
    if f.fix is not None:
        lines.append(f"Fix: {sentence(f.fix.description)}")
    return sentence("\n".join(lines)) if len(lines) == 1 else \
        "\n".join([*lines[:-1], sentence(lines[-1])])


def _fix(f: Finding, read_line: LineReader) -> dict[str, Any] | None:
    if f.fix is None or f.fix.replacement is None:
        return None
    repl = f.fix.replacement
    span = value_span(repl, read_line)
    if span is None:
        return None
    start, end = span.columns("utf16")
    return {
        "description": {"text": sentence(f.fix.description)},
        "artifactChanges": [
            {
                "artifactLocation": artifact_location(repl.path),
                "replacements": [
                    {
                        "deletedRegion": {
                            "startLine": repl.line,
                            "startColumn": start,
                            "endColumn": end,
                        },
                        "insertedContent": {"text": repl.new},
                    }
                ],
            }
        ],
    }
