"""`[[workloads]] database` and `user`: the (database, user) a workload connects as
where what it reads leaves them out (a URL or Secret not held). Behind a PgBouncer `*`
fallback its pool is then known: no PA106 unknown pairs, and the pooler's server side is
its pools (and no more than its clients ask for: advisor.budget.demand)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.test_pooler_pairs_unknown import _pairs, tree


def _declare(root, entries: str) -> None:
    toml = root / ".pool-advisor.toml"
    toml.write_text(toml.read_text() + entries)


def _extend(root, name: str, lines: str) -> None:
    """The tree's [[workloads]] entry of `name` (connections = 5) with `lines` added."""
    toml = root / ".pool-advisor.toml"
    entry = f'name = "{name}"\nconnections = 5\n'
    toml.write_text(toml.read_text().replace(entry, entry + lines))


def _pooler_parts(result):
    """The one budget, and the database parts of the pooler's own arithmetic."""
    (budget,) = result.budgets
    (pooler,) = [c for c in budget.contributions if c.who == "pg-pooler-rw"]
    return budget, pooler, (pooler.parts[0] if pooler.op == "min" else pooler).parts


def test_a_declared_pair_is_the_pool_the_workload_opens(tmp_path):
    tree(tmp_path, ["a", "b", "c"], named={"a": "shop", "b": "billing"})
    before = run_check([str(tmp_path)], CheckOptions())
    assert _pairs(before) and before.budgets[0].unknown_pairs
    _extend(tmp_path, "c", 'database = "crm"\nuser = "crm_user"\n')
    result = run_check([str(tmp_path)], CheckOptions())
    budget, pooler, parts = _pooler_parts(result)
    assert not _pairs(result) and budget.unknown_pairs == []
    assert "crm" in {d.who for d in parts}
    # every pair known: no more than the clients ask for, 15 connections and 15 lookups
    # on each of 3 PgBouncer processes (2 + 1 surge), not 225
    assert pooler.total == 3 * (15 + 15) and budget.peak == 90
    assert any(n.startswith("Deployment/app/c: connects as database crm, user crm_user "
                            "where what it reads leaves them out (declared, "
                            ".pool-advisor.toml:") for n in result.notices), result.notices


def test_a_pair_read_from_the_files_is_kept_and_the_clash_said(tmp_path):
    tree(tmp_path, ["a"], named={"a": "shop"})
    _extend(tmp_path, "a", 'database = "other"\n')
    result = run_check([str(tmp_path)], CheckOptions())
    _budget, _pooler, parts = _pooler_parts(result)
    assert {d.who for d in parts} == {"shop", "postgres"}  # as read, and auth's
    assert any("reads database 'shop' (k8s/a.yaml:" in n and "kept as read" in n
               for n in result.notices), result.notices


def test_a_declared_client_with_no_workload_gets_its_pair(tmp_path):
    tree(tmp_path, ["a"], named={"a": "shop"})
    _declare(tmp_path, '[[workloads]]\nname = "cron"\nconnections = 2\nreplicas = 1\n'
                       'target = "pg-pooler-rw"\ndatabase = "shop"\nuser = "cron_user"\n')
    result = run_check([str(tmp_path)], CheckOptions())
    _budget, _pooler, parts = _pooler_parts(result)
    shop = next(d for d in parts if d.who == "shop")
    assert {p.who for p in shop.parts} == {"shop/shop_user", "shop/cron_user"}
    assert not _pairs(result)


def test_the_declared_pair_is_the_main_routes_not_a_further_ones():
    """Airflow's metadata database and its Celery result backend, both without their
    pair: the declaration names the first; the second is left as read (its pair still
    unknown, still said)."""
    from advisor.config.schema import WorkloadDecl
    from advisor.link.clients import _declared_pair
    from advisor.model import Pool, Route, Source, Term

    main = Route(host="pgbouncer", source=Source(path="a.yaml", line=3))
    further = Route(host="pgbouncer-results", source=Source(path="a.yaml", line=4))
    pools = [Pool(label="SQLAlchemy", size=Term(label="pool_size", value=5, source=Source(
        path="a.cfg", line=1)), route=main),
        Pool(label="Celery", size=Term(label="pool", value=2, source=Source(
            path="a.cfg", line=2)), route=further)]
    decl = WorkloadDecl(name="airflow", database="airflow", user="airflow_user")
    notices: list[str] = []
    route, pools, extra = _declared_pair(decl, ".pool-advisor.toml", "Deployment/airflow",
                                         main, pools, [further], notices)
    assert (route.dbname, route.user) == ("airflow", "airflow_user")
    assert (pools[0].route.dbname, pools[0].route.user) == ("airflow", "airflow_user")
    assert pools[1].route == further and extra == [further]


SG_DBS = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: NAME}
spec:
  replicas: 1
  serviceName: NAME
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers:
        - name: pgsql
          image: postgres:16
---
apiVersion: v1
kind: Service
metadata: {name: NAME}
spec:
  selector: {app: NAME}
  ports: [{port: 5432}]
"""
SG_FRONTEND = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: frontend}
spec:
  replicas: 2
  selector: {matchLabels: {app: frontend}}
  template:
    metadata: {labels: {app: frontend}}
    spec:
      containers:
        - name: frontend
          image: example/frontend:1
          env:
            - {name: PGHOST, value: pgsql}
            - {name: CODEINTEL_PGHOST, value: codeintel-db}
"""


def test_a_declared_target_leaves_the_other_servers_it_reaches_unknown(tmp_path):
    # audit 13d, Sourcegraph's shape: the frontend reads PGHOST and CODEINTEL_PGHOST;
    # declared with connections on codeinsights-db, the two servers its env names lost it
    # ("fits, peak 0"): they now count it as unknown there, a floor (PA106)
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from tests.tree_helpers import write

    write(tmp_path, {"k8s/dbs.yaml": "---\n".join(SG_DBS.replace("NAME", n) for n in (
        "pgsql", "codeintel-db", "codeinsights-db")), "k8s/frontend.yaml": SG_FRONTEND,
        ".pool-advisor.toml": '[[workloads]]\nname = "frontend"\nconnections = 30\n'
                              'target = "codeinsights-db"\n'})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    budgets = {b.server: b for b in result.budgets}
    assert budgets["codeinsights-db"].peak == (2 + 1) * 30
    for other in ("pgsql", "codeintel-db"):
        assert budgets[other].peak_is_floor and not budgets[other].fits, other
        assert budgets[other].peak == 2 + 1
    unknown = [f.message for f in result.findings if f.code == "PA106"]
    assert any("target = 'codeinsights-db', .pool-advisor.toml:4) counts its connections "
               "to codeinsights-db only" in m and "codeintel-db" in m for m in unknown)
