"""advise proposes a transaction-mode PgBouncer where direct clients ask for more than
twice what the server should run at once (issue 17 item 1): a manifest to add and the
clients' hosts pointed at it, in a diff `git apply` takes; its pgbouncer.ini is one the
real PgBouncer runs with the settings the budget counted."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.realbouncer import have_pgbouncer, running_pgbouncer
from tests.realpg import have_postgres, running_postgres
from tests.test_advise import advise_json, cli, copy_fixture

NEW = "k8s/pgbouncer-postgres.yaml"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_pgbouncer_proposed_applied_and_check_passes(tmp_path: Path):
    repo = copy_fixture("acme-shop", tmp_path)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    (server,) = advise_json(str(repo))
    new = next(p for p in server["proposals"] if p["new_file"])
    assert new["new_file"]["path"] == NEW and new["key"] == "PgBouncer (new)"
    # 800 asked > 2 x 87 (90% of 97 usable): 2 replicas + 1 during its own rollout
    # (maxSurge 1) x default_pool_size 29 = 87
    assert ("2 replicas x 1 pool(s) x default_pool_size 29 = 58 server connections, 87 "
            "during its own rollout") in new["reason"]
    host = next(p for p in server["proposals"] if p["key"] == "database host")
    assert host["new"] == "pgbouncer-postgres.shop.svc.cluster.local"
    assert server["fits_after"] and server["peak_after"] == 87

    r = cli("advise", str(repo), "--diff")
    assert r.returncode == 0, r.stderr  # check passes on the trial copy with the edits
    diff = r.stdout[r.stdout.index("--- a/"):]
    (tmp_path / "p.diff").write_text(diff)
    _git(repo, "apply", "--check", str(tmp_path / "p.diff"))
    assert not (repo / NEW).exists()  # --diff writes nothing

    r = cli("advise", str(repo), "--write", "--yes")
    assert r.returncode == 0, r.stderr
    assert f"added {NEW}" in r.stderr
    after = cli("check", str(repo))
    assert after.returncode == 0, after.stdout
    # a second run does not write over the file it added
    assert "PgBouncer (new)" not in [p["key"] for s in advise_json(str(repo))
                                     for p in s["proposals"]]


@pytest.mark.pgbouncer
@pytest.mark.skipif(not (have_pgbouncer() and have_postgres()),
                    reason="needs PostgreSQL and PgBouncer")
def test_the_proposed_ini_runs_on_the_real_pgbouncer(tmp_path: Path):
    (server,) = advise_json(str(copy_fixture("acme-shop", tmp_path)))
    text = next(p for p in server["proposals"] if p["new_file"])["new_file"]["text"]
    ini = text.split("pgbouncer.ini: |\n", 1)[1].split("\n---", 1)[0]
    ini = "\n".join(line[4:] for line in ini.splitlines()) + "\n"
    with running_postgres() as pg:
        ini = ini.replace("host=postgres.shop.svc.cluster.local port=5432",
                          f"host=127.0.0.1 port={pg.port}")
        # the harness listens on loopback with its own auth file; Debian's 1.18 has no
        # max_prepared_statements (1.21+), which the manifest's image provides
        ini = "\n".join(line for line in ini.splitlines()
                        if not line.startswith(("listen_", "auth_", "max_prepared")))
        with running_pgbouncer(ini, users=["postgres"]) as bouncer:
            config = {r["key"]: r["value"] for r in bouncer.admin_dicts("SHOW CONFIG")}
            assert bouncer.admin("SHOW VERSION")
            with __import__("psycopg").connect(bouncer.dsn("postgres", "postgres"),
                                               autocommit=True) as conn:
                assert conn.execute("select 1").fetchone()[0] == 1
    assert config["pool_mode"] == "transaction"
    assert config["default_pool_size"] == "29"
    assert config["max_client_conn"] == "960"
    assert config["query_wait_timeout"] == "25"
    assert config["idle_transaction_timeout"] == "60"


def test_helm_values_are_edited_where_templates_read_them(tmp_path: Path):
    """advise takes --values like check; a pool size a template interpolates is edited
    in the values file line it was traced to, and check passes on the result."""
    repo = copy_fixture("helm-chart-prod", tmp_path)
    pg = repo / "k8s/postgres.yaml"
    pg.write_text(pg.read_text().replace("max_connections = 300", "max_connections = 150"))
    values = str(repo / "charts/api/values-prod.yaml")
    args = (str(repo / "charts/api"), str(repo / "k8s"), "--values", values, "--no-new-pooler")
    before = cli("check", *args[:-1])
    assert before.returncode == 1 and "PA101" in before.stdout
    (server,) = advise_json(*args)
    edits = {p["edit"]["path"] for p in server["proposals"] if p["edit"]}
    assert edits == {"charts/api/values-prod.yaml"}
    r = cli("advise", *args, "--write", "--yes")
    assert r.returncode == 0, r.stderr
    assert "poolSize: 8" in Path(values).read_text()
    assert cli("check", *args[:-1]).returncode == 0


def test_a_chart_dependencys_server_gets_its_pgbouncer_in_the_charts_templates():
    """A server a chart's dependency makes is cited at its Chart.yaml entry: the proposed
    PgBouncer manifest goes under templates/, where Helm renders it (beside Chart.yaml it
    was never rendered, and the trial check still found the server over)."""
    from advisor.advise.pooler import propose_pooler
    from advisor.budget.slots import server_budget
    from advisor.model import Client, Location, Pool, Route, Server, Source, Term, Topology

    server = Server(id="pg", name="app-postgresql", location=Location(
        path="charts/app/Chart.yaml", line=12), hosts=["app-postgresql"],
        version=Term(label="PostgreSQL", value=16, source=Source(default="test")),
        instances=Term(label="instances", value=1, source=Source(default="test")))
    client = Client(id="Deployment/web", name="web", location=Location(
        path="charts/app/templates/web.yaml"), replicas=Term(
            label="replicas", value=10, source=Source(path="charts/app/values.yaml", line=3)),
        pools=[Pool(label="HikariCP", size=Term(label="maximumPoolSize", value=20, source=Source(
            path="charts/app/values.yaml", line=5)), route=Route(
                host="app-postgresql", dbname="app", user="app", source=Source(
                    path="charts/app/values.yaml", line=7)))],
        route=Route(host="app-postgresql", dbname="app", user="app", source=Source(
            path="charts/app/values.yaml", line=7)),
        target_kind="server", target_id="pg")
    topo = Topology()
    topo.servers.append(server)
    topo.clients.append(client)
    new = propose_pooler(topo, server, server_budget(server, topo), None)
    assert new is not None and new.path == "charts/app/templates/pgbouncer-app-postgresql.yaml"
