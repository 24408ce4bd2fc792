"""The exact version a Python application pins a package at in its dependency manifests
(requirements*.txt/.in, setup.cfg, pyproject.toml, Pipfile), so a library's default can
be cited at the version installed: `gunicorn==20.1.0`, `"gunicorn==20.1.0"` (PEP 621),
`gunicorn = "20.1.0"` (Poetry: a bare version is exact), `gunicorn = "==20.1.0"`
(Pipfile, Poetry). A range is no version (pip may install any in it). uv.lock and
poetry.lock give the version installed: their `[[package]]` tables' name and version."""

from __future__ import annotations

import functools
import re
import tomllib

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


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


@functools.lru_cache(maxsize=8)  # a lock is read for each container of its app
def _lock_packages(text: str) -> tuple[tuple[str, str], ...]:
    """(normalized name, version) of each `[[package]]`; () when not TOML."""
    try:
        packages = tomllib.loads(text).get("package", [])
    except tomllib.TOMLDecodeError:
        return ()
    return tuple((_normal(str(p.get("name", ""))), str(p["version"])) for p in packages
                 if isinstance(p, dict) and "version" in p)


def _lock_pins(text: str, name: str) -> list[tuple[str, int | None]]:
    """The versions a uv.lock or poetry.lock gives `name` (`[[package]]` name, version;
    a workspace may resolve two), each with its version line (None: not found as
    written); none when the file is not TOML."""
    want = _normal(name)
    versions = [v for n, v in _lock_packages(text) if n == want]
    lines = text.splitlines()
    named = [i for i, line in enumerate(lines)
             if (m := re.fullmatch(r'\s*name\s*=\s*"([^"]+)"\s*', line))
             and _normal(m.group(1)) == want]
    out: list[tuple[str, int | None]] = []
    for v in versions:
        at = next((j + 1 for i in named for j in range(i + 1, min(i + 4, len(lines)))
                   if re.fullmatch(rf'\s*version\s*=\s*"{re.escape(v)}"\s*', lines[j])), None)
        out.append((v, at))
    return out


def python_pin(app: AppSource | None, name: str) -> tuple[str, Source] | None:
    """The version every manifest and lock file of `app` that pins `name` exactly pins
    it at, and the first place (a lock file's first: it is what is installed); None when
    none does, two disagree (which one is installed is not read) or a lock gives a
    version not of numbers (a pre-release)."""
    if app is None:
        return None
    found: list[tuple[str, Source]] = []
    for f in app.of_kind("py-lock"):
        found.extend((v, f.cite(n, f"{name}=={v}", name)) for v, n in _lock_pins(f.text, name))
    for f in app.of_kind("deps"):
        if f.name.startswith("Gemfile"):
            continue
        found.extend((v, f.cite(n, f"{name}=={v}", name)) for v, n in _pins(f.text, f.name, name))
    if not found or len({v for v, _ in found}) > 1 or not re.fullmatch(_VERSION, found[0][0]):
        return None
    return found[0]


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))
