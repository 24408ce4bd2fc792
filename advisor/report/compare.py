"""Compare two check results (base revision -> head): per-server usable and peak before
and after, and which findings are new, fixed or unchanged, matched by fingerprint (rule,
file, subject), never by line, so moving a block does not make its findings "new"."""

from __future__ import annotations

import re
from collections import Counter

from pydantic import BaseModel, ConfigDict, Field

from advisor.model import Budget, CheckResult, Contribution, Finding, Term


class TermChange(BaseModel):
    """One number of a budget that differs between the revisions: which term of whose
    arithmetic, its value before and after, and where each came from."""

    model_config = ConfigDict(extra="forbid")

    where: str  # "usable", or the contribution path: "pgbouncer / appdb"
    label: str
    before: float | None = None  # None: the term is new
    after: float | None = None  # None: the term is gone
    source_before: str = ""
    source_after: str = ""


class ServerChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server_id: str
    server: str
    usable_before: float | None = None  # None: the server is not in that revision
    usable_after: float | None = None
    peak_before: float | None = None
    peak_after: float | None = None
    # The peak is a floor (Budget.peak_is_floor: clients unknown, unbounded, unplaced,
    # files unread): "fits" is never said of it, only "over by at least" or cannot tell.
    floor_before: bool = False
    floor_after: bool = False
    # Clients of the head that cannot connect through their PgBouncer (PA213): a fit
    # is not theirs (Budget.unserved).
    unserved_after: int = 0
    # The server does not start with the head's settings (PA109): no slots, no verdict.
    refused_after: bool = False
    # A server missing from one revision whose file that revision could not read (PA901
    # there): "path:line" of that finding. Not "new" or "removed": not known there.
    unread_before: str = ""
    unread_after: str = ""
    terms: list[TermChange] = Field(default_factory=list)

    @property
    def over_before(self) -> float | None:
        if self.peak_before is None or self.usable_before is None:
            return None
        return self.peak_before - self.usable_before

    @property
    def over_after(self) -> float | None:
        if self.peak_after is None or self.usable_after is None:
            return None
        return self.peak_after - self.usable_after

    @property
    def worse(self) -> bool:
        """Over after the change, and by more than before (a server that was not there,
        or fitted, and is now over counts too)."""
        after = self.over_after
        if after is None or after <= 0:
            return False
        before = self.over_before
        return before is None or after > max(before, 0)

    @property
    def change(self) -> float | None:
        if self.peak_before is None or self.peak_after is None:
            return None
        return self.peak_after - self.peak_before

    @property
    def fits_after(self) -> bool | None:
        """True: known to fit; False: over (a floor past usable is over too); None: no
        head budget, a server that does not start, or a floor within usable (cannot
        tell)."""
        if self.peak_after is None or self.usable_after is None or self.refused_after:
            return None
        if self.peak_after > self.usable_after:
            return False
        return None if self.floor_after else True


class NotKnown(BaseModel):
    """A base finding the head does not have because the head did not read what it is
    about (its own file, or its server's, did not parse: a PA901 there): not fixed."""

    model_config = ConfigDict(extra="forbid")

    finding: Finding
    unread: str  # "path:line" of the head's PA901


class ResultDiff(BaseModel):
    model_config = ConfigDict(extra="forbid")

    servers: list[ServerChange] = Field(default_factory=list)
    new: list[Finding] = Field(default_factory=list)
    fixed: list[Finding] = Field(default_factory=list)
    unchanged: list[Finding] = Field(default_factory=list)
    # Findings the base already had, about a server the change made worse: in `new` too,
    # so a regression is never hidden by its finding having existed before.
    regressed: list[Finding] = Field(default_factory=list)
    # Base findings gone at head only because the head did not read what they are about
    # (not in `fixed`): "not known at head (PA901 file:line)"
    not_known: list[NotKnown] = Field(default_factory=list)


class BaseReport(BaseModel):
    """`check --base REF`'s comparison, for the formats that carry it (JSON's "base",
    markdown's "Budget change" section; text prints basecheck.change_text): the
    revision, what of it was not read (the budget before lacks it) and the diff."""

    model_config = ConfigDict(extra="forbid")

    ref: str
    commit: str
    not_read: list[str] = Field(default_factory=list)
    diff: ResultDiff


def compare(base: CheckResult, head: CheckResult) -> ResultDiff:
    before = {b.server_id: b for b in base.budgets}
    after = {b.server_id: b for b in head.budgets}
    order = [b.server_id for b in head.budgets] + [
        sid for sid in before if sid not in after
    ]
    servers = [_unread(_change(before.get(sid), after.get(sid)), before.get(sid),
                       after.get(sid), base, head) for sid in order]
    new = _unmatched(head.findings, base.findings)
    fixed = _unmatched(base.findings, head.findings)
    not_known = [NotKnown(finding=f, unread=why) for f in fixed
                 if (why := _unread_at_head(f, servers, base, head))]
    fixed = [f for f in fixed if not _unread_at_head(f, servers, base, head)]
    worse = {s.server_id for s in servers if s.worse}
    new_ids = {id(f) for f in new}
    regressed = [f for f in head.findings
                 if id(f) not in new_ids and f.subject.split("|", 1)[0] in worse]
    new_ids |= {id(f) for f in regressed}
    new = [f for f in head.findings if id(f) in new_ids]
    unchanged = [f for f in head.findings if id(f) not in new_ids]
    return ResultDiff(servers=servers, new=new, fixed=fixed, unchanged=unchanged,
                      regressed=regressed, not_known=not_known)


def _unread_at_head(f: Finding, servers: list[ServerChange], base: CheckResult,
                    head: CheckResult) -> str:
    """The head's PA901 ("path:line") that explains why a base finding is missing at
    head, '' when none does: the head did not read the finding's own file, or the file
    of a server the finding is about (its id in the subject, its name in the message, or
    the finding on one of the clients the base counted on it). Such a finding is not
    known at head, not fixed (audit 13b: a client's PA106 was '1 fixed' when its
    server's Cluster did not parse)."""
    if f.code == "PA901":
        return ""
    unread = {g.location.path: g.location.label() for g in head.findings if g.code == "PA901"}
    if f.location.path in unread:
        return unread[f.location.path]
    budgets = {b.server_id: b for b in base.budgets}
    for s in servers:
        b = budgets.get(s.server_id)
        if not s.unread_after or b is None:
            continue
        clients = {(c.location.path, c.location.line) for c in b.contributions}
        if s.server_id in f.subject or f"server {s.server}" in f.message \
                or (f.location.path, f.location.line) in clients:
            return s.unread_after
    return ""


def _unread(s: ServerChange, b: Budget | None, a: Budget | None, base: CheckResult,
            head: CheckResult) -> ServerChange:
    """A server one revision has and the other does not, whose file the other could not
    read (a PA901 finding on it there): said as not read, not as added or removed."""
    def at(result: CheckResult, budget: Budget) -> str:
        for f in result.findings:
            if f.code == "PA901" and f.location.path == budget.location.path:
                return f.location.label()
        return ""

    if a is None and b is not None:
        s.unread_after = at(head, b)
    elif b is None and a is not None:
        s.unread_before = at(base, a)
    return s


def new_findings(base: CheckResult, head: CheckResult) -> list[Finding]:
    """Findings of `head` the base revision did not have (for `--new-only`)."""
    return _unmatched(head.findings, base.findings)


def _change(b: Budget | None, a: Budget | None) -> ServerChange:
    named = a or b
    assert named is not None
    return ServerChange(
        server_id=named.server_id,
        server=named.server,
        usable_before=b.usable if b else None,
        usable_after=a.usable if a else None,
        peak_before=b.peak if b else None,
        peak_after=a.peak if a else None,
        floor_before=b.peak_is_floor if b else False,
        floor_after=a.peak_is_floor if a else False,
        refused_after=a.refused is not None if a else False,
        unserved_after=len(a.unserved) if a else 0,
        terms=term_changes(b, a) if a and b else [],
    )


# A name a chart makes from the time it is rendered (`{{ now | date "2006-01-02-15-04-05" }}`,
# `now | unixEpoch`): 8 or more digits, with `-` or `_` between them (an object name has
# no `:`, and a dotted address is not a time).
_STAMP = re.compile(r"\d[\d_-]*\d")


def unstamped(text: str) -> str:
    """`text` with every run of 8 or more digits (a render time) as `#`: the base and the
    head are rendered seconds apart, so PostHog's `release-migrate-2026-12-08-01-10-46`
    Job is `...-01-11-00` at the other revision, the same Job (audit 51: every
    comparison said "1 new, 1 fixed" and moved its parallelism from one name to the
    other, and `--new-only` failed on an unchanged chart)."""
    def stamp(m: re.Match[str]) -> str:
        return "#" if sum(ch.isdigit() for ch in m.group()) >= 8 else m.group()

    return _STAMP.sub(stamp, text)


def _terms(b: Budget) -> dict[tuple[str, str], tuple[str, Term]]:
    """Every term of a budget keyed by (whose arithmetic, label), the name without a
    render time (unstamped), with the name as the budget prints it."""
    out: dict[tuple[str, str], tuple[str, Term]] = {
        ("usable", b.max_connections.label): ("usable", b.max_connections)}
    out.update({("usable", t.label): ("usable", t) for t in b.reserved})

    def walk(c: Contribution, prefix: str) -> None:
        where = f"{prefix} / {c.who}" if prefix else c.who
        for t in c.factors:
            out.setdefault((unstamped(where), t.label), (where, t))
        for p in c.parts:
            # a pooler's own arithmetic inside its clients' bound (budget.demand) keeps
            # the keys it has without one
            walk(p, prefix if p.who == c.who else where)

    for c in b.contributions:
        walk(c, "")
    return out


def term_changes(before: Budget, after: Budget) -> list[TermChange]:
    """The terms whose value differs (or that appear or disappear), in the head's order."""
    old, new = _terms(before), _terms(after)
    out = []
    for key in [*new, *(k for k in old if k not in new)]:
        where = (new.get(key) or old[key])[0]
        b, a = (old.get(key) or ("", None))[1], (new.get(key) or ("", None))[1]
        if b is not None and a is not None and b.value == a.value:
            continue
        out.append(TermChange(
            where=where, label=key[1],
            before=b.value if b else None, after=a.value if a else None,
            source_before=b.source.label() if b else "",
            source_after=a.source.label() if a else ""))
    return out


def _unmatched(these: list[Finding], others: list[Finding]) -> list[Finding]:
    """`these` that `others` do not have. A multiset match: two identical findings in
    head and one in base -> one is new. First by fingerprint; what is left, by rule and
    subject without the file: a file moved or renamed (a GitOps tree reorganised into
    another folder) keeps its findings, which are not new (kashalls/home-cluster
    50a4a6462: 6 findings of moved files were '10 new, 6 fixed' under --new-only)."""
    left = _by_key(these, others, lambda f: f.fingerprint)
    rest = _by_key(others, these, lambda f: f.fingerprint)
    return _by_key(left, rest, _moved_key)


def _moved_key(f: Finding) -> str:
    """Rule and subject without the file, and without a render time in a name (a Job a
    chart names from `now` is the same Job at both revisions: unstamped)."""
    subject = f.subject or f.message
    return unstamped(f"{f.code}|{subject.replace(f.location.path, '')}")


def _by_key(these: list[Finding], others: list[Finding], key) -> list[Finding]:
    pool = Counter(key(f) for f in others)
    out = []
    for f in these:
        k = key(f)
        if pool[k] > 0:
            pool[k] -= 1
        else:
            out.append(f)
    return out


def term_move(t: TermChange) -> str:
    """`checkout: HPA maxReplicas 40 -> 50 (k8s/hpa.yaml:12)`."""
    def n(v: float | None) -> str:
        return "-" if v is None else (str(int(v)) if float(v).is_integer() else f"{v:g}")

    where = t.source_after or t.source_before
    if t.source_before and t.source_after and t.source_before != t.source_after:
        where = f"{t.source_before} -> {t.source_after}"
    return f"{t.where}: {t.label} {n(t.before)} -> {n(t.after)} ({where})"


def status(s: ServerChange) -> str:
    """The head's verdict as the report states it (advisor.report.text): a floor within
    usable cannot tell, a floor past it is over by at least, a refused server none."""
    if s.peak_after is None or s.usable_after is None:
        return ""
    if s.refused_after:
        return "will not start (PA109)"
    over = s.peak_after - s.usable_after
    over_text = f"{int(over)}" if float(over).is_integer() else f"{over:g}"
    if s.floor_after:
        return f"over by at least {over_text}" if over > 0 else "cannot tell (peak is a floor)"
    return f"over by {over_text}" if over > 0 else "fits"
