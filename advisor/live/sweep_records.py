"""A pgbench sweep as plain data: the plan (client counts, step length, workload), each
step's throughput and latency, the whole run with the USL fitted to it (measured here or
read from a table measured elsewhere)."""

from __future__ import annotations

import re
from collections.abc import Callable
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
