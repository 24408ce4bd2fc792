"""What a pooler's clients of unknown (database, user) may add to its server side.

Behind a `*` fallback (or an entry with no forced user) PgBouncer opens one pool per
(database, user) a client logs in with (src/objects.c get_pool). When the pairs of some
clients are not known (`Pooler.unnamed_pairs`), the budget counts the pools of the pairs
it knows, or one pool for them all when it knows none (advisor.facts.pgbouncer
declared_pairs): a floor. The worst case gives each such client a pair of its own, with
the same arithmetic (pool_size + reserve, capped per database by max_db_connections and
per user by max_user_connections, auth_query pools added, x processes). Pure.
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Contribution, Pooler


def _candidates(pooler: Pooler, client: str) -> list[tuple[str, str]]:
    """The pairs an unknown client may log in with that would be a pool of its own: a
    database of its own through the `*` fallback, or a user of its own on an entry that
    forces none."""
    user = f"{client}'s user"
    out = [(f"{client}'s database", user)] if any(d.name == "*" for d in pooler.databases) \
        else []
    seen: set[str] = set()
    for d in pooler.databases:
        if d.name != "*" and d.user is None and d.name not in seen:
            seen.add(d.name)
            out.append((d.name, user))
    return out


def _known_pairs(pooler: Pooler) -> list[tuple[str, str]]:
    """The pairs the floor counts, less the one pool assumed for clients none of whose
    pairs is known (that pool stands for the unknown clients, counted below)."""
    if pooler.pairs:
        return list(pooler.pairs)
    from advisor.facts.pgbouncer import declared_pairs

    return [p for p in declared_pairs(pooler)[0] if p != ("*", "*")]


def worst_case(pooler: Pooler) -> Contribution | None:
    """The pooler's server side if each client in `unnamed_pairs` logs in with a pair of
    its own, each placed where it adds most (greedy: each database's total is a capped
    sum, concave in its pools); None when no pair is unknown."""
    if not pooler.unnamed_pairs:
        return None
    from advisor.budget.slots import pooler_contribution

    pairs = _known_pairs(pooler)
    for client in pooler.unnamed_pairs:
        options = [(pooler_contribution(replace(pooler, pairs=[*pairs, c])).total, i, c)
                   for i, c in enumerate(_candidates(pooler, client))]
        if options:  # the first of equals: a database of its own before an entry's user
            pairs.append(max(options, key=lambda o: (o[0], -o[1]))[2])
    return pooler_contribution(replace(pooler, pairs=pairs) if pairs else pooler)
