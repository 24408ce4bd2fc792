"""Markdown for people (GitHub-flavoured): the budget per server as a table, how each
number was reached in collapsible <details>, then the findings grouped by severity,
each linking its rule's documentation. The PR comment is built from these pieces."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import quote

from advisor.budget.arith import (
    Style,
    against_usable,
    contribution_lines,
    no_room_text,
    peak_expr,
    refusal_text,
    unserved_text,
    usable_expr,
)
from advisor.model import Budget, Contribution, Finding, Location, Severity, Term
from advisor.report.common import (
    DEFAULT_DOCS_URL,
    SEVERITY_ORDER,
    degrades,
    rule_doc_url,
    rule_info,
)

if TYPE_CHECKING:
    from advisor.model import CheckResult
    from advisor.report.compare import BaseReport, ResultDiff
    from advisor.rules import Registry

SEVERITY_TITLES = {Severity.error: "Errors", Severity.warning: "Warnings", Severity.info: "Info"}
SEVERITY_WORDS = {Severity.error: "error", Severity.warning: "warning", Severity.info: "info"}

# Typographic signs for the arithmetic, spelled as escapes so the source stays ASCII.
MINUS, TIMES, DASH, ARROW = "\u2212", "\u00d7", "\u2013", "\u2192"

# `@name` in a repository's object or file name must not notify a GitHub user or team
# when the comment is posted: a zero-width space after the @ (as Dependabot does).
NO_MENTION = "@&#8203;"
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#!])")


def md_text(text: str) -> str:
    """Plain text as inline GFM: markdown and HTML syntax escaped, line breaks kept as
    <br> so the text can sit in a table cell or a paragraph alike."""
    escaped = _MD_SPECIAL.sub(r"\\\1", text.replace("&", "&amp;")).replace("@", NO_MENTION)
    return "<br>".join(line.strip() for line in escaped.splitlines()) or escaped


def md_code(text: str) -> str:
    """Inline code span that survives backticks in `text` (CommonMark 6.1)."""
    text = " ".join(text.split())
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.1f}"


def size(n_bytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:,.1f} {unit}"
    return f"{number(n_bytes)} B"


def signed(value: float) -> str:
    return "±0" if value == 0 else f"{'+' if value > 0 else MINUS}{number(abs(value))}"


def where(loc: Location, source_url: str | None = None) -> str:
    """`path:line` (relative to the repository root), linked to the file at the reviewed
    commit when `source_url` is given (e.g. https://github.com/o/r/blob/<sha>)."""
    path = loc.path
    label = md_code(path if loc.line is None else f"{path}:{loc.line}")
    if source_url is None or path.startswith("/"):
        return label
    anchor = f"#L{loc.line}" if loc.line else ""
    return f"[{label}]({source_url.rstrip('/')}/{quote(path)}{anchor})"


# --- budgets -------------------------------------------------------------------------


def status(peak: float | None, usable: float | None, *, floor: bool = False,
           unserved: int = 0) -> str:
    """A floor (Budget.peak_is_floor) past usable is over by at least the difference;
    within it, it cannot tell, never "fits"; a fit some clients cannot connect to
    (`unserved` of them, PA213) is said so (the text report's verdicts)."""
    if peak is None or usable is None:
        return DASH if peak is None else "unknown"
    if floor:
        return (f"❌ over by at least {number(peak - usable)}" if peak > usable
                else f"⚠️ cannot tell: peak ≥ {number(peak)} is a floor")
    if peak <= usable and unserved:
        return f"⚠️ {unserved_text(unserved)} ({number(usable - peak)} spare)"
    if peak <= usable:
        return f"✅ fits ({number(usable - peak)} spare)"
    return f"❌ over by {number(peak - usable)}"


def _peak(value: float | None, floor: bool) -> float | str | None:
    return f"≥ {number(value)}" if floor and value is not None else value


def budget_table(budgets: list[Budget]) -> str:
    rows = [
        "| Server | max_connections | Reserved | Usable | Peak | Status |",
        "|---|--:|--:|--:|--:|---|",
    ]
    for b in budgets:
        reserved = sum(t.value for t in b.reserved)
        # a server PostgreSQL refuses to start has no slots (PA109): no usable, no verdict
        usable, verdict = ("—", "❌ will not start (PA109)") if b.refused \
            else (number(b.usable), status(b.peak, b.usable, floor=b.peak_is_floor,
                                             unserved=len(b.unserved)))
        if b.no_room_once_streaming:  # peak 0 is not over (PA101)
            verdict = f"⚠️ {md_text(no_room_text(b))}"
        peak = f"≥ {number(b.peak)}" if b.peak_is_floor else number(b.peak)
        rows.append(
            f"| {md_text(b.server)} | {number(b.max_connections.value)} | {number(reserved)} "
            f"| {usable} | {peak} | {verdict} |"
        )
    return "\n".join(rows)


def diff_table(diff: ResultDiff) -> str:
    rows = [
        "| Server | Usable | Peak before → after | Change | Status |",
        "|---|--:|--:|--:|---|",
    ]
    for s in diff.servers:
        usable = _arrow(s.usable_before, s.usable_after)
        peak = _arrow(_peak(s.peak_before, s.floor_before), _peak(s.peak_after, s.floor_after),
                      always=True)
        change = "new server" if s.peak_before is None else (
            "removed" if s.change is None else signed(s.change))
        if s.unread_before or s.unread_after:  # the file did not parse at one revision
            change = f"{'base' if s.unread_before else 'head'} not read (PA901 " \
                     f"{md_code(s.unread_before or s.unread_after)})"
        verdict = "❌ will not start (PA109)" if s.refused_after else \
            status(s.peak_after, s.usable_after, floor=s.floor_after,
                   unserved=s.unserved_after)
        rows.append(
            f"| {md_text(s.server)} | {usable} | {peak} | {change} | {verdict} |"
        )
    return "\n".join(rows)


def term_moves(diff: ResultDiff, source_url: str | None = None) -> str:
    """Which numbers of each budget changed, from which file:line: the reason a peak
    moved, so a reviewer sees it without reading the arithmetic."""
    lines = []
    for s in diff.servers:
        for t in s.terms:
            before = DASH if t.before is None else number(t.before)
            after = DASH if t.after is None else number(t.after)
            src = t.source_after or t.source_before
            path, _, line = src.rpartition(":")
            at = (where(Location(path=path, line=int(line)), source_url)
                  if path and line.isdigit() else md_text(src))
            lines.append(f"- {md_text(s.server)}: {md_text(t.where)}: {md_text(t.label)} "
                         f"{before} {ARROW} {after} ({at})")
    return "\n".join(lines)


def _arrow(before: float | str | None, after: float | str | None, *,
           always: bool = False) -> str:
    b = DASH if before is None else before if isinstance(before, str) else number(before)
    a = DASH if after is None else after if isinstance(after, str) else number(after)
    return f"{b} {ARROW} {a}" if always or before != after else a


def term(t: Term) -> str:
    return f"{number(t.value)} ({md_text(t.label)}, {md_text(t.source.label())})"


# The arithmetic is advisor.budget.arith's, as in every format; markdown only changes how a
# number, a term and the signs look.
MD = Style(number=number, term=term, name=md_text, times=TIMES, minus=MINUS)


def budget_details(b: Budget) -> str:
    """How `usable` and `peak` were reached, every number with its source."""
    lines = [f"- **usable** {usable_expr(b, MD)}" if b.refused is None
             else f"- **refused at start-up** (PA109): {refusal_text(b.refused, MD)}"]
    for c in b.contributions:
        lines.extend(_contribution(c))
    le = "\u2264"  # the arithmetic is text's; only the sign is typographic
    lines.append(f"- **peak** {peak_expr(b, MD)}{against_usable(b, MD, le=le)}")
    for ns in b.not_subtracted:
        lines.append(f"- not subtracted: {term(ns.term)}: {md_text(ns.why)}")
    if b.memory is not None and b.memory.terms:
        lines.append(f"- worst-case memory {size(b.memory.total)} = "
                     + " + ".join(f"{size(t.value)} ({md_text(t.label)}, "
                                  f"{md_text(t.source.label())})" for t in b.memory.terms))
        if b.memory.limit is not None:
            lines.append(f"  - limit: {size(b.memory.limit.value)} "
                         f"({md_text(b.memory.limit.label)}, "
                         f"{md_text(b.memory.limit.source.label())})")
        lines.extend(f"  - assumption: {md_text(a)}" for a in b.memory.assumptions)
    what = "why it will not start" if b.refused else f"how usable {number(b.usable)}"
    return _details(f"{b.server}: {what} and peak {number(b.peak)} were computed"
                    if not b.refused else f"{b.server}: {what}, and its peak {number(b.peak)}",
                    "\n".join(lines))


def _contribution(c: Contribution) -> list[str]:
    # contribution_lines indents parts by two spaces a level: a nested markdown list.
    return [f"{' ' * (len(x) - len(x.lstrip()))}- {x.strip()}"
            for x in contribution_lines(c, 0, MD)]


def _details(summary: str, body: str) -> str:
    # Blank lines around the body: GFM ends an HTML block at a blank line, so the
    # markdown inside is parsed as markdown.
    shown = html.escape(summary).replace("@", NO_MENTION)
    return f"<details>\n<summary>{shown}</summary>\n\n{body}\n\n</details>"


# --- findings ------------------------------------------------------------------------


def counts(findings: Iterable[Finding]) -> str:
    tally = {s: 0 for s in SEVERITY_ORDER}
    for f in findings:
        tally[f.severity] += 1
    parts = [f"{n} {SEVERITY_WORDS[s]}{'s' if n != 1 and s != Severity.info else ''}"
             for s, n in tally.items() if n]
    return ", ".join(parts) or "no findings"


def finding_block(
    f: Finding,
    registry: Registry,
    *,
    docs_url: str = DEFAULT_DOCS_URL,
    source_url: str | None = None,
    new: bool = False,
    worse: bool = False,
    details: bool = True,
) -> str:
    info = rule_info(registry, f)
    title = f"{f.code} {md_text(info.name)}"
    if info.registered:
        title = f"[{title}]({rule_doc_url(docs_url, info.code, info.name)})"
    # NEW button; a finding the base had, about a budget the change made worse, is new too
    badge = "\U0001f195 \U0001f4c8 worse: " if worse else "\U0001f195 " if new else ""
    head = f"{badge}**{title}** at {where(f.location, source_url)}: {md_text(f.message)}"
    if not details:
        return head
    items = [f"- {md_text(x.strip())}" for x in f.detail.splitlines() if x.strip()]
    items += [f"- {md_text(r.message)}: {where(r.location, source_url)}" for r in f.related]
    if f.fix is not None:
        fix = f"- **Fix:** {md_text(f.fix.description)}"
        r = f.fix.replacement
        if r is not None:
            at = Location(path=r.path, line=r.line)
            edit = f"{md_code(r.key)} {md_code(r.old)} {ARROW} {md_code(r.new)}"
            fix += f" ({where(at, source_url)}: {edit})"
        items.append(fix)
    if not items:
        return head
    title = "Arithmetic, sources and fix" if f.detail else "Sources and fix"
    return f"{head}\n\n{_details(title, chr(10).join(items))}"


def findings_section(
    findings: list[Finding],
    registry: Registry,
    *,
    docs_url: str = DEFAULT_DOCS_URL,
    source_url: str | None = None,
    new_fingerprints: set[str] | None = None,
    worse_fingerprints: set[str] | None = None,
    details: bool = True,
    totals: dict[Severity, int] | None = None,
) -> str:
    """Findings under one heading per severity. `totals`: how many there are in all,
    when `findings` is only the part that fits ("Errors (40 of 1,000)")."""
    out = []
    for sev in SEVERITY_ORDER:
        group = [f for f in findings if f.severity == sev]
        if not group:
            continue
        total = (totals or {}).get(sev, len(group))
        shown = number(len(group)) if total == len(group) else \
            f"{number(len(group))} of {number(total)}"
        out.append(f"#### {SEVERITY_TITLES[sev]} ({shown})")
        for f in group:
            is_new = new_fingerprints is not None and f.fingerprint in new_fingerprints
            is_worse = worse_fingerprints is not None and f.fingerprint in worse_fingerprints
            out.append(finding_block(f, registry, docs_url=docs_url, source_url=source_url,
                                     new=is_new, worse=is_worse, details=details))
    return "\n\n".join(out)


def headline(result: CheckResult) -> str:
    over = [b for b in result.budgets if not b.fits]
    if not result.findings and not over:
        n = len(result.budgets)
        servers = f"{n} server{'s' if n != 1 else ''}"
        return f"✅ **fits**: every connection budget fits ({servers}), no findings."
    # ❌ for an error, a budget over (a floor past usable too) or a server that will not
    # start; a floor within usable cannot tell, a warning, not a failure (audit 51: the
    # PostHog comment's "❌ 5 warnings" over a table saying "⚠️ cannot tell")
    mark = "❌" if any(f.severity == Severity.error for f in result.findings) \
        or any(b.over or b.refused is not None for b in over) else "⚠️"
    return f"{mark} **{counts(result.findings)}**"


def render(
    result: CheckResult,
    registry: Registry,
    *,
    docs_url: str = DEFAULT_DOCS_URL,
    source_url: str | None = None,
    base: BaseReport | None = None,
) -> str:
    parts = ["### pool-advisor", headline(result)]
    if base is not None:
        parts.append(base_section(base, source_url))
    if result.budgets:
        parts.append(budget_table(result.budgets))
        parts.extend(budget_details(b) for b in result.budgets)
    if result.findings:
        parts.append(findings_section(result.findings, registry, docs_url=docs_url,
                                      source_url=source_url))
    if result.notices:
        parts.append(notices_section(result.notices))
    return "\n\n".join(parts) + "\n"


def base_section(base: BaseReport, source_url: str | None = None) -> str:
    """`check --base REF`: what the base revision did not read, each server's usable and
    peak before -> after with the head's verdict, the numbers that moved and the
    findings' counts, as the text report's change table says them (audit 51: the
    markdown of a --base run said none of it)."""
    diff = base.diff
    lines = [f"#### Budget change against {md_code(base.ref)} ({md_code(base.commit[:12])})"]
    if base.not_read:
        lines.append("\n".join(f"- ⚠️ not read at {md_code(base.ref)}: {md_text(u)}; the "
                               "budget before lacks it" for u in base.not_read))
    if diff.servers:
        lines.append(diff_table(diff))
    moves = term_moves(diff, source_url)
    if moves:
        lines.append(moves)
    worse = f" ({len(diff.regressed)} of them existed but got worse)" if diff.regressed else ""
    unknown = f", {len(diff.not_known)} not known at head" if diff.not_known else ""
    lines.append(f"Findings: {len(diff.new)} new{worse}, {len(diff.fixed)} fixed{unknown}, "
                 f"{len(diff.unchanged)} unchanged (matched by fingerprint).")
    return "\n\n".join(lines)


def notices_section(notices: list[str]) -> str:
    """Notices, those that lower the numbers' accuracy first and marked."""
    ordered = sorted(notices, key=lambda n: not degrades(n))
    lines = [f"- {'⚠️ ' if degrades(n) else ''}{md_text(n)}" for n in ordered]
    return "#### Notices\n\n" + "\n".join(lines)
