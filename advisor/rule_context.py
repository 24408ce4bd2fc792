"""What a rule gets besides the topology: resolved options and derived budgets, never
I/O handles."""

from __future__ import annotations

from typing import Any, TypeVar

from msgspec import field

from advisor.model import Budget, Record

Options = TypeVar("Options")


class SuppressionUse(Record, kw_only=True):
    """What PA902 needs: every suppression seen, the ones a finding matched, and which
    codes name a rule (code or name -> code) and were selected in this run."""

    # (path, line) -> codes of an `ignore[...]` comment
    lines: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    # (entity id, path, line) -> codes of a `pool-advisor.io/ignore` annotation
    annotations: dict[tuple[str, str, int | None], list[str]] = field(default_factory=dict)
    used: set[tuple[str, int | None, str]] = field(default_factory=set)
    known: dict[str, str] = field(default_factory=dict)
    selected: set[str] = field(default_factory=set)


class RuleContext(Record, kw_only=True):
    pg_version: int | None = None  # --pg-version: overrides what the repo says
    # Per-rule options, validated against each rule's options class, keyed by rule code.
    rule_options: dict[str, Any] = field(default_factory=dict)
    budgets: list[Budget] = field(default_factory=list)
    suppression_use: SuppressionUse | None = None  # set for PA902, after the other rules

    def options_for(self, code: str, model: type[Options]) -> Options:
        found = self.rule_options.get(code)
        return found if isinstance(found, model) else model()

    def budget_for(self, server_id: str) -> Budget | None:
        return next((b for b in self.budgets if b.server_id == server_id), None)
