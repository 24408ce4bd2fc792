"""PA401 session-set-in-transaction-pool (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._transaction_mode import hazard_findings

CODE = "PA401"
NAME = "session-set-in-transaction-pool"
CONSEQUENCE = (
    "the setting stays on the server connection and applies to whichever client gets "
    "it next, while this client's next transaction may run without it"
)


@rule(
    CODE,
    NAME,
    Severity.error,
    "Session-level SET/set_config(..., false) behind a transaction pooler",
)
def session_set_in_transaction_pool(topology: Topology, context: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds session-level `SET` and `set_config(name, value, false)` (in SQL files,
    code string literals and HikariCP `connectionInitSql`) whose client reaches PostgreSQL
    through a PgBouncer pool in transaction or statement mode, and strong_migrations'
    `StrongMigrations.lock_timeout` / `statement_timeout` (every migration runs `SET`).
    `RESET name`, `RESET ALL` and `SET name TO DEFAULT` are not reported: they put the
    value back to the one a fresh session has, which is what the next client expects.

    Where the SQL is: `.sql` files and migrations, and code strings used as SQL (passed
    to execute/query/raw/exec calls or an `sql` tagged template, assigned to a name that
    reaches one, a `<<~SQL` heredoc); UI labels, log messages and rake descriptions are
    not SQL. SQL built with f-strings, `%`, `.format`, `fmt.Sprintf` or `+` is parsed
    with a stand-in for each value. Test, spec, fixture and example folders are not
    scanned unless `scan-test-code = true`; pg_dump preambles are not hazards. A place
    run by several workloads is one finding, the workloads its related locations.

    ## Why is this bad
    In transaction mode a server connection belongs to a client only for one
    transaction. A session-level `SET` outlives that transaction: the next client handed
    the same server connection inherits it (`SET work_mem = '2GB'` for a report becomes
    everyone's), and this client's next transaction may land on a server connection that
    never saw it. Proven against PgBouncer 1.18 in tests/test_sql_realbouncer.py.

    ## Example
    ```sql
    SET statement_timeout = '30s';
    SELECT set_config('search_path', 'tenant_42', false);
    ```

    ## Use instead
    ```sql
    BEGIN;
    SET LOCAL statement_timeout = '30s';
    SELECT set_config('search_path', 'tenant_42', true);
    -- ...
    COMMIT;
    -- or once, for everyone: ALTER ROLE app SET statement_timeout = '30s';
    ```

    ## Options
    None.

    ## References
    - PgBouncer feature map: https://www.pgbouncer.org/features.html
    - PostgreSQL SET: https://www.postgresql.org/docs/15/sql-set.html
    """
    yield from hazard_findings(
        topology,
        code=CODE,
        name=NAME,
        severity=Severity.error,
        kinds=frozenset({"session-set"}),
        consequence=CONSEQUENCE,
    )
