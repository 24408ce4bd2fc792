"""One-off Python scripts beside an application: code no workload runs.

A file run as `python FILE` (a `__main__` block, or `asyncio.run(...)` at the top level)
that no other file of the repository imports, and that no Dockerfile, manifest,
Procfile, Makefile or shell script names, is a developer's tool (a seed, a check, a
data fix), run from a laptop with its own `.env`: no workload starts it, so it meets no
pooler of the repository (audit 13f N1: AcadMix's 15 seed_*/check_*/scripts/*.py each
built an engine and were each reported against the cluster's PgBouncer). An entry
point a container runs is named by its command (`CMD ["python", "worker.py"]`,
`uvicorn main:app`, a Job's args) and is kept; so is a file another one imports.

    one_off_scripts(root, paths, files) -> {script path}
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from advisor.lazyregex import lazy
from advisor.read.fs import InputError, Root

# `if __name__ == "__main__":` or `asyncio.run(main())`, at the start of a line
_RUN_AS_SCRIPT = lazy(r"^(?:if\s+__name__\s*==\s*['\"]__main__['\"]|asyncio\.run\()",
                      re.MULTILINE)
# Files whose text may name what a container or a Job runs.
_COMMAND_NAMES = frozenset({"Procfile", "Makefile", "makefile", "GNUmakefile", "justfile",
                            "Justfile", "Taskfile.yml", "tox.ini", "setup.cfg"})
_COMMAND_SUFFIXES = frozenset({".sh", ".bash", ".yaml", ".yml", ".toml", ".json", ".tpl",
                               ".cfg", ".ini", ".mk", ".tf", ".j2", ".erb", ".tmpl"})
_MAX_BYTES = 2 * 1024 * 1024


def _names_commands(path: Path) -> bool:
    name = path.name
    return name in _COMMAND_NAMES or name.startswith(("Dockerfile", "Containerfile")) or \
        name.endswith((".dockerfile", ".Dockerfile")) or path.suffix in _COMMAND_SUFFIXES


def _text(root: Root, path: str | Path) -> str | None:
    try:
        if Path(root.resolve(path)).stat().st_size > _MAX_BYTES:
            return None
        return root.read_text(path)
    except (InputError, OSError):
        return None


def one_off_scripts(root: Root, paths: set[str], files: list[Path]) -> set[str]:
    """The Python files among `paths` (shown paths) that run as scripts and that nothing
    in `files` (the repository's other files) imports or names as a command."""
    stems: dict[str, set[str]] = {}
    for path in sorted(p for p in paths if p.endswith(".py")):
        text = _text(root, path)
        if text is not None and _RUN_AS_SCRIPT.search(text) is not None:
            stems.setdefault(PurePosixPath(path).stem, set()).add(path)
    if not stems:
        return set()
    words = "|".join(re.escape(s) for s in sorted(stems, key=len, reverse=True))
    # in Python: imported (`import seed`, `from scripts.seed import x`, `from . import
    # seed`) or run by name (`runpy.run_path("seed.py")`, `subprocess.run([... "seed.py"])`)
    # (a message naming it, "Run seed.py first", runs nothing)
    imported = re.compile(rf"^[ \t]*(?:from|import)\b[^\n]*?(?<![\w-])({words})\b"
                          rf"|\b(?:run|run_path|Popen|system|call|check_call|check_output"
                          rf"|exec\w*)\([^\n]*?(?<![\w-])({words})\.py\b", re.MULTILINE)
    # in a command: `python seed.py`, `python -m scripts.seed`, `uvicorn seed:app`
    named = re.compile(rf"(?<![\w-])({words})(?![\w-])")
    used: set[str] = set()
    for f in files:
        if len(used) == len(stems):
            break
        is_py = f.suffix == ".py"
        if not is_py and not _names_commands(f):
            continue
        shown = root.rel(f)
        if shown in paths and is_py and shown in {p for s in stems.values() for p in s}:
            continue  # a script naming itself (its usage line) does not run it
        text = _text(root, f)
        if not text:
            continue
        for m in (imported if is_py else named).finditer(text):
            used.add(m.group(1) or m.group(2))
    return {p for stem, found in stems.items() if stem not in used for p in found}
