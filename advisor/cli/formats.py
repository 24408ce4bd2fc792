"""The choices of check's --format and --fail-on (no dependency: the typer application
declares its options with them without importing the check's own module)."""

from __future__ import annotations

from enum import StrEnum


class Format(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"
    gitlab = "gitlab"
    rdjson = "rdjson"
    markdown = "markdown"


class Level(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"
