"""Command-line interface (placeholder until the engine lands)."""

from __future__ import annotations

import sys


def main() -> None:
    from advisor import __version__

    if "--version" in sys.argv[1:]:
        print(f"pool-advisor {__version__}")
        return
    print("pool-advisor: not implemented yet", file=sys.stderr)
    raise SystemExit(2)
