"""PostgreSQL 10 starts with superuser_reserved_connections + max_wal_senders >=
max_connections (it checks each alone, advisor.facts.pg_startup), so the budget's usable,
which takes every max_wal_senders slot off before 12, can be <= 0 on a server that runs.
A WAL sender holds its slot only while a standby streams: with nothing connecting (peak
0) that is no slot to share, not "OVER by 1" (review F9). PA101 is peak > usable of the
repository's clients; peak 0 is not over. The real 10.23 is asked at the end."""

from __future__ import annotations

import json
from contextlib import ExitStack

import pytest

from advisor.engine.check import CheckOptions, run_check

DB = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: %(image)s
          args: ["-c", "max_connections=%(mc)d"%(more)s]
"""


def _check(tmp_path, image: str = "postgres:10.23", mc: int = 12, more: str = ""):
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "db.yaml").write_text(DB % {"image": image, "mc": mc, "more": more})
    return run_check([str(tmp_path)], CheckOptions(cache=False))


def test_peak_0_with_usable_below_0_only_from_wal_senders_is_not_over(tmp_path):
    from advisor.report import json as json_report
    from advisor.report.markdown import budget_table
    from advisor.report.text import budget_lines
    from advisor.rules import load_rules

    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.refused is None and budget.usable == -1 and budget.peak == 0
    assert budget.wal_sender_slots == 10
    assert budget.no_room_once_streaming
    assert not budget.over and not budget.fits
    assert [f.code for f in result.findings] == []  # no PA101 at peak 0
    head = budget_lines(budget, verbose=True, color=False)
    assert "OVER" not in "\n".join(head)
    assert head[0].endswith(
        ": no slots left for non-superusers once 9 standbys stream (max_wal_senders 10, "
        "which takes ordinary slots before PostgreSQL 12): 12 - 3 - 10 = -1 usable, 9 while "
        "none streams")
    (peak,) = [x for x in head if x.startswith("  peak:")]
    assert "> -1 usable" not in peak and "non-superusers have 9 slots" in peak
    data = json.loads(json_report.render(result, load_rules()))
    assert data["summary"]["over"] == 0 and data["summary"]["cannot_tell"] == 0
    assert data["budgets"][0]["usable"] == -1  # the arithmetic is unchanged
    row = budget_table([budget])
    assert "over by" not in row and "⚠️ no slots left for non-superusers" in row


def test_usable_0_from_wal_senders_says_the_same(tmp_path):
    (budget,) = _check(tmp_path, mc=13).budgets
    assert budget.usable == 0 and budget.no_room_once_streaming
    assert not budget.fits and not budget.over


@pytest.mark.parametrize(("image", "mc", "more", "usable"), [
    ("postgres:10.23", 12, ', "-c", "max_wal_senders=0"', 9),  # nothing subtracted
    ("postgres:11.22", 14, "", 1),  # 11 refuses 3 + 10 >= mc: usable is never <= 0
    ("postgres:15.8", 12, "", 9),  # WAL senders have their own slots from 12
])
def test_other_servers_that_nothing_connects_to_fit(tmp_path, image, mc, more, usable):
    (budget,) = _check(tmp_path, image, mc, more).budgets
    assert budget.usable == usable and budget.fits and not budget.no_room_once_streaming


def test_a_peak_past_usable_is_still_over(tmp_path):
    """Only peak 0 is spared: a client's connection past usable is over at the WAL
    senders' maximum (verdict_notes says it fits while none streams)."""
    client = """\
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: app
          image: registry.example/api:1.0
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/app"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "1"}
"""
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "db.yaml").write_text(
        DB % {"image": "postgres:10.23", "mc": 12, "more": ""} + client)
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak > 0 and budget.over and not budget.no_room_once_streaming
    assert "PA101" in [f.code for f in result.findings]


def test_advise_proposes_nothing_for_it(tmp_path):
    from advisor.advise.plan import advise
    from advisor.advise.records import AdviseOptions
    from advisor.scan import load_with_settings

    _check(tmp_path)
    topo, budgets, *_ = load_with_settings([str(tmp_path)])
    assert advise(topo, budgets) == []  # nothing to fit, as for a server that fits
    (shown,) = advise(topo, budgets, AdviseOptions(all_servers=True))
    assert not any("does not fit" in x for x in shown.before)


def _sessions(bin_dir, conf: str, walsenders: int) -> int:
    """Sessions a plain role opens on a real server while `walsenders` replication
    connections are held."""
    import psycopg

    from tests.realpg import running_postgres

    with running_postgres(conf, bin_dir=bin_dir) as pg:
        pg.psql("CREATE ROLE app LOGIN NOSUPERUSER")
        pg.psql("CREATE ROLE repl LOGIN REPLICATION NOSUPERUSER")
        with ExitStack() as stack:
            for _ in range(walsenders):
                stack.enter_context(psycopg.connect(pg.dsn(user="repl") + " replication=true",
                                                    connect_timeout=5, autocommit=True))
            opened = 0
            for _ in range(50):
                try:
                    stack.enter_context(psycopg.connect(pg.dsn(user="app"), connect_timeout=5))
                except psycopg.OperationalError as exc:
                    assert "remaining connection slots are reserved" in str(exc), exc
                    break
                opened += 1
        return opened


@pytest.mark.postgres
def test_a_real_postgresql_10_admits_what_the_text_says(tmp_path):
    """10.23 with max_connections 12 and its default max_wal_senders 10 starts, admits 9
    plain sessions while no standby streams and none once 9 do."""
    from tests.realpg import pg_bin_for

    bin_dir = pg_bin_for(10)
    if bin_dir is None:
        pytest.skip("no PostgreSQL 10 here (scripts/get_pg_binaries.py 10)")
    (budget,) = _check(tmp_path).budgets
    free = budget.usable + budget.wal_sender_slots
    assert _sessions(bin_dir, "max_connections = 12\n", 0) == free == 9
    assert _sessions(bin_dir, "max_connections = 12\n", int(free)) == 0
