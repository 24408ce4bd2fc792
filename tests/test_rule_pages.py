"""Every rule has a page in rules/ whose Bad example triggers it and Good does not."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.rules import load_rules
from tests.rule_pages import load_pages, write_tree

PAGES = load_pages()


def test_rules_and_pages_correspond_one_to_one():
    registry = load_rules()
    pages = {(p.code, p.name) for p in PAGES}
    rules = {(r.code, r.name) for r in registry.ordered()}
    assert rules - pages == set(), "rules without a page in rules/"
    assert pages - rules == set(), "pages in rules/ without a rule"


def test_every_rule_has_the_doc_sections():
    for r in load_rules().ordered():
        for section in ("## What it does", "## Why is this bad", "## Example",
                        "## Use instead", "## Options", "## References"):
            assert section in r.doc, f"{r.code} docstring lacks {section!r}"


@pytest.mark.parametrize("page", PAGES, ids=[p.code for p in PAGES])
def test_bad_example_triggers_and_good_does_not(page, tmp_path):
    assert page.bad, f"{page.path.name}: no Bad files (```...``` blocks with a `file:` line)"
    assert page.good, f"{page.path.name}: no Good files"
    for label, files, expect in (("bad", page.bad, True), ("good", page.good, False)):
        root = tmp_path / label
        write_tree(root, files)
        result = run_check([str(root)], CheckOptions(select=[page.code]))
        codes = [f.code for f in result.findings if f.code == page.code]
        assert bool(codes) is expect, (
            f"{page.path.name} {label} example: expected "
            f"{'a' if expect else 'no'} {page.code} finding, got "
            f"{[f.message for f in result.findings]}")
