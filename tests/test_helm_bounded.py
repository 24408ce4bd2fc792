"""Helm renders in bounded time (issue 12 item 7, issue 14 item 2): values tracing never
feeds a value into a loop bound; each render has a time, memory and output limit enforced
while it runs; Helm's warnings become notices; missing dependencies are named."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from advisor.read.fs import Root
from advisor.read.render import field_source, helm_process
from advisor.read.render.helm import render_chart
from advisor.read.sources.k8s import get
from tests.deploy_helpers import by_ref

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")


def _chart(root: Path, values: str, templates: dict[str, str], chart_yaml: str = "") -> Path:
    app = root / "app"
    (app / "templates").mkdir(parents=True)
    (app / "Chart.yaml").write_text(chart_yaml or "apiVersion: v2\nname: app\nversion: 0.1.0\n")
    (app / "values.yaml").write_text(values)
    for name, text in templates.items():
        (app / "templates" / name).write_text(textwrap.dedent(text))
    return app


LOOPING = {
    "sts.yaml": """\
        apiVersion: apps/v1
        kind: StatefulSet
        metadata:
          name: {{ .Release.Name }}-db
          {{- $replicas := int .Values.replicas }}
          annotations:
            peers: {{ range $i := until $replicas }}db-{{ $i }}.{{ $.Values.domain }},{{ end }}
            shards: {{ range $i := untilStep 0 (int .Values.shards) 1 }}s{{ $i }},{{ end }}
        spec:
          replicas: {{ .Values.replicas }}
          template:
            spec:
              containers:
                - name: db
                  image: postgres:16
                  ports:
                    - containerPort: {{ .Values.port | int }}
        """,
}


def test_values_that_bound_a_loop_render_in_the_time_of_a_plain_render(tmp_path: Path,
                                                                       monkeypatch) -> None:
    _chart(tmp_path, 'replicas: 3\nshards: "4"\nport: 5432\ndomain: example\n', LOOPING)
    sizes: list[int] = []
    real_render = helm_process.EngineChart.render

    def recording(self, values, **kw):
        rendered = real_render(self, values, **kw)
        sizes.append(sum(map(len, rendered.values())))
        return rendered

    monkeypatch.setattr(helm_process.EngineChart, "render", recording)
    started = time.monotonic()
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    seconds = time.monotonic() - started
    # No tracing render is much larger than the plain one: no sentinel became a loop
    # bound (900001 did: 900,001 peers, about 20 MB per render).
    assert len(sizes) > 1 and max(sizes) < 2 * sizes[0], sizes
    assert not r.problems, r.problems
    sts = by_ref(r.objects, "StatefulSet/r1-db")
    assert get(sts.body, "spec", "replicas") == 3
    src = field_source(sts, "spec", "replicas")
    assert (src.path, src.line, src.key) == ("app/values.yaml", 1, "values: replicas")
    # A sentinel of 900001 made each loop run 900,001 times (about 40 MB per render); the
    # sentinels run each loop once. The bound leaves room for a loaded machine.
    assert seconds < 15, seconds
    assert not any("stopped" in n for n in r.notices), r.notices


def test_a_render_past_its_time_limit_is_stopped_with_a_finding(tmp_path: Path,
                                                                monkeypatch) -> None:
    monkeypatch.setattr(helm_process, "RENDER_SECONDS", 1.5)
    _chart(tmp_path, "count: 100000000\n", {"cm.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: spin
        data:
          n: "{{ range until (int .Values.count) }}{{ end }}"
        """})
    started = time.monotonic()
    r = render_chart(Root.of(tmp_path), "app")
    assert time.monotonic() - started < 30
    assert not r.objects
    assert [p for p in r.problems if p.fatal and "time limit" in p.message], r.problems
    assert any("time limit" in n for n in r.notices)


def test_a_render_past_its_output_limit_is_stopped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(helm_process, "MAX_OUTPUT_BYTES", 1024 * 1024)
    _chart(tmp_path, "count: 200000\n", {"cm.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: big
        data:
          n: "{{ range until (int .Values.count) }}0123456789{{ end }}"
        """})
    r = render_chart(Root.of(tmp_path), "app")
    assert not r.objects
    assert [p for p in r.problems if p.fatal and "output limit" in p.message], r.problems


def test_a_render_past_its_memory_limit_is_stopped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(helm_process, "MAX_RSS_BYTES", 400 * 1024 * 1024)
    # A 1 GB string built in memory, of which only the length is printed: the output
    # stays small, the memory does not.
    _chart(tmp_path, "count: 1000000000\n", {"cm.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: big
        data:
          n: "{{ len (repeat (int .Values.count) "x") }}"
        """})
    r = render_chart(Root.of(tmp_path), "app")
    assert not r.objects
    assert [p for p in r.problems if p.fatal and "memory limit" in p.message], r.problems


def test_helm_warnings_are_notices_not_stderr(tmp_path: Path, capfd) -> None:
    _chart(tmp_path, "c: 3\nreplicas: 2\n", {"cm.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: x
        data:
          r: "{{ .Values.replicas }}"
        """})
    (tmp_path / "prod.yaml").write_text("c:\n  x: 1\n")
    r = render_chart(Root.of(tmp_path), "app", values_files=["prod.yaml"])
    assert not r.problems
    captured = capfd.readouterr()
    assert "skipped value" not in captured.err
    warned = [n for n in r.notices if "Helm says: warning: skipped value for app.c" in n]
    assert len(warned) == 1, r.notices  # once, though every tracing render repeats it


COMMON_CALLER = {"cm.yaml": """\
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: {{ include "common.names.fullname" . }}
    data:
      max_connections: "{{ .Values.maxConnections }}"
    """}
WITH_COMMON = ("apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n"
               "  - name: common\n    version: 2.x.x\n    repository: oci://charts.invalid/lib\n"
               "  - name: cache\n    version: 1.x.x\n    repository: oci://charts.invalid/lib\n"
               "    condition: cache.enabled\n")


def test_a_missing_library_chart_is_named(tmp_path: Path) -> None:
    _chart(tmp_path, "maxConnections: 200\n", COMMON_CALLER, WITH_COMMON)
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.objects
    fatal = [p for p in r.problems if p.fatal]
    assert fatal and "common, cache declared in Chart.yaml but not vendored" in \
        fatal[0].message, fatal
    assert (fatal[0].location.path, fatal[0].location.line) == ("app/templates/cm.yaml", 4)


def test_a_vendored_library_chart_renders_and_the_rest_is_named(tmp_path: Path) -> None:
    app = _chart(tmp_path, "maxConnections: 200\n", COMMON_CALLER, WITH_COMMON)
    lib = app / "charts" / "common"
    (lib / "templates").mkdir(parents=True)
    (lib / "Chart.yaml").write_text("apiVersion: v2\nname: common\nversion: 2.1.0\n"
                                    "type: library\n")
    (lib / "templates" / "_names.tpl").write_text(
        '{{- define "common.names.fullname" -}}\n'
        '{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 }}\n{{- end -}}\n')
    r = render_chart(Root.of(tmp_path), "app", release="r1")
    assert not r.problems, r.problems
    cm = by_ref(r.objects, "ConfigMap/r1-app")
    src = field_source(cm, "data", "max_connections")
    assert (src.path, src.line) == ("app/values.yaml", 1)
    assert any("dependencies cache are declared in Chart.yaml but not vendored" in n
               for n in r.notices), r.notices


def test_the_charts_of_a_run_share_one_engine_process(tmp_path: Path, monkeypatch) -> None:
    from advisor.engine.check import run_check

    for name in ("one", "two", "three"):
        chart = tmp_path / name
        (chart / "templates").mkdir(parents=True)
        (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
        (chart / "values.yaml").write_text("replicas: 2\n")
        (chart / "templates" / "cm.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n"
            '  r: "{{ .Values.replicas }}"\n')
    starts: list[int] = []
    real_start = helm_process.EngineProcess._start

    def counting(self):
        starts.append(1)
        real_start(self)

    monkeypatch.setattr(helm_process.EngineProcess, "_start", counting)
    result = run_check([tmp_path])
    assert sum("helm: rendered" in n for n in result.notices) == 3, result.notices
    assert len(starts) == 1


def test_a_template_error_is_one_line_at_its_template_line(tmp_path: Path) -> None:
    """Helm's include error spans lines (`:21:39\\n  executing ...\\n    error calling
    include:`); the finding prints it on one line, at the template's line."""
    _chart(tmp_path, "x: 1\n", {"sts.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: c
          annotations:
            checksum: {{ include (print $.Template.BasePath "/secrets.yaml") . | sha256sum }}
        """})
    r = render_chart(Root.of(tmp_path), "app")
    (problem,) = [p for p in r.problems if p.fatal]
    assert problem.location.path.endswith("templates/sts.yaml") and problem.location.line == 6
    assert "\n" not in problem.message
    assert "error calling include: template: no template" in problem.message


def test_the_engine_collects_garbage_less_often_unless_the_user_tuned_it():
    env = helm_process.engine_environ({"PATH": "/bin"}, 1024 * 2**20)
    # half the RSS limit: the heap never grows past what GOGC=100 let it reach above that
    assert (env["PATH"], env["GOGC"], env["GOMEMLIMIT"]) == ("/bin", "400", "512MiB")
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(Path(helm_process.__file__)
                                                         .resolve().parents[3])
    for tuned in ({"GOGC": "50"}, {"GOMEMLIMIT": "2GiB"}):
        env = helm_process.engine_environ(tuned, 1024 * 2**20)
        assert {k: env.get(k) for k in ("GOGC", "GOMEMLIMIT")} == {
            "GOGC": None, "GOMEMLIMIT": None, **tuned}


def test_the_baseline_render_merges_its_values_in_the_same_request(tmp_path: Path) -> None:
    app = _chart(tmp_path, "replicas: 3\nport: 5432\ndb:\n  host: a\n", {"cm.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: cm
        data:
          port: "{{ .Values.port }}"
        """})
    user = {"replicas": 5, "db": {"user": "u"}}
    with helm_process.EngineChart.load(app) as chart:
        sent: list[dict] = []
        real_call = chart.process._call

        def recording(payload, timeout):
            sent.append(payload)
            return real_call(payload, timeout)

        chart.process._call = recording  # type: ignore[method-assign]
        rendered = chart.render(user, name="r", namespace=None, merge=True)
        merged = chart.merge_values(user)
        assert [p["op"] for p in sent] == ["render"] and sent[0]["merge"] is True
        # What the requests of their own answer: another merge is asked of the engine.
        assert chart.merge_values(user) == merged
        assert chart.render(user, name="r", namespace=None) == rendered
        assert [p["op"] for p in sent] == ["render", "merge", "render"]
    assert merged == {"replicas": 5, "port": 5432, "db": {"host": "a", "user": "u"}}
    assert rendered["app/templates/cm.yaml"].endswith('port: "5432"\n')


class _Answering:
    """An EngineProcess that answers each request with the next of `answers`."""

    def __init__(self, *answers: dict) -> None:
        self.answers = list(answers)
        self.sent: list[dict] = []

    def answer(self, payload: dict, timeout: float | None = None) -> dict:
        self.sent.append(payload)
        return self.answers.pop(0)

    def request(self, payload: dict, timeout: float | None = None) -> object:
        return self.answer(payload, timeout)["ok"]


def test_a_merge_that_failed_in_the_render_request_raises_as_a_merge_request_would() -> None:
    process = _Answering({"ok": {"t.yaml": "x"}, "merge_error": "bad values",
                          "merge_type": "HelmValuesError"}, {"ok": {"a": 1}})
    chart = helm_process.EngineChart(process, {}, owned=False)  # type: ignore[arg-type]
    user = {"a": 1}
    assert chart.render(user, name="r", namespace=None, merge=True) == {"t.yaml": "x"}
    with pytest.raises(helm_process.EngineError) as raised:
        chart.merge_values(user)
    assert (str(raised.value), raised.value.kind) == ("bad values", "HelmValuesError")
    # Values other than the render's (here: the same again, once read) ask the engine.
    assert chart.merge_values(user) == {"a": 1}
    assert [p["op"] for p in process.sent] == ["render", "merge"]


def test_the_worker_answers_a_failed_merge_beside_its_render() -> None:
    from advisor.read.render import helm_worker

    class HelmError(Exception):
        pass

    class Helm:
        pass

    class Chart:
        def merge_values(self, values: dict) -> dict:
            if "bad" in values:
                raise HelmError("cannot merge")
            return {**values, "default": 1}

    helm = Helm()
    helm.HelmError = HelmError  # type: ignore[attr-defined]
    assert helm_worker._merged(helm, Chart(), {"values": {"a": 2}}) == {
        "merged": {"a": 2, "default": 1}}
    assert helm_worker._merged(helm, Chart(), {"values": {"bad": 1}}) == {
        "merge_error": "cannot merge", "merge_type": "HelmError"}


def test_the_engine_process_imports_none_of_the_packages_above_it(tmp_path: Path) -> None:
    # Run as a script: `-m advisor.read.render.helm_worker` imported advisor.read.render
    # (the model, the manifest readers) before the worker's first line.
    import subprocess

    command = helm_process.worker_command()
    ran = subprocess.run([command[0], "-X", "importtime", *command[1:]], input="",
                         capture_output=True, text=True, cwd=tmp_path,
                         env=helm_process.engine_environ(os.environ, 2**30))
    assert ran.returncode == 0, ran.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in ran.stderr.splitlines()
                if line.startswith("import time:")]
    assert "helm_python" in imported  # the worker started the engine, and ended
    assert not [name for name in imported if name.split(".")[0] == "advisor"], imported


def test_a_vendored_subcharts_own_missing_dependency_is_named(tmp_path: Path) -> None:
    """khuedoan/homelab's shape: a wrapper chart (matrix) vendors its app chart
    (dendrite), whose own postgresql dependency is not vendored: named, never silent
    (the engine says only the top chart's missing dependencies)."""
    app = _chart(tmp_path, "chat:\n  postgresql:\n    enabled: true\n", {"cm.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: top
        data:
          a: "1"
        """}, "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n"
              "  - name: chat\n    version: 0.13.5\n    repository: https://charts.invalid\n")
    sub = app / "charts" / "chat"
    (sub / "templates").mkdir(parents=True)
    (sub / "Chart.yaml").write_text(
        "apiVersion: v2\nname: chat\nversion: 0.13.5\ndependencies:\n"
        "  - name: postgresql\n    version: 12.1.7\n"
        "    repository: https://charts.bitnami.com/bitnami\n"
        "    condition: postgresql.enabled\n")
    (sub / "values.yaml").write_text("postgresql:\n  enabled: false\n")
    r = render_chart(Root.of(tmp_path), "app", release="matrix")
    assert not r.problems, r.problems
    assert ("helm: app: subchart chat (app/charts/chat) declares dependencies postgresql "
            "that are not vendored in its charts/; they are not rendered (run `helm "
            "dependency build` in it)") in r.notices, r.notices
