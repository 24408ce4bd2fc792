"""Walk the paths given on the command line and classify what is there.

Like kube-linter: YAML manifests, Helm chart folders (Chart.yaml), kustomize folders
(kustomization.yaml), plus the config files pool-advisor reads (postgresql.conf,
pgbouncer.ini) and the application files the app and SQL scanners look at. Skips .git,
node_modules, virtualenvs, `--exclude` globs and .gitignore'd paths; never follows a
symlink out of the root.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from msgspec import Struct, field

from advisor.model import ConfigProblem, Location

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                       ".tox", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".terraform"})
YAML_SUFFIXES = (".yaml", ".yml")
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


class Discovered(Struct):
    root: Path
    manifests: list[Path] = field(default_factory=list)
    pg_confs: list[Path] = field(default_factory=list)
    bouncer_inis: list[Path] = field(default_factory=list)
    helm_charts: list[Path] = field(default_factory=list)
    kustomize_dirs: list[Path] = field(default_factory=list)  # the ones users build
    kustomize_all: list[Path] = field(default_factory=list)  # bases and components too
    other_files: list[Path] = field(default_factory=list)  # app sources, SQL, ...
    problems: list[ConfigProblem] = field(default_factory=list)

    def rel(self, p: Path) -> str:
        try:
            return p.relative_to(self.root).as_posix()
        except ValueError:
            return p.as_posix()


def is_pg_conf(name: str) -> bool:
    return name == "postgresql.auto.conf" or (
        name.endswith(".conf") and name.startswith("postgresql"))


def is_bouncer_ini(name: str) -> bool:
    return name.endswith(".ini") and "pgbouncer" in name.lower()


def discover(root: Path, *, excludes: list[str] | None = None) -> Discovered:
    """Classify every file under `root` (a folder or a single file)."""
    root = root.resolve()
    base = root if root.is_dir() else root.parent
    found = Discovered(root=base)
    if root.is_file():
        _classify(found, root)
        return found
    ignores = Ignores(_excludes_spec(excludes or []))

    kustomize_dirs: list[Path] = []
    for folder, dirs, files in os.walk(base, followlinks=False):
        here = Path(folder)
        rel_here = found.rel(here)
        if ".gitignore" in files:
            if (here / ".gitignore").is_symlink():
                found.problems.append(_not_followed(found, here / ".gitignore"))
            else:
                ignores.add(rel_here, here / ".gitignore")
        kept = []
        for d in sorted(dirs):
            if d in SKIP_DIRS or ignores.match(_dir_rel(rel_here, d)):
                continue
            if _escapes(base, here / d):
                found.problems.append(ConfigProblem(
                    location=Location(path=found.rel(here / d)),
                    message="directory symlink points outside the scanned root; not followed",
                    program="pool-advisor"))
                continue
            kept.append(d)
        dirs[:] = kept
        if "Chart.yaml" in files:
            # Nothing below a chart is walked: its templates and subcharts (charts/) are
            # the renderer's (and a per-folder check against every chart was quadratic).
            dirs[:] = []
            found.helm_charts.append(here)
            continue
        linked = [k for k in KUSTOMIZATION_NAMES if k in files and (here / k).is_symlink()]
        found.problems.extend(_not_followed(found, here / k) for k in linked)
        if any(k in files and k not in linked for k in KUSTOMIZATION_NAMES):
            kustomize_dirs.append(here)
        for name in sorted(files):
            path = here / name
            rel = found.rel(path)
            if ignores.match(rel):
                continue
            if path.is_symlink() and _escapes(base, path):
                found.problems.append(ConfigProblem(
                    location=Location(path=rel),
                    message=f"symlink points outside the scanned root ({os.readlink(path)}); "
                    "not followed", program="pool-advisor"))
                continue
            _classify(found, path)
    found.kustomize_all = kustomize_dirs
    found.kustomize_dirs = _leaf_kustomizations(kustomize_dirs)
    return found


def _not_followed(found: Discovered, path: Path) -> ConfigProblem:
    return ConfigProblem(location=Location(path=found.rel(path)),
                         message=f"{path.name} is a symlink; not followed (pool-advisor reads "
                         "this file only as a regular file of the repository)",
                         program="pool-advisor")


class Ignores:
    """--exclude globs plus every .gitignore met on the way down, each applied (as git
    does) to paths relative to the folder that holds it."""

    def __init__(self, excludes) -> None:
        self.specs = [("", excludes)] if excludes is not None else []

    def add(self, rel_dir: str, gitignore: Path) -> None:
        import pathspec

        with contextlib.suppress(OSError):
            lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
            prefix = "" if rel_dir in ("", ".") else rel_dir + "/"
            self.specs.append((prefix, pathspec.GitIgnoreSpec.from_lines(lines)))

    def match(self, rel: str) -> bool:
        return any(rel.startswith(prefix) and spec.match_file(rel[len(prefix):])
                   for prefix, spec in self.specs)


def _excludes_spec(excludes: list[str]):
    """None without --exclude globs: pathspec costs ~10 ms to import, and a tree with no
    .gitignore and no excludes never needs it."""
    if not excludes:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(excludes)


def _dir_rel(rel_here: str, d: str) -> str:
    return f"{d}/" if rel_here in ("", ".") else f"{rel_here}/{d}/"


def _escapes(base: Path, path: Path) -> bool:
    try:
        real = path.resolve()
    except OSError:
        return True
    return real != base and base not in real.parents


def _classify(found: Discovered, path: Path) -> None:
    name = path.name
    if name in KUSTOMIZATION_NAMES:
        return
    if name.endswith(YAML_SUFFIXES):
        found.manifests.append(path)  # YAML that is not Kubernetes is skipped when read
        found.other_files.append(path)  # application.yml, database.yml
    elif is_pg_conf(name):
        found.pg_confs.append(path)
    elif is_bouncer_ini(name):
        found.bouncer_inis.append(path)
    else:
        found.other_files.append(path)


def _leaf_kustomizations(dirs: list[Path]) -> list[Path]:
    """Kustomize folders users build: the ones no other kustomization includes.

    A base referenced by an overlay (`resources: [../../base]`) is deployed through the
    overlay and is not also built on its own: a base that is also applied alone is rare,
    and counting it would add a second copy of every object the overlays deploy. A
    `kind: Component` is never built alone (kustomize refuses to)."""
    referenced: set[Path] = set()
    components: set[Path] = set()
    for d in dirs:
        refs, kind = _kustomization_refs_kind(d)
        referenced.update(refs)
        if kind == "Component":
            components.add(d)
    return [d for d in dirs if d.resolve() not in referenced and d not in components]


def _kustomization_refs(d: Path) -> list[Path]:
    return _kustomization_refs_kind(d)[0]


def _kustomization_refs_kind(d: Path) -> tuple[list[Path], str]:
    from advisor.yamlpos import YAMLError, load

    for name in KUSTOMIZATION_NAMES:
        path = d / name
        if path.is_file() and not path.is_symlink():
            try:
                data = load(path.read_text(encoding="utf-8"))
            except (YAMLError, OSError, UnicodeDecodeError):
                return [], ""
            if not isinstance(data, dict):
                return [], ""
            refs = []
            for key in ("resources", "bases", "components"):
                items = data.get(key)
                for item in items if isinstance(items, list) else []:
                    if isinstance(item, str) and "://" not in item:
                        target = (d / item).resolve()
                        if target.is_dir():
                            refs.append(target)
            return refs, str(data.get("kind") or "Kustomization")
    return [], ""
