"""YAML application config flattened to dotted keys with line numbers, the way Spring
Boot's YamlPropertySourceLoader flattens it (`a: {b: 1}` -> `a.b`, lists -> `a[0]`).

Loaded with advisor.read.yamlpos (libyaml; it builds no Python objects from tags) and
walked with a node budget, so an alias bomb costs at most `MAX_NODES` visits.
"""

from __future__ import annotations

from typing import Any

from advisor.model import Frozen

MAX_NODES = 100_000


class FlatEntry(Frozen, kw_only=True):
    key: str
    value: str | None  # None for YAML null / empty
    line: int  # 1-based


class YamlError(ValueError):
    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _scalar_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load_documents(text: str) -> list[list[FlatEntry]]:
    """Each YAML document as flattened entries. YamlError carries the line."""
    from advisor.read.yamlpos import MarkedYAMLError, YAMLError, load_all

    try:
        # Spring (SnakeYAML) refuses a repeated key, as ruamel.yaml did here before
        docs = list(load_all(text, unique_keys=True))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise YamlError(line, f"{exc.problem or exc.context}".strip()) from None
    except YAMLError as exc:
        raise YamlError(None, str(exc).splitlines()[0]) from None
    budget = [MAX_NODES]
    return [_flatten(doc, budget) for doc in docs if doc is not None]


def _flatten(doc: Any, budget: list[int]) -> list[FlatEntry]:
    out: list[FlatEntry] = []
    _walk(doc, "", 1, out, budget)
    return out


def _walk(node: Any, prefix: str, line: int, out: list[FlatEntry], budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise YamlError(line, f"more than {MAX_NODES} YAML nodes (alias expansion?)")
    if isinstance(node, dict):
        lc = getattr(node, "lc", None)
        for key, value in node.items():
            child_line = line
            if lc is not None:
                try:
                    child_line = lc.key(key)[0] + 1
                except (KeyError, TypeError):
                    child_line = line
            name = f"{prefix}.{key}" if prefix else str(key)
            _walk(value, name, child_line, out, budget)
        if not node and prefix:
            out.append(FlatEntry(key=prefix, value=None, line=line))
    elif isinstance(node, list):
        lc = getattr(node, "lc", None)
        for index, value in enumerate(node):
            child_line = line
            if lc is not None:
                try:
                    child_line = lc.item(index)[0] + 1
                except (KeyError, TypeError, IndexError):
                    child_line = line
            _walk(value, f"{prefix}[{index}]", child_line, out, budget)
    else:
        out.append(FlatEntry(key=prefix, value=_scalar_text(node), line=line))
