"""The open-pairs bound of a PgBouncer no client connects to (advisor.budget.pairs.
open_bound) and PA106's pairs-until-over search price candidate pairs with PairPricer,
kept incrementally (audit 49: a pgbouncer.ini of N databases x N users took ~N^3, 34 s
at N=100). Oracle: the greedy search as it was, pricing every candidate with a whole
pooler_contribution, kept here as the reference; random small configs from
bench/pgbouncer_pairs.make_ini (seed fixed) cover max_db_connections and
max_user_connections set globally, per entry, per user or not at all, pool_size 0,
reserve pools, min_pool_size pools the janitor keeps, auth_query pools, forced users,
a `*` fallback, repeated entries and PgBouncer 1.18 .. 1.25, where the pair chosen
depends on the caps and on the order of equal candidates."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import msgspec
from msgspec.structs import replace

from advisor.budget import pairs as pairs_module
from advisor.budget.pairs import PairPricer, candidates, known_pairs, open_bound, worst_case
from advisor.budget.slots import pooler_contribution
from advisor.facts import pgbouncer
from advisor.facts.flow import max_flow
from advisor.model import BouncerVersion, Contribution, Pooler, Source, Term
from advisor.read.fs import Root
from advisor.read.sources.pgbouncer_ini import pooler_from_ini, read_pgbouncer_ini

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.pgbouncer_pairs import make_ini, version_of


def _reference_open_bound(pooler: Pooler) -> Contribution | None:
    """open_bound before audit 49: every candidate priced with pooler_contribution."""
    if pairs_module._uncapped(pooler):
        return None
    base = replace(pooler, pairs_open=False)
    pairs = known_pairs(pooler)
    best = pooler_contribution(replace(base, pairs=pairs) if pairs else base)
    for i in range(pairs_module._MOST_PAIRS):
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


def _pooler(tmp: Path, ini: str, version: tuple[int, int], rng: random.Random) -> Pooler:
    (tmp / "pgbouncer.ini").write_text(ini)
    read = read_pgbouncer_ini(Root.of(tmp), "pgbouncer.ini",
                              version=BouncerVersion(major=version[0], minor=version[1]))
    pooler = pooler_from_ini(read, id="pgb", name="pgbouncer", replicas=Term(
        label="replicas", value=rng.choice([1, 1, 2, 3]), source=Source(path="x", line=1)))
    pooler.pairs_open = True
    if rng.random() < 0.2:
        pooler.surge = Term(label="maxSurge", value=1, source=Source(path="x", line=2))
    return pooler


def _encode(c: Contribution | None) -> bytes:
    return msgspec.json.encode(c)


def _cases(tmp_path: Path, count: int, seed: int):
    rng = random.Random(seed)
    for case in range(count):
        n = rng.randint(0, 6)
        ini = make_ini(n, rng, users=rng.randint(0, 5))
        folder = tmp_path / str(case)
        folder.mkdir()
        yield case, ini, _pooler(folder, ini, version_of(rng), rng)


def _check_prices(pooler: Pooler, label: object) -> bool:
    """Every candidate of every step (the pair chosen, the first of the largest, added
    each time, whatever it adds: PA106's search) priced as the whole computation prices
    it; whether the pricer kept to its fast path."""
    base = replace(pooler, pairs_open=False)
    pairs = known_pairs(base)
    pricer = PairPricer(base, pairs, pooler_contribution)
    fast = pricer.fast
    for step in range(6):
        cands = candidates(base, f"client {step + 1}")
        if not cands:
            break
        want = [pooler_contribution(replace(base, pairs=[*pairs, c])).total for c in cands]
        assert [pricer.price(c) for c in cands] == want, (label, step)
        pair = max(zip(want, range(len(cands)), cands, strict=True),
                   key=lambda o: (o[0], -o[1]))[2]
        assert pricer.best(f"client {step + 1}") == (max(want), pair), (label, step)
        pricer.add(pair)
        pairs.append(pair)
        assert pricer.total == pooler_contribution(replace(base, pairs=pairs)).total, \
            (label, step)
    return fast and pricer.fast


def test_each_candidate_is_priced_as_pooler_contribution_prices_it(tmp_path):
    fast = sum(_check_prices(pooler, (case, ini))
               for case, ini, pooler in _cases(tmp_path, 150, 49))
    assert fast >= 145  # the fallback is for caps that differ within a database or user


# A pool a candidate takes the place of: the `*` database a client brings is looked up
# in auth_dbname d0 as au, the pool (d0, au) the janitor kept for d0's min_pool_size
# (1.21+) until then (PairPricer works the flow out again), and an auth_query pool a
# candidate's own pool replaces.
REPLACED = [
    ("[databases]\nd0 = host=pg dbname=d0 user=au min_pool_size=2 pool_size=5\n"
     "* = host=pg\n[pgbouncer]\nauth_user = au\nauth_dbname = d0\n"
     "auth_query = SELECT 1\nmax_db_connections = 4\nmax_user_connections = 3\n"),
    ("[databases]\nd0 = host=pg dbname=d0\nd1 = host=pg dbname=d1 user=au "
     "min_pool_size=3\n* = host=pg user=au\n[users]\nau = max_user_connections=6\n"
     "[pgbouncer]\nauth_user = au\nauth_dbname = d1\nauth_query = SELECT 1\n"
     "default_pool_size = 4\n"),
]


def test_a_replaced_pool_is_priced_as_the_whole_computation_prices_it(tmp_path):
    for i, ini in enumerate(REPLACED):
        for version in ((1, 21), (1, 23), (1, 25), (1, 18)):
            folder = tmp_path / f"{i}-{version[1]}"
            folder.mkdir()
            assert _check_prices(_pooler(folder, ini, version, random.Random(i)),
                                 (i, version))


def test_caps_that_differ_within_a_database_fall_back_to_the_whole_computation(
        tmp_path, monkeypatch):
    """PairPricer refuses a database whose pools name different max_db_connections
    (pools_flow's caps would follow the pools' order): priced as before."""
    rng = random.Random(3)
    (tmp_path / "a").mkdir()
    pooler = _pooler(tmp_path / "a", make_ini(4, rng, users=3), (1, 25), rng)
    place = PairPricer._place

    def refuse(self, pool):  # type: ignore[no-untyped-def]
        if len(self.caps) > 3:
            raise pairs_module._Refused(pool)
        return place(self, pool)

    monkeypatch.setattr(PairPricer, "_place", refuse)
    assert not _check_prices(pooler, "refused")


def test_open_bound_is_the_reference_greedy(tmp_path):
    bounded = 0
    for case, ini, pooler in _cases(tmp_path, 150, 4949):
        want = _reference_open_bound(pooler)
        assert _encode(open_bound(pooler, pooler_contribution)) == _encode(want), (case, ini)
        bounded += want is not None
    assert bounded > 25  # the bound is found, not only refused


def test_the_capped_case_of_the_audit_chooses_what_the_reference_chooses(tmp_path):
    """Every database and user capped, so a pair adds only where the caps leave room and
    equal candidates are many: the greedy order decides (bench/pgbouncer_pairs
    capped_ini's shape, small)."""
    from bench.pgbouncer_pairs import capped_ini

    for n in (3, 6, 9):
        folder = tmp_path / str(n)
        folder.mkdir()
        pooler = _pooler(folder, capped_ini(n), (1, 25), random.Random(n))
        assert _encode(open_bound(pooler, pooler_contribution)) == \
            _encode(_reference_open_bound(pooler))


def _reference_worst_case(pooler: Pooler) -> Contribution | None:
    """worst_case before audit 49: every candidate priced with pooler_contribution."""
    if not pooler.unnamed_pairs:
        return None
    names = pooler.unnamed_pairs
    pooler = replace(pooler, unnamed_pairs=[])
    pairs = known_pairs(pooler)
    for client in names:
        options = [(pooler_contribution(replace(pooler, pairs=[*pairs, c])).total, i, c)
                   for i, c in enumerate(candidates(pooler, client))]
        if options:
            pairs.append(max(options, key=lambda o: (o[0], -o[1]))[2])
    return pooler_contribution(replace(pooler, pairs=pairs) if pairs else pooler)


def test_the_worst_case_of_unnamed_clients_is_the_reference_greedy(tmp_path):
    """PA106's worst case for clients whose pairs are unknown (each a pair of its own):
    clients of known pairs beside them, a name given twice (not priced lazily)."""
    from advisor.facts.pgbouncer import declared_pairs

    rng = random.Random(490)
    for case, ini, pooler in _cases(tmp_path, 150, 4900):
        pooler.pairs_open = False
        declared = declared_pairs(pooler)[0]
        pooler.pairs = rng.sample(declared, min(len(declared), rng.randint(0, 3)))
        pooler.unnamed_pairs = [f"app{i}" for i in range(rng.randint(1, 6))]
        if rng.random() < 0.2:
            pooler.unnamed_pairs.append("app0")
        assert _encode(worst_case(pooler, pooler_contribution)) == \
            _encode(_reference_worst_case(pooler)), (case, ini)


def _edmonds_karp(pools: list[tuple[str, str, int]], db_caps: dict[str, int],
                  user_caps: dict[str, int]) -> int:
    """advisor.facts.pgbouncer._max_flow's search before audit 49 (both sides capped)."""
    big = sum(max(0, c) for _, _, c in pools) + 1
    cap: dict[str, dict[str, int]] = {"s": {}, "t": {}}

    def edge(x: str, y: str) -> None:
        cap.setdefault(x, {}).setdefault(y, 0)
        cap.setdefault(y, {}).setdefault(x, 0)

    for d, u, c in pools:
        db, user = f"d:{d}", f"u:{u}"
        edge("s", db)
        edge(db, user)
        edge(user, "t")
        cap["s"][db] = db_caps.get(d, 0) if db_caps.get(d, 0) > 0 else big
        cap[db][user] += max(0, c)
        cap[user]["t"] = user_caps.get(u, 0) if user_caps.get(u, 0) > 0 else big
    flow = 0
    while True:
        parent = {"s": "s"}
        queue = ["s"]
        for x in queue:
            for y, left in cap[x].items():
                if left > 0 and y not in parent:
                    parent[y] = x
                    queue.append(y)
        if "t" not in parent:
            return flow
        push, y = big, "t"
        while y != "s":
            push = min(push, cap[parent[y]][y])
            y = parent[y]
        y = "t"
        while y != "s":
            cap[parent[y]][y] -= push
            cap[y][parent[y]] += push
            y = parent[y]
        flow += push


def test_the_flow_is_the_edmonds_karp_value():
    """facts.flow (Dinic from scratch, and pool by pool through augment_through with an
    undo) and pgbouncer._max_flow give the value the Edmonds-Karp search gave."""
    from advisor.facts.flow import Network

    rng = random.Random(7)
    for _ in range(2000):
        nd, nu = rng.randint(1, 6), rng.randint(1, 6)
        pools = [(f"d{rng.randrange(nd)}", f"u{rng.randrange(nu)}",
                  rng.choice([-1, 0, 1, 2, 3, 5, 12])) for _ in range(rng.randint(0, 15))]
        db_caps = {f"d{i}": rng.choice([0, 0, 1, 2, 4, 7, -1]) for i in range(nd)}
        user_caps = {f"u{i}": rng.choice([0, 0, 1, 3, 5, -2]) for i in range(nu)}
        want = _edmonds_karp(pools, db_caps, user_caps)
        assert max_flow(pools, db_caps, user_caps) == want
        assert pgbouncer._max_flow(pools, db_caps, user_caps) == want
        net = Network()
        for d, u, c in pools:
            net.node(("d", d), db_caps.get(d, 0))
            net.node(("u", u), user_caps.get(u, 0))
            net.edge(("d", d), ("u", u), c)
            net.augment_through(("d", d), ("u", u))
        assert net.value == want
        net.log = []
        d, u = f"d{rng.randrange(nd + 1)}", f"u{rng.randrange(nu + 1)}"
        net.node(("d", d), db_caps.get(d, 0))
        net.node(("u", u), user_caps.get(u, 0))
        net.edge(("d", d), ("u", u), 4)
        net.augment_through(("d", d), ("u", u))
        assert net.value == _edmonds_karp([*pools, (d, u, 4)], db_caps, user_caps)
        net.undo(0)
        assert net.value == want and net.solve() == want
