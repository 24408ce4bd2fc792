"""The exact version a Python application pins a package at in its dependency manifests
(requirements*.txt/.in, setup.cfg, pyproject.toml, Pipfile), so a library's default can
be cited at the version installed: `gunicorn==20.1.0`, `"gunicorn==20.1.0"` (PEP 621),
`gunicorn = "20.1.0"` (Poetry: a bare version is exact), `gunicorn = "==20.1.0"`
(Pipfile, Poetry). A range is no version (pip may install any in it); lock files are
not scanned (advisor/read/apps/source.py)."""

from __future__ import annotations

import re

from advisor.model import Source
from advisor.read.apps.source import AppSource

_VERSION = r"(\d+(?:\.\d+)*)"
_EXTRAS = r"(?:\[[^\]]*\])?"


def _name_pattern(name: str) -> str:
    # PEP 503: names compare case-insensitively, with runs of -_. the same
    return "[-_.]+".join(re.escape(part) for part in re.split(r"[-_.]+", name))


def _pins(text: str, file_name: str, name: str) -> list[tuple[str, int]]:
    n_ = _name_pattern(name)
    # a requirements line: markers after `;`, hashes and a continuation after the version
    line_pin = re.compile(rf"{n_}{_EXTRAS}\s*===?\s*{_VERSION}\s*(?:[;\\].*|--hash.*)?", re.I)
    quoted = re.compile(rf"""["']{n_}{_EXTRAS}\s*===?\s*{_VERSION}\s*(?:;[^"']*)?["']""", re.I)
    op = "(?:==)?" if file_name == "pyproject.toml" else "=="  # Poetry's "1.2" is exact
    keyed = re.compile(rf"""["']?{n_}["']?\s*=\s*(?:\{{[^}}]*\bversion\s*=\s*)?["']"""
                       rf"""{op}\s*{_VERSION}["']""", re.I)
    out: list[tuple[str, int]] = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0].strip()
        if not code:
            continue
        if file_name.endswith((".txt", ".in", ".cfg")) and (m := line_pin.fullmatch(code)):
            out.append((m.group(1), n))
            continue
        if m := quoted.search(code) or keyed.match(code):
            out.append((m.group(1), n))
    return out


def python_pin(app: AppSource | None, name: str) -> tuple[str, Source] | None:
    """The version every manifest of `app` that pins `name` exactly pins it at, and the
    first place; None when none does or two disagree (which one is installed is not
    read)."""
    if app is None:
        return None
    found: list[tuple[str, Source]] = []
    for f in app.of_kind("deps"):
        if f.name.startswith("Gemfile"):
            continue
        found.extend((v, f.cite(n, f"{name}=={v}", name)) for v, n in _pins(f.text, f.name, name))
    if not found or len({v for v, _ in found}) > 1:
        return None
    return found[0]


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))
