"""A PgBouncer's client side as one line: client connections at peak against
max_client_conn x replicas (PA201's arithmetic), shown with -v beside the server side
whether it fits or not (a pooler that fit printed nothing of it). Pure."""

from __future__ import annotations

from collections.abc import Callable

from advisor.budget.arith import num
from advisor.model import Client, Contribution, Pooler, Term


def client_side_line(pooler: Pooler, clients: list[Client],
                     contributions: Callable[[list[Client]], list[Contribution]],
                     feeders: list[Contribution] | None = None) -> str | None:
    """`pg-pooler client side: 15 client connections at peak (a 5 + b 5 + c 5) <= 2000 =
    1000 (max_client_conn, ...) x 2 (PgBouncer pods, ...)`; None for an RDS Proxy (no
    such limit) or a pooler no client of the repository routes to. `contributions` is
    the budget's own (slots.client_contributions), passed in: slots imports this module.
    `feeders`: the server sides of the poolers whose [databases] lead to this one (their
    server connections are its client connections)."""
    if pooler.kind != "pgbouncer" or not (clients or feeders):
        return None
    from advisor.facts.pgbouncer import bouncer_default

    found = contributions(clients) + list(feeders or [])
    demand = sum(c.total for c in found)
    setting = pooler.settings.get("max_client_conn") or bouncer_default(
        "max_client_conn", pooler.version)
    limit = Term(label="max_client_conn", value=float(setting.value), source=setting.source)
    capacity = limit.value * pooler.replicas.value
    floor = any(c.unknown for c in clients) or any(not c.pools or any(
        p.bound == "unbounded" for p in c.pools) for c in clients)
    parts = " + ".join(f"{c.who} {'>= ' if c.unknown else ''}{num(c.total)}" for c in found)
    sign = ">" if demand > capacity else ", cannot tell against" if floor else "<="
    return (f"{pooler.name} client side: {'>= ' if floor else ''}{num(demand)} client "
            f"connections at peak ({parts}){'' if sign.startswith(',') else ' '}{sign} "
            f"{num(capacity)} = {limit.show()} x {pooler.replicas.show()}")
