"""PA212 pgpool-client-oversubscribed."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import contribution_lines, num
from advisor.budget.slots import client_contributions
from advisor.model import Client, Finding, Fix, PoolerFront, Severity, Term, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import floor_clients, floor_text, related


def _front(client: Client) -> PoolerFront | None:
    return next((p.front for p in client.pools if p.front is not None), None)


@rule("PA212", "pgpool-client-oversubscribed", Severity.error,
      "More client connections are routed to Pgpool-II than its children serve")
def pgpool_client_oversubscribed(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    For each Pgpool-II, adds up the client connections routed to it at peak (pods x
    processes x pool size of every client whose host is a Service selecting its pods)
    and compares the sum with what its pods serve at once: (num_init_children -
    reserved_connections) x replicas. Like PA201 for PgBouncer, it assumes the Service
    spreads client connections evenly over the replicas.

    ## Why is this bad
    Each Pgpool-II child process serves one client connection at a time, and an
    application pool keeps its connections open. With `reserved_connections` 0 (Pgpool-II's
    default) a connection past `num_init_children` waits for a child to be free, which
    a pool that holds its connections never frees: the application's pool fails to fill
    and requests time out. With `reserved_connections` >= 1 (Bitnami's postgresql-ha
    chart sets 1) a connection past `num_init_children - reserved_connections` is
    refused at once: `Sorry, too many clients already`.

    ## Example
    ```yaml
    # pgpool: 1 replica, PGPOOL_NUM_INIT_CHILDREN 32, PGPOOL_RESERVED_CONNECTIONS 1
    # web: 4 pods x pool 10 = 40 client connections > 31
    ```

    ## Use instead
    Raise `num_init_children` to the client connections one Pgpool-II pod must serve
    (each child may then cache `max_pool` connections to every backend: keep
    `max_pool` low, 1 when clients use one user and database, and check PA101), lower
    the applications' pools, or add Pgpool-II replicas (each adds its children's
    connections to every backend too).

    ## Options
    None.

    ## References
    - Pgpool-II docs, connection-settings.sgml: num_init_children ("the concurrent
      connections limit to Pgpool-II from clients"), reserved_connections.
    - src/protocol/child.c: a child serves one frontend connection at a time.
    """
    fronts = [(c, f) for c in topo.clients if (f := _front(c)) is not None]
    if not fronts:
        return
    for pgpool, front in fronts:
        clients = [c for c in topo.clients if c.via == pgpool.id]
        if not clients:
            continue
        contributions = client_contributions(clients)
        demand = sum(c.total for c in contributions)
        per_pod = front.children.value - front.reserved.value
        capacity = max(per_pod, 0) * pgpool.replicas.value
        admits = (f"({front.children.show()} - {front.reserved.show()}) x "
                  f"{pgpool.replicas.show()} = {num(capacity)}")
        floor_of = floor_clients(clients)
        lines = [f"admits: {admits}",
                 *(line for c in contributions for line in contribution_lines(c))]
        terms: list[Term] = [front.children, front.reserved, pgpool.replicas]
        if demand <= capacity and floor_of:
            yield Finding(
                code="PA212", name="pgpool-client-oversubscribed", severity=Severity.info,
                message=f"{pgpool.name}: client connections at peak >= {num(demand)} "
                        f"({floor_text(floor_of)}) vs "
                        f"{num(capacity)} its Pgpool-II children serve: cannot tell "
                        "whether they fit",
                detail="\n".join(lines), location=_where(front, pgpool),
                related=related(terms), subject=pgpool.id)
            continue
        if demand <= capacity:
            continue
        replicas = max(pgpool.replicas.value, 1)
        needed = int(-(-demand // replicas)) + int(front.reserved.value)
        excess = ("refused: 'Sorry, too many clients already'" if front.reserved.value > 0
                  else "left waiting for a child to be free (reserved_connections 0)")
        for c in contributions:
            terms.extend(c.factors)
        yield Finding(
            code="PA212", name="pgpool-client-oversubscribed", severity=Severity.error,
            message=f"{pgpool.name}: {num(demand)} client connections at peak > "
                    f"{num(capacity)} its Pgpool-II children serve at once; the excess is "
                    f"{excess}",
            detail="\n".join([*lines, "client connections at peak: " + " + ".join(
                f"{num(c.total)} ({c.who})" for c in contributions) + f" = {num(demand)}"]),
            location=_where(front, pgpool), related=related(terms),
            fix=Fix(description=f"set num_init_children to at least {needed} per Pgpool-II "
                    "pod (keep max_pool low: each child may cache max_pool connections to "
                    "every backend; check PA101), or lower the applications' pools"),
            subject=pgpool.id)


def _where(front: PoolerFront, pgpool: Client):
    return front.children.source.location() or pgpool.location
