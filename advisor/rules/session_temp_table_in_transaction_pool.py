"""PA406 session-temp-table-in-transaction-pool (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._transaction_mode import hazard_findings

CODE = "PA406"
NAME = "session-temp-table-in-transaction-pool"
CONSEQUENCE = (
    "the table lives on the server connection: later statements of this client may "
    "not find it, and another client handed that connection sees it"
)


@rule(
    CODE,
    NAME,
    Severity.warning,
    "Temporary tables that outlive their transaction behind a transaction pooler",
)
def session_temp_table_in_transaction_pool(
    topology: Topology, context: RuleContext
) -> Iterator[Finding]:
    """## What it does
    Finds `CREATE TEMP TABLE` (also `CREATE TEMP TABLE ... AS` and `SELECT ... INTO TEMP`)
    without `ON COMMIT DROP` behind a transaction- or statement-mode PgBouncer pool. A
    table dropped inside the explicit `BEGIN ... COMMIT` block that created it, or created
    in a block that ends in `ROLLBACK`, never outlives its transaction and is not reported
    (nor is a session `SET` of a rolled-back block, PA401).

    Code strings count only where they are used as SQL, test and example code is not
    scanned, and a place run by several workloads is one finding (see PA401).

    ## Why is this bad
    A temporary table belongs to the server session. With `ON COMMIT PRESERVE ROWS`
    (the default) or `DELETE ROWS` it outlives the transaction, so it stays behind on a
    shared server connection: visible to the next client, missing for this client's next
    transaction if that lands elsewhere.

    ## Example
    ```sql
    CREATE TEMP TABLE import_rows (id int);
    ```

    ## Use instead
    ```sql
    BEGIN;
    CREATE TEMP TABLE import_rows (id int) ON COMMIT DROP;
    -- use it
    COMMIT;
    ```

    ## Options
    None.

    ## References
    - PostgreSQL CREATE TABLE (TEMPORARY, ON COMMIT): https://www.postgresql.org/docs/15/sql-createtable.html
    - PgBouncer feature map: https://www.pgbouncer.org/features.html
    """
    yield from hazard_findings(
        topology,
        code=CODE,
        name=NAME,
        severity=Severity.warning,
        kinds=frozenset({"temp-table"}),
        consequence=CONSEQUENCE,
    )
