"""GitHub Actions workflow commands: one `::error file=...,line=...,title=...::message`
annotation per finding, shown on the pull request's diff.

Escaping follows actions/toolkit packages/core/src/command.ts (`escapeData`,
`escapeProperty`): in the message `%`, CR and LF become `%25`, `%0D`, `%0A`; property
values additionally escape `:` as `%3A` and `,` as `%2C`, since those delimit the
command's properties. `%` goes first so an escape is never escaped twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from advisor.model import Finding, Severity
from advisor.report.common import degrades, long_message

if TYPE_CHECKING:
    from advisor.model import CheckResult
    from advisor.rules import Registry

COMMANDS = {Severity.error: "error", Severity.warning: "warning", Severity.info: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(name: str, properties: Mapping[str, object], message: str) -> str:
    """`::name k=v,k=v::message`; empty or None properties are left out, as the toolkit
    does."""
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in properties.items()
        if value is not None and value != ""
    )
    head = f"::{name} {props}" if props else f"::{name}"
    return f"{head}::{escape_data(message)}"


def annotation(finding: Finding) -> str:
    """One workflow command. Its path is relative to the repository root, which GitHub
    resolves it against."""
    loc = finding.location
    end_line = loc.end_line if loc.end_line is not None and loc.line is not None else None
    message = long_message(finding)
    return workflow_command(
        COMMANDS[finding.severity],
        {
            "file": loc.path,
            "line": loc.line,
            "endLine": end_line,
            "col": loc.column if loc.line is not None else None,
            "title": f"{finding.code} {finding.name}",
        },
        message,
    )


def notice_annotation(notice: str) -> str:
    """A notice that lowers accuracy is a `::warning`, any other a `::notice`."""
    name = "warning" if degrades(notice) else "notice"
    return workflow_command(name, {"title": "pool-advisor"}, notice)


def render(result: CheckResult, registry: Registry) -> str:
    ordered = sorted(result.findings, key=lambda f: -f.severity.rank)
    return "".join([*(annotation(f) + "\n" for f in ordered),
                    *(notice_annotation(n) + "\n" for n in result.notices)])


def should_add_github_annotations(env: Mapping[str, str]) -> bool:
    """True inside a GitHub Actions job, where the text report also gets annotations."""
    return env.get("GITHUB_ACTIONS") == "true"
