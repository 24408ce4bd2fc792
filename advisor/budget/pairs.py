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
from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.model import Contribution, Pooler

if TYPE_CHECKING:  # facts.pgbouncer is imported where it is used (start-up)
    from advisor.facts.flow import Node
    from advisor.facts.pgbouncer import EffectivePool

Pair = tuple[str, str]
# what a candidate pair changes (PairPricer._change): its pool's key, its pool, the pools
# added, the (group, key) of those it takes the place of
Change = tuple[Pair, "EffectivePool", list["EffectivePool"], list[tuple[str, Pair]]]

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
    # priced by PairPricer (the totals pooler_contribution gives: audit 49); a name
    # given twice would make its candidates' nodes ones the flow holds: not lazily
    pricer = PairPricer(pooler, pairs, pooler_contribution,
                        lazy=len(set(names)) == len(names))
    for client in names:
        found = pricer.best(client)
        if found is not None:  # the first of equals: a database of its own first
            pricer.add(found[1])
            pairs.append(found[1])
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
    adds most; None when no cap bounds it (each further pair adds its pool). The pairs
    are chosen on totals a PairPricer keeps (the same totals pooler_contribution gives,
    without pricing the whole pooler per candidate: audit 49), the pooler's contribution
    worked out once, for the pairs chosen."""
    if _uncapped(pooler):
        return None
    base = replace(pooler, pairs_open=False)
    pairs = known_pairs(pooler)
    pricer = PairPricer(base, pairs, pooler_contribution)
    best = pricer.total if pairs else pooler_contribution(base).total
    for i in range(_MOST_PAIRS):
        found = pricer.best(f"client {i + 1}")
        if found is None or found[0] <= best:
            break
        best, pair = found
        pricer.add(pair)
        pairs.append(pair)
    else:
        return None
    return pooler_contribution(replace(base, pairs=pairs) if pairs else base)


class _Refused(Exception):
    """The pools do not keep one max_db_connections per database or one
    max_user_connections per user key: pools_flow's caps would then depend on the order
    of the pools, which only the whole computation reproduces."""


def _per_replica_total(pooler: Pooler, per_replica: int) -> float:
    """Contribution.total of server_side_max and pooler_contribution (no topology) for a
    per-process flow `per_replica`: replicas x it, the surge's pods added."""
    total = pooler.replicas.value * per_replica
    if pooler.surge is not None and pooler.replicas.value > 0:
        total = (pooler.replicas.value + pooler.surge.value) * (total / pooler.replicas.value)
    return total


class PairPricer:
    """pooler_contribution(replace(base, pairs=[*pairs, c])).total for the candidates c
    of a greedy pair search, and `add` to keep one. The pools of `pairs` are worked out
    once (facts.pgbouncer.pooler_pools) and their flow kept (facts.flow.Network); a
    candidate changes them by its own pool, the auth_query pool of its database when
    that database is new, and the auth or min_pool_size pool its pool replaces, so its
    total is the kept flow augmented through the new pools (a replaced pool, rare: the
    flow worked out again). Falls back to pricing with pooler_contribution when the
    pooler is not a PgBouncer or its caps are not one per database and per user."""

    def __init__(self, base: Pooler, pairs: list[tuple[str, str]],
                 pooler_contribution: ContributionOf, *, lazy: bool = True) -> None:
        from advisor.facts.flow import Network
        from advisor.facts.pgbouncer import _user_key, names_of, pooler_pools

        self.base = base
        self.names = names_of(base)
        self.user_key = _user_key  # imported once here, not per pool
        self.pairs = list(pairs)
        self._contribution = pooler_contribution
        # pooler_contribution prices a pooler of open pairs by its bound: not this
        self.fast = base.kind == "pgbouncer" and not base.pairs_open
        self.net = Network()
        self.client: dict[Pair, EffectivePool] = {}
        self.auth: dict[Pair, EffectivePool] = {}
        self.kept: dict[Pair, EffectivePool] = {}
        self.caps: dict[tuple[str, str], int] = {}
        self.dead: set[tuple[str, str]] = set()  # see facts.flow.Network.augment_through
        # best(): the last total of each candidate slot whose change was a sink arc, a
        # bound on its next while every pair added was one too; the slot chosen last
        self.bounds: dict[int, float] = {}
        self._chosen: tuple[tuple[str, str], int] | None = None
        # the candidates' names are new ones each step (candidates()): a config that
        # holds such a name could make a slot's user one the flow holds
        names = [u.name for u in base.users] + [d.name for d in base.databases] \
            + [d.user or "" for d in base.databases] + [x for p in pairs for x in p]
        self.lazy = lazy and not any("'s user" in n or "'s database" in n for n in names) \
            and base.replicas.value > 0 and float(base.replicas.value).is_integer() \
            and (base.surge is None or float(base.surge.value).is_integer())
        if self.fast:
            try:
                for p in pooler_pools(base, self.pairs)[0]:
                    key = (p.database, p.user)
                    group = self.auth if p.lookup is not None else \
                        self.kept if p.kept_only else self.client
                    group[key] = p
                    self._place(p)
                self.net.solve()
            except _Refused:
                self.fast = False
        self.asked = {p.database for p in self.client.values()}

    @property
    def total(self) -> float:
        if not self.fast:
            return self._contribution(replace(self.base, pairs=self.pairs)).total
        return _per_replica_total(self.base, int(self.net.value))

    def _place(self, pool: EffectivePool) -> tuple[Node, Node]:
        """The pool's arc in the network (its nodes made with their caps); the nodes."""
        d, u = ("d", pool.database), ("u", self.user_key(self.base, pool))
        caps, net = self.caps, self.net
        cap = max(0, pool.max_db_connections.int_value)
        if caps.setdefault(d, cap) != cap:
            raise _Refused(d)
        net.node(d, cap)
        cap = max(0, pool.max_user_connections.int_value)
        if caps.setdefault(u, cap) != cap:
            raise _Refused(u)
        net.node(u, cap)
        net.edge(d, u, pool.server_max)
        return d, u

    def _change(self, pair: Pair) -> Change | None:
        """What `pair` changes in the pools (pooler_pools' order: client pools, then one
        auth_query pool per database not a pool already, then the min_pool_size pools
        no pool holds): (its key, its pool, the pools added, the (group, key) of those
        taken out), or None when it changes nothing."""
        from advisor.facts.pgbouncer import auth_lookup, auth_pool, effective_pool

        pool = effective_pool(self.base, *pair, self.names)
        if pool is None:
            return None
        key = (pool.database, pool.user)
        if key in self.client:
            return None
        added = [pool]
        gone = [(g, key) for g in ("auth", "kept") if key in getattr(self, g)]
        if pool.database not in self.asked:
            lookup = auth_lookup(self.base, pool.database, self.names)
            extra = auth_pool(self.base, lookup, self.names) if lookup is not None else None
            if extra is not None:
                k = (extra.database, extra.user)
                if k != key and k not in self.client and k not in self.auth:
                    added.append(extra)
                    if k in self.kept:
                        gone.append(("kept", k))
        return key, pool, added, gone

    def _rebuilt(self, added: list[EffectivePool], gone: list[tuple[str, Pair]]) -> int:
        """The flow of the pools with `gone` taken out and `added` put in, from scratch."""
        from advisor.facts.flow import Network

        pools = [p for g in ("client", "auth", "kept")
                 for k, p in getattr(self, g).items() if (g, k) not in gone] + added
        net, self.net, caps = self.net, Network(), self.caps
        self.caps = {}
        try:
            for p in pools:
                self._place(p)
            return int(self.net.solve())
        finally:
            self.net, self.caps = net, caps

    def price(self, pair: tuple[str, str]) -> float:
        if self.fast:
            try:
                return _per_replica_total(self.base, self._value(pair)[0])
            except _Refused:
                pass
        return self._contribution(replace(self.base, pairs=[*self.pairs, pair])).total

    def _value(self, pair: tuple[str, str]) -> tuple[int, bool]:
        """The flow per process with `pair`, and whether its change is a sink arc only:
        one pool added, nothing taken out, on a user node the flow does not hold yet
        (through a database it holds, or one as new: then a flow apart)."""
        from advisor.facts.pgbouncer import _user_key

        change = self._change(pair)
        if change is None:
            return int(self.net.value), False
        _, pool, added, gone = change
        if gone:
            return self._rebuilt(added, gone), False
        net = self.net
        sink = len(added) == 1 and not net.has(("u", _user_key(self.base, pool)))
        net.log, caps = [], dict(self.caps)
        try:
            for i, p in enumerate(added):
                # the nodes no candidate of this flow can reach from the source are
                # kept for the next (the auth_query pool's arc comes after the first's
                # pushes: not the flow they were found in)
                net.augment_through(*self._place(p), self.dead if i == 0 else None)
            return int(net.value), sink
        finally:
            net.undo(0)
            net.log, self.caps = None, caps

    def best(self, client: str) -> tuple[float, tuple[str, str]] | None:
        """The candidate of `client` that adds most, the first of equals, with the total
        it makes; None when it has none.

        Lazily: a candidate whose change was a sink arc only (`_value`) keeps what it
        added to the flow as a bound on what it adds next while every pair added since
        was one too, the max flow being submodular in the sink arcs added (a polymatroid
        rank: what an arc adds never grows with the arcs already there); so only the
        candidates at the top are priced again, largest bound first and the first of
        equals before a later one: the choice stays the largest total, then the first
        (a total grows strictly with the flow for whole replicas, the only case taken
        lazily)."""
        cands = candidates(self.base, client)
        if not cands:
            return None
        if self.fast and self.lazy:
            try:
                return self._lazy_best(cands)
            except _Refused:
                self.lazy = False
                self.bounds = {}
        options = [(self.price(c), k, c) for k, c in enumerate(cands)]
        total, _, pair = max(options, key=lambda o: (o[0], -o[1]))
        return total, pair

    def _lazy_best(self, cands: list[tuple[str, str]]) -> tuple[float, tuple[str, str]]:
        import heapq

        now = int(self.net.value)
        heap: list[tuple[int, int, bool]] = []
        for k, c in enumerate(cands):
            bound = self.bounds.get(k)
            if bound is None:
                value, sink = self._value(c)
                if sink:
                    self.bounds[k] = value - now
                heap.append((now - value, k, True))
            else:
                heap.append((-bound, k, False))
        heapq.heapify(heap)
        while True:
            gain, k, fresh = heapq.heappop(heap)
            if fresh:
                self._chosen = (cands[k], k)
                return _per_replica_total(self.base, now - gain), cands[k]
            value, sink = self._value(cands[k])
            if sink:
                self.bounds[k] = value - now
            else:
                del self.bounds[k]
            heapq.heappush(heap, (now - value, k, True))

    def add(self, pair: tuple[str, str]) -> None:
        self.pairs.append(pair)
        if self.fast:
            try:
                sink = self._add(pair)
            except _Refused:
                self.fast = False
                return
            if not sink:
                self.bounds = {}  # a pool on a user held, or more than one: bounds lost
            elif self._chosen is not None and self._chosen[0] == pair:
                # its database is now one a pool of the pairs holds: priced again
                self.bounds.pop(self._chosen[1], None)
            else:
                self.bounds = {}

    def _add(self, pair: tuple[str, str]) -> bool:
        """Keep `pair`; whether its change was a sink arc only (see `_priced`)."""
        from advisor.facts.pgbouncer import _user_key

        self.dead = set()  # the flow changes
        change = self._change(pair)
        if change is None:
            return True  # nothing changes
        key, pool, added, gone = change
        sink = len(added) == 1 and not gone \
            and not self.net.has(("u", _user_key(self.base, pool)))
        self.client[key] = pool
        self.asked.add(pool.database)
        for p in added[1:]:
            self.auth[(p.database, p.user)] = p
        if gone:
            for g, k in gone:
                del getattr(self, g)[k]
            from advisor.facts.flow import Network

            self.net, self.caps = Network(), {}
            for g in ("client", "auth", "kept"):
                for p in getattr(self, g).values():
                    self._place(p)
            self.net.solve()
            return False
        for p in added:
            self.net.augment_through(*self._place(p))
        return sink
