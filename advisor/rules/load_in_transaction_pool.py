"""PA408 load-in-transaction-pool (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._transaction_mode import hazard_findings

CODE = "PA408"
NAME = "load-in-transaction-pool"
CONSEQUENCE = (
    "the library is loaded into one server session only: this client's next "
    "transaction may run without it, and other clients get it unasked"
)


@rule(CODE, NAME, Severity.warning, "LOAD of a shared library behind a transaction pooler")
def load_in_transaction_pool(topology: Topology, context: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds `LOAD 'library'` behind a transaction- or statement-mode PgBouncer pool.

    Code strings count only where they are used as SQL, test and example code is not
    scanned, and a place run by several workloads is one finding (see PA401).

    ## Why is this bad
    `LOAD` affects the server session it runs in. Behind a transaction pooler that is
    a different session from one transaction to the next.

    ## Example
    ```sql
    LOAD 'auto_explain';
    ```

    ## Use instead
    ```sql
    ALTER ROLE app SET session_preload_libraries = 'auto_explain';
    ```

    ## Options
    None.

    ## References
    - PostgreSQL LOAD: https://www.postgresql.org/docs/15/sql-load.html
    - session_preload_libraries: https://www.postgresql.org/docs/15/runtime-config-client.html
    """
    yield from hazard_findings(
        topology,
        code=CODE,
        name=NAME,
        severity=Severity.warning,
        kinds=frozenset({"load"}),
        consequence=CONSEQUENCE,
    )
