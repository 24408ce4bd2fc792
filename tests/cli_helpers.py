"""Running the CLI the way users do: a fresh interpreter, `python -m advisor`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", **(env or {})}
    full_env.pop("GITHUB_ACTIONS", None) if "GITHUB_ACTIONS" not in (env or {}) else None
    return subprocess.run([sys.executable, "-m", "advisor", *args], cwd=cwd or REPO,
                          env=full_env, input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)
