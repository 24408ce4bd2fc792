"""PA102 unbounded-client-pool."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import Finding, Fix, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._app_pools import (
    location_of,
    pods,
    pools_with,
    processes,
    related_of,
    subject,
)


@rule("PA102", "unbounded-client-pool", Severity.error,
      "An application pool has no upper limit on connections")
def unbounded_client_pool(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports application pools with no maximum: Go `database/sql` (also sqlx, GORM)
    without `db.SetMaxOpenConns(n)` (or with n <= 0), SQLAlchemy `NullPool` or
    `max_overflow=-1`, psycopg_pool `NullConnectionPool` without `max_size`.

    ## Why is this bad
    Such a pool opens one more connection whenever every open one is busy, so each pod
    can take as many connections as it has concurrent requests. The connection budget of
    the server cannot be computed, and a traffic spike or a slow query turns into
    `FATAL: sorry, too many clients already` for every workload on that server. Behind
    PgBouncer the server side is capped, but the pooler's `max_client_conn` is not
    (reported as a warning then). A workload that names no database host at all is
    reported as info: it may not connect to PostgreSQL.

    ## Example
    ```go
    db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
    // no db.SetMaxOpenConns: database/sql's default 0 means unlimited
    ```

    ## Use instead
    ```go
    db.SetMaxOpenConns(10)  // pods x 10 must fit the server's usable slots
    db.SetMaxIdleConns(10)
    ```

    ## Options
    None.

    ## References
    - Go standard library, database/sql `DB.SetMaxOpenConns`: "If n <= 0, then there is
      no limit on the number of open connections. The default is 0 (unlimited)."
    - SQLAlchemy 2.x docs, "Connection Pooling": NullPool, QueuePool max_overflow=-1.
    """
    budgets = {b.server_id: b for b in ctx.budgets}
    for client, pool in pools_with(topo, "unbounded"):
        behind_pooler = client.target_kind == "pooler"
        n_pods = pods(client)
        advice = "set an explicit maximum"
        budget = budgets.get(client.target_id or "") if client.target_kind == "server" else None
        if budget is not None and n_pods:
            share = int(budget.usable // (n_pods * processes(pool))) if budget.usable > 0 else 0
            advice = (f"set a maximum of at most {share} per process "
                      f"({num(budget.usable)} usable on {budget.server} / "
                      f"{num(n_pods)} pods x {num(processes(pool))} processes), "
                      "less what other clients need")
        why = pool.note or "no upper limit"
        # A workload that names no database host may not reach PostgreSQL at all (the
        # code read is shared, or its database is another engine's): said, not an error
        # (opentelemetry-demo: 17 errors from one Go service's code).
        hostless = client.target_id is None and client.route is None
        message = (f"{client.name}: {pool.label} is unbounded ({why}); {num(n_pods)} pods "
                   "may each open as many connections as they have concurrent requests"
                   + ("; the pooler caps the server side, not max_client_conn"
                      if behind_pooler else "")
                   + ("; it names no database host, so no budget holds it" if hostless
                      else ""))
        severity = Severity.info if hostless else (
            Severity.warning if behind_pooler else Severity.error)
        yield Finding(code="PA102", name="unbounded-client-pool",
                      severity=severity,
                      message=message, location=location_of(client, pool),
                      related=related_of(client, pool), fix=Fix(description=advice),
                      subject=subject(client, pool))
