"""PA107 unlinked-database-client."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import Finding, Fix, RelatedLocation, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._app_pools import pods


@rule("PA107", "unlinked-database-client", Severity.warning,
      "A workload's database URL or host links to no server or pooler in the repository")
def unlinked_database_client(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports a workload whose environment names a PostgreSQL URL or host that matches no
    Service, operator service, server or pooler in the repository and no declared
    server, or a Service whose pods run no image read as PostgreSQL or PgBouncer (the
    finding names that Service and its file:line): its connections are in no budget.

    ## Why is this bad
    The server it reaches (a managed database, a server in another repository, or a
    Service name with a typo) gets connections nobody counted; the budgets printed for
    the servers that were found say nothing about it. A misspelt host also fails only
    at deploy time.

    ## Example
    ```yaml
    env:
      - name: DATABASE_URL
        value: postgres://app@orders-db.prod.internal:5432/orders   # not in the repo
    ```

    ## Use instead
    ```toml
    # .pool-advisor.toml: declare the server the host names
    [[servers]]
    name = "orders-db"
    hosts = ["orders-db.prod.internal"]
    max_connections = 400
    ```

    ## Options
    None.

    ## References
    - DESIGN.md: "a server whose max_connections is not in the repo (RDS, Cloud SQL) is
      declared in configuration".
    """
    for client in topo.clients:
        # a provider's pooler recognised by its host (advisor.link.managed) is checked
        # for session state, but its server side is still in no budget: said here too
        managed = client.target_id is not None and client.target_id.startswith("managed/")
        if (client.target_id is not None and not managed) or client.route is None \
                or client.via:
            continue  # through Pgpool-II: PA212's
        route = client.route
        host = route.host or "(no host)"
        loc = route.source.location()
        what = (client.unlinked_service or "no Service, operator service, pooler or declared "
                "server in the repository")
        count = "" if client.replicas_unknown else f"{num(pods(client))} "
        ask = "Declare the server ([[servers]] with hosts) or its Service"
        fix: Fix | None = Fix(
            description=f"declare a [[servers]] entry whose hosts include {host!r}")
        if managed:
            # it is a pooler, not "no pooler"; a [[servers]] entry with its host would take
            # it for the server (audit 55): say how its provider's server side is counted
            from advisor.facts.managed_poolers import recognise

            known = recognise(route.host, route.port)
            if known is not None:
                what = f"{known.title} ({known.brief}), a managed pooler"
                ask = known.counting[:1].upper() + known.counting[1:]
                fix = None
        yield Finding(
            code="PA107", name="unlinked-database-client", severity=Severity.warning,
            message=(f"{client.name}: connects to host {host!r} ({route.source.label()}), "
                     f"which is {what}: its {count}pods are in no budget. {ask}"),
            location=loc or client.location,
            related=(RelatedLocation(location=client.location, message="the workload"),),
            fix=fix,
            subject=f"{client.id}|unlinked")
