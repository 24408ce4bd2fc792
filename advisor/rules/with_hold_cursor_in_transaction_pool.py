"""PA407 with-hold-cursor-in-transaction-pool (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._transaction_mode import hazard_findings

CODE = "PA407"
NAME = "with-hold-cursor-in-transaction-pool"
CONSEQUENCE = (
    "the cursor stays on a server connection the client loses at COMMIT: the next "
    "FETCH fails with `cursor ... does not exist` or reads another client's cursor"
)


@rule(
    CODE,
    NAME,
    Severity.error,
    "WITH HOLD cursors (and Django server-side cursors) behind a transaction pooler",
)
def with_hold_cursor_in_transaction_pool(
    topology: Topology, context: RuleContext
) -> Iterator[Finding]:
    """## What it does
    Finds `DECLARE ... WITH HOLD` and Django `DATABASES` entries for PostgreSQL without
    `DISABLE_SERVER_SIDE_CURSORS = True` (Django declares `WITH HOLD` cursors for
    `QuerySet.iterator()` in autocommit) behind a transaction- or statement-mode pool.
    DATABASES is read however it is built: a dict literal, `dj_database_url.config()`,
    django-environ `env.db()`, a name or `getattr()` from a configuration module (the
    engine then from the file's postgresql backend or postgres URL). It is reported only
    when the repository calls `.iterator(` somewhere: Django declares server-side cursors
    for nothing else.

    Where the SQL is: `.sql` files and migrations, and code strings used as SQL (passed
    to execute/query/raw/exec calls or an `sql` tagged template, assigned to a name that
    reaches one, a `<<~SQL` heredoc); UI labels, log messages and rake descriptions are
    not SQL. SQL built with f-strings, `%`, `.format`, `fmt.Sprintf` or `+` is parsed
    with a stand-in for each value. Test, spec, fixture and example folders are not
    scanned unless `scan-test-code = true`; pg_dump preambles are not hazards. A place
    run by several workloads is one finding, the workloads its related locations.

    ## Why is this bad
    A holdable cursor survives `COMMIT` by staying in the server session. Behind a
    transaction pooler the client's next `FETCH` is sent to whichever server connection
    is free.

    ## Example
    ```sql
    DECLARE big CURSOR WITH HOLD FOR SELECT * FROM events;
    FETCH 100 FROM big;
    ```

    ## Use instead
    ```sql
    BEGIN;
    DECLARE big CURSOR FOR SELECT * FROM events;
    FETCH 100 FROM big;
    COMMIT;
    -- Django: DATABASES['default']['DISABLE_SERVER_SIDE_CURSORS'] = True
    ```

    ## Options
    None.

    ## References
    - Django databases, transaction pooling and server-side cursors: https://docs.djangoproject.com/en/5.1/ref/databases/#transaction-pooling-server-side-cursors
    - PostgreSQL DECLARE: https://www.postgresql.org/docs/15/sql-declare.html
    """
    yield from hazard_findings(
        topology,
        code=CODE,
        name=NAME,
        severity=Severity.error,
        kinds=frozenset({"with-hold-cursor"}),
        consequence=CONSEQUENCE,
    )
