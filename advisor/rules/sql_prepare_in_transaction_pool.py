"""PA404 sql-prepare-in-transaction-pool (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._transaction_mode import hazard_findings

CODE = "PA404"
NAME = "sql-prepare-in-transaction-pool"
CONSEQUENCE = (
    "the statement is prepared on one server connection and executed on another: "
    "`prepared statement ... does not exist`, or `... already exists` for the next "
    "client"
)


@rule(CODE, NAME, Severity.error, "SQL PREPARE/EXECUTE/DEALLOCATE behind a transaction pooler")
def sql_prepare_in_transaction_pool(topology: Topology, context: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds SQL-level `PREPARE`, `EXECUTE` and `DEALLOCATE` behind a transaction- or
    statement-mode PgBouncer pool.

    Code strings count only where they are used as SQL, test and example code is not
    scanned, and a place run by several workloads is one finding (see PA401).

    ## Why is this bad
    A prepared statement lives in the server session. PgBouncer never tracks SQL-level
    `PREPARE` (not even 1.21+ with `max_prepared_statements`, which tracks only the
    protocol-level ones), so `EXECUTE` runs on whichever server connection the pool
    hands out.

    ## Example
    ```sql
    PREPARE get_user(int) AS SELECT * FROM users WHERE id = $1;
    EXECUTE get_user(1);
    ```

    ## Use instead
    ```sql
    -- plain statements with bound parameters; let the driver use protocol-level
    -- prepared statements where PgBouncer >= 1.21 tracks them
    SELECT * FROM users WHERE id = 1;
    ```

    ## Options
    None.

    ## References
    - PgBouncer 1.21 changelog (protocol-level prepared statements): https://www.pgbouncer.org/changelog.html
    - PgBouncer feature map: https://www.pgbouncer.org/features.html
    """
    yield from hazard_findings(
        topology,
        code=CODE,
        name=NAME,
        severity=Severity.error,
        kinds=frozenset({"sql-prepare"}),
        consequence=CONSEQUENCE,
    )
