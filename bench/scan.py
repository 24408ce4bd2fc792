"""The SQL/app scan against its parse floor, over application source trees.

    python bench/scan.py TREE [TREE ...] [--runs 5] [--json]

For each tree, the files the check's SQL scan reads (advisor.engine.repository._sql: every
`is_sql_candidate` path outside test folders, as a check with `scan-test-code = false`
lists them) are scanned in this process with `advisor.read.sql.extract.scan_sql_sources`, and,
in the same process, the floor reads each of them once and parses it with the parser its
language has here: `ast.parse` for Python, `pglast.parse_sql` for SQL. Ruby, JS/TS, Go,
Java, Kotlin, Elixir and the settings files (database.yml, .env, ...) have no parser in
this environment: their floor is reading and decoding the file (a lower floor than a
parse, so their share of the ratio is the scanner's whole cost).

CPU seconds of this process (time.process_time), medians of --runs, the scan and the
floor alternating. Target (issue 19): scan <= 1.5x the floor over all trees, printed
as PASS or MISS. Needs pglast (pip install -e '.[sql]').

The warm column (no target) is the scan with a warm cache (advisor.read.cache, written
to a temporary folder, never into the tree): the pack opened and every file read,
hashed and taken from it, as a check's SQL step does when nothing changed.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGET = 1.5


def candidates(tree: Path) -> list[str]:
    from advisor.read.discover import SKIP_DIRS
    from advisor.read.sql.extract import is_sql_candidate, is_test_path

    found: list[str] = []
    for folder, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            rel = Path(folder, name).relative_to(tree).as_posix()
            if is_sql_candidate(rel) and not is_test_path(rel):
                found.append(rel)
    return found


def floor(tree: Path, files: list[str]) -> int:
    import pglast

    from advisor.read.sql.extract import classify

    parsed = 0
    for rel in files:
        text = (tree / rel).read_bytes().decode("utf-8", "replace")
        kind = classify(rel)
        try:
            if kind == "python":
                ast.parse(text)
                parsed += 1
            elif kind == "sql":
                pglast.parse_sql(text)
                parsed += 1
        except Exception:  # a file the parser rejects still cost its parse
            continue
    return parsed


def scan(tree: Path, files: list[str]) -> int:
    from advisor.read.fs import Root
    from advisor.read.sql.extract import scan_sql_sources

    hazards, _problems = scan_sql_sources(Root.of(tree), files)
    return len(hazards)


def warm_scan(tree: Path, files: list[str], cache_root: Path) -> int:
    from advisor.read.cache import FileCache
    from advisor.read.fs import Root
    from advisor.read.sql.extract import scan_sql_sources

    cache = FileCache.open(cache_root)
    hazards, _problems = scan_sql_sources(Root.of(tree), files, cache=cache)
    cache.save()  # nothing new after the first run: writes nothing
    return len(hazards)


def cpu(fn, *args) -> float:
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import tempfile

    import pglast  # noqa: F401  (imported before timing: neither side pays for it)

    rows = []
    for tree in args.trees:
        files = candidates(tree)
        if not files:
            continue
        scan(tree, files)  # warm: regexes compiled, modules imported, page cache
        floor(tree, files)
        with tempfile.TemporaryDirectory(prefix="scan-bench-") as cache_root:
            warm_scan(tree, files, Path(cache_root))  # cold: the cache written
            scans, floors, warms = [], [], []
            for _ in range(args.runs):
                scans.append(cpu(scan, tree, files))
                floors.append(cpu(floor, tree, files))
                warms.append(cpu(warm_scan, tree, files, Path(cache_root)))
        rows.append({"tree": str(tree), "files": len(files),
                     "scan_cpu_s": statistics.median(scans),
                     "floor_cpu_s": statistics.median(floors),
                     "warm_cpu_s": statistics.median(warms)})
    languages = by_language(args.trees, args.runs)
    total_scan = sum(r["scan_cpu_s"] for r in rows)
    total_floor = sum(r["floor_cpu_s"] for r in rows)
    total_warm = sum(r["warm_cpu_s"] for r in rows)
    ratio = total_scan / total_floor if total_floor else float("nan")
    if args.json:
        print(json.dumps({"trees": rows, "languages": languages, "ratio": ratio,
                          "target": TARGET, "passed": ratio <= TARGET}, indent=2))
        return
    print(f"medians of {args.runs} runs, CPU seconds of this process")
    print(f"{'tree':<44}{'files':>7}{'scan s':>9}{'floor s':>9}{'ratio':>7}{'warm s':>9}")
    for r in rows:
        print(f"{Path(r['tree']).name[:43]:<44}{r['files']:>7}{r['scan_cpu_s']:>9.3f}"
              f"{r['floor_cpu_s']:>9.3f}{r['scan_cpu_s'] / r['floor_cpu_s']:>7.2f}"
              f"{r['warm_cpu_s']:>9.3f}")
    print(f"{'all':<44}{sum(r['files'] for r in rows):>7}{total_scan:>9.3f}{total_floor:>9.3f}"
          f"{ratio:>7.2f}{total_warm:>9.3f}")
    print(f"scan / floor: {ratio:.2f} CPU (target <= {TARGET:.1f}) "
          f"{'PASS' if ratio <= TARGET else 'MISS'}; warm cache {total_warm:.3f} s "
          f"({total_warm / total_floor:.2f}x the floor)")
    print("by language, over all trees (each language's files scanned alone; floor: "
          "ast.parse for Python, pglast for SQL, reading the file for the rest):")
    print(f"{'language':<44}{'files':>7}{'scan s':>9}{'floor s':>9}{'ratio':>7}")
    for r in languages:
        print(f"{r['language']:<44}{r['files']:>7}{r['scan_cpu_s']:>9.3f}"
              f"{r['floor_cpu_s']:>9.3f}{r['scan_cpu_s'] / r['floor_cpu_s']:>7.2f}")
    parsed = [r for r in languages if r["language"] in PARSED]
    if parsed:
        parsed_ratio = (sum(r["scan_cpu_s"] for r in parsed)
                        / sum(r["floor_cpu_s"] for r in parsed))
        print(f"Python and SQL against their parse floor: {parsed_ratio:.2f} CPU (target <= "
              f"{TARGET:.1f}) {'PASS' if parsed_ratio <= TARGET else 'MISS'}")


# The languages whose floor is a parse (the "ast+pglast parse floor").
PARSED = ("python", "sql")


def by_language(trees: list[Path], runs: int) -> list[dict[str, object]]:
    """Scan and floor CPU per language over all trees: each tree's files of one language
    scanned alone (what depends on other files, as in a whole scan, sees only those)."""
    from advisor.read.sql.extract import classify

    groups: dict[str, list[tuple[Path, list[str]]]] = {}
    for tree in trees:
        per_kind: dict[str, list[str]] = {}
        for rel in candidates(tree):
            per_kind.setdefault(classify(rel), []).append(rel)
        for kind, files in per_kind.items():
            groups.setdefault(kind, []).append((tree, files))
    out = []
    for kind, parts in sorted(groups.items()):
        scans, floors = [], []
        for _ in range(runs):
            scans.append(sum(cpu(scan, tree, files) for tree, files in parts))
            floors.append(sum(cpu(floor, tree, files) for tree, files in parts))
        out.append({"language": kind, "files": sum(len(f) for _, f in parts),
                    "scan_cpu_s": statistics.median(scans),
                    "floor_cpu_s": statistics.median(floors)})
    return out


if __name__ == "__main__":
    main()
