"""Numbers as configuration binders read them."""

from __future__ import annotations


def parse_int(text: str | None) -> int | None:
    """An integer as config binders accept it: surrounding whitespace, +/-, 0x hex."""
    if text is None:
        return None
    t = str(text).strip()
    try:
        if t.lower().startswith(("0x", "-0x", "+0x")):
            return int(t, 16)
        return int(t, 10)
    except ValueError:
        return None
