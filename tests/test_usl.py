from __future__ import annotations

import json
import math

import pytest

from advisor.live.sizing import recommend_active_connections
from advisor.live.sweep_table import parse_sweep, read_sweep
from advisor.live.usl import (
    FitError,
    SweepPoint,
    USLFit,
    fit_usl,
    usl,
)
from advisor.read.fs import InputError
from tests.shared_data import shared_file


def test_published_parameters_give_n_star_45_1():
    data = json.loads(shared_file("usl-pgbench-4core.json").read_text())
    fit = data["fit"]
    model = USLFit(**{"lambda": fit["lambda"], "sigma": fit["sigma"], "kappa": fit["kappa"]})
    assert model.n_star is not None
    assert round(model.n_star, 1) == fit["n_star"] == 45.1
    # The published curve peaks near the measured optimum of 48 clients.
    assert model.throughput(45) > model.throughput(20)
    assert model.throughput(45) > model.throughput(100)


def test_fit_recovers_known_parameters():
    pts = [(n, usl(n, 1952, 0.0739, 0.000456)) for n in (1, 2, 4, 8, 16, 32, 48, 64, 128, 400)]
    fit = fit_usl(pts)
    assert fit.lambda_ == pytest.approx(1952, rel=1e-4)
    assert fit.sigma == pytest.approx(0.0739, rel=1e-3)
    assert fit.kappa == pytest.approx(0.000456, rel=1e-3)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.n_star == pytest.approx(45.07, abs=0.01)


def test_fit_with_noise_and_no_point_at_one():
    noise = [1.03, 0.97, 1.02, 0.99, 1.01, 0.98, 1.02, 0.97]
    ns = [2, 5, 10, 20, 40, 80, 160, 320]
    pts = [(n, usl(n, 900, 0.05, 0.0002) * e) for n, e in zip(ns, noise, strict=True)]
    fit = fit_usl(pts)
    assert fit.r2 is not None and fit.r2 > 0.97
    assert fit.n_star is not None
    assert 50 < fit.n_star < 90  # true N* = sqrt(0.95/0.0002) = 68.9


def test_sweep_tsv_fit():
    sweep = read_sweep(shared_file("pool-sweep-1-256.tsv"))
    assert [p.n for p in sweep.points] == [1, 2, 4, 8, 16, 32, 64, 128, 200]
    fit = fit_usl(sweep.points)
    assert fit.n_star is not None and 64 <= fit.n_star <= 256
    assert fit.r2 is not None and fit.r2 > 0.9
    assert fit.sigma < 0  # super-linear start: the fit must be allowed to say so


def test_advice_for_the_sweep_never_exceeds_128():
    sweep = read_sweep(shared_file("pool-sweep-1-256.tsv"))
    rec = recommend_active_connections(2, 1, sweep)
    assert 64 <= rec.active_connections <= 128
    assert rec.fit is not None
    assert "N*" in rec.explain()
    # The lower-latency alternative at 64 is offered with its evidence.
    assert rec.alternative is not None and "64 connections" in rec.alternative


def test_advice_is_capped_at_the_measured_peak():
    # Measured points stop rising at 32, but a fit through them places N* far beyond.
    pts = [
        SweepPoint(n=1, throughput=100, p99_ms=10),
        SweepPoint(n=4, throughput=390, p99_ms=10),
        SweepPoint(n=8, throughput=760, p99_ms=11),
        SweepPoint(n=16, throughput=1450, p99_ms=12),
        SweepPoint(n=32, throughput=2700, p99_ms=13),
    ]
    from advisor.live.usl import Sweep

    rec = recommend_active_connections(4, 1, Sweep(points=pts))
    assert rec.active_connections <= 32
    assert rec.basis == "measured peak"


def test_advice_steps_down_when_p99_degrades():
    pts = [
        SweepPoint(n=n, throughput=usl(n, 1000, 0.02, 0.0001), p99_ms=p99)
        for n, p99 in ((1, 2.0), (10, 2.2), (40, 2.5), (80, 9.0), (160, 30.0))
    ]
    from advisor.live.usl import Sweep

    rec = recommend_active_connections(4, 1, Sweep(points=pts))
    # N* = 99 but p99 at 80 is 3.6x the best before it.
    assert rec.active_connections == 40
    assert rec.basis == "measured p99 knee"


def test_floor_without_sweep_is_stated_as_a_floor():
    rec = recommend_active_connections(4, 1)
    assert rec.active_connections == 9
    assert "floor" in rec.explain() and "Measurement decides" in rec.explain()
    assert recommend_active_connections(2.5, 0).active_connections == 5


def test_fit_needs_three_points():
    with pytest.raises(FitError):
        fit_usl([(1, 10), (2, 19)])


def test_bad_sweep_table_reports_line(tmp_path):
    with pytest.raises(InputError) as exc:
        parse_sweep("clients,tps\n1,100\n2,abc\n", "s.csv")
    assert exc.value.line == 3 and "abc" in exc.value.message
    with pytest.raises(InputError) as exc:
        parse_sweep("# c\nfoo,bar\n1,2\n", "s.csv")
    assert exc.value.line == 2
    with pytest.raises(InputError):
        read_sweep(tmp_path / "missing.csv")


def test_no_peak_when_kappa_zero():
    fit = fit_usl([(n, 100 * n / (1 + 0.1 * (n - 1))) for n in (1, 2, 4, 8, 16)])
    assert fit.kappa == pytest.approx(0, abs=1e-9) or fit.n_star is None or fit.n_star > 1000
    assert math.isfinite(fit.lambda_)


def test_unknown_cores_without_sweep_says_so():
    rec = recommend_active_connections(None, 1)
    assert rec.floor is None and rec.active_connections == 0
    assert "unknown" in rec.explain() and "Measurement decides" in rec.explain()


def test_unknown_cores_with_sweep_uses_the_fit():
    sweep = read_sweep(shared_file("pool-sweep-1-256.tsv"))
    rec = recommend_active_connections(None, 1, sweep)
    assert rec.fit is not None and 64 <= rec.active_connections <= 128


def test_one_noisy_point_does_not_stop_the_walk():
    from advisor.live.usl import Sweep

    # Measured here: pgbench -S on 2 CPUs; the 4-client step was an outlier.
    rows = [(1, 6947.6, 3.78), (2, 18411.7, 1.82), (4, 10319.6, 6.64), (8, 24289.6, 4.75),
            (16, 25622.7, 4.51), (32, 22042.2, 9.01)]
    pts = [SweepPoint(n=n, throughput=x, p99_ms=p) for n, x, p in rows]
    # R² 0.66: below 0.8 the fit is not trusted, and the floor stands unless forced
    rec = recommend_active_connections(2, 1, Sweep(points=pts))
    assert rec.active_connections == 5 and rec.basis.startswith("floor")
    assert "R² 0.66 < 0.8" in rec.reasons[0] and "--force" in rec.reasons[0]
    rec = recommend_active_connections(2, 1, Sweep(points=pts), force=True)
    assert rec.reasons[0].startswith("--force:")
    assert rec.active_connections == 16  # N* 17.6, capped at the measured peak


def _sweep(rows):
    from advisor.live.usl import Sweep

    return Sweep(points=[SweepPoint(n=n, throughput=x) for n, x in rows])


def test_too_few_points_are_not_trusted():
    rec = recommend_active_connections(4, 1, _sweep([(1, 100), (8, 700), (64, 300)]))
    assert rec.basis.startswith("floor") and rec.active_connections == 9
    assert "3 distinct connection counts measured, fewer than 5" in rec.reasons[0]


def test_degenerate_sweeps_are_messages_not_tracebacks():
    zero = recommend_active_connections(4, 1, _sweep([(n, 0) for n in (1, 2, 4, 8, 16)]))
    assert zero.active_connections == 9 and "every throughput in the sweep is zero" \
        in zero.reasons[0]
    one_n = recommend_active_connections(None, 1, _sweep([(8, 100 + i) for i in range(6)]))
    assert one_n.active_connections == 0
    assert "3 or more distinct connection counts" in one_n.reasons[0]


def test_flat_sweep_is_reported_flat():
    rows = [(1, 1000), (2, 1040), (4, 1010), (8, 1050), (16, 1020), (32, 1000)]
    rec = recommend_active_connections(2, 1, _sweep(rows))
    assert rec.basis == "flat sweep: plateau reached"
    assert "flat: throughput stays within 10%" in rec.reasons[0]
    # 95% of the best (1050) is 997.5: one connection already reaches it; floor 5 kept
    assert rec.active_connections == 5


def test_recommendation_never_below_the_floor():
    # a clean USL curve peaking near 3 connections on a 16-core server
    from advisor.live.usl import usl

    rows = [(n, usl(n, 1000, 0.3, 0.08)) for n in (1, 2, 3, 4, 6, 8, 12)]
    rec = recommend_active_connections(16, 1, _sweep(rows))
    assert rec.fit is not None and rec.fit.n_star < 4
    assert rec.active_connections == 33  # (16 x 2) + 1
    assert any("below the floor" in r for r in rec.reasons)
