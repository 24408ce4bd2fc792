"""`check --base REF` / `--new-only` against a real git repository made in a temp dir
(fixtures/acme-shop committed, then changed in the working tree)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures/acme-shop"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GIT_"))}
    # A repository of our own making, whatever the user's git configuration says.
    env.update(PYTHONPATH=str(REPO), GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return env


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd, env=_env(), check=True, capture_output=True, text=True).stdout


def check(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # The budget and input rules only: other rules' findings would change the counts.
    args = (*args, "--select", "PA101,PA901")
    return subprocess.run([sys.executable, "-m", "advisor", "check", *args], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=120)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(FIXTURE, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def _raise_replicas(root: Path, to: int) -> None:
    hpa = root / "k8s/hpa.yaml"
    hpa.write_text(hpa.read_text().replace("maxReplicas: 40", f"maxReplicas: {to}"))


def test_base_reports_peak_before_and_after(repo):
    _raise_replicas(repo, 50)
    proc = check(repo, "k8s", "--base", "main", "--select", "PA101")
    assert proc.returncode == 1, proc.stderr  # PA101 still an error
    out = proc.stdout
    assert "Budget change against main (" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("postgres "))
    assert row.split() == ["postgres", "97", "800", "->", "1000", "+200", "over", "by", "903"]
    # PA101 existed at the base, but the budget got worse: it is new, never hidden.
    assert "Findings: 1 new (1 of them existed but got worse), 0 fixed, 0 unchanged" in out
    # ... and the comparison says which number moved, from which file:line.
    moved = next(line for line in out.splitlines() if "HPA maxReplicas 40 -> 50" in line)
    assert moved.strip().startswith("postgres: checkout:") and "hpa.yaml:12)" in moved


def test_new_only_fails_on_a_regression_of_a_finding_the_base_had(repo):
    # 703 over -> 903 over: the finding existed, the overload grew. --new-only must fail.
    _raise_replicas(repo, 50)
    proc = check(repo, "k8s", "--base", "HEAD", "--new-only", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)  # stdout stays JSON; the comparison went to stderr
    assert [f["code"] for f in doc["findings"]] == ["PA101"]
    assert doc["budgets"][0]["peak"] == 1000
    assert "800 -> 1000" in proc.stderr


def test_new_only_passes_an_improvement_but_reports_every_finding(repo):
    # 703 over -> 503 over: still over, not worse. Exit 0 under --new-only, and the
    # SARIF keeps the alert (code scanning would close alerts missing from the upload).
    _raise_replicas(repo, 30)
    proc = check(repo, "k8s", "--base", "HEAD", "--new-only", "--format", "sarif")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["PA101"]


def test_new_only_fails_on_a_new_finding(repo):
    (repo / "k8s/broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n  bad: [\n")
    proc = check(repo, "k8s", "--base", "HEAD", "--new-only", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    codes = sorted(f["code"] for f in json.loads(proc.stdout)["findings"])
    assert codes == ["PA101", "PA901"]  # the full set; PA901 is what fails


def test_moved_lines_do_not_make_findings_new(repo):
    hpa = repo / "k8s/hpa.yaml"
    hpa.write_text("# a comment added above\n# and another\n" + hpa.read_text())
    git(repo, "commit", "-qam", "move lines")
    proc = check(repo, "k8s", "--base", "HEAD~1", "--new-only")
    assert proc.returncode == 0, proc.stderr
    assert "Findings: 0 new, 0 fixed, 1 unchanged" in proc.stdout


def test_paths_added_by_the_change_and_subdirectories(repo):
    shutil.copytree(repo / "k8s", repo / "k8s-new")
    sub = repo / "k8s-new"
    proc = check(sub, ".", "--base", "HEAD")
    assert proc.returncode == 1, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.strip().startswith("postgres "))
    assert row.split()[:8] == ["postgres", "-", "->", "97", "-", "->", "800", "new"]
    # From a subdirectory, a path that exists at the base maps to the same files.
    proc = check(repo / "k8s", ".", "--base", "HEAD")
    assert "800 -> 800" in proc.stdout and "+0" in proc.stdout


def test_bad_revision_and_no_repository_are_usage_errors(repo, tmp_path):
    proc = check(repo, "k8s", "--base", "no-such-branch")
    assert proc.returncode == 2 and "no such revision" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = check(repo, "k8s", "--base", "--upload-pack=evil")
    assert proc.returncode == 2
    plain = tmp_path / "plain"
    shutil.copytree(FIXTURE, plain)
    proc = check(plain, "k8s", "--base", "HEAD")
    assert proc.returncode == 2 and "git rev-parse" in proc.stderr
    proc = check(repo, "k8s", "--new-only")
    assert proc.returncode == 2 and "--new-only needs --base" in proc.stderr


def test_the_repository_is_left_untouched(repo):
    _raise_replicas(repo, 50)
    before = (git(repo, "status", "--porcelain"), git(repo, "worktree", "list"),
              git(repo, "stash", "list"))
    assert check(repo, "k8s", "--base", "HEAD").returncode == 1
    after = (git(repo, "status", "--porcelain"), git(repo, "worktree", "list"),
             git(repo, "stash", "list"))
    assert before == after


CNPG_CLUSTER = """\
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: photos-db
  namespace: photos
spec:
  instances: 1
  imageName: ghcr.io/cloudnative-pg/postgresql:14.11
  storage:
    size: 5Gi
"""

# A Flux release of a chart not in the repository: its values connect (a client of
# unknown size, PA106), so the server's peak is a floor.
FLUX_RELEASE = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: photos
  namespace: photos
spec:
  interval: 1h
  chartRef:
    kind: OCIRepository
    name: photos
  values:
    env:
      DB_HOSTNAME: photos-db-rw
"""


def test_a_floor_is_not_said_to_fit_in_the_change_table(tmp_path):
    # kashalls/home-cluster@0d3b5300e's shape (instances 1 -> 3 beside an external
    # chart's release): "1 -> 1 fits" was printed under a report that cannot tell.
    root = tmp_path / "gitops"
    (root / "k8s").mkdir(parents=True)
    (root / "k8s/postgres.yaml").write_text(CNPG_CLUSTER)
    (root / "k8s/helmrelease.yaml").write_text(FLUX_RELEASE)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    pg = root / "k8s/postgres.yaml"
    pg.write_text(pg.read_text().replace("instances: 1", "instances: 3"))
    proc = subprocess.run([sys.executable, "-m", "advisor", "check", "k8s", "--no-cache",
                           "--base", "main"], cwd=root, env=_env(), capture_output=True,
                          text=True, timeout=120)
    row = next(x for x in proc.stdout.splitlines() if x.strip().startswith("photos-db "))
    assert ">= 1 -> >= 1" in row and "cannot tell" in row and "fits" not in row, proc.stdout


def test_a_file_that_does_not_parse_at_one_revision_is_not_new_or_removed(tmp_path):
    """A commit that breaks the Cluster's YAML said 'photos-db removed' (and the commit
    that fixes it 'new'): the server is there, its file was not read (PA901)."""
    root = tmp_path / "gitops"
    (root / "k8s").mkdir(parents=True)
    pg = root / "k8s/postgres.yaml"
    pg.write_text(CNPG_CLUSTER)
    (root / "k8s/helmrelease.yaml").write_text(FLUX_RELEASE)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    pg.write_text(CNPG_CLUSTER.replace("instances: 1", "instances: [1"))

    def table(base: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "advisor", "check", "k8s", "--no-cache",
                               "--base", base], cwd=root, env=_env(), capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        return next(x for x in proc.stdout.splitlines() if x.strip().startswith("photos-db "))

    row = table("main")  # the change breaks it
    assert "head not read (PA901 k8s/postgres.yaml:8)" in row and "removed" not in row, row
    git(root, "commit", "-q", "-am", "broken")
    pg.write_text(CNPG_CLUSTER)
    row = table("HEAD")  # the change fixes it
    assert "base not read (PA901 k8s/postgres.yaml:8)" in row and "new" not in row, row
