"""Universal Scalability Law: fit a throughput sweep, find the concurrency that peaks.

    X(N) = lambda * N / (1 + sigma * (N - 1) + kappa * N * (N - 1))
    N*   = sqrt((1 - sigma) / kappa)        (where throughput peaks; needs kappa > 0)

Pure Python so `advise` works without numpy: the sweeps are tens of points and three
parameters. The fit is ordinary least squares on throughput (what Gunther's method and
the R `usl` package minimise), found by Levenberg-Marquardt started from the best of
Gunther's linearisation and a coarse (sigma, kappa) grid where lambda is solved exactly.
A negative sigma is allowed: super-linear sweeps (caches warming, a client-side queue
draining) are common and forcing sigma >= 0 fits them badly.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from advisor.model import Source, Term
from advisor.read.fs import InputError, decode_text


class SweepPoint(BaseModel):
    """One step of a sweep: `n` concurrent connections gave `throughput` per second."""

    model_config = ConfigDict(extra="forbid")

    n: float
    throughput: float
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    line: int | None = None  # where it was read from, when it came from a file


class Sweep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    points: list[SweepPoint]
    source: Source = Source(default="in-memory sweep")
    about: str = ""


class USLFit(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    lambda_: float = Field(alias="lambda")  # throughput of one connection without contention
    sigma: float  # contention (serial fraction)
    kappa: float  # coherency (crosstalk) cost
    r2: float | None = None
    points: int = 0

    @property
    def n_star(self) -> float | None:
        """Concurrency at peak throughput; None when the fit has no retrograde region."""
        if self.kappa <= 0 or self.sigma >= 1:
            return None
        return math.sqrt((1 - self.sigma) / self.kappa)

    @property
    def peak_throughput(self) -> float | None:
        n = self.n_star
        return None if n is None else self.throughput(n)

    def throughput(self, n: float) -> float:
        return usl(n, self.lambda_, self.sigma, self.kappa)

    def summary(self) -> dict[str, float | int | None]:
        return {
            "lambda": self.lambda_,
            "sigma": self.sigma,
            "kappa": self.kappa,
            "r2": self.r2,
            "n_star": self.n_star,
            "peak_throughput": self.peak_throughput,
            "points": self.points,
        }


class FitError(ValueError):
    """The sweep cannot be fitted (too few points, no throughput)."""


def usl(n: float, lam: float, sigma: float, kappa: float) -> float:
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


# --- fitting -----------------------------------------------------------------------


def fit_usl(points: Iterable[SweepPoint] | Iterable[tuple[float, float]]) -> USLFit:
    pairs = [(p.n, p.throughput) if isinstance(p, SweepPoint) else p for p in points]
    data = [(float(n), float(x)) for n, x in pairs if n > 0]
    if len({n for n, _ in data}) < 3:
        raise FitError("a USL fit needs throughput at 3 or more distinct connection counts")
    if all(x <= 0 for _, x in data):
        raise FitError("every throughput in the sweep is zero")
    starts = [s for s in (_gunther_start(data), _grid_start(data)) if s is not None]
    best: tuple[float, float, float] | None = None
    best_sse = math.inf
    for start in starts:
        params = _levenberg_marquardt(data, start)
        err = _sse(data, params)
        if err < best_sse:
            best, best_sse = params, err
    if best is None:
        raise FitError("the USL fit did not converge")
    lam, sigma, kappa = best
    mean = sum(x for _, x in data) / len(data)
    sst = sum((x - mean) ** 2 for _, x in data)
    r2 = 1 - best_sse / sst if sst > 0 else None
    return USLFit(lambda_=lam, sigma=sigma, kappa=kappa, r2=r2, points=len(data))


def _valid(data: Sequence[tuple[float, float]], sigma: float, kappa: float) -> bool:
    # The denominator must stay positive over the measured range (else X changes sign).
    return kappa >= 0 and all(1 + sigma * (n - 1) + kappa * n * (n - 1) > 0 for n, _ in data)


def _sse(data: Sequence[tuple[float, float]], params: tuple[float, float, float]) -> float:
    lam, sigma, kappa = params
    if not _valid(data, sigma, kappa):
        return math.inf
    return sum((x - usl(n, lam, sigma, kappa)) ** 2 for n, x in data)


def _best_lambda(data: Sequence[tuple[float, float]], sigma: float, kappa: float) -> float:
    # For fixed sigma, kappa the model is linear in lambda: closed-form least squares.
    f = [n / (1 + sigma * (n - 1) + kappa * n * (n - 1)) for n, _ in data]
    return sum(fi * x for fi, (_, x) in zip(f, data, strict=True)) / sum(fi * fi for fi in f)


def _gunther_start(data: Sequence[tuple[float, float]]) -> tuple[float, float, float] | None:
    """Gunther's linearisation: with C = X(N)/X(1), N/C - 1 = (s+k) x + k x^2, x = N-1."""
    n1, x1 = min(data)
    lam = x1 / n1  # throughput per connection at the smallest load
    rows = [(n - 1, n / (x / lam) - 1) for n, x in data if x > 0 and n != 1]
    if len(rows) < 2 or lam <= 0:
        return None
    # Least squares through the origin for y = a x + b x^2.
    sxx = sum(x * x for x, _ in rows)
    sx3 = sum(x**3 for x, _ in rows)
    sx4 = sum(x**4 for x, _ in rows)
    sxy = sum(x * y for x, y in rows)
    sx2y = sum(x * x * y for x, y in rows)
    det = sxx * sx4 - sx3 * sx3
    if det == 0:
        return None
    a = (sxy * sx4 - sx2y * sx3) / det
    b = (sxx * sx2y - sx3 * sxy) / det
    kappa = max(b, 0.0)
    sigma = a - kappa
    if not _valid(data, sigma, kappa):
        return None
    return (_best_lambda(data, sigma, kappa), sigma, kappa)


def _grid_start(data: Sequence[tuple[float, float]]) -> tuple[float, float, float] | None:
    best: tuple[float, float, float] | None = None
    best_sse = math.inf
    sigmas = [-0.5 + i * 0.02 for i in range(76)]  # -0.5 .. 1.0
    kappas = [0.0] + [10 ** (-9 + j * 0.125) for j in range(65)]  # 1e-9 .. 1e-1
    for sigma in sigmas:
        for kappa in kappas:
            if not _valid(data, sigma, kappa):
                continue
            params = (_best_lambda(data, sigma, kappa), sigma, kappa)
            err = _sse(data, params)
            if err < best_sse:
                best, best_sse = params, err
    return best


def _levenberg_marquardt(
    data: Sequence[tuple[float, float]],
    start: tuple[float, float, float],
    iterations: int = 500,
) -> tuple[float, float, float]:
    params = start
    err = _sse(data, params)
    damping = 1e-3
    for _ in range(iterations):
        jtj = [[0.0] * 3 for _ in range(3)]
        jtr = [0.0] * 3
        lam, sigma, kappa = params
        for n, x in data:
            d = 1 + sigma * (n - 1) + kappa * n * (n - 1)
            model = lam * n / d
            grad = (n / d, -model * (n - 1) / d, -model * n * (n - 1) / d)
            resid = x - model
            for i in range(3):
                jtr[i] += grad[i] * resid
                for j in range(3):
                    jtj[i][j] += grad[i] * grad[j]
        improved = False
        while damping < 1e12:
            system = [
                [jtj[i][j] + (damping * jtj[i][i] if i == j else 0.0) for j in range(3)]
                for i in range(3)
            ]
            step = _solve3(system, jtr)
            if step is None:
                damping *= 10
                continue
            trial = (lam + step[0], sigma + step[1], max(kappa + step[2], 0.0))
            trial_err = _sse(data, trial)
            if trial_err < err:
                converged = (err - trial_err) <= 1e-12 * max(err, 1e-300)
                params, err = trial, trial_err
                damping = max(damping / 10, 1e-12)
                improved = True
                break
            damping *= 10
        if not improved or converged:
            break
    return params


def _solve3(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting for a 3x3 system."""
    m = [[*row, b[i]] for i, row in enumerate(a)]
    size = 3
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-300:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, size):
            factor = m[r][col] / m[col][col]
            for c in range(col, size + 1):
                m[r][c] -= factor * m[col][c]
    out = [0.0] * size
    for r in range(size - 1, -1, -1):
        out[r] = (m[r][size] - sum(m[r][c] * out[c] for c in range(r + 1, size))) / m[r][r]
    if not all(math.isfinite(v) for v in out):
        return None
    return out


# --- reading sweeps ------------------------------------------------------------------

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


# --- sizing ------------------------------------------------------------------------


class Recommendation(BaseModel):
    """How many connections should be active on one server at once, and why."""

    model_config = ConfigDict(extra="forbid")

    active_connections: int
    basis: str  # "floor: (cores x 2) + spindles" or "USL fit" or "measured peak"
    floor: Term | None  # None when the server's cores are unknown
    terms: list[Term] = Field(default_factory=list)
    fit: USLFit | None = None
    reasons: list[str] = Field(default_factory=list)
    alternative: str | None = None

    def explain(self) -> str:
        return "\n".join(self.reasons)


def sizing_floor(cores: float | Term, spindles: float | Term = 1) -> tuple[Term, str]:
    """(cores x 2) + effective spindles: where measuring starts, not an answer.

    Returns the floor and its arithmetic, each factor with its source."""
    core_term = _as_term(cores, "cores", "given")
    spindle_term = _as_term(spindles, "effective spindles", "assumed: 1 (SSD or cached data)")
    value = math.floor(core_term.value * 2 + spindle_term.value)
    floor = Term(
        label="(cores x 2) + spindles",
        value=value,
        source=Source(default="rule of thumb, a floor to measure from"),
    )
    arithmetic = f"(cores x 2) + spindles = {core_term.show()} x 2 + {spindle_term.show()}"
    return floor, f"{arithmetic} = {value}"


# A sweep drives proposals only when the USL explains it: below this R² (or with fewer
# points than this) the fit is reported as unreliable and not used unless forced.
MIN_R2 = 0.8
MIN_POINTS = 5
# Throughput within this fraction of its maximum over the whole sweep: a flat curve.
FLAT_SPREAD = 0.10


class SweepTrust(BaseModel):
    """Whether a sweep's fit may drive proposals, and why not."""

    model_config = ConfigDict(extra="forbid")

    usable: bool
    flat: bool = False
    reason: str = ""


def judge_sweep(sweep: Sweep, fit: USLFit | None, *, min_r2: float = MIN_R2,
                min_points: int = MIN_POINTS) -> SweepTrust:
    """Too few points, a poor fit or a flat curve: said, so nobody sizes from noise."""
    counts = {p.n for p in sweep.points}
    if len(counts) < min_points:
        return SweepTrust(usable=False, reason=(
            f"{len(counts)} distinct connection counts measured, fewer than {min_points}: "
            "too few to trust a three-parameter fit"))
    tps = [p.throughput for p in sweep.points]
    if max(tps) > 0 and (max(tps) - min(tps)) / max(tps) <= FLAT_SPREAD:
        return SweepTrust(usable=True, flat=True, reason=(
            f"flat: throughput stays within {FLAT_SPREAD:.0%} ({min(tps):,.0f} to "
            f"{max(tps):,.0f}/s) from {_n(min(counts))} to {_n(max(counts))} connections; "
            "more connections buy nothing here, and the sweep shows no knee"))
    if fit is not None and (fit.r2 is None or fit.r2 < min_r2):
        r2 = "n/a" if fit.r2 is None else f"{fit.r2:.2f}"
        return SweepTrust(usable=False, reason=(
            f"the USL explains this sweep poorly (R² {r2} < {min_r2}): noisy steps, too "
            "short a step, or a bottleneck outside the server"))
    return SweepTrust(usable=True)


def recommend_active_connections(
    cores: float | Term | None,
    spindles: float | Term = 1,
    sweep: Sweep | None = None,
    *,
    p99_tolerance: float = 2.0,
    min_gain: float = 0.25,
    min_r2: float = MIN_R2,
    force: bool = False,
) -> Recommendation:
    """Target for concurrently active server connections.

    Without a sweep: (cores x 2) + spindles, stated as a floor to measure from. With a
    sweep: the USL fit's N*, never above the measured throughput peak (past it the
    sweep shows throughput falling), and stepped down where a measured step multiplies
    p99 by more than `p99_tolerance` for less than `min_gain` more throughput.
    """
    if cores is None:
        floor, floor_value = None, 0
        floor_arithmetic = (
            "(cores x 2) + spindles: unknown, the server's CPU count is not in the repository "
            "(set a CPU limit or declare cpus)"
        )
    else:
        floor, floor_arithmetic = sizing_floor(cores, spindles)
        floor_value = int(floor.value)
    if floor is None and (sweep is None or len(sweep.points) < 3):
        return Recommendation(
            active_connections=0,
            basis="unknown",
            floor=None,
            reasons=[
                floor_arithmetic
                + ". Measurement decides: run `pool-advisor sweep` or pass a sweep CSV."
            ],
        )
    if sweep is None or len(sweep.points) < 3:
        assert floor is not None
        reasons = [
            f"{floor_arithmetic}: a floor to start measuring from, not an answer. "
            "Measurement decides: on a 4-core server this rule gives 9 while the measured "
            "optimum was 48 (USL N* = 45.1). Run `pool-advisor sweep` or pass a sweep CSV.",
        ]
        return Recommendation(
            active_connections=max(floor_value, 1),
            basis="floor: (cores x 2) + spindles",
            floor=floor,
            terms=[floor],
            reasons=reasons,
        )

    where = sweep.source.label()
    try:
        fit: USLFit | None = fit_usl(sweep.points)
    except FitError as exc:
        fit, failed = None, str(exc)
    else:
        failed = ""
    trust = judge_sweep(sweep, fit, min_r2=min_r2) if not failed else SweepTrust(
        usable=False, reason=f"no USL fit: {failed}")
    if trust.flat:
        return _flat(sweep, floor, floor_arithmetic, trust, fit)
    if not trust.usable and not force:
        return _untrusted(floor, floor_arithmetic, where, trust)
    reasons: list[str] = []
    if not trust.usable:
        reasons.append(f"--force: {where} used although {trust.reason}.")
    if fit is None:
        return _untrusted(floor, floor_arithmetic, where, trust)
    terms: list[Term] = [floor] if floor is not None else []
    peak = max(sweep.points, key=lambda p: p.throughput)
    n_star = fit.n_star
    r2 = f"{fit.r2:.3f}" if fit.r2 is not None else "n/a"
    if n_star is None:
        target = peak.n
        basis = "measured peak"
        reasons.append(
            f"USL fit of {where} (lambda={fit.lambda_:.4g}, sigma={fit.sigma:.4g}, "
            f"kappa={fit.kappa:.3g}, R²={r2}) has no peak: throughput still rises at the "
            f"largest count measured; the best measured point is {_n(peak.n)} connections."
        )
    else:
        target = n_star
        basis = "USL fit"
        terms.append(Term(label="USL N*", value=round(n_star, 1), source=sweep.source))
        reasons.append(
            f"USL fit of {where}: lambda={fit.lambda_:.4g}, sigma={fit.sigma:.4g}, "
            f"kappa={fit.kappa:.3g}, R²={r2}; N* = sqrt((1 - sigma) / kappa) = {n_star:.1f}."
        )
        if n_star > peak.n:
            target = peak.n
            basis = "measured peak"
            reasons.append(
                f"N* {n_star:.1f} is above the measured throughput peak at {_n(peak.n)} "
                f"({peak.throughput:,.0f}/s): capped there, the sweep shows no gain beyond it."
            )
    chosen = _latency_bounded(sweep.points, target, p99_tolerance, min_gain, reasons)
    if chosen < target:
        basis = "measured p99 knee"
    active = max(math.floor(chosen), 1)
    if floor is not None and active < floor.value:
        reasons.append(f"{_n(active)} from the sweep is below the floor, {floor_arithmetic}: "
                       "the floor is kept.")
        active = int(floor.value)
    terms.append(Term(label="recommended active connections", value=active, source=sweep.source))
    alternative = _lower_latency_alternative(sweep.points, active)
    reasons.append(f"Floor for comparison: {floor_arithmetic}; the measurement overrides it.")
    return Recommendation(
        active_connections=active,
        basis=basis,
        floor=floor,
        terms=terms,
        fit=fit,
        reasons=reasons,
        alternative=alternative,
    )


def _untrusted(floor: Term | None, floor_arithmetic: str, where: str,
               trust: SweepTrust) -> Recommendation:
    """The sweep is not used: the floor stands, or nothing when cores are unknown."""
    why = (f"Sweep {where} not used: {trust.reason}. Pass --force to use it anyway, or "
           "measure again (longer steps, more points).")
    if floor is None:
        return Recommendation(active_connections=0, basis="unknown", floor=None,
                              reasons=[why, floor_arithmetic + "."])
    return Recommendation(active_connections=max(int(floor.value), 1),
                          basis="floor: (cores x 2) + spindles", floor=floor, terms=[floor],
                          reasons=[why, f"{floor_arithmetic}: a floor to start measuring "
                                   "from, not an answer."])


def _flat(sweep: Sweep, floor: Term | None, floor_arithmetic: str, trust: SweepTrust,
          fit: USLFit | None) -> Recommendation:
    """A flat sweep: the fewest connections that reach the plateau (95% of the best
    measured throughput), never below the floor."""
    best = max(p.throughput for p in sweep.points)
    fewest = min((p for p in sweep.points if p.throughput >= 0.95 * best), key=lambda p: p.n)
    active = max(math.floor(fewest.n), 1)
    reasons = [f"Sweep {sweep.source.label()}: {trust.reason}. The fewest connections "
               f"that reach 95% of the best throughput: {_n(fewest.n)}."]
    if floor is not None and active < floor.value:
        reasons.append(f"Below the floor, {floor_arithmetic}: the floor is kept.")
        active = int(floor.value)
    terms = [floor] if floor is not None else []
    terms.append(Term(label="recommended active connections", value=active,
                      source=sweep.source))
    return Recommendation(active_connections=active, basis="flat sweep: plateau reached",
                          floor=floor, terms=terms, fit=fit, reasons=reasons)


def _latency_bounded(
    points: Sequence[SweepPoint],
    target: float,
    tolerance: float,
    min_gain: float,
    reasons: list[str],
) -> float:
    """Walk the measured points up to `target`; stop at the first step that multiplies
    p99 by more than `tolerance` while adding less than `min_gain` throughput.

    Single noisy points do not stop the walk: a step that does not raise throughput is
    no candidate either way, and a step that raises it a lot is worth some latency."""
    with_p99 = sorted((p for p in points if p.p99_ms is not None), key=lambda p: p.n)
    accepted: SweepPoint | None = None
    for p in with_p99:
        assert p.p99_ms is not None
        if p.n > target:
            break
        if accepted is None:
            accepted = p
            continue
        assert accepted.p99_ms is not None
        if p.throughput <= accepted.throughput:
            continue
        gain = p.throughput / accepted.throughput - 1 if accepted.throughput else math.inf
        if p.p99_ms > tolerance * accepted.p99_ms and gain < min_gain:
            reasons.append(
                f"p99 at {_n(p.n)} connections is {p.p99_ms:g} ms, more than {tolerance:g}x "
                f"the {accepted.p99_ms:g} ms at {_n(accepted.n)}, for only {gain:+.0%} "
                f"throughput: stepped down to {_n(accepted.n)}."
            )
            return accepted.n
        accepted = p
    # Measured points may straddle a fitted N*: keep N* (it is <= the measured peak).
    return target


def _lower_latency_alternative(points: Sequence[SweepPoint], active: int) -> str | None:
    """A measured point below the recommendation with most of its throughput at a clearly
    lower p99 (the recommendation is compared with the nearest measured point at or above
    it, since a fitted N* usually falls between steps)."""
    measured = sorted((p for p in points if p.p99_ms is not None), key=lambda p: p.n)
    at = next((p for p in measured if p.n >= active), None)
    below = [p for p in measured if p.n < active]
    if at is None or not below:
        return None
    best = max(below, key=lambda p: p.throughput)
    assert best.p99_ms is not None and at.p99_ms is not None
    if best.p99_ms >= at.p99_ms * 0.8:
        return None
    share = best.throughput / at.throughput if at.throughput else 0
    return (
        f"{_n(best.n)} connections gave {share:.0%} of the throughput measured at {_n(at.n)} "
        f"with p99 {best.p99_ms:g} ms instead of {at.p99_ms:g} ms; prefer it when tail "
        "latency matters more than the last few percent of throughput."
    )


def _as_term(value: float | Term, label: str, default: str) -> Term:
    if isinstance(value, Term):
        return value
    return Term(label=label, value=float(value), source=Source(default=default))


def _n(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
