"""Regular expressions compiled on first use instead of at import.

sre compiles in Python: a module-level `re.compile` costs its share of every run's
start-up even when the run never meets the input it is for (a Dockerfile COPY line, a
Hikari setter, a lambda's environment). `lazy(...)` stands for the compiled pattern and
compiles it the first time one of its methods is asked for; after that the methods are
the compiled pattern's own (plain attribute look-ups, no indirection per call).
Only for patterns used through their methods (`.search(...)`), never passed to
`re.sub(pattern, ...)` or checked with isinstance.
"""

from __future__ import annotations

import re
from typing import Any, cast

_METHODS = ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer",
            "pattern", "flags", "groups", "groupindex")


class _LazyPattern:
    def __init__(self, pattern: str, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        # Called only for attributes not yet set: the first use compiles and binds them.
        compiled = re.compile(*self._source)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self._source[0]!r}, {self._source[1]!r})"


def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, compiled when first used."""
    return cast(re.Pattern[str], _LazyPattern(pattern, flags))
