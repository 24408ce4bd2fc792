"""Sweep tables (CSV or TSV, as `sweep` writes them or measured elsewhere) read into a
`Sweep`, every point with its line, for `sweep --input` and `advise --sweep`."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from advisor.live.usl import Sweep, SweepPoint
from advisor.model import Source
from advisor.read.fs import InputError, decode_text

_N_COLUMNS = ("peak_active", "active", "clients", "connections", "pool", "n", "concurrency")
_X_COLUMNS = ("tps", "qps", "throughput", "x")


def read_sweep(path: str | Path, *, shown: str | None = None) -> Sweep:
    """Read a sweep table (CSV or TSV; `#` lines are comments).

    Concurrency is taken from the first column present of: peak_active, active, clients,
    connections, pool, n, concurrency. The measured concurrency (peak_active) wins over
    the configured pool size, since a pool of 256 in front of 200 clients runs 200.
    Throughput: tps, qps, throughput or x. Latency columns p50_ms, p95_ms, p99_ms are
    optional.
    """
    p = Path(path)
    label = shown or p.as_posix()
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(label, f"cannot read sweep: {exc.strerror or exc}") from None
    text = decode_text(label, data)
    return parse_sweep(text, label)


def parse_sweep(text: str, label: str) -> Sweep:
    lines = text.splitlines()
    about = " ".join(ln.lstrip("# ").strip() for ln in lines if ln.startswith("#"))
    numbered = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip() and not ln.startswith("#")]
    if not numbered:
        raise InputError(label, "sweep table is empty")
    header_line, header = numbered[0]
    delimiter = "\t" if "\t" in header else ","
    columns = [c.strip().lower() for c in next(csv.reader([header], delimiter=delimiter))]
    n_col = next((c for c in _N_COLUMNS if c in columns), None)
    x_col = next((c for c in _X_COLUMNS if c in columns), None)
    if n_col is None or x_col is None:
        raise InputError(
            label,
            "sweep header needs a concurrency column (one of "
            f"{', '.join(_N_COLUMNS)}) and a throughput column (one of {', '.join(_X_COLUMNS)})",
            header_line,
        )
    points: list[SweepPoint] = []
    for line_no, raw in numbered[1:]:
        cells = next(csv.reader([raw], delimiter=delimiter))
        if len(cells) != len(columns):
            raise InputError(label, f"expected {len(columns)} columns, found {len(cells)}", line_no)
        row = dict(zip(columns, (c.strip() for c in cells), strict=True))

        def number(col: str, *, row: dict[str, str] = row, line_no: int = line_no) -> float | None:
            value = row.get(col, "")
            if value == "":
                return None
            try:
                out = float(value)
            except ValueError:
                raise InputError(label, f"{col}: {value!r} is not a number", line_no) from None
            if not math.isfinite(out) or out < 0:
                raise InputError(label, f"{col}: {value!r} must be a finite number >= 0", line_no)
            return out

        n = number(n_col)
        x = number(x_col)
        if n is None or x is None:
            raise InputError(label, f"missing {n_col if n is None else x_col}", line_no)
        points.append(
            SweepPoint(
                n=n,
                throughput=x,
                p50_ms=number("p50_ms"),
                p95_ms=number("p95_ms"),
                p99_ms=number("p99_ms"),
                line=line_no,
            )
        )
    return Sweep(points=points, source=Source(path=label, line=header_line), about=about)
