"""The topology and budgets `check` computes, without running the rules (advise, inspect)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from advisor.budget.slots import MemoryOptions
    from advisor.config.settings import Settings
    from advisor.model import Budget, Topology


class LoadError(Exception):
    """Bad paths, options or configuration; the message is for the user (exit 2)."""


class Loaded(NamedTuple):
    topology: Topology
    budgets: list[Budget]
    memory: MemoryOptions
    settings: Settings
    root: Path  # the repository: every path in the topology is relative to it


def load(
    paths: list[str], *, config: Path | None = None, pg_version: int | None = None
) -> tuple[Topology, list[Budget], MemoryOptions]:
    loaded = load_with_settings(paths, config=config, pg_version=pg_version)
    return loaded.topology, loaded.budgets, loaded.memory


def load_with_settings(
    paths: list[str], *, config: Path | None = None, pg_version: int | None = None,
    root: Path | None = None, values_files: list[str] | None = None,
    set_values: list[str] | None = None, release: str | None = None,
    namespace: str | None = None,
) -> Loaded:
    from advisor.budget.slots import budgets
    from advisor.engine.check import scan
    from advisor.engine.evaluate import memory_options
    from advisor.engine.options import CheckOptions, UsageError
    from advisor.rules import load_rules

    try:
        scanned = scan(paths, CheckOptions(
            config=config, pg_version=pg_version, root=root, values_files=values_files or [],
            set_values=set_values or [], release=release, namespace=namespace))
        memory = memory_options(scanned.settings, load_rules())
    except UsageError as exc:
        raise LoadError(str(exc)) from None
    topo = scanned.topology
    return Loaded(topo, budgets(topo, memory), memory, scanned.settings, scanned.root)
