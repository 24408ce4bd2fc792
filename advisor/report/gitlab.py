"""GitLab Code Quality report (artifacts:reports:codequality): the subset of the Code
Climate issue format GitLab reads, per its docs ("Implement a custom tool"):
description, check_name, fingerprint, severity, location.path, location.lines.begin."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from advisor.model import Finding, Severity

if TYPE_CHECKING:
    from advisor.model import CheckResult
    from advisor.rules import Registry

# GitLab's scale is info < minor < major < critical < blocker. An error means the
# deployment fails at peak (refused connections): critical, not blocker, which we keep
# for nothing so a user's own tools can outrank us. Warnings are major, info is info.
SEVERITY = {Severity.error: "critical", Severity.warning: "major", Severity.info: "info"}


def issue(f: Finding) -> dict[str, Any]:
    description = f.message
    if f.fix is not None:
        description = f"{description} Fix: {f.fix.description}"
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
    return json.dumps([issue(f) for f in result.findings], indent=2) + "\n"
