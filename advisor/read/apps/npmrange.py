"""An npm version range (package.json `"typeorm": "^0.3.9"`) as the versions it allows,
enough to tell whether every one of them is before, or every one from, a release where
a library's behaviour changed. Pure; forms not read (`||`, tags, git URLs) allow any.
"""

from __future__ import annotations

import re

Version = tuple[int, int, int]

_PART = r"(\d+|[xX*])"
_VERSION = re.compile(rf"v?{_PART}(?:\.{_PART}(?:\.{_PART})?)?(?:-[\w.]+)?(?:\+[\w.]+)?$")


def _parts(text: str) -> list[int | None] | None:
    """`0.3.9` -> [0, 3, 9]; `0.3` / `0.3.x` -> [0, 3, None]; not a version -> None."""
    m = _VERSION.match(text)
    if m is None:
        return None
    return [int(g) if g is not None and g.isdigit() else None for g in m.groups()]


def _caret(p: list[int | None]) -> tuple[Version, Version]:
    a, b, c = (x or 0 for x in p)
    if a or p[1] is None:
        return (a, b, c), (a + 1, 0, 0)
    if b or p[2] is None:
        return (0, b, c), (0, b + 1, 0)
    return (0, 0, c), (0, 0, c + 1)


def _span(p: list[int | None]) -> tuple[Version, Version]:
    """`1.2.3` exactly; `1.2` / `1.2.x` all of 1.2; `1` all of 1 (also `~` of them)."""
    a, b, c = (x or 0 for x in p)
    if p[1] is None:
        return (a, 0, 0), (a + 1, 0, 0)
    if p[2] is None:
        return (a, b, 0), (a, b + 1, 0)
    return (a, b, c), (a, b, c + 1)


def bounds(spec: str) -> tuple[Version | None, Version | None]:
    """(lowest version allowed, first version not allowed above them); None: not known
    (no lower bound read, or no upper bound)."""
    spec = spec.strip()
    if spec.startswith("npm:"):  # an alias: "npm:typeorm@^0.3.9"
        spec = spec.rpartition("@")[2]
    if "||" in spec or not spec:
        return None, None
    low: Version | None = None
    high: Version | None = None
    for word in re.findall(r"(?:[<>]=?|[=^~])?\s*[^\s<>=^~]+", spec):
        op = word[:2] if word[:2] in (">=", "<=") else word[:1] if word[:1] in "<>=^~" else ""
        rest = word[len(op):].strip()
        p = _parts(rest)
        if p is None or p[0] is None:
            return None, None  # a tag (latest, next), a URL, `*`
        if op in ("", "="):
            lo, hi = _span(p)
        elif op == "^":
            lo, hi = _caret(p)
        elif op == "~":  # patch changes: ~1.2.3 is >=1.2.3 <1.3.0, ~1.2 all of 1.2
            lo, hi = _span([*p[:2], None])
            lo = lo if p[2] is None else (*lo[:2], p[2])
        elif op == ">=":
            lo, hi = _span(p)[0], None
        elif op == ">":
            lo, hi = _span(p)[1], None
        elif op == "<":
            lo, hi = None, _span(p)[0]
        else:  # <=
            lo, hi = None, _span(p)[1]
        low = lo if low is None or (lo is not None and lo > low) else low
        high = hi if high is None or (hi is not None and hi < high) else high
    return low, high


def all_before(spec: str, release: Version) -> bool | None:
    """True when every version `spec` allows is before `release`, False when every one
    is `release` or later, None when it allows both (or is not read)."""
    low, high = bounds(spec)
    if high is not None and high <= release:
        return True
    if low is not None and low >= release:
        return False
    return None
