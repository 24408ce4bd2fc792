"""What a Bitnami postgresql chart version that is not vendored renders by default and
the values-built stand-in (helm_fallback) must add: the server container's resources
(a default `resources` map, later a `resourcesPreset`), the `metrics` sidecar's
postgres_exporter version, and whether the templates refuse metrics without a database.

Read in bitnami/charts (full history, HEAD 5165628ae0 = postgresql 17.1.0), each chart
version at the newest commit of its bitnami/postgresql/Chart.yaml:
- primary/readReplicas.resources: 11.0.0 (50946fdff3) .. 14.0.5 (e8c2230b05) values.yaml
  `requests: {memory: 256Mi, cpu: 250m}`, `limits: {}` (13.4.4 a87898d5d5 values.yaml:446-450);
  14.1.0 (0c94e15168) values.yaml:442 `resourcesPreset: "none"`, `resources: {}`;
  15.0.0 (3911a570a3) on `resourcesPreset: "nano"` (15.5.0 c6b2f1cc32 values.yaml:451,
  17.1.0 7c1e07157f values.yaml:492). The templates write `resources` when it is not
  empty, else the preset unless "none" (templates/primary/statefulset.yaml, 15.5.12
  4feb56d610:451-455).
- The presets: bitnami/common templates/_resources.tpl (310d9f9e44, common 2.15.0 ..
  dc0000d7b5, 2.20.4): nano..large the same cpu/memory in every version; xlarge/2xlarge
  requests changed (2.0/4.0 -> 1.0 cpu), their limits did not, so only their limits here.
- metrics.image.tag (bitnami/postgres-exporter): 0.10 from 11.0.0, 0.11 from 11.7.1
  (5149dea3ba), 0.12 from 12.2.6 (e42e0a158e), 0.13 12.5.9, 0.14 12.12.4, 0.15 13.2.1
  (13.4.4 values.yaml:1436 `0.15.0-debian-11-r7`), 0.16 16.2.1, 0.17 16.4.15 (17.1.0
  values.yaml:1724 `0.17.1-debian-12-r16`).
- templates/primary/statefulset.yaml and read/statefulset.yaml `required "In order to
  enable metrics you need to specify a database ..."` (postgresql.v1.database:
  global.postgresql.auth.database, else auth.database) from 11.0.0 (line 465) through
  15.5.11 (0fe73e31c5); 15.5.12 (4feb56d610) scrapes `127.0.0.1:<port>/` instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from advisor.model import Source
from advisor.read.render.helm_dep_versions import Locked, constraint_major, exact_version

Version = tuple[int, int, int]
_NEWEST = 10**9  # "the newest patch/minor Helm finds" in a range
_FIRST = (11, 0, 0)  # the shape read here (primary/readReplicas); before it: another
_LAST_MAJOR = 17  # the newest chart major in the snapshot read; 18.x is not read

# (from version, tag minor): metrics.image.tag of each chart version
_EXPORTER = ((11, 0, 0, "0.10"), (11, 7, 1, "0.11"), (12, 2, 6, "0.12"), (12, 5, 9, "0.13"),
             (12, 12, 4, "0.14"), (13, 2, 1, "0.15"), (16, 2, 1, "0.16"), (16, 4, 15, "0.17"))
_REQUIRES_DB = ((11, 0, 0), (15, 5, 12))  # [from, until)
_PRESET_NONE, _PRESET_NANO = (14, 1, 0), (15, 0, 0)
_OLD_RESOURCES = {"requests": {"memory": "256Mi", "cpu": "250m"}}
_TPL = "bitnami/common templates/_resources.tpl"
PRESETS: dict[str, dict[str, dict[str, str]]] = {
    "nano": {"requests": {"cpu": "100m", "memory": "128Mi"},
             "limits": {"cpu": "150m", "memory": "192Mi"}},
    "micro": {"requests": {"cpu": "250m", "memory": "256Mi"},
              "limits": {"cpu": "375m", "memory": "384Mi"}},
    "small": {"requests": {"cpu": "500m", "memory": "512Mi"},
              "limits": {"cpu": "750m", "memory": "768Mi"}},
    "medium": {"requests": {"cpu": "500m", "memory": "1024Mi"},
               "limits": {"cpu": "750m", "memory": "1536Mi"}},
    "large": {"requests": {"cpu": "1.0", "memory": "2048Mi"},
              "limits": {"cpu": "1.5", "memory": "3072Mi"}},
    "xlarge": {"limits": {"cpu": "3.0", "memory": "6144Mi"}},
    "2xlarge": {"limits": {"cpu": "6.0", "memory": "12288Mi"}},
}


@dataclass(frozen=True)
class ChartVersion:
    """The Bitnami postgresql chart version Helm would install, as far as it is known:
    `at` a patch or minor of _NEWEST when the range leaves it to the newest release."""

    at: Version
    shown: str  # "13.4.4", "15.x (newest)"
    source: Source  # the lock file's line, or a named default naming Chart.yaml's version


def resolve(version: str, locked: Locked | None) -> ChartVersion | None:
    """The chart version (or the newest of a minor/major) Helm installs; None when that
    is not a version read here (18.x and later, or a range that allows them)."""
    if locked is not None and (exact := exact_version(locked.version)) is not None:
        return _known(exact, locked.version, locked.at)
    if (exact := exact_version(version)) is not None:
        return _known(exact, version, Source.default_of(
            f"Bitnami postgresql chart {version} (Chart.yaml, no lock file)"))
    minor = re.match(r"^\s*(?:~\s*v?(\d+)\.(\d+)(?:\.\d+)?|v?(\d+)\.(\d+)(?:\.[xX*])?)\s*$",
                     version)
    if minor:
        major, minor_no = (int(g) for g in (minor.group(1) or minor.group(3),
                                            minor.group(2) or minor.group(4)))
        return _known((major, minor_no, _NEWEST), f"{major}.{minor_no}.x (newest)",
                      Source.default_of(f"Bitnami postgresql chart {version} (Chart.yaml, "
                                        "no lock file): Helm installs the newest "
                                        f"{major}.{minor_no}.x"))
    major = constraint_major(version)
    if major is not None:
        return _known((major, _NEWEST, _NEWEST), f"{major}.x (newest)", Source.default_of(
            f"Bitnami postgresql chart {version} (Chart.yaml, no lock file): Helm installs "
            f"the newest {major}.x"))
    return None  # a range across majors: Helm takes the newest, 18.x or later


def _known(at: Version, shown: str, source: Source) -> ChartVersion | None:
    return ChartVersion(at, shown, source) if at >= _FIRST and at[0] <= _LAST_MAJOR else None


def exporter_tag(chart: ChartVersion) -> str:
    """The postgres-exporter minor the chart's metrics.image.tag names."""
    return next(tag for *start, tag in reversed(_EXPORTER) if chart.at >= tuple(start))


def requires_database(chart: ChartVersion) -> bool:
    return _REQUIRES_DB[0] <= chart.at < _REQUIRES_DB[1]


@dataclass(frozen=True)
class Resources:
    """limits/requests -> resource -> quantity, and the named default they are."""

    items: dict[str, dict[str, str]]
    said: str


def default_resources(chart: ChartVersion, component: str, section: dict[str, Any]
                      ) -> Resources | None:
    """The container's resources the chart writes when the values set no
    `<component>.resources` of their own (or, for 11.0.0-14.0.x, what the user's map
    leaves of the default one: Helm merges values maps): None when it writes none."""
    user = section.get("resources") if isinstance(section.get("resources"), dict) else {}
    if chart.at < _PRESET_NONE:
        # the chart's map under the user's: a key the user sets (null included) is theirs
        kept = {part: {k: v for k, v in items.items()
                       if not isinstance(user.get(part), dict) or k not in user[part]}
                for part, items in _OLD_RESOURCES.items()
                if not (part in user and user[part] is None)}
        kept = {part: items for part, items in kept.items() if items}
        return Resources(kept, f"Bitnami postgresql chart {chart.shown} values.yaml "
                               f"{component}.resources (11.0.0-14.0.x: requests memory "
                               "256Mi, cpu 250m)") if kept else None
    if user:
        return None  # `{{- if .Values.<component>.resources }}`: the user's map, whole
    preset = section.get("resourcesPreset")
    named = preset if isinstance(preset, str) else ("none" if chart.at < _PRESET_NANO
                                                    else "nano")
    if named not in PRESETS:
        return None  # "none": no resources (an unknown name fails the real render)
    whose = f"values {component}.resourcesPreset {named!r}" if isinstance(preset, str) else \
        f"Bitnami postgresql chart {chart.shown} values.yaml {component}.resourcesPreset " \
        f"{named!r} (15.0.0 on)"
    return Resources({p: dict(v) for p, v in PRESETS[named].items()},
                     f"{whose}: {_TPL} {named!r}")
