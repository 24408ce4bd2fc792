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

from collections.abc import Callable

from msgspec.structs import replace

from advisor.model import Contribution, Pooler

# budget.slots.pooler_contribution, passed in: slots asks this module for the bound of a
# pooler whose pairs are open, so importing it back would be a circle
ContributionOf = Callable[[Pooler], Contribution]


def candidates(pooler: Pooler, client: str) -> list[tuple[str, str]]:
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


def known_pairs(pooler: Pooler) -> list[tuple[str, str]]:
    """The pairs the floor counts, less the one pool assumed for clients none of whose
    pairs is known: `*/*` of a `*` fallback, `db/*` of an entry forcing no user (that
    pool stands for the unknown clients, each counted below with a pair of its own)."""
    if pooler.pairs:
        return list(pooler.pairs)
    from advisor.facts.pgbouncer import declared_pairs

    return [p for p in declared_pairs(pooler)[0] if p[1] != "*"]


def worst_case(pooler: Pooler, pooler_contribution: ContributionOf) -> Contribution | None:
    """The pooler's server side if each client in `unnamed_pairs` logs in with a pair of
    its own, each placed where it adds most (greedy: each database's total is a capped
    sum, concave in its pools); None when no pair is unknown."""
    if not pooler.unnamed_pairs:
        return None
    names = pooler.unnamed_pairs
    pooler = replace(pooler, unnamed_pairs=[])  # each pair placed: a number, not a floor
    pairs = known_pairs(pooler)
    for client in names:
        options = [(pooler_contribution(replace(pooler, pairs=[*pairs, c])).total, i, c)
                   for i, c in enumerate(candidates(pooler, client))]
        if options:  # the first of equals: a database of its own before an entry's user
            pairs.append(max(options, key=lambda o: (o[0], -o[1]))[2])
    return pooler_contribution(replace(pooler, pairs=pairs) if pairs else pooler)


# How many more pairs the bound of a pooler of unknown pairs is looked for over: caps
# are saturated long before in any real config; past it the pooler counts as unbounded.
_MOST_PAIRS = 200


def _uncapped(pooler: Pooler) -> bool:
    """Whether some pair a client may bring adds a pool no cap already counted bounds:
    through `*` a database of its own (its own max_db_connections counter: src/objects.c
    @pgbouncer_1_25_1:488 register_auto_database, 1947 launch_new_connection) as a user
    of its own unless the entry forces one whose max_user_connections is global (1.23+:
    force_user_credentials -> global_user, counter at 1962); on a named entry forcing no
    user, a user of its own, bounded only by the entry's max_db_connections."""
    from advisor.facts.pgbouncer import effective_pool

    for db, user in candidates(pooler, "another client"):
        pool = effective_pool(pooler, db, user)
        if pool is None:
            continue
        if db == "another client's database":
            if not pool.forced_user or not pooler.version.at_least(1, 23) \
                    or pool.max_user_connections.value <= 0:
                return True
        elif pool.max_db_connections.value <= 0:
            return True
    return False


def open_bound(pooler: Pooler, pooler_contribution: ContributionOf) -> Contribution | None:
    """The server side of a pooler no client of the repository connects to
    (`Pooler.pairs_open`) with as many pairs as its caps let open, each placed where it
    adds most; None when no cap bounds it (each further pair adds its pool)."""
    if _uncapped(pooler):
        return None
    base = replace(pooler, pairs_open=False)
    pairs = known_pairs(pooler)
    best = pooler_contribution(replace(base, pairs=pairs) if pairs else base)
    for i in range(_MOST_PAIRS):
        options = [(pooler_contribution(replace(base, pairs=[*pairs, c])), k, c)
                   for k, c in enumerate(candidates(base, f"client {i + 1}"))]
        if not options:
            return best
        found, _, pair = max(options, key=lambda o: (o[0].total, -o[1]))
        if found.total <= best.total:
            return best
        pairs.append(pair)
        best = found
    return None
