"""Budget helpers made linear or cached give what the plain versions gave: PgBouncer's
max flow (edge lists instead of a matrix walked whole), built-in defaults (cached per
version), PA101's share lines (clients by name, the first of a name)."""

from __future__ import annotations

import random

from advisor.facts.pgbouncer import _max_flow, bouncer_default
from advisor.model import BouncerVersion, Source


def _matrix_max_flow(pools, db_caps, user_caps) -> int:
    """The Edmonds-Karp over an adjacency matrix that _max_flow replaced."""
    big = sum(max(0, c) for _, _, c in pools) + 1  # a negative size is no capacity
    nodes = ["s", "t", *{f"d:{d}" for d, _, _ in pools}, *{f"u:{u}" for _, u, _ in pools}]
    idx = {n: i for i, n in enumerate(nodes)}
    n = len(nodes)
    cap = [[0] * n for _ in range(n)]
    for d, u, c in pools:
        dcap = db_caps.get(d, 0)
        cap[idx["s"]][idx[f"d:{d}"]] = dcap if dcap > 0 else big
        cap[idx[f"d:{d}"]][idx[f"u:{u}"]] += max(0, c)
        ucap = user_caps.get(u, 0)
        cap[idx[f"u:{u}"]][idx["t"]] = ucap if ucap > 0 else big
    flow, s, t = 0, idx["s"], idx["t"]
    while True:
        parent = [-1] * n
        parent[s] = s
        queue = [s]
        for x in queue:
            for y in range(n):
                if parent[y] < 0 and cap[x][y] > 0:
                    parent[y] = x
                    queue.append(y)
        if parent[t] < 0:
            return flow
        push, y = big, t
        while y != s:
            push = min(push, cap[parent[y]][y])
            y = parent[y]
        y = t
        while y != s:
            cap[parent[y]][y] -= push
            cap[y][parent[y]] += push
            y = parent[y]
        flow += push


def test_max_flow_is_the_matrix_max_flow():
    rng = random.Random(19)
    for _ in range(3000):
        dbs = [f"db{i}" for i in range(rng.randint(1, 6))]
        users = [f"u{i}" for i in range(rng.randint(1, 6))]
        pools = [(rng.choice(dbs), rng.choice(users), rng.randint(-2, 30))
                 for _ in range(rng.randint(0, 12))]
        db_caps = {d: rng.randint(-1, 40) for d in dbs if rng.random() < 0.6}
        user_caps = {u: rng.randint(-1, 40) for u in users if rng.random() < 0.6}
        assert _max_flow(pools, db_caps, user_caps) == \
            _matrix_max_flow(pools, db_caps, user_caps), (pools, db_caps, user_caps)
    # one database capped below its pools, one user capped below what reaches it
    assert _max_flow([("a", "x", 20), ("a", "y", 20), ("b", "y", 20)],
                     {"a": 25}, {"y": 30}) == 45


def test_bouncer_default_depends_on_the_version_number_only():
    """The value depends on the version number only; the citation also says when that
    version is the model's fallback, not read (audit 8b D6)."""
    for major, minor in ((1, 9), (1, 18), (1, 21), (1, 23), (1, 25), (2, 0)):
        here = BouncerVersion(major=major, minor=minor,
                              source=Source(path="pgbouncer.ini", line=1))
        plain = BouncerVersion(major=major, minor=minor)
        for name in ("default_pool_size", "reserve_pool_timeout", "pool_mode",
                     "max_client_conn", "server_lifetime"):
            read, fallback = bouncer_default(name, here), bouncer_default(name, plain)
            assert (read.raw, read.value, read.unit) == \
                (fallback.raw, fallback.value, fallback.unit)
            assert read.source.default == f"PgBouncer {major}.{minor} default"
            assert fallback.source.default == f"PgBouncer {major}.{minor} default" + (
                " (version assumed: Debian 12 PgBouncer 1.18)" if (major, minor) == (1, 18)
                else "")
    assert bouncer_default("default_pool_size", BouncerVersion()).value == 20
    assert bouncer_default("reserve_pool_timeout", BouncerVersion()).value == 5.0


def test_max_flow_counts_no_capacity_for_a_negative_pool_size():
    # caps on one side only take the capped sums; on both sides the search. Neither lets
    # a negative size shrink the "unlimited" edges below what the other pools bring.
    pools = [("a", "x", -5), ("a", "x", 20), ("b", "y", 30)]
    assert _max_flow(pools, {"a": 15}, {}) == 45
    assert _max_flow(pools, {}, {"y": 10}) == 30
    assert _max_flow(pools, {"a": 15}, {"y": 10}) == 25
    assert _matrix_max_flow(pools, {"a": 15}, {"y": 10}) == 25
