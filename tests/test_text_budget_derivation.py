"""The text report's budget block is derivation(b)'s lines (the same PA101 and the JSON
report print), not a second writing of them."""

from pathlib import Path

from advisor.budget.arith import derivation
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "acme-shop"


def test_text_budget_block_is_the_derivation_of_the_budget(monkeypatch):
    """The text report's budget block takes derivation's lines, the same lines the block
    wrote from the parts itself."""
    from advisor.budget.arith import against_usable, contribution_lines, peak_expr, usable_expr
    from advisor.report import text

    result = run_check([FIXTURE], CheckOptions(cache=False))
    b = result.budgets[0]
    asked = []
    monkeypatch.setattr(text, "derivation", lambda x: asked.append(x) or derivation(x))
    for verbose in (False, True):
        lines = text.budget_lines(b, verbose=verbose, color=False)
        parts = [f"  usable: {usable_expr(b)}",
                 *(f"  {x}" for c in b.contributions for x in contribution_lines(c)),
                 *((f"  {x}" for x in b.client_sides) if verbose else ()),
                 f"  peak: {peak_expr(b)}{against_usable(b)}"]
        assert lines[1:len(parts) + 1] == parts
    assert asked == [b, b]
