"""Measure throughput and latency at a series of client counts with pgbench, fit the USL.

Each step runs `pgbench -c N -T seconds -l -P 1` against a DSN the user gives (a server
or a PgBouncer in front of it). Throughput is pgbench's own tps (excluding connection
time); latency percentiles are computed here from pgbench's per-transaction logs, since
pgbench prints only the mean and stddev. The whole sweep is bounded: steps that would
run past `max_total_seconds` are skipped and reported as skipped.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.live.usl import FitError, Sweep, SweepPoint, USLFit, fit_usl

BUILTINS = {
    "tpcb-like": "TPC-B (sort of), read-write",
    "simple-update": "simple update, read-write",
    "select-only": "select only (-S)",
}
STEP_GRACE_SECONDS = 30  # beyond -T: connection setup, log flush; then the step is killed


class SweepError(Exception):
    """The sweep cannot run or a step failed; the message is for the user."""


class SweepPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dsn: str
    clients: list[int]
    step_seconds: int = 10
    max_total_seconds: int = 600
    jobs: int | None = None  # pgbench -j; default min(clients, CPUs here)
    builtin: Literal["tpcb-like", "simple-update", "select-only"] | None = "tpcb-like"
    script: Path | None = None  # pgbench -f, the user's own transaction script
    protocol: Literal["simple", "extended", "prepared"] = "simple"
    sampling_rate: float | None = None  # pgbench --sampling-rate for very fast servers
    init_scale: int | None = None  # run pgbench -i -s N first (drops pgbench_* tables)
    pgbench: str | None = None  # path to the binary; found on PATH or in PostgreSQL's bin
    pooler_admin: str | None = None  # DSN of a PgBouncer admin/stats user (SHOW POOLS)

    @property
    def workload(self) -> str:
        if self.script is not None:
            return f"script {self.script}"
        return f"builtin: {BUILTINS[self.builtin or 'tpcb-like']}"


class StepResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    clients: int
    jobs: int
    seconds: float
    tps: float
    transactions: int
    failed: int = 0
    latency_avg_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    logged: int = 0  # transactions whose latency was logged (sampling may make this fewer)
    # Through PgBouncer: server connections in use (SHOW POOLS sv_active), mean and most
    # over the step's samples; the USL's N then.
    server_active: float | None = None
    server_active_max: int | None = None


class SweepRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    tool_version: str
    pgbench_version: str = ""
    target: str  # the DSN with any password masked
    workload: str
    started_at: str
    step_seconds: int
    max_total_seconds: int
    steps: list[StepResult] = Field(default_factory=list)
    skipped_clients: list[int] = Field(default_factory=list)
    stopped_reason: str | None = None
    fit: dict[str, float | int | None] | None = None
    fit_error: str | None = None
    # What answered at the DSN (advisor.live.sweep_pooler) and what N the fit uses.
    target_kind: str = "unknown"
    target_detail: str = ""
    n_basis: str = "pgbench clients"

    def usl(self) -> USLFit | None:
        if self.fit is None:
            return None
        return USLFit(**{k: self.fit[k] for k in ("lambda", "sigma", "kappa", "r2")})

    @property
    def server_side(self) -> bool:
        return self.n_basis.startswith("server")

    def n_of(self, step: StepResult) -> float:
        """The step's N for the USL: the server-side active connections through a
        pooler (as measured), else pgbench's client count."""
        if self.server_side and step.server_active is not None:
            return step.server_active
        return step.clients

    def sweep(self, source_label: str = "sweep") -> Sweep:
        from advisor.model import Source

        return Sweep(
            points=[
                SweepPoint(
                    n=self.n_of(s), throughput=s.tps, p50_ms=s.p50_ms, p95_ms=s.p95_ms,
                    p99_ms=s.p99_ms,
                )
                for s in self.steps
            ],
            source=Source(path=source_label) if source_label else Source(default="sweep"),
            about=self.workload,
        )


class Progress(BaseModel):
    """What a progress display needs: which step, how far into it, the live tps."""

    step: int  # 0-based
    steps: int
    clients: int
    elapsed: float  # seconds into this step
    step_seconds: int
    tps: float | None = None
    done: bool = False


ProgressCallback = Callable[[Progress], None]


# --- helpers ---------------------------------------------------------------------------


def parse_clients(text: str) -> list[int]:
    """'1,2,4,8' or '1-64' (powers of two from 1 to 64) or a mix: '1-16,24,32'."""
    out: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
        try:
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                if lo < 1 or hi < lo:
                    raise ValueError
                n = lo
                while n <= hi:
                    out.add(n)
                    n *= 2
                out.add(hi)
            else:
                n = int(part)
                if n < 1:
                    raise ValueError
                out.add(n)
        except ValueError:
            raise SweepError(
                f"--clients: {part!r} is not a client count (use e.g. 1,2,4,8 or 1-64)"
            ) from None
    if not out:
        raise SweepError("--clients: give at least one client count")
    return sorted(out)


_PASSWORD_VALUE = re.compile(
    r"(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|'.*|[^\s&]+(?:\s+[^\s=&']+(?=\s|$))*)")


def mask_dsn(dsn: str) -> str:
    """The DSN as it may be printed or saved: any password replaced by ***, malformed
    ones too (an unclosed quote hides the rest, so do words after the password that are
    no `key=value`; `@` inside a URL's password, an upper-case scheme, leading blanks, a
    `password` query parameter)."""
    masked = _PASSWORD_VALUE.sub(r"\1***", dsn)
    # URL userinfo: everything between the user's `:` and the last `@`
    return re.sub(r"(?i)^(\s*[a-z][a-z0-9+.-]*://[^:/@\s]*:).*@", r"\1***@", masked)


def secret_parts(dsn: str) -> list[str]:
    """What mask_dsn hides, in pieces: error messages are scrubbed of each."""
    parts: list[str] = []
    for m in _PASSWORD_VALUE.finditer(dsn):
        parts += m.group(2).strip("'").split()
    m = re.match(r"(?i)^\s*[a-z][a-z0-9+.-]*://[^:/@\s]*:(.*)@", dsn)
    if m:
        parts += [m.group(1), *re.split(r"[@/\s%]", m.group(1))]
    return sorted({p for p in parts if len(p) >= 2}, key=len, reverse=True)


def scrub(message: str, dsn: str) -> str:
    """An error message about `dsn` without any piece of its password: libpq quotes
    the token it could not parse ('missing "=" after "b c"'), which may be one."""
    for part in secret_parts(dsn):
        message = message.replace(part, "***")
    if "connection info string" in message or "URI" in message or "percent" in message:
        message = re.sub(r'"[^"]*"', '"***"', message)
    return message


def find_pgbench(explicit: str | None = None) -> str:
    if explicit:
        if Path(explicit).is_file() and os.access(explicit, os.X_OK):
            return explicit
        raise SweepError(f"--pgbench {explicit}: not an executable file")
    found = shutil.which("pgbench")
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"), reverse=True)
    candidates += [Path("/usr/pgsql-17/bin/pgbench"), Path("/opt/homebrew/bin/pgbench")]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    raise SweepError(
        "pgbench not found: install PostgreSQL's client tools (Debian: postgresql-contrib or "
        "postgresql-15) or pass --pgbench PATH"
    )


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an ascending sequence."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def read_transaction_logs(paths: Sequence[Path]) -> tuple[list[float], int]:
    """Latencies in ms from pgbench -l logs, and the count of failed/skipped lines.

    Line format (PostgreSQL 15): client_id transaction_no time script_no time_epoch
    time_us [schedule_lag retries]; `time` is the latency in microseconds, or `failed` /
    `skipped` (or, with --failures-detailed, `serialization` / `deadlock`)."""
    latencies: list[float] = []
    failed = 0
    for path in paths:
        with path.open(encoding="ascii", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 3:
                    continue
                if fields[2].isdigit():
                    latencies.append(int(fields[2]) / 1000.0)
                else:
                    failed += 1
    latencies.sort()
    return latencies, failed


_TPS = re.compile(r"^tps = ([\d.]+) \(without initial connection time\)", re.M)
_TPS_ANY = re.compile(r"^tps = ([\d.]+)", re.M)
_PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)", re.M)
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)
_LAT_AVG = re.compile(r"^latency average = ([\d.]+) ms", re.M)
_PROGRESS = re.compile(r"^progress: ([\d.]+) s, ([\d.]+) tps")


def parse_summary(stdout: str) -> dict[str, float]:
    tps = _TPS.search(stdout) or _TPS_ANY.search(stdout)
    processed = _PROCESSED.search(stdout)
    if tps is None or processed is None:
        raise SweepError(f"could not read pgbench's summary:\n{stdout[-1500:]}")
    out = {"tps": float(tps.group(1)), "transactions": float(processed.group(1))}
    if m := _FAILED.search(stdout):
        out["failed"] = float(m.group(1))
    if m := _LAT_AVG.search(stdout):
        out["latency_avg_ms"] = float(m.group(1))
    return out


# --- running -------------------------------------------------------------------------


def _pgbench_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PGCONNECT_TIMEOUT", "10")
    env["PGAPPNAME"] = "pool-advisor-sweep"
    return env


def _workload_args(plan: SweepPlan) -> list[str]:
    if plan.script is not None:
        if not plan.script.is_file():
            raise SweepError(f"-f {plan.script}: script file not found")
        return ["-f", str(plan.script)]
    return ["-b", plan.builtin or "tpcb-like"]


def initialize(plan: SweepPlan, pgbench: str) -> None:
    if plan.init_scale is None:
        return
    r = subprocess.run(
        [pgbench, "-i", "-q", "-s", str(plan.init_scale), plan.dsn],
        capture_output=True,
        text=True,
        env=_pgbench_env(),
        timeout=max(120, plan.max_total_seconds),
    )
    if r.returncode != 0:
        raise SweepError(f"pgbench -i -s {plan.init_scale} failed:\n{_tail(r.stderr)}")


def pgbench_version(pgbench: str) -> str:
    r = subprocess.run([pgbench, "--version"], capture_output=True, text=True, timeout=10)
    return r.stdout.strip()


def run_step(
    plan: SweepPlan,
    pgbench: str,
    clients: int,
    workdir: Path,
    on_progress: Callable[[float, float | None], None] | None = None,
) -> StepResult:
    jobs = max(1, min(clients, plan.jobs or os.cpu_count() or 1))
    prefix = workdir / f"c{clients}"
    cmd = [
        pgbench,
        "-n",  # the workload's tables are the user's; never VACUUM them unasked
        "-c",
        str(clients),
        "-j",
        str(jobs),
        "-T",
        str(plan.step_seconds),
        "-P",
        "1",
        "-M",
        plan.protocol,
        "-l",
        "--log-prefix",
        str(prefix),
        *_workload_args(plan),
    ]
    if plan.sampling_rate is not None:
        cmd += ["--sampling-rate", str(plan.sampling_rate)]
    cmd.append(plan.dsn)
    stdout_path = workdir / f"c{clients}.out"
    started = time.monotonic()
    with stdout_path.open("w") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            env=_pgbench_env(),
            cwd=workdir,
        )
        killer = threading.Timer(plan.step_seconds + STEP_GRACE_SECONDS, proc.kill)
        killer.start()
        errors: list[str] = []
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                m = _PROGRESS.match(line)
                if m and on_progress is not None:
                    on_progress(float(m.group(1)), float(m.group(2)))
                elif not m:
                    errors.append(line)
            rc = proc.wait()
        finally:
            killer.cancel()
    elapsed = time.monotonic() - started
    stdout = stdout_path.read_text(errors="replace")
    if rc != 0:
        if elapsed >= plan.step_seconds + STEP_GRACE_SECONDS:
            raise SweepError(f"pgbench with {clients} clients ran past its time limit; killed")
        raise SweepError(
            f"pgbench with {clients} clients failed (exit {rc}):\n{_tail(''.join(errors))}"
        )
    summary = parse_summary(stdout)
    logs = sorted(workdir.glob(f"{prefix.name}.*"))
    latencies, log_failed = read_transaction_logs(logs)
    for p in logs:
        p.unlink()  # they can be large; the percentiles are what we keep
    result = StepResult(
        clients=clients,
        jobs=jobs,
        seconds=float(plan.step_seconds),
        tps=summary["tps"],
        transactions=int(summary["transactions"]),
        failed=int(summary.get("failed", log_failed)),
        latency_avg_ms=summary.get("latency_avg_ms"),
        logged=len(latencies),
    )
    if latencies:
        result.p50_ms = round(percentile(latencies, 50), 3)
        result.p95_ms = round(percentile(latencies, 95), 3)
        result.p99_ms = round(percentile(latencies, 99), 3)
        result.max_ms = round(latencies[-1], 3)
    return result


def run_sweep(
    plan: SweepPlan,
    *,
    tool_version: str,
    on_progress: ProgressCallback | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> SweepRun:
    pgbench = find_pgbench(plan.pgbench)
    run = SweepRun(
        tool_version=tool_version,
        pgbench_version=pgbench_version(pgbench),
        target=mask_dsn(plan.dsn),
        workload=plan.workload,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        step_seconds=plan.step_seconds,
        max_total_seconds=plan.max_total_seconds,
    )
    _workload_args(plan)  # fail before any load if the script is missing
    from advisor.live.sweep_pooler import ActiveSampler, probe

    target = probe(plan.dsn, plan.pooler_admin)
    run.target_kind, run.target_detail = target.kind, target.detail
    sampled = target.kind == "pgbouncer" and target.admin
    if sampled:
        run.n_basis = ("server-side active connections (PgBouncer SHOW POOLS sv_active, "
                       f"mean per step, database {target.database})")
    begun = clock()
    initialize(plan, pgbench)
    total = len(plan.clients)
    with tempfile.TemporaryDirectory(prefix="pool-advisor-sweep-") as tmp:
        for index, clients in enumerate(plan.clients):
            spent = clock() - begun
            if spent + plan.step_seconds > plan.max_total_seconds:
                run.skipped_clients = plan.clients[index:]
                run.stopped_reason = (
                    f"time budget: {spent:.0f} s spent, the next step of {plan.step_seconds} s "
                    f"would pass --max-total {plan.max_total_seconds} s"
                )
                break

            def report(elapsed: float, tps: float | None, *, i: int = index, c: int = clients):
                if on_progress is not None:
                    on_progress(
                        Progress(
                            step=i,
                            steps=total,
                            clients=c,
                            elapsed=elapsed,
                            step_seconds=plan.step_seconds,
                            tps=tps,
                        )
                    )

            report(0.0, None)
            try:
                if sampled:
                    with ActiveSampler(plan.pooler_admin or plan.dsn,
                                       target.database) as sampler:
                        step = run_step(plan, pgbench, clients, Path(tmp), report)
                    mean = sampler.mean()
                    if mean is None:
                        raise SweepError(f"SHOW POOLS could not be sampled during the step "
                                         f"with {clients} clients: {sampler.error or 'no rows'}")
                    step.server_active = round(mean, 2)
                    step.server_active_max = max(sampler.samples)
                else:
                    step = run_step(plan, pgbench, clients, Path(tmp), report)
            except KeyboardInterrupt:
                # Ctrl-C: the steps measured so far are kept and written
                run.skipped_clients = plan.clients[index:]
                run.stopped_reason = "interrupted (Ctrl-C)"
                break
            except SweepError as exc:
                if not run.steps:
                    raise
                # Usually max_connections or the pooler's max_client_conn: later, larger
                # steps would fail the same way. Keep what was measured.
                run.skipped_clients = plan.clients[index:]
                run.stopped_reason = str(exc)
                break
            run.steps.append(step)
            if on_progress is not None:
                on_progress(
                    Progress(
                        step=index,
                        steps=total,
                        clients=clients,
                        elapsed=plan.step_seconds,
                        step_seconds=plan.step_seconds,
                        tps=step.tps,
                        done=True,
                    )
                )
    attach_fit(run)
    return run


def attach_fit(run: SweepRun) -> USLFit | None:
    if run.target_kind == "pgbouncer" and not run.server_side:
        run.fit, run.fit_error = None, (
            "through PgBouncer the pgbench client count is not the server's concurrency, "
            "and the server-side active connections could not be read: "
            f"{run.target_detail}")
        return None
    try:
        fit = fit_usl([(run.n_of(s), s.tps) for s in run.steps])
    except FitError as exc:
        run.fit, run.fit_error = None, str(exc)
        return None
    run.fit, run.fit_error = fit.summary(), None
    return fit


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# --- writing -------------------------------------------------------------------------

CSV_COLUMNS = (
    "clients",
    "tps",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "latency_avg_ms",
    "transactions",
    "failed",
    "seconds",
    "jobs",
)


def to_csv(run: SweepRun) -> str:
    buf = io.StringIO()
    buf.write(f"# pool-advisor sweep {run.started_at}: {run.workload}; target {run.target}\n")
    writer = csv.writer(buf, lineterminator="\n")
    # through a pooler, `active` (what read_sweep takes as N first) is the server side
    columns = CSV_COLUMNS if not run.server_side else ("clients", "active", *CSV_COLUMNS[1:])
    writer.writerow(columns)
    for s in run.steps:
        row = {**s.model_dump(), "active": s.server_active}
        writer.writerow(["" if row[c] is None else row[c] for c in columns])
    return buf.getvalue()


def to_json(run: SweepRun) -> str:
    return json.dumps(run.model_dump(mode="json"), indent=2) + "\n"


class ChartUnavailable(Exception):
    """matplotlib is not installed; the message says how to get it."""


def write_chart(run: SweepRun, path: Path, fit: USLFit | None = None,
                recommended: int | None = None) -> None:
    """Throughput (points and USL curve) and p99 against clients; N*, the measured peak
    and the recommended N marked; the legend outside the plot, so it covers no data."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ChartUnavailable(
            "chart skipped: matplotlib is not installed (pip install 'pool-advisor[chart]')"
        ) from None
    steps = run.steps
    if not steps:
        raise ChartUnavailable("chart skipped: no measured steps")
    xs = [run.n_of(s) for s in steps]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(xs, [s.tps for s in steps], "o", color="tab:blue", label="measured tps")
    if fit is not None:
        top = max(xs) * 1.1
        if fit.n_star is not None:
            top = max(top, fit.n_star * 1.2)
        grid = [1 + (top - 1) * i / 200 for i in range(201)]
        ax.plot(
            grid,
            [fit.throughput(n) for n in grid],
            "-",
            color="tab:blue",
            alpha=0.6,
            label=f"USL fit (R²={fit.r2:.3f})" if fit.r2 is not None else "USL fit",
        )
        if fit.n_star is not None:
            ax.axvline(
                fit.n_star, color="tab:green", linestyle="--", label=f"N* = {fit.n_star:.1f}"
            )
    best = max(steps, key=lambda s: s.tps)
    unit = "server connections" if run.server_side else "clients"
    ax.plot([run.n_of(best)], [best.tps], "*", color="tab:orange", markersize=14,
            label=f"measured peak: {run.n_of(best):g} {unit}, {best.tps:,.0f} tps")
    if recommended is not None:
        ax.axvline(recommended, color="tab:purple", linestyle=":",
                   label=f"recommended N = {recommended}")
    ax.set_xlabel("server-side active connections (PgBouncer sv_active)" if run.server_side
                  else "clients (concurrent connections)")
    ax.set_ylabel("throughput (tps)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    handles, labels = ax.get_legend_handles_labels()
    p99 = [(run.n_of(s), s.p99_ms) for s in steps if s.p99_ms is not None]
    if p99:
        ax2 = ax.twinx()
        ax2.plot([c for c, _ in p99], [v for _, v in p99], "s-", color="tab:red", label="p99 ms")
        ax2.set_ylabel("p99 latency (ms)")
        ax2.set_ylim(bottom=0)
        h2, l2 = ax2.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    # below the axes: inside, the legend hid the points of the low-N steps
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3,
              fontsize="small", frameon=False)
    title = f"pgbench sweep: {run.workload}"
    ax.set_title(title if len(title) <= 90 else title[:87] + "...", fontsize="medium")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run_from_table(sweep: Sweep, *, tool_version: str) -> SweepRun:
    """A SweepRun from an existing table (e.g. a CSV measured elsewhere), for fit and chart."""
    run = SweepRun(
        tool_version=tool_version,
        target="(from table)",
        workload=sweep.about or sweep.source.label(),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        step_seconds=0,
        max_total_seconds=0,
        steps=[
            StepResult(
                clients=int(p.n),
                jobs=0,
                seconds=0,
                tps=p.throughput,
                transactions=0,
                p50_ms=p.p50_ms,
                p95_ms=p.p95_ms,
                p99_ms=p.p99_ms,
            )
            for p in sweep.points
        ],
    )
    attach_fit(run)
    return run
