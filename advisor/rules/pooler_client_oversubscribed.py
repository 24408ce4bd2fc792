"""PA201 pooler-client-oversubscribed."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import contribution_lines, num
from advisor.budget.slots import behind, client_contributions, feeder_contributions
from advisor.model import Finding, Fix, Replacement, Severity, Term, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import floor_clients, floor_text, related


@rule("PA201", "pooler-client-oversubscribed", Severity.error,
      "More clients are routed to a PgBouncer than its max_client_conn admits")
def pooler_client_oversubscribed(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    For each PgBouncer, adds up the client connections routed to it at peak (pods x
    processes x pool size of every client whose host resolves to the pooler's Service)
    and compares the sum with `max_client_conn` x PgBouncer replicas. It assumes the
    Service spreads client connections evenly over the replicas (kube-proxy picks a pod
    per connection); an uneven spread fills one replica sooner.

    ## Why is this bad
    Each PgBouncer process accepts at most `max_client_conn` client connections
    (default 100); the next one is refused with `no more connections allowed
    (max_client_conn)`. Application pools then fail to fill and requests time out.

    ## Example
    ```ini
    [pgbouncer]
    max_client_conn = 100   ; 40 pods x 20 = 800 clients on 2 replicas: 400 each
    ```

    ## Use instead
    ```ini
    [pgbouncer]
    max_client_conn = 1000
    ```
    Client connections to PgBouncer are cheap (about 2 kB each); raise `max_client_conn`
    (and the file-descriptor limit), or run more replicas.

    ## Options
    None.

    ## References
    - PgBouncer docs, configuration: max_client_conn (default 100).
    """
    bouncers = [p for p in topo.poolers if p.kind == "pgbouncer"]  # RDS Proxy has no limit
    if not bouncers:
        return
    from advisor.facts.pgbouncer import bouncer_default

    for pooler in bouncers:
        clients = behind(pooler, topo)
        # a PgBouncer in front of this one: its server connections are clients here
        feeders = feeder_contributions(pooler, topo)
        if not clients and not feeders:
            continue
        contributions = client_contributions(clients) + feeders
        demand = sum(c.total for c in contributions)
        setting = pooler.settings.get("max_client_conn") or bouncer_default(
            "max_client_conn", pooler.version)
        limit = Term(label="max_client_conn", value=float(setting.value), source=setting.source)
        capacity = limit.value * pooler.replicas.value
        floor_of = floor_clients(clients)
        if demand <= capacity and floor_of:
            # a sum of floors that fits says nothing: said, not passed over in silence
            # (Airflow's chart with pgbouncer.enabled: six clients of unknown size, and
            # max_client_conn 100 appeared nowhere in the output)
            yield Finding(
                code="PA201", name="pooler-client-oversubscribed", severity=Severity.info,
                message=f"{pooler.name}: client connections at peak >= {num(demand)} "
                        f"({floor_text(floor_of)}) vs "
                        f"{num(capacity)} max_client_conn x replicas: cannot tell whether "
                        "they fit",
                detail="\n".join([
                    f"capacity: {limit.show()} x {pooler.replicas.show()} = {num(capacity)}",
                    *(line for c in contributions for line in contribution_lines(c))]),
                location=limit.source.location() or pooler.location,
                related=related([limit, pooler.replicas]), subject=pooler.id)
            continue
        if demand <= capacity:
            continue
        per_replica = demand / max(pooler.replicas.value, 1)
        message = (f"{pooler.name}: {num(demand)} client connections at peak > "
                   f"{num(capacity)} max_client_conn x replicas "
                   f"({per_replica:.0f} per replica, if clients spread evenly)")
        detail = "\n".join([
            f"capacity: {limit.show()} x {pooler.replicas.show()} = {num(capacity)}",
            *(line for c in contributions for line in contribution_lines(c)),
            "client connections at peak: "
            + " + ".join(f"{num(c.total)} ({c.who})" for c in contributions)
            + f" = {num(demand)}"])
        needed = int(-(-per_replica // 1))
        replacement = None
        loc = limit.source.location()
        if loc is not None and loc.line is not None:
            replacement = Replacement(path=loc.path, line=loc.line, key="max_client_conn",
                                      old=str(setting.raw), new=str(needed))
        terms = [limit, pooler.replicas]
        for c in contributions:
            terms.extend(c.factors)
        yield Finding(
            code="PA201", name="pooler-client-oversubscribed", severity=Severity.error,
            message=message, detail=detail, location=loc or pooler.location,
            related=related(terms),
            fix=Fix(description=f"set max_client_conn to at least {needed} per replica "
                    "(and raise the open-files limit to match), or add replicas",
                    replacement=replacement),
            subject=pooler.id)
