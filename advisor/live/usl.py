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

import math
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from advisor.model import Source


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
