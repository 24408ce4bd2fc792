"""PA409 transaction-block-in-statement-pool (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._transaction_mode import hazard_findings

CODE = "PA409"
NAME = "transaction-block-in-statement-pool"
CONSEQUENCE = (
    "statement mode allows no transaction blocks: PgBouncer fails the transaction with "
    "`transaction blocks not allowed in statement pooling mode`"
)


@rule(CODE, NAME, Severity.error, "Explicit transaction blocks behind a statement-mode pooler")
def transaction_block_in_statement_pool(
    topology: Topology, context: RuleContext
) -> Iterator[Finding]:
    """## What it does
    Finds `BEGIN` / `START TRANSACTION` (a transaction of several statements) whose
    client goes through a PgBouncer pool in statement mode.

    Code strings count only where they are used as SQL, test and example code is not
    scanned, and a place run by several workloads is one finding (see PA401).

    ## Why is this bad
    Statement pooling hands the server connection back after every statement, so it
    refuses multi-statement transactions outright.

    ## Example
    ```sql
    BEGIN;
    UPDATE accounts SET balance = balance - 10 WHERE id = 1;
    UPDATE accounts SET balance = balance + 10 WHERE id = 2;
    COMMIT;
    ```

    ## Use instead
    ```sql
    -- one statement per unit of work, or a transaction-mode pool for this user:
    UPDATE accounts SET balance = balance + CASE id WHEN 1 THEN -10 ELSE 10 END
    WHERE id IN (1, 2);
    ```

    ## Options
    None.

    ## References
    - PgBouncer pool modes: https://www.pgbouncer.org/features.html
    """
    yield from hazard_findings(
        topology,
        code=CODE,
        name=NAME,
        severity=Severity.error,
        kinds=frozenset({"transaction-block"}),
        min_mode="statement",
        consequence=CONSEQUENCE,
    )
