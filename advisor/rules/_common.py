"""Helpers shared by rule modules: building findings from terms."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from advisor.budget.arith import num
from advisor.model import Location, RelatedLocation, Term


def related(terms: Iterable[Term], fmt: Callable[[float], str] = num
            ) -> tuple[RelatedLocation, ...]:
    """One related location per term that came from a file (not from a default)."""
    seen: set[tuple[str, int | None, str]] = set()
    out = []
    for t in terms:
        loc = t.source.location()
        if loc is None:
            continue
        key = (loc.path, loc.line, t.label)
        if key in seen:
            continue
        seen.add(key)
        out.append(RelatedLocation(location=loc, message=f"{t.label} = {fmt(t.value)}"))
    return tuple(out)


def primary(terms: Iterable[Term], fallback: Location) -> Location:
    """The first term that has a file position, else `fallback`."""
    for t in terms:
        loc = t.source.location()
        if loc is not None:
            return loc
    return fallback


def secs(term: Term) -> str:
    """`30 s (HikariCP connectionTimeout, k8s/app.yaml:9)`: a duration in seconds."""
    return f"{num(term.value)} s ({term.label}, {term.source.label()})"


def pg_seconds(setting: object) -> float:
    """A PostgreSQL time setting in seconds (its value is in its base unit, ms by
    default): one conversion for every rule that compares timeouts."""
    value = float(getattr(setting, "value", 0) or 0)
    unit = getattr(setting, "unit", None) or "ms"
    return value * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}.get(unit, 1e-3)
