"""PA403 session-advisory-lock-in-transaction-pool (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.context import RuleContext
from advisor.model import Finding, Severity, Topology
from advisor.rules import rule
from advisor.rules._transaction_mode import hazard_findings

CODE = "PA403"
NAME = "session-advisory-lock-in-transaction-pool"
CONSEQUENCE = (
    "the lock belongs to the server connection, not the client: it stays held after "
    "the client is done, and another client on that server connection can take or "
    "release it"
)


@rule(CODE, NAME, Severity.error, "Session-level advisory locks behind a transaction pooler")
def session_advisory_lock_in_transaction_pool(
    topology: Topology, context: RuleContext
) -> Iterator[Finding]:
    """## What it does
    Finds calls of `pg_advisory_lock`, `pg_try_advisory_lock`, their `_shared` variants
    and `pg_advisory_unlock*`, and Rails `database.yml` files that leave `advisory_locks`
    on (migrations take a session advisory lock), when the client uses a transaction- or
    statement-mode PgBouncer pool.

    ## Why is this bad
    A session advisory lock is held by the server session until it is unlocked or the
    session ends. Behind a transaction pooler the session is shared: the lock outlives the
    client's transaction, another client handed that server connection already "holds"
    it (re-entrant) and may unlock it, and the unlock may run on a different server
    connection than the lock.

    ## Example
    ```sql
    SELECT pg_advisory_lock(42);
    -- work
    SELECT pg_advisory_unlock(42);
    ```

    ## Use instead
    ```sql
    BEGIN;
    SELECT pg_advisory_xact_lock(42);  -- released at COMMIT
    -- work
    COMMIT;
    ```

    ## Options
    None.

    ## References
    - PostgreSQL advisory lock functions: https://www.postgresql.org/docs/15/functions-admin.html#FUNCTIONS-ADVISORY-LOCKS
    - PgBouncer feature map: https://www.pgbouncer.org/features.html
    """
    yield from hazard_findings(
        topology,
        code=CODE,
        name=NAME,
        severity=Severity.error,
        kinds=frozenset({"advisory-lock"}),
        consequence=CONSEQUENCE,
    )
