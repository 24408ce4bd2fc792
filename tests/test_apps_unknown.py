"""Issue 13 item 1: a client whose connections cannot be read is never a silent 0."""

from __future__ import annotations

import json

from advisor.engine import CheckOptions, run_check
from tests.rule_pages import load_pages, write_tree

PAGE = next(p for p in load_pages() if p.code == "PA106")


def _check(root, select=None):
    return run_check([str(root)], CheckOptions(select=select or []))


def test_unknown_client_makes_the_peak_a_floor(tmp_path):
    write_tree(tmp_path, PAGE.bad)
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.unknown_clients == ["reports"]
    assert budget.peak == 0 and budget.peak_is_floor and not budget.fits
    (f,) = [f for f in result.findings if f.code == "PA106"]
    assert "4 pods are not counted in the budget of server db" in f.message
    assert 'connections = N' in f.message and "no application source folder" in f.message


def test_text_and_json_say_peak_at_least(tmp_path):
    from advisor.report import json as json_report
    from advisor.report import text
    from advisor.rules import load_rules

    write_tree(tmp_path, PAGE.bad)
    result = _check(tmp_path)
    out = text.render(result, load_rules())
    assert "peak >= 0 (1 client unknown: reports)" in out
    assert "cannot tell whether it fits" in out and ": fits" not in out
    data = json.loads(json_report.render(result, load_rules()))
    assert data["budgets"][0]["unknown_clients"] == ["reports"]
    assert data["budgets"][0]["fits"] is False and data["budgets"][0]["peak_is_floor"]
    back = json_report.load(json_report.render(result, load_rules()))
    assert back.budgets[0].unknown_clients == ["reports"]


def test_declared_connections_resolve_it(tmp_path):
    files = dict(PAGE.bad)
    files[".pool-advisor.toml"] = '[[workloads]]\nname = "reports"\nconnections = 7\n'
    write_tree(tmp_path, files)
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.fits
    assert budget.peak == (3 + 1) * 7  # replicas + 25% surge rounded up, x 7 declared
    assert not [f for f in result.findings if f.code == "PA106"]


def test_host_linking_to_nothing_is_a_warning(tmp_path):
    page = next(p for p in load_pages() if p.code == "PA107")
    write_tree(tmp_path, page.bad)
    (f,) = [f for f in _check(tmp_path).findings if f.code == "PA107"]
    assert f.severity.value == "warning" and "'orders-db'" in f.message
