"""How many connections should be active on one server at once: the (cores x 2) +
spindles floor to measure from, and with a sweep the USL's N*, capped at the measured
peak and stepped down at a p99 knee; a sweep too short, too noisy or flat is said to be
so rather than sized from."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from advisor.live.usl import FitError, Sweep, SweepPoint, USLFit, fit_usl
from advisor.model import Source, Term


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
