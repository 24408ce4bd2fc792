"""Which version of a dependency chart that is not vendored Helm would install: the
version Chart.lock / requirements.lock pins (what `helm dependency build` fetches),
else the version Chart.yaml asks for, a range resolved as Helm does (the newest chart
it allows); and the PostgreSQL major a Bitnami postgresql chart version ships."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from advisor.model import Source
from advisor.read.fs import InputError, Root

# The PostgreSQL major of each Bitnami postgresql chart major (its Chart.yaml appVersion),
# from bitnami/charts tags postgresql/<version> bitnami/postgresql/Chart.yaml: 8.6.3 11.7.0,
# 9.0.0 11.8.0, 10.0.0 11.10.0, 11.0.0 14.1.0 .. 11.9.13 14.5.0, 12.0.0 15.0.0 .. 12.12.10
# 15.4.0, 13.0.0 16.0.0 .. 13.4.4 16.1.0, 14.0.0 16.1.0 .. 14.3.3 16.2.0, 15.0.0 16.2.0 ..
# 15.5.38 16.4.0, 16.0.0 17.0.0 .. 16.7.27 17.6.0, 17.0.1 .. 17.1.0 17.6.0 (the newest
# chart in bitnami/charts at 5165628ae0). 18.x ships PostgreSQL 18: the charts' 18.x
# releases are after that snapshot; getredash/contrib-helm-chart a56f7a8e CHANGELOG.md
# 205-218 moves to ^18.2.0 as "PostgreSQL 15 -> 18".
BITNAMI_PG_MAJOR = {8: 11, 9: 11, 10: 11, 11: 14, 12: 15, 13: 16, 14: 16, 15: 16, 16: 17,
                    17: 17, 18: 18}
NEWEST_BITNAMI = max(BITNAMI_PG_MAJOR)


@dataclass(frozen=True)
class Locked:
    version: str
    at: Source  # the lock file's `version:` line


def read_locks(root: Root, chart_path: Path, chart_rel: str) -> dict[tuple[str, str], Locked]:
    """(name, repository) -> the version the chart's lock file pins."""
    from advisor.read.render.helm_positions import in_chart
    from advisor.read.sources.k8s import get, load_yaml_stream

    out: dict[tuple[str, str], Locked] = {}
    for file in ("Chart.lock", "requirements.lock"):
        try:
            text = root.read_text(chart_path / file)
        except InputError:
            continue
        shown = in_chart(chart_rel, file)
        docs, _problems = load_yaml_stream(text, shown)
        deps = get(docs[0][0], "dependencies") if docs else None
        for dep in deps if isinstance(deps, list) else []:
            if not isinstance(dep, dict) or not dep.get("name") or not dep.get("version"):
                continue
            line = dep.lc.key("version")[0] + 1 if hasattr(dep, "lc") else None
            out.setdefault((str(dep["name"]), str(dep.get("repository") or "")), Locked(
                version=str(dep["version"]),
                at=Source(path=shown, line=line, key=f"{file} {dep['name']} version")))
    return out


_EXACT = re.compile(r"^\s*[=v]?\s*(\d+)\.(\d+)\.(\d+)\s*$")
# ^X.Y.Z, ~X.Y.Z, X, X.x, X.Y.x, X.* : one major (caret on 0.x keeps the minor too)
_ONE_MAJOR = re.compile(r"^\s*([\^~])?\s*v?(\d+)(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?\s*$")


def constraint_major(version: str) -> int | None:
    """The one chart major a Chart.yaml version constraint allows, or None for a range
    that spans majors (`>=9.0.0`, `9 - 12`, `^9 || ^10`)."""
    match = _ONE_MAJOR.match(version)
    return int(match.group(2)) if match else None


def bitnami_pg_major(version: str, locked: Locked | None) -> tuple[int, Source]:
    """The PostgreSQL major of the Bitnami postgresql chart Helm would install: the
    locked version's chart major, else the one major the constraint allows, else (a
    range) the newest chart known here, which Helm picks when the range allows it."""
    if locked is not None and (major := constraint_major(locked.version)) is not None:
        pg = BITNAMI_PG_MAJOR.get(major)
        if pg is not None:
            return pg, Source(path=locked.at.path, line=locked.at.line,
                              key=f"{locked.at.key}: Bitnami postgresql chart "
                                  f"{locked.version} ships PostgreSQL {pg} (appVersion)")
    major = constraint_major(version)
    if major is not None and major in BITNAMI_PG_MAJOR:
        pg = BITNAMI_PG_MAJOR[major]
        return pg, Source.default_of(f"Bitnami postgresql chart {version} (Chart.yaml, no "
                                     f"lock file) ships PostgreSQL {pg} (appVersion of "
                                     f"chart {major}.x)")
    pg = BITNAMI_PG_MAJOR[NEWEST_BITNAMI]
    if not version.strip():  # `helm install` with no --version: the repository's newest
        return pg, Source.default_of(
            f"assumed PostgreSQL {pg}: no chart version given, so Helm installs the newest "
            f"Bitnami postgresql chart, {NEWEST_BITNAMI}.x or later, which ships PostgreSQL {pg}")
    allowed = sorted({p for m, p in BITNAMI_PG_MAJOR.items() if _allows(version, m)})
    said = f" (it allows PostgreSQL {', '.join(map(str, allowed))})" if allowed else ""
    return pg, Source.default_of(
        f"assumed PostgreSQL {pg}: Bitnami postgresql {version or 'with no version'}, no "
        f"lock file, is a range{said}; Helm picks the newest chart it allows, "
        f"{NEWEST_BITNAMI}.x or later, which ships PostgreSQL {pg}")


def _allows(version: str, major: int) -> bool:
    """Whether a simple comparator range (`>=9.0.0`, `>=9 <12`, `<12`) allows a chart
    major; an unparsed constraint allows every major."""
    parts = re.findall(r"(>=|<=|>|<)\s*v?(\d+)", version)
    if not parts:
        return not version.strip() or "||" not in version
    for op, number in parts:
        n = int(number)
        if (op == ">=" and major < n) or (op == ">" and major < n) or \
                (op == "<" and major >= n) or (op == "<=" and major > n):
            return False
    return True


def exact_version(version: str) -> tuple[int, int, int] | None:
    match = _EXACT.match(version)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None
