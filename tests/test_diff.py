
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


def _floor(b):
    return replace(b, unknown_clients=["photos"])


def test_a_floor_within_usable_is_never_said_to_fit():
    # kashalls/home-cluster@0d3b5300e: a CNPG Cluster whose one client is a HelmRelease
    # of a chart not in the repository (peak >= 1 of 97): the text report said "cannot
    # tell", the --base table and the PR comment said "fits (96 spare)" (audit 13b D1).
    from advisor.ci.basecheck import change_text
    from advisor.report.markdown import budget_table, diff_table

    base = _result([], [_floor(rs.budget(peak_pods=1, pool=1))])
    head = _result([], [_floor(rs.budget(peak_pods=1, pool=1))])
    d = compare(base, head)
    s = d.servers[0]
    assert (s.floor_before, s.floor_after, s.fits_after) == (True, True, None)
    row = next(x for x in change_text(d, "main", "0" * 40).splitlines()
               if x.strip().startswith("pg-primary"))
    assert ">= 1 -> >= 1" in row and "cannot tell" in row and "fits" not in row, row
    md_row = diff_table(d).splitlines()[-1]
    assert "≥ 1 → ≥ 1" in md_row and "cannot tell" in md_row and "fits" not in md_row
    table = budget_table(head.budgets).splitlines()[-1]
    assert "| ≥ 1 |" in table and "cannot tell" in table and "fits" not in table


def test_a_floor_past_usable_is_over_by_at_least():
    from advisor.ci.basecheck import change_text
    from advisor.report.markdown import diff_table

    d = compare(_result([], [rs.budget(peak_pods=30)]),
                _result([], [_floor(rs.budget(peak_pods=40))]))
    s = d.servers[0]
    assert s.fits_after is False and s.worse
    assert "over by at least 703" in change_text(d, "main", "0" * 40)
    assert "over by at least 703" in diff_table(d)


def test_a_server_that_will_not_start_has_no_fit_in_the_change_table():
    from advisor.ci.basecheck import change_text
    from advisor.model import StartRefusal
    from advisor.report.markdown import diff_table

    refused = replace(rs.budget(peak_pods=1, pool=1), usable=0,
                      refused=StartRefusal(message="superuser_reserved_connections (3) "
                                           "must be less than max_connections (3)",
                                           terms=()))
    d = compare(_result([], [rs.budget()]), _result([], [refused]))
    assert d.servers[0].fits_after is None
    assert "will not start (PA109)" in change_text(d, "main", "0" * 40)
    assert "will not start (PA109)" in diff_table(d) and "fits" not in diff_table(d)


def test_a_moved_file_keeps_its_findings():
    """kashalls/home-cluster@50a4a6462 moved kubernetes/fenrys/apps to kubernetes/fran/
    apps: PA106 about the same workloads and PA901 about the same remote resource were
    '10 new, 6 fixed' under --new-only (exit 1 on a pure reorganisation)."""
    def unknown(path: str):
        return replace(rs.session_set(), code="PA106", subject="Deployment/default/ha|unknown",
                       location=Location(path=path, line=32))

    def remote(path: str):
        return replace(rs.session_set(), code="PA901",
                       subject=f"{path}|remote resource 'https://x/crd.yaml' not fetched",
                       location=Location(path=path, line=7))

    old = "kubernetes/fenrys/apps/default/ha/helmrelease.yaml"
    new = "kubernetes/fran/apps/default/ha/helmrelease.yaml"
    base = _result([unknown(old), remote(old.replace("helmrelease", "kustomization"))], [])
    head = _result([unknown(new), remote(new.replace("helmrelease", "kustomization"))], [])
    d = compare(base, head)
    assert (d.new, d.fixed, len(d.unchanged)) == ([], [], 2)
    # another workload, or a second copy of the moved one, is still new
    head2 = _result([unknown(new), unknown(old),
                     replace(unknown(new), subject="Deployment/default/zipline|unknown")], [])
    assert [f.subject for f in compare(_result([unknown(old)], []), head2).new] == [
        "Deployment/default/ha|unknown", "Deployment/default/zipline|unknown"]
