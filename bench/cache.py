"""The parse cache on a large repository: `check` cold, warm and warm after one change.

    python bench/cache.py [--manifests 5000] [--runs 3] [--stages] [--kustomize]
                          [--instructions]

Generates bench/scale.py's tree of N manifests in a temporary git repository (nothing
is committed) and times `pool-advisor check TREE --format json` in a fresh interpreter
(as pre-commit runs it), medians of --runs:
- no-cache: --no-cache (every file parsed, nothing written);
- cold: an empty .pool-advisor-cache (every file parsed, the cache written);
- warm-unchanged: the cache as the cold run left it;
- warm-one-changed: one application's pool size edited before each run (the pre-commit
  case: one file changed, the whole repository's answer, which the edit must change;
  its HPA would override a replicas edit);
- pre-commit-one-changed: the same edit, then exactly what the pre-commit hook runs
  (.pre-commit-hooks.yaml): `check --changed-files FILE` from the repository root, text
  output.
With --kustomize each namespace folder is a kustomization listing its files (built by
kustomize, one build per namespace, as a kustomize or Flux repository is): the warm rows
then read the builds from the cache, and the one-changed rows build one namespace again.
Each warm-one-changed answer is checked against --no-cache's. Target: both one-changed
rows <= 0.5 s wall (PASS/MISS). --stages then times the stages of
one warm-one-changed run in-process (import, discover, reading, cache, linking, rules,
report; wall and CPU seconds), to say where the rest goes. --instructions adds the
instruction count of one more warm-one-changed and one more pre-commit-one-changed run
(after the timed ones, the same edit) under valgrind's callgrind: the figure machine
load does not move (reference, 5,000 manifests, check --format json: ~2,777 M before
issue 19's linking work).

The generated files' mtimes are set an hour back, as a repository's files are: the
cache knows a file by its stat only when its mtime and ctime are older than the run's
start by RACY_NS (advisor/read/cache.py trusted()); the runs start once that has passed
since the files were written (ctime cannot be set back).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from scale import REPO, compile_sources, generate_manifests, timed
from startup import count_instructions

from advisor.read.cache import RACY_NS

TARGET_S = 0.5
EDITED = "team-000/svc-001/configmap.yaml"  # relative to the tree, as pre-commit passes it

STAGES = r"""
import gc, sys, time
gc.disable()  # as advisor.cli.main does for a check
def now():
    return time.perf_counter(), time.process_time()
t0 = now()
import advisor.engine.check as E, advisor.engine.options as O, advisor.engine.repository as R
import advisor.link.topology as T
import advisor.read.discover as D, advisor.read.fs as F
import advisor.read.cache as C
from advisor.rules import load_rules
from advisor.report import json as J
def since(start):
    end = now()
    return end[0] - start[0], end[1] - start[1]
marks = {"import": since(t0)}
def add(label, spent):
    old = marks.get(label, (0.0, 0.0))
    marks[label] = (old[0] + spent[0], old[1] + spent[1])
def wrap(mod, name, label):
    real = getattr(mod, name)
    def timed(*a, **k):
        s = now()
        try:
            return real(*a, **k)
        finally:
            add(label, since(s))
    setattr(mod, name, timed)
wrap(D, "discover_paths", "discover")
wrap(F.Root, "read_text", "read files")
wrap(F.Root, "regular", "stat files")
wrap(R, "_unchanged_manifest", "manifests known by stat")
wrap(R, "_manifest", "manifests (cache or parse)")
wrap(C.FileCache, "open", "cache open")
wrap(C.FileCache, "save", "cache save")
wrap(T, "build_topology", "linking (build_topology)")
wrap(R, "_sql", "SQL scan")
wrap(E, "evaluate", "budgets + rules (evaluate)")
reg = load_rules()
s = now()
result = E.run_check([sys.argv[1]], O.CheckOptions(cache=True), reg)
add("run_check", since(s))
s = now()
J.render(result, reg)
add("JSON report", since(s))
print(f"  {'stage':<30}{'wall s':>8}{'cpu s':>8}")
for k, (wall, cpu) in marks.items():
    print(f"  {k:<30}{wall:8.3f}{cpu:8.3f}")
"""


def check_cmd(tree: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "advisor", "check", str(tree), "--format", "json", *extra]


def precommit_cmd(*extra: str) -> list[str]:
    """The hook's entry, `pool-advisor check --changed-files`, with the file it passes."""
    return [sys.executable, "-m", "advisor", "check", "--changed-files", EDITED, *extra]


def run(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, str]:
    wall, cpu, _rss, proc = timed(cmd, cwd)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"check failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return wall, cpu, proc.stdout


def edit_one(tree: Path, step: int) -> None:
    """One application's pool size changed (its HPA overrides replicas, so editing those
    would leave the answer as it was): the budget the warm run must give changes."""
    target = tree / EDITED
    text = target.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE:"):
            lines[i] = f'  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "{20 + step % 5}"\n'
    target.write_text("".join(lines), encoding="utf-8")


def age_files(tree: Path, seconds: int = 3600) -> None:
    """Every file's mtime `seconds` back (a checkout's files are not all just written),
    then wait until their ctime (now: utime sets it) is older than the cache's racy
    window, so the first cached run can know them by their stat."""
    back = time.time() - seconds
    for path in tree.rglob("*"):
        if path.is_file():
            os.utime(path, (back, back))
    time.sleep(RACY_NS / 1e9 + 0.1)


def kustomize_namespaces(tree: Path) -> int:
    """A kustomization.yaml in each namespace folder listing its manifests; how many."""
    count = 0
    for ns in sorted(p for p in tree.iterdir() if p.is_dir() and p.name.startswith("team-")):
        files = sorted(f.relative_to(ns).as_posix() for f in ns.rglob("*.yaml"))
        (ns / "kustomization.yaml").write_text(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
            + "".join(f"  - {f}\n" for f in files), encoding="utf-8")
        count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--manifests", type=int, default=5000)
    parser.add_argument("--kustomize", action="store_true",
                        help="each namespace folder a kustomization (see above)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stages", action="store_true")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the one-changed runs' instructions with valgrind's "
                        "callgrind (one run each, after the timed ones)")
    args = parser.parse_args()
    compile_sources()
    tmp = Path(tempfile.mkdtemp(prefix="pool-advisor-cache-"))
    tree = tmp / "repo"
    try:
        generate_manifests(tree, args.manifests)
        builds = kustomize_namespaces(tree) if args.kustomize else 0
        (tree / ".git").mkdir()  # the repository root: where the cache folder goes
        age_files(tree)
        rows: dict[str, list[tuple[float, float]]] = {}
        outputs: dict[str, str] = {}
        load_before = os.getloadavg()[0]
        for i in range(args.runs):
            w, c, outputs["no-cache"] = run(check_cmd(tree, "--no-cache"))
            rows.setdefault("no-cache", []).append((w, c))
            shutil.rmtree(tree / ".pool-advisor-cache", ignore_errors=True)
            w, c, outputs["cold"] = run(check_cmd(tree))
            rows.setdefault("cold", []).append((w, c))
            w, c, outputs["warm-unchanged"] = run(check_cmd(tree))
            rows.setdefault("warm-unchanged", []).append((w, c))
            edit_one(tree, i + 1)
            w, c, changed = run(check_cmd(tree))
            rows.setdefault("warm-one-changed", []).append((w, c))
            if changed == outputs["warm-unchanged"]:
                raise SystemExit("the edit did not change the answer: the bench proves nothing")
            if changed != run(check_cmd(tree, "--no-cache"))[2]:
                raise SystemExit("warm-one-changed output differs from --no-cache")
            edit_one(tree, i + 3)
            w, c, hook = run(precommit_cmd(), cwd=tree)
            rows.setdefault("pre-commit-one-changed", []).append((w, c))
            if hook != run(precommit_cmd("--no-cache"), cwd=tree)[2]:
                raise SystemExit("pre-commit-one-changed output differs from --no-cache")
        if len({outputs["no-cache"], outputs["cold"], outputs["warm-unchanged"]}) != 1:
            raise SystemExit("cold, warm and --no-cache outputs differ")
        instructions: dict[str, int | None] = {}
        if args.instructions:
            # the cache as the timed runs left it (warm), then the same edits as theirs
            edit_one(tree, args.runs + 1)
            instructions["warm-one-changed"] = count_instructions(check_cmd(tree))
            edit_one(tree, args.runs + 3)
            instructions["pre-commit-one-changed"] = count_instructions(precommit_cmd(),
                                                                        cwd=tree)
        print(f"{args.manifests} manifests"
              + (f" in {builds} kustomize builds" if args.kustomize else "")
              + f", medians of {args.runs} runs, load average "
              f"{load_before:.1f} -> {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
        print(f"{'run':<24}{'wall s':>8}{'cpu s':>8}"
              + (f"{'M instr':>10}" if instructions else ""))
        for label, values in rows.items():
            wall = statistics.median(v[0] for v in values)
            cpu = statistics.median(v[1] for v in values)
            verdict = ""
            if label.endswith("one-changed"):
                verdict = f"   {'PASS' if wall <= TARGET_S else 'MISS'} (target <= {TARGET_S} s)"
            count = instructions.get(label)
            counted = "" if not instructions else \
                f"{count / 1e6:>10.1f}" if count else f"{'-':>10}"
            print(f"{label:<24}{wall:>8.2f}{cpu:>8.2f}{counted}{verdict}")
        if args.stages:
            edit_one(tree, 0)
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", STAGES, str(tree)], text=True,
                                  capture_output=True, check=False,
                                  env={**os.environ, "PYTHONPATH": str(REPO)})
            print(f"stages of one warm-one-changed run (in-process, "
                  f"{time.perf_counter() - start:.2f} s wall with the interpreter):")
            print(proc.stdout.rstrip() or proc.stderr[-2000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
