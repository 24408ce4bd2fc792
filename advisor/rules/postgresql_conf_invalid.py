"""PA109 postgresql-conf-invalid."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule


@rule("PA109", "postgresql-conf-invalid", Severity.error,
      "PostgreSQL would refuse to start with this configuration")
def postgresql_conf_invalid(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports what PostgreSQL itself rejects in postgresql.conf (and included files,
    postgresql.auto.conf, `-c` arguments): unknown units, bad numbers, values out of
    range, unknown parameters, syntax errors, missing includes. The message is the one
    PostgreSQL prints.

    ## Why is this bad
    The server does not start: `FATAL: configuration file ".../postgresql.conf"
    contains errors`. Memory units are case-sensitive: `work_mem = 4mb` is an error.

    ## Example
    ```ini
    work_mem = 4mb
    ```

    ## Use instead
    ```ini
    work_mem = 4MB
    ```

    ## Options
    None.

    ## References
    - PostgreSQL 15 docs, 20.1 Setting Parameters (units: B, kB, MB, GB, TB; us, ms,
      s, min, h, d).
    """
    for p in topo.problems:
        if p.program == "PostgreSQL":
            yield Finding(code="PA109", name="postgresql-conf-invalid",
                          severity=Severity.error if p.fatal else Severity.warning,
                          message=p.message, location=p.location,
                          subject=f"{p.location.path}|{p.message}")
