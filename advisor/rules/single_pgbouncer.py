"""PA210 single-pgbouncer: one PgBouncer process carries every client."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.budget.slots import behind, client_contributions
from advisor.model import Finding, Fix, Replacement, Severity, Topology
from advisor.options import OPTIONS_CONFIG, at_least, options_class
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import related


@options_class
class SingleBouncerOptions:
    __pydantic_config__ = OPTIONS_CONFIG

    # Client connections one PgBouncer process may carry before it is reported even
    # when a single workload uses it (one process was measured capped near 800 clients
    # at 10,943 tps).
    max_clients: int = 500

    def __post_init__(self) -> None:
        at_least(self, "max_clients", 1)


@rule("PA210", "single-pgbouncer", Severity.warning,
      "A single PgBouncer process serves several workloads or many clients",
      options=SingleBouncerOptions)
def single_pgbouncer(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds PgBouncers that run as one process (one replica, and `so_reuseport` off)
    while serving more than one workload, or more client connections at peak than
    `max_clients`.

    ## Why is this bad
    PgBouncer is single-threaded: one process uses one core, however many the pod
    has. Flat out, one instance was measured capped at 800 clients and 10,943 tps; past
    that, every client's latency grows in PgBouncer's queue. One replica is also a
    single point of failure: while it restarts (a node drain, a config rollout, an OOM
    kill) every workload behind it loses its database at once.

    ## Example
    ```yaml
    kind: Deployment
    metadata:
      name: pgbouncer
    spec:
      replicas: 1     # checkout and billing both connect here
    ```

    ## Use instead
    ```yaml
    spec:
      replicas: 2     # behind one Service; each replica's pools count against the server
    ```
    or run several processes per pod with `so_reuseport = 1` (PgBouncer 1.12+). Either
    way the server-side connections multiply: check PA105 after the change.

    ## Options
    - `max_clients` (default 500): client connections one process may carry before it
      is reported even with a single workload.

    ## References
    - PgBouncer docs, configuration: so_reuseport ("allows running multiple PgBouncer
      instances on the same host ... to make use of multiple CPU cores").
    - PgBouncer FAQ: PgBouncer is single-threaded.
    """
    options = ctx.options_for("PA210", SingleBouncerOptions)
    for pooler in topo.poolers:
        if pooler.kind != "pgbouncer" or pooler.replicas.value != 1:
            continue
        from advisor.facts.pgbouncer import effective_setting  # only with a PgBouncer to look at

        reuse = effective_setting(pooler.settings, "so_reuseport", pooler.version)
        if str(reuse.value).strip().lower() in ("1", "true", "yes", "on"):
            continue
        clients = behind(pooler, topo)
        demand = sum(c.total for c in client_contributions(clients))
        if len(clients) < 2 and demand <= options.max_clients:
            continue
        why = (f"{len(clients)} workloads ({', '.join(c.name for c in clients)})"
               if len(clients) >= 2 else "one workload")
        # a workload of unknown size carries some: the sum of the others is a floor
        unknown = sum(1 for c in clients if c.unknown)
        at_peak = f">= {num(demand)} ({unknown} of the workloads of unknown size)" \
            if unknown else num(demand)
        loc = pooler.replicas.source.location()
        replacement = None
        if loc is not None and loc.line is not None and pooler.replicas.source.path:
            replacement = Replacement(path=loc.path, line=loc.line, key="replicas",
                                      old="1", new="2")
        yield Finding(
            code="PA210", name="single-pgbouncer", severity=Severity.warning,
            message=(f"{pooler.name}: one PgBouncer process ({pooler.replicas.show()}, "
                     f"so_reuseport {reuse.value} ({reuse.source.label()})) carries {why}, "
                     f"{at_peak} client connections at peak: PgBouncer uses one core "
                     "(one instance was measured capped at 800 clients, 10,943 tps), and "
                     "its restart takes every one of them offline"),
            location=loc or pooler.location, related=related([pooler.replicas]),
            fix=Fix(description="run 2 or more replicas behind the Service (or several "
                    "processes with so_reuseport = 1), then re-check the server budget: "
                    "each replica opens its own server connections",
                    replacement=replacement),
            subject=pooler.id)
