"""The hook as users install it: real `pre-commit try-repo` in a temporary git repo."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import REPO

pytestmark = pytest.mark.slow


def _pre_commit() -> list[str]:
    exe = Path(sys.executable).with_name("pre-commit")
    if exe.exists():
        return [str(exe)]
    if shutil.which("pre-commit"):
        return ["pre-commit"]
    pytest.skip("pre-commit is not installed (it is in the test extra)")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})


def _user_repo(tmp_path: Path, fixture: str) -> Path:
    repo = tmp_path / fixture
    shutil.copytree(REPO / "fixtures" / fixture, repo)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "deploy")
    return repo


def _try_repo(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    return subprocess.run([*_pre_commit(), "try-repo", str(REPO), "pool-advisor",
                           "--all-files"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def test_hook_fails_on_demo_and_passes_on_fixed_variant(tmp_path: Path):
    home = tmp_path / "pre-commit-home"  # one cache: the hook env is built once
    user = _user_repo(tmp_path, "acme-shop")
    bad = _try_repo(user, home)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "PA101" in bad.stdout and "Failed" in bad.stdout
    # The hook uses the parse cache unconfigured, and git does not see it
    assert list((user / ".pool-advisor-cache").glob("*/files.msgpack"))
    status = subprocess.run(["git", "status", "--porcelain"], cwd=user, capture_output=True,
                            text=True, check=True)
    assert status.stdout == ""
    again = _try_repo(user, home)
    def report(out: str) -> str:  # the hook's part: try-repo's header names temp repos
        return out[out.index("pool-advisor....."):]

    assert again.returncode == 1 and report(again.stdout) == report(bad.stdout)
    good = _try_repo(_user_repo(tmp_path, "acme-shop-pgbouncer"), home)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
