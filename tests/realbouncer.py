"""Start a real PgBouncer for oracle tests and talk to its admin console.

    with running_pgbouncer(ini_text, files={"extra.ini": "..."}, users=["app"]) as pgb:
        pgb.admin("SHOW CONFIG")        # -> list of tuples of str
        pgb.admin_dicts("SHOW USERS")   # -> list of {column: value}
        pgb.port, pgb.host, pgb.dir, pgb.log()

The ini text is written to `<tmp>/pgbouncer.ini` with the harness's own settings
(listen address/port, unix_socket_dir, auth, admin_users, logfile, pidfile) inserted at
the end of its last [pgbouncer] section (see compose_ini), so they win over the text's;
`.ini_text` is the exact text loaded. PgBouncer runs in
the foreground with the tmp dir as working directory (so relative `%include` paths
resolve there), as `nobody` when we are root (PgBouncer refuses to run as root).
When PgBouncer exits instead of listening, `BouncerFailed` carries its log and exit code.
`try_pgbouncer` runs the same start and returns the outcome instead of raising.

Stable API (other helpers' tests use it): running_pgbouncer, try_pgbouncer,
have_pgbouncer, BouncerFailed, RunningBouncer, BouncerOutcome, free_port, ADMIN_USER.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PGBOUNCER = os.environ.get("PGBOUNCER_BIN") or shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
PSQL = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"
ADMIN_USER = "pgb_admin"
HARNESS_KEYS = (
    "listen_addr",
    "listen_port",
    "unix_socket_dir",
    "auth_type",
    "auth_file",
    "admin_users",
    "logfile",
    "pidfile",
)
_SEP = "\x1f"


def have_pgbouncer() -> bool:
    return Path(PGBOUNCER).is_file() and os.access(PGBOUNCER, os.X_OK) and Path(PSQL).is_file()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BouncerFailed(Exception):
    def __init__(self, returncode: int | None, log: str) -> None:
        super().__init__(f"pgbouncer did not start (exit {returncode}):\n{log}")
        self.returncode = returncode
        self.log = log


@dataclass
class BouncerOutcome:
    started: bool
    returncode: int | None
    log: str
    ini_text: str = ""  # the exact text PgBouncer loaded (with the harness settings)


@dataclass
class RunningBouncer:
    port: int
    dir: Path
    host: str = "127.0.0.1"
    ini_text: str = ""
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def log(self) -> str:
        return _read_log(self.dir)

    def admin_dicts(self, sql: str) -> list[dict[str, str]]:
        out = self._psql(sql, header=True)
        lines = [ln for ln in out.split("\n") if ln != ""]
        if not lines:
            return []
        header = lines[0].split(_SEP)
        return [dict(zip(header, ln.split(_SEP), strict=True)) for ln in lines[1:]]

    def admin(self, sql: str) -> list[tuple[str, ...]]:
        out = self._psql(sql, header=False)
        return [tuple(ln.split(_SEP)) for ln in out.split("\n") if ln != ""]

    def dsn(self, dbname: str, user: str) -> str:
        return f"host={self.host} port={self.port} dbname={dbname} user={user}"

    def _psql(self, sql: str, *, header: bool) -> str:
        args = [PSQL, "-X", "-A", "-F", _SEP, "-P", "footer=off", "-v", "ON_ERROR_STOP=1"]
        if not header:
            args.append("-t")
        args += ["-h", self.host, "-p", str(self.port), "-U", ADMIN_USER, "-c", sql, "pgbouncer"]
        env = {**os.environ, "PGCONNECT_TIMEOUT": "5"}
        env.pop("PGPASSWORD", None)
        done = subprocess.run(args, capture_output=True, text=True, timeout=20, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"psql {sql!r} failed: {done.stderr.strip()}")
        return done.stdout


def _read_log(d: Path) -> str:
    parts = []
    for name in ("stderr.log", "pgbouncer.log"):
        p = d / name
        if p.exists():
            parts.append(p.read_text(errors="replace"))
    # PgBouncer writes each line to both logfile and stderr in the foreground.
    return parts[0] if parts and parts[0].strip() else "".join(parts)


def _harness_lines(d: Path, port: int, extra: dict[str, str] | None) -> list[str]:
    lines = [
        "listen_addr = 127.0.0.1",
        f"listen_port = {port}",
        f"unix_socket_dir = {d}",
        "auth_type = trust",
        f"auth_file = {d}/harness_users.txt",
        f"admin_users = {ADMIN_USER}",
        f"logfile = {d}/pgbouncer.log",
        f"pidfile = {d}/pgbouncer.pid",
    ]
    return lines + [f"{k} = {v}" for k, v in (extra or {}).items()]


def compose_ini(ini_text: str, harness: list[str]) -> str:
    """Insert the harness settings at the end of the main text's last [pgbouncer] section.

    Appending a second `[pgbouncer]` header would not do: every [pgbouncer] header resets
    all its settings to their defaults (libusual usual/cfparser.c, fill_defaults, as
    vendored by PgBouncer 1.18), wiping what the text set. Without a [pgbouncer]
    section in the main text, the settings go under a new header at the end.
    """
    lines = ini_text.split("\n")
    last_main = None
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith("[") and "]" in stripped:
            name = stripped[1 : stripped.index("]")]
            if name == "pgbouncer":
                last_main = i
    if last_main is None:
        sep = "" if ini_text.endswith("\n") or not ini_text else "\n"
        return ini_text + sep + "[pgbouncer]\n" + "\n".join(harness) + "\n"
    insert_at = len(lines)
    for j in range(last_main + 1, len(lines)):
        if lines[j].lstrip().startswith("["):
            insert_at = j
            break
    if insert_at == len(lines) and lines and lines[-1] == "":
        insert_at -= 1  # keep the text's final newline at the very end
    return "\n".join([*lines[:insert_at], *harness, *lines[insert_at:]]) + (
        "" if insert_at < len(lines) else "\n"
    )


def _demote() -> dict[str, int]:
    if os.geteuid() != 0:
        return {}
    import pwd

    nobody = pwd.getpwnam("nobody")
    return {"user": nobody.pw_uid, "group": nobody.pw_gid}


def _start(
    d: Path,
    ini_text: str,
    files: dict[str, str | bytes] | None,
    users: Iterable[str],
    extra: dict[str, str] | None,
    timeout: float,
    harness: bool = True,
) -> tuple[subprocess.Popen[bytes] | None, int, BouncerOutcome]:
    port = free_port()
    for name, content in (files or {}).items():
        target = d / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    names = [ADMIN_USER, *users]
    (d / "harness_users.txt").write_text("".join(f'"{u}" ""\n' for u in names))
    loaded = compose_ini(ini_text, _harness_lines(d, port, extra)) if harness else ini_text
    (d / "pgbouncer.ini").write_text(loaded)
    ids = _demote()
    if ids:
        for p in [d, *d.rglob("*")]:
            os.chown(p, ids["user"], ids["group"])
    with open(d / "stderr.log", "wb") as err:
        proc = subprocess.Popen(
            [PGBOUNCER, "pgbouncer.ini"],
            cwd=d,
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            start_new_session=True,
            **ids,  # type: ignore[arg-type]
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rc = proc.poll()
        if rc is not None:
            return None, port, BouncerOutcome(False, rc, _read_log(d), loaded)
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return proc, port, BouncerOutcome(True, None, _read_log(d), loaded)
        time.sleep(0.02)
    _stop(proc)
    log = "timed out waiting for port\n" + _read_log(d)
    return None, port, BouncerOutcome(False, None, log, loaded)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)  # 1.18: SIGTERM = immediate shutdown
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@contextlib.contextmanager
def running_pgbouncer(
    ini_text: str,
    *,
    files: dict[str, str | bytes] | None = None,
    users: Iterable[str] = (),
    extra: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> Iterator[RunningBouncer]:
    """PgBouncer on a free loopback port; `users` are added to the trust auth_file,
    `extra` are [pgbouncer] settings appended after the harness's (they win)."""
    d = Path(tempfile.mkdtemp(prefix="realbouncer-"))
    proc = None
    try:
        proc, port, outcome = _start(d, ini_text, files, users, extra, timeout)
        if proc is None:
            raise BouncerFailed(outcome.returncode, outcome.log)
        yield RunningBouncer(port=port, dir=d, ini_text=outcome.ini_text, process=proc)
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(d, ignore_errors=True)


def try_pgbouncer(
    ini_text: str,
    *,
    files: dict[str, str | bytes] | None = None,
    timeout: float = 10.0,
    harness: bool = True,
) -> BouncerOutcome:
    """Start and stop at once: did PgBouncer accept this config, and what did it log?
    With harness=False the text is loaded exactly as given (it must then bring its own
    listen settings, or fail before listening)."""
    d = Path(tempfile.mkdtemp(prefix="realbouncer-"))
    try:
        proc, _port, outcome = _start(d, ini_text, files, (), None, timeout, harness)
        if proc is not None:
            _stop(proc)
            outcome.log = _read_log(d)
        return outcome
    finally:
        shutil.rmtree(d, ignore_errors=True)
