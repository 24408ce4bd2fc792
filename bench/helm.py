"""Helm at scale: `pool-advisor check` of a monorepo of N charts, next to rendering each
chart once with the same engine.

    python bench/helm.py [--charts 200] [--runs 3] [--json] [--keep]

The tree is bench/scale.py's chart monorepo (N copies of the `helm create` scaffold plus a
database ConfigMap, each with its own name and values, and the PostgreSQL manifests they
connect to). The floor is a fresh interpreter that loads each chart and renders it once
with helm-python-sdk in-process (default values, release "release"): what `helm template`
costs per chart with the engine pool-advisor uses. The check is the whole command
(`check TREE --format json --no-cache`, a fresh interpreter as pre-commit runs it;
without --no-cache the runs after the first would read a warm cache), so it also pays
for what is not Helm (start-up, the four PostgreSQL manifests, rules, report).

CPU seconds (user+sys of the child and of its children: the engine process) are the
figure compared; wall time is printed next to it. Target (issue 19): check <= 2.0x the
floor at 200 charts, printed as PASS or MISS. Times are medians of --runs, each check run
back to back with a floor run. Printed next to it, with no target: each chart loaded and
rendered twice in-process, the least the engine does for a traced check (the baseline
and one render with sentinels). A warm-cache row follows: the same check without --no-cache
after one run wrote the cache (every chart's render read from it, no engine started),
its answer checked against the --no-cache one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import check_cmd, compile_sources, generate_charts, timed

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's advisor, as the checks timed run it

from advisor.read.cache import CACHE_DIR  # noqa: E402

TARGET = 2.0

# Each chart loaded and rendered `sys.argv[2]` times in one interpreter. Once is the
# floor; twice (no target, printed next to it) is what a traced check cannot do with
# less: the baseline and the one render with every value replaced by a sentinel (here the
# same default values twice: the engine's cost, not ours).
RENDER_EACH = r"""
import sys
from pathlib import Path
import helm_python

n = 0
for chart_dir in sorted(Path(sys.argv[1], "charts").iterdir()):
    with helm_python.Chart.load(str(chart_dir)) as chart:
        for _ in range(int(sys.argv[2])):
            rendered = chart.render(values={}, name="release", namespace=None,
                                    is_install=True)
    n += sum(1 for text in rendered.values() if text.strip())
print(n)
"""


def render_each(tree: Path, times: int) -> tuple[float, float, int]:
    """(wall, CPU, peak RSS) of RENDER_EACH over `tree`'s charts."""
    wall, cpu, rss, proc = timed([sys.executable, "-c", RENDER_EACH, str(tree), str(times)])
    if proc.returncode != 0:
        raise SystemExit(f"rendering each chart {times}x failed:\n{proc.stderr[-2000:]}")
    return wall, cpu, rss


def measure(tree: Path, runs: int) -> dict[str, float]:
    checks, floors, twice = [], [], []
    for _ in range(runs):
        wall, cpu, rss, proc = timed(check_cmd(tree))  # --no-cache: each run renders
        if proc.returncode not in (0, 1):
            raise SystemExit(f"check failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        proc_check = proc
        checks.append((wall, cpu, rss))
        floors.append(render_each(tree, 1))
        twice.append(render_each(tree, 2))
    # Warm: the cache written by one run, then each run reads every chart from it (the
    # answer checked against the --no-cache one).
    shutil.rmtree(tree / CACHE_DIR, ignore_errors=True)
    expected = proc_check.stdout
    warms = []
    for i in range(runs + 1):
        wall, cpu, rss, proc = timed(check_cmd(tree, cache=True))
        if proc.returncode not in (0, 1) or proc.stdout != expected:
            raise SystemExit(f"check with the cache gave another answer (exit "
                             f"{proc.returncode}):\n{proc.stderr[-2000:]}")
        if i:
            warms.append((wall, cpu, rss))
    shutil.rmtree(tree / CACHE_DIR, ignore_errors=True)
    med = statistics.median
    return {"check_wall_s": med(c[0] for c in checks), "check_cpu_s": med(c[1] for c in checks),
            "floor_wall_s": med(f[0] for f in floors), "floor_cpu_s": med(f[1] for f in floors),
            "twice_wall_s": med(t[0] for t in twice), "twice_cpu_s": med(t[1] for t in twice),
            "check_peak_rss": med(c[2] for c in checks),
            "warm_wall_s": med(w[0] for w in warms), "warm_cpu_s": med(w[1] for w in warms)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--charts", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the generated tree")
    args = parser.parse_args()
    try:
        import helm_python  # noqa: F401
    except ImportError:
        raise SystemExit("helm-python-sdk is not installed (pip install -e '.[helm]')") from None
    compile_sources()
    tmp = Path(tempfile.mkdtemp(prefix="pool-advisor-helm-"))
    load_before = os.getloadavg()[0]
    try:
        tree = tmp / f"charts-{args.charts}"
        generate_charts(tree, args.charts)
        result = {"charts": args.charts, **measure(tree, args.runs)}
    finally:
        if args.keep:
            print(f"tree kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    ratio = result["check_cpu_s"] / result["floor_cpu_s"]
    result.update(ratio_cpu=ratio, ratio_wall=result["check_wall_s"] / result["floor_wall_s"],
                  target=TARGET, passed=ratio <= TARGET,
                  load_average=[load_before, os.getloadavg()[0]])
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}; medians of {args.runs} "
          "runs")
    print(f"{args.charts} charts: check {result['check_cpu_s']:.2f} s CPU "
          f"({result['check_wall_s']:.2f} s wall); render each once "
          f"{result['floor_cpu_s']:.2f} s CPU ({result['floor_wall_s']:.2f} s wall)")
    print(f"check / render-once: {ratio:.2f} CPU, {result['ratio_wall']:.2f} wall "
          f"(target <= {TARGET:.1f} CPU) {'PASS' if ratio <= TARGET else 'MISS'}")
    print(f"render each twice (load + baseline + one tracing render, the engine's part of "
          f"a traced check): {result['twice_cpu_s']:.2f} s CPU; check / render-twice: "
          f"{result['check_cpu_s'] / result['twice_cpu_s']:.2f} CPU (no target)")
    print(f"warm cache (every chart from the cache, no engine): check "
          f"{result['warm_cpu_s']:.2f} s CPU ({result['warm_wall_s']:.2f} s wall), "
          f"{result['warm_cpu_s'] / result['floor_cpu_s']:.2f}x render-once CPU")


if __name__ == "__main__":
    main()
