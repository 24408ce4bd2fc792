"""A PgBouncer's server side is bounded by what its clients can ask for (advisor.budget.
demand): PgBouncer opens a server connection only for a waiting client, one at a time
(src/janitor.c per_loop_activate, src/objects.c launch_new_connection), plus the
min_pool_size connections its janitor keeps (check_pool_size). And a pool_size of 0 is
no limit from PgBouncer 1.24 (pgbouncer commit bed917b4, #1227), where it counted 0.
The oracle for the bound: tests/test_pgbouncer_demand_oracle.py."""

from __future__ import annotations

from pathlib import Path

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
    assert found.total == 6  # 2 pods x 3: PgBouncer opens no more
    lines = contribution_lines(found)
    assert lines[0].startswith("pgbouncer: min(40 (pgbouncer), 6 (what its clients can ask "
                               "for: 6 client connections, default: PgBouncer opens a server "
                               "connection only for a client waiting for one")
    assert "x 20 (server connections per PgBouncer process" in lines[1]  # its own arithmetic
    assert "no more server connections than its clients hold at once" in found.note


def test_min_pool_size_connections_are_added_per_process(tmp_path):
    pooler = _pooler(tmp_path, "min_pool_size = 4")
    found = pooler_contribution(pooler, _topo(pooler, _client(pods=2, size=3)))
    assert found.total == 6 + 2 * 4
    assert "+ 8 kept by min_pool_size" in found.factors[0].label


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
    # db1/u1 bounded by its clients (6); the auth pool (db1, authu) by the logins at
    # once: one per client connection at most (6), not 2 x 20
    assert found.total == 6 + 6
    assert "+ 6 in auth_query pools" in found.factors[0].label
    found = pooler_contribution(pooler, _topo(pooler, _client(pods=10, size=3)))
    assert found.total == 30 + 30  # db1/u1 min(2 x 20, 30), the auth pool the same


def test_pool_size_0_is_no_limit_from_pgbouncer_1_24(tmp_path):
    old = _pooler(tmp_path, "default_pool_size = 0\nreserve_pool_size = 5\n"
                  "reserve_pool_timeout = 1", version=(1, 23))
    assert pooler_contribution(old).total == 2 * 5  # its reserve only, before 1.24
    new = _pooler(tmp_path, "default_pool_size = 0", version=(1, 24))
    floor = pooler_contribution(new)
    assert floor.total == 2  # counted as 1 per process: a floor the budget says
    assert "no limit at all" in contribution_lines(floor)[2]
    budget = server_budget(_topo(new).servers[0], _topo(new, _client(unknown="unread")))
    assert budget.unbounded_clients == ["pgbouncer"] and not budget.fits
    found = pooler_contribution(new, _topo(new, _client(pods=2, size=3)))
    assert found.total == 6  # what its clients ask for
    assert found.op == "+" and "a pool has no limit (pool_size 0)" in found.note
    budget = server_budget(_topo(new).servers[0], _topo(new, _client(pods=2, size=3)))
    assert budget.unbounded_clients == [] and budget.peak == 6
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
    assert pooler_contribution(pooler, _topo(pooler, *clients)).total == expected == 8


POOLER_TREE = {
    "k8s/pgbouncer.yaml": """
        apiVersion: v1
        kind: Service
        metadata: {name: pgbouncer}
        spec: {selector: {app: pgbouncer}}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: pgbouncer-config}
        data:
          pgbouncer.ini: |
            [databases]
            shop = host=db port=5432 dbname=shop
            [pgbouncer]
            pool_mode = transaction
            default_pool_size = 30
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: pgbouncer}
        spec:
          replicas: 2
          strategy: {type: Recreate}
          template:
            metadata: {labels: {app: pgbouncer}}
            spec:
              containers:
                - name: pgbouncer
                  image: bitnami/pgbouncer:1.18.0
                  volumeMounts: [{name: config, mountPath: /bitnami/pgbouncer/conf}]
              volumes: [{name: config, configMap: {name: pgbouncer-config}}]
        """,
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
    assert pooler.total == 15  # 3 pods x 5, not 2 replicas x 30 = 60
    assert budget.peak == 15 and budget.fits


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
    # with its clients' bound: db1/u1 at 2 x 3 (+ 2 x 3 kept), reports at 2 x 3
    assert pooler_contribution(new, _topo(new, _client(pods=2, size=3))).total == 6 + 6 + 6


def test_a_pr_comparison_keeps_the_pools_terms_when_the_bound_appears(tmp_path):
    """The base without the clients' bound, the head with it: only the bound's own term is
    new, the pools' terms are the same terms (report.compare keys them by who)."""
    from advisor.report.compare import term_changes

    pooler = _pooler(tmp_path)
    server = _topo(pooler).servers[0]
    before = server_budget(server, _topo(pooler, _client(pods=10, size=10)))
    after = server_budget(server, _topo(pooler, _client(pods=2, size=3)))
    assert before.peak == 40 and after.peak == 6
    changed = term_changes(before, after)
    assert [c.label for c in changed] == [
        "what its clients can ask for: 6 client connections"], changed
