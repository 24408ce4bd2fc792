"""PA902 unused-suppression."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Location, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule

CODE, NAME = "PA902", "unused-suppression"


@rule(CODE, NAME, Severity.warning,
      "A suppression comment or annotation suppresses nothing, or names an unknown rule")
def unused_suppression(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports `pool-advisor: ignore[...]` comments and `pool-advisor.io/ignore`
    annotations that suppressed no finding in this run, and codes in them that name
    no rule (like ruff's RUF100 for `# noqa`). The engine runs this rule after every
    other one, with what each suppression matched (`RuleContext.suppression_use`); a
    code whose rule was not selected in this run is not judged.

    ## Why is this bad
    A suppression outlives the problem it was written for: once the pool is resized,
    `ignore[PA101]` silently hides the next overload on that line. A misspelled code
    (`ignore[PA1O1]`) never suppressed anything, so the reviewer who approved it was
    misled.

    ## Example
    ```yaml
    # pool-advisor: ignore[PA1O1] capacity raised in INFRA-123
    maxReplicas: 4
    ```

    ## Use instead
    ```yaml
    maxReplicas: 4
    ```

    ## Options
    None.

    ## References
    - ruff RUF100 unused-noqa.
    """
    use = ctx.suppression_use
    if use is None:
        return
    for (path, line), codes in sorted(use.lines.items()):
        yield from _report(Location(path=path, line=line), codes, use, "comment")
    for (entity_id, path, line), codes in sorted(use.annotations.items()):
        yield from _report(Location(path=path, line=line), codes, use,
                           f"annotation on {entity_id}")


def _report(loc: Location, codes: list[str], use, what: str) -> Iterator[Finding]:
    for code in codes:
        key = (loc.path, loc.line, code)
        rule_code = use.known.get(code.upper()) or use.known.get(code.lower())
        if rule_code is None and code.lower() != "all":
            message = f"suppression {what} names {code!r}, which is no pool-advisor rule"
        elif key in use.used or (rule_code is not None and rule_code not in use.selected):
            continue
        else:
            message = f"suppression {what} for {code} matched no finding; remove it"
        yield Finding(code=CODE, name=NAME, severity=Severity.warning, message=message,
                      location=loc, subject=f"{loc.path}|{loc.line}|{code}")
