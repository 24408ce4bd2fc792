"""The advise plan as text for the terminal: per server, the arithmetic before, the
numbered proposals (why, what they assume, where to edit), the arithmetic after, the
sizing evidence and the notes."""

from __future__ import annotations

from advisor.advise.records import ServerAdvice, num
from advisor.budget.arith import unserved_text


def render_text(advice: list[ServerAdvice]) -> str:
    if not advice:
        return "Every server fits its connection budget; nothing to propose (use --all).\n"
    lines: list[str] = []
    for a in advice:
        if a.will_not_start:  # no slots: neither fits nor does not fit (PA109)
            lines.append(f"== {a.server}: will not start (PA109); {a.will_not_start}")
        elif a.unknown:  # a floor: neither "fits" nor "does not fit" can be said
            lines.append(f"== {a.server}: not known ({num(a.peak_before)} or more at peak, "
                         f"{num(a.usable_before)} usable; {len(a.unknown)} client(s) unknown)")
        elif a.floor_before and a.peak_before <= a.usable_before:
            lines.append(f"== {a.server}: not known ({num(a.peak_before)} or more at peak, "
                         f"{num(a.usable_before)} usable)")
        else:
            state = ("does not fit" if not a.fits_before
                     else unserved_text(a.unserved) if a.unserved else "fits")
            lines.append(f"== {a.server}: {state} ({num(a.peak_before)} at peak, "
                         f"{num(a.usable_before)} usable)")
        lines.append("Before:")
        lines += [f"  {x}" for x in a.before]
        if a.memory_before:
            lines.append(f"  {a.memory_before}")
        if a.proposals:
            lines.append("Proposals:")
            for i, p in enumerate(a.proposals, 1):
                lines.append(f"  {i}. {p.subject}: {p.key} {p.old} -> {p.new}")
                lines.append(f"     why: {p.reason}")
                if p.assumption:
                    lines.append(f"     assumes: {p.assumption}")
                if p.edit is not None and p.edit.insert:
                    lines.append(f"     add: `{p.edit.new}` after {p.edit.path}:{p.edit.line}")
                elif p.edit is not None:
                    lines.append(f"     edit: {p.edit.path}:{p.edit.line}")
                elif p.manual:
                    lines.append(f"     by hand: {p.manual}")
        else:
            lines.append("Proposals: none")
        lines.append("After:")
        lines += [f"  {x}" for x in a.after]
        if a.memory_after:
            lines.append(f"  {a.memory_after}")
        if a.sizing:
            lines.append("Active connections (sizing evidence):")
            lines += [f"  {x}" for x in a.sizing]
        for n in a.notes:
            lines.append(f"note: {n}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
