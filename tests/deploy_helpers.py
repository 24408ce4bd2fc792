"""Small helpers shared by the tests/test_deploy_*.py files."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def line_no(path: Path, needle: str, start: int = 1) -> int:
    """1-based line of the first line at or after `start` containing `needle`."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if number >= start and needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def by_ref(objects, ref):
    found = [o for o in objects if o.ref == ref]
    assert found, f"{ref} not in {[o.ref for o in objects]}"
    return found[0]
