"""Output formats. One module per format, each with
`render(result: CheckResult, registry: Registry) -> str`; imported only when chosen so
`pool-advisor check` does not pay for formats it does not print."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.model import CheckResult
    from advisor.rules import Registry

    Renderer = Callable[[CheckResult, Registry], str]

FORMATS: dict[str, str] = {
    "text": "advisor.report.text",
    "json": "advisor.report.json",
    "sarif": "advisor.report.sarif",
    "github": "advisor.report.github",
    "gitlab": "advisor.report.gitlab",
    "rdjson": "advisor.report.rdjson",
    "markdown": "advisor.report.markdown",
}


def get_renderer(name: str) -> Renderer:
    """The `render` function of format `name`; ValueError naming the known formats."""
    try:
        module_path = FORMATS[name]
    except KeyError:
        known = ", ".join(sorted(FORMATS))
        raise ValueError(f"unknown format {name!r} (known: {known})") from None
    return importlib.import_module(module_path).render
