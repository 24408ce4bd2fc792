"""The chart file lines a ConfigMap or Secret text comes from when its template did not
write it line for line: a config file the chart ships and reads with
`tpl (.Files.Get "configs/x.yaml.tpl")` or `.Files.Get`, or the body of a helper
(`define`) the template `include`s. element-hq/ess-helm (83c7981)
charts/matrix-stack/templates/synapse/_helpers.tpl:237 writes Synapse's
01-homeserver-underrides.yaml with `tpl ($root.Files.Get
"configs/synapse/synapse-01-shared-underrides.yaml.tpl")`: its `cp_max: 10` was cited at
the ConfigMap's `data:` line, it is written at that file's line 70.

A text is placed in the one file part (a Files.Get file, a helper's body) whose lines
it follows best, aligned by key in order, each aligned pair checked: the line as
written, or with its actions filled in (helm_positions._fills). Only when at least half
of the text's lines are found so (and two), since a key such as `name:` is in many
templates; the other lines stay at the field's key line (TextPlaces.flat).
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections import Counter

from msgspec import Struct
from msgspec.structs import replace

from advisor.model import Source
from advisor.read.fs import InputError, Root, walk
from advisor.read.render.helm_positions import _fills, _line_key, action_blocks, in_chart

MAX_TEMPLATE_FILES = 1000  # files of a chart's templates/ read for helper bodies
MAX_PART_LINES = 5000  # a part longer than this is not aligned (the cost is quadratic)
_FILES_GET = re.compile(r"\.Files\.Get\s+\"([^\"]+)\"")
_ASSIGN = re.compile(r"^\s*([\w.\-]+)\s*=")


class Part(Struct, frozen=True):
    """Lines of a chart file a text can come from: `first` is the 0-based line of
    lines[0] in the file at `path` (as shown)."""

    path: str
    first: int
    lines: tuple[str, ...]
    keys: tuple[str, ...]
    counts: dict[str, int]  # how many lines have each key


def _text_key(line: str) -> str:
    """A line's key for the alignment: a YAML key, an ini/conf `name =`, else the line."""
    key = _line_key(line)
    if key.endswith(":") or key == "\0ctl":
        return key
    m = _ASSIGN.match(line)
    return f"{m.group(1)}=" if m else key


def _part(path: str, first: int, lines: list[str]) -> Part:
    keys = tuple(map(_text_key, lines))
    return Part(path=path, first=first, lines=tuple(lines), keys=keys,
                counts=dict(Counter(keys)))


class ChartText(Struct, frozen=True):
    """What a chart's files can write: `parts`, the Files.Get files (named as a literal)
    and helper bodies; `defines`, each helper's body by name (a name defined twice in
    the chart with different bodies is left out: which one Helm keeps is not told by
    the files alone)."""

    parts: list[Part]
    defines: dict[str, Part]


def chart_parts(root: Root, chart_dir: str) -> list[Part]:
    """The Files.Get files (named as a literal) and helper bodies of the chart at
    `chart_dir` (as shown): where its templates can write a text from."""
    return chart_text(root, chart_dir).parts


_DEFINE_NAME = re.compile(r"\{\{-?\s*define\s+\"([^\"]+)\"")


def chart_text(root: Root, chart_dir: str, known: dict[str, str | None] | None = None
               ) -> ChartText:
    """chart_parts, and the helper bodies by name, from one read of the chart's
    templates. `known`: texts by path as shown (None: not readable) already read this
    way (helm_positions.template_text); what is read here is added to it."""
    base = root.path / chart_dir
    texts: dict[str, str] = {}
    count = 0
    top = str(base / "templates")
    cut = len(top) - len("templates")  # walk's folders: `top`, joined with names below it
    for folder, dirs, files in walk(top):
        dirs.sort()
        for name in sorted(files):
            count += 1
            if count > MAX_TEMPLATE_FILES:
                break
            shown = in_chart(chart_dir, f"{folder[cut:]}/{name}")
            if known is None or "#" in shown:  # (template_text reads no such path)
                text = _read(root, shown)
            elif shown in known:
                text = known[shown]
            else:
                text = known[shown] = _read(root, shown)
            if text is not None:
                texts[shown] = text
    parts: list[Part] = []
    defines: dict[str, Part | None] = {}
    named: set[str] = set()
    for shown, text in texts.items():
        if ".Files.Get" in text:
            named.update(_FILES_GET.findall(text))
        if "define" not in text:
            continue  # most templates define nothing: not split into blocks
        for name, body in _define_bodies(text):
            part = replace(body, path=shown)
            parts.append(part)
            if name is not None:
                seen = defines.get(name, part)
                defines[name] = part if seen is not None and seen.lines == part.lines \
                    else None
    for name in sorted(named):
        if ".." in name.split("/") or name.startswith("/"):
            continue
        shown = in_chart(chart_dir, os.path.normpath(name))
        text = _read(root, shown)
        if text is not None:
            parts.append(_part(shown, 0, text.splitlines()))
    return ChartText(parts=[p for p in parts if len(p.lines) <= MAX_PART_LINES],
                     defines={name: p for name, p in defines.items() if p is not None})


# Read only (a Part is frozen; its counts are only read): a chart's copies (a monorepo
# of charts from one scaffold) hold the same helpers file, split and keyed again per
# chart before. chart_text gives each body the path of the file it reads
# (msgspec.structs.replace: the same lines, keys and counts).
@functools.lru_cache(maxsize=256)
def _define_bodies(text: str) -> tuple[tuple[str | None, Part], ...]:
    """(name, or None when the define names none as read here; body as a Part, its path
    left empty) of each `define` block of more than its two action lines, in the order
    action_blocks gives."""
    lines = text.splitlines()
    out: list[tuple[str | None, Part]] = []
    for word, start, end in action_blocks(text):
        if word == "define" and end - start > 1:
            m = _DEFINE_NAME.search(lines[start])
            out.append((m.group(1) if m is not None else None,
                        _part("", start + 1, lines[start + 1:end])))
    return tuple(out)


def _read(root: Root, shown: str) -> str | None:
    try:
        # one lstat for a plain file below the root (helm_positions.template_text)
        below = root.read_below(shown)
        return below[0] if below is not None else root.read_text(shown)
    except InputError:
        return None


def place_text(text: str, parts: list[Part]) -> dict[int, Source]:
    """1-based line of `text` -> the chart file line it is written at, from the part
    that holds most of its lines; {} when none holds at least half of them."""
    lines = text.rstrip("\n").split("\n")
    keys = tuple(map(_text_key, lines))
    wanted = sum(1 for line in lines if line.strip())
    need = max(2, (wanted + 1) // 2)
    best: dict[int, Source] = {}
    counts = Counter(k for k, line in zip(keys, lines, strict=True) if line.strip())
    for part in parts:
        if sum(min(n, part.counts.get(k, 0)) for k, n in counts.items()) < need:
            continue  # too few keys in common to hold half the text: not aligned
        placed = _placed(keys, lines, part)
        if len(placed) >= need and len(placed) > len(best):
            best = placed
    return best


def _placed(keys: tuple[str, ...], lines: list[str], part: Part) -> dict[int, Source]:
    pairs = _aligned(part.keys, keys)
    return {n + 1: Source(path=part.path, line=part.first + t + 1)
            for t, n in pairs
            if lines[n].strip() and _fills(part.lines[t], lines[n])}


@functools.lru_cache(maxsize=4096)
def _aligned(t_keys: tuple[str, ...], r_keys: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    matcher = difflib.SequenceMatcher(None, t_keys, r_keys, autojunk=False)
    return tuple((b.a + k, b.b + k) for b in matcher.get_matching_blocks()
                 for k in range(b.size))
