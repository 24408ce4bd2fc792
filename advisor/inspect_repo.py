"""Compare a live report with what the repository declares (through the core engine)."""

from __future__ import annotations

from pathlib import Path

from advisor.inspect_live import LiveReport


def compare_with_repo(
    report: LiveReport, repo: Path, *, server_name: str | None, live_host: str | None
) -> None:
    try:
        from advisor.engine import run_check  # noqa: F401
    except ImportError:
        report.notices.append(
            f"--repo {repo}: comparing with the repository needs the core engine "
            "(advisor.engine), which this build does not have yet"
        )
        return
