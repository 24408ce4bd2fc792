"""Subcommands beyond `check`: each module here has `register(app: typer.Typer) -> None`.

cli.py registers every module named in COMMANDS (module names under advisor.commands).
Modules import their heavy dependencies inside the command, so registering is cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

COMMANDS: list[str] = [
    "sweep",
    "inspect",
    "comment",
    "advise",
]


def register_all(app: typer.Typer) -> None:
    for name in COMMANDS:
        importlib.import_module(f"advisor.commands.{name}").register(app)
