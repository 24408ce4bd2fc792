"""What the After block assumes: every proposal applied, and which of them the diff
(`advise --diff` / `--write`) makes and which are left to be done by hand (a default to
set, an edit refused at its line, a file not added). The After arithmetic is the state
with all of them; "fits" there is said only with the ones by hand named, never for a
state the diff alone does not produce (audit 13d: a PgBouncer whose client host edits
were refused in a template was shown "fits" while the diff left every client on the
server)."""

from __future__ import annotations

from collections.abc import Iterable

from advisor.advise.records import Edit, Proposal, ServerAdvice


def mark_by_hand(advice: list[ServerAdvice], refused: Iterable[tuple[Edit, str]],
                 added: set[str]) -> list[ServerAdvice]:
    """`advice` with each proposal the diff does not make turned into a step by hand
    (a refused edit's reason said), and each After block headed by what it assumes;
    `added` the paths of the files the diff adds."""
    why = {_edit_id(e): reason for e, reason in refused}
    out = []
    for a in advice:
        proposals = [_by_diff_or_hand(p, why, added) for p in a.proposals]
        by_hand = [i for i, p in enumerate(proposals, 1) if not _in_diff(p, added)]
        out.append(a.model_copy(update={
            "proposals": proposals, "by_hand": by_hand,
            "after": _headed(a.after, len(proposals), by_hand)}))
    return out


def _edit_id(e: Edit) -> tuple[str, int, str, str, str, bool]:
    return (e.path, e.line, e.key, e.old, e.new, e.insert)


def _by_diff_or_hand(p: Proposal, refused: dict, added: set[str]) -> Proposal:
    if p.edit is not None and _edit_id(p.edit) in refused:
        return p.model_copy(update={
            "edit": None,
            "manual": f"set {p.key} to {p.new}; the diff does not make this edit "
                      f"({refused[_edit_id(p.edit)]})"})
    if p.new_file is not None and p.new_file.path not in added:
        return p.model_copy(update={"manual": f"not in the diff ({p.new_file.path} exists); "
                                              f"{p.manual}"})
    return p


def _in_diff(p: Proposal, added: set[str]) -> bool:
    if p.new_file is not None:
        return p.new_file.path in added
    return p.edit is not None


def _numbers(ns: list[int]) -> str:
    return ", ".join(str(n) for n in ns)


def _headed(after: list[str], count: int, by_hand: list[int]) -> list[str]:
    """The After lines with what they assume first, and a "fits" that needs steps by
    hand said so."""
    if not count:
        return after
    by_diff = [n for n in range(1, count + 1) if n not in by_hand]
    if not by_hand:
        head = f"assumes proposals {_numbers(by_diff)} applied (all in the diff)"
    else:
        head = (f"assumes proposals {_numbers(list(range(1, count + 1)))} applied: "
                + (f"{_numbers(by_diff)} by the diff, " if by_diff else "none by the diff, ")
                + f"{_numbers(by_hand)} by hand")
    lines = [head, *after]
    if by_hand and lines[-1] == "fits":
        which = f"proposal {by_hand[0]} is" if len(by_hand) == 1 else \
            f"proposals {_numbers(by_hand)} are"
        lines[-1] = (f"fits once {which} done by hand too; the diff alone does not make "
                     "this state (what check says after it: 'Still reported by check')")
    return lines
