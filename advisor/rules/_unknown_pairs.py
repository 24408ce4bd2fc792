"""PA106's finding for a pooler whose clients' (database, user) pairs are unknown: the
budget counts a floor (advisor.budget.pairs), and this says what the worst case is."""

from __future__ import annotations

import math
from collections.abc import Iterator

from msgspec.structs import replace

from advisor.budget.arith import contribution_lines, formula, num
from advisor.budget.pairs import worst_case
from advisor.budget.slots import pooler_contribution
from advisor.model import Budget, Contribution, Finding, Fix, Pooler, Severity, Topology


def _pools(c: Contribution) -> list[Contribution]:
    """The client pools of a pooler's contribution (auth_query pools left out)."""
    return [p for d in c.parts for p in d.parts if "auth_query lookups" not in p.note]


def _counted(floor: Contribution) -> str:
    pools = _pools(floor)
    if not pools:
        return "as no pool"
    names = ", ".join(p.who for p in pools)
    return f"as {'one pool' if len(pools) == 1 else f'{len(pools)} pools'} ({names})"


def _per_process(c: Contribution) -> str:
    """`3 PgBouncer processes x 100`: the contribution's pods and its per-process sum."""
    *pods, per = c.factors
    return f"{num(sum(t.value for t in pods))} PgBouncer processes x {num(per.value)}"


def _verdict(budget: Budget, floor: Contribution, worst: Contribution) -> str:
    """The server's peak with this pooler's worst case, against usable."""
    total = budget.total_peak if budget.total_peak is not None else budget.peak
    peak = total - floor.total + worst.total
    if budget.spread_over is not None:
        peak = math.ceil(peak / budget.spread_over.value)
    more = " at least" if len(budget.unknown_pairs) > 1 or budget.unknown_clients \
        or budget.unbounded_clients else ""
    if peak > budget.usable:
        return (f"{budget.server}'s peak would be{more} {num(peak)} > {num(budget.usable)} "
                f"usable, OVER by{more} {num(peak - budget.usable)}")
    return f"{budget.server}'s peak would be{more} {num(peak)} <= {num(budget.usable)} usable"


def pairs_finding(pooler: Pooler, budget: Budget) -> Finding | None:
    worst = worst_case(pooler, pooler_contribution)
    if worst is None:
        return None
    floor = pooler_contribution(pooler)
    n = len(pooler.unnamed_pairs)
    names = ", ".join(pooler.unnamed_pairs)
    added = [p for p in _pools(worst) if p.who not in {x.who for x in _pools(floor)}]
    total = f" = {num(added[0].total)}" if added and len(added[0].factors) > 1 else ""
    each = (f"each opens a pool of its own of {formula(added[0])}{total} "
            "(capped per database by max_db_connections, per user by "
            "max_user_connections)") if added else \
        "none opens a further pool (the pooler's entries force their users)"
    message = (
        f"pooler {pooler.name}: the (database, user) of {n} client{'s' if n != 1 else ''} "
        f"is unknown ({names}), so its server side counts them {_counted(floor)}: "
        f"{num(floor.total)} on {budget.server}, a floor. If each uses a pair of its own, "
        f"{each}, and the pooler may open {num(worst.total)} ({_per_process(worst)}): "
        f"{_verdict(budget, floor, worst)}. Name each client's database and user where it "
        "connects (a URL holding both, or POSTGRES_DB and POSTGRES_USER beside "
        "POSTGRES_HOST), declare them ([[workloads]] database and user), or give the "
        "pooler's [databases] entries a forced user")
    detail = ["counted (a floor):", *(f"  {x}" for x in contribution_lines(floor)),
              "worst case (each a pair of its own):",
              *(f"  {x}" for x in contribution_lines(worst))]
    return Finding(
        code="PA106", name="unknown-client-connections", severity=Severity.warning,
        message=message, detail="\n".join(detail), location=pooler.location,
        fix=Fix(description=f"name the database and user of {names}"),
        subject=f"{pooler.id}|pairs")


# How many pairs `_pairs_until_over` tries before saying none it tried goes over.
_MOST_PAIRS = 50


def _server_peak(budget: Budget, floor: Contribution, instead: float) -> float:
    """The server's peak with `instead` counted for the pooler in place of `floor`."""
    total = budget.total_peak if budget.total_peak is not None else budget.peak
    peak = total - floor.total + instead
    if budget.spread_over is not None:
        peak = math.ceil(peak / budget.spread_over.value)
    return peak


def _pairs_until_over(pooler: Pooler, budget: Budget, floor: Contribution
                      ) -> tuple[int, float] | None:
    """The fewest (database, user) pairs that take the server over its usable slots,
    each a pool of its own placed where it adds most (as worst_case does), and the
    server's peak then; None when the floor is over already or no count tried is.
    Priced by advisor.budget.pairs.PairPricer (the totals pooler_contribution gives)."""
    from advisor.budget.pairs import PairPricer, known_pairs

    if budget.peak > budget.usable:
        return None
    base = replace(pooler, pairs_open=False)
    pricer = PairPricer(base, known_pairs(base), pooler_contribution)
    for i in range(_MOST_PAIRS):
        found = pricer.best(f"client {i + 1}")
        if found is None:
            return None
        pricer.add(found[1])
        peak = _server_peak(budget, floor, found[0])
        if peak > budget.usable:
            return len(pricer.pairs), peak
    return None


def _open_verdict(pooler: Pooler, budget: Budget, floor: Contribution) -> str:
    """What the server's verdict rests on: the pairs it fits with, and how many go over."""
    more = " at least" if len(budget.unknown_pairs) > 1 or budget.unknown_clients \
        or budget.unbounded_clients else ""
    if budget.peak > budget.usable:
        return (f"{budget.server}'s peak is{more} {num(budget.peak)} > "
                f"{num(budget.usable)} usable with the pairs counted already")
    over = _pairs_until_over(pooler, budget, floor)
    counted = f"{budget.server}'s peak is{more} {num(budget.peak)} <= " \
              f"{num(budget.usable)} usable only with the pairs counted"
    if over is None:
        return f"{counted}, and more pairs than {_MOST_PAIRS} would be needed to go over"
    n, peak = over
    return (f"{counted}; {n} pairs, each a pool of its own, would take it to{more} "
            f"{num(peak)} > {num(budget.usable)}, OVER by{more} {num(peak - budget.usable)}, "
            f"so whether {budget.server} fits cannot be told")


def open_pairs_finding(pooler: Pooler, budget: Budget) -> Finding | None:
    """A pooler no client of the repository connects to whose pairs nothing caps: its
    server side is a floor (advisor.budget.slots._open_contribution), so the server's
    verdict cannot be told."""
    floor = pooler_contribution(pooler)
    if not floor.unknown:
        return None  # its caps bound it: a number
    return Finding(
        code="PA106", name="unknown-client-connections", severity=Severity.warning,
        message=(f"pooler {pooler.name}: no client in the repository connects to it, so the "
                 "(database, user) pairs it serves are not known; each pair a client uses "
                 "opens a pool of its own and no max_db_connections / max_user_connections "
                 f"bounds them: counted {_counted(floor)}, {num(floor.total)} on "
                 f"{budget.server}, a floor (an assumption, not read). "
                 f"{_open_verdict(pooler, budget, floor)}. "
                 "Declare its clients ([[workloads]] target, database and user), or cap it "
                 "(max_db_connections on each entry, max_user_connections, or entries "
                 "that force a user)"),
        detail="\n".join(["counted (a floor):",
                          *(f"  {x}" for x in contribution_lines(floor))]),
        location=pooler.location,
        fix=Fix(description=f"declare the clients of {pooler.name} or cap its pools"),
        subject=f"{pooler.id}|pairs")


def pairs_findings(topo: Topology, budgets: list[Budget]) -> Iterator[Finding]:
    by_id = {b.server_id: b for b in budgets}
    for pooler in topo.poolers:
        budget = by_id.get(pooler.server_id or "")
        if pooler.pairs_open and budget is not None:
            found = open_pairs_finding(pooler, budget)
            if found is not None:
                yield found
        if pooler.unnamed_pairs and budget is not None:
            found = pairs_finding(pooler, budget)
            if found is not None:
                yield found
