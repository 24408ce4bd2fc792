"""Compare two check results (base revision -> head): per-server usable and peak before
and after, and which findings are new, fixed or unchanged, matched by fingerprint (rule,
file, subject), never by line, so moving a block does not make its findings "new"."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict, Field

from advisor.model import Budget, CheckResult, Finding


class ServerChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server_id: str
    server: str
    usable_before: float | None = None  # None: the server is not in that revision
    usable_after: float | None = None
    peak_before: float | None = None
    peak_after: float | None = None

    @property
    def change(self) -> float | None:
        if self.peak_before is None or self.peak_after is None:
            return None
        return self.peak_after - self.peak_before

    @property
    def fits_after(self) -> bool | None:
        if self.peak_after is None or self.usable_after is None:
            return None
        return self.peak_after <= self.usable_after


class ResultDiff(BaseModel):
    model_config = ConfigDict(extra="forbid")

    servers: list[ServerChange] = Field(default_factory=list)
    new: list[Finding] = Field(default_factory=list)
    fixed: list[Finding] = Field(default_factory=list)
    unchanged: list[Finding] = Field(default_factory=list)


def compare(base: CheckResult, head: CheckResult) -> ResultDiff:
    before = {b.server_id: b for b in base.budgets}
    after = {b.server_id: b for b in head.budgets}
    order = [b.server_id for b in head.budgets] + [
        sid for sid in before if sid not in after
    ]
    servers = [_change(before.get(sid), after.get(sid)) for sid in order]
    new = _unmatched(head.findings, base.findings)
    fixed = _unmatched(base.findings, head.findings)
    new_ids = {id(f) for f in new}
    unchanged = [f for f in head.findings if id(f) not in new_ids]
    return ResultDiff(servers=servers, new=new, fixed=fixed, unchanged=unchanged)


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
    )


def _unmatched(these: list[Finding], others: list[Finding]) -> list[Finding]:
    # A multiset match: two identical findings in head and one in base -> one is new.
    pool = Counter(f.fingerprint for f in others)
    out = []
    for f in these:
        if pool[f.fingerprint] > 0:
            pool[f.fingerprint] -= 1
        else:
            out.append(f)
    return out
