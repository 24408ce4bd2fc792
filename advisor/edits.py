"""Apply one-value edits to files at their line, and show them as a unified diff.

An edit names a file, a line, the key and the old and new value text. Only that token
on that line changes, so comments, quoting, indentation and key order stay as they
were in every format (YAML, pgbouncer.ini, postgresql.conf, .properties, .env). A YAML
file is parsed again after editing (ruamel.yaml, round-trip loader) and the edit is
refused if it no longer loads. An edit whose line does not hold the old value (the
file changed since the scan, or the value came from a rendered template) is refused
with the reason, never guessed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from msgspec import Struct, field

from advisor.advise import Edit
from advisor.fs import InputError, Root


class FileChange(Struct):
    path: str  # as shown (relative to the root)
    real: Path
    before: str
    after: str
    applied: list[Edit] = field(default_factory=list)

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"a/{self.path}",
                tofile=f"b/{self.path}",
            )
        )


class EditPlan(Struct):
    changes: list[FileChange] = field(default_factory=list)
    refused: list[tuple[Edit, str]] = field(default_factory=list)

    def diff(self) -> str:
        return "".join(c.diff() for c in self.changes)


def _token(old: str) -> re.Pattern[str]:
    # The old value as a whole token: not part of a longer number or word.
    return re.compile(r"(?<![\w.])" + re.escape(old) + r"(?![\w.])")


def edit_line(line: str, key: str, old: str, new: str) -> str | None:
    """The line with `old` (after `key`, when the key is on the line) replaced by `new`."""
    start = 0
    if key:
        # Keys are written in several forms (relaxed binding, env names); try the key
        # as given, then its last dotted part.
        for form in (key, key.rsplit(".", 1)[-1]):
            at = line.find(form)
            if at >= 0:
                start = at + len(form)
                break
    m = _token(old).search(line, start)
    if m is None:
        return None
    return line[: m.start()] + new + line[m.end() :]


def plan(edits: Iterable[Edit], roots: Sequence[Path]) -> EditPlan:
    """Read each file once (through Root: never outside the scanned root), apply its
    edits in memory, check YAML still loads."""
    result = EditPlan()
    by_path: dict[str, list[Edit]] = {}
    for e in _without_conflicts(list(edits), result):
        by_path.setdefault(e.path, []).append(e)
    for shown, file_edits in by_path.items():
        located = _locate(shown, roots)
        if located is None:
            for e in file_edits:
                result.refused.append((e, f"{shown}: not found under {', '.join(map(str, roots))}"))
            continue
        root, real = located
        try:
            text = root.read_text(real)
        except InputError as exc:
            for e in file_edits:
                result.refused.append((e, f"{exc.label()}: {exc.message}"))
            continue
        lines = text.splitlines(keepends=True)
        change = FileChange(path=shown, real=real, before=text, after=text)
        for e in sorted(file_edits, key=lambda x: x.line):
            if not 1 <= e.line <= len(lines):
                result.refused.append((e, f"{shown}:{e.line}: no such line"))
                continue
            body = lines[e.line - 1]
            edited = edit_line(body, e.key, e.old, e.new)
            if edited is None:
                result.refused.append(
                    (e, f"{shown}:{e.line}: {e.old!r} not found on the line (changed since "
                        "the scan, or generated from a template): edit it by hand")
                )
                continue
            lines[e.line - 1] = edited
            change.applied.append(e)
        change.after = "".join(lines)
        if not change.applied:
            continue
        problem = _still_loads(shown, change.after)
        if problem is not None:
            for e in change.applied:
                result.refused.append((e, problem))
            continue
        result.changes.append(change)
    return result


def _without_conflicts(edits: list[Edit], result: EditPlan) -> list[Edit]:
    """One edit per file line: duplicates merge; different new values for one line are
    refused (two proposals disagree; the user decides)."""
    by_line: dict[tuple[str, int], list[Edit]] = {}
    for e in edits:
        by_line.setdefault((e.path, e.line), []).append(e)
    kept: list[Edit] = []
    for (path, line), group in by_line.items():
        if len({(e.key, e.old, e.new) for e in group}) == 1:
            kept.append(group[0])
            continue
        values = ", ".join(sorted({e.new for e in group}))
        for e in group:
            result.refused.append(
                (e, f"{path}:{line}: proposals disagree on this line ({values}): edit it by hand")
            )
    return kept


def _locate(shown: str, roots: Sequence[Path]) -> tuple[Root, Path] | None:
    for r in roots:
        base = r if r.is_dir() else r.parent
        root = Root.of(base)
        try:
            real = root.resolve(shown)
        except InputError:
            continue
        if real.is_file():
            return root, real
    return None


def _still_loads(shown: str, text: str) -> str | None:
    if not shown.endswith((".yaml", ".yml")):
        return None
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        list(YAML(typ="rt").load_all(text))
    except YAMLError as exc:
        return f"{shown}: the edit would make the YAML invalid ({str(exc).splitlines()[0]})"
    return None


def write(plan_: EditPlan) -> list[str]:
    """Write every change; returns the paths written."""
    written = []
    for c in plan_.changes:
        c.real.write_text(c.after, encoding="utf-8")
        written.append(c.path)
    return written
