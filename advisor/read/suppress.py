"""Inline suppressions: `pool-advisor: ignore[PA101,PA102] reason` in any comment.

A suppression applies to findings located on its own line or on the line after it
(so it can sit on a comment line above the value), in the same file.
"""

from __future__ import annotations

from advisor.lazyregex import lazy

_IGNORE = lazy(r"pool-advisor:\s*ignore\[([A-Za-z0-9_,\s-]+)\]")


def scan_suppressions(text: str, line_offset: int = 0) -> dict[int, list[str]]:
    """Map 1-based line numbers (shifted by `line_offset`) to the codes ignored there."""
    found: dict[int, list[str]] = {}
    for number, line in enumerate(text.splitlines(), start=1 + line_offset):
        for match in _IGNORE.finditer(line):
            codes = [c.strip() for c in match.group(1).split(",") if c.strip()]
            found.setdefault(number, []).extend(codes)
    return found


def is_suppressed(
    suppressions: dict[int, list[str]], line: int | None, code: str, name: str
) -> bool:
    if line is None:
        return False
    for at in (line, line - 1):
        codes = suppressions.get(at, ())
        if any(c.upper() == code or c.lower() == name or c.lower() == "all" for c in codes):
            return True
    return False
