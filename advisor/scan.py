"""The topology and budgets `check` computes, without running the rules (advise, inspect)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.budget import MemoryOptions
    from advisor.config import Settings
    from advisor.model import Budget, Topology


class LoadError(Exception):
    """Bad paths, options or configuration; the message is for the user (exit 2)."""


def load(
    paths: list[str], *, config: Path | None = None, pg_version: int | None = None
) -> tuple[Topology, list[Budget], MemoryOptions]:
    topo, budgets, memory, _ = load_with_settings(paths, config=config, pg_version=pg_version)
    return topo, budgets, memory


def load_with_settings(
    paths: list[str], *, config: Path | None = None, pg_version: int | None = None
) -> tuple[Topology, list[Budget], MemoryOptions, Settings]:
    from advisor.budget import budgets
    from advisor.engine import CheckOptions, UsageError, memory_options, scan
    from advisor.rules import load_rules

    try:
        scanned = scan(paths, CheckOptions(config=config, pg_version=pg_version))
        memory = memory_options(scanned.settings, load_rules())
    except UsageError as exc:
        raise LoadError(str(exc)) from None
    topo = scanned.topology
    return topo, budgets(topo, memory), memory, scanned.settings
