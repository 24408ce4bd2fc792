"""Objects a chart names with a random string (`{{ randAlphaNum 5 | lower }}`) are named
the same at every run: the random part as `<random>` (audit 56: mattermost-helm's
templates/tests/mattermost-app-test.yaml named its test Pod
`{{ include "mattermost.fullname" . }}-app-test-{{ randAlphaNum 5 | lower }}`, and every
run printed another `skipped Helm test hooks Pod/release-mattermost-app-test-xxxxx`; a
Job so named was a new finding at every `check --base`)."""

from __future__ import annotations

import pytest

from advisor.model import CheckResult, Finding, Location
from advisor.read.fs import Root
from advisor.read.render.helm import render_chart, unrandom_name
from advisor.report.compare import compare


@pytest.mark.parametrize(("name", "line", "want"), [
    ("release-app-app-test-x7k2q",
     '  name: "{{ include  "app.fullname" . }}-app-test-{{ randAlphaNum 5 | lower }}"',
     "release-app-app-test-<random>"),
    ("migrate-ab12cd34-release", "  name: migrate-{{ randAlphaNum 8 }}-{{ .Release.Name }}",
     "migrate-<random>-release"),
    ("job-0f8fad5b-d9cb-469f-a165-70867728950e", "  name: job-{{ uuidv4 }}",
     "job-<random>"),
    ("job-ab1", "  name: job-{{ printf \"%s\" (randAlpha 3) | trunc 63 }}", "job-<random>"),
    # no random call, or a name the template line does not write: unchanged
    ("release-app", '  name: {{ include "app.fullname" . }}', "release-app"),
    ("release-app", "  name: release-{{ randAlphaNum 5 }}", "release-app"),
    ("other", "  password: {{ randAlphaNum 5 }}", "other"),
])
def test_unrandom_name(name, line, want):
    assert unrandom_name(name, line) == want


def test_random_test_pod_name_is_the_same_at_every_render(tmp_path):
    helm = pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk)")
    chart = helm.Chart.create("app", str(tmp_path))
    chart.close()
    tests = tmp_path / "app" / "templates" / "tests"
    for old in tests.iterdir():
        old.unlink()
    (tests / "app-test.yaml").write_text(
        'apiVersion: v1\nkind: Pod\nmetadata:\n'
        '  name: "{{ include  "app.fullname" . }}-app-test-{{ randAlphaNum 5 | lower }}"\n'
        '  annotations:\n    "helm.sh/hook": test\nspec:\n  containers:\n'
        "    - name: t\n      image: busybox:1.36\n")
    (tmp_path / "app" / "templates" / "job.yaml").write_text(
        'apiVersion: batch/v1\nkind: Job\nmetadata:\n'
        '  name: {{ include "app.fullname" . }}-migrate-{{ randAlphaNum 5 | lower }}\n'
        "spec:\n  template:\n    spec:\n      containers:\n        - name: m\n"
        "          image: busybox:1.36\n")
    first = render_chart(Root.of(tmp_path), "app")
    second = render_chart(Root.of(tmp_path), "app")
    assert [n for n in first.notices if "test hooks" in n] == \
        ["helm: app: skipped Helm test hooks Pod/release-app-app-test-<random>"]
    assert first.notices == second.notices
    refs = sorted(o.ref for o in first.objects)
    assert "Job/release-app-migrate-<random>" in refs
    assert refs == sorted(o.ref for o in second.objects)


def test_base_matches_a_finding_on_a_randomly_named_object(tmp_path):
    helm = pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk)")
    chart = helm.Chart.create("app", str(tmp_path))
    chart.close()
    (tmp_path / "app" / "templates" / "job.yaml").write_text(
        'apiVersion: batch/v1\nkind: Job\nmetadata:\n'
        '  name: {{ include "app.fullname" . }}-migrate-{{ randAlphaNum 5 | lower }}\n'
        "spec:\n  template:\n    spec:\n      containers:\n        - name: m\n"
        "          image: busybox:1.36\n")

    def result() -> CheckResult:
        job = next(o for o in render_chart(Root.of(tmp_path), "app").objects
                   if o.kind == "Job")
        f = Finding(code="PA106", name="x", severity="warning",
                    message=f"{job.ref} has no pool size",
                    location=Location(path=job.path, line=job.line), subject=job.ref)
        return CheckResult(tool_version="0", findings=[f])

    # the base and the head render the chart apart: the same Job, not "1 new, 1 fixed"
    diff = compare(result(), result())
    assert not diff.new and not diff.fixed and len(diff.unchanged) == 1
