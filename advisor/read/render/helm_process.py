"""The parent side of advisor.read.render.helm_worker: a chart loaded in a child process whose
every request has a time limit, a memory limit and an output-size limit, enforced while it
runs (the child is killed, and started again for the next request).

`EngineChart` offers what advisor.read.render.helm uses of helm-python-sdk's `Chart`
(metadata, dependencies, merge_values, render), so the renderer does not know the engine
is in another process. Whatever the engine prints on stderr (Helm's warnings) is kept in
`warnings`, one entry per distinct line, for notices.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RENDER_SECONDS = 20.0  # one render; a plain render of the largest Bitnami chart is < 1 s
MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # the rendered manifests of one render, as JSON
MAX_RSS_BYTES = 1536 * 1024 * 1024  # the engine process's resident memory
START_SECONDS = 60.0  # starting the engine and loading the chart
_POLL = 0.05


class EngineError(Exception):
    """Helm refused: a template error, bad values, a chart it cannot load."""

    def __init__(self, message: str, kind: str = "HelmError") -> None:
        super().__init__(message)
        self.kind = kind


class RenderLimit(EngineError):
    """A request passed its time, memory or output limit; the engine was stopped."""


class EngineProcess:
    """One engine process, serving one chart at a time (`load` switches charts, so a run
    with many charts starts the engine once); restarted after a limit stopped it."""

    def __init__(self, chart_dir: Path | None = None, *, max_output: int | None = None,
                 max_rss: int | None = None) -> None:
        self.chart_dir = chart_dir
        self.max_output = MAX_OUTPUT_BYTES if max_output is None else max_output
        self.max_rss = MAX_RSS_BYTES if max_rss is None else max_rss
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.stderr_seen = 0
        self.warnings: list[str] = []
        self._calls: EngineCalls | None = None
        self.said: Callable[[str], str | None] | None = None  # see EngineView.said
        self.starts = 0
        # Requests the process did not answer (a limit stopped it, it died): a render
        # that saw one may differ from the same render on another run (cached only if not).
        self.failures = 0

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop()
        self._collect_stderr()
        self.stderr.close()

    def load(self, chart_dir: Path, said: Callable[[str], str | None] | None = None) -> Any:
        """Make `chart_dir` the chart of the next requests; its metadata. `said`: what
        is kept of each line the engine prints while it serves this chart."""
        self.chart_dir = chart_dir
        self.said = said
        self.warnings = []
        if self.proc is None:
            self._start()
        # Starting the interpreter and loading the chart is not a render's time.
        return self._call({"op": "load", "chart": str(chart_dir)}, START_SECONDS)["ok"]

    def request(self, payload: dict[str, Any], timeout: float | None = None) -> Any:
        return self.answer(payload, timeout)["ok"]

    def answer(self, payload: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """The whole answer to `payload`: its "ok" and what else the op adds."""
        if self.proc is None:
            self._start()
            if self.chart_dir is not None:
                self._call({"op": "load", "chart": str(self.chart_dir)}, START_SECONDS)
        return self._call(payload, RENDER_SECONDS if timeout is None else timeout)

    def calls(self) -> EngineCalls:
        """The library's calls about no chart, answered by this process."""
        if self._calls is None:
            self._calls = EngineCalls(self)
        return self._calls

    def _call(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(payload).encode() + b"\n")
            proc.stdin.flush()
        except OSError:
            self.failures += 1
            self._stop()
            raise EngineError(self._died()) from None
        try:
            line = self._read_line(proc, timeout)
        finally:
            self._collect_stderr()
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise EngineError(str(answer["error"]), str(answer.get("type", "HelmError")))
        return answer

    def _start(self) -> None:
        env = engine_environ(os.environ, self.max_rss)
        self.starts += 1
        self.proc = subprocess.Popen(
            worker_command(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env,
            start_new_session=True)

    def _read_line(self, proc: subprocess.Popen[bytes], timeout: float) -> bytes:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout
        chunks: list[bytes] = []
        size = 0
        fd = proc.stdout.fileno()
        # poll on the one descriptor: a selectors.DefaultSelector per request was an
        # epoll descriptor made, registered and closed each time.
        waiting = select.poll()
        waiting.register(fd, select.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.failures += 1
                self._stop()
                raise RenderLimit(f"stopped after {timeout:g} s (time limit)")
            if waiting.poll(math.ceil(min(left, _POLL) * 1000)):
                data = os.read(fd, 1024 * 1024)
                if not data:
                    self.failures += 1
                    self._stop()
                    raise EngineError(self._died())
                chunks.append(data)
                size += len(data)
                if data.endswith(b"\n"):
                    return b"".join(chunks)
                if size > self.max_output:
                    self.failures += 1
                    self._stop()
                    raise RenderLimit(f"stopped after {self.max_output // 2**20} MiB "
                                      "of rendered output (output limit)")
            rss = _rss(proc.pid)
            if rss > self.max_rss:
                self.failures += 1
                self._stop()
                raise RenderLimit(f"stopped at {rss // 2**20} MiB of memory (memory "
                                  f"limit {self.max_rss // 2**20} MiB)")

    def _died(self) -> str:
        self._collect_stderr()
        tail = self.warnings[-1] if self.warnings else "no message"
        return f"the Helm engine process ended: {tail}"

    def _stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, 9)
            except OSError:
                proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    def _collect_stderr(self) -> None:
        if self.stderr.closed:
            return
        self.stderr.seek(self.stderr_seen)
        data = self.stderr.read(1024 * 1024)
        self.stderr_seen += len(data)
        self.stderr.seek(0, os.SEEK_END)
        for raw in data.decode("utf-8", "replace").splitlines():
            line: str | None = _GO_LOG_TIME.sub("", raw.strip())  # Go's `log` prefix
            if line and self.said is not None:
                line = self.said(line)
            if line and line not in self.warnings and len(self.warnings) < 50:
                self.warnings.append(line[:300])


def worker_command() -> list[str]:
    """The engine process: helm_worker.py run as a script, not `-m` (which imports the
    packages above it first: advisor.read.render's model and manifest readers, a fifth
    of the engine's start-up); -P keeps the script's folder (helm.py, sandbox.py) and
    the working directory off its import path."""
    return [sys.executable, "-P", str(Path(__file__).with_name("helm_worker.py"))]


def engine_environ(environ: Any, max_rss: int) -> dict[str, str]:
    """The engine process's environment: this one, with this package importable, and
    Go's collector tuned unless the user tuned it. A render leaves mostly garbage: at
    the default GOGC=100 collecting it was a fifth of the engine's CPU (replaying the
    requests of a 200-chart run: 1.20 -> 0.92 s). With the soft memory limit at half the
    RSS limit, the heap grows beyond what it reached at GOGC=100 only up to that half:
    a chart the memory limit did not stop before is not stopped now."""
    package_parent = str(Path(__file__).resolve().parents[3])
    env = dict(environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [package_parent, *filter(None, [env.get("PYTHONPATH")])])
    if "GOGC" not in env and "GOMEMLIMIT" not in env:
        env["GOGC"] = "400"
        env["GOMEMLIMIT"] = f"{max(max_rss // 2 // 2**20, 64)}MiB"
    env.update(NO_NETWORK)
    for name in ("NO_PROXY", "no_proxy"):
        env.pop(name, None)
    return env


# Nothing the engine does needs the network (no cluster, no repository; a schema's remote
# references are taken out by EngineView). Should one reach Helm's schema loader anyway,
# its HTTP client takes its proxy from the environment (helm/helm@e9b85e4
# pkg/chart/common/util/jsonschema.go newHTTPURLLoader: Proxy: http.ProxyFromEnvironment):
# a proxy on port 0, where nothing can listen, refuses it at once, before any name is
# resolved. (Go sends loopback addresses direct, whatever the proxy: EngineView is what
# keeps those out.) NO_PROXY would exempt hosts: removed.
NO_NETWORK = {name: "http://127.0.0.1:0" for name in
              ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}


_GO_LOG_TIME = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)? ")


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class EngineCalls:
    """helm-python-sdk's module-level calls the renderer makes (values_from_yaml,
    parse_set_string, validate_release_name, helm_sdk_version), answered by the engine
    process: the parent never loads the Go library, whose start-up the engine process
    pays anyway (0.04-0.08 s of CPU a run, twice), and a chart's default values.yaml is
    read by Helm once, when it loads the chart. Errors are EngineError, as `HelmError`."""

    HelmError = EngineError

    def __init__(self, process: EngineProcess) -> None:
        self.process = process
        self._version: str | None = None
        self._release_errors: dict[str, str | None] = {}

    def values_from_yaml(self, text: str) -> Any:
        return self.process.request({"op": "values", "text": text}, START_SECONDS)

    def parse_set_string(self, expr: str) -> Any:
        return self.process.request({"op": "set", "expr": expr}, START_SECONDS)

    def release_name_error(self, name: str) -> str | None:
        """Why Helm refuses the release name `name`, if it does (asked once per name)."""
        if name not in self._release_errors:
            try:
                self.process.request({"op": "release_name", "name": name}, START_SECONDS)
                self._release_errors[name] = None
            except RenderLimit:
                raise
            except EngineError as exc:
                self._release_errors[name] = str(exc)
        return self._release_errors[name]

    def answered(self) -> bool:
        """Whether the engine has said its version: its library loads."""
        return self._version is not None

    def helm_sdk_version(self) -> str:
        """The engine's version: its first request starts the process (EngineError when
        the library does not load there)."""
        if self._version is None:
            self._version = str(self.process.request({"op": "version"}, START_SECONDS))
        return self._version


class EngineChart:
    """helm-python-sdk's Chart API (the parts the renderer uses) over an EngineProcess."""

    def __init__(self, process: EngineProcess, loaded: dict[str, Any], *,
                 owned: bool = True) -> None:
        self.process = process
        self.owned = owned  # closed with the chart, or shared by the run's charts
        self.metadata: dict[str, Any] = loaded.get("metadata") or {}
        self.dependencies: list[dict[str, Any]] = [
            {"name": n} for n in loaded.get("dependencies") or []]
        # The values a render with `merge` was asked for, and its answer: merge_values of
        # the same values is read from it instead of another request.
        self._merged: tuple[dict[str, Any], dict[str, Any]] | None = None

    @classmethod
    def load(cls, chart_dir: Path, process: EngineProcess | None = None, *,
             said: Callable[[str], str | None] | None = None) -> EngineChart:
        owned = process is None
        engine = EngineProcess() if process is None else process
        try:
            loaded = engine.load(chart_dir, said)
        except BaseException:
            if owned:
                engine.close()
            raise
        return cls(engine, loaded, owned=owned)

    def __enter__(self) -> EngineChart:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.owned:
            self.process.close()

    @property
    def warnings(self) -> list[str]:
        return self.process.warnings

    def merge_values(self, values: dict[str, Any]) -> dict[str, Any]:
        asked, self._merged = self._merged, None
        if asked is not None and asked[0] is values:
            answer = asked[1]
            if "merge_error" in answer:
                raise EngineError(str(answer["merge_error"]),
                                  str(answer.get("merge_type", "HelmError")))
            merged: dict[str, Any] = answer["merged"]
            return merged
        return self.process.request({"op": "merge", "values": values})

    def render(self, values: dict[str, Any], *, name: str, namespace: str | None,
               is_install: bool = True, timeout: float | None = None,
               merge: bool = False) -> dict[str, str]:
        """The rendered templates; with `merge`, the values are merged in the same request
        (after a render that succeeded), for the merge_values of these values next."""
        del is_install  # the worker always renders as an install, as `helm template`
        payload = {"op": "render", "values": values, "name": name, "namespace": namespace}
        if not merge:
            return self.process.request(payload, timeout=timeout)
        answer = self.process.answer({**payload, "merge": True}, timeout=timeout)
        self._merged = (values, answer)
        rendered: dict[str, str] = answer["ok"]
        return rendered


class _Added:
    """An entry the chart folder lacks, linked in: the folder `where`, but what its
    `plan` says otherwise."""

    def __init__(self, where: Path, plan: dict[str, Any]) -> None:
        self.where = where
        self.plan = plan


class EngineView:
    """The folder the engine loads a chart from: the chart's own, unless something in it
    must not reach the engine. Then the chart is loaded from a temporary folder of
    symlinks to each of its entries, but:
    - the parse cache's folder (advisor.read.cache.CACHE_DIR) of a chart at the scanned
      root: Helm loads every file under a chart that .helmignore does not name as a chart
      file (`.Files`; checked with the engine: `.Files.Glob "**"` lists the cache's pack);
    - templates/tests/ when asked (`without_tests`);
    - a values.schema.json (the chart's or a vendored subchart's, in a folder or a .tgz)
      that names what Helm's validator would fetch or read outside the repository: a
      copy without it takes its place (advisor.read.render.helm_schema); `notes` says
      what was left out, for notices.
    - `local`: the `file://` dependencies charts/ lacks, each linked in as charts/<name>
      (advisor.read.render.helm_local_deps), its own schema made offline likewise.
    Helm follows the links (it reads the same files under the same names) and says so
    on stderr for each: those lines are dropped, and the temporary folder's path is put
    back to the chart's in whatever else Helm says."""

    def __init__(self, root: Path, chart_path: Path, *, without_tests: bool = False,
                 local: dict[str, Path] | None = None) -> None:
        self.real = chart_path
        self.path = chart_path
        self.root = root
        self.without_tests = without_tests  # templates/tests/ left out (test hooks)
        self.local = dict(local or {})
        self.notes: list[Any] = []  # helm_schema.SchemaNote, one per schema rewritten
        self._made: Path | None = None
        self._links: list[tuple[str, str]] = []  # (link, what it names)

    def __enter__(self) -> EngineView:
        from advisor.read.cache import CACHE_DIR
        from advisor.read.render.helm_schema import offline_plan

        # entry name -> None (left out), bytes (written in its place), or a folder's plan
        self.notes = []
        plan: dict[str, Any] = offline_plan(self.real, self.notes)
        if self.real == self.root and os.path.lexists(self.real / CACHE_DIR):
            plan[CACHE_DIR] = None
        if self.without_tests and (self.real / "templates" / "tests").is_dir():
            plan["templates"] = {"tests": None}
        for name, where in self.local.items():
            # the engine names a subchart by its Chart.yaml, not its folder: a free name
            link = name
            while os.path.lexists(self.real / "charts" / link):
                link += "_"
            plan.setdefault("charts", {})[link] = _Added(
                where, offline_plan(where, self.notes, f"charts/{link}"))
        if not plan:
            return self
        made = Path(tempfile.mkdtemp(prefix="pool-advisor-chart-"))
        self._made = made
        try:
            self._link_entries(self.real, made, plan)
        except OSError:
            self.__exit__()
            raise
        self.path = made
        return self

    def _link_entries(self, real: Path, made: Path, plan: dict[str, Any]) -> None:
        """A symlink in `made` to each entry of `real`, but what `plan` says otherwise;
        and the entries `plan` adds (a charts/ folder `real` lacks, a placed dependency)."""
        seen: set[str] = set()
        with contextlib.suppress(FileNotFoundError), os.scandir(real) as entries:
            for entry in entries:
                seen.add(entry.name)
                if entry.name not in plan:
                    self._link(entry.path, made / entry.name)
                    continue
                instead = plan[entry.name]
                if isinstance(instead, bytes):
                    (made / entry.name).write_bytes(instead)
                elif isinstance(instead, dict) and entry.is_dir():
                    (made / entry.name).mkdir()
                    self._link_entries(Path(entry.path), made / entry.name, instead)
        for name, instead in plan.items():
            if name in seen:
                continue
            if isinstance(instead, _Added) and not instead.plan:
                self._link(str(instead.where), made / name)
            elif isinstance(instead, _Added | dict):
                (made / name).mkdir()
                self._link_entries(instead.where if isinstance(instead, _Added)
                                   else real / name, made / name,
                                   instead.plan if isinstance(instead, _Added) else instead)

    def _link(self, target: str, link: Path) -> None:
        os.symlink(target, link)
        self._links.append((str(link), target))

    def __exit__(self, *exc: object) -> None:
        made, self._made = self._made, None
        self._links = []
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)  # unlinks the symlinks, not what they name
        self.path = self.real

    def said(self, line: str) -> str | None:
        """A line the engine printed, as it reads for the chart's own folder; None for
        Helm's note about one of this view's symlinks."""
        if self._made is None:
            return line
        made = str(self._made)
        if "found symbolic link in path" in line:
            for link, target in self._links:
                if line.endswith((f"path={link} resolved={target}",
                                  f'path="{link}" resolved="{target}"')):
                    return None
        return line.replace(made, str(self.real))

    def error(self, exc: Exception) -> Exception:
        """`exc` with the view's path put back to the chart's."""
        if self._made is None or str(self._made) not in str(exc):
            return exc
        text = str(exc).replace(str(self._made), str(self.real))
        return EngineError(text, getattr(exc, "kind", "HelmError"))
