"""Locate the shared evidence data (../shared/data beside the repository, never copied in)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
# CI clones the repo with shared/ beside it; a git worktree elsewhere may point at it.
SHARED_DATA = Path(
    os.environ.get("POOL_ADVISOR_SHARED_DATA") or REPO_ROOT.parent / "shared" / "data"
)


def shared_file(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.is_file():
        pytest.skip(f"shared evidence file {path} is absent (../shared/data beside the repo)")
    return path
