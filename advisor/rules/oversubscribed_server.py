"""PA101 oversubscribed-server."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import derivation, num
from advisor.model import Client, Finding, Fix, Location, Severity, Topology, peak_pods
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import related


@rule("PA101", "oversubscribed-server", Severity.error,
      "Peak client connections exceed the server's usable connection slots")
def oversubscribed_server(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Adds up, for every PostgreSQL server, the connections that can be open at peak:
    for each client workload, pods at peak (HPA/KEDA maximum, or replicas, plus the
    rolling-update surge) x processes per pod x pool size per process; for each
    PgBouncer in front of the server, the server connections it may open. A Helm
    chart's hook Jobs and Pods count as Helm runs them: one at a time, pre-upgrade ones
    beside the release's pods before the rollout (without the surge), post-upgrade ones
    during it (`Helm hooks [chart]` in the budget). It compares
    the sum with the slots a non-superuser can take:
    `max_connections - superuser_reserved_connections - reserved_connections (16+) - headroom`,
    and on a Patroni-managed server (Zalando/Spilo, PGO, Percona) the 2 slots Patroni's own
    superuser sessions hold. Before PostgreSQL 12 max_wal_senders comes off too (a WAL
    sender then takes an ordinary slot while its standby streams); a server that nothing
    in the repository connects to (peak 0) is not over even when that leaves usable at 0
    or below: the budget says how many standbys leave no slot for non-superusers.

    ## Why is this bad
    When the autoscaler reaches its maximum, the connection that does not fit is refused
    at startup with `FATAL: remaining connection slots are reserved for non-replication
    superuser connections` (PostgreSQL 15; 16+ words it `... reserved for roles with
    the SUPERUSER attribute`) or `FATAL: sorry, too many clients already`. Pods crash-loop
    exactly when load is highest. Autovacuum workers, WAL senders (since PostgreSQL 12)
    and background workers have slots of their own and do not reduce the budget.

    ## Example
    ```yaml
    # HPA maxReplicas: 40; HikariCP maximumPoolSize: 20; max_connections = 100
    # 40 x 20 = 800 > 97 usable
    ```

    ## Use instead
    Put a transaction-mode PgBouncer between the pods and the server, lower the pool
    size per pod so that pods x pool fits, or raise max_connections (and check memory,
    PA301).

    ## Options
    None. Declare headroom for psql, monitoring and migrations with `headroom` in the
    configuration (globally or per declared server).

    ## References
    - PostgreSQL 15 docs, 20.3.1 Connection Settings: max_connections,
      superuser_reserved_connections; PostgreSQL 16: reserved_connections.
    - src/backend/utils/init/postinit.c (InitPostgres: the reserved-slot checks).
    """
    clients: dict[str, Client] = {}  # by name, the first of a name: once, not per budget
    placed: dict[tuple[str, Location], Client] = {}  # by name and object: a Rollout and
    # the Deployment its workloadRef names share a name
    for client in topo.clients:
        clients.setdefault(client.name, client)
        placed.setdefault((client.name, client.location), client)
    for budget in ctx.budgets:
        server = topo.server(budget.server_id)
        if server is None or not budget.over:  # over, or a server that does not start
            continue
        over = budget.peak - budget.usable
        shares = _over_share(clients, budget, placed)
        # A floor already past usable is over whatever the unknown clients add.
        least = "at least " if budget.peak_is_floor else ""
        message = (f"{budget.server}: peak {least}{num(budget.peak)} connections > "
                   f"{num(budget.usable)} usable, over by {least}{num(over)}")
        detail = "\n".join([*derivation(budget), *shares])
        terms = [budget.max_connections, *budget.reserved]
        for c in budget.contributions:
            terms.extend(c.factors)
            for p in c.parts:
                terms.extend(p.factors)
        location = budget.max_connections.source.location() or budget.location
        fix = Fix(description=_advice(budget, clients))
        yield Finding(code="PA101", name="oversubscribed-server", severity=Severity.error,
                      message=message, detail=detail, location=location,
                      related=related(terms), fix=fix,
                      subject=server.id)


def _over_share(clients: dict[str, Client], budget,
                placed: dict[tuple[str, Location], Client] | None = None) -> list[str]:
    """Name each pool that exceeds its share of the usable slots (its share kept
    proportional to what it asks for now). `clients`: the first client of each name;
    `placed`: the client of each name and object, asked first."""
    import math

    # A release's hooks are kept whole, as advise keeps them (allocation.fit_slots): what
    # they add grows as the pools shrink (a pre-upgrade Job beside a smaller surge), up to
    # their largest, so that much is kept out of the usable slots and the rest shared.
    hooks = [c for c in budget.contributions if c.kind == "hooks"]
    room: float = 0  # as sum() of none was: an int
    if hooks:  # the hooks module is not imported when no client is a hook (as slots.py)
        from advisor.budget.hooks import hook_room

        room = sum(hook_room(c) for c in hooks)
    shared = budget.usable - room
    asking = budget.peak - sum(c.total for c in hooks)
    kept = (f" ({num(room)} kept for the largest hook of "
            + " and ".join(c.who for c in hooks) + ")") if room else ""
    out = []
    for c in budget.contributions:
        client = (placed or {}).get((c.who, c.location)) or clients.get(c.who)
        if client is None or c.kind != "client" or not client.pools:
            continue
        asked = sum(p.per_pod() for p in client.pools)
        if not asked:
            continue  # a client known to hold none (Dify's celery beat): nothing to shrink
        pods = peak_pods(client.replicas, client.surge)
        if not pods:
            continue  # no pod at peak (a Deployment a Rollout runs, scaled to 0): no pool
        share = max(shared, 0) * c.total / asking if asking > 0 else 0.0
        per_pod = math.floor(share / pods) if pods else 0
        for pool in client.pools:
            processes = pool.processes.value if pool.processes else 1
            allowed = math.floor(per_pod * pool.per_pod() / asked / processes)
            if allowed < 1 and pool.per_pod() == 1 and len(client.pools) > 1:
                continue  # one connection beside a larger pool (Pgpool-II's health check):
                # the larger pool's line says what to shrink
            if allowed < 1 and per_pod >= processes:
                # its part of the share is under one, not the share: a pool of 50 beside
                # one of 2 in 17 slots said the share, 17, was less than one per process
                allowed = 1
            if allowed < 1:
                # no pool is smaller than one connection: "allows 0 per process" was
                # advice nobody can take (audit K, Airflow's create-user Job)
                out.append(f"{client.name}'s share, {share:.0f} of {num(budget.usable)} "
                           f"usable over {num(pods)} pods, is less than one connection "
                           f"per process: no smaller {pool.label} fits it (fewer pods, "
                           "or a pooler in front)")
            elif pool.size.value > allowed:
                out.append(f"{client.name}'s {pool.label} of {num(pool.size.value)} "
                           f"({pool.size.source.label()}) exceeds its share: "
                           f"{share:.0f} of {num(budget.usable)} usable{kept} "
                           f"over {num(pods)} pods allows {allowed} per process")
    return out


def _advice(budget, by_name: dict[str, Client]) -> str:
    # the largest term is what to act on: a PgBouncer under an HPA making 260 of 261 is
    # named, not the 1-connection Job beside it (audit 6b D10c, PostHog); hooks are kept
    # whole (as _over_share keeps them), so they are never the one named
    terms = [c for c in budget.contributions if c.kind in ("client", "pooler")]
    clients = [c for c in terms if c.kind == "client"]
    biggest = max(terms, key=lambda c: c.total) if clients else None
    if biggest is not None and biggest.kind == "pooler":
        return (f"lower {biggest.who}'s server side so the total fits in "
                f"{num(budget.usable)}: fewer pods at peak, or default_pool_size/"
                "reserve_pool_size or max_db_connections for PgBouncer, "
                "MaxConnectionsPercent for an RDS Proxy; or raise max_connections (check "
                "memory: PA301); `pool-advisor advise` computes them")
    if biggest is not None:
        found = by_name.get(biggest.who)
        if found is not None and any(p.front is not None for p in found.pools):
            # a pooler already: its children and their caches are what to size
            return (f"lower {biggest.who}'s num_init_children x max_pool so that its pods "
                    f"x num_init_children x max_pool fit in {num(budget.usable)} (Pgpool-II "
                    "caches one connection per user, database and parameters a child "
                    "serves: max_pool 1 is enough for one pair), or raise max_connections "
                    "(check memory: PA301)")
        return (f"route {biggest.who} through a transaction-mode PgBouncer, or lower its "
                f"pool size so the sum fits in {num(budget.usable)}, or raise "
                "max_connections (check memory: PA301); `pool-advisor advise` computes sizes")
    return (f"lower the poolers' share so their total fits in {num(budget.usable)}: "
            "default_pool_size/reserve_pool_size or max_db_connections for PgBouncer, "
            "MaxConnectionsPercent for an RDS Proxy; `pool-advisor advise` computes them")
