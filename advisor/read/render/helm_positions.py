"""Positions of rendered Helm output: the path shown for a template, the template line
each rendered line comes from, and rewriting ruamel line info to point there."""

from __future__ import annotations

import base64
import bisect
import difflib
import functools
import re
from array import array
from collections.abc import Callable
from typing import Any

from advisor.model import Source
from advisor.read.fs import InputError, Root
from advisor.read.yamlnodes import Positions, _ints, pack_positions


def in_chart(chart_rel: str, rel: str) -> str:
    """The path shown for `rel` inside the chart at `chart_rel` (as shown): `rel` alone
    for a chart at the root ("" or "."), never `./templates/x.yaml` (values files were
    shown without the `./`, the chart's templates with it)."""
    return rel if chart_rel in ("", ".") else f"{chart_rel}/{rel}"


def template_display(chart_rel: str, subdirs: dict[str, str], key: str) -> str:
    """`api/charts/db/templates/x.yaml` (engine key) -> path shown to users: the
    template under the chart (or subchart) directory, `archive.tgz#db/templates/x.yaml`
    inside a packaged subchart. `subdirs`: "db" / "db/inner" -> its path."""
    rest = key.split("/")[1:]
    base = chart_rel
    chain: list[str] = []
    while len(rest) >= 3 and rest[0] == "charts":
        chain.append(rest[1])
        where = subdirs.get("/".join(chain))
        if where is None:
            break
        if where.endswith(".tgz"):
            return f"{where}#{'/'.join(rest[1:])}"
        base, rest = where, rest[2:]
    return in_chart(base, "/".join(rest))


def chart_dir(chart_rel: str, subdirs: dict[str, str], key: str) -> str | None:
    """The folder (as shown) of the chart or subchart whose template the engine key
    `api/charts/db/templates/x.yaml` is; None inside a packaged subchart."""
    rest = key.split("/")
    i = 1
    while i + 1 < len(rest) and rest[i] == "charts":
        i += 2
    if i >= len(rest) or rest[i] != "templates":
        return None
    shown = template_display(chart_rel, subdirs, "/".join([*rest[:i], "templates", "x"]))
    if shown == "templates/x":
        return ""
    return shown[:-len("/templates/x")] if shown.endswith("/templates/x") else None


def template_text(root: Root, display: str) -> str | None:
    """The template's text; None when it cannot be read (or sits in a .tgz)."""
    if "#" in display:
        return None  # inside a .tgz: positions stay those of the rendered stream
    try:
        # A plain file below the root is read with one lstat (read_text's pathlib
        # resolution was most of reading a template); anything else goes to read_text.
        below = root.read_below(display)
        return below[0] if below is not None else root.read_text(display)
    except InputError:
        return None


_KEY = re.compile(r"^\s*(?:-\s+)*([\"']?[\w./-]+[\"']?)\s*:(?:\s|$)")


@functools.lru_cache(maxsize=8192)  # lines repeat within a chart and across its copies
def _line_key(line: str) -> str:
    stripped = line.strip()
    if stripped.startswith("{{") and stripped.endswith("}}"):
        return "\0ctl"
    match = _KEY.match(line)
    if match:
        return match.group(1).strip("\"'") + ":"
    return stripped


def line_map(template: str, rendered: str) -> dict[int, int]:
    """0-based rendered line -> 0-based template line, by aligning YAML keys. Read
    only: the same map is handed out for the same keys. What a `range` loop writes
    more than once (a Deployment per service, an init container per store) maps to the
    loop body's lines each time, not to the line after the first copy. A line is then
    moved to the template line near it that writes it (`_by_text`): the branch of an
    `if` its key is in, or a line whose key was filled in by an action."""
    r_lines = rendered.splitlines()
    t_keys, emits, written = _template_side(template)
    mapping, matched = _aligned(t_keys, tuple(map(_line_key, r_lines)), loop_lines(template),
                                emits)
    moved = _by_text(written, r_lines, mapping, matched)
    return {**mapping, **moved} if moved else mapping


# Read only: what line_map reads of the template alone, once per text (a chart's copies
# in a monorepo, a chart's templates per environment).
@functools.lru_cache(maxsize=1024)
def _template_side(template: str) -> tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...]]:
    """(each line's key, "\0def" inside a `define`; the lines that emit a YAML block;
    the lines as _by_text reads them, those inside a `define` blank)."""
    t_lines = template.splitlines()
    defined = define_lines(template)
    t_keys = tuple("\0def" if i in defined else key
                   for i, key in enumerate(map(_line_key, t_lines)))
    emits = tuple(i for i, line in enumerate(t_lines) if i not in defined and _emits(line))
    written = tuple(("" if i in defined else x) for i, x in enumerate(t_lines))
    return t_keys, emits, written


# How far from its aligned line (or between the lines aligned around it) a rendered line
# is looked for among the template lines that write it.
_NEAR = 40


def _by_text(t_lines: list[str] | tuple[str, ...], r_lines: list[str],
             mapping: dict[int, int], matched: frozenset[int]) -> dict[int, int]:
    """Rendered lines whose aligned template line does not write them, each moved to the
    nearest template line that does (its text with the actions filled in): the key
    alignment took the first `command:` of `if cassandra / else if sql` for the sql
    branch's (temporalio/helm-charts server-job.yaml:49 for :51), and a line with no key
    of its own (`- temporal-sql-tool setup-schema ... {{ $schema }}/versioned`) stayed at
    the line before it (`args:`)."""
    writers, able = _writers(tuple(t_lines))
    if not able:
        return {}
    moved: dict[int, int] = {}
    following = _next_matched(len(r_lines), matched, mapping)
    for r, line in enumerate(r_lines):
        text = line.strip()
        if not text:
            continue
        t = mapping.get(r, 0)
        if r in matched:
            own = writers[t] if t < len(t_lines) else None
            if own is not None and own[1].fullmatch(text) is not None:
                continue  # it writes it (or may: an action that writes lines is no proof)
            lo, hi = t - _NEAR, t + _NEAR + 1
        else:
            stop = following[r]
            lo, hi = t + 1, (stop if t < stop <= t + 4 * _NEAR else t + _NEAR + 1)
        best = None
        for c in able[bisect.bisect_left(able, lo):bisect.bisect_left(able, hi)]:
            prefix, pattern = writers[c]  # type: ignore[misc]
            if text.startswith(prefix) and pattern.fullmatch(text) is not None \
                    and (best is None or abs(c - t) < abs(best - t)):
                best = c
        if best is not None and best != t:
            moved[r] = best
    return moved


# Read only: the same lines (a template's, a helper expansion's) in each of a chart's
# copies.
@functools.lru_cache(maxsize=1024)
def _writers(t_lines: tuple[str, ...]) -> tuple[tuple[tuple[str, re.Pattern[str]] | None, ...],
                                                 list[int]]:
    """_writer of each line, and the lines that have one."""
    writers = tuple(_writer(line) for line in t_lines)
    return writers, [i for i, w in enumerate(writers) if w is not None]


def _next_matched(count: int, matched: frozenset[int], mapping: dict[int, int]) -> list[int]:
    """For each rendered line, the template line of the next aligned line after it (the
    end of the template's stretch an unaligned line can be from); -1 when none."""
    out = [-1] * count
    nxt = -1
    for r in range(count - 1, -1, -1):
        out[r] = nxt
        if r in matched:
            nxt = mapping[r]
    return out


@functools.lru_cache(maxsize=8192)
def _writer(template_line: str) -> tuple[str, re.Pattern[str]] | None:
    """(the text before its first action, the lines it writes) of a template line that
    writes a line in place and says enough of it to tell: a line of actions alone
    (`{{ .Values.x }}`) could be any line."""
    pattern = _line_pattern(template_line)
    if pattern is None or len(_ACTION.sub("", template_line).strip()) < 4:
        return None
    return _ACTION.split(template_line.strip())[0], pattern


# Passes over what a loop wrote again: one copy of its body is matched a pass.
MAX_LOOP_PASSES = 200
# A run of lines matched again to a loop's body is kept from this length on: a lone key
# (`name:` of a label a helper wrote) that a loop line also has is no copy of the loop.
_MIN_REPEAT = 2


# The alignment depends on the lines' keys only: the same template rendered with other
# values (a chart's copies in a monorepo, a chart rendered per environment) gives the
# same keys, and difflib's alignment was paid again for each.
@functools.lru_cache(maxsize=256)
def _aligned(t_keys: tuple[str, ...], r_keys: tuple[str, ...],
             loop: tuple[int, ...] = (), emits: tuple[int, ...] = ()
             ) -> tuple[dict[int, int], frozenset[int]]:
    """(rendered line -> template line, the rendered lines aligned by key; the others
    are at the line of the aligned line before them, or at the line after it when that
    line is an action that writes a YAML block (`emits`: `{{ toYaml . }}`,
    `{{ include ... }}`), which wrote them)."""
    matcher = difflib.SequenceMatcher(None, t_keys, r_keys, autojunk=False)
    mapping: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            mapping[block.b + k] = block.a + k
    if loop:
        _match_repeats(t_keys, r_keys, loop, mapping)
    matched = frozenset(mapping)
    taken = frozenset(mapping.values())
    writes = frozenset(emits) - taken
    last = here = 0
    for r in range(len(r_keys)):
        if r in mapping:
            last = mapping[r]
            here = last + 1 if last + 1 in writes else last
        else:
            mapping[r] = here
    return mapping, matched


def _match_repeats(t_keys: tuple[str, ...], r_keys: tuple[str, ...], loop: tuple[int, ...],
                   mapping: dict[int, int]) -> None:
    """Match the rendered lines the first alignment left over to the lines inside the
    template's `range` loops, a pass per copy of a loop's body: one alignment is in
    order, so it matches a loop's body to its first copy only, and every later copy
    was cited at the line after the first one (temporalio/helm-charts
    server-deployment.yaml: history, matching and worker at its closing `---`). Only
    loop lines: a line outside every loop is written once, by the first alignment."""
    t_idx = [i for i in loop if i < len(t_keys) and t_keys[i] != "\0ctl"]
    t_sub = tuple(t_keys[i] for i in t_idx)
    for _ in range(MAX_LOOP_PASSES):
        r_idx = [r for r in range(len(r_keys)) if r not in mapping]
        if not r_idx or not t_sub:
            return
        matcher = difflib.SequenceMatcher(None, t_sub, tuple(r_keys[r] for r in r_idx),
                                          autojunk=False)
        added = False
        for block in matcher.get_matching_blocks():
            if block.size < _MIN_REPEAT:
                continue
            for k in range(block.size):
                mapping[r_idx[block.b + k]] = t_idx[block.a + k]
            added = True
        if not added:
            return


# A comment, whole (what it says is no action), or the first word of an action.
_ACTION_WORD = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}|\{\{-?\s*([a-z]+)", re.DOTALL)
_OPENS = frozenset({"if", "with", "range", "define", "block"})


# An action that writes nothing: a control word, an assignment, a comment.
_SILENT = re.compile(r"\{\{-?\s*(?:(?:if|else|end|range|with|define|break|continue)\b"
                     r"|\$[\w.]*\s*:?=|/\*)")


# What writes a block of YAML lines: a line of such an action alone writes the lines
# after the one aligned before it. A scalar action (`{{ .Values.a }}`) could be any
# line, and is left to the line before (_writer).
_BLOCK = re.compile(r"\b(?:toYaml|toToml|include|template|tpl|nindent|indent)\b")


def _emits(line: str) -> bool:
    """A line that is one action writing a YAML block (`{{ merge . $m | toYaml }}`)."""
    text = line.strip()
    return text.startswith("{{") and text.endswith("}}") and text.count("{{") == 1 \
        and _SILENT.match(text) is None and _BLOCK.search(text) is not None


@functools.lru_cache(maxsize=1024)
def define_lines(template: str) -> frozenset[int]:
    """The 0-based lines of the template inside a `define` block: they write nothing
    where they stand (only where the helper is included, helm_include_lines), so no
    rendered line is theirs. 8gears/n8n-helm-chart extraManifests.yaml: the objects its
    `toYaml` writes were aligned to the labels of its own `extraManifests.metadata`
    helper, and a CNPG Cluster's shared_buffers cited at `release: {{ .Release.Name }}`."""
    if "define" not in template:
        return frozenset()
    return frozenset(i for word, start, end in action_blocks(template) if word == "define"
                     for i in range(start, end + 1))


@functools.lru_cache(maxsize=1024)
def loop_lines(template: str) -> tuple[int, ...]:
    """The 0-based lines of the template inside a `range` block (its opening and
    closing lines included): the only lines a render can write more than once."""
    if "range" not in template:
        return ()
    inside: set[int] = set()
    for word, start, end in action_blocks(template):
        if word == "range":
            inside.update(range(start, end + 1))
    return tuple(sorted(inside))


def action_blocks(template: str) -> list[tuple[str, int, int]]:
    """(opening word, 0-based line of its action, line of its `end`) of each block of
    the template: an `end` closes the innermost `if`, `with`, `range`, `define` or
    `block`; comments are skipped."""
    starts = [m.start() for m in re.finditer("\n", template)]
    stack: list[tuple[str, int]] = []
    blocks: list[tuple[str, int, int]] = []
    for m in _ACTION_WORD.finditer(template):
        word = m.group(1)
        if word is None:
            continue  # a comment
        line = bisect.bisect_left(starts, m.start())
        if word in _OPENS:
            stack.append((word, line))
        elif word == "end" and stack:
            opened, start = stack.pop()
            blocks.append((opened, start, line))
    return blocks


def mark_generated(obj: Any, template: list[str],
                   place: Callable[[str], dict[int, Source]] | None = None) -> None:
    """Record (`generated_key`) each multi-line ConfigMap or Secret text whose lines are
    not the template's lines from its key on: one an `include`, `tpl` or `nindent`
    wrote. Its lines are then cited at its key's line, not the key's line + n, which
    may be another line of the template or none at all, except those `place` finds
    written in a file of the chart (`written_line_key`: helm_text_lines.place_text).
    `obj` is relocated already."""
    from advisor.read.render import field_path, generated_key, written_line_key
    from advisor.read.sources.k8s import block_offset

    if obj.kind not in ("ConfigMap", "Secret"):
        return
    for section in ("data", "stringData"):
        node = obj.body.get(section)
        if not isinstance(node, dict):
            continue
        for key, text in node.items():
            if not isinstance(text, str):
                continue
            if section == "data" and obj.kind == "Secret":
                # base64: never in the template as such (its key line is cited), but its
                # lines can be a chart file's
                decoded = _decoded(text)
                if place is not None and decoded and "\n" in decoded.rstrip("\n"):
                    for n, source in place(decoded).items():
                        obj.value_sources[written_line_key(field_path(section, key), n)] = \
                            source
                continue
            if "\n" not in text.rstrip("\n"):
                continue
            start = block_offset(node, key) + obj.line_offset
            if not _written_there(template, start, text):
                where = obj.location(section, key)
                dotted = field_path(section, key)
                obj.value_sources[generated_key(dotted)] = Source(
                    path=where.path, line=where.line, key=f"{section}.{key}")
                for n, source in (place(text) if place is not None else {}).items():
                    obj.value_sources[written_line_key(dotted, n)] = source


def _decoded(text: str) -> str | None:
    """A Secret's data value as the text it encodes; None when it is no UTF-8 base64."""
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None


_ACTION = re.compile(r"\{\{.*?\}\}")
# An action that writes lines of its own or none (a branch, a helper, an indented
# block): the lines after it are not the template's next lines.
_NOT_IN_PLACE = re.compile(r"\b(?:include|tpl|template|toYaml|toToml|toJson|nindent|indent|"
                           r"if|else|end|range|with|define|block)\b|\{\{-|-\}\}")


def _written_there(template: list[str], start: int, text: str) -> bool:
    """Whether each line of `text` is the template's line `start + n` with its actions
    filled in, no action there writing lines of its own."""
    lines = text.rstrip("\n").split("\n")
    if start < 0 or start + len(lines) > len(template):
        return False
    return all(_fills(template[start + n], line) for n, line in enumerate(lines))


@functools.lru_cache(maxsize=4096)
def _line_pattern(line: str) -> re.Pattern[str] | None:
    """The rendered lines the template line can give; None when an action on it writes
    lines of its own or none."""
    actions = _ACTION.findall(line)
    if any(_NOT_IN_PLACE.search(a) for a in actions) or ("{{" in line and not actions):
        return None
    parts = _ACTION.split(line.strip())
    return re.compile(".*".join(map(re.escape, parts)), re.DOTALL)


def _fills(template_line: str, rendered: str) -> bool:
    pattern = _line_pattern(template_line)
    return pattern is not None and pattern.fullmatch(rendered.strip()) is not None


def relocate(node: Any, move: Any, depth: int = 0) -> None:
    """Rewrite the line info in place (0-based lines) so `location()` reports positions
    in the file the object really comes from. `move`: line -> line, a function or a dict
    (a line not in it stays; looked up without a Python call per line). The moved
    positions are held packed, as advisor.read.yamlpos reads them (a dict of lists per
    mapping was most of a tree's memory), which is also what the parse cache stores."""
    if depth > 100:
        return
    if not _relocate_packed(node, move):
        _relocate_data(node, _as_function(move))
    if isinstance(node, dict):
        children: Any = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return
    for v in children:
        if type(v) not in _PLAIN_SCALARS:  # nothing to move in a str, number or null
            relocate(v, move, depth + 1)


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})


def _relocate_packed(node: Any, move: Any) -> bool:
    """`_relocate_data`'s result for a mapping or sequence whose positions are still
    packed as read, without unpacking them: the lines moved in a copy of the ints (a
    dict of lists made and packed again per mapping was most of relocating). False,
    nothing changed, for anything else (a node without positions, unpacked ones, a
    mapping whose packed keys repeat one: unpacking keeps its last)."""
    if not isinstance(node, Positions) or getattr(node, "_data", False) is not None:
        return False
    keys, packed = node._keys, node._pos
    if packed is None or (keys is not None and len(set(keys)) != len(keys)):
        return False
    if len(packed) & 1 and type(move) is dict:
        moved = _moved_short(packed, keys, move)
        if moved is not None:
            node._pos = moved
            return True
    # The packed ints: the node's own (line, col), then (line, col) per item or (key
    # line, key col, value line, value col) per key: every line at an even index.
    ints = array("i", _ints(packed))
    body = len(ints) - 2
    if body != (4 * len(keys) if keys is not None else body // 2 * 2):
        return False
    try:
        at = ints[0::2]
        lines = array("i", map(move.get, at, at) if type(move) is dict else map(move, at))
    except (OverflowError, TypeError):  # not a C int: left unpacked, as _packed does
        return False
    ints[0::2] = lines
    node._pos = pack_positions(ints)
    return True


def _moved_short(packed: bytes, keys: tuple[Any, ...] | None, move: dict[int, int]
                 ) -> bytes | None:
    """The short form (two bytes an int, as nearly every rendered template is read) of
    `packed` with its lines moved, worked on in that form: what pack_positions gives
    for the moved ints when every moved line fits two bytes, without the copy to C ints
    and back (two fifths of relocating a chart). None when a line does not fit, or the
    ints are not in the form expected: the general path then decides."""
    ints = array("H")
    ints.frombytes(packed[:-1])
    body = len(ints) - 2
    if body != (4 * len(keys) if keys is not None else body // 2 * 2):
        return None
    at = ints[0::2]
    try:
        ints[0::2] = array("H", map(move.get, at, at))
    except (OverflowError, TypeError):  # below 0, past 65,535, or not an int
        return None
    return ints.tobytes() + b"\0"


def _as_function(move: Any) -> Any:
    if type(move) is dict:
        return lambda line0: move.get(line0, line0)
    return move


def _relocate_data(node: Any, move: Any) -> None:
    lc = getattr(node, "lc", None)
    if lc is not None:
        if getattr(lc, "line", None) is not None:
            lc.line = move(lc.line)
        data = getattr(lc, "data", None) or {}
        for k, pos in list(data.items()):
            pos = list(pos)
            pos[0] = move(pos[0])
            if len(pos) >= 3:
                pos[2] = move(pos[2])
            data[k] = pos
        packed = _packed(node, lc, data)
        if packed is not None:
            node.place(lc.line, lc.col, *packed)


def _packed(node: Any, lc: Any, data: dict[Any, list[int]]) -> tuple[tuple | None, bytes] | None:
    """`lc`'s positions packed as advisor.read.yamlpos holds them (the keys, None for a
    sequence, and 4 ints per mapping key, 2 per sequence item); None when they do not
    have that form (left as they are)."""
    from advisor.read.yamlnodes import PosList, PosMap

    if lc is not node or not isinstance(lc.line, int) or not isinstance(lc.col, int):
        return None  # a yamlpos node is its own `lc`
    width = 4 if isinstance(node, PosMap) else 2 if isinstance(node, PosList) else 0
    if width == 0 or (width == 2 and list(data) != list(range(len(data)))):
        return None
    flat = [x for pos in data.values() for x in pos]
    if len(flat) != width * len(data) or not all(type(x) is int for x in flat):
        return None
    try:
        ints = array("i", flat)
    except OverflowError:
        return None
    return (tuple(data) if width == 4 else None), ints.tobytes()
