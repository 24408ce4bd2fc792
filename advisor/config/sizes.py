"""Sizes as the configuration file writes them: `16GiB`, `16Gi`, `512MB` or a number of
bytes."""

from __future__ import annotations

from advisor.lazyregex import lazy

_SIZE = lazy(
    r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|KiB|kB|MB|MiB|GB|GiB|TB|TiB|Ki|Mi|Gi|Ti|K|M|G|T)?\s*$")
_SIZE_FACTORS = {
    None: 1, "B": 1, "K": 1000, "KB": 1000, "kB": 1024, "KiB": 1024, "Ki": 1024,
    "M": 1000**2, "MB": 1024**2, "MiB": 1024**2, "Mi": 1024**2,
    "G": 1000**3, "GB": 1024**3, "GiB": 1024**3, "Gi": 1024**3,
    "T": 1000**4, "TB": 1024**4, "TiB": 1024**4, "Ti": 1024**4,
}


def parse_size(text: str | int | float) -> int:
    """Bytes from `16GiB`, `16Gi`, `512MB` (PostgreSQL meaning: 1024-based) or a number."""
    if isinstance(text, int | float):
        return int(text)
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (examples: 16GiB, 512Mi, 8GB)")
    return int(float(m.group(1)) * _SIZE_FACTORS[m.group(2)])
