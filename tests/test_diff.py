
import report_samples as rs
from msgspec.structs import replace

from advisor.model import CheckResult, Location
from advisor.report.compare import compare, new_findings


def _result(findings, budgets):
    return CheckResult(tool_version="0.1.0", findings=findings, budgets=budgets)


def test_servers_before_after_and_change():
    base = _result([], [rs.budget(peak_pods=30), rs.reporting_budget()])
    head = _result([], [rs.budget(peak_pods=40)])
    d = compare(base, head)
    primary, reporting = d.servers
    assert (primary.usable_before, primary.usable_after) == (97, 97)
    assert (primary.peak_before, primary.peak_after, primary.change) == (600, 800, 200)
    assert primary.fits_after is False
    assert reporting.peak_after is None and reporting.change is None  # removed


def test_findings_matched_by_fingerprint_not_line():
    old = rs.oversubscribed(peak_pods=30)
    moved = replace(rs.oversubscribed(peak_pods=40),
                    location=Location(path="db/postgresql.conf", line=9))
    base = _result([old, rs.memory_note()], [])
    head = _result([moved, rs.session_set()], [])
    d = compare(base, head)
    assert [f.code for f in d.new] == ["PA401"]
    assert [f.code for f in d.fixed] == ["PA301"]
    assert [f.code for f in d.unchanged] == ["PA101"]
    assert new_findings(base, head) == d.new


def test_duplicate_findings_count_as_a_multiset():
    f = rs.session_set()
    assert len(new_findings(_result([f], []), _result([f, f], []))) == 1
