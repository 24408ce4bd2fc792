"""`advise --diff` of a file whose last line has no newline (a kustomize patch holding
postgresql.conf, as Sourcegraph's components/sizes/xl/patches/pgsql-conf.yaml ends):
the diff says `\\ No newline at end of file` as diff(1) does, so `git apply` takes it
(audit 13d: it printed the bare last line and git apply said "corrupt patch")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from advisor.advise.edits import plan
from advisor.advise.records import Edit

PATCH = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: pgsql-conf
data:
  postgresql.conf: |
    # Add settings for extensions here
    max_connections = 500
    work_mem = 10MB
    shared_buffers = 8GB
    max_worker_processes = 8"""  # no final newline


def _git_apply(repo: Path, patch: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=repo,
                          capture_output=True)


@pytest.mark.parametrize(("line", "key", "old", "new"), [
    (8, "max_connections", "500", "140"),  # the unchanged last line is context
    (11, "max_worker_processes", "8", "4"),  # the last line itself changes
])
def test_diff_of_a_file_without_final_newline_applies(tmp_path: Path, line: int, key: str,
                                                      old: str, new: str):
    conf = tmp_path / "patches" / "pgsql-conf.yaml"
    conf.parent.mkdir()
    conf.write_text(PATCH)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = plan([Edit(path="patches/pgsql-conf.yaml", line=line, key=key, old=old,
                        new=new)], [tmp_path])
    assert not result.refused
    diff = result.diff()
    assert diff.endswith("\n\\ No newline at end of file\n")
    applied = _git_apply(tmp_path, diff)
    assert applied.returncode == 0, applied.stderr
    assert conf.read_text() == result.changes[0].after
    assert conf.read_text().endswith("max_worker_processes = " + ("4" if line == 11 else "8"))


def test_diff_of_two_files_applies_when_the_first_has_no_final_newline(tmp_path: Path):
    # the marker also ends the first file's hunk, so the second file's header is not glued
    # to its last line
    (tmp_path / "a.conf").write_text("max_connections = 500\nwork_mem = 10MB")
    (tmp_path / "b.conf").write_text("max_connections = 100\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = plan([Edit(path="a.conf", line=2, key="work_mem", old="10MB", new="4MB"),
                   Edit(path="b.conf", line=1, key="max_connections", old="100", new="50")],
                  [tmp_path])
    applied = _git_apply(tmp_path, result.diff())
    assert applied.returncode == 0, applied.stderr
    assert (tmp_path / "a.conf").read_text() == "max_connections = 500\nwork_mem = 4MB"
    assert (tmp_path / "b.conf").read_text() == "max_connections = 50\n"
