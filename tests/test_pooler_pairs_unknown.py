"""A pooler whose clients' (database, user) pairs are unknown (audit 5, D1, D4, D7).

tariron/saasodoo's CloudNativePG Pooler: six services behind a `*` fallback whose pairs
were not read were counted as one pool; the server said "cannot tell", printed
`>= 187 ... <= 197 usable`, and no rule reported anything, while one pool per service
is over 450. The budget's floor is unchanged; PA106 names the pairs and the worst case.
(saasodoo's DB_NAME beside a lone POSTGRES_HOST is read since 53241b2: the services here
name no database at all.)
"""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.report import text
from advisor.rules import load_rules
from tests.tree_helpers import write

CLUSTER = """
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: pg, namespace: app}
spec:
  instances: 1
  imageName: ghcr.io/cloudnative-pg/postgresql:17.2
  postgresql:
    parameters: {max_connections: "200"}
---
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-pooler-rw, namespace: app}
spec:
  cluster: {name: pg}
  type: rw
  instances: 2
  pgbouncer:
    poolMode: transaction
    parameters: {default_pool_size: "25", idle_transaction_timeout: "60"EXTRA}
"""


def service(name: str, env: str = "") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: app}}
spec:
  replicas: 1
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
      - name: c
        image: example/{name}:1
        env:
        - {{name: POSTGRES_HOST, value: pg-pooler-rw}}
{env}"""


def tree(root: Path, names: list[str], extra: str = "", named: dict[str, str] | None = None,
         connections: int = 5) -> None:
    """One Deployment per name, each with `connections` (5); `named` gives some of them
    POSTGRES_DB and POSTGRES_USER (their pair known). With every pair known, the pooler
    opens no more than its clients ask for (advisor.budget.demand): 80 each fills its
    pools (3 processes x 25)."""
    files = {"k8s/db.yaml": CLUSTER.replace("EXTRA", extra),
             ".pool-advisor.toml": "".join(
                 f'[[workloads]]\nname = "{n}"\nconnections = {connections}\n'
                 for n in names)}
    for n in names:
        env = ""
        if named and n in named:
            env = (f"        - {{name: POSTGRES_DB, value: {named[n]}}}\n"
                   f"        - {{name: POSTGRES_USER, value: {named[n]}_user}}\n")
        files[f"k8s/{n}.yaml"] = service(n, env)
    write(root, files)


def _check(root: Path):
    return run_check([str(root)], CheckOptions())


def _pairs(result):
    return [f for f in result.findings if f.code == "PA106" and f.subject.endswith("|pairs")]


def test_unknown_pairs_behind_a_star_pooler_are_a_warning_with_the_worst_case(tmp_path):
    """The floor counts the three services as one pool (*/*) beside the auth_query pool:
    3 processes x 50 = 150 <= 197, and `check` said "no findings", exit 0. Each service
    a pair of its own is three pools: 3 x (3 x 25 + 25) = 300 > 197."""
    tree(tmp_path, ["a", "b", "c"])
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.peak == 150 and budget.peak_is_floor
    (found,) = _pairs(result)
    assert found.severity.value == "warning"
    assert found.message.startswith(
        "pooler pg-pooler-rw: the (database, user) of 3 clients is unknown (a, b, c), so its "
        "server side counts them as one pool (*/*): 150 on pg, a floor. If each uses a pair "
        "of its own, each opens a pool of its own of 25 (default_pool_size, k8s/db.yaml:20) "
        "(capped per database by max_db_connections, per user by max_user_connections), "
        "and the pooler may open 300 (3 PgBouncer processes x 100): pg's peak would be "
        "300 > 197 usable, OVER by 103.")
    assert "POSTGRES_DB and POSTGRES_USER beside POSTGRES_HOST" in found.message
    assert "worst case (each a pair of its own):" in found.detail
    assert "a's database/a's user: 25 (default_pool_size, k8s/db.yaml:20) = 25" in found.detail


def test_the_worst_case_is_capped_like_the_budget(tmp_path):
    """max_db_connections caps each database of its own; the reserve is counted where
    reserve_pool_timeout lets PgBouncer open it."""
    tree(tmp_path, ["a", "b"], extra=', reserve_pool_size: "5", max_db_connections: "20"')
    result = _check(tmp_path)
    (found,) = _pairs(result)
    # per process: a 20 + b 20 (each min(25 + 5, 20)) + the auth pool min(30, 20) = 60
    assert "counts them as one pool (*/*): 120 on pg" in found.message
    assert "of 25 (default_pool_size, k8s/db.yaml:20) + 5 (reserve_pool_size, " \
           "k8s/db.yaml:20) = 30 (capped" in found.message
    assert "may open 180 (3 PgBouncer processes x 60): pg's peak would be 180 <= 197 " \
           "usable." in found.message


def test_known_pairs_are_counted_and_each_unknown_one_adds_a_pool(tmp_path):
    """Two services name their pair, one does not: the floor counts the two known pools
    (and the auth pool); the worst case adds the third as a pool of its own."""
    tree(tmp_path, ["a", "b", "c"], named={"a": "shop", "b": "billing"})
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.unknown_pairs == ["pg-pooler-rw: (database, user) of 1 client unknown (c)"]
    (found,) = _pairs(result)
    assert ("the (database, user) of 1 client is unknown (c), so its server side counts "
            "them as 2 pools (shop/shop_user, billing/billing_user): 225 on pg") in found.message
    assert "may open 300 (3 PgBouncer processes x 100)" in found.message


def test_no_finding_when_every_pair_is_known(tmp_path):
    tree(tmp_path, ["a", "b"], named={"a": "shop", "b": "billing"})
    assert _pairs(_check(tmp_path)) == []


def test_a_floor_peak_is_never_printed_as_at_most_usable(tmp_path):
    """D4: `peak: >= 150 (...) <= 197 usable` under a "cannot tell" verdict read as fits."""
    tree(tmp_path, ["a", "b", "c"])
    out = text.render(_check(tmp_path), load_rules())
    (peak,) = [x for x in out.splitlines() if x.startswith("  peak: ")]
    assert peak.endswith("each may be a pool more), cannot tell against 197 usable")
    assert "<= 197 usable" not in out.split("\n\n")[0]


def test_verbose_prints_a_fitting_pooler_client_side(tmp_path):
    """D7: a pooler whose client side fits printed nothing of it, even with -v."""
    tree(tmp_path, ["a", "b", "c"], named={"a": "shop", "b": "billing", "c": "crm"})
    result = _check(tmp_path)
    line = ("  pg-pooler-rw client side: 15 client connections at peak (a 5 + b 5 + c 5) "
            "<= 200 = 100 (max_client_conn, default: ")
    assert line in text.render(result, load_rules(), verbose=True)
    assert "client side" not in text.render(result, load_rules())


IDLE_POOLER = """
---
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pg-pooler-idle, namespace: app}
spec:
  cluster: {name: pg}
  type: rw
  instances: 2
  pgbouncer:
    poolMode: transaction
    parameters: {default_pool_size: "25", idle_transaction_timeout: "60"}
"""


def test_an_over_verdict_that_rests_on_the_auth_query_pool_says_so(tmp_path):
    """D5 (theepicsaxguy's Mastodon: 132 > 97, 66 without the auth_query pool): two known
    pools and the auth pool, 3 x 75 = 225 > 197; without the auth pool 150. The
    arithmetic is unchanged, the peak line says what the verdict rests on."""
    tree(tmp_path, ["a", "b"], named={"a": "shop", "b": "billing"}, connections=80)
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.peak == 225
    assert budget.rests_on == ["150 without the auth_query pools (75), which fill only when "
                               "as many logins look a password up at once"]
    assert ("peak: 225 > 197 usable (within it without a term counted at its maximum: 150 "
            "without the auth_query pools (75)") in text.render(result, load_rules())


def test_an_over_verdict_that_rests_on_a_pooler_no_client_uses_says_so(tmp_path):
    """D5 (Mastodon's replica pooler, PGO's example): a PgBouncer no client connects to
    is counted at its pools' capacity."""
    tree(tmp_path, ["a"], named={"a": "shop"}, connections=80)
    (tmp_path / "k8s/db.yaml").write_text(CLUSTER.replace("EXTRA", "") + IDLE_POOLER)
    (budget,) = _check(tmp_path).budgets
    assert budget.peak == 300
    assert budget.rests_on == [
        "150 without the auth_query pools (150), which fill only when as many logins look "
        "a password up at once",
        "150 without pg-pooler-idle (150), to which no client in the repository connects"]
    # over whatever one term adds: nothing said
    tree(tmp_path, ["a", "b", "c"], named={"a": "shop", "b": "billing", "c": "crm"},
         connections=80)
    (tmp_path / "k8s/db.yaml").write_text(CLUSTER.replace("EXTRA", "") + IDLE_POOLER)
    (budget,) = _check(tmp_path).budgets
    assert budget.peak == 450 and budget.rests_on == []


def test_the_json_report_carries_the_notes_and_reads_them_back(tmp_path):
    """rests_on and client_sides are in the JSON report (schema), and a report read back
    prints the same arithmetic as the run that wrote it."""
    import json

    from advisor.report import json as json_report

    tree(tmp_path, ["a", "b"], named={"a": "shop", "b": "billing"}, connections=80)
    result = _check(tmp_path)
    rendered = json_report.render(result, load_rules())
    (data,) = json.loads(rendered)["budgets"]
    assert data["rests_on"] == result.budgets[0].rests_on != []
    assert data["client_sides"][0].startswith("pg-pooler-rw client side: 160 client ")
    assert "(within it without a term counted at its maximum: 150" in data["arithmetic"][-1]
    (back,) = json_report.load(rendered).budgets
    assert back.rests_on == result.budgets[0].rests_on
