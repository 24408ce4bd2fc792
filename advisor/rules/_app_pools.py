"""Helpers for the application-pool rules (PA102-PA104)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import (
    Client,
    Location,
    Pool,
    RelatedLocation,
    Term,
    Topology,
    peak_pods,
)


def pools_with(topo: Topology, bound: str) -> Iterator[tuple[Client, Pool]]:
    for client in topo.clients:
        for pool in client.pools:
            if pool.bound == bound:
                yield client, pool


def pools_with_cpu_formula(topo: Topology) -> Iterator[tuple[Client, Pool]]:
    """Pools whose size or process count the library derives from the CPU count, also
    when the size itself is a default (bound stays "default" then)."""
    for client in topo.clients:
        for pool in client.pools:
            if pool.cpu_formula is not None:
                yield client, pool


def location_of(client: Client, pool: Pool) -> Location:
    return pool.size.source.location() or client.location


def related_of(client: Client, pool: Pool) -> tuple[RelatedLocation, ...]:
    out = []
    for term in (client.replicas, pool.processes, pool.size):
        if term is None:
            continue
        loc = term.source.location()
        if loc is not None:
            out.append(RelatedLocation(location=loc, message=_shown(term)))
    return tuple(out)


def _shown(term: Term) -> str:
    """A term's value, or the default it names when it is cited where it would be
    written (Temporal's unset maxConns at its store's `sql:` line, no '= 0' there)."""
    if term.source.default is not None:
        return f"{term.label}: {term.source.default}"
    return f"{term.label} = {num(term.value)}"


def pods(client: Client) -> float:
    return peak_pods(client.replicas, getattr(client, "surge", None))


def processes(pool: Pool) -> float:
    return pool.processes.value if pool.processes else 1


def subject(client: Client, pool: Pool) -> str:
    return f"{client.id}|{pool.label}"
