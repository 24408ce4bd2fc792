"""What a rule gets besides the topology: resolved options and derived budgets, never
I/O handles."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from advisor.model import Budget


class RuleContext(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    pg_version: int | None = None  # --pg-version: overrides what the repo says
    # Per-rule options, validated against each rule's options model, keyed by rule code.
    rule_options: dict[str, BaseModel] = Field(default_factory=dict)
    budgets: list[Budget] = Field(default_factory=list)

    def options_for(self, code: str, model: type[BaseModel]) -> BaseModel:
        found = self.rule_options.get(code)
        return found if isinstance(found, model) else model()

    def budget_for(self, server_id: str) -> Budget | None:
        return next((b for b in self.budgets if b.server_id == server_id), None)
