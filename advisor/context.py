"""What a rule gets besides the topology: resolved options and derived budgets, never
I/O handles."""

from __future__ import annotations

from dataclasses import field
from typing import Any, TypeVar

from advisor.model import Budget, record

Options = TypeVar("Options")


@record
class RuleContext:
    pg_version: int | None = None  # --pg-version: overrides what the repo says
    # Per-rule options, validated against each rule's options class, keyed by rule code.
    rule_options: dict[str, Any] = field(default_factory=dict)
    budgets: list[Budget] = field(default_factory=list)

    def options_for(self, code: str, model: type[Options]) -> Options:
        found = self.rule_options.get(code)
        return found if isinstance(found, model) else model()

    def budget_for(self, server_id: str) -> Budget | None:
        return next((b for b in self.budgets if b.server_id == server_id), None)
