"""kustomize cannot fetch, execute or read outside the repository (issue 14 item 1).

Each hostile case is first run with a plain `kubectl kustomize` (the control: it shows the
case really would reach outside on this machine), then through pool-advisor's sandbox,
which is called directly so that the URL filter in front of it is not what stops it.
"""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from advisor.read.fs import Root
from advisor.read.render import sandbox
from advisor.read.render.kustomize import build_sandboxed, find_kustomize, render_kustomization

pytestmark = pytest.mark.skipif(find_kustomize() is None, reason="no kubectl or kustomize")

CANARY = "canary-from-outside"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _configmap(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: b\n"


def _plain_kustomize(directory: Path) -> subprocess.CompletedProcess[str]:
    command = find_kustomize()
    assert command is not None
    return subprocess.run([*command, str(directory)], capture_output=True, text=True,
                          timeout=60, check=False)


def _sandboxed(root: Path, top: Path) -> str:
    command = find_kustomize()
    assert command is not None
    built = build_sandboxed(Root.of(root), top.resolve(), [top.resolve()], command)
    return (built.text or "") + built.error + "\n".join(built.notices)


@pytest.fixture()
def outside_git_repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git not installed: the control case cannot clone")
    repo = tmp_path / "outside"
    _write(repo / "kustomization.yaml", "resources:\n- cm.yaml\n")
    _write(repo / "cm.yaml", _configmap(CANARY))
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env,
                       capture_output=True)
    return repo


def test_git_file_url_is_not_cloned(tmp_path: Path, outside_git_repo: Path) -> None:
    root = tmp_path / "repo"
    top = root / "deploy"
    _write(top / "kustomization.yaml",
           f"resources:\n- git::file://{outside_git_repo}?ref=main\n")
    control = _plain_kustomize(top)
    if CANARY not in control.stdout:
        pytest.skip(f"control: this kustomize does not clone file:// ({control.stderr[-200:]})")
    assert CANARY not in _sandboxed(root, top)
    # and through the whole renderer: the filter refuses it first, as a finding
    rendered = render_kustomization(Root.of(root), "deploy")
    assert not rendered.objects
    assert any("remote resource" in p.message for p in rendered.problems)


@pytest.mark.parametrize("entry", [
    "git::file:///nonexistent/repo", "github.com:org/repo", "github.com/org/repo?ref=v1",
    "git@github.com:org/repo", "user@host.example:org/repo", "ssh://git@host.example/org/repo",
    "https://host.example/org/repo//base?ref=main", "gh:org/repo", "file:///etc",
    "http://127.0.0.1:1/x.yaml", "//host.example/x",
])
def test_every_remote_syntax_is_a_finding(tmp_path: Path, entry: str) -> None:
    _write(tmp_path / "k" / "kustomization.yaml", f"resources:\n- {entry!r}\n")
    rendered = render_kustomization(Root.of(tmp_path), "k")
    assert not rendered.objects
    assert [p.message for p in rendered.problems if "remote resource" in p.message]


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        body = _configmap(CANARY).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def listener():
    handler = type("Handler", (_Counter,), {"hits": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], handler.hits
    server.shutdown()
    server.server_close()


def test_loopback_listener_sees_no_request(tmp_path: Path, listener) -> None:
    port, hits = listener
    root = tmp_path / "repo"
    top = root / "deploy"
    url = f"http://127.0.0.1:{port}"
    _write(top / "kustomization.yaml", f"""\
        resources:
        - {url}/resource.yaml
        generators:
        - {url}/generator.yaml
        transformers:
        - {url}/transformer.yaml
        validators:
        - {url}/validator.yaml
        """)
    control = _plain_kustomize(top)
    if not hits:
        pytest.skip(f"control: this kustomize made no HTTP request ({control.stderr[-200:]})")
    hits.clear()
    out = _sandboxed(root, top)
    assert hits == []
    assert CANARY not in out


def test_no_git_or_helm_is_executed(tmp_path: Path, outside_git_repo: Path) -> None:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace not installed")
    root = tmp_path / "repo"
    top = root / "deploy"
    _write(top / "kustomization.yaml", f"""\
        resources:
        - git::file://{outside_git_repo}
        - github.com:org/repo
        - user@host.invalid:org/repo
        helmCharts:
        - name: anything
          repo: https://charts.invalid
        """)
    script = textwrap.dedent(f"""\
        from pathlib import Path
        from advisor.read.fs import Root
        from advisor.read.render.kustomize import build_sandboxed, find_kustomize
        top = Path({str(top.resolve())!r})
        built = build_sandboxed(Root.of({str(root)!r}), top, [top], find_kustomize())
        print((built.text or "") + built.error)
        """)
    log = tmp_path / "execve.log"
    proc = subprocess.run([strace, "-f", "-qq", "-e", "trace=execve", "-o", str(log),
                           sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    if "Operation not permitted" in proc.stderr and not log.exists():
        pytest.skip("strace cannot trace here (ptrace not permitted)")
    assert CANARY not in proc.stdout
    programs = {Path(line.split('execve("', 1)[1].split('"', 1)[0]).name
                for line in log.read_text().splitlines() if 'execve("' in line}
    assert programs, "strace recorded nothing"
    assert not programs & {"git", "helm", "ssh", "git-remote-https", "curl", "docker"}, programs
    assert programs <= {Path(sys.executable).name, "kubectl", "kustomize", "unshare", "true"}, \
        programs


def test_symlinks_out_of_the_repository_are_not_copied(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _write(outside / "cm.yaml", _configmap(CANARY))
    _write(outside / "dir" / "cm.yaml", _configmap(CANARY))
    root = tmp_path / "repo"
    top = root / "deploy"
    _write(top / "kustomization.yaml", "resources:\n- own.yaml\n")
    _write(top / "own.yaml", _configmap("own"))
    (top / "leak.yaml").symlink_to(outside / "cm.yaml")
    (top / "linked").symlink_to(outside / "dir")
    out = _sandboxed(root, top)
    assert "name: own" in out
    assert CANARY not in out
    assert "leak.yaml: symlink leaves the repository" in out
    assert "linked/: symlink leaves the repository" in out
    # a kustomization that names them: refused by the scan, and the copy has no file;
    # its own file is read as written (audit 10a D2), never what the links point at
    _write(top / "kustomization.yaml", "resources:\n- own.yaml\n- leak.yaml\n- linked\n")
    rendered = render_kustomization(Root.of(root), "deploy")
    assert [o.name for o in rendered.objects] == ["own"]
    assert any("outside the scanned root" in p.message for p in rendered.problems)
    assert CANARY not in _sandboxed(root, top)


def test_symlinked_kustomization_file_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _write(outside / "kustomization.yaml", "resources:\n- cm.yaml\n")
    _write(outside / "cm.yaml", _configmap(CANARY))
    root = tmp_path / "repo"
    (root / "deploy").mkdir(parents=True)
    (root / "deploy" / "kustomization.yaml").symlink_to(outside / "kustomization.yaml")
    rendered = render_kustomization(Root.of(root), "deploy")
    assert not rendered.objects
    assert any("symlink; not followed" in p.message for p in rendered.problems)


KUBECTL_HELP = """\
Options:
    --enable-alpha-plugins=false:
\tenable kustomize plugins

    --enable-helm=false:
\tEnable use of the Helm chart inflator generator.

    --load-restrictor='LoadRestrictionsRootOnly':
\tif set to 'LoadRestrictionsNone', local kustomizations may load files from outside.

    --network=false:
\tenable network access for functions that declare it
"""

KUSTOMIZE_HELP = """\
Flags:
      --enable-alpha-plugins            enable kustomize plugins
      --enable-exec                     enable support for exec functions
      --enable-helm                     Enable use of the Helm chart inflator generator.
      --load-restrictor LoadRestrictor  if set to 'LoadRestrictionsNone', ... (default LoadRestrictionsRootOnly)
      --network                         enable network access for functions that declare it
"""  # noqa: E501


def test_flag_defaults_are_checked() -> None:
    assert sandbox.unsafe_defaults(KUBECTL_HELP) == []
    assert sandbox.unsafe_defaults(KUSTOMIZE_HELP) == []
    patched = KUBECTL_HELP.replace("--enable-helm=false", "--enable-helm=true")
    assert sandbox.unsafe_defaults(patched) == ["--enable-helm=true"]
    patched = KUSTOMIZE_HELP.replace("(default LoadRestrictionsRootOnly)",
                                     "(default LoadRestrictionsNone)")
    assert sandbox.unsafe_defaults(patched) == ["--load-restrictor=LoadRestrictionsNone"]


def test_installed_kustomize_has_safe_defaults() -> None:
    command = find_kustomize()
    assert command is not None
    text = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=30,
                          check=False).stdout
    assert "enable-helm" in text
    assert sandbox.unsafe_defaults(text) == []


def test_run_bounded_kills_on_time_and_output(tmp_path: Path) -> None:
    out, _, error = sandbox.run_bounded(["/bin/sleep", "30"], env={}, cwd=tmp_path,
                                        timeout=0.5)
    assert out is None and "time limit" in error
    out, _, error = sandbox.run_bounded(["/usr/bin/yes"], env={}, cwd=tmp_path,
                                        max_output=1024 * 1024)
    assert out is None and "output limit" in error


def test_symlinked_gitignore_config_and_directories_are_not_followed(tmp_path: Path) -> None:
    from advisor.engine.check import scan

    outside = tmp_path / "outside"
    _write(outside / ".gitignore", "*.yaml\n")
    _write(outside / ".pool-advisor.toml", 'select = ["PA999"]\n')
    _write(outside / "dir" / "db.yaml", _configmap(CANARY))
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    _write(root / "app.yaml", _configmap("own"))
    (root / ".gitignore").symlink_to(outside / ".gitignore")
    (root / ".pool-advisor.toml").symlink_to(outside / ".pool-advisor.toml")
    (root / "linked").symlink_to(outside / "dir")
    scanned = scan([root])
    messages = [p.message for p in scanned.topology.problems] + scanned.topology.notices
    text = "\n".join(messages)
    assert ".gitignore is a symlink; not followed" in text
    assert ".pool-advisor.toml is a symlink; not followed" in text
    assert "directory symlink points outside the scanned root; not followed" in text
    assert scanned.settings.select == []  # the linked configuration was not read


def test_run_bounded_stops_a_cpu_hog(tmp_path: Path) -> None:
    out, _, error = sandbox.run_bounded([sys.executable, "-c", "while True: pass"], env={},
                                        cwd=tmp_path, timeout=30, cpu_seconds=1)
    assert out is None and "CPU limit" in error


def test_folders_too_big_to_copy_fall_back_to_the_named_files(tmp_path: Path,
                                                              monkeypatch) -> None:
    monkeypatch.setattr(sandbox, "MAX_COPY_BYTES", 4096)
    root = tmp_path / "repo"
    _write(root / "kustomization.yaml", "resources:\n  - k8s/cm.yaml\n")
    _write(root / "k8s" / "cm.yaml", _configmap("own"))
    (root / "docs").mkdir()
    (root / "docs" / "big.bin").write_bytes(b"x" * 10_000)
    rendered = render_kustomization(Root.of(root), ".")
    assert [o.name for o in rendered.objects] == ["own"], rendered.problems
    assert any("only the files its entries name were copied" in n for n in rendered.notices)


def test_a_failure_message_has_no_klog_header(tmp_path: Path) -> None:
    """kustomize (and kubectl) print errors through klog, whose header holds the time to
    the microsecond: kept in a PA901 message, the same failure got a new fingerprint on
    every run."""
    line = ('E1204 16:59:47.427432   12502 run.go:72] "command failed" err="no matches for '
            'Id Cluster.v1.postgresql.cnpg.io/x"')
    assert sandbox.without_klog_header(line) == \
        '"command failed" err="no matches for Id Cluster.v1.postgresql.cnpg.io/x"'
    assert sandbox.without_klog_header("Error: accumulating resources") == \
        "Error: accumulating resources"
    script = tmp_path / "fails.sh"
    script.write_text(f"#!/bin/sh\necho '{line}' >&2\nexit 1\n")
    script.chmod(0o755)
    out, _stderr, error = sandbox.run_bounded([str(script)], env=dict(os.environ), cwd=tmp_path)
    assert out is None and error.startswith('"command failed"')
