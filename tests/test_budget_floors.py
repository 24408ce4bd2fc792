"""A budget whose peak is a floor still counts what is certain (audit G, session 17):
a pod of unknown size holds at least one connection, and a file not read may hold a
client, so neither gives "fits"."""

from __future__ import annotations

import json

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.report import json as json_report
from advisor.report import text
from advisor.rules import load_rules
from tests.rule_pages import load_pages, write_tree

PAGE = next(p for p in load_pages() if p.code == "PA106")


def _check(root):
    return run_check([str(root)], CheckOptions())


def test_pods_of_unknown_size_count_one_connection_each(tmp_path):
    """netbox-chart with both autoscalers: 251 linked pods of unknown size printed
    'peak >= 0 <= 97 usable' and no PA101; each holds at least one connection."""
    tree = dict(PAGE.bad)
    tree["k8s/reports.yaml"] = tree["k8s/reports.yaml"].replace("replicas: 3",
                                                                "replicas: 120")
    write_tree(tmp_path, tree)
    result = _check(tmp_path)
    (budget,) = result.budgets
    # 120 replicas + 30 surge (25% rounded up), 1 connection each at least
    assert budget.peak == 150 and budget.peak_is_floor and not budget.fits
    (over,) = [f for f in result.findings if f.code == "PA101"]
    assert over.message == "db: peak at least 150 connections > 97 usable, over by at least 53"
    (unknown,) = [f for f in result.findings if f.code == "PA106"]
    assert "its 150 pods are counted as 1 connection each in the budget of server db" in (
        unknown.message)
    out = text.render(result, load_rules())
    assert "reports: (120 (Deployment replicas" in out
    assert "pods x unknown connections per pod (at least 1) = >= 150" in out
    assert "peak >= 150 (1 client unknown: reports), OVER by at least 53" in out
    data = json.loads(json_report.render(result, load_rules()))
    assert data["summary"]["over"] == 1 and data["budgets"][0]["peak"] == 150


def test_a_file_not_read_makes_the_peak_a_floor(tmp_path):
    """Superset's chart fork: the templates holding the clients did not parse, and the
    server said 'fits, peak 0 (no client connects)' with JSON fits: true."""
    tree = {"k8s/db.yaml": PAGE.bad["k8s/db.yaml"],
            "k8s/web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
                            "spec:\n  replicas: [3\n"}
    write_tree(tmp_path, tree)
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.unread_files == ["k8s/web.yaml"]
    assert budget.peak == 0 and budget.peak_is_floor and not budget.fits
    out = text.render(result, load_rules())
    assert ("peak >= 0 (1 file not read (PA901), whose clients may connect here: "
            "k8s/web.yaml), cannot tell whether it fits the 97 usable") in out
    data = json.loads(json_report.render(result, load_rules()))
    assert data["budgets"][0]["unread_files"] == ["k8s/web.yaml"]
    assert data["budgets"][0]["fits"] is False and data["summary"]["cannot_tell"] == 1


def test_a_postgresql_conf_the_server_refuses_is_not_a_file_left_unread(tmp_path):
    """PA109 reports it; the budget is not made a floor by it."""
    tree = dict(PAGE.bad)
    del tree["k8s/reports.yaml"]
    tree["k8s/conf.yaml"] = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db-conf\n"
                             "data:\n  postgresql.conf: |\n    max_connections = 'lots'\n")
    write_tree(tmp_path, tree)
    (budget,) = _check(tmp_path).budgets
    assert budget.unread_files == []


def test_a_suspended_cronjob_runs_no_pod_and_leaves_no_floor(tmp_path):
    """zammad-helm's reindex CronJob (suspend: true) was counted as a client, 50
    connections once its pool was read, or a floor while it was not."""
    tree = dict(PAGE.bad)
    tree["k8s/reports.yaml"] = (
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: reports\nspec:\n"
        "  schedule: '0 * * * *'\n  suspend: true\n  jobTemplate:\n    spec:\n"
        "      template:\n        spec:\n          containers:\n"
        "            - name: app\n              image: acme/reports:1.0\n"
        "              env:\n                - name: DATABASE_URL\n"
        "                  value: postgres://reports@db:5432/shop\n")
    write_tree(tmp_path, tree)
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.fits and budget.peak == 0 and budget.unknown_clients == []
    (c,) = budget.contributions
    assert c.factors[0].label == "CronJob suspended: no Job runs"
    assert (c.factors[0].source.path, c.factors[0].source.line) == ("k8s/reports.yaml", 7)
    assert not [f for f in result.findings if f.code == "PA106"]


def test_an_unbounded_pool_counts_at_least_one_per_process():
    """A pool with no limit whose reader could not say what a process reaches (Go
    database/sql with MaxOpenConns 0, Temporal with no maxConns) printed '= 0' and
    'peak >= 0': it counts 1 per process, the least a process that connects holds."""
    from advisor.budget.slots import client_contribution
    from advisor.model import Client, Location, Pool, Source, Term

    src = Source(path="k8s/config.yaml", line=7)
    pools = [Pool(label="Temporal default store maxConns", bound="unbounded",
                  size=Term(label="maxConns", value=0, source=src)),
             Pool(label="sync pool", size=Term(label="size", value=4, source=src))]
    client = Client(id="Deployment/t", name="t", pools=pools,
                    location=Location(path="k8s/t.yaml", line=1),
                    replicas=Term(label="replicas", value=2, source=src))
    c = client_contribution(client)
    assert c.total == 2 * (1 + 4)
    assert c.parts[0].factors[-1].label == "no limit, counted as at least 1"
    assert "counted as 1 here, the real peak is higher" in c.parts[0].note


SHARE_TREE = {
    "k8s/db.yaml": """\
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: postgres:16
          args: ["-c", "max_connections=20"]
""",
    "k8s/apps.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: example/web:1
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/app"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE, value: "100"}
---
apiVersion: batch/v1
kind: Job
metadata: {name: create-user}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: create-user
          image: example/tools:1
          env:
            - {name: DATABASE_URL, value: "postgresql://db:5432/app"}
""",
    ".pool-advisor.toml": '[[workloads]]\nname = "create-user"\nconnections = 1\n',
}


def test_a_share_under_one_connection_is_not_advice_to_use_zero(tmp_path):
    """PA101 named each pool over its share as 'allows N per process'; a share under one
    connection said 'allows 0 per process' (audit K: Airflow's create-user Job), a pool
    size nobody can set."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from tests.rule_pages import write_tree

    write_tree(tmp_path, SHARE_TREE)
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (f,) = [f for f in result.findings if f.code == "PA101"]
    assert "allows 0 per process" not in f.detail
    assert "create-user's share, 0 of 17 usable over 1 pods, is less than one connection " \
           "per process" in f.detail, f.detail
    assert "web's HikariCP" in f.detail and "allows 16 per process" in f.detail


def test_a_share_of_one_or_more_per_process_is_not_said_under_one():
    """D5: a pool whose part of its client's share floors to 0 (2 beside 50, in a share
    of 17 over 1 pod) was told the client's share 'is less than one connection per
    process'; the share holds 17, so the pool is told it exceeds it, one allowed."""
    from types import SimpleNamespace

    from advisor.model import Client, Contribution, Location, Pool, Source, Term
    from advisor.rules.oversubscribed_server import _over_share

    src = Source(path="k8s/app.yaml", line=3)
    pools = [Pool(label="main pool", size=Term(label="size", value=50, source=src)),
             Pool(label="side pool", size=Term(label="size", value=2, source=src))]
    client = Client(id="Deployment/app", name="app", pools=pools,
                    location=Location(path="k8s/app.yaml", line=1),
                    replicas=Term(label="replicas", value=1, source=src))
    budget = SimpleNamespace(usable=17, peak=52, contributions=[
        Contribution(who="app", kind="client", total=52, location=client.location)])
    lines = _over_share({"app": client}, budget)
    assert not [x for x in lines if "less than one connection" in x], lines
    assert lines == [
        "app's main pool of 50 (k8s/app.yaml:3) exceeds its share: 17 of 17 usable over 1 "
        "pods allows 16 per process",
        "app's side pool of 2 (k8s/app.yaml:3) exceeds its share: 17 of 17 usable over 1 "
        "pods allows 1 per process"]
