"""The JS workspace packages an application depends on (pnpm `workspace:*`, npm/yarn
`workspaces`): a Next.js app in apps/web whose Prisma client and pool are in
packages/database, imported as `@acme/database`. Their source is part of the app's
process (bundled, or resolved through node_modules links), so their files are read
with the app's: the JS/TS modules, package.json files and Prisma schemas of each
package the app's package.json lists under dependencies/optionalDependencies with a
`workspace:` version or the name of a workspace package, and transitively theirs.
devDependencies are build and test tools, not the running process.

I/O: reads below the workspace root only (never above the scanned root, no symlinks),
bounded by MAX_PACKAGES and the app's file budget.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from advisor.model import ConfigProblem, Location
from advisor.read import jsontext
from advisor.read.fs import InputError, Root, walk

MAX_PACKAGES = 50  # workspace packages followed from one app (a cycle is followed once)
MAX_WORKSPACE_GLOBS = 1000  # package folders a workspace's globs may list
# The kinds a workspace package contributes: its code and what names its stack; its
# Dockerfiles, env files and configuration are another deployable's, not this app's.
KINDS = frozenset({"js", "package-json", "prisma", "ormconfig"})
_DEP_KEYS = ("dependencies", "optionalDependencies")


def _json(root: Root, path: Path) -> dict[str, object] | None:
    try:
        data = jsontext.loads(root.read_text(path, keep=True))
    except (InputError, json.JSONDecodeError):
        return None  # said where the package.json is read as the app's
    return data if isinstance(data, dict) else None


def _workspace_root(root: Root, base: Path) -> tuple[Path, list[str], Path | None] | None:
    """(folder, its package globs, its pnpm-workspace.yaml) of the nearest workspace
    root above `base`, inside the scanned root; None when there is none."""
    from advisor.read.sources.k8s import get, load_yaml_stream

    folder = base.parent
    while folder == root.path or root.path in folder.parents:
        pnpm = folder / "pnpm-workspace.yaml"
        if pnpm.is_file() and not pnpm.is_symlink():
            try:
                docs, _ = load_yaml_stream(root.read_text(pnpm, keep=True), root.rel(pnpm))
            except InputError:
                return None
            globs = get(docs[0][0], "packages") if docs else None
            return folder, [g for g in globs or [] if isinstance(g, str)], pnpm
        pkg = folder / "package.json"
        if pkg.is_file() and not pkg.is_symlink():
            data = _json(root, pkg)
            spaces = data.get("workspaces") if data else None
            if isinstance(spaces, dict):  # yarn 1: { packages: [...], nohoist }
                spaces = spaces.get("packages")
            if isinstance(spaces, list):
                return folder, [g for g in spaces if isinstance(g, str)], None
        if folder == root.path:
            return None
        folder = folder.parent
    return None


def _packages(root: Root, top: Path, globs: list[str]) -> dict[str, Path]:
    """{package name: folder} of the workspace's package globs (`apps/*`, `packages/**`,
    a plain folder; `!pattern` excludes)."""
    found: dict[str, Path] = {}
    excluded: set[Path] = set()
    listed: list[Path] = []
    for pattern in globs:
        negate = pattern.startswith("!")
        clean = pattern.lstrip("!").strip().strip("/")
        if not clean or ".." in PurePosixPath(clean).parts or clean.startswith("/"):
            continue
        try:
            matches = sorted(top.glob(clean)) if any(c in clean for c in "*?[") \
                else [top / clean]
        except (OSError, ValueError):
            continue
        for folder in matches[:MAX_WORKSPACE_GLOBS]:
            (excluded.add if negate else listed.append)(folder)
    for folder in listed[:MAX_WORKSPACE_GLOBS]:
        pkg = folder / "package.json"
        if folder in excluded or "node_modules" in folder.parts or not pkg.is_file() \
                or pkg.is_symlink() or folder.is_symlink():
            continue
        data = _json(root, pkg)
        name = data.get("name") if data else None
        if isinstance(name, str) and name not in found:
            found[name] = folder
    return found


def _depends_on(data: dict[str, object], packages: dict[str, Path]) -> list[str]:
    """Workspace package names a package.json lists as runtime dependencies."""
    out = []
    for key in _DEP_KEYS:
        section = data.get(key)
        if not isinstance(section, dict):
            continue
        for name, spec in section.items():
            if name in packages and isinstance(spec, str) and (
                    spec.startswith("workspace:") or not spec.startswith(
                        ("npm:", "file:", "link:", "git", "http"))):
                out.append(name)
    return out


class SourceRules(NamedTuple):
    """How the app's own folder is read (advisor.read.apps.source, which calls this
    module and passes them in): the kind of a file by its path, the folders skipped, the
    largest file read."""

    classify: Callable[[str], tuple[str, str | None] | None]
    skip_dirs: frozenset[str]
    max_bytes: int


def workspace_files(root: Root, base: Path, own_package_jsons: list[str], budget: int,
                    problems: list[ConfigProblem], notices: list[str], rules: SourceRules
                    ) -> list[tuple[str, str, str, str]]:
    """(path shown, rel to the app, text, package folder rel to the app) of the files of
    the workspace packages the app (its package.json texts `own_package_jsons`) depends
    on, transitively, and of the workspace's pnpm-workspace.yaml (its catalogs); at most
    `budget` files."""
    found = _workspace_root(root, base)
    if found is None:
        return []
    top, globs, pnpm = found
    packages = _packages(root, top, globs)
    if not packages:
        return []
    pending: list[str] = []
    for text in own_package_jsons:
        try:
            data = jsontext.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            pending.extend(_depends_on(data, packages))
    out: list[tuple[str, str, str, str]] = []
    if base in packages.values():
        # a member's dependencies are installed from the workspace root's lock file (npm
        # and yarn write one, there): the versions a default is cited at (apps/npmlock.py)
        for name in ("package-lock.json", "yarn.lock"):
            lock = top / name
            if lock.is_file() and not lock.is_symlink() \
                    and lock.stat().st_size <= rules.max_bytes:
                with contextlib.suppress(InputError):
                    out.append((root.rel(lock), os.path.relpath(lock, base),
                                root.read_text(lock, keep=True), ""))
    if pending and pnpm is not None:
        with contextlib.suppress(InputError):  # no catalog then: versions stay as written
            out.append((root.rel(pnpm), os.path.relpath(pnpm, base),
                        root.read_text(pnpm, keep=True), ""))
    seen: set[Path] = {base}
    followed = 0
    while pending:
        folder = packages[pending.pop(0)]
        if folder in seen or base in folder.parents or folder in base.parents:
            continue  # a cycle, the app itself, or a folder scanned with it
        seen.add(folder)
        followed += 1
        if followed > MAX_PACKAGES:
            notices.append(f"{root.rel(base)}: more than {MAX_PACKAGES} workspace packages "
                           "depended on; the rest were not read for pool settings")
            break
        package = os.path.relpath(folder, base)
        files = _read_package(root, folder, problems, budget - len(out) + 1, rules)
        for shown, rel, text in files:
            if len(out) >= budget:
                notices.append(f"{root.rel(base)}: workspace packages hold more source files "
                               "than the budget; the rest were not read for pool settings")
                return out
            out.append((shown, os.path.relpath(folder / rel, base), text, package))
            if rel == "package.json":
                data = _json(root, folder / rel)
                if data:
                    pending.extend(_depends_on(data, packages))
    return out


def _read_package(root: Root, folder: Path, problems: list[ConfigProblem], limit: int,
                  rules: SourceRules) -> list[tuple[str, str, str]]:
    """(path shown, rel to the package, text) of a workspace package's files of KINDS,
    at most `limit`."""
    classify = rules.classify
    out = []
    for dirpath, dirnames, filenames in walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in rules.skip_dirs
                             and not d.startswith("."))
        for filename in sorted(filenames):
            full = os.path.join(dirpath, filename)
            rel = PurePosixPath(os.path.relpath(full, folder)).as_posix()
            kind = classify(rel)
            if kind is None or kind[0] not in KINDS or os.path.islink(full) \
                    or os.path.getsize(full) > rules.max_bytes:
                continue
            if len(out) >= limit:
                return out
            try:
                text = root.read_text(full, keep=True)
            except InputError as exc:
                problems.append(ConfigProblem(location=Location(path=exc.path, line=exc.line),
                                              message=exc.message))
                continue
            shown = root.rel(full)
            if root.once is not None:
                root.once.note_marks(shown, text)
            out.append((shown, rel, text))
    return out
