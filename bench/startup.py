"""Startup and demo wall time, next to importing pydantic + ruamel.yaml in the same run.

Target (issue 19): `check fixtures/acme-shop` <= 1.3x the floor (import msgspec, yaml)
by instruction count; printed as PASS or MISS with --instructions.

    python bench/startup.py [--runs N] [--json] [--instructions]

Each figure is the median of N fresh interpreter runs (subprocess), so imports are
cold in the Python sense (the OS page cache is warm, as it is on a developer machine).
The three commands run interleaved (A, B, C, A, B, C, ...) so machine load hits them
alike; CPU time (user+sys of the child) is reported next to wall time because load
inflates wall time far more than CPU time. The load average is printed with the figures.
On a shared machine the ratio still moves by +-0.1 from run to run; --instructions adds
each command's instruction count under valgrind's callgrind, which does not move.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


# What the check path cannot do without: the record classes' library and the YAML
# parser (pydantic and ruamel.yaml are not imported on that path, nor typer since a plain
# check command line is parsed without it: advisor.cli.quick).
FLOOR_NAME = "floor: import msgspec, yaml"
FLOOR_CODE = "import msgspec, yaml"


# Issue 19: the demo's check within 1.3x of the floor, by instruction count (callgrind),
# the figure machine load does not move.
FLOOR_TARGET = 1.3


def floor_verdict(check: int | None, floor: int | None) -> str:
    """The target line: the check's instructions over the floor's, PASS or MISS."""
    if not check or not floor:
        return (f"check / floor: target <= {FLOOR_TARGET:.2f} by instruction count; "
                "not measured (run with --instructions, needs valgrind)")
    ratio = check / floor
    verdict = "PASS" if ratio <= FLOOR_TARGET else "MISS"
    return (f"check / floor: {ratio:.3f} instructions (target <= {FLOOR_TARGET:.2f}) {verdict}")


def interleaved(cmds: dict[str, list[str]], runs: int) -> dict[str, dict[str, float]]:
    """Median wall and CPU seconds of each command over `runs` interleaved rounds."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    cpus: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            walls[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append(after.ru_utime - before.ru_utime
                              + after.ru_stime - before.ru_stime)
    return {name: {"wall": statistics.median(walls[name]), "cpu": statistics.median(cpus[name])}
            for name in cmds}


def heavy_modules_on_check_path() -> list[str]:
    code = ("import sys, runpy; sys.argv=['pool-advisor','check','fixtures/acme-shop'];\n"
            "try:\n    runpy.run_module('advisor', run_name='__main__')\n"
            "except SystemExit: pass\n"
            "heavy=[m for m in ('kubernetes','pglast','helm_python','numpy','psycopg',"
            "'matplotlib','pydantic') if m in sys.modules]\n"
            "print('HEAVY='+','.join(heavy))")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                         capture_output=True, text=True, check=False).stdout
    line = next((x for x in out.splitlines() if x.startswith("HEAVY=")), "HEAVY=")
    return [m for m in line[6:].split(",") if m]


def count_instructions(cmd: list[str], cwd: Path | None = None) -> int | None:
    """Instructions one run executes, by valgrind --tool=callgrind (None without it)."""
    import re
    import shutil
    import tempfile

    if shutil.which("valgrind") is None:
        return None
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(["valgrind", "--tool=callgrind",
                               f"--callgrind-out-file={tmp}/out", *cmd], cwd=cwd or REPO,
                              env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              check=False)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    return int(found.group(1)) if found else None


def standalone_demo_instructions() -> int | None:
    """Instructions of `check acme-shop` in a temporary folder holding only a copy of
    the demo (after one run that writes its cache, as the timed runs leave one)."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(REPO / "fixtures" / "acme-shop", Path(tmp) / "acme-shop")
        cmd = [sys.executable, "-m", "advisor", "check", "acme-shop"]
        env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
        subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        return count_instructions(cmd, cwd=Path(tmp))


def compile_sources() -> None:
    """Write bytecode first: an installed package has it (pip compiles on install), and a
    bench that recompiles every module on every run (PYTHONDONTWRITEBYTECODE=1) would
    measure the compiler, not pool-advisor."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "advisor")],
                   check=True, env={k: v for k, v in os.environ.items()
                                    if k != "PYTHONDONTWRITEBYTECODE"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions with valgrind's callgrind (one run "
                        "each): repeatable where wall time on a shared machine is not")
    args = parser.parse_args()
    compile_sources()
    py = sys.executable
    baseline_name = "python -c 'import pydantic, ruamel.yaml'"
    check_name = "pool-advisor check fixtures/acme-shop"
    load_before = os.getloadavg()[0]
    commands = {
        baseline_name: [py, "-c", "import pydantic, ruamel.yaml"],
        "pool-advisor --version": [py, "-m", "advisor", "--version"],
        FLOOR_NAME: [py, "-c", FLOOR_CODE],
        check_name: [py, "-m", "advisor", "check", "fixtures/acme-shop"],
    }
    measured = interleaved(commands, args.runs)
    load_after = os.getloadavg()[0]
    figures = {name: m["wall"] for name, m in measured.items()}
    cpu = {name: m["cpu"] for name, m in measured.items()}
    ratio = figures[check_name] / figures[baseline_name]
    cpu_ratio = cpu[check_name] / cpu[baseline_name]
    heavy = heavy_modules_on_check_path()
    instructions = {}
    if args.instructions:
        instructions = {name: count_instructions(cmd) for name, cmd in commands.items()}
    floor_ratio = (instructions[check_name] / instructions[FLOOR_NAME]
                   if instructions.get(check_name) and instructions.get(FLOOR_NAME) else None)
    report = {"runs": args.runs, "check_vs_floor_instructions": floor_ratio,
              "check_vs_floor_target": FLOOR_TARGET,
              "check_vs_floor_pass": None if floor_ratio is None else floor_ratio <= FLOOR_TARGET,
              "seconds": figures, "cpu_seconds": cpu,
              "check_vs_import_ratio": ratio, "check_vs_import_cpu_ratio": cpu_ratio,
              "floor_vs_import_ratio": figures[FLOOR_NAME] / figures[baseline_name],
              "load_average": [load_before, load_after],
              "heavy_modules_imported_by_check": heavy, "instructions": instructions}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"load average {load_before:.1f} -> {load_after:.1f}; medians of {args.runs} "
          "interleaved runs")
    for name in figures:
        print(f"{figures[name] * 1000:8.1f} ms wall {cpu[name] * 1000:8.1f} ms cpu  {name}")
    print(f"check / import ratio: {ratio:.2f} wall, {cpu_ratio:.2f} cpu (target <= 1.5)")
    print(f"floor / import ratio: {figures[FLOOR_NAME] / figures[baseline_name]:.2f} wall "
          "(the libraries the check path needs, before any pool-advisor code)")
    if instructions:
        for name, count in instructions.items():
            print(f"{count / 1e6:8.1f} M instructions  {name}")
        if instructions.get(check_name) and instructions.get(baseline_name):
            print(f"check / import ratio: "
                  f"{instructions[check_name] / instructions[baseline_name]:.2f} instructions")
    print(floor_verdict(instructions.get(check_name), instructions.get(FLOOR_NAME)))
    if instructions and instructions.get(FLOOR_NAME):
        # Inside this repository the check also walks all of it for application sources
        # (`check k8s/` looks for the code beside it): tests/realworld* and the rest. The
        # demo as a repository of its own shows what the check itself costs.
        alone = standalone_demo_instructions()
        if alone:
            print(f"{alone / 1e6:8.1f} M instructions  the demo as a repository of its own "
                  f"(a copy of fixtures/acme-shop): {alone / instructions[FLOOR_NAME]:.3f} "
                  "x the floor")
    print(f"heavy modules on the check path: {', '.join(heavy) or 'none'}")

if __name__ == "__main__":
    main()
