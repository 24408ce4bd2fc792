"""One deployment, whatever the paths; paths and fingerprints stable (issue 12, items 1-2).

Every layout here is a git repository written by the test (`git init`): the repository
root is what nothing is read outside of and what every shown path is relative to. The
same repository is checked from several working directories with several spellings of
the same paths, and the reports are compared byte for byte.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.commands import register_all
from advisor.read.discover import repository_root

register_all(app)  # advise, as `main()` registers it

FORMATS = ("text", "json", "sarif", "github", "gitlab", "rdjson", "markdown")

DB = """\
apiVersion: v1
kind: Service
metadata:
  name: postgres
  namespace: shop
spec:
  selector:
    app: postgres
  ports:
    - port: 5432
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: postgres
  namespace: shop
spec:
  serviceName: postgres
  replicas: 1
  selector:
    matchLabels:
      app: postgres
  template:
    metadata:
      labels:
        app: postgres
    spec:
      containers:
        - name: postgres
          image: postgres:16.4
          args: ["-c", "max_connections=120"]
"""

API = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: shop
spec:
  replicas: 2
  strategy:
    rollingUpdate:
      maxSurge: 0
  selector:
    matchLabels:
      app: api
  template:
    metadata:
      labels:
        app: api
    spec:
      containers:
        - name: api
          image: registry.example.test/api:1.0
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://postgres.shop.svc.cluster.local:5432/shop
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE
              value: "15"
"""

HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
  namespace: shop
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: api
  minReplicas: 2
  maxReplicas: 12
"""

# By hand: usable 120 (-c max_connections) - 3 (superuser_reserved_connections, PG 16
# default) = 117; peak 12 (HPA maxReplicas) x 15 (HikariCP maximumPoolSize) = 180.
USABLE, PEAK = 117, 180


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def git_repo(root: Path, files: dict[str, str]) -> Path:
    write(root, files)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.test",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.test"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "deploy"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)
    return root


@pytest.fixture
def split(tmp_path: Path) -> Path:
    """Servers in db/, applications in apps/."""
    return git_repo(tmp_path / "split", {"db/postgres.yaml": DB,
                                         "apps/api/deploy.yaml": API,
                                         "apps/api/hpa.yaml": HPA,
                                         "README.md": "shop\n"})


@pytest.fixture
def kustomized(tmp_path: Path) -> Path:
    """Everything in k8s/, built by a kustomization."""
    return git_repo(tmp_path / "kustomized", {
        "k8s/kustomization.yaml": "resources:\n  - postgres.yaml\n  - api.yaml\n  - hpa.yaml\n",
        "k8s/postgres.yaml": DB, "k8s/api.yaml": API, "k8s/hpa.yaml": HPA})


def run(cwd: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def without_timing(text: str) -> str:
    """Reports hold no timings today; a notice that ever carries one must not make two
    runs differ."""
    return re.sub(r"\b\d+(\.\d+)? ?(ms|s)\b", "<t>", text)


def report(cwd: Path, *args: str, monkeypatch) -> str:
    code, out, err = run(cwd, "check", *args, monkeypatch=monkeypatch)
    assert code in (0, 1), err
    return without_timing(out)


def budget_and_findings(text: str) -> dict:
    data = json.loads(text)
    return {k: data[k] for k in ("budgets", "findings", "notices")}


# --- the repository root --------------------------------------------------------------


def test_repository_root_is_the_git_top_level_else_the_common_folder(tmp_path: Path):
    repo = write(tmp_path / "repo", {"k8s/a.yaml": "", "db/b.yaml": "", "x/y/z.yaml": ""})
    (repo / ".git").mkdir()
    assert repository_root([repo / "k8s"]) == repo
    assert repository_root([repo / "k8s/a.yaml", repo / "db"]) == repo
    assert repository_root([repo / "x/y"]) == repo
    # A worktree or submodule has a .git file, not a folder.
    sub = write(tmp_path / "repo/x/sub", {"app.yaml": ""})
    (sub / ".git").write_text("gitdir: ../../.git/modules/sub\n")
    assert repository_root([sub / "app.yaml"]) == sub
    # Paths of two repositories: their common folder.
    assert repository_root([sub, repo / "db"]) == repo
    plain = write(tmp_path / "plain", {"k8s/a.yaml": "", "db/b.yaml": ""})
    assert repository_root([plain / "k8s"]) == plain / "k8s"
    assert repository_root([plain / "k8s/a.yaml", plain / "db/b.yaml"]) == plain
    # --root wins.
    assert repository_root([repo / "k8s"], repo / "k8s") == repo / "k8s"


def test_path_outside_root_and_missing_root_are_usage_errors(split: Path, monkeypatch):
    code, _, err = run(split, "check", "db", "--root", "apps", monkeypatch=monkeypatch)
    assert code == 2 and "outside --root" in err
    code, _, err = run(split, "check", "db", "--root", "nowhere", monkeypatch=monkeypatch)
    assert code == 2 and "not a directory" in err


# --- one deployment whatever the paths ------------------------------------------------


def test_db_apps_is_the_same_deployment_as_the_repository(split: Path, monkeypatch):
    whole = report(split, ".", "-f", "json", monkeypatch=monkeypatch)
    parts = report(split, "db", "apps", "-f", "json", monkeypatch=monkeypatch)
    files = report(split, "apps/api/deploy.yaml", "apps/api/hpa.yaml", "db/postgres.yaml",
                   "-f", "json", monkeypatch=monkeypatch)
    assert budget_and_findings(parts) == budget_and_findings(whole) \
        == budget_and_findings(files)
    (b,) = json.loads(whole)["budgets"]
    assert (b["usable"], b["peak"]) == (USABLE, PEAK)
    # Linked once: the application's pods reach the server of the other folder.
    assert [c["who"] for c in b["terms"]["contributions"]] == ["api"]
    assert json.loads(parts)["roots"] == ["db", "apps"]


def test_one_folder_alone_still_links_only_what_it_holds(split: Path, monkeypatch):
    apps_only = json.loads(report(split, "apps", "-f", "json", monkeypatch=monkeypatch))
    assert apps_only["budgets"] == []  # no server in apps/: nothing invented


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_is_byte_identical_from_any_cwd_and_spelling(split: Path, tmp_path,
                                                                   monkeypatch, fmt):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    runs = [
        (split, ["db", "apps"]),
        (split, ["./db/", "apps/api/.."]),
        (split / "apps", ["../db", "."]),
        (split / "apps/api", ["../../db", ".."]),
        (outside, [str(split / "db"), str(split / "apps")]),
        (outside, [os.path.relpath(split / "db", outside),
                   os.path.relpath(split / "apps", outside)]),
    ]
    outputs = [report(cwd, *paths, "-f", fmt, monkeypatch=monkeypatch) for cwd, paths in runs]
    assert all(o == outputs[0] for o in outputs[1:])
    text = outputs[0]
    # Repository-relative: the file as `git ls-files` names it, never absolute or ../
    assert "db/postgres.yaml" in text
    assert str(tmp_path) not in text
    assert not re.search(r"(?<![.\w])\.\./", text)  # (rule docs write "..." paths)


def test_fingerprints_match_from_the_repository_a_folder_and_one_file(kustomized: Path,
                                                                     monkeypatch):
    def fingerprints(cwd: Path, *paths: str) -> list[tuple[str, str, str]]:
        data = json.loads(report(cwd, *paths, "-f", "json", monkeypatch=monkeypatch))
        return [(f["code"], f["location"]["path"], f["fingerprint"]) for f in data["findings"]]

    whole = fingerprints(kustomized, ".")
    assert ("PA101", "k8s/postgres.yaml") in {(c, p) for c, p, _ in whole}
    assert fingerprints(kustomized, "k8s") == whole
    # A file named is read as it is: the HPA alone holds no server (the kustomization
    # beside it is built only when its folder or the kustomization file is named).
    assert fingerprints(kustomized, "k8s/hpa.yaml") == []
    assert fingerprints(kustomized / "k8s", "postgres.yaml", "api.yaml", "hpa.yaml") == whole
    assert fingerprints(kustomized / "k8s", "api.yaml", "hpa.yaml", "kustomization.yaml") \
        == whole
    # pre-commit passes the changed files: the whole repository is read.
    assert fingerprints(kustomized, "--changed-files", "k8s/hpa.yaml") == whole


def test_glob_of_a_folder_is_the_folder(split: Path, monkeypatch):
    # Clients of hosts the repository does not hold: one PA107 each, in file order.
    for n in ("b", "e", "a", "d", "c"):
        (split / f"apps/api/{n}-job.yaml").write_text(
            API.replace("name: api", f"name: job-{n}").replace(
                "postgres.shop.svc.cluster.local", f"db-{n}.example.test"))
    folder = report(split, "apps/api", "db", "-f", "json", monkeypatch=monkeypatch)
    globbed = report(split, *sorted(str(p.relative_to(split)) for p in
                                    (split / "apps/api").glob("*.yaml")), "db/postgres.yaml",
                     "-f", "json", monkeypatch=monkeypatch)
    assert budget_and_findings(globbed) == budget_and_findings(folder)
    assert len([f for f in json.loads(folder)["findings"] if f["code"] == "PA107"]) >= 5
    shuffled = report(split, "db/postgres.yaml", *sorted(
        (str(p.relative_to(split)) for p in (split / "apps/api").glob("*.yaml")),
        reverse=True), "-f", "json", monkeypatch=monkeypatch)
    assert budget_and_findings(shuffled) == budget_and_findings(folder)
    # Files at several depths: the order of a walk of the folders, not of the arguments.
    for rel, n in (("apps/f-job.yaml", "f"), ("db/z-job.yaml", "z")):
        (split / rel).write_text(API.replace("name: api", f"name: job-{n}").replace(
            "postgres.shop.svc.cluster.local", f"db-{n}.example.test"))
    walked = report(split, "apps", "db", "-f", "json", monkeypatch=monkeypatch)
    listed = report(split, *sorted(str(p.relative_to(split)) for p in split.rglob("*.yaml")
                                   if ".git" not in p.parts),
                    "-f", "json", monkeypatch=monkeypatch)
    assert budget_and_findings(listed) == budget_and_findings(walked)


def test_changed_files_read_the_whole_repository_and_count_the_findings_in_them(
        split: Path, monkeypatch):
    whole = report(split, ".", monkeypatch=monkeypatch)
    code, changed, _ = run(split, "check", "--changed-files", "apps/api/hpa.yaml",
                           monkeypatch=monkeypatch)
    assert code == 1
    # The budget of the deployment, not of the one changed file.
    assert changed.split("\n\n")[0] == whole.split("\n\n")[0]
    assert f"OVER by {PEAK - USABLE}" in changed
    # PA101 sits on the server's line; the HPA is one of its related locations.
    assert "1 error (1 in the changed files)" in changed
    # A deleted file (pre-commit passes it too) is no error: the repository is read.
    code, _, err = run(split, "check", "--changed-files", "apps/api/gone.yaml",
                       monkeypatch=monkeypatch)
    assert code == 1, err
    unrelated = run(split, "check", "--changed-files", "README.md", monkeypatch=monkeypatch)
    assert "(0 in the changed files)" in unrelated[1]


# --- kustomize and Helm read inside the repository ------------------------------------


def test_overlay_reads_its_base_in_the_repository(tmp_path: Path, monkeypatch):
    repo = git_repo(tmp_path / "ov", {
        "base/kustomization.yaml": "resources:\n  - postgres.yaml\n  - api.yaml\n",
        "base/postgres.yaml": DB, "base/api.yaml": API,
        "overlays/prod/kustomization.yaml": "resources:\n  - ../../base\n  - hpa.yaml\n",
        "overlays/prod/hpa.yaml": HPA})
    runs = [(repo, ["overlays/prod"]), (repo / "overlays", ["prod"]),
            (repo / "overlays/prod", ["."]), (repo / "base", ["../overlays/prod/"])]
    outputs = [report(cwd, *paths, "-f", "json", monkeypatch=monkeypatch)
               for cwd, paths in runs]
    assert all(o == outputs[0] for o in outputs[1:])
    (b,) = json.loads(outputs[0])["budgets"]
    assert (b["usable"], b["peak"]) == (USABLE, PEAK)
    assert b["location"]["path"] == "base/postgres.yaml"
    # With the overlay itself as the boundary, its base is outside and is not read.
    code, out, _ = run(repo, "check", "overlays/prod", "--root", "overlays/prod",
                       monkeypatch=monkeypatch)
    assert code == 1 and "outside the scanned root" in out


CHART = "apiVersion: v2\nname: {name}\nversion: 0.1.0\n"
CHART_VALUES = "replicaCount: 2\npoolSize: 10\n"
CHART_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Chart.Name }}
  namespace: shop
spec:
  replicas: {{ .Values.replicaCount }}
  strategy:
    rollingUpdate:
      maxSurge: 0
  selector:
    matchLabels:
      app: {{ .Chart.Name }}
  template:
    metadata:
      labels:
        app: {{ .Chart.Name }}
    spec:
      containers:
        - name: app
          image: registry.example.test/{{ .Chart.Name }}:1.0
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://postgres.shop.svc.cluster.local:5432/shop
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE
              value: {{ .Values.poolSize | quote }}
"""


@pytest.fixture
def charts(tmp_path: Path) -> Path:
    pytest.importorskip("helm_python", reason="the helm extra renders charts")
    files = {"db/postgres.yaml": DB, "envs/prod.yaml": "replicaCount: 5\n"}
    for name in ("api", "worker"):
        files |= {f"charts/{name}/Chart.yaml": CHART.format(name=name),
                  f"charts/{name}/values.yaml": CHART_VALUES,
                  f"charts/{name}/templates/deployment.yaml": CHART_DEPLOYMENT}
    files["charts/api/values-prod.yaml"] = "replicaCount: 4\n"
    return git_repo(tmp_path / "charts", files)


def contributions(text: str) -> dict[str, float]:
    (b,) = json.loads(text)["budgets"]
    return {c["who"]: c["total"] for c in b["terms"]["contributions"]}


def test_values_file_belongs_to_the_chart_that_holds_it(charts: Path, monkeypatch):
    out = report(charts, "charts", "db", "--values", "charts/api/values-prod.yaml",
                 "-f", "json", monkeypatch=monkeypatch)
    assert contributions(out) == {"api": 4 * 10, "worker": 2 * 10}
    # Read from the working directory, as `helm -f` reads it.
    here = report(charts / "charts/api", "..", "../../db", "--values", "values-prod.yaml",
                  "-f", "json", monkeypatch=monkeypatch)
    assert budget_and_findings(here) == budget_and_findings(out)


def test_values_file_elsewhere_in_the_repository_for_the_one_chart(charts: Path, monkeypatch):
    out = report(charts, "charts/worker", "db", "--values", "envs/prod.yaml", "-f", "json",
                 monkeypatch=monkeypatch)
    assert contributions(out) == {"worker": 5 * 10}


@pytest.mark.parametrize("args, message", [
    (["charts", "db", "--values", "envs/prod.yaml"], "in none of them"),
    (["charts", "db", "--set", "replicaCount=9"], "--set: 2 charts"),
    (["db", "--values", "envs/prod.yaml"], "there is none among the paths"),
    (["charts/api", "db", "--values", "values-prod.yaml"],
     "did you mean charts/api/values-prod.yaml"),
])
def test_values_that_cannot_be_attributed_are_usage_errors(charts: Path, monkeypatch, args,
                                                           message):
    code, out, err = run(charts, "check", *args, monkeypatch=monkeypatch)
    assert code == 2 and message in err and out == ""


# --- advise ---------------------------------------------------------------------------


def test_advise_is_the_same_from_any_cwd_and_its_diff_applies_with_git_apply(
        split: Path, monkeypatch):
    def advise(cwd: Path, *args: str) -> tuple[str, str]:
        code, out, err = run(cwd, "advise", *args, monkeypatch=monkeypatch)
        assert code in (0, 1), err
        return out, err

    as_json = [advise(split, "db", "apps", "--format", "json")[0],
               advise(split / "apps", "../db", ".", "--format", "json")[0],
               advise(split / "db", str(split / "db"), "../apps/api/..", "--format", "json")[0]]
    assert all(j == as_json[0] for j in as_json[1:])
    assert "db/postgres.yaml" in as_json[0] or "apps/api/deploy.yaml" in as_json[0]

    diffs = [advise(split, "db", "apps", "--diff")[0], advise(split / "apps", "../db", ".",
                                                              "--diff")[0]]
    patch = diffs[0][diffs[0].index("--- a/"):]
    assert patch == diffs[1][diffs[1].index("--- a/"):]
    assert "--- a/apps/api/deploy.yaml" in patch
    (split / "fix.patch").write_text(patch)
    subprocess.run(["git", "apply", "--check", "fix.patch"], cwd=split, check=True)
    subprocess.run(["git", "apply", "fix.patch"], cwd=split, check=True)
    (split / "fix.patch").unlink()
    after = json.loads(report(split, ".", "-f", "json", monkeypatch=monkeypatch))
    (b,) = after["budgets"]
    assert b["peak"] <= b["usable"]


def test_base_revision_lines_up_from_any_cwd(split: Path, monkeypatch):
    """--base checks the revision's tree with the same repository root: fingerprints
    match, so an unchanged finding is unchanged whatever the cwd and spelling."""
    (split / "apps/api/hpa.yaml").write_text(HPA.replace("maxReplicas: 12", "maxReplicas: 14"))
    for cwd, paths in ((split, ["db", "apps"]), (split / "apps", ["../db", "."]),
                       (split, ["--changed-files", "apps/api/hpa.yaml"])):
        code, _, err = run(cwd, "check", *paths, "--base", "HEAD", "-f", "json",
                           monkeypatch=monkeypatch)
        assert code == 1
        assert f"{PEAK} -> {14 * 15}" in err
        # Matched by fingerprint: the same finding, worse (not a new one and a fixed one).
        assert "1 of them existed but got worse), 0 fixed" in err
