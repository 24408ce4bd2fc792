"""PA108 undecided-budget."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import derivation, num, unknown_clients_text
from advisor.model import Budget, Finding, Fix, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule


@rule("PA108", "undecided-budget", Severity.warning,
      "A server's budget cannot be decided: workloads whose server is not known, or clients "
      "outside the cluster, may connect to it")
def undecided_budget(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports a server whose verdict is "cannot tell" for a reason no other finding
    carries: a workload of the run connects to a database whose server the repository
    does not say (its URL or host is fetched by an ExternalSecret or encrypted with SOPS,
    it opens a pool but names no host, it runs a program built here whose source was not
    found while nothing is linked to this server), or a Service exposes the server (or a
    pooler in front of it) outside the cluster. Each of those may connect here, so the
    peak printed is a floor: the server is neither reported as fitting nor as over.

    A floor that is already past the usable slots is PA101's (over whatever the rest
    adds). A floor made by a client whose connections are unknown (PA106), a pool with
    no limit (PA102) or a file not read (PA901) is reported by those rules, not again
    here.

    ## Why is this bad
    Without it, a run whose only doubt is where some workloads connect printed "cannot
    tell" and exited 0: a CI gate or a pre-commit hook passed a deployment whose hand
    count is over (a .NET API whose connection string is in settings the image holds, 2
    pods x 100 against 97 usable). What pool-advisor could not read must not pass as a
    fit.

    ## Example
    ```yaml
    # api: DATABASE_URL from an ExternalSecret; postgres: max_connections 100
    # postgres: peak >= 20 (1 client whose server is not known, which may connect here: api)
    ```

    ## Use instead
    Say where the workload connects and how much, so the budget is a sum:
    ```toml
    [[workloads]]
    name = "api"
    target = "postgres"
    connections = 10   # per pod, when its pools are not read either
    ```
    For a server exposed outside the cluster, declare the connections its outside
    clients take: `headroom = 20` (globally or per declared server).

    ## Options
    None. Ignore it (`--ignore PA108`, or `pool-advisor.io/ignore: PA108` on the server)
    to let such a run pass.

    ## References
    - Audit 45 (AtomiCloud/sulfone.zinc): a .NET API named "may connect here", its
      server "cannot tell" where the hand count is 200 > 97, and the run exited 0.
    """
    for budget in ctx.budgets:
        if not _undecided(budget):
            continue
        reasons = unknown_clients_text(budget)
        yield Finding(
            code="PA108", name="undecided-budget", severity=Severity.warning,
            message=(f"{budget.server}: cannot tell whether it fits: peak >= "
                     f"{num(budget.peak)} of {num(budget.usable)} usable; {reasons}"),
            detail="\n".join(derivation(budget)), location=budget.location,
            fix=Fix(description=_advice(budget)), subject=budget.server_id)


def _undecided(budget: Budget) -> bool:
    """A floor that is not past usable, made so by what only a notice said: clients whose
    server is not known, or a Service exposing the server outside the cluster."""
    return budget.peak_is_floor and not budget.over and budget.refused is None \
        and not budget.no_room_once_streaming \
        and bool(budget.unplaced_clients or budget.exposed)


def _advice(budget: Budget) -> str:
    parts = []
    if budget.unplaced_clients:
        parts.append("declare where each of " + ", ".join(budget.unplaced_clients)
                     + " connects ([[workloads]] name, target, and connections when its "
                     "pools are not read)")
    if budget.exposed:
        parts.append("declare the connections clients outside the cluster take "
                     "(headroom = N)")
    return "; ".join(parts)
