"""Precision and recall of the transaction-mode hazard rules (PA401-PA410) on a labelled
corpus (issue 15).

The corpus (tests/hazard_corpus/<app>/...) is written in the shape of real applications.
Every candidate site carries a marker comment on its line:

    expect: PA401 <why it is a hazard>      a finding of PA401 must be reported here
    safe: [PA4xx] <why it is not>           nothing may be reported here
    expect-next: / safe-next:               the same, for the next line (files whose
                                            comments cannot share a line: .properties)

A finding on a line without a marker counts as a false positive, so the labels must be
complete. Each app folder is scanned as the engine scans a repository: the same file
selection (test/spec/fixture/example code skipped), scan_sql_sources (cross-file facts),
one finding per (rule, file, line), database.yml ERB evaluated with the env in the app's
`bench-env` file (NAME=VALUE lines: the container env of its workload), behind a
transaction-mode PgBouncer unless its `bench-mode` file says `statement`.

    .venv/bin/python bench/hazards.py                 # confusion matrix per rule, overall
    .venv/bin/python bench/hazards.py --list          # also every miss and false alarm
    .venv/bin/python bench/hazards.py --real DIR...   # findings on real checkouts, one per
                                                      # line (for hand labelling)
    .venv/bin/python bench/hazards.py --real DIR... --labels FILE   # scored against labels

Labels of real checkouts (FILE): `<repo>/<path>:<line> <code> hazard|safe <reason>`,
plus `<repo>/<path>:<line> <code> missed <reason>` for hazards found by reading the code
that the scan must report.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.model import EnvVar, Source
from advisor.read.fs import Root

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "hazard_corpus"
KIND_CODE = {
    "session-set": "PA401",
    "listen": "PA402",
    "advisory-lock": "PA403",
    "sql-prepare": "PA404",
    "protocol-prepare": "PA405",
    "temp-table": "PA406",
    "with-hold-cursor": "PA407",
    "load": "PA408",
    "transaction-block": "PA409",
    "startup-parameter": "PA410",
}
MARKER = re.compile(r"\b(expect|safe)(-next)?:\s*(PA\d{3})?\s*(.*)")
Site = tuple[str, int]  # (path, line)


@dataclass
class Matrix:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


@dataclass
class Score:
    rules: dict[str, Matrix] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    alarms: list[str] = field(default_factory=list)

    def rule(self, code: str) -> Matrix:
        return self.rules.setdefault(code, Matrix())

    @property
    def overall(self) -> Matrix:
        total = Matrix()
        for m in self.rules.values():
            total.tp += m.tp
            total.fp += m.fp
            total.fn += m.fn
            total.tn += m.tn
        return total

    @property
    def sites(self) -> int:
        return sum(m.tp + m.fp + m.fn + m.tn for m in self.rules.values())


def scan_app(
    folder: Path, env: dict[str, str] | None = None, mode: str = "transaction"
) -> set[tuple[str, str, int]]:
    """(code, path, line) of every finding the hazard rules would report for one app
    whose workload runs all of it behind a PgBouncer in `mode` (PA409 needs statement
    mode: the rule's min_mode)."""
    from advisor.read.sql.drivers import resolve_erb
    from advisor.read.sql.extract import (
        assign_clients,
        is_sql_candidate,
        is_test_path,
        scan_sql_sources,
    )

    folder = folder.resolve()
    paths = []
    for dirpath, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in ("node_modules", ".git", "vendor")]
        for name in files:
            rel = (Path(dirpath) / name).relative_to(folder).as_posix()
            if is_sql_candidate(rel) and not is_test_path(rel):
                paths.append(rel)
    hazards, _problems = scan_sql_sources(Root(folder), sorted(paths))
    hazards = assign_clients(hazards, {"app": ""})
    source = Source(path="bench-env", line=1)
    env_vars = [EnvVar(name=k, value=v, source=source) for k, v in (env or {}).items()]
    hazards = resolve_erb(hazards, {"app": env_vars})
    return {
        (KIND_CODE[h.kind], h.location.path, h.location.line or 0)
        for h in hazards
        if h.kind in KIND_CODE and not h.suppressed
        and (h.kind != "transaction-block" or mode == "statement")
    }


def read_env(folder: Path) -> dict[str, str]:
    path = folder / "bench-env"
    if not path.is_file():
        return {}
    pairs = (row.split("=", 1) for row in path.read_text().splitlines() if "=" in row)
    return {k.strip(): v.strip() for k, v in pairs}


def labels_of(folder: Path) -> dict[Site, tuple[str, str | None, str]]:
    """(path, line) -> (expect|safe, code, reason) from the markers in an app's files."""
    found: dict[Site, tuple[str, str | None, str]] = {}
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            for n, row in enumerate(path.read_text(errors="replace").splitlines(), start=1):
                m = MARKER.search(row)
                if m:
                    at = n + 1 if m.group(2) else n
                    found[(rel, at)] = (m.group(1), m.group(3), m.group(4).strip())
    return found


def score(
    findings: Iterable[tuple[str, str, int]],
    labels: dict[Site, tuple[str, str | None, str]],
    prefix: str = "",
) -> Score:
    result = Score()
    seen: set[tuple[str, Site]] = set()
    for code, path, line in findings:
        site = (path, line)
        seen.add((code, site))
        label = labels.get(site)
        where = f"{prefix}{path}:{line} {code}"
        if label and label[0] == "expect" and label[1] == code:
            result.rule(code).tp += 1
        else:
            result.rule(code).fp += 1
            reason = f" (labelled {label[0]}: {label[2]})" if label else " (no label)"
            result.alarms.append(where + reason)
    for site, (verdict, code, reason) in labels.items():
        if verdict == "expect" and code and (code, site) not in seen:
            result.rule(code).fn += 1
            result.misses.append(f"{prefix}{site[0]}:{site[1]} {code} ({reason})")
        elif verdict == "safe" and not any((c, site) in seen for c in KIND_CODE.values()):
            result.rule(code or "-").tn += 1
    return result


def merge(into: Score, other: Score) -> None:
    for code, m in other.rules.items():
        r = into.rule(code)
        r.tp += m.tp
        r.fp += m.fp
        r.fn += m.fn
        r.tn += m.tn
    into.misses += other.misses
    into.alarms += other.alarms


def corpus_score(corpus: Path = CORPUS) -> Score:
    total = Score()
    for app in sorted(p for p in corpus.iterdir() if p.is_dir()):
        mode_file = app / "bench-mode"
        mode = mode_file.read_text().strip() if mode_file.is_file() else "transaction"
        found = scan_app(app, read_env(app), mode)
        merge(total, score(found, labels_of(app), prefix=f"{app.name}/"))
    return total


def render(result: Score, title: str) -> str:
    rows = [f"{title}: {result.sites} labelled sites",
            f"{'rule':7} {'TP':>4} {'FP':>4} {'FN':>4} {'TN':>4} {'precision':>10} {'recall':>7}"]
    for code in sorted(result.rules):
        m = result.rules[code]
        rows.append(f"{code:7} {m.tp:4} {m.fp:4} {m.fn:4} {m.tn:4} "
                    f"{m.precision:10.1%} {m.recall:7.1%}")
    o = result.overall
    rows.append(f"{'overall':7} {o.tp:4} {o.fp:4} {o.fn:4} {o.tn:4} "
                f"{o.precision:10.1%} {o.recall:7.1%}")
    return "\n".join(rows)


def real_labels(path: Path) -> tuple[dict[Site, tuple[str, str | None, str]], dict[str, str]]:
    labels: dict[Site, tuple[str, str | None, str]] = {}
    for row in path.read_text().splitlines():
        if not row.strip() or row.startswith("#"):
            continue
        where, code, verdict, *reason = row.split(None, 3)
        file, line = where.rsplit(":", 1)
        label = "safe" if verdict == "safe" else "expect"
        labels[(file, int(line))] = (label, code, reason[0] if reason else verdict)
    return labels, {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print misses and false alarms")
    parser.add_argument("--real", nargs="+", type=Path, help="real checkouts to scan")
    parser.add_argument("--labels", type=Path, help="hand labels of the real findings")
    args = parser.parse_args()
    if args.real:
        found: set[tuple[str, str, int]] = set()
        for repo in args.real:
            for code, path, line in scan_app(repo):
                found.add((code, f"{repo.name}/{path}", line))
        if not args.labels:
            for code, path, line in sorted(found, key=lambda f: (f[1], f[2])):
                print(f"{path}:{line} {code}")
            return 0
        labels, _ = real_labels(args.labels)
        result = score(found, labels)
        print(render(result, "real checkouts"))
    else:
        result = corpus_score()
        print(render(result, f"corpus {CORPUS.name}"))
    if args.list:
        for row in result.misses:
            print("missed:", row)
        for row in result.alarms:
            print("false alarm:", row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
