"""Run action.yml's steps the way the Actions runner would, on this machine: a git
checkout of fixtures/acme-shop with a pull request that raises maxReplicas, the real
pool-advisor, and the loopback GitHub fake for the comment. `uses:` steps are not run
(setup-python is the runner's; for upload-sarif the SARIF it would upload is checked),
and the install step is replaced by a `pool-advisor` shim for this source tree.

Expressions are evaluated by a deliberately small evaluator that knows only the forms
action.yml uses; a new form makes this test fail, so it gets taught rather than
silently skipped."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_github import FakeGitHub, serve
from ruamel.yaml import YAML

from advisor.ci.comment import MARKER

REPO = Path(__file__).resolve().parent.parent
TOKEN = "ghs_actionRunT0ken"
FORK_TOKEN = "ghs_readOnlyForkT0ken"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                           *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


class Runner:
    def __init__(self, tmp: Path, api_url: str, token: str, inputs: dict[str, str],
                 head_repo: str = "octo/shop", submodule: str = ""):
        self.tmp = tmp
        self.head_repo = head_repo
        self.ws = tmp / "ws"
        shutil.copytree(REPO / "fixtures/acme-shop", self.ws)
        _git(self.ws, "init", "-q", "-b", "main")
        if submodule:  # k8s/frontend: a repository of its own holding this manifest
            sub = tmp / "frontend"
            sub.mkdir()
            (sub / "frontend.yaml").write_text(submodule)
            _git(sub, "init", "-q", "-b", "main")
            _git(sub, "add", "-A")
            _git(sub, "commit", "-qm", "frontend")
            _git(self.ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
                 str(sub), "k8s/frontend")
        _git(self.ws, "add", "-A")
        _git(self.ws, "commit", "-qm", "base")
        self.base_sha = _git(self.ws, "rev-parse", "HEAD")
        hpa = self.ws / "k8s/hpa.yaml"
        hpa.write_text(hpa.read_text().replace("maxReplicas: 40", "maxReplicas: 50"))
        _git(self.ws, "commit", "-qam", "more replicas")
        self.head_sha = _git(self.ws, "rev-parse", "HEAD")

        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "pool-advisor"
        shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m advisor \"$@\"\n")
        shim.chmod(0o755)
        (tmp / "runner").mkdir()
        event = tmp / "event.json"
        event.write_text(json.dumps({"number": 7, "pull_request": {
            "number": 7, "head": {"sha": self.head_sha}, "base": {"sha": self.base_sha}}}))
        self.files = {n: tmp / f"{n}.txt" for n in ("output", "summary")}
        for f in self.files.values():
            f.write_text("")
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GIT_"))},
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(REPO),
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
            "GITHUB_ACTIONS": "true", "CI": "true",
            "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": "octo/shop", "GITHUB_API_URL": api_url,
            "GITHUB_SERVER_URL": "https://github.test", "GITHUB_WORKSPACE": str(self.ws),
            "RUNNER_TEMP": str(tmp / "runner"),
            "GITHUB_OUTPUT": str(self.files["output"]),
            "GITHUB_STEP_SUMMARY": str(self.files["summary"]),
            # a local submodule's file:// URL, which git refuses by default
            "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow",
            "GIT_CONFIG_VALUE_0": "always",
        }
        action = YAML(typ="safe").load((REPO / "action.yml").read_text())
        self.steps = action["runs"]["steps"]
        self.inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
        self.inputs.update(inputs, token=token)
        self.outputs: dict[str, dict[str, str]] = {}
        self.uploaded: list[Path] = []
        self.log: list[tuple[str, subprocess.CompletedProcess]] = []

    # --- expressions -----------------------------------------------------------------

    def value(self, expr: str) -> str:
        expr = expr.strip()
        if m := re.fullmatch(r"inputs\.([\w-]+)", expr):
            return self.inputs[m.group(1)]
        if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
            return self.outputs.get(m.group(1), {}).get(m.group(2), "")
        known = {
            "github.event_name": "pull_request",
            "github.action_path": str(REPO),
            "github.token": TOKEN,
            "github.event.pull_request.base.sha": self.base_sha,
            "github.repository": "octo/shop",
            "github.event.pull_request.head.repo.full_name": self.head_repo,
        }
        if expr in known:
            return known[expr]
        raise AssertionError(f"expression the test does not know: {expr!r}")

    def substitute(self, text: str) -> str:
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: self.value(m.group(1)), str(text))

    def condition(self, expr: str) -> bool:
        ok = True
        for clause in expr.split("&&"):
            m = re.fullmatch(r"\s*([\w.-]+)\s*==\s*'([^']*)'\s*", clause)
            assert m, f"condition the test does not know: {clause!r}"
            ok = ok and self.value(m.group(1)) == m.group(2)
        return ok

    # --- steps -----------------------------------------------------------------------

    def run(self) -> int:
        for step in self.steps:
            name = step.get("name") or step.get("uses")
            if "if" in step and not self.condition(step["if"]):
                continue
            if "uses" in step:
                if step["uses"].startswith("github/codeql-action/upload-sarif@"):
                    self.uploaded.append(Path(self.substitute(step["with"]["sarif_file"])))
                continue
            if name == "Install pool-advisor":
                continue  # the shim stands in for pip install of this tree
            env = {**self.env, **{k: self.substitute(v) for k, v in step.get("env", {}).items()}}
            self.files["output"].write_text("")
            # What the runner runs for `shell: bash`.
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                                   step["run"]], cwd=self.ws, env=env, capture_output=True,
                                  text=True, timeout=300)
            self.log.append((name, proc))
            if "id" in step:
                self.outputs[step["id"]] = dict(
                    line.split("=", 1) for line in self.files["output"].read_text().splitlines()
                    if "=" in line)
            if proc.returncode != 0:
                return proc.returncode
        return 0

    def all_output(self) -> str:
        return "".join(p.stdout + p.stderr for _, p in self.log)


@pytest.fixture
def gh():
    fake = FakeGitHub(token=TOKEN, read_only_token=FORK_TOKEN)
    fake.add_pr("octo", "shop", 7, comments=["first!"])
    with serve(fake) as running:
        yield running


def test_pull_request_run_uploads_sarif_annotates_comments_and_fails(gh, tmp_path):
    runner = Runner(tmp_path, gh.api_url, TOKEN, {"paths": "k8s"})
    rc = runner.run()
    assert rc == 1, runner.all_output()  # PA101: the deployment does not fit
    assert runner.log[-1][0] == "Result"
    assert runner.outputs["check"]["exit-code"] == "1"

    (sarif,) = runner.uploaded
    log = json.loads(sarif.read_text())
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in log["runs"][0]["results"]}
    assert uris and all((runner.ws / u).is_file() for u in uris)

    check_log = dict(runner.log)["Check"].stdout
    assert re.search(r"^::error file=k8s/postgres-config.yaml,line=10,", check_log, re.M)

    thread = gh.comments("octo", "shop", 7)
    assert len(thread) == 2
    body = thread[1]["body"]
    assert body.startswith(MARKER)
    assert "| postgres | 97 | 800 \u2192 1,000 | +200 | \u274c over by 903 |" in body, body[:800]
    assert f"https://github.test/octo/shop/blob/{runner.head_sha}/k8s/hpa.yaml#L12" in body
    summary = runner.files["summary"].read_text()
    assert "### pool-advisor" in summary and "800 \u2192 1,000" in summary
    assert TOKEN not in runner.all_output()

    # A second run (a re-run, or the next push) edits the same comment.
    again = Runner(tmp_path / "again", gh.api_url, TOKEN, {"paths": "k8s"})
    assert again.run() == 1
    assert len(gh.comments("octo", "shop", 7)) == 2


def test_fork_pull_request_warns_instead_of_failing_on_the_comment(gh, tmp_path):
    runner = Runner(tmp_path, gh.api_url, FORK_TOKEN, {"paths": "k8s", "upload-sarif": "false"})
    rc = runner.run()
    assert rc == 1  # the findings, not the refused comment
    comment_step = dict(runner.log)["Comment on the pull request"]
    assert comment_step.returncode == 0
    assert "::warning title=pool-advisor::could not post" in comment_step.stdout
    assert "HTTP 403" in comment_step.stderr
    assert FORK_TOKEN not in runner.all_output()
    assert len(gh.comments("octo", "shop", 7)) == 1
    assert runner.uploaded == []
    assert "### pool-advisor" in runner.files["summary"].read_text()


def test_clean_repository_passes(gh, tmp_path):
    runner = Runner(tmp_path, gh.api_url, TOKEN, {"paths": "k8s", "args": "--fail-on error",
                                                  "compare-base": "false"})
    hpa = runner.ws / "k8s/hpa.yaml"
    hpa.write_text(hpa.read_text().replace("maxReplicas: 50", "maxReplicas: 4"))
    rc = runner.run()
    assert rc == 0, runner.all_output()
    body = gh.comments("octo", "shop", 7)[-1]["body"]
    assert "\u2705 **fits**" in body, body[:600]


def test_pull_request_from_a_fork_skips_upload_and_comment(gh, tmp_path):
    runner = Runner(tmp_path, gh.api_url, FORK_TOKEN, {"paths": "k8s"},
                    head_repo="someone/shop")
    assert runner.run() == 1  # the findings still fail the job
    assert runner.uploaded == []
    assert "Comment on the pull request" not in dict(runner.log)
    assert len(gh.comments("octo", "shop", 7)) == 1
    assert "### pool-advisor" in runner.files["summary"].read_text()


FRONTEND = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
  namespace: shop
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
              value: jdbc:postgresql://postgres.shop.svc.cluster.local:5432/shop
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE
              value: "20"
"""


def test_the_base_budget_reads_the_submodules_the_head_reads(gh, tmp_path):
    # k8s/frontend is a submodule, unchanged by the pull request: its 3 x 20 are in the
    # budget before as after. A bare `git worktree add` of the base has it empty, and
    # the comment said +260 where the change adds 200 (audit 32).
    runner = Runner(tmp_path, gh.api_url, TOKEN, {"paths": "k8s"}, submodule=FRONTEND)
    assert runner.run() == 1, runner.all_output()
    body = gh.comments("octo", "shop", 7)[-1]["body"]
    assert "| postgres | 97 | 860 \u2192 1,060 | +200 |" in body, body[:800]
