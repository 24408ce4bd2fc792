"""PA402 listen-in-transaction-pool (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._transaction_mode import hazard_findings

CODE = "PA402"
NAME = "listen-in-transaction-pool"
CONSEQUENCE = (
    "the LISTEN registers on a server connection the client no longer holds after the"
    " transaction, so its notifications are lost"
)


@rule(CODE, NAME, Severity.error, "LISTEN/UNLISTEN behind a transaction pooler")
def listen_in_transaction_pool(topology: Topology, context: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds `LISTEN` and `UNLISTEN` (also built by concatenation, `LISTEN "` + channel +
    `"`), Elixir `Postgrex.Notifications.listen` and Oban's default notifier
    (`config :app, Oban, repo: ...` with no `notifier: Oban.Notifiers.PG` in a config
    the release runs) whose client goes through a transaction- or statement-mode
    PgBouncer pool.

    Where the SQL is: `.sql` files and migrations, and code strings used as SQL (passed
    to execute/query/raw/exec calls or an `sql` tagged template, assigned to a name that
    reaches one, a `<<~SQL` heredoc); UI labels, log messages and rake descriptions are
    not SQL. SQL built with f-strings, `%`, `.format`, `fmt.Sprintf` or `+` is parsed
    with a stand-in for each value. Test, spec, fixture and example folders are not
    scanned unless `scan-test-code = true`; pg_dump preambles are not hazards. A place
    run by several workloads is one finding, the workloads its related locations.

    ## Why is this bad
    Notifications are delivered to the server session that ran `LISTEN`. Behind a
    transaction pooler that session is handed back to the pool when the statement ends;
    the listening client is not attached to it when a `NOTIFY` arrives, and never sees it.

    ## Example
    ```sql
    LISTEN order_events;
    ```

    ## Use instead
    ```sql
    -- listen on a direct connection (or a session-mode pool);
    -- NOTIFY itself works through a transaction pooler:
    NOTIFY order_events, 'created';
    ```

    ## Options
    None.

    ## References
    - PgBouncer feature map: https://www.pgbouncer.org/features.html
    - PostgreSQL LISTEN: https://www.postgresql.org/docs/15/sql-listen.html
    - Oban, No Notifications with PgBouncer:
      https://hexdocs.pm/oban/troubleshooting.html#no-notifications-with-pgbouncer
    """
    yield from hazard_findings(
        topology,
        code=CODE,
        name=NAME,
        severity=Severity.error,
        kinds=frozenset({"listen"}),
        consequence=CONSEQUENCE,
    )
