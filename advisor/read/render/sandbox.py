"""Running kustomize so that it cannot fetch or execute anything.

A kustomization can name remote bases in many syntaxes (`git::file://`, `github.com:org/repo`,
`user@host:org/repo`, `https://...?ref=`), HTTP generator/transformer configs, Helm charts and
KRM functions (exec or container). The URL filter in advisor.read.render.kustomize_tree refuses the
ones it recognises; this module is the boundary that holds when the filter misses one:

- a working copy: the kustomization directories are copied into a temporary folder, regular
  files only; a symlink is copied as the file it names only when that file is inside the
  repository (a directory symlink is walked likewise), anything leaving it is left out and
  reported. kustomize never sees the repository itself, so nothing outside it is readable
  through a relative path either (`--load-restrictor=LoadRestrictionsRootOnly` as well;
  a build that kustomize refuses for a file of another folder of the working copy is run
  again with LoadRestrictionsNone, as Flux's kustomize-controller builds: the scan admits
  no entry outside the repository, so the copy holds nothing else to read);
- the environment is built from nothing: PATH holds one folder with the kustomize binary
  only (kustomize finds `git` and `helm` through PATH, so neither can be started), HOME and
  the XDG folders are in the temporary folder, no GIT_* variable but ones that turn git's
  protocols off, proxies pointing at a closed loopback port, no kubeconfig;
- flags: the binary's own `--help` is read first, and it is not run when its defaults would
  enable plugins, exec or container functions, Helm, the network or loading outside the
  kustomization root; none of those flags is passed;
- when the kernel allows it (`unshare --net --map-root-user`), kustomize runs in a network
  namespace of its own, with no interface up: Go's HTTP client does not use a proxy for
  loopback addresses, so this is what keeps a `http://127.0.0.1:port/x.yaml` resource from
  reaching a local service;
- a time limit and an output-size limit, enforced while it runs (the process is killed).
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

from msgspec import Struct, field

# Wall-clock and CPU limits: a 12 MB tree of CRDs (argo-workflows' install manifests)
# takes kustomize about 9 s of CPU, and several times that in wall time on a busy CI
# machine; the CPU limit is what bounds the work, the wall limit what bounds a hang.
TIMEOUT_SECONDS = 120.0
CPU_SECONDS = 60
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
MAX_COPY_BYTES = 256 * 1024 * 1024
MAX_COPY_FILES = 50_000
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                       ".tox", ".terraform"})
# The closed port proxies point at (discard, nothing listens on loopback here).
DEAD_PROXY = "http://127.0.0.1:9"

# Flags whose default must be off for kustomize to run here, as `--help` prints them.
_MUST_BE_OFF = ("enable-alpha-plugins", "enable-exec", "enable-helm", "network")
_MUST_BE = {"load-restrictor": "LoadRestrictionsRootOnly"}


class Copied(Struct):
    """What `copy_tree` left out, for notices."""

    left_out: list[str] = field(default_factory=list)  # "path: reason"
    files: int = 0
    size: int = 0
    full: bool = False  # a limit was hit


class RunResult(Struct):
    stdout: str | None
    error: str = ""
    isolated_network: bool = False


def copy_tree(repo: Path, sources: list[Path], dest: Path) -> Copied:
    """Copy the folders `sources` (inside `repo`) to the same relative places under `dest`,
    following no symlink out of `repo` and copying nothing but regular files."""
    out = Copied()
    seen: set[Path] = set()
    for source in sorted(set(sources)):
        _copy_dir(repo, source, dest / source.relative_to(repo), out, seen, 0)
    return out


def copy_file(repo: Path, source: Path, dest: Path, out: Copied) -> None:
    """One file (possibly named through a symlink) to `dest`, when it is inside `repo`."""
    real = _inside(repo, source)
    if real is None:
        out.left_out.append(f"{_rel(repo, source)}: symlink leaves the repository")
        return
    try:
        st = real.stat()
    except OSError as exc:
        out.left_out.append(f"{_rel(repo, source)}: {exc.strerror or exc}")
        return
    if not stat.S_ISREG(st.st_mode):
        out.left_out.append(f"{_rel(repo, source)}: not a regular file")
        return
    if out.size + st.st_size > MAX_COPY_BYTES or out.files >= MAX_COPY_FILES:
        out.full = True
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    with real.open("rb") as src, dest.open("wb") as dst:
        shutil.copyfileobj(src, dst, length=1024 * 1024)
    out.files += 1
    out.size += st.st_size


def _copy_dir(repo: Path, source: Path, dest: Path, out: Copied, seen: set[Path],
              depth: int) -> None:
    real = _inside(repo, source)
    if real is None:
        out.left_out.append(f"{_rel(repo, source)}/: symlink leaves the repository")
        return
    if real in seen or depth > 40 or out.full:
        return
    seen.add(real)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        entries = sorted(os.scandir(source), key=lambda e: e.name)
    except OSError as exc:
        out.left_out.append(f"{_rel(repo, source)}/: {exc.strerror or exc}")
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.name in SKIP_DIRS:
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=True)
        except OSError:
            is_dir = False
        if is_dir:
            _copy_dir(repo, path, dest / entry.name, out, seen, depth + 1)
        else:
            copy_file(repo, path, dest / entry.name, out)


def _inside(repo: Path, path: Path) -> Path | None:
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    return real if real == repo or repo in real.parents else None


def _rel(repo: Path, path: Path) -> str:
    try:
        return path.relative_to(repo).as_posix()
    except ValueError:
        return path.as_posix()


# --- the binary and its flags ---------------------------------------------------------


def flag_defaults(help_text: str) -> dict[str, str]:
    """`--name=default:` (kubectl's help) and `--name   ... (default X)` (cobra's)."""
    found: dict[str, str] = {}
    for match in re.finditer(r"--([a-z][a-z0-9-]*)=('[^']*'|\S*?):?\s*$", help_text, re.M):
        found[match.group(1)] = match.group(2).strip("'")
    for line in help_text.splitlines():
        match = re.match(r"\s*(?:-\w, )?--([a-z][a-z0-9-]*)\b(.*)$", line)
        if match and match.group(1) not in found:
            default = re.search(r"\(default \"?([^\")]*)\"?\)", match.group(2))
            found[match.group(1)] = default.group(1) if default else "false"
    return found


def unsafe_defaults(help_text: str) -> list[str]:
    """Flags whose default in this kustomize would fetch, execute or read outside."""
    defaults = flag_defaults(help_text)
    bad = [f"--{name}={defaults[name]}" for name in _MUST_BE_OFF
           if name in defaults and defaults[name].lower() not in ("false", "")]
    bad += [f"--{name}={defaults[name]}" for name, want in _MUST_BE.items()
            if name in defaults and defaults[name] != want]
    return bad


def help_command(command: list[str]) -> list[str]:
    return [*command, "--help"]


def network_namespace_prefix() -> list[str]:
    """`unshare --net --map-root-user --` when this kernel lets us make a network
    namespace, else nothing (the environment and the URL filter still hold)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    prefix = [unshare, "--net", "--map-root-user", "--"]
    try:
        probe = subprocess.run([*prefix, "/bin/true"], capture_output=True, timeout=5,
                               env={"PATH": ""}, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return prefix if probe.returncode == 0 else []


def sealed_env(scratch: Path, binary: Path) -> dict[str, str]:
    """An environment with one program on PATH, a scratch HOME and no way out."""
    bindir = scratch / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    link = bindir / binary.name
    if not link.exists():
        link.symlink_to(binary)
    home = scratch / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": str(bindir), "HOME": str(home), "TMPDIR": str(scratch),
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local"), "KUBECONFIG": os.devnull, "LANG": "C.UTF-8",
        # git is not on PATH; if it were, these turn every protocol and config off.
        "GIT_ALLOW_PROTOCOL": "", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "KUSTOMIZE_PLUGIN_HOME": str(scratch / "no-plugins"),
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy"):
        env[name] = DEAD_PROXY
    env["NO_PROXY"] = env["no_proxy"] = ""
    return env


def run_bounded(argv: list[str], *, env: dict[str, str], cwd: Path,
                timeout: float = TIMEOUT_SECONDS, max_output: int = MAX_OUTPUT_BYTES,
                cpu_seconds: int = CPU_SECONDS) -> tuple[bytes | None, str, str]:
    """(stdout, stderr text, error): stdout None with an error when the process failed,
    ran longer than `timeout`, used more than `cpu_seconds` of CPU (the kernel stops it:
    RLIMIT_CPU) or wrote more than `max_output` bytes (killed then)."""

    import resource
    import threading

    limits = (cpu_seconds, cpu_seconds + 5)
    # The CPU limit is set on the child from here (prlimit, Linux) once it runs: a
    # preexec_fn is not safe once other threads run (builds run side by side, see
    # advisor.engine.repository), and without one the child is spawned without a fork of
    # this process. Elsewhere, a preexec_fn while this is the only thread; else the time
    # limit alone bounds it.
    set_later = hasattr(resource, "prlimit")
    preexec = None
    if not set_later and threading.active_count() == 1:
        def preexec() -> None:
            resource.setrlimit(resource.RLIMIT_CPU, limits)

    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, cwd=str(cwd),
                                start_new_session=True, preexec_fn=preexec)
    except OSError as exc:
        return None, "", str(exc)
    if set_later:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # ended; or the time
            # limit alone bounds it
            resource.prlimit(proc.pid, resource.RLIMIT_CPU, limits)
    chunks: dict[int, list[bytes]] = {1: [], 2: []}
    sizes = {1: 0, 2: 0}
    error = ""
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None and proc.stderr is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, 1)
        sel.register(proc.stderr, selectors.EVENT_READ, 2)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                error = f"stopped after {timeout:g} s (time limit)"
                break
            for key, _ in sel.select(timeout=left):
                data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                sizes[key.data] += len(data)
                if sizes[key.data] > max_output:
                    error = f"stopped after {max_output // (1024 * 1024)} MiB of output " \
                            "(output limit)"
                    break
                chunks[key.data].append(data)
            if error:
                break
    if error:
        _kill(proc)
    rc = proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    stderr = b"".join(chunks[2]).decode("utf-8", "replace")
    if error:
        return None, stderr, error
    if rc in (-signal.SIGXCPU, -signal.SIGKILL):  # RLIMIT_CPU's soft, then hard limit
        return None, stderr, f"stopped after {cpu_seconds} s of CPU (CPU limit)"
    if rc != 0:
        # the last line that says something (kubectl ends a multi-line error with ` >`)
        lines = [x for x in stderr.strip().splitlines() if len(x.strip(" >|")) > 2]
        return None, stderr, clip(without_klog_header(lines[-1]) if lines
                                  else f"exit status {rc}")
    return b"".join(chunks[1]), stderr, ""


# klog's line header (kubectl and kustomize log through it): severity, date, time to the
# microsecond, thread id, file:line. In an error message it would make the same failure
# a new finding on each run (its fingerprint holds the message).
_KLOG_HEADER = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\] ")


def without_klog_header(line: str) -> str:
    """`line` without a leading klog header (E1204 16:59:47.427432 12502 run.go:72] ...)."""
    return _KLOG_HEADER.sub("", line, count=1)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        proc.kill()


def clip(error: str, limit: int = 500) -> str:
    """A long error cut in the middle: kustomize nests its cause in one line per level
    (`accumulating resources from 'a': ... must resolve to a file': couldn't make target
    for path ...: <the cause>`), so the start says where and the end says why."""
    if len(error) <= limit:
        return error
    head = limit * 2 // 5
    return f"{error[:head]} ... {error[-(limit - head - 5):]}"

