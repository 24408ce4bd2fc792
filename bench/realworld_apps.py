"""Connections per pod on real application checkouts (issue 13).

    .venv/bin/python bench/realworld_apps.py [/work/real] [--only NAME] [-v]

Each entry names a checkout of a public repository (extracted with
`git --git-dir=<mirror> archive HEAD | tar -x -C /work/real/apps-<name>`), the
Deployment it would run under (written here, in the shape of the app's own docs and
Dockerfile: image, command, env), and the connections one pod opens as computed by
hand from the app's files and the library's default. The checkout is copied to a
scratch folder with k8s/ beside it (the repository itself is never written), checked,
and the pod's contribution compared: right, unknown (PA106, reported), or wrong.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DB = """apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.4
          args: ["-c", "max_connections=500"]
"""


@dataclass(frozen=True)
class RealApp:
    name: str
    checkout: str  # folder under the real root
    workload: str
    container: str  # YAML of the container list entry, indented 8
    per_pod: float | None  # None: the honest answer is "unknown"
    why: str


def deployment(app: RealApp) -> str:
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {app.workload}}}\n"
            "spec:\n  replicas: 1\n  strategy: {type: Recreate}\n  template:\n"
            "    spec:\n      containers:\n" + app.container)


APPS: tuple[RealApp, ...] = (
    RealApp("healthchecks", "apps-healthchecks", "healthchecks", """\
        - name: web
          image: healthchecks/healthchecks:v3.9
          command: ["uwsgi", "/opt/healthchecks/docker/uwsgi.ini"]
          env:
            - {name: DB, value: postgres}
            - {name: DB_HOST, value: db}
            - {name: DB_NAME, value: hc}
""", 4 + 2, "docker/uwsgi.ini processes 4 (UWSGI_PROCESSES unset), threads 1, + 2 "
       "attach-daemon manage.py (sendalerts, sendreports); Django: 1 connection per thread, "
       "DATABASES under if DB == postgres"),
)


def run(app: RealApp, real_root: Path, verbose: bool) -> tuple[str, float | None, list[str]]:
    from advisor.engine import CheckOptions, run_check

    src = real_root / app.checkout
    if not src.is_dir():
        return "missing", None, [f"{src} not found"]
    with tempfile.TemporaryDirectory() as tmp:
        dst = Path(tmp) / app.checkout
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("node_modules", ".git"),
                        symlinks=True)
        (dst / "pool-advisor-k8s").mkdir()
        (dst / "pool-advisor-k8s" / "app.yaml").write_text(deployment(app))
        (dst / "pool-advisor-k8s" / "db.yaml").write_text(DB)
        result = run_check([str(dst)], CheckOptions())
    notes = [n for n in result.notices if app.workload in n]
    for f in result.findings:
        if f.code in ("PA104", "PA106", "PA107", "PA102", "PA103") and app.workload in f.message:
            notes.append(f"{f.code}: {f.message}")
    budget = next((b for b in result.budgets if b.server == "db"), None)
    if budget is None:
        return "wrong", None, [*notes, "no budget for db"]
    if app.workload in budget.unknown_clients:
        got = None
    else:
        got = next((c.total for c in budget.contributions if c.who == app.workload), 0.0)
    if app.per_pod is None:
        verdict = "right" if got is None else "wrong"
    elif got is None:
        verdict = "unknown"
    else:
        verdict = "right" if got == app.per_pod else "wrong"
    return verdict, got, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("real_root", nargs="?", default="/work/real")
    parser.add_argument("--only")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    counts: dict[str, int] = {}
    for app in APPS:
        if args.only and app.name != args.only:
            continue
        verdict, got, notes = run(app, Path(args.real_root), args.verbose)
        counts[verdict] = counts.get(verdict, 0) + 1
        want = "unknown" if app.per_pod is None else f"{app.per_pod:g}"
        shown = "unknown" if got is None else f"{got:g}"
        print(f"{app.name:16} {verdict:8} got {shown:>8}  by hand {want:>8}  ({app.why})")
        if args.verbose or verdict != "right":
            for n in notes:
                print(f"    {n[:400]}")
    print(", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
