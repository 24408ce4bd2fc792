"""PA403 session-advisory-lock-in-transaction-pool (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, Topology
from advisor.rule_context import RuleContext
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
    statement-mode PgBouncer pool. Also the wrappers that take session locks:
    django_pglocks `advisory_lock(...)` (decorator or context manager), the Ruby
    with_advisory_lock gem without `transaction: true`, golang-migrate's postgres/pgx
    drivers (their `Lock()` runs `pg_advisory_lock`), `prisma migrate deploy|dev|reset`
    in a container's command (Prisma's schema engine takes `pg_advisory_lock(72707369)`),
    and helpers that run these functions through Ecto/Postgrex `query!`, pop `RawQuery`,
    or `fmt.Sprintf`.

    Where the SQL is: `.sql` files and migrations, and code strings used as SQL (passed
    to execute/query/raw/exec calls or an `sql` tagged template, assigned to a name that
    reaches one, a `<<~SQL` heredoc); UI labels, log messages and rake descriptions are
    not SQL. SQL built with f-strings, `%`, `.format`, `fmt.Sprintf` or `+` is parsed
    with a stand-in for each value. Test, spec, fixture and example folders are not
    scanned unless `scan-test-code = true`; pg_dump preambles are not hazards. A place
    run by several workloads is one finding, the workloads its related locations.

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
    - django-pglocks `django_pglocks/__init__.py`: `advisory_lock` builds
      `pg_[try_]advisory_lock[_shared]` and releases with `pg_advisory_unlock`
      (https://github.com/Xof/django-pglocks)
    - with_advisory_lock `lib/with_advisory_lock/postgresql_advisory.rb`: the `_xact`
      functions only when `transaction: true` (https://github.com/ClosureTree/with_advisory_lock)
    - golang-migrate `database/postgres/postgres.go` Lock(): `SELECT pg_advisory_lock($1)`
      unless `x-no-lock=true` (https://github.com/golang-migrate/migrate)
    """
    yield from hazard_findings(
        topology,
        code=CODE,
        name=NAME,
        severity=Severity.error,
        kinds=frozenset({"advisory-lock"}),
        consequence=CONSEQUENCE,
    )
