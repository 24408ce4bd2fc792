"""PA901 unreadable-input."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import OWN_RULE_PROGRAMS, Finding, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule

# reported by PA109 and PA209; a template of another tool is a notice (engine.evaluate)


@rule("PA901", "unreadable-input", Severity.error,
      "A file could not be read, so its settings are not in the budget")
def unreadable_input(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports files pool-advisor could not read: invalid YAML, binary or non-UTF-8
    files, YAML whose aliases would expand beyond a safe size, symlinks and includes
    that leave the scanned root, configuration it cannot parse, charts Helm cannot
    render, .jsonnet files an Argo CD Application renders that are not evaluated (the
    optional `jsonnet` package missing, a file past its time or memory bound, a
    generator parameter not read). As a warning, it also names a PostgreSQL cluster the
    repository deploys through an operator pool-advisor does not read (StackGres,
    Kubegres, KubeDB, the Crunchy operator v4): its server is in no budget. So is a
    docker compose file that runs PostgreSQL when no server is budgeted (beside a
    budgeted one, a notice names it).

    ## Why is this bad
    Whatever the file sets (replicas, pool sizes, max_connections) is missing from the
    budget, so the answer may be wrong; the other files are still checked. A server
    that is not read is not checked at all: "no PostgreSQL server found" would be a
    silent zero.

    ## Example
    ```yaml
    spec:
      replicas: [3
    ```

    ## Use instead
    ```yaml
    spec:
      replicas: 3
    ```

    ## Options
    None.

    ## References
    - YAML 1.2 specification.
    """
    # A file read by several paths (a kustomization that more than one overlay builds)
    # reports the same problem each time: said once.
    seen: set[tuple[object, str, bool]] = set()
    for p in topo.problems:
        if p.program in OWN_RULE_PROGRAMS or (p.location, p.message, p.fatal) in seen:
            continue
        seen.add((p.location, p.message, p.fatal))
        yield Finding(code="PA901", name="unreadable-input",
                      severity=Severity.error if p.fatal else Severity.warning,
                      message=p.message, location=p.location,
                      subject=f"{p.location.path}|{p.message}")
