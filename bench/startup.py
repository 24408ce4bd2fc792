"""Startup and demo wall time, next to importing pydantic + ruamel.yaml in the same run.

    python bench/startup.py [--runs N]

Each figure is the median of N fresh interpreter runs (subprocess), so imports are
cold in the Python sense (the OS page cache is warm, as it is on a developer machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def wall(cmd: list[str], runs: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def heavy_modules_on_check_path() -> list[str]:
    code = ("import sys, runpy; sys.argv=['pool-advisor','check','fixtures/acme-shop'];\n"
            "try:\n    runpy.run_module('advisor', run_name='__main__')\n"
            "except SystemExit: pass\n"
            "heavy=[m for m in ('kubernetes','pglast','helm','helm_sdk','numpy','psycopg',"
            "'matplotlib') if m in sys.modules]\n"
            "print('HEAVY='+','.join(heavy))")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                         capture_output=True, text=True, check=False).stdout
    line = next((x for x in out.splitlines() if x.startswith("HEAVY=")), "HEAVY=")
    return [m for m in line[6:].split(",") if m]


def compile_sources() -> None:
    """Write bytecode first: an installed package has it (pip compiles on install), and a
    bench that recompiles every module on every run (PYTHONDONTWRITEBYTECODE=1) would
    measure the compiler, not pool-advisor."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "advisor")],
                   check=True, env={k: v for k, v in os.environ.items()
                                    if k != "PYTHONDONTWRITEBYTECODE"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    compile_sources()
    py = sys.executable
    figures = {
        "python -c 'import pydantic, ruamel.yaml'": wall(
            [py, "-c", "import pydantic, ruamel.yaml"], args.runs),
        "pool-advisor --version": wall([py, "-m", "advisor", "--version"], args.runs),
        "pool-advisor check fixtures/acme-shop": wall(
            [py, "-m", "advisor", "check", "fixtures/acme-shop"], args.runs),
    }
    baseline = figures["python -c 'import pydantic, ruamel.yaml'"]
    check = figures["pool-advisor check fixtures/acme-shop"]
    heavy = heavy_modules_on_check_path()
    report = {"runs": args.runs, "seconds": figures, "check_vs_import_ratio": check / baseline,
              "heavy_modules_imported_by_check": heavy}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, secs in figures.items():
        print(f"{secs * 1000:8.1f} ms  {name}")
    print(f"check / import ratio: {check / baseline:.2f} (target <= 1.5)")
    print(f"heavy modules on the check path: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
