"""Audit 51 (CI truth): `check --base REF` and the formats it feeds say what the change
did, the same as plain checks at both revisions would. Repositories are made here in
the shape of the real ones the audit ran on (PostHog/charts-clickhouse)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_basecheck import _env, git
from test_basecheck_submodule import SERVER

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")

# PostHog/charts-clickhouse templates/migrate.job.yaml names its Job from the render
# time; here with nanoseconds, so two renders never share a name.
MIGRATE_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate-{{ now | date "2006-01-02-15-04-05.000000000" }}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: example/posthog:latest
          command: ["./bin/migrate"]
          env:
            - name: DATABASE_URL
              value: postgres://app@pgsql:5432/app
"""


def check(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", "check", "--no-cache", *args],
                          cwd=cwd, env=_env(), capture_output=True, text=True, timeout=180)


@pytest.fixture
def stamped_chart(tmp_path: Path) -> Path:
    pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")
    root = tmp_path / "charts"
    (root / "posthog/templates").mkdir(parents=True)
    (root / "posthog/Chart.yaml").write_text("apiVersion: v2\nname: posthog\nversion: 1.0.0\n")
    (root / "posthog/values.yaml").write_text("cloud: private\n")
    (root / "posthog/templates/migrate.job.yaml").write_text(MIGRATE_JOB)
    (root / "posthog/templates/pgsql.yaml").write_text(SERVER)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def test_a_job_named_from_the_render_time_is_the_same_job_at_the_base(stamped_chart):
    # Nothing changed: the Job's PA106 is neither new nor fixed, its parallelism did not
    # move from one name to another, and --new-only passes.
    proc = check(stamped_chart, "posthog", "--select", "PA106", "--base", "HEAD",
                 "--new-only")
    assert "PA106" in proc.stdout, proc.stdout + proc.stderr
    change = proc.stdout[proc.stdout.index("Budget change against"):]
    assert "Findings: 0 new, 0 fixed, 1 unchanged" in change, change
    assert "Job parallelism" not in change, change
    assert proc.returncode == 0, proc.stdout + proc.stderr
