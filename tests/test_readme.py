"""The README opens with the two commands and shows the demo's real output."""

from __future__ import annotations

import re

from tests.cli_helpers import REPO, run_cli


def test_readme_opens_with_the_two_commands():
    head = (REPO / "README.md").read_text().split("\n## ", 1)[0]
    assert "bash scripts/demo" in head and "bash scripts/test" in head
    assert "bash scripts/test" in (REPO / ".ci" / "run").read_text()


def test_readme_demo_block_is_the_real_output():
    text = (REPO / "README.md").read_text()
    block = re.search(r"<!-- demo-output:start -->\n```text\n(.*?)```\n<!-- demo-output:end -->",
                      text, re.S).group(1)
    out = run_cli("check", "fixtures/acme-shop", env={"COLUMNS": "100"})
    assert out.returncode == 1
    assert out.stdout == block


def test_readme_rule_table_lists_every_rule():
    from advisor.rules import load_rules

    text = (REPO / "README.md").read_text()
    block = re.search(r"<!-- rules-table:start -->\n(.*?)<!-- rules-table:end -->", text,
                      re.S).group(1)
    rows = ["| code | name | severity | what it finds |", "|---|---|---|---|"]
    rows += [f"| [{r.code}](rules/{r.code}-{r.name}.md) | `{r.name}` | {r.severity.value} "
             f"| {r.summary} |" for r in load_rules().ordered()]
    expected = "\n".join(rows) + "\n"
    assert block == expected, "README's rule table is out of date; it should read:\n" + expected
