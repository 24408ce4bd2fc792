"""GitLab Code Quality report (artifacts:reports:codequality): the subset of the Code
Climate issue format GitLab reads, per its docs ("Implement a custom tool"):
description, check_name, fingerprint, severity, location.path, location.lines.begin."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from advisor.model import Finding, Severity
from advisor.report.common import degrades, long_message, notice_location

if TYPE_CHECKING:
    from advisor.model import CheckResult
    from advisor.rules import Registry

# GitLab's scale is info < minor < major < critical < blocker. An error means the
# deployment fails at peak (refused connections): critical, not blocker, which we keep
# for nothing so a user's own tools can outrank us. Warnings are major, info is info.
SEVERITY = {Severity.error: "critical", Severity.warning: "major", Severity.info: "info"}


def issue(f: Finding) -> dict[str, Any]:
    # One line (the merge request widget shows one): message, its arithmetic, the fix.
    description = "; ".join(long_message(f, fix=False).splitlines())
    if f.fix is not None:
        description = f"{description}. Fix: {f.fix.description}"
    loc = f.location
    lines: dict[str, int] = {"begin": loc.line or 1}
    if loc.line is not None and loc.end_line is not None and loc.end_line > loc.line:
        lines["end"] = loc.end_line
    return {
        "description": description,
        "check_name": f.code,
        "fingerprint": f.fingerprint,
        "severity": SEVERITY[f.severity],
        "location": {"path": f.location.path, "lines": lines},
    }


def render(result: CheckResult, registry: Registry) -> str:
    # No BOM: GitLab's parser rejects one. ensure_ascii keeps the file plain ASCII.
    issues = [issue(f) for f in result.findings]
    # only notices that lower accuracy: the informational ones ("rendered chart X as
    # release Y", one per chart or overlay) flooded the merge request widget, ~130 on a
    # GitOps tree all pinned to the first server's file (audit 13b)
    issues += [i for n in result.notices if degrades(n) and (i := notice_issue(n, result))]
    return json.dumps(issues, indent=2) + "\n"


def notice_issue(notice: str, result: CheckResult) -> dict[str, Any] | None:
    """A notice as an issue (GitLab has no other channel in the report): `minor` when
    it lowers accuracy, else `info`, at the file it names (or the first server's).
    render() passes only those that lower accuracy."""
    loc = notice_location(notice, result)
    if loc is None:
        return None
    import hashlib

    return {
        "description": f"pool-advisor notice: {notice}",
        "check_name": "pool-advisor-notice",
        "fingerprint": hashlib.sha256(f"notice|{notice}".encode()).hexdigest()[:32],
        "severity": "minor" if degrades(notice) else "info",
        "location": {"path": loc.path, "lines": {"begin": loc.line or 1}},
    }
