"""Plain text for terminals: one block per server with the arithmetic, then findings."""

from __future__ import annotations

import os
import sys

from advisor.arith import contribution_lines, num, peak_expr, peak_text, size, usable_expr
from advisor.model import CheckResult, Finding
from advisor.report.safe import safe_line
from advisor.rules import Registry

_COLORS = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m"}
_RESET = "\033[0m"


def use_color(stream=None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def render(result: CheckResult, registry: Registry, *, color: bool = False) -> str:
    out: list[str] = []
    for b in result.budgets:
        verdict = "fits" if b.fits else f"OVER by {num(b.peak - b.usable)}"
        if b.unknown_clients:
            verdict = (f"{peak_text(b)}, " + (f"OVER by at least {num(b.peak - b.usable)}"
                       if b.peak > b.usable else f"cannot tell whether it fits the "
                       f"{num(b.usable)} usable"))
        src = b.version.source
        via = f"{src.key}, " if src.key and src.path else ""
        out.append(f"server {b.server} (PostgreSQL {num(b.version.value)}, {via}"
                   f"{src.label()}): {verdict}")
        out.append(f"  usable: {usable_expr(b)}")
        for c in b.contributions:
            first, *rest = contribution_lines(c)
            out.append(f"  + {first}")
            out.extend(f"    {x}" for x in rest)
        sign = "<=" if b.peak <= b.usable else ">"
        out.append(f"  peak:   {peak_expr(b)} {sign} {num(b.usable)} usable")
        for ns in b.not_subtracted:
            out.append(f"  not subtracted: {ns.term.show()}: {ns.why}")
        if b.memory is not None and b.memory.limit is not None:
            mem = b.memory
            sign = "<=" if mem.total <= mem.limit.value else ">"
            out.append(f"  memory: worst case {size(mem.total)} {sign} {size(mem.limit.value)} "
                       f"({mem.limit.label}, {mem.limit.source.label()})")
            for t in mem.terms:
                out.append(f"    {size(t.value)}: {t.label} ({t.source.label()})")
            out.append("    assumes: " + "; ".join(mem.assumptions))
        out.append("")
    for notice in result.notices:
        out.append(f"notice: {notice}")
    if result.notices:
        out.append("")
    # Every line is one line of plain text whatever the repository holds (advisor.report.
    # safe): names, paths and messages come from files anyone can write.
    out = [safe_line(x) for x in out]
    for f in result.findings:
        out.extend(_finding(f, color))
    counts = {s: sum(1 for f in result.findings if f.severity.value == s)
              for s in ("error", "warning", "info")}
    if result.findings:
        out.append(", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)
                   + _in_focus(result))
    else:
        out.append("no findings" + ("" if result.budgets else " (no PostgreSQL server found)"))
    return "\n".join(out) + "\n"


def _in_focus(result: CheckResult) -> str:
    """With --changed-files: how many findings point into the changed files (the rest are
    the deployment's too: a budget changes where its servers are declared)."""
    if not result.focus:
        return ""
    focus = set(result.focus)
    n = sum(1 for f in result.findings
            if f.location.path in focus or any(r.location.path in focus for r in f.related))
    return f" ({n} in the changed files)"


def _finding(f: Finding, color: bool) -> list[str]:
    sev = f.severity.value
    head = safe_line(f"{f.location.label()}: ")
    rest = safe_line(f"{f.code} {f.name}: {f.message}")
    tag = f"{_COLORS[sev]}{sev}{_RESET}" if color else sev
    lines = [f"{head}{tag} {rest}"]
    for r in f.related:
        lines.append(safe_line(f"    at {r.location.label()}: {r.message}"))
    if f.fix is not None:
        lines.append(safe_line(f"    fix: {f.fix.description}"))
        if f.fix.replacement is not None:
            rp = f.fix.replacement
            lines.append(safe_line(
                f"    edit: {rp.path}:{rp.line}: {rp.key} {rp.old} -> {rp.new}"))
    lines.append("")
    return lines
