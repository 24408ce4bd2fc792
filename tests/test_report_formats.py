
import copy
import json
from pathlib import Path

import jsonschema
import report_samples as rs
from gfm import parse, table_rows
from msgspec.structs import replace

from advisor.model import CheckResult, Finding, Location, Severity
from advisor.report import gitlab, markdown, rdjson

SCHEMAS = Path(__file__).parent / "schemas"


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


def _strict(schema: dict) -> dict:
    """The schema with additionalProperties false everywhere it lists properties: our
    output must use only the fields the format defines (a typo would pass otherwise)."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node:
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    return schema


def _validate(instance, schema: dict) -> None:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    cls(schema).validate(instance)
    cls(_strict(schema)).validate(instance)


def test_gitlab_code_quality_matches_published_fields(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rs.write_sample_tree(tmp_path / "deploy")
    out = gitlab.render(rs.sample_result("deploy"), rs.sample_registry())
    assert not out.startswith("\ufeff") and out.isascii()
    issues = json.loads(out)
    _validate(issues, _schema("gitlab-code-quality.schema.json"))
    by_check = {i["check_name"]: i for i in issues}
    assert {k: by_check["PA101"][k] for k in ("severity", "location", "fingerprint")} == {
        "severity": "critical",
        "location": {"path": "db/postgresql.conf", "lines": {"begin": 2}},
        "fingerprint": rs.oversubscribed().fingerprint,
    }
    assert by_check["PA401"]["severity"] == "major"
    assert by_check["PA301"]["severity"] == "info"
    assert by_check["PA301"]["location"]["lines"] == {"begin": 1}  # no line: file level
    assert "Fix: Use SET LOCAL" in by_check["PA401"]["description"]


def test_gitlab_schema_rejects_what_gitlab_would():
    schema = _schema("gitlab-code-quality.schema.json")
    good = json.loads(gitlab.render(CheckResult(tool_version="0", findings=[rs.session_set()]),
                                    rs.sample_registry()))
    for broken in (
        [{**good[0], "severity": "error"}],
        [{**good[0], "location": {"path": "x"}}],
        [{k: v for k, v in good[0].items() if k != "fingerprint"}],
    ):
        try:
            _validate(broken, schema)
        except jsonschema.ValidationError:
            continue
        raise AssertionError(f"schema accepted {broken}")


def test_rdjson_matches_reviewdog_schema_with_suggestions(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rs.write_sample_tree(tmp_path / "deploy")
    doc = json.loads(rdjson.render(rs.sample_result("deploy"), rs.sample_registry()))
    _validate(doc, _schema("reviewdog-DiagnosticResult.json"))
    diags = doc["diagnostics"]
    assert doc["source"]["name"] == "pool-advisor"
    main = diags[0]
    assert main["severity"] == "ERROR" and main["code"]["value"] == "PA101"
    assert main["code"]["url"].endswith("/rules/PA101-oversubscribed-server.md")
    assert main["location"] == {"path": "db/postgresql.conf",
                                "range": {"start": {"line": 2}}}
    assert [r["location"]["path"] for r in main["related_locations"]] == [
        "k8s/hpa.yaml", "k8s/configmap.yaml", "db/postgresql.conf"]
    # The pool size to change is in another file: a second diagnostic sits on that line
    # and carries the suggestion (range of the value, end exclusive, UTF-8 columns).
    fix = diags[1]
    assert fix["location"]["path"] == "k8s/configmap.yaml"
    (sug,) = fix["suggestions"]
    assert sug["text"] == "2"
    line = rs.CONFIGMAP.splitlines()[7].encode()
    rng = sug["range"]
    assert rng["start"]["line"] == rng["end"]["line"] == 8
    assert line[rng["start"]["column"] - 1 : rng["end"]["column"] - 1] == b"20"
    assert len(diags) == 6
    assert "code" in diags[4] and "url" not in diags[4]["code"]  # PA901: no rule page
    # The notice that charts were skipped lowers accuracy: a warning, at a real file.
    assert diags[5]["severity"] == "WARNING" and "charts/ skipped" in diags[5]["message"]


def test_rdjson_suggestion_on_own_line_uses_utf8_columns(tmp_path):
    (tmp_path / "u.ini").write_text("[pgbouncer]\nnom_é = 1; default_pool_size = 20\n")
    f = Finding(
        code="PA201", name="pool-too-big", severity=Severity.warning, message="m",
        location=Location(path="u.ini", line=2),
        fix=rs.Fix(description="smaller", replacement=rs.Replacement(
            path="u.ini", line=2, key="default_pool_size", old="20", new="10")),
    )
    doc = json.loads(rdjson.render(CheckResult(tool_version="0", root=str(tmp_path),
                                               findings=[f]), rs.sample_registry()))
    (d,) = doc["diagnostics"]
    rng = d["suggestions"][0]["range"]
    line = "nom_é = 1; default_pool_size = 20".encode()
    assert line[rng["start"]["column"] - 1 : rng["end"]["column"] - 1] == b"20"


def test_markdown_renders_table_details_and_groups_with_gfm(tmp_path):
    md = markdown.render(rs.sample_result(tmp_path), rs.sample_registry())
    tree = parse(md)
    (table,) = tree.find_all("table")
    rows = table_rows(table)
    assert rows[0] == ["Server", "max_connections", "Reserved", "Usable", "Peak", "Status"]
    assert rows[1][:5] == ["pg-primary", "100", "3", "97", "800"]
    assert rows[1][5].startswith("❌ over by 703")
    details = tree.find_all("details")
    # Two budgets, plus PA101 and PA401 (sources/fix); PA901 and PA301 have none.
    assert len(details) == 4
    for d in details:
        assert d.child_tags()[0] == "summary"
        assert "ul" in d.child_tags(), "markdown inside <details> was not parsed"
    arithmetic = details[0].text()
    assert "40 (HPA maxReplicas, k8s/hpa.yaml:7) \u00d7 20 (HikariCP maximumPoolSize" in arithmetic
    headings = [h.text() for h in tree.find_all("h4")]
    assert headings == ["Errors (2)", "Warnings (1)", "Info (1)", "Notices"]
    links = [a.attrs["href"] for a in tree.find_all("a")]
    assert any(h.endswith("rules/PA101-oversubscribed-server.md") for h in links)


def test_markdown_escapes_hostile_text():
    f = replace(rs.session_set(),
                message="a | b <script>x</script> **bold** [x](http://e) `tick` & done\nline2")
    result = CheckResult(tool_version="0", findings=[f],
                         budgets=[replace(rs.budget(), server="db|<b>")])
    tree = parse(markdown.render(result, rs.sample_registry()))
    assert not tree.find_all("script")
    assert "bold" not in [s.text() for s in tree.find_all("strong")]
    # GitHub autolinks a bare URL, but no text can hide a link target behind a label.
    assert all(a.text() in ("http://e", "PA401 session-state-in-transaction-mode")
               for a in tree.find_all("a"))
    rows = table_rows(tree.find_all("table")[0])
    assert rows[1][0] == "db|<b>" and len(rows[1]) == 6
    text = tree.text()
    assert "a | b <script>x</script> **bold** [x](http://e) `tick` & done" in text


def test_markdown_says_fits_when_clean():
    tree = parse(markdown.render(rs.clean_result(), rs.sample_registry()))
    assert "fits" in tree.find_all("strong")[0].text()
    assert not tree.find_all("h4")


def test_every_fixture_matches_the_gitlab_and_reviewdog_schemas(monkeypatch):
    from test_report_sarif import REPO, _fixture_results

    monkeypatch.chdir(REPO)
    registry, results = _fixture_results()
    gl_schema = _schema("gitlab-code-quality.schema.json")
    rd_schema = _schema("reviewdog-DiagnosticResult.json")
    for _name, result in results:
        issues = json.loads(gitlab.render(result, registry))
        _validate(issues, gl_schema)
        assert all((REPO / i["location"]["path"]).is_file() for i in issues)
        _validate(json.loads(rdjson.render(result, registry)), rd_schema)
        parse(markdown.render(result, registry))  # balanced HTML, GFM parses it


def test_gitlab_and_rdjson_carry_only_notices_that_lower_accuracy(tmp_path):
    """A notice that says what was read ("rendered chart X as release Y") is not a Code
    Quality or reviewdog entry: one per chart or overlay buried the findings (audit 13b:
    ~130 at one file on a GitOps tree); one that lowers accuracy still is."""
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "db.yaml").write_text("kind: ConfigMap\n", encoding="utf-8")
    result = CheckResult(tool_version="0", root=str(tmp_path), findings=[rs.session_set()],
                         notices=["helm: rendered charts/api as release 'release' with "
                                  "values.yaml (Helm 3.17 engine)",
                                  "k8s/db.yaml: the chart charts/db is NOT rendered"])
    issues = json.loads(gitlab.render(result, rs.sample_registry()))
    notes = [i["description"] for i in issues if i["check_name"] == "pool-advisor-notice"]
    assert notes == ["pool-advisor notice: k8s/db.yaml: the chart charts/db is NOT rendered"]
    doc = json.loads(rdjson.render(result, rs.sample_registry()))
    said = [d["message"] for d in doc["diagnostics"] if d["code"]["value"] == "notice"]
    assert said == ["pool-advisor notice: k8s/db.yaml: the chart charts/db is NOT rendered"]
