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

import contextlib
import difflib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from msgspec import Struct, field

from advisor.advise.records import Edit
from advisor.read.fs import InputError, Root, decode_text, read_regular


class FileChange(Struct):
    path: str  # as shown (relative to the root)
    real: Path
    before: str
    after: str
    applied: list[Edit] = field(default_factory=list)
    digest: str = ""  # sha256 of the bytes read: the file must still hold them at write
    bom: bool = False  # a UTF-8 byte order mark, written back
    root: Path | None = None  # the repository: nothing outside it is written

    def diff(self) -> str:
        """The change as a unified diff. Context lines that hold a secret (a password
        key, a URL's password, any line of a Kubernetes Secret) show `***` for it: such
        a hunk no longer applies with `git apply` (`masks` says so), `advise --write`
        applies it."""
        return self._diff()[0]

    @property
    def masks(self) -> bool:
        """Whether the diff shows a secret as `***`: then it does not apply as printed."""
        return self._diff()[1]

    def _diff(self) -> tuple[str, bool]:
        secret = secret_lines(self.before)
        out = []
        hidden = False
        old_line = 0  # the line of `before` the next context or removed line is
        for line in difflib.unified_diff(editor_lines(self.before), editor_lines(self.after),
                                         fromfile=f"a/{self.path}", tofile=f"b/{self.path}"):
            hunk = _HUNK.match(line)
            if hunk is not None:
                old_line = int(hunk.group(1))
            elif line.startswith(" ") or (line[:1] in "+-" and not line.startswith(("+++",
                                                                                    "---"))):
                shown = line[0] + masked(line[1:], whole=line[0] == " " and old_line in secret)
                hidden = hidden or shown != line
                line = shown
                old_line += line[0] != "+"
            out.append(line)
            if not line.endswith("\n"):
                # the file's last line has no newline: say so as diff does, else `git
                # apply` reads the next line as part of it ("corrupt patch")
                out.append("\n\\ No newline at end of file\n")
        return "".join(out), hidden


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
        if _helm_helper(shown):
            for e in file_edits:
                result.refused.append((e, f"{shown}:{e.line}: a Helm named template's line, "
                                          "written into every template that includes it: "
                                          "edit it by hand, or set the value in values"))
            continue
        located = _locate(shown, roots)
        if located is None:
            for e in file_edits:
                result.refused.append((e, f"{shown}: not found under {', '.join(map(str, roots))}"))
            continue
        root, real = located
        try:
            linked = symlink_on_the_way(root.path, shown)
            if linked is not None:
                raise InputError(shown, f"{linked} is a symlink; edits are not written "
                                 "through symlinks")
            data = read_regular(real)
            text = decode_text(shown, data)
        except InputError as exc:
            for e in file_edits:
                result.refused.append((e, f"{exc.label()}: {exc.message}"))
            continue
        except OSError as exc:
            for e in file_edits:
                result.refused.append((e, f"{shown}: cannot read: {exc.strerror or exc}"))
            continue
        lines = editor_lines(text)
        change = FileChange(path=shown, real=real, before=text, after=text,
                            digest=_sha256(data), bom=data.startswith(BOM), root=root.path)
        for e in sorted(file_edits, key=lambda x: x.line):
            if e.insert:
                continue  # after the replacements, which keep line numbers
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
        inserts = [e for e in file_edits if e.insert]
        item_indent = {e.indent_from: _item_indent(lines, e.indent_from)
                       for e in inserts if e.indent_from is not None}  # before lines move
        for e in sorted(reversed(inserts), key=lambda x: -x.line):  # bottom up, in order
            if not 1 <= e.line <= len(lines):
                result.refused.append((e, f"{shown}:{e.line}: no such line"))
                continue
            if e.indent_from is None:
                lines[e.line:e.line] = [_inserted_line(lines, e.line, e.new)]
            elif (indent := item_indent[e.indent_from]) is None:
                result.refused.append(
                    (e, f"{shown}:{e.indent_from}: not a `- ` list item as scanned (changed "
                        "since the scan?): add it by hand"))
                continue
            else:
                lines[e.line:e.line] = [indent + e.new + _ending(lines[e.line - 1], lines)]
            if not lines[e.line - 1].endswith(("\n", "\r")):
                lines[e.line - 1] += _ending(lines[e.line - 1], lines)
            change.applied.append(e)
        change.after = "".join(lines)
        if not change.applied:
            continue
        # a file that was no YAML before (a chart template: `{{ }}` in a flow mapping)
        # is not made invalid by the edit: Helm renders it, as the trial check does
        problem = _still_loads(shown, change.after) \
            if _still_loads(shown, change.before) is None else None
        if problem is not None:
            for e in change.applied:
                result.refused.append((e, problem))
            continue
        result.changes.append(change)
    return result


def _helm_helper(shown: str) -> bool:
    """A chart's named-template file (templates/_helpers.tpl, templates/lib/_x.yaml):
    Helm renders no manifest from a `_` file, its `define`s are included elsewhere, so one
    line there may set the value of several workloads (citations point at it since the
    include lines are traced, advisor.read.render.helm_include_lines)."""
    parts = shown.replace("\\", "/").split("/")
    return "templates" in parts[:-1] and parts[-1].startswith("_")


def _item_indent(lines: list[str], line: int) -> str | None:
    """The indentation of the YAML list item at `line` (what precedes its `- `), None
    when that line is not a block list item."""
    if not 1 <= line <= len(lines):
        return None
    body = lines[line - 1]
    indent = body[: len(body) - len(body.lstrip(" "))]
    return indent if body[len(indent):].startswith("- ") else None


def _inserted_line(lines: list[str], after: int, text: str) -> str:
    """`text` as a line after line `after`, indented like the nearest non-blank line at
    or above it (a conf file inside a YAML block keeps the block's indentation)."""
    indent = ""
    for body in reversed(lines[:after]):
        if body.strip():
            indent = body[: len(body) - len(body.lstrip(" \t"))]
            break
    return indent + text + _ending(lines[after - 1], lines)


def _ending(line: str, lines: list[str]) -> str:
    """The file's line ending: the given line's, else the first one found, else LF."""
    for body in (line, *lines):
        stripped = body.rstrip("\r\n")
        if stripped != body:
            return body[len(stripped):]
    return "\n"


def _without_conflicts(edits: list[Edit], result: EditPlan) -> list[Edit]:
    """One edit per file line: duplicates merge; different new values for one line are
    refused (two proposals disagree; the user decides). Lines added after one line are
    told apart by their key."""
    by_line: dict[tuple[str, int, str], list[Edit]] = {}
    for e in edits:
        by_line.setdefault((e.path, e.line, e.key if e.insert else ""), []).append(e)
    kept: list[Edit] = []
    for (path, line, _), group in by_line.items():
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

    yaml = YAML(typ="rt")
    # Helm and kubectl read duplicate keys (the last wins; the real Mastodon chart's
    # values.yaml has one): a file that had them is not made invalid by an edit
    yaml.allow_duplicate_keys = True
    try:
        list(yaml.load_all(text))
    except YAMLError as exc:
        return f"{shown}: the edit would make the YAML invalid ({str(exc).splitlines()[0]})"
    return None


# Keys whose values are secrets, in any of the formats edited (YAML, ini, .properties,
# .env, postgresql.conf, libpq connection strings `password=x`), and a URL's password.
_SECRET_KEY = re.compile(
    r"(?i)((?:[\w.-]*(?:pass(?:word|wd)?|pwd|secret|token|credential|api[_-]?key|"
    r"private[_-]?key)[\w.-]*)[\"']?\s*[:=]\s*)([^\s#;]+|\"[^\"]*\"|'[^']*')")
_URL_PASSWORD = re.compile(r"(://[^/\s:@]*:)([^@\s/]+)(@)")
_SECRET_KIND = re.compile(r"kind:\s*Secret\s*")
_DOC_START = re.compile(r"---(?:\s|$)")
_HUNK = re.compile(r"@@ -(\d+)")


def secret_lines(text: str) -> set[int]:
    """The lines (1-based) of the YAML documents of `text` that are Kubernetes Secrets:
    only those are masked whole, not the ConfigMap or Deployment beside them in the file
    (audit 45: Taskflow's configmap.yaml, a ConfigMap then a Secret: the ConfigMap's
    DB_HOST hunk showed `name: ***`, `DB_PORT: ***` and no longer applied)."""
    out: set[int] = set()
    doc: list[int] = []
    is_secret = False
    for n, line in enumerate([*editor_lines(text), "---\n"], start=1):
        if _DOC_START.match(line):
            if is_secret:
                out.update(doc)
            doc, is_secret = [], False
        doc.append(n)
        is_secret = is_secret or _SECRET_KIND.fullmatch(line.rstrip("\r\n")) is not None
    return out


def masked(line: str, *, whole: bool = False) -> str:
    """`line` with secret values as `***` (every value after a `:` for `whole`: a line
    of a Secret manifest)."""
    end = line[len(line.rstrip("\r\n")):]
    body = line[: len(line) - len(end)]
    if whole:
        key, sep, value = body.partition(":")
        return (f"{key}{sep} ***" if sep and value.strip() else body) + end
    body = _URL_PASSWORD.sub(r"\1***\3", body)
    return _SECRET_KEY.sub(r"\1***", body) + end


BOM = b"\xef\xbb\xbf"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def editor_lines(text: str) -> list[str]:
    """Lines as editors number them, each with its ending: LF, CRLF or a lone CR end a
    line; a form feed, vertical tab or U+2028 inside a .properties comment does not
    (str.splitlines would split there and shift every later edit)."""
    return _LINE.findall(text)


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def symlink_on_the_way(root: Path, shown: str) -> str | None:
    """The first component of `shown` (relative to `root`) that is a symlink, if any."""
    here = root
    for part in Path(shown).parts:
        here = here / part
        if here.is_symlink():
            return here.relative_to(root).as_posix()
    return None


class WriteRefused(Exception):
    def __init__(self, message: str, written: list[str] | None = None) -> None:
        super().__init__(message)
        self.written = written or []


def write(plan_: EditPlan) -> list[str]:
    """Write every change; returns the paths written. Each file is checked again first
    (still the bytes the diff was made from, not a symlink, inside the repository) and
    replaced atomically: a temporary file in the same folder, its mode set to the
    file's, renamed over it. A refused file raises WriteRefused after the others."""
    written, refused = [], []
    for c in plan_.changes:
        try:
            _write_one(c)
        except WriteRefused as exc:
            refused.append(str(exc))
            continue
        written.append(c.path)
    if refused:
        raise WriteRefused("; ".join(refused), written)
    return written


def _write_one(c: FileChange) -> None:
    import os
    import stat
    import tempfile

    root = c.root or c.real.parent
    linked = symlink_on_the_way(root, c.path)
    if linked is not None:
        raise WriteRefused(f"{c.path}: not written: {linked} is a symlink")
    target = root / c.path
    real = target.resolve()
    if real != c.real or (real != root and root not in real.parents):
        raise WriteRefused(f"{c.path}: not written: it is outside the repository {root}")
    try:
        now = read_regular(target)
    except OSError as exc:
        raise WriteRefused(f"{c.path}: not written: {exc}") from None
    if _sha256(now) != c.digest:
        raise WriteRefused(f"{c.path}: not written: the file changed since the diff was made "
                           "(run advise again)")
    mode = stat.S_IMODE(os.stat(target).st_mode)
    data = (BOM if c.bom else b"") + c.after.encode("utf-8")
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                suffix=".pool-advisor")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
