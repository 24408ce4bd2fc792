"""Steps 1-2 of the advise plan: the usable slots of a server that does not fit split
over its contributions (direct clients, poolers) by weight, between each one's minimum
and its demand (water-filling), and each share handed to the client-pool or pooler
proposals; the PgBouncer alternative noted when direct clients ask for far more."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from advisor.advise.client_pools import client_pods, shrink_client
from advisor.advise.pooler_limits import bouncer_hazards, shrink_pooler, shrink_proxy
from advisor.advise.records import AdviseOptions, Proposal, num
from advisor.budget.hooks import hook_room
from advisor.model import Budget, Client, Pooler, Server, Topology


class Share(BaseModel):
    model_config = ConfigDict(extra="forbid")

    who: str
    kind: Literal["client", "pooler", "hooks"]
    demand: float
    weight: float
    minimum: float
    alloc: float = 0


def allocate(shares: list[Share], total: float) -> bool:
    """Water-filling: split `total` by weight, each between its minimum and its demand.
    Sets `alloc`; False when the minimums alone exceed the total (allocs = minimums)."""
    if sum(s.minimum for s in shares) > total:
        for s in shares:
            s.alloc = s.minimum
        return False
    fixed: dict[int, float] = {}
    while True:
        free = total - sum(fixed.values())
        open_ = [i for i in range(len(shares)) if i not in fixed]
        weight = sum(shares[i].weight for i in open_)
        changed = False
        for i in open_:
            s = shares[i]
            want = free * s.weight / weight if weight > 0 else free / len(open_)
            if want >= s.demand:
                fixed[i] = s.demand
                changed = True
            elif want < s.minimum:
                fixed[i] = s.minimum
                changed = True
        if not changed:
            for i in open_:
                s = shares[i]
                s.alloc = free * s.weight / weight if weight > 0 else free / len(open_)
            for i, v in fixed.items():
                shares[i].alloc = v
            return True


def _weight_of(name: str, demand: float, options: AdviseOptions) -> float:
    return float(options.weights.get(name, demand))


def fit_slots(
    topo: Topology,
    server: Server,
    b: Budget,
    options: AdviseOptions,
    target_active: float | None,
    notes: list[str],
) -> list[Proposal]:
    shares: list[Share] = []
    for c in b.contributions:
        demand = c.total
        if c.kind == "client":
            client = _client_named(topo, c.who)
            minimum = _client_minimum(client, options) if client else 1.0
        elif c.kind == "hooks":
            # A release's Helm hooks: kept whole, a share the others fit around (a hook's
            # pool is one run's, not a service's). What they add grows as the release's
            # pools shrink (a pre-upgrade hook past a smaller surge), up to their
            # largest: that much is kept for them when the server is to be made to fit.
            demand = minimum = c.total if b.fits else hook_room(c)
        else:
            pooler = _pooler_named(topo, c.who)
            minimum = _pooler_minimum(pooler) if pooler else 1.0
        shares.append(
            Share(
                who=c.who,
                kind=c.kind,
                demand=demand,
                weight=_weight_of(c.who, demand, options),
                minimum=min(minimum, demand),
            )
        )
    total = b.usable
    pooled = [s for s in shares if s.kind == "pooler"]
    if target_active is not None and pooled:
        # Server connections behind poolers are the active ones: no more than the
        # measured optimum needs (the rest only queue inside PostgreSQL).
        direct = sum(s.demand for s in shares if s.kind == "client")
        for s in pooled:
            cap = max(s.minimum, target_active * s.weight / sum(p.weight for p in pooled))
            if s.demand > cap:
                s.demand = math.floor(cap)
        total = min(total, direct + sum(s.demand for s in pooled))
    if sum(s.demand for s in shares) <= total and not any(
        s.kind == "pooler" and s.demand < c.total
        for s, c in zip(shares, b.contributions, strict=True)
    ):
        return []
    notes.extend(f"{c.who}: {num(s.demand)} connections kept for its largest hook, which "
                 "runs beside the release's pods whatever their pools (it adds "
                 f"{num(c.total)} to them now)"
                 for c, s in zip(b.contributions, shares, strict=True)
                 if c.kind == "hooks" and s.demand > c.total)
    feasible = allocate(shares, total)
    basis = (
        "declared weights"
        if any(s.who in options.weights for s in shares)
        else "each one's current share of the peak"
    )
    if not feasible:
        notes.append(
            f"the declared minimums ({num(sum(s.minimum for s in shares))} connections) exceed "
            f"the {num(total)} usable slots: pool sizes alone cannot make {server.name} fit; "
            "raise max_connections (memory permitting) or put PgBouncer in transaction mode "
            "in front of the clients"
        )
    # the direct clients at the budget's peak: a release's hooks as Helm runs them
    direct_demand = sum(c.total for c in b.contributions if c.kind in ("client", "hooks"))
    if direct_demand > 2 * b.usable:
        notes.append(_pooler_alternative(topo, server, b, target_active))
    proposals: list[Proposal] = []
    for s, c in zip(shares, b.contributions, strict=True):
        if s.alloc >= c.total:
            continue
        assumption = f"split of {num(total)} usable slots by {basis}" + (
            f", at least {num(s.minimum)} connections (the minimum pool size in every process)"
            if s.minimum > 1
            else ""
        )
        if s.kind == "client":
            client = _client_named(topo, s.who)
            if client is not None:
                proposals += shrink_client(client, c, s.alloc, assumption, options, notes)
        elif s.kind == "pooler":
            pooler = _pooler_named(topo, s.who)
            if pooler is not None and pooler.kind == "rds-proxy":
                proposals += shrink_proxy(pooler, b, s.alloc, assumption)
            elif pooler is not None:
                proposals += shrink_pooler(pooler, c, s.alloc, assumption, target_active,
                                           topo)
    return proposals


def _pooler_alternative(
    topo: Topology, server: Server, b: Budget, target_active: float | None
) -> str:
    from advisor.advise.pooler import client_peak, kept_direct

    named = {c.who for c in b.contributions if c.kind == "client"}
    here = [c for c in topo.clients if c.name in named and c.target_kind == "server"
            and c.target_id == server.id]
    # Helm hooks and schema migrations stay on the server (advisor.advise.pooler)
    direct = [c for c in here if not kept_direct(c)]
    kept = [c for c in topo.clients if c.target_kind == "server"
            and c.target_id == server.id and kept_direct(c)]
    demand = client_peak(direct)
    names = ", ".join(c.name for c in direct)
    ids = {c.id for c in direct}
    hazards = [h for h in bouncer_hazards(topo) if h.client_id in ids]
    pool = min(b.usable, target_active) if target_active else None
    sized = (
        f"default_pool_size about {num(math.floor(pool))} server connections in total (the "
        "measured optimum)"
        if pool
        else f"a pool sized from a measurement (`pool-advisor sweep`), within {num(b.usable)} "
        "usable"
    )
    text = (
        f"alternative: {names} {'asks' if len(direct) == 1 else 'ask'} for {num(demand)} "
        "connections, more than twice the "
        f"{num(b.usable)} usable; shrinking pools that far queues requests inside each pod. "
        f"A PgBouncer in transaction mode in front of {server.name} lets them keep their "
        f"pools: max_client_conn >= {num(demand)} on each PgBouncer replica (the clients of "
        f"one that stops reconnect to the others), {sized}"
    )
    if kept:
        text += (f"; {', '.join(c.name for c in kept)} keep connecting to {server.name} "
                 "itself (Helm hooks and schema migrations take session advisory locks and "
                 "run DDL: a transaction-mode pool breaks them)")
    if hazards:
        text += "; but transaction mode would break: " + "; ".join(
            f"{h.kind} at {h.location.label()}" for h in hazards[:5]
        )
    return text


def _client_named(topo: Topology, name: str) -> Client | None:
    return next((c for c in topo.clients if c.name == name), None)


def _pooler_named(topo: Topology, name: str) -> Pooler | None:
    return next((p for p in topo.poolers if p.name == name), None)


def _client_minimum(client: Client, options: AdviseOptions) -> float:
    per_process = options.minimums.get(client.name, 1)
    return client_pods(client) * sum(
        per_process * (p.processes.value if p.processes else 1) for p in client.pools
    )


def _pooler_minimum(pooler: Pooler) -> float:
    pairs = max(len(pooler.pairs), 1)
    return pooler.replicas.value * pairs
