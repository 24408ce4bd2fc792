"""A chart's `file://` dependencies that are not vendored in its charts/, placed there in
the engine's view of the chart as `helm dependency build` would place them.

Helm (helm/helm v4.2.3, the engine's version):
- `helm template` of a chart whose charts/ lacks a declared dependency fails
  (pkg/cmd/install.go:303-325 `action.CheckDependencies`, pkg/action/install.go:829:
  "found in Chart.yaml, but missing in charts/ directory", matched by chart name);
- `helm dependency build` (pkg/downloader/manager.go:305-315 downloadAll) archives a
  `file://` dependency into charts/ (tarFromLocalDir, manager.go:873: the folder at
  resolver.GetLocalPath, internal/resolver/resolver.go:242: the path after `file://`,
  from the chart folder unless absolute; loaded with loader.LoadDir, its own charts/
  included, and saved when its Chart.yaml version meets the declared constraint).
The engine then applies the dependency's `condition`, `tags`, `alias` and
`import-values` itself, as for any subchart in charts/. Only a folder inside the
scanned root is placed: a path outside it is not read (a notice says so).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from msgspec import Struct

from advisor.read.fs import InputError, Root
from advisor.read.render.helm_values import chart_yaml_name, subchart_dirs
from advisor.read.sources.k8s import get, load_yaml_stream


class LocalDependency(Struct, frozen=True):
    """A `file://` dependency of a chart that is not vendored in its charts/."""

    name: str  # the chart name it is declared with
    repository: str  # as declared: file://../postgres
    where: Path | None = None  # the folder placed in charts/; None when it is not
    why: str = ""  # why it is not placed
    unchecked: str = ""  # a version constraint this reading does not check
    own: str = ""  # the name in its folder's Chart.yaml, when that was read


def local_dependencies(root: Root, chart_path: Path) -> list[LocalDependency]:
    """The chart's `file://` dependencies that charts/ lacks, each placed (`where`) or
    not (`why`), in declaration order."""
    vendored = set(subchart_dirs(root, chart_path))
    found: dict[str, LocalDependency] = {}
    for dep in declared(root, chart_path):
        name, repository = str(dep.get("name") or ""), str(dep.get("repository") or "")
        if not name or not repository.startswith("file://") or name in vendored \
                or name in found:
            continue
        found[name] = _place(root, chart_path, name, repository, str(dep.get("version") or ""))
    return list(found.values())


def with_local(root: Root, chart_path: Path, local: list[LocalDependency] | None = None
               ) -> dict[str, Path]:
    """subchart_dirs of the chart as the engine's view has them: the vendored ones and
    the placed `file://` dependencies (`local`, when the caller has read them)."""
    found = subchart_dirs(root, chart_path)
    for dep in local if local is not None else local_dependencies(root, chart_path):
        if dep.where is not None:
            found.setdefault(dep.name, dep.where)
    return found


def _place(root: Root, chart_path: Path, name: str, repository: str, version: str
           ) -> LocalDependency:
    local = repository.removeprefix("file://")
    given = Path(local) if local.startswith("/") else chart_path / local
    try:
        where = root.resolve(given)
    except InputError:
        return LocalDependency(name, repository, why="its folder is outside the scanned root; "
                                                     "not read")
    if not (where / "Chart.yaml").is_file():
        return LocalDependency(name, repository, why="there is no chart there (`helm "
                                                     "dependency build` fails)")
    own = chart_yaml_name(root, where / "Chart.yaml")
    if own != name:
        # charts/ would then hold a chart of another name: Helm still misses `name`
        return LocalDependency(name, repository, why=f"the chart there is named {own!r}",
                               own=own or "")
    have = _chart_version(root, where)
    exact = _exact(version)
    if exact is not None and have is not None and _exact(have) != exact:
        return LocalDependency(name, repository, why=f"its version {have} does not meet "
                                                     f"{version!r} (`helm dependency build` "
                                                     "refuses it)", own=name)
    unchecked = version if exact is None and version.strip() not in ("", "*", "x", "X") \
        else ""
    return LocalDependency(name, repository, where=where, unchecked=unchecked, own=name)


_EXACT = re.compile(r"^\s*=?\s*v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?\s*$")


def _exact(version: str) -> tuple[str, ...] | None:
    """A constraint that names one version (Masterminds semver: a bare version is `=`),
    as its parts without build metadata; None for a range."""
    match = _EXACT.match(version)
    if match is None:
        return None
    major, minor, patch, pre = match.groups()
    return (str(int(major)), str(int(minor)), str(int(patch)), pre or "")


def _chart_version(root: Root, where: Path) -> str | None:
    try:
        text = root.read_text(where / "Chart.yaml")
    except InputError:
        return None
    match = re.search(r"^version:\s*['\"]?([^'\"\s#]+)", text, re.M)
    return match.group(1) if match else None


def declared(root: Root, chart_path: Path) -> list[dict[str, object]]:
    """The dependencies the chart declares (Chart.yaml, or requirements.yaml of an
    apiVersion v1 chart), as mappings."""
    deps: list[dict[str, object]] = []
    for file in ("Chart.yaml", "requirements.yaml"):
        path = chart_path / file
        if not os.path.lexists(path if path.is_absolute() else root.path / path):
            continue  # read_text's InputError, without resolving the path first
        try:
            text = root.read_text(path)
        except InputError:
            continue
        if "dependencies" not in text and "\\" not in text:
            # no key of that name can be read from it (a quoted key spells it out, but
            # for an escape): not parsed (most charts declare none)
            continue
        docs, _problems = load_yaml_stream(text, root.rel(path))
        listed = get(docs[0][0], "dependencies") if docs else None
        if isinstance(listed, list):
            deps += [d for d in listed if isinstance(d, dict)]
    return deps


def notices(chart_rel: str, root: Root, deps: list[LocalDependency]) -> list[str]:
    """One notice per `file://` dependency: placed from its folder, or why not."""
    said: list[str] = []
    for dep in deps:
        if dep.where is not None:
            check = f"; its version constraint {dep.unchecked!r} was not checked" \
                if dep.unchecked else ""
            said.append(f"helm: {chart_rel}: dependency {dep.name} ({dep.repository}) is not "
                        f"vendored in charts/; rendered from {root.rel(dep.where)} in the "
                        f"repository, as `helm dependency build` would place it{check}")
        else:
            said.append(f"helm: {chart_rel}: dependency {dep.name} ({dep.repository}) is not "
                        f"vendored in charts/ and not rendered: {dep.why}")
    return said
