"""What a rule gets besides the topology: resolved options and derived budgets, never
I/O handles."""

from __future__ import annotations

from typing import Any, TypeVar

from msgspec import field

from advisor.model import Budget, Record

Options = TypeVar("Options")


class RuleContext(Record, kw_only=True):
    pg_version: int | None = None  # --pg-version: overrides what the repo says
    # Per-rule options, validated against each rule's options class, keyed by rule code.
    rule_options: dict[str, Any] = field(default_factory=dict)
    budgets: list[Budget] = field(default_factory=list)

    def options_for(self, code: str, model: type[Options]) -> Options:
        found = self.rule_options.get(code)
        return found if isinstance(found, model) else model()

    def budget_for(self, server_id: str) -> Budget | None:
        return next((b for b in self.budgets if b.server_id == server_id), None)
