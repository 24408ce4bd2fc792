"""A postgresql.conf (or -c option) error PostgreSQL refuses to start on is the server's
start-up refusal: its budget says "will not start (PA109)" in every format, PA101 is
not raised for it, and advise names what to change first instead of fitting pools
into 0 slots (audit 10a repro-17: an include_dir no mounted ConfigMap can hold left
the server line saying "fits" beside the PA109 error). Which errors refuse is checked
on a real server by tests/test_pg_startup_oracle.py."""

from __future__ import annotations

import json

import pytest

from advisor.engine.check import CheckOptions, run_check
from tests.tree_helpers import postgres_conf_and_api


def _write(tmp_path, conf: str, args: str = "", version: str = "15.8", pool: int = 30):
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "all.yaml").write_text(
        postgres_conf_and_api(conf, f"postgres:{version}", args=args, pool=pool))
    return tmp_path


def _check(tmp_path, conf: str, args: str = "", version: str = "15.8", pool: int = 30):
    return run_check([str(_write(tmp_path, conf, args, version, pool))],
                     CheckOptions(cache=False))


# max_connections 50: 2 x 30 = 60 at peak is OVER on a server that starts
REFUSED = [
    ("include_dir", "max_connections = 50\ninclude_dir 'conf.d'", "",
     'could not open configuration directory "/etc/postgresql/conf.d": No such file or '
     "directory"),
    ("syntax", "max_connections = 50\nwork_mem = = 4MB", "",
     'syntax error in file "k8s/all.yaml" line 7, near token "="'),
    ("invalid value", "max_connections = 50\nwork_mem = 4mb", "",
     'invalid value for parameter "work_mem": "4mb"'),
    ("unknown name", "max_connections = 50\nmax_conections = 60", "",
     'unrecognized configuration parameter "max_conections" in file "k8s/all.yaml" line 7'),
    ("missing include", "max_connections = 50\ninclude 'extra.conf'", "",
     'could not open configuration file "/etc/postgresql/extra.conf": No such file or '
     "directory"),
    ("-c option", "max_connections = 50", ', "-c", "shared_buffers=lots"',
     'invalid value for parameter "shared_buffers": "lots"'),
]


@pytest.mark.parametrize(("kind", "conf", "args", "message"), REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_a_config_error_the_server_refuses_is_will_not_start(tmp_path, kind, conf, args,
                                                             message):
    from advisor.report import json as json_report
    from advisor.report.markdown import budget_table
    from advisor.report.text import budget_lines
    from advisor.rules import load_rules

    result = _check(tmp_path, conf, args)
    (budget,) = result.budgets
    assert budget.refused is not None
    assert budget.refused.message.startswith(message), budget.refused.message
    assert budget.refused.location is not None
    assert not budget.fits and not budget.over
    codes = [f.code for f in result.findings]
    assert "PA101" not in codes
    # the error once, at its line: no second "will not start" finding for it
    pa109 = [f for f in result.findings if f.code == "PA109"]
    assert [f.location for f in pa109 if f.message.startswith(message)] \
        == [budget.refused.location]
    assert not any("will not start" in f.message for f in pa109)
    head = budget_lines(budget, verbose=False, color=False)
    assert head[0].endswith(": will not start (PA109)")
    assert f"({budget.refused.location.label()})" in head[1]
    assert not any("usable" in line for line in head)
    assert "will not start (PA109)" in budget_table([budget])
    data = json.loads(json_report.render(result, load_rules()))
    assert data["budgets"][0]["refused"]["location"]["path"] == "k8s/all.yaml"
    assert data["summary"]["over"] == 0
    (back,) = json_report.load(json_report.render(result, load_rules())).budgets
    assert back.refused == budget.refused


@pytest.mark.parametrize("conf", [
    "max_connections = 50\ninclude_if_exists 'extra.conf'",  # skipped, with a LOG line
    "max_connections = 50\nmyapp.flag = on",  # a custom placeholder
])
def test_what_the_server_starts_with_keeps_its_budget(tmp_path, conf):
    result = _check(tmp_path, conf)
    (budget,) = result.budgets
    assert budget.refused is None and budget.over
    assert "PA101" in [f.code for f in result.findings]


def test_a_config_error_and_a_slot_refusal_are_both_reported(tmp_path):
    """The file's error stops the server first; once fixed, the slot settings do: both
    are PA109, the budget's refusal is the first."""
    result = _check(tmp_path, "max_connections = 3\nwork_mem = 4mb")
    (budget,) = result.budgets
    assert budget.refused is not None and budget.refused.message.startswith(
        'invalid value for parameter "work_mem"')
    messages = [f.message for f in result.findings if f.code == "PA109"]
    assert any(m.endswith("will not start: superuser_reserved_connections (3) must be "
                          "less than max_connections (3)") for m in messages)
    assert any(m.startswith('invalid value for parameter "work_mem"') for m in messages)


def test_advise_names_the_fix_and_fits_no_pools_into_0_slots(tmp_path):
    from advisor.advise.plan import advise
    from advisor.advise.text import render_text
    from advisor.scan import load_with_settings

    _write(tmp_path, "max_connections = 50\ninclude_dir 'conf.d'")
    topo, budgets, *_ = load_with_settings([str(tmp_path)])
    (a,) = advise(topo, budgets)
    assert a.proposals == [] and not a.fits_after
    assert a.will_not_start.startswith("fix k8s/all.yaml:7 first: could not open "
                                       "configuration directory")
    text = render_text([a])
    assert text.startswith("== postgres: will not start (PA109); fix k8s/all.yaml:7 first")
    assert "does not fit" not in text and "0 usable" not in text


def test_advise_on_a_slot_refusal_says_what_to_raise(tmp_path):
    from advisor.advise.plan import advise
    from advisor.scan import load_with_settings

    _write(tmp_path, "max_connections = 3", pool=1)
    topo, budgets, *_ = load_with_settings([str(tmp_path)])
    (a,) = advise(topo, budgets)
    assert a.proposals == []
    assert a.will_not_start == (
        "raise max_connections 3 (max_connections, k8s/all.yaml:6) first, to at least 6 = "
        "3 (superuser_reserved_connections, default: PostgreSQL 15 default) + 3 at peak; "
        "or lower superuser_reserved_connections")
