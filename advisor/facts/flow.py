"""The largest flow source -> database (max_db_connections) -> user (max_user_connections)
-> sink of a PgBouncer's pools, kept so that a pool added later is priced by augmenting
from the flow already found (audit 49: the open-pairs bound re-solved the whole network
for every candidate pair, ~N^3 with N databases x N users).

Integer capacities only (pool maxima and caps: exact). A cap of 0 or less, or None, is
no cap. A max flow's value is unique, so it does not depend on the order the pools come
in nor on the paths the search takes: the value is the one
advisor.facts.pgbouncer._max_flow's Edmonds-Karp gives. Pure (no I/O, no module state).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import pairwise

Node = tuple[str, str]  # ("d", database) or ("u", user key); S and T below
S: Node = ("s", "")
T: Node = ("t", "")
_INF = math.inf


class Network:
    """A residual network and the value of the flow it holds. `log`, when a list, records
    each change so `undo` can take them back (a candidate priced, then forgotten)."""

    def __init__(self) -> None:
        self.r: dict[Node, dict[Node, float]] = {S: {}, T: {}}
        self.value = 0
        self.log: list[tuple] | None = None

    # --- building -----------------------------------------------------------------

    def _arc(self, x: Node, y: Node, c: float) -> None:
        rx, ry = self.r[x], self.r[y]
        new_xy, new_yx = y not in rx, x not in ry
        rx[y] = rx.get(y, 0) + c
        if new_yx:
            ry[x] = 0
        if self.log is not None:
            self.log.append(("arc", x, y, c, new_xy, new_yx))

    def has(self, node: Node) -> bool:
        return node in self.r

    def node(self, node: Node, cap: int | None) -> None:
        """A database or user node, its arc from the source or to the sink capped at
        `cap` (none when 0 or less)."""
        if node in self.r:
            return
        self.r[node] = {}
        if self.log is not None:
            self.log.append(("node", node))
        c = cap if cap is not None and cap > 0 else _INF
        if node[0] == "d":
            self._arc(S, node, c)
        else:
            self._arc(node, T, c)

    def edge(self, d: Node, u: Node, w: int) -> None:
        """Capacity `w` more (a pool's maximum, 0 when negative) from `d` to `u`."""
        self._arc(d, u, max(0, w))

    # --- undo ---------------------------------------------------------------------

    def undo(self, mark: int) -> None:
        """Take back every change logged after position `mark`."""
        log = self.log
        assert log is not None
        r = self.r
        while len(log) > mark:
            entry = log.pop()
            if entry[0] == "push":
                _, path, a = entry
                for x, y in pairwise(path):
                    r[x][y] += a
                    r[y][x] -= a
                self.value -= a
            elif entry[0] == "arc":
                _, x, y, c, new_xy, new_yx = entry
                r[x][y] -= c
                if new_xy:
                    del r[x][y]
                if new_yx:
                    del r[y][x]
            else:
                del r[entry[1]]

    # --- flow ---------------------------------------------------------------------

    def _push(self, path: list[Node], amount: float) -> None:
        r = self.r
        for x, y in pairwise(path):
            r[x][y] -= amount
            r[y][x] += amount
        self.value += amount
        if self.log is not None:
            self.log.append(("push", path, amount))

    def _path_from_source(self, d: Node, avoid: Node, dead: set[Node]
                          ) -> tuple[list[Node] | None, dict[Node, Node | None]]:
        """A path of residual capacity from the source to `d`, by a search backwards from
        `d` (near in the usual case: d's own arc, or a user d feeds and a database with
        room), never through the sink, `avoid` or a node of `dead`; and the nodes seen."""
        r = self.r
        rs = r[S]
        if rs.get(d, 0) > 0:
            return [S, d], {}
        # the databases with room: a path ends at one of them, so a level of users is
        # first asked for an arc from one (few, when most are full), then widened
        room = [x for x, left in rs.items() if left > 0 and x not in dead]
        parent: dict[Node, Node | None] = {d: None}
        level = [d]
        while level:
            for y in level:
                if y[0] != "u":
                    continue
                ry = r[y]
                for x in room:
                    if x in ry and x not in parent and r[x][y] > 0:
                        path = [S, x]
                        at: Node | None = y
                        while at is not None:
                            path.append(at)
                            at = parent[at]
                        return path, parent
            wider = []
            for y in level:
                for x in r[y]:
                    if x in parent or x in (S, T, avoid) or x in dead or r[x][y] <= 0:
                        continue
                    parent[x] = y
                    wider.append(x)
            level = wider
        return None, parent

    def _path_to_sink(self, u: Node, avoid: Node) -> list[Node] | None:
        """A path of residual capacity from `u` to the sink, never through the source
        or `avoid`."""
        r = self.r
        if r[u].get(T, 0) > 0:
            return [u, T]
        parent: dict[Node, Node | None] = {u: None}
        queue = [u]
        for x in queue:
            for y, left in r[x].items():
                if left <= 0 or y in parent or y in (S, avoid):
                    continue
                parent[y] = x
                if y == T:
                    path = [T]
                    at: Node | None = x
                    while at is not None:
                        path.append(at)
                        at = parent[at]
                    path.reverse()
                    return path
                queue.append(y)
        return None

    def augment_through(self, d: Node, u: Node, dead: set[Node] | None = None) -> float:
        """With the flow held a maximum of the network less some capacity on d -> u, make
        it a maximum again; the gain. Every augmenting path then runs through d -> u:
        source to d, then u to sink. The two parts share no node (one that both reached
        would join the source to the sink without d -> u, which a maximum does not
        allow), so they are looked for from d and from u, not from the source; for the
        same reason the part to d never passes u nor the part from u passes d (each
        pushed path keeps the flow a maximum of the network with d -> u as used so far).

        `dead`, when given: nodes the source cannot reach in the flow held on entry (a
        search of an earlier candidate found so); searches skip them, and a first
        search from d that fails adds the nodes it saw. A push leaves them so for the
        part to d: the arcs it opens lead into nodes of its path, reached already or
        only through d -> u."""
        r = self.r
        gained: float = 0
        if dead is not None and d in dead:
            return gained
        while r[d][u] > 0:
            tail = self._path_to_sink(u, d)
            if tail is None:
                break
            head, seen = self._path_from_source(d, u, dead if dead is not None else set())
            if head is None:
                if dead is not None and not gained:
                    dead.update(seen)
                break
            path = head + tail
            amount = min(r[x][y] for x, y in pairwise(path))
            self._push(path, amount)
            gained += amount
        return gained

    def solve(self) -> float:
        """Make the flow a maximum from scratch-or-wherever (Dinic: levels from the
        source, then blocking flows); the value."""
        r = self.r
        rs = r[S]
        for d in list(rs):  # first the direct paths source -> d -> u -> sink, greedily
            rd = r[d]
            for u, left in rd.items():
                if u == S or left <= 0 or rs[d] <= 0:
                    continue
                amount = min(rs[d], left, r[u].get(T, 0))
                if amount > 0:
                    self._push([S, d, u, T], amount)
        while True:
            level = {S: 0}
            queue = [S]
            for x in queue:
                for y, left in r[x].items():
                    if left > 0 and y not in level:
                        level[y] = level[x] + 1
                        queue.append(y)
            if T not in level:
                return self.value
            arcs = {x: list(r[x]) for x in level}
            pos = dict.fromkeys(level, 0)
            while True:
                # one path along rising levels, advancing each node's arc pointer past
                # arcs that lead nowhere
                path = [S]
                while path and path[-1] != T:
                    x = path[-1]
                    out = arcs[x]
                    i = pos[x]
                    nxt = level[x] + 1
                    while i < len(out):
                        y = out[i]
                        if r[x][y] > 0 and level.get(y) == nxt:
                            break
                        i += 1
                    pos[x] = i
                    if i < len(out):
                        path.append(out[i])
                    else:
                        path.pop()
                        if path:
                            pos[path[-1]] += 1
                if not path:
                    break
                amount = min(r[x][y] for x, y in pairwise(path))
                self._push(path, amount)


def max_flow(pools: Iterable[tuple[str, str, int]], db_caps: dict[str, int],
             user_caps: dict[str, int]) -> int:
    """The value of advisor.facts.pgbouncer._max_flow for integer pool maxima."""
    net = Network()
    for d, u, c in pools:
        dn, un = ("d", d), ("u", u)
        net.node(dn, db_caps.get(d, 0))
        net.node(un, user_caps.get(u, 0))
        net.edge(dn, un, c)
    return int(net.solve())
