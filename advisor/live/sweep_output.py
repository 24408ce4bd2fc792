"""A sweep written out: CSV (what `--input` and `advise --sweep` read back), JSON, and
the PNG chart of throughput and p99 against connections with the USL curve."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from advisor.live.sweep_records import SweepRun
from advisor.live.usl import USLFit

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
