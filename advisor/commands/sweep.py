"""`pool-advisor sweep`: measure the right pool size with pgbench and fit the USL."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from collections.abc import Callable

    from advisor.live.sizing import Recommendation
    from advisor.live.sweep_records import Progress, SweepPlan, SweepRun


class Builtin(StrEnum):
    tpcb_like = "tpcb-like"
    simple_update = "simple-update"
    select_only = "select-only"


class Protocol(StrEnum):
    simple = "simple"
    extended = "extended"
    prepared = "prepared"


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


def register(app: typer.Typer) -> None:
    app.command(
        "sweep",
        help=(
            "Run pgbench at a series of client counts against a DSN you give (a server, or "
            "PgBouncer in front of it), record tps and p50/p95/p99 latency, fit the Universal "
            "Scalability Law and write PREFIX.csv, PREFIX.json and PREFIX.png. Bounded: "
            "--duration per step, --max-total for the whole sweep."
        ),
    )(sweep_command)


def sweep_command(
    dsn: Annotated[
        str | None,
        typer.Argument(
            help="libpq connection string or URL of the server or pooler to load; "
            "nothing is contacted unless you name it",
            show_default=False,
        ),
    ] = None,
    clients: Annotated[
        str, typer.Option("--clients", "-c", help="client counts: 1,2,4,8 or 1-64 (powers of 2)")
    ] = "1,2,4,8,16,32,64",
    duration: Annotated[
        int, typer.Option("--duration", "-T", min=1, help="seconds per step (pgbench -T)")
    ] = 10,
    max_total: Annotated[
        int,
        typer.Option(
            "--max-total", min=1, help="cap for the whole sweep in seconds; later steps are skipped"
        ),
    ] = 600,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", min=1, help="pgbench threads (default: CPUs)")
    ] = None,
    builtin: Annotated[
        Builtin, typer.Option("--builtin", "-b", help="pgbench built-in script")
    ] = Builtin.tpcb_like,
    select_only: Annotated[
        bool, typer.Option("--select-only", "-S", help="same as --builtin select-only")
    ] = False,
    script: Annotated[
        Path | None,
        typer.Option("--file", "-f", help="your own pgbench transaction script instead"),
    ] = None,
    protocol: Annotated[
        Protocol, typer.Option("--protocol", "-M", help="pgbench query protocol")
    ] = Protocol.simple,
    init_scale: Annotated[
        int | None,
        typer.Option(
            "--init-scale",
            "-s",
            min=1,
            help="run pgbench -i -s N first (drops and recreates pgbench_* tables)",
        ),
    ] = None,
    sampling_rate: Annotated[
        float | None,
        typer.Option(
            "--sampling-rate",
            min=0.0001,
            max=1.0,
            help="log only this fraction of transactions (fast servers)",
        ),
    ] = None,
    pgbench: Annotated[
        str | None, typer.Option("--pgbench", help="path to the pgbench binary")
    ] = None,
    pooler_admin: Annotated[
        str | None,
        typer.Option(
            "--pooler-admin",
            help="through PgBouncer: DSN of a user in its admin_users or stats_users, to read "
            "the server-side active connections (SHOW POOLS) used as the fit's N; default: "
            "the sweep's own DSN",
        ),
    ] = None,
    input_table: Annotated[
        Path | None,
        typer.Option(
            "--input",
            "-i",
            help="fit and chart an existing sweep table (CSV/TSV) instead of running",
        ),
    ] = None,
    out: Annotated[
        str, typer.Option("--out", "-o", help="output prefix: PREFIX.csv, .json, .png")
    ] = "pool-sweep",
    chart: Annotated[bool, typer.Option("--chart/--no-chart", help="write PREFIX.png")] = True,
    cores: Annotated[
        float | None,
        typer.Option(
            "--cores",
            min=0.1,
            help="server CPU cores, to compare the fit with the (cores x 2) + spindles floor",
        ),
    ] = None,
    spindles: Annotated[
        float, typer.Option("--spindles", min=0, help="effective spindles for the floor")
    ] = 1,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="what to print on stdout")
    ] = OutputFormat.text,
) -> None:
    from advisor import __version__
    from advisor.live.sweep import run_sweep
    from advisor.live.sweep_output import ChartUnavailable, to_csv, to_json, write_chart
    from advisor.live.sweep_records import SweepError, SweepPlan, parse_clients, run_from_table
    from advisor.live.sweep_table import read_sweep
    from advisor.read.fs import InputError

    try:
        if input_table is not None:
            if dsn is not None:
                raise SweepError("give either a DSN to measure or --input TABLE, not both")
            run = run_from_table(read_sweep(input_table), tool_version=__version__)
        else:
            if dsn is None:
                raise SweepError(
                    "give the DSN to load (e.g. 'host=127.0.0.1 port=5432 dbname=bench'); "
                    "sweep never picks a server by itself"
                )
            plan = SweepPlan(
                dsn=dsn,
                clients=parse_clients(clients),
                step_seconds=duration,
                max_total_seconds=max_total,
                jobs=jobs,
                builtin=None if script else ("select-only" if select_only else builtin.value),
                # pgbench runs in a scratch folder: a relative -f is the user's, from here
                script=script.resolve() if script is not None else None,
                protocol=protocol.value,
                sampling_rate=sampling_rate,
                init_scale=init_scale,
                pgbench=pgbench,
                pooler_admin=pooler_admin,
            )
            with _ProgressDisplay(plan) as on_progress:
                run = run_sweep(plan, tool_version=__version__, on_progress=on_progress)
    except InputError as exc:
        typer.echo(f"error: {exc.label()}: {exc.message}", err=True)
        raise typer.Exit(2) from None
    except SweepError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None

    prefix = Path(out)
    if prefix.parent != Path():
        prefix.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, text in ((".csv", to_csv(run)), (".json", to_json(run))):
        target = prefix.with_name(prefix.name + suffix)
        target.write_text(text, encoding="utf-8")
        written.append(str(target))
    notices = []
    recommendation = None
    if cores is not None and len(run.steps) >= 3:
        from advisor.live.sizing import recommend_active_connections

        recommendation = recommend_active_connections(cores, spindles, run.sweep(written[0]))
    if chart:
        target = prefix.with_name(prefix.name + ".png")
        try:
            write_chart(run, target, run.usl(), recommendation.active_connections
                        if recommendation and recommendation.active_connections else None)
            written.append(str(target))
        except ChartUnavailable as exc:
            notices.append(str(exc))

    if output_format is OutputFormat.json:
        import json

        payload = run.model_dump(mode="json")
        payload["written"] = written
        payload["notices"] = notices
        if recommendation is not None:
            payload["recommendation"] = recommendation.model_dump(mode="json", by_alias=True)
        typer.echo(json.dumps(payload, indent=2))
    else:
        typer.echo(_render_text(run, written, notices, recommendation))


def _render_text(
    run: SweepRun,
    written: list[str],
    notices: list[str],
    recommendation: Recommendation | None,
) -> str:
    lines = [f"pgbench sweep: {run.workload}; target {run.target}"]
    if run.pgbench_version:
        lines.append(run.pgbench_version)
    if run.target_kind == "pgbouncer":
        lines.append(f"target is a pooler: {run.target_detail}")
        if run.server_side:
            lines.append(f"N for the USL fit: {run.n_basis}, not the pgbench client count")
    lines.append("")
    header = ("clients", 8), ("tps", 12), ("p50 ms", 9), ("p95 ms", 9), ("p99 ms", 9)
    server = run.server_side
    lines.append(" ".join(f"{h:>{w}}" for h, w in header) + f" {'failed':>7}"
                 + (f" {'server N':>9} {'max':>4}" if server else ""))

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for s in run.steps:
        lines.append(
            f"{s.clients:>8} {s.tps:>12,.1f} {ms(s.p50_ms):>9} {ms(s.p95_ms):>9} "
            f"{ms(s.p99_ms):>9} {s.failed:>7}"
            + (f" {run.n_of(s):>9.2f} {s.server_active_max or 0:>4}" if server else "")
        )
    if run.skipped_clients:
        lines.append(
            f"skipped clients {', '.join(map(str, run.skipped_clients))}: {run.stopped_reason}"
        )
    lines.append("")
    fit = run.usl()
    if fit is None:
        lines.append(f"USL fit: not possible ({run.fit_error})")
    else:
        r2 = "n/a" if fit.r2 is None else f"{fit.r2:.3f}"
        lines.append(
            f"USL fit: lambda={fit.lambda_:.4g} sigma={fit.sigma:.4g} kappa={fit.kappa:.3g} R²={r2}"
        )
        if fit.n_star is None:
            lines.append("  no peak: throughput still rises at the largest count measured")
        else:
            peak = fit.peak_throughput or 0
            lines.append(
                f"  N* = sqrt((1 - sigma) / kappa) = {fit.n_star:.1f} connections, "
                f"peak {peak:,.0f} tps (model)"
            )
    if run.steps:
        from advisor.live.sizing import judge_sweep

        trust = judge_sweep(run.sweep(run.target), fit)
        if trust.flat:
            lines.append(f"  {trust.reason}")
        elif not trust.usable:
            lines.append(f"  unreliable: {trust.reason}; advise will not use this sweep "
                         "without --force")
    if recommendation is not None:
        lines.append("")
        lines.append(
            f"Recommended active connections: {recommendation.active_connections} "
            f"({recommendation.basis})"
        )
        lines.extend(f"  {r}" for r in recommendation.reasons)
        if recommendation.alternative:
            lines.append(f"  {recommendation.alternative}")
    lines.append("")
    lines.extend(f"wrote {w}" for w in written)
    lines.extend(f"notice: {n}" for n in notices)
    return "\n".join(lines)


class _ProgressDisplay:
    """A rich progress bar on stderr when rich is importable, else one line per step."""

    def __init__(self, plan: SweepPlan) -> None:
        self.plan = plan
        self.total = len(plan.clients) * plan.step_seconds
        self.bar: Any = None  # rich.progress.Progress, when rich is importable
        self.task: int | None = None

    def __enter__(self) -> Callable[[Progress], None]:
        if not sys.stderr.isatty():  # CI logs: one line per step, no bar redraws
            return self._simple
        try:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
        except ImportError:
            return self._simple
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.bar.__enter__()
        self.task = self.bar.add_task("sweep", total=self.total)
        return self._rich

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)

    def _rich(self, p: Progress) -> None:
        assert self.bar is not None and self.task is not None
        tps = "" if p.tps is None else f" {p.tps:,.0f} tps"
        self.bar.update(
            self.task,
            completed=p.step * p.step_seconds + min(p.elapsed, p.step_seconds),
            description=f"step {p.step + 1}/{p.steps}: {p.clients} clients{tps}",
        )

    def _simple(self, p: Progress) -> None:
        if p.done:
            print(
                f"step {p.step + 1}/{p.steps}: {p.clients} clients: {p.tps:,.1f} tps",
                file=sys.stderr,
                flush=True,
            )
