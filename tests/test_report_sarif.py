
import json
from pathlib import Path

import pytest
import report_samples as rs
from msgspec.structs import replace
from sarif_tool import problems, validate

from advisor.model import CheckResult, Location
from advisor.report import FORMATS, get_renderer
from advisor.report.sarif import FINGERPRINT_KEY, build_log, render

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository, deploy/, holding the sample files: reported paths are relative to
    it (wherever pool-advisor runs from), and so are SARIF's."""
    monkeypatch.chdir(tmp_path)
    rs.write_sample_tree(tmp_path / "deploy")
    return tmp_path


def _log(result: CheckResult | None = None, **kw) -> dict:
    return build_log(result or rs.sample_result("deploy"), rs.sample_registry(), **kw)


def test_registry_of_formats_is_lazy_and_complete():
    assert set(FORMATS) == {"text", "json", "sarif", "github", "gitlab", "rdjson", "markdown"}
    assert get_renderer("sarif") is render
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        get_renderer("xml")


def test_rules_carry_docs_help_and_links(repo):
    log = _log(docs_url="https://example.test/docs/")
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert set(rules) == {"PA101", "PA301", "PA401", "PA901"}
    pa101 = rules["PA101"]
    assert pa101["helpUri"] == "https://example.test/docs/rules/PA101-oversubscribed-server.md"
    assert pa101["fullDescription"]["text"].startswith("Checks that the connections every")
    assert pa101["help"]["markdown"].startswith("## What it does\nChecks that")
    assert "## Why is this bad" in pa101["help"]["text"]
    # Plain "Title:" sections become markdown headings.
    assert "\n## Why is this bad\n" in rules["PA401"]["help"]["markdown"]
    # A code no rule module owns still gets a complete descriptor.
    assert rules["PA901"]["shortDescription"]["text"] == "unreadable-file."
    assert rules["PA901"]["defaultConfiguration"]["level"] == "error"


def test_results_locations_fingerprints_related_and_fix(repo):
    log = _log(srcroot=str(repo / "deploy"))
    run = log["runs"][0]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == (repo / "deploy").as_uri() + "/"
    assert run["tool"]["driver"]["version"] == "0.1.0"
    assert run["tool"]["driver"]["semanticVersion"] == "0.1.0"
    assert run["invocations"][0]["executionSuccessful"] is True
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    for res in run["results"]:
        assert rule_ids[res["ruleIndex"]] == res["ruleId"]
        art = res["locations"][0]["physicalLocation"]["artifactLocation"]
        assert art["uriBaseId"] == "SRCROOT" and not art["uri"].startswith("/")

    over = by_rule["PA101"]
    assert over["level"] == "error"
    assert [r["physicalLocation"]["artifactLocation"]["uri"] for r in over["relatedLocations"]] \
        == ["k8s/hpa.yaml", "k8s/configmap.yaml", "db/postgresql.conf"]
    assert over["relatedLocations"][0]["message"]["text"] == "40 pods at peak (HPA maxReplicas)."
    # The fix replaces exactly the "20" after the key on line 8.
    assert over["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] \
        == "db/postgresql.conf"
    (change,) = over["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "k8s/configmap.yaml"
    (repl,) = change["replacements"]
    line = rs.CONFIGMAP.splitlines()[7]
    region = repl["deletedRegion"]
    assert line[region["startColumn"] - 1 : region["endColumn"] - 1] == "20"
    assert repl["insertedContent"]["text"] == "2"
    # A finding without a line sits on line 1 of its file; a fix without a replacement
    # is described in the message, with no machine-readable fix.
    note = by_rule["PA301"]
    assert note["level"] == "note"
    assert note["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert "fixes" not in by_rule["PA401"]
    assert "Fix: Use SET LOCAL" in by_rule["PA401"]["message"]["text"]
    assert by_rule["PA401"]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 1, "startColumn": 14}


def test_fingerprint_survives_line_moves_but_not_subject_changes():
    f = rs.oversubscribed()
    moved = replace(f, location=Location(path=f.location.path, line=40))
    other = replace(f, subject="pg-replica")

    def fp(finding):
        log = build_log(CheckResult(tool_version="0.1.0", findings=[finding]),
                        rs.sample_registry(), read_line=lambda p, n: None)
        return log["runs"][0]["results"][0]["partialFingerprints"][FINGERPRINT_KEY]

    assert fp(f) == fp(moved) == f.fingerprint
    assert fp(other) != fp(f)


def test_fix_is_omitted_when_the_value_is_not_on_its_line(repo):
    (repo / "deploy/k8s/configmap.yaml").write_text("data: {}\n")
    log = _log()
    over = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "PA101")
    assert "fixes" not in over


def test_github_validator_accepts_sarif_of_realistic_results(repo, tmp_path_factory):
    registry = rs.sample_registry()
    outside = tmp_path_factory.mktemp("elsewhere")  # a root outside the checkout
    rs.write_sample_tree(outside)
    unicode_msg = replace(rs.session_set(),
                          message="naïve SET ⟶ leaks: 100% of sessions, see\nline two")
    cases = {
        "full.sarif": render(rs.sample_result("deploy"), registry, srcroot=str(repo / "deploy")),
        "no-srcroot.sarif": render(rs.sample_result("deploy"), registry),
        "outside.sarif": render(rs.sample_result(outside), registry),
        "clean.sarif": render(rs.clean_result(), registry),
        "odd.sarif": render(CheckResult(tool_version="0.1.0.dev3+g1234", findings=[
            unicode_msg,
            replace(rs.engine_finding(),
                    location=Location(path="dir with space/ä.yaml", line=2, end_line=4)),
        ]), registry),
    }
    files = []
    for name, text in cases.items():
        json.loads(text)
        (repo / name).write_text(text, encoding="utf-8")
        files.append(repo / name)
    results = validate(files, repo / "validation.sarif")
    assert problems(results) == []


def _fixture_results():
    """(name, CheckResult) for every fixture, checked from the repository root as CI
    runs it."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from advisor.rules import load_rules

    registry = load_rules()
    fixtures = sorted(p for p in (REPO / "fixtures").iterdir() if p.is_dir())
    assert fixtures, "no fixtures"
    return registry, [(fx.name, run_check([str(fx.relative_to(REPO))], CheckOptions(), registry))
                      for fx in fixtures]


def test_github_validator_accepts_sarif_of_every_fixture(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    registry, results = _fixture_results()
    files = []
    for name, result in results:
        out = tmp_path / f"{name}.sarif"
        out.write_text(render(result, registry, srcroot=str(REPO)), encoding="utf-8")
        files.append(out)
        # Paths are repository-relative and point at real files, as code scanning needs.
        for res in json.loads(out.read_text())["runs"][0]["results"]:
            uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            assert (REPO / uri).is_file(), uri
    assert problems(validate(files, tmp_path / "validation.sarif")) == []


def test_help_uris_name_the_rule_pages_in_rules_dir():
    from advisor.rules import load_rules

    registry = load_rules()
    log = build_log(CheckResult(tool_version="0.1.0"), registry, docs_url="https://x.test/blob/main")
    for rule in log["runs"][0]["tool"]["driver"]["rules"]:
        page = rule["helpUri"].removeprefix("https://x.test/blob/main/")
        assert (REPO / page).is_file(), page
