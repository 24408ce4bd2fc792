"""Run Microsoft's SARIF validator (npm @microsoft/sarif-multitool) with GitHub's
ingestion rules and return what it reported. scripts/test installs it into .tools/."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def multitool() -> str:
    local = REPO / ".tools/node_modules/.bin/sarif-multitool"
    found = str(local) if local.exists() else shutil.which("sarif-multitool")
    if not found:
        pytest.skip("sarif-multitool not installed (npm install --prefix .tools "
                    "@microsoft/sarif-multitool; scripts/test does this)")
    return found


def validate(files: list[Path], out: Path) -> list[dict]:
    """Validate `files`; return every result (errors, warnings and notes) the tool logged.

    The npm wrapper runs the native tool through a shell (spawnSync shell: true), so
    each argument is shell-quoted, or `Gh;Sarif` would end the command at the `;`.
    Its exit code is 0 even when rules fail, so the log it writes is what counts."""
    out.unlink(missing_ok=True)
    args = ["validate", "--rule-kind", "Gh;Sarif", "--output", str(out), *map(str, files)]
    proc = subprocess.run(
        [multitool(), *(shlex.quote(a) for a in args)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = json.loads(out.read_text(encoding="utf-8-sig"))
    run = log["runs"][0]
    for inv in run.get("invocations", []):
        assert inv.get("executionSuccessful") is True, (inv, proc.stdout)
        bad = [n for n in inv.get("toolExecutionNotifications", [])
               + inv.get("toolConfigurationNotifications", [])
               if n.get("level", "warning") in ("error", "warning")]
        assert not bad, bad
    assert f"{len(files)} files scanned" in proc.stdout, proc.stdout
    return run.get("results", [])


def problems(results: list[dict]) -> list[str]:
    """Errors and warnings (a result without `level` is a warning in SARIF)."""
    return [
        f"{r['ruleId']} {r.get('level', 'warning')}: {r['message']}"
        for r in results
        if r.get("level", "warning") in ("error", "warning")
    ]
