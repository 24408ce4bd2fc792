"""Issue 15's targets on the labelled corpus (tests/hazard_corpus, bench/hazards.py):
at least 300 labelled sites, precision >= 95% and recall >= 85% overall, no rule below
85% precision."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("pglast")

BENCH = Path(__file__).resolve().parents[1] / "bench" / "hazards.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_hazards", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_corpus_meets_the_targets() -> None:
    bench = _bench()
    result = bench.corpus_score()
    report = bench.render(result, "corpus") + "\n" + "\n".join(result.misses + result.alarms)
    assert result.sites >= 300, report
    overall = result.overall
    assert overall.precision >= 0.95, report
    assert overall.recall >= 0.85, report
    for code, matrix in result.rules.items():
        if matrix.tp + matrix.fp:
            assert matrix.precision >= 0.85, f"{code}\n{report}"


def test_scoring_counts_unlabelled_findings_and_misses() -> None:
    bench = _bench()
    labels = {
        ("a.sql", 1): ("expect", "PA401", "SET"),
        ("a.sql", 2): ("safe", "PA401", "SET LOCAL"),
        ("a.sql", 3): ("expect", "PA402", "LISTEN"),
    }
    found = {("PA401", "a.sql", 1), ("PA401", "a.sql", 2), ("PA403", "a.sql", 9)}
    result = bench.score(found, labels)
    assert (result.rules["PA401"].tp, result.rules["PA401"].fp) == (1, 1)
    assert result.rules["PA402"].fn == 1
    assert result.rules["PA403"].fp == 1  # a finding on an unlabelled line is an alarm
    assert result.overall.precision == pytest.approx(1 / 3)
