"""Run a real PostgreSQL 15 for tests: a throwaway server, or `postgres -C` as an oracle.

We usually run as root and postgres refuses root, so server processes run as `nobody`
(via runuser) in a temp dir chowned to it. One initdb'd template per test session is
copied for each server, which keeps a server start at well under a second.

    with running_postgres("max_connections = 10") as pg:
        pg.psql("select 1")
        psycopg.connect(pg.dsn())

    postgres_C_files({"postgresql.conf": "work_mem = '12 MB'"}, ["work_mem"]).values
"""

from __future__ import annotations

import atexit
import functools
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")
RUN_AS = "nobody"  # only used when we are root
# Other majors, installed from registry packages by scripts/get_pg_binaries.py
OTHER_MAJORS = Path(__file__).resolve().parents[1] / ".tools" / "pg"

# Settings every test server gets before the test's own conf (which may override them).
_BASE_CONF = """
# --- realpg.py test defaults ---
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
"""


def have_postgres(bin_dir: Path = PG_BIN) -> bool:
    return all((bin_dir / p).is_file() for p in ("initdb", "pg_ctl", "postgres")) \
        and _psql(bin_dir).is_file()


def pg_bin_for(major: int) -> Path | None:
    """Where a real server of `major` is installed here: Debian's 15, or a tree
    scripts/get_pg_binaries.py installed; None when there is none."""
    bin_dir = PG_BIN if major == 15 else OTHER_MAJORS / str(major) / "bin"
    if not have_postgres(bin_dir):
        return None
    if os.geteuid() == 0 and not _others_can_reach(bin_dir):
        bin_dir = _reachable_copy(bin_dir.parent) / "bin"
    return bin_dir


def _others_can_reach(path: Path) -> bool:
    """Whether RUN_AS can traverse to `path`: a checkout in a 0700 folder (mktemp -d)
    holds .tools/pg where `nobody` cannot execute initdb."""
    import stat

    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))


def _reachable_copy(tree: Path) -> Path:
    """A copy of an installed PostgreSQL tree under the temp folder that RUN_AS can
    execute, made once per source tree and reused."""
    import hashlib

    key = hashlib.sha256(str(tree).encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"pool-advisor-pg-{key}"
    if not (target / "bin" / "postgres").is_file():
        staging = Path(tempfile.mkdtemp(prefix="pool-advisor-pg-"))
        shutil.copytree(tree, staging / "tree", symlinks=True)
        shutil.rmtree(target, ignore_errors=True)
        (staging / "tree").rename(target)
        staging.rmdir()
    target.chmod(0o755)
    return target


def _psql(bin_dir: Path) -> Path:
    """The tree's psql, else Debian's (some packaged trees ship the server only; psql 15
    talks to servers back to 9.2)."""
    own = bin_dir / "psql"
    return own if own.is_file() else PG_BIN / "psql"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", RUN_AS, "--", *cmd]
    return cmd


def _chown_tree(path: Path) -> None:
    if os.geteuid() != 0:
        return
    pw = pwd.getpwnam(RUN_AS)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), pw.pw_uid, pw.pw_gid)


def _mkdtemp(prefix: str) -> Path:
    # Short paths: the unix socket path must stay under 108 bytes.
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    d.chmod(0o755)
    _chown_tree(d)
    return d


def _run(cmd: list[str], *, cwd: Path | None = None, timeout: float = 60) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")


@functools.cache
def template_datadir(bin_dir: Path = PG_BIN) -> Path:
    """An initdb'd data directory (of the PostgreSQL in `bin_dir`), made once per
    process and removed at exit. Copy it."""
    if not have_postgres(bin_dir):
        raise RuntimeError(f"PostgreSQL binaries not found in {bin_dir}")
    top = _mkdtemp("pa-pgtmpl-")
    atexit.register(shutil.rmtree, top, True)
    data = top / "data"
    _run(
        _as_server_user(
            [
                str(bin_dir / "initdb"),
                "-D", str(data),
                "-U", "postgres",
                "-A", "trust",
                "-E", "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        ),
        cwd=top,
    )
    return data


def _write_files(base: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = base / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


@dataclass
class PgServer:
    host: str
    port: int
    datadir: Path
    socket_dir: Path
    log_file: Path
    bin_dir: Path = PG_BIN

    def dsn(self, user: str = "postgres", dbname: str = "postgres") -> str:
        return f"host={self.host} port={self.port} user={user} dbname={dbname} sslmode=disable"

    def psql(self, sql: str, user: str = "postgres", dbname: str = "postgres") -> str:
        """Run `sql` with psql over the unix socket (always trusted); stdout, unaligned."""
        cmd = [
            str(_psql(self.bin_dir)),
            "-X", "-q", "-A", "-t",
            "-v", "ON_ERROR_STOP=1",
            "-h", str(self.socket_dir),
            "-p", str(self.port),
            "-U", user,
            "-d", dbname,
            "-c", sql,
        ]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"psql failed ({r.returncode}) for {sql!r}:\n{r.stderr}")
        return r.stdout

    def log(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")
        except OSError:
            return ""


def _hba(auth: str) -> str:
    # The unix socket stays trusted so tests can always administer the server.
    return (
        "local all all trust\n"
        f"host all all 127.0.0.1/32 {auth}\n"
        "local replication all trust\n"
        f"host replication all 127.0.0.1/32 {auth}\n"
    )


@contextmanager
def running_postgres(
    conf: str = "",
    *,
    files: dict[str, str] | None = None,
    auth: str = "trust",
    bin_dir: Path = PG_BIN,
) -> Iterator[PgServer]:
    """A fresh PostgreSQL (15, or the one in `bin_dir`) on 127.0.0.1 and a free port;
    stopped and removed after.

    `conf` is appended to the template's postgresql.conf (so it overrides it); `files`
    are written into the data dir (relative names, subfolders allowed) after that, so
    they may replace postgresql.conf or pg_hba.conf. `auth` is the pg_hba method for
    TCP connections from 127.0.0.1.
    """
    top = _mkdtemp("pa-pg-")
    try:
        data = top / "data"
        shutil.copytree(template_datadir(bin_dir), data, symlinks=True)
        conf_path = data / "postgresql.conf"
        with conf_path.open("a", encoding="utf-8") as f:
            f.write(_BASE_CONF)
            if conf:
                f.write("# --- test conf ---\n" + conf.rstrip("\n") + "\n")
        (data / "pg_hba.conf").write_text(_hba(auth), encoding="utf-8")
        _write_files(data, files or {})
        data.chmod(0o700)
        _chown_tree(top)
        # Who started it, so a server left behind by a killed run can be traced.
        (top / "owner").write_text(f"pid {os.getpid()}: {' '.join(sys.argv)}\n")
        server = _start(top, data, bin_dir)

        def stop() -> None:
            subprocess.run(
                _as_server_user(
                    [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
                ),
                capture_output=True,
                cwd=top,
                timeout=60,
            )
            shutil.rmtree(top, ignore_errors=True)

        # Also at interpreter exit, for a generator fixture that is never finalised.
        atexit.register(stop)
        try:
            yield server
        finally:
            atexit.unregister(stop)
            stop()
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _start(top: Path, data: Path, bin_dir: Path = PG_BIN, attempts: int = 3) -> PgServer:
    log_file = top / "server.log"
    last = ""
    for _ in range(attempts):
        port = free_port()
        opts = f"-p {port} -c listen_addresses=127.0.0.1 -k {top}"
        r = subprocess.run(
            _as_server_user(
                [
                    str(bin_dir / "pg_ctl"),
                    "-D", str(data),
                    "-l", str(log_file),
                    "-o", opts,
                    "-w", "-t", "30",
                    "start",
                ]
            ),
            capture_output=True,
            text=True,
            cwd=top,
            timeout=60,
        )
        if r.returncode == 0:
            return PgServer("127.0.0.1", port, data, top, log_file, bin_dir)
        last = r.stdout + r.stderr
        with suppress(OSError):
            last += log_file.read_text(errors="replace")
        if "could not bind" not in last and "already in use" not in last:
            break
        time.sleep(0.1)
    raise RuntimeError(f"PostgreSQL did not start:\n{last}")


# --- postgres -C: the configuration oracle ------------------------------------------


_LOG_LINE = re.compile(r"^(?:.*? )?(LOG|FATAL|ERROR|WARNING|HINT|DETAIL|PANIC):  (.*)$")


def log_messages(stderr: str) -> list[tuple[str, str]]:
    """(level, message) pairs of postgres stderr, without the log_line_prefix."""
    out = []
    for line in stderr.split("\n"):  # not splitlines(): \v, \f are message text
        m = _LOG_LINE.match(line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


@dataclass
class PgCResult:
    """What `postgres -C name -D dir` printed for each name; stderr when it refused."""

    values: dict[str, str] = field(default_factory=dict)
    ok: bool = True
    stderr: str = ""

    @property
    def messages(self) -> list[tuple[str, str]]:
        return log_messages(self.stderr)


class PostgresConfigError(RuntimeError):
    def __init__(self, stderr: str) -> None:
        super().__init__(f"postgres refused the configuration:\n{stderr}")
        self.stderr = stderr


def _show_one(
    datadir: Path, name: str, args: tuple[str, ...] = (), bin_dir: Path = PG_BIN
) -> subprocess.CompletedProcess[str]:
    cmd = _as_server_user([str(bin_dir / "postgres"), "-C", name, "-D", str(datadir), *args])
    r = subprocess.run(cmd, capture_output=True, cwd=datadir, timeout=60)
    # Decode by hand: text mode would turn a \r inside a logged token into a newline.
    return subprocess.CompletedProcess(
        cmd,
        r.returncode,
        r.stdout.decode("utf-8", "replace"),
        r.stderr.decode("utf-8", "replace"),
    )


def postgres_C_result(
    datadir: Path, names: list[str], args: list[str] | tuple[str, ...] = (),
    bin_dir: Path = PG_BIN,
) -> PgCResult:
    """Run `postgres -C name -D datadir [args]` per name (in parallel; `args` are
    extra command-line options such as "-c", "work_mem=8MB"). Never raises on a
    refused config: `ok` is False and `stderr` holds the first failure's output."""
    if not names:
        names = ["max_connections"]  # still learn whether postgres accepts the config
    extra = tuple(args)
    with ThreadPoolExecutor(max_workers=8) as pool:
        runs = list(pool.map(lambda n: _show_one(datadir, n, extra, bin_dir), names))
    result = PgCResult()
    for name, r in zip(names, runs, strict=True):
        if r.returncode != 0:
            return PgCResult(values={}, ok=False, stderr=r.stderr)
        result.values[name] = r.stdout.rstrip("\n")
    return result


def postgres_C(datadir: str | Path, names: list[str]) -> dict[str, str]:
    """Values `postgres -C` prints for `names`; PostgresConfigError when it refuses."""
    res = postgres_C_result(Path(datadir), names)
    if not res.ok:
        raise PostgresConfigError(res.stderr)
    return res.values


@contextmanager
def config_dir(files: dict[str, str | bytes]) -> Iterator[Path]:
    """A temp "data dir" holding only `files`: enough for `postgres -C` (it reads
    postgresql.conf and postgresql.auto.conf from -D and needs nothing else)."""
    top = _mkdtemp("pa-pgc-")
    try:
        data = top / "data"
        data.mkdir()
        for name, content in files.items():
            target = data / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        data.chmod(0o700)
        _chown_tree(top)
        yield data
    finally:
        shutil.rmtree(top, ignore_errors=True)


def postgres_C_files(files: dict[str, str | bytes], names: list[str],
                     bin_dir: Path = PG_BIN) -> PgCResult:
    """Write `files` into a bare dir and ask `postgres -C` for each name."""
    with config_dir(files) as data:
        return postgres_C_result(data, names, bin_dir=bin_dir)
