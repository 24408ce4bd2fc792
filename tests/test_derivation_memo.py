"""derivation(b) is kept per budget (PA101 and the JSON report ask it of the same one):
the same lines each time, a list the caller may change without changing the next."""

from pathlib import Path

from advisor.budget import arith
from advisor.budget.arith import PLAIN, Style, derivation
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "acme-shop"


def test_derivation_is_kept_per_budget_and_returned_as_a_new_list():
    result = run_check([FIXTURE], CheckOptions(cache=False))
    b = result.budgets[0]
    first = derivation(b)
    assert first == arith._derivation(b, PLAIN)
    first.append("changed by a caller")
    assert derivation(b) == arith._derivation(b, PLAIN)
    assert arith._DERIVED[id(b)][0] is b
    # another style is not kept (nor taken from what PLAIN kept)
    assert derivation(b, Style()) == arith._derivation(b, Style())


def test_text_budget_block_is_the_derivation_kept_for_the_budget(monkeypatch):
    """The text report's budget block takes derivation's lines (which PA101 made and
    kept), the same lines the block wrote from the parts itself."""
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
