"""`check --base REF` on repositories whose manifests are in a git submodule, and a
path the change moved (audit 32: sourcegraph/deploy-sourcegraph's shape, a `base/`
folder with the server and its clients, the clients vendored as a submodule).
`git archive` writes a submodule as an empty folder: the base run must read the
submodule at the commit the base records, as the working tree's run reads it."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_basecheck import _env, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")

SERVER = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: pgsql-conf
data:
  postgresql.conf: |
    max_connections = 100
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pgsql
spec:
  replicas: 1
  selector:
    matchLabels: {app: pgsql}
  template:
    metadata:
      labels: {app: pgsql}
    spec:
      containers:
        - name: pgsql
          image: postgres:16
          args: ["-c", "config_file=/conf/postgresql.conf"]
          volumeMounts:
            - {name: conf, mountPath: /conf}
      volumes:
        - name: conf
          configMap: {name: pgsql-conf}
---
apiVersion: v1
kind: Service
metadata:
  name: pgsql
spec:
  selector: {app: pgsql}
  ports: [{port: 5432}]
"""

CLIENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
spec:
  replicas: 3
  strategy:
    rollingUpdate: {maxSurge: 0}
  selector:
    matchLabels: {app: frontend}
  template:
    metadata:
      labels: {app: frontend}
    spec:
      containers:
        - name: frontend
          image: eclipse-temurin:21
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://pgsql:5432/app
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE
              value: "20"
"""


def check(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", "check", "--no-cache",
                           "--select", "PA101", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=120)


def _row(out: str, server: str) -> list[str]:
    return next(line.split() for line in out.splitlines()
                if line.strip().startswith(f"{server} "))


@pytest.fixture
def superproject(tmp_path: Path) -> Path:
    """base/pgsql in the repository, base/frontend a submodule: 3 pods x 20 = 60 of 97."""
    sub = tmp_path / "frontend"
    sub.mkdir()
    (sub / "frontend.yaml").write_text(CLIENT)
    git(sub, "init", "-q", "-b", "main")
    git(sub, "add", "-A")
    git(sub, "commit", "-q", "-m", "frontend")
    root = tmp_path / "deploy"
    (root / "base/pgsql").mkdir(parents=True)
    (root / "base/pgsql/pgsql.yaml").write_text(SERVER)
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub),
        "base/frontend")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def test_the_base_reads_a_submodule_as_the_working_tree_does(superproject):
    conf = superproject / "base/pgsql/pgsql.yaml"
    conf.write_text(SERVER.replace("max_connections = 100", "max_connections = 50"))
    proc = check(superproject, "base", "--base", "main")
    assert proc.returncode == 1, proc.stderr  # 60 > 47: PA101 at head
    # Before: the frontend's 60 was read at the base too (it was "0 -> 60, +60", and
    # "frontend: Deployment replicas - -> 3", a change the pull request did not make).
    assert _row(proc.stdout, "pgsql") == ["pgsql", "97", "->", "47", "60", "->", "60",
                                          "+0", "over", "by", "13"]
    assert "replicas" not in proc.stdout.split("Budget change")[1]
    assert "not read at main" not in proc.stdout


def test_a_submodule_commit_the_clone_lacks_is_said_not_read(superproject):
    # The base records a submodule commit its local clone does not have (a pull request
    # that bumps the submodule, checked out without the old commit): said, not empty.
    missing = "1" * 40
    git(superproject, "update-index", "--cacheinfo", f"160000,{missing},base/frontend")
    git(superproject, "commit", "-q", "-m", "point at a commit not fetched")
    git(superproject, "update-index", "--cacheinfo",
        f"160000,{git(superproject / 'base/frontend', 'rev-parse', 'HEAD').strip()}"
        ",base/frontend")
    proc = check(superproject, "base", "--base", "HEAD")
    assert proc.returncode == 0, proc.stderr
    assert (f"not read at HEAD: submodule base/frontend (submodule commit {missing[:12]} "
            "is not in its clone)") in proc.stdout


def test_a_path_the_change_moved_is_said_not_in_the_base(superproject):
    git(superproject, "mv", "base/pgsql", "pgsql")
    proc = check(superproject, "pgsql", "--base", "main")
    assert proc.returncode == 0, proc.stderr
    assert ("not read at main: pgsql (not in that revision: added or moved by the "
            "change)") in proc.stdout
    assert "new" in _row(proc.stdout, "pgsql")


def test_files_git_archive_leaves_out_are_read_at_the_base(superproject):
    # `export-ignore` (for release tarballs) keeps a file out of `git archive`, not out
    # of the working tree: the base read "peak 0 -> 60, +60" with nothing changed.
    (superproject / ".gitattributes").write_text("base/frontend export-ignore\n"
                                                 "base/pgsql/pgsql.yaml export-ignore\n")
    git(superproject, "add", "-A")
    git(superproject, "commit", "-q", "-m", "release tarballs without deploy files")
    proc = check(superproject, "base", "--base", "HEAD")
    assert proc.returncode == 0, proc.stderr
    assert _row(proc.stdout, "pgsql") == ["pgsql", "97", "60", "->", "60", "+0", "fits"]


def test_a_link_out_of_the_tree_does_not_fail_the_base(superproject):
    # tarfile's "data" filter refuses it; that failed the whole --base (exit 2, internal
    # error). The link is kept as it is, so the base reports it as the head does.
    (superproject / "base/hostname").symlink_to("/etc/hostname")
    (superproject / "base/shared").symlink_to("../../shared")
    git(superproject, "add", "-A")
    git(superproject, "commit", "-q", "-m", "links")
    proc = check(superproject, "base", "--base", "HEAD", "--select", "PA101,PA901",
                 "--fail-on", "error")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _row(proc.stdout, "pgsql") == ["pgsql", "97", "60", "->", "60", "+0", "fits"]
    assert "Findings: 0 new, 0 fixed, 2 unchanged" in proc.stdout


CHART_APP = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
spec:
  replicas: {{ .Values.replicaCount }}
  strategy:
    rollingUpdate: {maxSurge: 0}
  selector:
    matchLabels: {app: frontend}
  template:
    metadata:
      labels: {app: frontend}
    spec:
      containers:
        - name: frontend
          image: eclipse-temurin:21
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://pgsql:5432/app
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE
              value: "20"
"""


@pytest.fixture
def chart_repo(tmp_path: Path) -> Path:
    """A chart with a production values file (openfga/helm-charts' shape, ci/*.yaml):
    3 replicas x 20 = 60 of 97."""
    pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")
    root = tmp_path / "charts"
    (root / "app/templates").mkdir(parents=True)
    (root / "app/Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")
    (root / "app/values.yaml").write_text("replicaCount: 1\n")
    (root / "app/ci").mkdir()
    (root / "app/ci/prod-values.yaml").write_text("replicaCount: 3\n")
    (root / "app/templates/app.yaml").write_text(CHART_APP)
    (root / "app/templates/pgsql.yaml").write_text(SERVER)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def test_values_files_are_read_at_the_base_revision(chart_repo):
    # --values is read from the working directory; the base run read the head's file
    # and refused it as outside its root (exit 2): a values change could not be compared.
    (chart_repo / "app/ci/prod-values.yaml").write_text("replicaCount: 6\n")
    proc = check(chart_repo, "app", "--values", "app/ci/prod-values.yaml", "--base", "main")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert _row(proc.stdout, "pgsql") == ["pgsql", "97", "60", "->", "120", "+60", "over",
                                          "by", "23"]
    assert "Deployment replicas 3 -> 6 (app/ci/prod-values.yaml:1)" in proc.stdout
    # From inside the chart, as helm -f is given there.
    proc = subprocess.run([sys.executable, "-m", "advisor", "check", "--no-cache", "--select",
                           "PA101", ".", "--values", "ci/prod-values.yaml", "--base", "main"],
                          cwd=chart_repo / "app", env=_env(), capture_output=True, text=True,
                          timeout=120)
    assert "60 -> 120" in proc.stdout, proc.stdout + proc.stderr


def test_a_values_file_the_change_adds_is_said_not_in_the_base(chart_repo):
    (chart_repo / "app/ci/big-values.yaml").write_text("replicaCount: 2\n")
    proc = check(chart_repo, "app", "--values", "app/ci/big-values.yaml", "--base", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("not read at main: --values app/ci/big-values.yaml (not in that revision: the "
            "chart is rendered without it)") in proc.stdout
    assert _row(proc.stdout, "pgsql") == ["pgsql", "97", "20", "->", "40", "+20", "fits"]
