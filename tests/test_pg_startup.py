"""A configuration PostgreSQL's postmaster refuses before it starts (superuser_reserved
_connections, reserved_connections, max_wal_senders against max_connections) is PA109
with the server's message and no slot budget, not "OVER by N" with usable 0 or -1
(audit 10d D3). The per-major messages are checked on real servers by
tests/test_pg_startup_oracle.py."""

from __future__ import annotations

import json

import pytest

from advisor.engine.check import CheckOptions, run_check
from advisor.facts.pg_startup import startup_refusal
from advisor.model import Source, Term
from tests.tree_helpers import postgres_conf_and_api


def _t(name: str, value: int) -> Term:
    return Term(label=name, value=value, source=Source.default_of("test"))


def _refusal(version: int, mc: int, su: int = 3, rc: int | None = None,
             ws: int | None = None) -> str | None:
    found = startup_refusal(
        version, _t("max_connections", mc), _t("superuser_reserved_connections", su),
        _t("reserved_connections", rc) if rc is not None else None,
        _t("max_wal_senders", ws) if ws is not None else None)
    return found.message if found else None


# (version, max_connections, superuser_reserved, reserved, wal senders) -> message, as the
# real servers print it after "postgres: " (tests/test_pg_startup_oracle.py)
CASES = [
    (10, 3, 3, None, 10, "superuser_reserved_connections must be less than max_connections"),
    (10, 4, 3, None, 10, "max_wal_senders must be less than max_connections"),
    (10, 12, 3, None, 10, None),  # 10 checks each alone: 3 + 10 >= 12 starts
    (11, 12, 3, None, 10, "superuser_reserved_connections (3) plus max_wal_senders (10) must "
                          "be less than max_connections (12)"),
    (11, 12, 3, None, 8, None),
    (12, 3, 3, None, 10, "superuser_reserved_connections (3) must be less than "
                         "max_connections (3)"),
    (15, 3, 3, None, None, "superuser_reserved_connections (3) must be less than "
                           "max_connections (3)"),
    (15, 4, 3, None, None, None),
    (16, 8, 3, 5, None, "superuser_reserved_connections (3) plus reserved_connections (5) "
                        "must be less than max_connections (8)"),
    (16, 9, 3, 5, None, None),
    (16, 3, 3, 0, None, "superuser_reserved_connections (3) plus reserved_connections (0) "
                        "must be less than max_connections (3)"),
    (17, 8, 3, 5, None, '"superuser_reserved_connections" (3) plus "reserved_connections" '
                        '(5) must be less than "max_connections" (8)'),
    (18, 9, 3, 5, None, None),
]


@pytest.mark.parametrize(("version", "mc", "su", "rc", "ws", "message"), CASES)
def test_the_refusal_of_each_major(version, mc, su, rc, ws, message):
    assert _refusal(version, mc, su, rc, ws) == message




def _check(tmp_path, image: str, conf: str):
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "all.yaml").write_text(postgres_conf_and_api(conf, image))
    return run_check([str(tmp_path)], CheckOptions(cache=False))


@pytest.mark.parametrize(("image", "conf", "message"), [
    ("postgres:15.8", "max_connections = 3", "superuser_reserved_connections (3) must be "
     "less than max_connections (3)"),
    ("postgres:16.4", "max_connections = 8\nreserved_connections = 5",
     "superuser_reserved_connections (3) plus reserved_connections (5) must be less than "
     "max_connections (8)"),
    ("postgres:11.22", "max_connections = 12", "superuser_reserved_connections (3) plus "
     "max_wal_senders (10) must be less than max_connections (12)"),
])
def test_a_server_that_will_not_start_is_pa109_not_over(tmp_path, image, conf, message):
    from advisor.report import json as json_report
    from advisor.report.text import budget_lines
    from advisor.rules import load_rules

    result = _check(tmp_path, image, conf)
    (budget,) = result.budgets
    assert budget.refused is not None and budget.refused.message == message
    assert not budget.fits and not budget.over
    codes = [f.code for f in result.findings]
    assert "PA101" not in codes
    (pa109,) = [f for f in result.findings if f.code == "PA109"]
    assert pa109.message.endswith(f"will not start: {message}")
    assert pa109.location.path == "k8s/all.yaml" and pa109.location.line == 6
    head = budget_lines(budget, verbose=False, color=False)
    assert head[0].endswith(": will not start (PA109)")
    assert not any("usable" in line for line in head)  # no slot budget claimed
    data = json.loads(json_report.render(result, load_rules()))
    assert data["budgets"][0]["refused"]["message"] == message
    assert data["summary"]["over"] == 0
    (back,) = json_report.load(json_report.render(result, load_rules())).budgets
    assert back.refused == budget.refused


def test_postgresql_10_with_wal_senders_past_the_rest_starts(tmp_path):
    """10 checks superuser_reserved_connections and max_wal_senders each alone: 3 + 10
    >= 12 starts (real 10.23), and is a budget over at its WAL senders' maximum."""
    result = _check(tmp_path, "postgres:10.23", "max_connections = 12")
    (budget,) = result.budgets
    assert budget.refused is None and budget.over
    assert "PA109" not in [f.code for f in result.findings]


def test_the_markdown_table_says_it_will_not_start(tmp_path):
    from advisor.report.markdown import budget_details, budget_table

    (budget,) = _check(tmp_path, "postgres:15.8", "max_connections = 3").budgets
    assert "| \u2014 | 3 | \u274c will not start (PA109) |" in budget_table([budget])
    assert "how usable" not in budget_details(budget)
