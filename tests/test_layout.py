"""The package layout shows the flow (docs/architecture.md): read -> link -> budget ->
rules -> report, command families beside it, shared modules at the bottom. Imports
(lazy ones inside functions and TYPE_CHECKING ones included) point down that order and
never form a circle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "advisor"

# Lower number = lower floor. A module may import its own floor or lower ones.
FLOORS: dict[str, int] = {
    "advisor.model": 0,
    "advisor.options": 0,
    "advisor.lazyregex": 0,
    "advisor.guard": 1,
    "advisor.facts": 1,
    "advisor.rule_context": 1,
    "advisor.read": 2,
    "advisor.config": 3,  # read by the engine; link applies its declarations
    "advisor.link": 4,
    "advisor.budget": 5,
    "advisor.rules": 6,
    "advisor.report": 7,
    "advisor.engine": 8,
    "advisor.engine.options": 8,
    "advisor.engine.evaluate": 9,  # rules and suppressions; the reading adds suppressions
    "advisor.engine.repository": 10,
    "advisor.engine.check": 11,
    "advisor.scan": 12,
    "advisor.live": 13,
    "advisor.advise": 14,
    "advisor.ci": 15,
    "advisor.commands": 16,
    "advisor.cli": 17,
    "advisor.__main__": 18,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("advisor"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.startswith("advisor"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in imports_of(path) if m in modules and m != name}
            for name, path in modules.items()}


def floor_of(module: str) -> int | None:
    best = max((k for k in FLOORS if module == k or module.startswith(k + ".")),
               key=len, default=None)
    return None if best is None else FLOORS[best]


def test_every_module_has_a_floor() -> None:
    assert [m for m in graph() if m != "advisor" and floor_of(m) is None] == []


def test_imports_point_down() -> None:
    upward = []
    for module, targets in graph().items():
        mine = floor_of(module)
        for target in targets:
            theirs = floor_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                upward.append(f"{module} -> {target}")
    assert sorted(upward) == []


def test_no_import_circle() -> None:
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    assert circles == []
