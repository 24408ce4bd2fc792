"""Audit 51 (CI truth): `check --base REF` and the formats it feeds say what the change
did, the same as plain checks at both revisions would. Repositories are made here in
the shape of the real ones the audit ran on (PostHog/charts-clickhouse)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_basecheck import _env, git
from test_basecheck_submodule import (
    SERVER,
    chart_repo,  # noqa: F401 (a fixture)
)

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


def test_what_the_base_did_not_read_is_said_in_every_format(chart_repo, tmp_path):  # noqa: F811
    # openfga/PostHog ci/ values shape: the change adds a values file, so the base is
    # rendered without it. The text's change table said so; the markdown and JSON of
    # the same run did not, nor SARIF or the annotations, while their "before" lacks it.
    (chart_repo / "app/ci/big-values.yaml").write_text("replicaCount: 2\n")
    out = {f: tmp_path / f"r.{f}" for f in ("json", "markdown", "sarif", "github", "gitlab",
                                              "rdjson")}
    proc = check(chart_repo, "app", "--values", "app/ci/big-values.yaml", "--base", "main",
                 "--select", "PA101", *(a for f, p in out.items()
                                        for a in ("--write", f"{f}={p}")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = "--values app/ci/big-values.yaml (not in that revision: the chart is rendered " \
        "without it)"
    for fmt, path in out.items():
        text = path.read_text()
        if fmt == "markdown":
            text = text.replace("\\", "")
        assert said in text, f"{fmt}:\n{text}"
    report = json.loads(out["json"].read_text())
    base = report["base"]
    assert base["ref"] == "main" and base["not_read"] == [said]
    (pgsql,) = base["servers"]
    assert (pgsql["peak_before"], pgsql["peak_after"], pgsql["change"], pgsql["status"]) == \
        (20, 40, 20, "fits")
    assert "Deployment replicas 1 -> 2" in " ".join(pgsql["terms"])
    md = out["markdown"].read_text()
    assert "Budget change against `main`" in md and "20 → 40" in md and "+20" in md, md


def test_json_and_markdown_of_a_base_run_say_what_changed(chart_repo):  # noqa: F811
    # The JSON on stdout (the comparison went to stderr as text only) now carries it.
    (chart_repo / "app/ci/prod-values.yaml").write_text("replicaCount: 6\n")
    proc = check(chart_repo, "app", "--values", "app/ci/prod-values.yaml", "--base", "main",
                 "--select", "PA101", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    base = json.loads(proc.stdout)["base"]
    assert base["not_read"] == []
    (pgsql,) = base["servers"]
    assert (pgsql["usable_after"], pgsql["peak_before"], pgsql["peak_after"],
            pgsql["status"]) == (97, 60, 120, "over by 23")
    assert len(base["findings"]["new"]) == 1  # PA101: it fitted before
    proc = check(chart_repo, "app", "--values", "app/ci/prod-values.yaml", "--base", "main",
                 "--select", "PA101", "--format", "markdown")
    assert "| pgsql | 97 | 60 → 120 | +60 | ❌ over by 23 |" in proc.stdout, proc.stdout


REPORTS = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: reports
  namespace: shop
spec:
  replicas: 3
  strategy:
    rollingUpdate: {maxSurge: 0}
  selector:
    matchLabels: {app: reports}
  template:
    metadata:
      labels: {app: reports}
    spec:
      containers:
        - name: reports
          image: eclipse-temurin:21
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://postgres.shop.svc.cluster.local:5432/shop
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE
              value: "10"
"""


def test_the_action_checks_the_base_without_a_path_the_change_adds(tmp_path):
    # A pull request that adds a folder the workflow lists in `paths` (k8s reports):
    # the base commit lacks it, its check failed whole (exit 2), and the comment lost
    # its "before" with nothing said. Now the base is checked without it, as
    # `check --base` does, and a notice says so.
    from fake_github import FakeGitHub, serve
    from test_action_run import FORK_TOKEN, TOKEN, Runner, _git

    fake = FakeGitHub(token=TOKEN, read_only_token=FORK_TOKEN)
    fake.add_pr("octo", "shop", 7, comments=[])
    with serve(fake) as gh:
        runner = Runner(tmp_path, gh.api_url, TOKEN, {"paths": "k8s reports",
                                                      "upload-sarif": "false"})
        (runner.ws / "reports").mkdir()
        (runner.ws / "reports/reports.yaml").write_text(REPORTS)
        _git(runner.ws, "add", "-A")
        _git(runner.ws, "commit", "-q", "--amend", "-m", "more replicas, and reports")
        runner.head_sha = _git(runner.ws, "rev-parse", "HEAD")
        event = json.loads(Path(runner.env["GITHUB_EVENT_PATH"]).read_text())
        event["pull_request"]["head"]["sha"] = runner.head_sha
        Path(runner.env["GITHUB_EVENT_PATH"]).write_text(json.dumps(event))
        assert runner.run() == 1, runner.all_output()
        base_step = dict(runner.log)["Check the base commit"].stdout
        assert ("::notice title=pool-advisor::reports is not in the base commit (added or "
                "moved by the change)") in base_step, runner.all_output()
        body = gh.comments("octo", "shop", 7)[-1]["body"]
    # before: 40 x 20 (k8s only); after: 50 x 20 + 3 x 10
    assert "| postgres | 97 | 800 \u2192 1,030 | +230 |" in body, body[:900]


def test_a_blob_the_repository_lacks_is_said_not_read_not_a_failed_base(tmp_path):
    # PostHog/charts-clickhouse 2022: the `helm-docs` binary at the root was absent from
    # the clone (a mirror without its largest files; a partial clone offline alike), so
    # `git archive` failed and so did every --base of that era (exit 2, no comparison).
    root = tmp_path / "shop"
    shutil.copytree(Path(__file__).resolve().parent.parent / "fixtures/acme-shop", root)
    (root / "helm-docs").write_bytes(b"\x7fELF not a manifest\n")
    (root / "k8s/current").symlink_to("hpa.yaml")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    oid = git(root, "rev-parse", "HEAD:helm-docs").strip()
    (root / ".git/objects" / oid[:2] / oid[2:]).unlink()
    hpa = root / "k8s/hpa.yaml"
    hpa.write_text(hpa.read_text().replace("maxReplicas: 40", "maxReplicas: 50"))
    proc = check(root, "k8s", "--base", "main", "--select", "PA101", "--fail-on", "error",
                 "--format", "json")
    assert proc.returncode == 1, proc.stderr
    base = json.loads(proc.stdout)["base"]
    assert base["not_read"] == ["helm-docs (its object is not in the repository)"]
    (postgres,) = base["servers"]
    assert (postgres["peak_before"], postgres["peak_after"]) == (800, 1000), base


def test_export_subst_files_are_read_at_the_base_as_a_checkout_has_them(tmp_path):
    # `git archive` expands `$Format:...$` in files marked export-subst; a checkout (the
    # working tree the head's run reads) does not. Here the expansion moved the HPA's
    # lines at the base, and the change table said maxReplicas moved line too.
    root = tmp_path / "shop"
    shutil.copytree(Path(__file__).resolve().parent.parent / "fixtures/acme-shop", root)
    hpa = root / "k8s/hpa.yaml"
    hpa.write_text("# release $Format:%H%n%n%n$\n" + hpa.read_text())
    (root / ".gitattributes").write_text("k8s/hpa.yaml export-subst\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    hpa.write_text(hpa.read_text().replace("maxReplicas: 40", "maxReplicas: 50"))
    line = next(i for i, t in enumerate(hpa.read_text().splitlines(), 1) if "maxReplicas" in t)
    proc = check(root, "k8s", "--base", "main", "--select", "PA101", "--fail-on", "error")
    assert proc.returncode == 1, proc.stderr
    assert f"HPA maxReplicas 40 -> 50 (k8s/hpa.yaml:{line})" in proc.stdout, proc.stdout
