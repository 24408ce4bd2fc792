"""Run pool-advisor over checkouts of real repositories and print, per repository, what
it found: servers, poolers, clients, clients linked to a server or pooler, clients
unlinked (they connect somewhere the repository does not show), clients unknown (their
connections per pod are not known), and wall time.

    python bench/realworld.py DIR [DIR ...] [--timeout S] [--json]

Each DIR is either one checkout or a folder of checkouts (every subfolder is one
repository). Each repository is scanned in its own interpreter (`check`'s scan stages,
the same as `pool-advisor check REPO`), so a crash or a hang in one is reported on its
row and does not stop the others; a run over --timeout seconds is stopped and shown as
such. Nothing is written to the repositories.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Run in the child: scan one repository, print one JSON line of counts.
_CHILD = r"""
import json, sys
from advisor.engine.check import scan
from advisor.engine.options import CheckOptions
topo = scan([sys.argv[1]], CheckOptions()).topology
linked = [c for c in topo.clients if c.target_id]
unlinked = [c for c in topo.clients if not c.target_id]
unknown = [c for c in topo.clients if getattr(c, "unknown", "") or not c.pools]
print(json.dumps({
    "servers": len(topo.servers),
    "standbys": sum(1 for s in topo.servers if s.role == "standby"),
    "poolers": len(topo.poolers),
    "clients": len(topo.clients),
    "linked": len(linked),
    "unlinked": len(unlinked),
    "unknown": len(unknown),
    "unlinked_names": sorted(c.name for c in unlinked)[:8],
    "unknown_names": sorted(c.name for c in unknown)[:8],
    "server_names": sorted(s.name for s in topo.servers)[:8],
    "notices": len(topo.notices),
    "problems": len(topo.problems),
}))
"""


def repositories(dirs: list[Path]) -> list[Path]:
    """Each DIR that is a checkout (has .git, Chart.yaml, kustomization or manifests at
    its top), else its subfolders."""
    found: list[Path] = []
    markers = (".git", "Chart.yaml", "kustomization.yaml", "charts", "deploy", "k8s",
               "manifests", "docs")
    for d in dirs:
        if any((d / m).exists() for m in markers):
            found.append(d)
        else:
            found += sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))
    return found


def run_one(repo: Path, timeout: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(repo)], capture_output=True,
                              text=True, timeout=timeout, env=env, cwd=repo)
    except subprocess.TimeoutExpired:
        return {"repo": repo.name, "status": f"timeout > {timeout:g}s",
                "wall": time.perf_counter() - start}
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1][:100]
        return {"repo": repo.name, "status": f"exit {proc.returncode}: {last}", "wall": wall}
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"repo": repo.name, "status": "ok", "wall": wall, **counts}


def table(rows: list[dict]) -> str:
    head = ("repository", "servers", "poolers", "clients", "linked", "unlinked", "unknown",
            "wall s", "status")
    lines = [head]
    for r in rows:
        lines.append((r["repo"], *(str(r.get(k, "-")) for k in
                                   ("servers", "poolers", "clients", "linked", "unlinked",
                                    "unknown")),
                      f"{r['wall']:.1f}", r["status"]))
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True))
                     .rstrip() for line in lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds per repository (default 300)")
    parser.add_argument("--json", action="store_true", help="one JSON object per repository")
    args = parser.parse_args(argv)
    rows = []
    for repo in repositories([d.resolve() for d in args.dirs]):
        row = run_one(repo, args.timeout)
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)
    if not args.json:
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
