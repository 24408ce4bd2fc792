import re

import report_samples as rs

from advisor.model import Finding, Location, Severity
from advisor.report.github import (
    annotation,
    escape_data,
    escape_property,
    render,
    should_add_github_annotations,
    workflow_command,
)


def _unescape_data(s: str) -> str:
    # The runner's ActionCommand unescaping, in reverse order of the escaping.
    return s.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(s: str) -> str:
    return _unescape_data(s.replace("%3A", ":").replace("%2C", ","))


def _parse(line: str) -> tuple[str, dict[str, str], str]:
    """Split a command the way the runner does: name, then properties up to the next
    `::`, split at `,` and the first `=`."""
    assert line.startswith("::")
    head, sep, data = line[2:].partition("::")
    assert sep
    name, _, props = head.partition(" ")
    pairs = dict(p.split("=", 1) for p in props.split(",")) if props else {}
    return name, {k: _unescape_property(v) for k, v in pairs.items()}, _unescape_data(data)


def test_escaping_matches_actions_toolkit():
    assert escape_data("100% of 97\r\nslots: a, b") == "100%25 of 97%0D%0Aslots: a, b"
    assert escape_property("a:b,c%d\ne") == "a%3Ab%2Cc%25d%0Ae"
    # %0A in the input must survive as text, not turn into a newline.
    assert escape_data("literal %0A") == "literal %250A"


def test_message_with_percent_newlines_colons_and_commas_round_trips():
    msg = "checkout: 40 x 20 = 800 > 97 usable (100%),\nsee db/postgresql.conf:2\r\nend %0A"
    f = Finding(code="PA101", name="oversubscribed-server", severity=Severity.error,
                message=msg, location=Location(path="k8s/a,b:c.yaml", line=7, column=3))
    line = annotation(f)
    assert "\n" not in line and "\r" not in line
    name, props, data = _parse(line)
    assert name == "error"
    assert props == {"file": "k8s/a,b:c.yaml", "line": "7", "col": "3",
                     "title": "PA101 oversubscribed-server"}
    assert data == msg
    # Raw delimiters only where the command syntax puts them.
    head = line.split("::")[1]
    assert head.count(",") == 3 and ":" not in head


def test_exact_command_text():
    cmd = workflow_command("warning", {"file": "x.yaml", "line": 3, "title": "T: 1, 2"}, "50%\nok")
    assert cmd == "::warning file=x.yaml,line=3,title=T%3A 1%2C 2::50%25%0Aok"
    assert workflow_command("notice", {"file": "x", "line": None}, "m") == "::notice file=x::m"
    assert workflow_command("error", {}, "m") == "::error::m"


def test_render_one_annotation_per_finding_errors_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the repository is deploy/
    rs.write_sample_tree(tmp_path / "deploy")
    out = render(rs.sample_result("deploy"), rs.sample_registry())
    lines = out.splitlines()
    assert len(lines) == 5 and out.endswith("\n")
    assert [_parse(x)[0] for x in lines] == ["error", "error", "warning", "notice", "warning"]
    # The notice that charts were skipped lowers accuracy: a warning, after the findings.
    assert lines[4] == "::warning title=pool-advisor::helm not installed: charts/ skipped"
    _, props, data = _parse(lines[0])
    assert props["file"] == "db/postgresql.conf" and props["line"] == "2"
    assert data.endswith("\nFix: Set HikariCP maximumPoolSize to 2 so 40 pods fit in 97 slots")
    # A finding without a line annotates the file.
    _, props, _ = _parse(lines[3])
    assert props == {"file": "pool-advisor.toml", "title": "PA301 work-mem-oversubscribed"}
    assert all(re.match(r"^::(error|warning|notice) ", x) for x in lines)


def test_should_add_github_annotations():
    assert should_add_github_annotations({"GITHUB_ACTIONS": "true"})
    assert not should_add_github_annotations({"GITHUB_ACTIONS": "false"})
    assert not should_add_github_annotations({"CI": "true"})
    assert not should_add_github_annotations({})
