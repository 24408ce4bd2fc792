"""A PgBouncer's server side is bounded by what its clients can ask for (advisor.budget.
demand): PgBouncer opens a server connection only for a waiting client, one at a time
(src/janitor.c per_loop_activate, src/objects.c launch_new_connection), and its
janitor only while the pool holds fewer than min_pool_size and pool_size
(check_pool_size, pgbouncer_1_18_0 src/janitor.c:494-495): the larger of the two, never
their sum; idle ones stay open server_idle_timeout after a client moves to another
process, so per process and pool: min(pool maximum, max(the clients' connections,
min(min_pool_size, pool_size))), the pools within max_db_connections and
max_user_connections. And a pool_size of 0 is
no limit from PgBouncer 1.24 (pgbouncer commit bed917b4, #1227), where it counted 0.
The oracle for the bound: tests/test_pgbouncer_demand_oracle.py."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from advisor.budget.arith import contribution_lines
from advisor.budget.slots import client_contributions, pooler_contribution, server_budget
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.model import (
    BouncerVersion,
    Client,
    Location,
    Pool,
    Route,
    Server,
    Source,
    Term,
    Topology,
)
from advisor.read.fs import Root
from advisor.read.sources.pgbouncer_ini import pooler_from_ini, read_pgbouncer_ini
from advisor.rules import load_rules
from tests.tree_helpers import write

INI = """\
[databases]
db1 = host=pg port=5432 dbname=db1
[pgbouncer]
pool_mode = transaction
default_pool_size = 20
{extra}
"""


def _pooler(tmp_path: Path, extra: str = "", version: tuple[int, int] = (1, 18)):
    (tmp_path / "pgbouncer.ini").write_text(INI.format(extra=extra))
    ini = read_pgbouncer_ini(Root.of(tmp_path), "pgbouncer.ini",
                             version=BouncerVersion(major=version[0], minor=version[1]))
    assert not ini.problems, ini.problems
    pooler = pooler_from_ini(ini, id="pgb", name="pgbouncer",
                             replicas=Term(label="replicas", value=2, source=Source(
                                 path="pgb.yaml", line=3)))
    pooler.server_id = "pg"
    pooler.pairs = [("db1", "u1")]  # what linking sets from the clients' routes
    return pooler


def _client(name: str = "app", pods: int = 2, size: float = 3, bound: str = "fixed",
            route: Route | None = None, unknown: str = "") -> Client:
    route = route if route is not None else Route(
        host="pgbouncer", dbname="db1", user="u1", source=Source(path="app.yaml", line=9))
    return Client(id=f"Deployment/{name}", name=name, location=Location(path="app.yaml"),
                  replicas=Term(label="replicas", value=pods, source=Source(
                      path="app.yaml", line=5)),
                  pools=[Pool(label="HikariCP", size=Term(
                      label="maximumPoolSize", value=size, source=Source(
                          path="app.yaml", line=12)), bound=bound)] if not unknown else [],
                  unknown=unknown, route=route, target_kind="pooler", target_id="pgb")


def _topo(pooler, *clients: Client, exposed: bool = False) -> Topology:
    topo = Topology()
    topo.poolers.append(pooler)
    topo.clients.extend(clients)
    topo.servers.append(Server(id="pg", name="pg", location=Location(path="pg.yaml"),
                               version=Term(label="PostgreSQL", value=15,
                                            source=Source(default="test")),
                               instances=Term(label="instances", value=1,
                                              source=Source(default="test"))))
    if exposed:
        topo.exposed["pgb"] = ["Service/pgbouncer (LoadBalancer)"]
    return topo


def test_the_pools_are_bounded_by_the_clients_connections(tmp_path):
    pooler = _pooler(tmp_path)
    topo = _topo(pooler, _client(pods=2, size=3))
    assert pooler_contribution(pooler).total == 40  # 2 x default_pool_size 20, alone
    found = pooler_contribution(pooler, topo)
    # 2 pods x 3 = 6 client connections: each of the 2 processes may hold all 6 (a client
    # that reconnects to the other leaves its idle servers open), not 20
    assert found.total == 2 * 6
    lines = contribution_lines(found)
    assert lines[0].startswith("pgbouncer: min(40 (pgbouncer), 12 (what its clients can ask "
                               "for, default: PgBouncer opens a server connection only for "
                               "a client waiting for one")
    assert "x 20 (server connections per PgBouncer process" in lines[1]  # its own arithmetic
    assert "its clients ask for 6 connections; each of 2 PgBouncer processes" in found.note


def test_min_pool_size_is_the_larger_of_the_two_not_added(tmp_path):
    """Audit 10d D1: the janitor opens a connection only while the pool holds fewer than
    min_pool_size, a client only while none is idle: one process holds max(its clients'
    connections, min_pool_size), never their sum (real PgBouncer 1.18: 2 clients and
    min_pool_size 4 -> 4; 6 clients -> 6; tests/test_pgbouncer_demand_oracle.py)."""
    pooler = _pooler(tmp_path, "min_pool_size = 4")
    fewer = pooler_contribution(pooler, _topo(pooler, _client(pods=1, size=2)))
    assert fewer.total == 2 * 4  # per process max(2 asked, 4 kept), not 2 + 4
    more = pooler_contribution(pooler, _topo(pooler, _client(pods=2, size=3)))
    assert more.total == 2 * 6  # per process max(6 asked, 4 kept), not 6 + 4
    lines = contribution_lines(more)
    assert lines[0].startswith("pgbouncer: min(40 (pgbouncer), 12 (what its clients")
    assert ("db1/u1: min(20 (pool maximum), max(6 (its clients' connections), 4 "
            "(min_pool_size 4, pgbouncer.ini:6))) = 6; 2 x 6 = 12") in lines[-1]


def test_min_pool_size_counts_only_below_pool_size(tmp_path):
    """The janitor stops at pool_size (`cur < pool_pool_size(pool)`), the reserve not
    counted: min_pool_size 9 of a pool of 5 + 5 reserve keeps 5."""
    pooler = _pooler(tmp_path, "default_pool_size = 5\nreserve_pool_size = 5\n"
                     "min_pool_size = 9")
    assert pooler_contribution(pooler).total == 2 * 10
    found = pooler_contribution(pooler, _topo(pooler, _client(pods=1, size=2)))
    assert found.total == 2 * 5  # max(2, min(9, 5)), within 5 + 5
    assert "max(2 (its clients' connections), 5 (min_pool_size 9, pgbouncer.ini:8, only " \
        "below pool_size 5))" in found.note


def test_the_clients_bound_keeps_max_db_connections_per_database(tmp_path):
    """A database capped by max_db_connections holds no more than its cap however many
    clients ask: 8 asked of db1 (max_db_connections 5) and 3 of db2 are 5 + 3 a
    process, not 8 + 3."""
    (tmp_path / "pgbouncer.ini").write_text(
        "[databases]\ndb1 = host=pg dbname=db1 max_db_connections=5\n"
        "db2 = host=pg dbname=db2\n[pgbouncer]\npool_mode = transaction\n"
        "default_pool_size = 20\n")
    ini = read_pgbouncer_ini(Root.of(tmp_path), "pgbouncer.ini",
                             version=BouncerVersion(major=1, minor=18))
    assert not ini.problems, ini.problems
    pooler = pooler_from_ini(ini, id="pgb", name="pgbouncer", replicas=Term(
        label="replicas", value=2, source=Source(path="pgb.yaml", line=3)))
    pooler.server_id = "pg"
    pooler.pairs = [("db1", "u1"), ("db2", "u1")]
    assert pooler_contribution(pooler).total == 2 * (5 + 20)
    one = _client(name="a", pods=1, size=8)
    other = _client(name="b", pods=1, size=3, route=Route(
        host="pgbouncer", dbname="db2", user="u1", source=Source(path="b.yaml", line=9)))
    found = pooler_contribution(pooler, _topo(pooler, one, other))
    assert found.total == 2 * (5 + 3)
    assert "capped by max_db_connections / max_user_connections: 8; 2 x 8 = 16" in found.note


def test_more_clients_than_pools_keep_the_pools_maximum(tmp_path):
    pooler = _pooler(tmp_path)
    found = pooler_contribution(pooler, _topo(pooler, _client(pods=10, size=10)))
    assert found.total == 40 and found.op != "min"  # the pools bind: unchanged


def test_no_bound_when_a_client_is_not_known_or_the_pooler_is_reachable_from_outside(
        tmp_path):
    pooler = _pooler(tmp_path)
    unknown = _client(name="other", unknown="pool size set by a Secret not held")
    unbounded = _client(name="other", bound="unbounded")
    unnamed = _client(name="other", route=Route(host="pgbouncer", source=Source(
        path="app.yaml", line=9)))
    for topo in (_topo(pooler, _client(), unknown), _topo(pooler, _client(), unbounded),
                 _topo(pooler, _client(), unnamed), _topo(pooler, _client(), exposed=True),
                 _topo(pooler)):
        assert pooler_contribution(pooler, topo).total == 40, topo.clients
    reuse = _pooler(tmp_path, "so_reuseport = 1")
    assert pooler_contribution(reuse, _topo(reuse, _client())).total == 40


def test_the_auth_query_pools_are_bounded_by_the_logins(tmp_path):
    pooler = _pooler(tmp_path, "auth_user = authu\nauth_query = SELECT 1")
    found = pooler_contribution(pooler, _topo(pooler, _client(pods=2, size=3)))
    # db1/u1 bounded by its clients (6 a process); the auth pool (db1, authu) by the
    # logins at once: one per client connection at most (6 a process), not 20 each
    assert found.total == 2 * 6 + 2 * 6
    found = pooler_contribution(pooler, _topo(pooler, _client(pods=10, size=3)))
    assert found.total == 2 * 20 + 2 * 20 and found.op != "min"  # 30 > 20: the pools


def test_pool_size_0_is_no_limit_from_pgbouncer_1_24(tmp_path):
    old = _pooler(tmp_path, "default_pool_size = 0\nreserve_pool_size = 5\n"
                  "reserve_pool_timeout = 1", version=(1, 23))
    assert pooler_contribution(old).total == 2 * 5  # its reserve only, before 1.24
    bare = _pooler(tmp_path, "default_pool_size = 0", version=(1, 23))
    # one for the pool's first login (launch_new_connection before welcome_msg_ready)
    assert pooler_contribution(bare).total == 2 * 1
    new = _pooler(tmp_path, "default_pool_size = 0", version=(1, 24))
    floor = pooler_contribution(new)
    assert floor.total == 2  # counted as 1 per process: a floor the budget says
    assert "no limit at all" in contribution_lines(floor)[2]
    budget = server_budget(_topo(new).servers[0], _topo(new, _client(unknown="unread")))
    assert budget.unbounded_clients == ["pgbouncer"] and not budget.fits
    found = pooler_contribution(new, _topo(new, _client(pods=2, size=3)))
    assert found.total == 2 * 6  # what its clients ask for, on each process
    assert found.op == "+" and "a pool has no limit (pool_size 0)" in found.note
    budget = server_budget(_topo(new).servers[0], _topo(new, _client(pods=2, size=3)))
    assert budget.unbounded_clients == [] and budget.peak == 12
    capped = _pooler(tmp_path, "default_pool_size = 0\nmax_db_connections = 7",
                     version=(1, 24))
    assert pooler_contribution(capped).total == 2 * 7  # max_db_connections still caps it


def test_no_bound_when_a_client_lands_in_a_pool_the_count_does_not_hold(tmp_path):
    pooler = _pooler(tmp_path)
    pooler.pairs = []  # the declared pair (db1, *), not the client's (db1, u1)
    assert pooler_contribution(pooler, _topo(pooler, _client())).total == 40


def test_client_contributions_are_the_budgets_own(tmp_path):
    pooler = _pooler(tmp_path)
    clients = [_client(pods=2, size=3), _client(name="b", pods=1, size=2)]
    expected = sum(c.total for c in client_contributions(clients))
    assert expected == 8
    assert pooler_contribution(pooler, _topo(pooler, *clients)).total == 2 * 8


def _pgbouncer(name: str, upstream: str, pool_size: int) -> str:
    """A PgBouncer Deployment (2 replicas, Recreate) with its Service and its
    pgbouncer.ini ConfigMap: database shop at host `upstream`."""
    return f"""
        apiVersion: v1
        kind: Service
        metadata: {{name: {name}}}
        spec: {{selector: {{app: {name}}}}}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: {name}-config}}
        data:
          pgbouncer.ini: |
            [databases]
            shop = host={upstream} dbname=shop
            [pgbouncer]
            pool_mode = transaction
            default_pool_size = {pool_size}
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: {name}}}
        spec:
          replicas: 2
          strategy: {{type: Recreate}}
          template:
            metadata: {{labels: {{app: {name}}}}}
            spec:
              containers:
                - name: pgbouncer
                  image: bitnami/pgbouncer:1.18.0
                  volumeMounts: [{{name: config, mountPath: /bitnami/pgbouncer/conf}}]
              volumes: [{{name: config, configMap: {{name: {name}-config}}}}]
        """


POOLER_TREE = {
    "k8s/pgbouncer.yaml": _pgbouncer("pgbouncer", "db port=5432", 30),
    "k8s/app.yaml": """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: api}
        spec:
          replicas: 3
          strategy: {type: Recreate}
          template:
            spec:
              containers:
                - name: api
                  image: acme/api:1.0
                  env:
                    - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://pgbouncer:6432/shop?prepareThreshold=0"}
                    - {name: SPRING_DATASOURCE_USERNAME, value: api}
                    - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "5"}
        """,
}


def test_a_repository_budget_counts_the_pooler_at_its_clients_connections(tmp_path):
    from tests.tree_helpers import POSTGRES_DB

    root = write(tmp_path / "repo", {**POOLER_TREE, "k8s/db.yaml": POSTGRES_DB})
    result = run_check([root], CheckOptions(cache=False), load_rules())
    budget = next(b for b in result.budgets if b.server == "db")
    pooler = next(c for c in budget.contributions if c.who == "pgbouncer")
    assert pooler.total == 2 * 15  # 3 pods x 5 on each of 2 processes, not 2 x 30 = 60
    assert budget.peak == 30 and budget.fits


def test_a_forced_user_entry_no_client_opens_keeps_its_min_pool_size_from_1_21(tmp_path):
    """PgBouncer 1.21 (commit dd7a06f0, #947) creates the pool of a forced-user entry
    with a min_pool_size and keeps that many server connections with no client; before,
    a pool is made by a login only. Counted where no client pair opens it."""
    extra = "min_pool_size = 3"
    ini = INI.replace("[pgbouncer]", "reports = host=pg port=5432 dbname=db1 user=svc\n"
                      "[pgbouncer]")

    def pooler(version):
        (tmp_path / "pgbouncer.ini").write_text(ini.format(extra=extra))
        found = read_pgbouncer_ini(Root.of(tmp_path), "pgbouncer.ini",
                                   version=BouncerVersion(major=version[0], minor=version[1]))
        assert not found.problems, found.problems
        p = pooler_from_ini(found, id="pgb", name="pgbouncer", replicas=Term(
            label="replicas", value=2, source=Source(path="pgb.yaml", line=3)))
        p.pairs = [("db1", "u1")]
        return p

    old, new = pooler((1, 20)), pooler((1, 21))
    assert pooler_contribution(old).total == 2 * 20
    found = pooler_contribution(new)
    assert found.total == 2 * (20 + 3)
    assert any(p.who == "reports" for p in found.parts)
    assert "keeps its min_pool_size 3 open with none" in found.note
    # with its clients' bound: db1/u1 at 2 x max(6, 3 kept), reports at 2 x 3 kept
    bounded = pooler_contribution(new, _topo(new, _client(pods=2, size=3)))
    assert bounded.total == 12 + 6
    assert "reports/svc: min(3 (pool maximum), max(0 (no client counted here), 3 " \
        "(min_pool_size 3, pgbouncer.ini:7))) = 3" in bounded.note


def test_a_pr_comparison_keeps_the_pools_terms_when_the_bound_appears(tmp_path):
    """The base without the clients' bound, the head with it: only the bound's own term is
    new, the pools' terms are the same terms (report.compare keys them by who)."""
    from advisor.report.compare import term_changes

    pooler = _pooler(tmp_path)
    server = _topo(pooler).servers[0]
    before = server_budget(server, _topo(pooler, _client(pods=10, size=10)))
    after = server_budget(server, _topo(pooler, _client(pods=2, size=3)))
    assert before.peak == 40 and after.peak == 12
    changed = term_changes(before, after)
    assert [c.label for c in changed] == ["what its clients can ask for"], changed


def _hook(name: str, size: float, user: str = "u1") -> Client:
    from advisor.model import HelmHook

    hook = _client(name=name, pods=1, size=size, route=Route(
        host="pgbouncer", dbname="db1", user=user, source=Source(path="hook.yaml", line=9)))
    hook.kind, hook.release = "Job", "helm:charts/app"
    hook.hook = HelmHook(events=("pre-upgrade",), source=Source(path="hook.yaml", line=4))
    return hook


def test_helm_hooks_count_whole_on_their_pools(tmp_path):
    """Two hooks of one release (the budget runs them one at a time and merges them:
    zip against that list crashed) each count whole on the pool they open: the servers
    a hook's pool opened stay open beside the app's."""
    pooler = _pooler(tmp_path)
    pooler.pairs = [("db1", "u1"), ("db1", "migrator")]
    topo = _topo(pooler, _client(pods=2, size=3), _hook("migrate", 5, "migrator"),
                 _hook("seed", 2, "migrator"))
    found = pooler_contribution(pooler, topo)
    # db1/u1: 6 a process; db1/migrator: 5 + 2 a process; 2 processes
    assert found.total == 2 * 6 + 2 * 7


def test_no_bound_when_a_route_leaves_its_pool_unknown(tmp_path):
    """A route without its database (a driver's default database), or without its user
    where the entry forces none, lands in a pool not known: no bound."""
    pooler = _pooler(tmp_path)
    no_db = _client(name="b", route=Route(host="pgbouncer", user="u1", source=Source(
        path="b.yaml", line=1)))
    no_user = _client(name="b", route=Route(host="pgbouncer", dbname="db1", source=Source(
        path="b.yaml", line=1)))
    for other in (no_db, no_user):
        assert pooler_contribution(pooler, _topo(pooler, _client(), other)).total == 40
    forced = _pooler(tmp_path, "")
    forced.databases = [replace(d, user="svc") for d in forced.databases]
    forced.pairs = [("db1", "svc")]
    topo = _topo(forced, _client(), no_user)  # the entry forces svc: the user is moot
    assert pooler_contribution(forced, topo).total == 2 * (6 + 6)


def test_an_auth_pool_of_no_limit_is_counted_at_the_logins(tmp_path):
    pooler = _pooler(tmp_path, "default_pool_size = 0\nauth_user = authu\n"
                     "auth_query = SELECT 1", version=(1, 24))
    assert "pgbouncer" in server_budget(_topo(pooler).servers[0], _topo(
        pooler, _client(unknown="unread"))).unbounded_clients
    found = pooler_contribution(pooler, _topo(pooler, _client(pods=30, size=2)))
    # 60 client connections: db1/u1 and the lookups each 60 on each of 2 processes
    assert found.total == 2 * 60 + 2 * 60


def test_no_bound_for_a_pooler_another_pooler_connects_through(tmp_path):
    pooler = _pooler(tmp_path)
    pooler.fed_by = ["pgbouncer-edge"]
    assert pooler_contribution(pooler, _topo(pooler, _client())).total == 40


CHAINED = {"k8s/edge.yaml": _pgbouncer("edge", "pgbouncer port=6432", 40)}


def test_a_pooler_behind_another_pooler_is_not_bounded_by_its_clients(tmp_path):
    """edge's [databases] lead to pgbouncer: edge's server connections are pgbouncer's
    clients, counted nowhere as such, so pgbouncer keeps its pools' arithmetic."""
    from tests.tree_helpers import POSTGRES_DB

    root = write(tmp_path / "repo", {**POOLER_TREE, **CHAINED, "k8s/db.yaml": POSTGRES_DB})
    result = run_check([root], CheckOptions(cache=False), load_rules())
    budget = next(b for b in result.budgets if b.server == "db")
    pooler = next(c for c in budget.contributions if c.who == "pgbouncer")
    assert pooler.total == 60 and pooler.op != "min"  # 2 replicas x default_pool_size 30


def test_an_auth_pool_alone_of_no_limit_makes_the_pooler_a_floor(tmp_path):
    """Only the auth pool without a size (auth_user's [users] entry pool_size=0 on 1.24):
    its part says so behind the lookup's words."""
    from advisor.model import PoolerUser

    pooler = _pooler(tmp_path, "auth_user = authu\nauth_query = SELECT 1", version=(1, 24))
    pooler.users = [PoolerUser(name="authu", pool_size=Term(
        label="pool_size", value=0, source=Source(path="pgbouncer.ini", line=9)),
        location=Location(path="pgbouncer.ini", line=9))]
    budget = server_budget(_topo(pooler).servers[0], _topo(pooler, _client(
        unknown="unread")))
    assert "pgbouncer" in budget.unbounded_clients, budget


def test_a_pooler_in_front_counts_among_the_client_connections_of_the_next(tmp_path):
    """edge (2 replicas x default_pool_size 40 = 80 server connections) connects through
    pgbouncer: 80 + api's 15 = 95 client connections > 2 x max_client_conn 40 (PA201),
    where api's 15 alone fit."""
    from tests.tree_helpers import POSTGRES_DB

    files = {**POOLER_TREE, **CHAINED, "k8s/db.yaml": POSTGRES_DB}
    files["k8s/pgbouncer.yaml"] = files["k8s/pgbouncer.yaml"].replace(
        "default_pool_size = 30", "default_pool_size = 30\n            max_client_conn = 40")
    root = write(tmp_path / "repo", files)
    result = run_check([root], CheckOptions(cache=False), load_rules())
    (found,) = [f for f in result.findings if f.code == "PA201"]
    assert found.message.startswith("pgbouncer: 95 client connections at peak > 80 "
                                    "max_client_conn x replicas"), found.message
    assert "80 (edge)" in found.detail
    budget = next(b for b in result.budgets if b.server == "db")
    # edge has no client: the users it logs in as are not known, its 80 a floor
    assert any(s.startswith("pgbouncer client side: 95 client connections at peak "
                            "(api 15 + edge >= 80) > 80") for s in budget.client_sides), \
        budget.client_sides
