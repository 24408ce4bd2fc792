"""Measure throughput and latency at a series of client counts with pgbench, fit the USL.

Each step runs `pgbench -c N -T seconds -l -P 1` against a DSN the user gives (a server
or a PgBouncer in front of it). Throughput is pgbench's own tps (excluding connection
time); latency percentiles are computed here from pgbench's per-transaction logs, since
pgbench prints only the mean and stddev. The whole sweep is bounded: steps that would
run past `max_total_seconds` are skipped and reported as skipped.
"""

from __future__ import annotations

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

from advisor.live.dsn import mask_dsn
from advisor.live.sweep_records import (
    Progress,
    ProgressCallback,
    StepResult,
    SweepError,
    SweepPlan,
    SweepRun,
    attach_fit,
)

STEP_GRACE_SECONDS = 30  # beyond -T: connection setup, log flush; then the step is killed


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


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
