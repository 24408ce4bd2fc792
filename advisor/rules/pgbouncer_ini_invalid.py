"""PA209 pgbouncer-ini-invalid."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule


@rule("PA209", "pgbouncer-ini-invalid", Severity.error,
      "PgBouncer would refuse to start with this configuration")
def pgbouncer_ini_invalid(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports what PgBouncer itself rejects in pgbouncer.ini (and `%include`d files),
    with the message PgBouncer prints; non-fatal problems PgBouncer only warns about are
    warnings.

    ## Why is this bad
    PgBouncer does not strip inline comments: `default_pool_size = 20 ; note` makes it
    refuse to start with `invalid value "20 ; note" for parameter default_pool_size`.
    Quotes are not removed either.

    ## Example
    ```ini
    [pgbouncer]
    default_pool_size = 20 ; per user/db pair
    ```

    ## Use instead
    ```ini
    [pgbouncer]
    ; per user/db pair
    default_pool_size = 20
    ```

    ## Options
    None.

    ## References
    - PgBouncer docs, configuration file format; libusual cfparser.c.
    """
    for p in topo.problems:
        if p.program == "PgBouncer":
            yield Finding(code="PA209", name="pgbouncer-ini-invalid",
                          severity=Severity.error if p.fatal else Severity.warning,
                          message=p.message, location=p.location,
                          subject=f"{p.location.path}|{p.message}")
