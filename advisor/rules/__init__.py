"""Rule registry. One module per rule; each registers one pure function with `@rule`.

A rule is `(topology, context) -> Iterable[Finding]`: no I/O, no global state. Its
docstring is its documentation (What it does / Why is this bad / Example / Use
instead / Options / References), printed by `pool-advisor explain`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from msgspec import Struct, field

from advisor.model import Severity
from advisor.options import OPTIONS_CONFIG, options_class

if TYPE_CHECKING:
    from advisor.model import Finding, Topology
    from advisor.rule_context import RuleContext

RuleFunc = Callable[["Topology", "RuleContext"], Iterable["Finding"]]


@options_class
class NoOptions:
    __pydantic_config__ = OPTIONS_CONFIG


class Rule(Struct, frozen=True):
    code: str
    name: str
    severity: Severity
    summary: str
    func: RuleFunc
    options: type = NoOptions
    module: str = ""

    @property
    def doc(self) -> str:
        return (self.func.__doc__ or "").strip()


class Registry(Struct):
    rules: dict[str, Rule] = field(default_factory=dict)

    def add(self, r: Rule) -> None:
        if r.code in self.rules:
            raise ValueError(f"duplicate rule code {r.code}")
        if any(x.name == r.name for x in self.rules.values()):
            raise ValueError(f"duplicate rule name {r.name}")
        self.rules[r.code] = r

    def resolve(self, code_or_name: str) -> Rule | None:
        key = code_or_name.strip()
        if key.upper() in self.rules:
            return self.rules[key.upper()]
        return next((r for r in self.rules.values() if r.name == key.lower()), None)

    def ordered(self) -> list[Rule]:
        return [self.rules[c] for c in sorted(self.rules)]


_PENDING: list[Rule] = []


def rule(
    code: str,
    name: str,
    severity: Severity,
    summary: str,
    options: type = NoOptions,
) -> Callable[[RuleFunc], RuleFunc]:
    """Declare a rule. Collected by `load_rules()`; the decorator itself keeps no state
    beyond the module-level pending list that `load_rules` drains into a Registry."""

    def wrap(func: RuleFunc) -> RuleFunc:
        _PENDING.append(
            Rule(code, name, severity, summary, func, options, module=func.__module__)
        )
        return func

    return wrap


def load_rules() -> Registry:
    """Import every rule module in this package and return a fresh registry."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    registry = Registry()
    seen: dict[str, Rule] = {}
    for r in _PENDING:
        seen[r.code] = r  # re-imports are idempotent
    for r in seen.values():
        registry.add(r)
    return registry
