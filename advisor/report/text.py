"""Plain text for terminals. Each server's budget once (the arithmetic once, wrapped to
the terminal's width), then one line per finding, `path:line: CODE [severity] message`,
then the counts. `verbose` (-v/--show-arithmetic) adds each finding's derivation, the
locations of its numbers and its fix; `statistics` lists counts per rule instead of the
findings."""

from __future__ import annotations

import os
import sys
import textwrap
from collections import Counter
from collections.abc import Mapping

from advisor.budget.arith import (
    derivation,
    no_room_text,
    num,
    peak_text,
    size,
    unserved_text,
)
from advisor.model import Budget, CheckResult, Finding
from advisor.report.safe import safe_line
from advisor.rules import Registry

_COLORS = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m",
           "over": "\033[1;31m", "fits": "\033[32m", "notice": "\033[33m"}
_RESET = "\033[0m"
DEFAULT_WIDTH = 100


def use_color(stream=None, env: Mapping[str, str] | None = None) -> bool:
    """Colour on a terminal; NO_COLOR (any value) turns it off, FORCE_COLOR (any value
    but "0") turns it on even when piped; NO_COLOR wins when both are set."""
    env = os.environ if env is None else env
    stream = stream or sys.stdout
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if env.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def terminal_width(env: Mapping[str, str] | None = None, stream=None) -> int | None:
    """$COLUMNS, else the terminal's width; None when writing to a pipe or a file (a CI
    log, grep): then lines are not wrapped."""
    env = os.environ if env is None else env
    try:
        columns = int(env.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        stream = stream or sys.stdout
        if not (hasattr(stream, "isatty") and stream.isatty()):
            return None
        import shutil  # here: with zlib, bz2 and lzma, for a terminal only (2% of a check)

        columns = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return max(columns, 40)


def _paint(text: str, key: str, color: bool) -> str:
    return f"{_COLORS[key]}{text}{_RESET}" if color else text


def _wrap(line: str, width: int) -> list[str]:
    """One logical line, wrapped at spaces (words and paths are never broken);
    continuation lines indented four more than the line itself."""
    indent = len(line) - len(line.lstrip(" "))
    if not width or len(line) <= width:
        return [line]
    return textwrap.wrap(line, width=width, subsequent_indent=" " * (indent + 4),
                         break_long_words=False, break_on_hyphens=False) or [line]


def _verdict(b: Budget, color: bool) -> str:
    if b.refused is not None:
        return _paint("will not start (PA109)", "over", color)
    if b.no_room_once_streaming:  # peak 0 is not over (PA101)
        return _paint(no_room_text(b), "notice", color)
    if b.peak_is_floor:
        # A floor: over only when even the known clients are over (advisor.budget.arith).
        text = (f"OVER by at least {num(b.peak - b.usable)}" if b.peak > b.usable
                else f"cannot tell whether it fits the {num(b.usable)} usable")
        return f"{safe_line(peak_text(b))}, {_paint(text, 'over', color)}"
    if b.fits and b.unserved:
        # its clients cannot connect at all: a fit without them is not theirs (PA213)
        return _paint(unserved_text(len(b.unserved)), "notice", color)
    if b.fits:
        return _paint("fits", "fits", color)
    return _paint(f"OVER by {num(b.peak - b.usable)}", "over", color)


def budget_lines(b: Budget, *, verbose: bool, color: bool) -> list[str]:
    """The budget block; every line made safe (names come from files anyone can write)
    before colour is added."""
    src = b.version.source
    via = f"{src.key}, " if src.key and src.path else ""
    # usable, each contribution, peak against usable: derivation's lines, the same
    # PA101's detail and the JSON report's arithmetic print
    *head, peak = derivation(b)
    out = [safe_line(f"server {b.server} (PostgreSQL {num(b.version.value)}, {via}"
                     f"{src.label()}): ") + _verdict(b, color),
           *(f"  {x}" for x in head)]
    if verbose:  # the poolers' other side, fitting or not (PA201 says when it does not)
        out.extend(f"  {x}" for x in b.client_sides)
    out.extend(f"  cannot connect: {x}" for x in b.unserved)
    out.append(f"  {peak}")
    if verbose:
        out.extend(f"  not subtracted: {ns.term.show()}: {ns.why}" for ns in b.not_subtracted)
    if b.memory is not None and b.memory.limit is not None:
        mem = b.memory
        sign = "<=" if mem.total <= mem.limit.value else ">"
        out.append(f"  memory: worst case {size(mem.total)} {sign} {size(mem.limit.value)} "
                   f"({mem.limit.label}, {mem.limit.source.label()})")
        if verbose:
            out.extend(f"    {size(t.value)}: {t.label} ({t.source.label()})"
                       for t in mem.terms)
            out.append("    assumes: " + "; ".join(mem.assumptions))
    return [out[0], *(safe_line(x) for x in out[1:])]


def _in_focus(result: CheckResult) -> str:
    """With --changed-files: how many findings point into the changed files (the rest are
    the deployment's too: a budget changes where its servers are declared)."""
    if not getattr(result, "focus", None):
        return ""
    focus = set(result.focus)
    n = sum(1 for f in result.findings
            if f.location.path in focus or any(r.location.path in focus for r in f.related))
    return f" ({n} in the changed files)"


def finding_line(f: Finding, color: bool = False) -> str:
    sev = f.severity.value
    head = safe_line(f"{f.location.label()}: {f.code} ")
    return f"{head}[{_paint(sev, sev, color)}] {safe_line(f.message)}"


def finding_detail(f: Finding) -> list[str]:
    """What -v adds under a finding: its derivation, its numbers' lines, its fix."""
    lines = [f"    {x}" for x in f.detail.splitlines() if x.strip()]
    lines.extend(f"    at {r.location.label()}: {r.message}" for r in f.related)
    if f.fix is not None:
        lines.append(f"    fix: {f.fix.description}")
        if f.fix.replacement is not None:
            rp = f.fix.replacement
            lines.append(f"    edit: {rp.path}:{rp.line}: {rp.key} {rp.old} -> {rp.new}")
    return [safe_line(x) for x in lines]


def statistics(findings: list[Finding]) -> list[str]:
    """Counts per rule, most frequent first, aligned like `ruff --statistics`."""
    tally = Counter((f.code, f.name, f.severity.value) for f in findings)
    rows = sorted(tally.items(), key=lambda kv: (-kv[1], kv[0][0]))
    if not rows:
        return []
    width = max(len(str(n)) for _, n in rows)
    name_width = max(len(k[1]) for k, _ in rows)
    return [f"{n:>{width}}  {code}  {name:<{name_width}}  [{sev}]"
            for (code, name, sev), n in rows]


def _first(items: list[str], shown: int = 3) -> str:
    """The first `shown` items, and how many more."""
    more = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {more} more" if more > 0 else "")


def summary(result: CheckResult) -> str:
    counts = Counter(f.severity.value for f in result.findings)
    parts = [f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}"
             for s in ("error", "warning", "info") if counts[s]]
    text = ", ".join(parts) + _in_focus(result) if parts else "no findings"
    if result.unbudgeted and not result.budgets:
        # "no PostgreSQL server found" would be false: the repository runs some, unread
        n = len(result.unbudgeted)
        named = ", ".join(result.unbudgeted[:3]) + (f" and {n - 3} more" if n > 3 else "")
        # an entry of a helm command says so (advisor.engine.repository
        # _helm_installs_said); any other is a compose file's
        helm = sum("(helm install, " in u for u in result.unbudgeted)
        helmfile = sum("(helmfile, " in u for u in result.unbudgeted)
        where = " and ".join((["docker compose"] if helm + helmfile < n else [])
                             + (["helm install commands"] if helm else [])
                             + (["helmfile releases"] if helmfile else []))
        text += (f" (no server budgeted: {n} PostgreSQL server{'s' if n != 1 else ''} "
                 f"found in {where}, which {'is' if where == 'docker compose' else 'are'} "
                 f"not read: {named}"
                 + (f"; clients' own peaks, in no budget: {_first(result.client_peaks)}"
                    if result.client_peaks else "") + ")")
    elif not parts and not result.budgets:
        text += " (no PostgreSQL server found)"
    suppressed = len(getattr(result, "suppressed", ()) or ())
    if suppressed:
        text += f" ({suppressed} suppressed)"
    return text


def render(result: CheckResult, registry: Registry, *, color: bool = False,
           verbose: bool = False, show_statistics: bool = False,
           width: int | None = None) -> str:
    width = width or terminal_width() or 0
    out: list[str] = []
    # The budgets are wrapped to the terminal; finding lines are not, so each stays one
    # `path:line: CODE` line for grep and editors.
    for b in result.budgets:
        head, *block = budget_lines(b, verbose=verbose, color=color)
        out.append(head)  # the server's verdict stays one line, like a finding
        out.extend(w for line in block for w in _wrap(line, width))
        out.append("")
    for notice in result.notices:
        out.append(f"{_paint('notice', 'notice', color)}: {safe_line(notice)}")
    if result.notices:
        out.append("")
    if show_statistics:
        out.extend(statistics(result.findings))
    else:
        for f in result.findings:
            out.append(finding_line(f, color))
            if verbose:
                out.extend(finding_detail(f))
    if result.findings:
        out.append("")
    hint = ""
    if not verbose and any(f.detail or f.fix or f.related for f in result.findings):
        hint = "; -v shows each finding's arithmetic, sources and fix"
    out.append(summary(result) + hint)
    return "\n".join(out) + "\n"
