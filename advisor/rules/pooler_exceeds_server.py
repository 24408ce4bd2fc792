"""PA105 pooler-exceeds-server."""

from __future__ import annotations

import math
from collections.abc import Iterator

from advisor.budget.arith import contribution_lines, num, usable_expr
from advisor.model import Budget, Finding, Fix, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import related


@rule("PA105", "pooler-exceeds-server", Severity.error,
      "One PgBouncer alone may open more server connections than the server admits")
def pooler_exceeds_server(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Computes the server connections one PgBouncer deployment may open: replicas x the
    sum over its (database, user) pools of `pool_size + reserve_pool_size`, each pool's
    size taken from the [users] entry, else the [databases] entry, else
    `default_pool_size`, capped per database entry by `max_db_connections` and per user
    by `max_user_connections`. PgBouncer opens a server connection only for a client
    waiting for one, so when every client of the pooler is in the repository and known
    (and the pooler is not reachable from outside the cluster) the total is at most what
    they ask for: per process and pool, the larger of their connections and
    `min_pool_size` (the janitor opens connections only while the pool holds fewer than
    `min_pool_size` and `pool_size`: never the sum of the two), within the pool's
    maximum; an auth_query pool at most the logins at once. From
    PgBouncer 1.24 `pool_size = 0` is no limit of the pool's own: only
    `max_db_connections`, `max_user_connections` or its clients bound it. It reports a
    pooler whose own total exceeds the usable slots of the server it points at (PA101
    reports the sum over every client).
    A declared RDS Proxy may open min(its clients' connections, floor(max_connections
    x MaxConnectionsPercent / 100)): AWS takes the percentage of max_connections
    without leaving out the reserved slots.

    ## Why is this bad
    A pooler sized beyond the server moves the failure from the application to
    PgBouncer: under load it opens server connections until PostgreSQL refuses them
    (`remaining connection slots are reserved...`), and clients wait until
    `query_wait_timeout` (120 s) then fail.

    ## Example
    ```ini
    [pgbouncer]
    pool_mode = transaction
    default_pool_size = 50   ; 3 replicas x 50 = 150 > 97 usable
    ```

    ## Use instead
    ```ini
    [pgbouncer]
    pool_mode = transaction
    default_pool_size = 30
    max_db_connections = 30  ; 3 replicas x 30 = 90 <= 97
    ```

    ## Options
    None.

    ## References
    - PgBouncer docs, configuration: default_pool_size, reserve_pool_size,
      min_pool_size, max_db_connections, max_user_connections.
    - PgBouncer source: src/janitor.c per_loop_activate and check_pool_size,
      src/objects.c launch_new_connection (pool_size 0 no limit from 1.24, #1227).
    """
    for budget in ctx.budgets:
        # standbys behind one Service share a read-only pooler's connections (the
        # budget's spread): each instance sees its share, as PA101 counts it
        spread = budget.spread_over.value if budget.spread_over is not None else 1
        for c in budget.contributions:
            share = math.ceil(c.total / spread)
            if c.kind != "pooler" or share <= budget.usable:
                continue
            terms = list(c.factors) + [t for p in c.parts for t in p.factors]
            each = (f" ({num(share)} on each of {num(spread)} instances)" if spread > 1
                    else "")
            yield Finding(
                code="PA105", name="pooler-exceeds-server", severity=Severity.error,
                # a pooler whose pairs are not all known counts a floor (budget.pairs)
                message=(f"{c.who}: {'at least ' if c.unknown else ''}{num(c.total)} "
                         f"server connections{each} > "
                         f"{num(budget.usable)} usable on {budget.server}"),
                detail="\n".join([*contribution_lines(c), f"usable: {usable_expr(budget)}"]),
                location=next((t.source.location() for t in terms if t.source.location()),
                              c.location),
                related=related([*terms, budget.max_connections]),
                fix=Fix(description=_fix(topo, c.who, budget)),
                subject=f"{budget.server_id}|{c.who}")


def _fix(topo: Topology, who: str, budget: Budget) -> str:
    pooler = next((p for p in topo.poolers if p.name == who), None)
    if pooler is not None and pooler.kind == "rds-proxy":
        percent = math.floor(budget.usable * 100 / max(budget.max_connections.value, 1))
        return (f"set the RDS Proxy's MaxConnectionsPercent to at most {percent} "
                f"(floor({num(budget.usable)} usable x 100 / {num(budget.max_connections.value)}"
                " max_connections)): AWS takes the percentage of max_connections without "
                "leaving the reserved slots out")
    return (f"cap the pooler at {num(budget.usable)} server connections in total: "
            "max_db_connections per database entry, divided by the replicas")
