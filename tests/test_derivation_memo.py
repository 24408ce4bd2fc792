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
