"""What a check is asked to do (CheckOptions), and UsageError: options or a
configuration that cannot be used (exit code 2)."""

from __future__ import annotations

from pathlib import Path

from msgspec import Struct, field


class CheckOptions(Struct):
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    config: Path | None = None
    pg_version: int | None = None
    excludes: list[str] = field(default_factory=list)
    stdin_text: str | None = None  # YAML stream when a path is "-"
    # For a chart given on the command line: `check charts/api --values values-prod.yaml`
    values_files: list[str] = field(default_factory=list)
    set_values: list[str] = field(default_factory=list)
    release: str | None = None
    namespace: str | None = None
    # The boundary of every read and the base of every shown path (--root); default:
    # the git top-level holding the paths, else their common folder.
    root: Path | None = None
    # The paths are the changed files pre-commit passes: the whole repository that holds
    # them is read (a budget is the deployment's, not one file's); they are the focus.
    changed_files: bool = False
    # Per-file parse results cached in the repository's .pool-advisor-cache/ (advisor.read.cache):
    # the command line's default (--no-cache), off for library calls and --base's checkout.
    cache: bool = False


class UsageError(Exception):
    """Bad options or configuration: exit code 2."""
