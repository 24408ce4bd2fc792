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
    # The engine's scan stages, as `run_check` runs them; callers here need the Topology.
    from advisor.budget import MemoryOptions, budgets
    from advisor.engine import CheckOptions, UsageError, _merge, _rule_options, _settings, scan_path
    from advisor.model import Topology
    from advisor.rules import load_rules

    options = CheckOptions(config=config, pg_version=pg_version)
    try:
        settings = _settings(paths, options)
        memory = _rule_options(settings, load_rules()).get("PA301")
    except UsageError as exc:
        raise LoadError(str(exc)) from None
    topo = Topology()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise LoadError(f"{raw}: no such file or directory")
        _merge(topo, scan_path(path, settings, options))
    memory_options = memory if isinstance(memory, MemoryOptions) else MemoryOptions()
    return topo, budgets(topo, memory_options), memory_options, settings
