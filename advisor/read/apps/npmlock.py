"""The version of a package an npm application installs, from its package-lock.json:
lockfileVersion 2 and 3 `packages["node_modules/<name>"].version` (the top-level copy),
version 1 `dependencies["<name>"].version`; or from its yarn.lock: an entry whose
descriptors name the package (`pg-pool@^3.1.0:` in yarn 1, `"pg-pool@npm:^3.6.2":` in
yarn 2+) and its `version "3.1.0"` / `version: 3.6.2` line. A workspace member's lock
is the workspace root's (apps/workspaces.py reads it with the app's files). Pure."""

from __future__ import annotations

import re

from advisor.model import Source
from advisor.read import jsontext
from advisor.read.apps.source import AppFile, AppSource


def _locked(data: object, name: str) -> str | None:
    if not isinstance(data, dict):
        return None
    for table, key in (("packages", f"node_modules/{name}"), ("dependencies", name)):
        entries = data.get(table)
        entry = entries.get(key) if isinstance(entries, dict) else None
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            return str(entry["version"])
    return None


def _version_line(f: AppFile, name: str, version: str) -> int | None:
    """The line of `"version": "<version>"` in the entry of `name` (None: not found)."""
    lines = f.text.splitlines()
    for key in (f"node_modules/{name}", name):
        opens = [i for i, line in enumerate(lines)
                 if re.fullmatch(rf'\s*"{re.escape(key)}"\s*:\s*\{{\s*', line)]
        for i in opens:
            for j in range(i + 1, min(i + 4, len(lines))):
                if re.fullmatch(rf'\s*"version"\s*:\s*"{re.escape(version)}",?\s*', lines[j]):
                    return j + 1
    return None


def _yarn_locked(f: AppFile, name: str) -> list[tuple[str, int]]:
    """(version, line) of each yarn.lock entry of `name` (yarn 1 and 2+ alike)."""
    out: list[tuple[str, int]] = []
    lines = f.text.splitlines()
    head = re.compile(rf'(?:^|,\s*)"?{re.escape(name)}@')
    for i, line in enumerate(lines):
        if line[:1] in ("", " ", "#") or not line.rstrip().endswith(":") \
                or not head.search(line):
            continue
        for j in range(i + 1, min(i + 8, len(lines))):
            if not lines[j].startswith(" "):
                break
            m = re.fullmatch(r'\s+version:?\s+"?([^"\s]+)"?\s*', lines[j])
            if m:
                out.append((m.group(1), j + 1))
                break
    return out


def npm_pin(app: AppSource | None, name: str) -> tuple[str, Source] | None:
    """The version the app's package-lock.json and yarn.lock files install `name` at,
    with its line; None when none gives it, two disagree (two copies in one yarn.lock
    too: which one pg loads is not said here), or it is not numbers (a pre-release, a
    URL)."""
    if app is None:
        return None
    found: list[tuple[str, Source]] = []
    for f in app.of_kind("npm-lock"):
        try:
            version = _locked(jsontext.loads(f.text), name)
        except ValueError:
            continue
        if version is not None:
            found.append((version, f.cite(_version_line(f, name, version), name)))
    for f in app.of_kind("yarn-lock"):
        found += [(version, f.cite(line, name)) for version, line in _yarn_locked(f, name)]
    if not found or len({v for v, _ in found}) > 1 \
            or not re.fullmatch(r"\d+\.\d+\.\d+", found[0][0]):
        return None
    return found[0]
