"""The helper line a rendered manifest field is written at, when an `include` (or
`template`) of a helper (`define`) wrote it rather than the template's own lines.

element-hq/ess-helm (83c7981) charts/matrix-stack: the Deployments and StatefulSets write
`{{ include "element-io.ess-library.workloads.commonSpec" ... | nindent 2 }}` (e.g.
templates/matrix-authentication-service/deployment.yaml:28), and the helper's body
writes `replicas: {{ .replicas }}` and `maxSurge: 2` (templates/ess-library/_workloads.tpl
:16, :24); Postgres's `args:` is `{{ include "element-io.postgres.args" ... }}`
(templates/postgres/statefulset.yaml:48), the body writing
`- "max_connections={{ printf "%d" (div $memoryLimitsMB 16) }}"` (templates/postgres/
_helpers.tpl:111). Each was cited at the include line. temporalio/helm-charts (e51b734)
charts/temporal/templates/server-job.yaml:56 includes "temporal.admintools-env", whose
body writes SQL_PLUGIN at templates/_admintools-env.yaml:34-35.

How: the template is expanded, each include standing alone on its line(s) followed by
its helper's body (nested includes expanded the same way), every line keeping the file
and line it is written at; the rendered text is aligned to that expansion as to a
template (helm_positions.line_map: keys in order, loop bodies, a line moved to the
nearby line that writes it). A rendered line is placed at a helper's line only when
that line writes it (its text with the actions filled in, with at least some text of
its own, not a line of actions alone) and the template line it is cited at today does
not. The place is recorded per scalar field (`value_sources`); values tracing, applied
after, replaces it where a values line set the value (`replicas: {{ .replicas }}`).
"""

from __future__ import annotations

import bisect
import difflib
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from advisor.model import Source
from advisor.read.render.helm_branches import NO, YES, LineState, line_states, writes
from advisor.read.render.helm_positions import (
    _by_text,
    _fills,
    _line_key,
    _match_repeats,
    _writer,
    loop_lines,
)
from advisor.read.render.helm_text_lines import Part

MAX_DEPTH = 20  # helpers expanded one inside the other
MAX_EXPANDED = 6000  # lines of an expanded template; past it, no more bodies are inserted
MAX_FIELD_DEPTH = 100

# An include or template action whose whole output is lines of its own: the helper's name,
# the text after it up to the action's end (its argument and pipeline).
_INCLUDE = re.compile(r"\{\{-?\s*(?:include|template)\s+\"([^\"]+)\"([^{}]*?)-?\}\}")
# Commands after the helper's output that keep its lines as they are, only indented.
_KEEPS_LINES = re.compile(r"(?:n?indent\s+\d+|trim)")


def _whole_lines(text: str, start: int, end: int) -> bool:
    """Whether the action text[start:end] is alone on its line(s): nothing after it, and
    before it nothing or a key (`startupProbe: {{- include ... | nindent 10 }}`)."""
    before = text[text.rfind("\n", 0, start) + 1:start].strip()
    after_end = text.find("\n", end)
    after = text[end:after_end if after_end >= 0 else len(text)].strip()
    return not after and (not before or before.endswith(":"))


def _pipeline(tail: str) -> list[str]:
    """The commands after the first of an action's pipeline (`| nindent 4`), split at
    the `|` outside parentheses and quotes."""
    parts: list[str] = []
    depth, quoted, last = 0, False, 0
    for i, ch in enumerate(tail):
        if ch == '"' and (i == 0 or tail[i - 1] != "\\"):
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(tail[last:i])
            last = i + 1
    parts.append(tail[last:])
    return [p.strip() for p in parts[1:]]


def included_after(text: str) -> dict[int, list[str]]:
    """0-based line -> the helpers whose output the include ending on that line writes as
    lines of its own (alone on its lines, piped to nothing but `nindent`/`indent`/`trim`):
    an include inside a value, hashed (`| sha1sum`) or read (`fromYaml`) writes none."""
    return {line: [name for name, _ in calls] for line, calls in included_calls(text).items()}


# Read only (Expansion.add reads it): a chart's copies include the same helpers.
@functools.lru_cache(maxsize=1024)
def included_calls(text: str) -> dict[int, list[tuple[str, str]]]:
    """included_after, each helper with the argument it is given (`.`, `$`, `(dict ...)`)."""
    out: dict[int, list[tuple[str, str]]] = {}
    for m in _INCLUDE.finditer(text):
        commands = _pipeline(m.group(2))
        if not all(_KEEPS_LINES.fullmatch(c) for c in commands):
            continue
        if not _whole_lines(text, m.start(), m.end()):
            continue
        argument = _first_command(m.group(2))
        out.setdefault(text.count("\n", 0, m.end()), []).append((m.group(1), argument))
    return out


def _first_command(tail: str) -> str:
    """The argument of an include: its action's text after the name, up to the first
    `|` of the pipeline (none is inside the quotes or parentheses of a `.` or `$`)."""
    return tail.split("|", 1)[0].strip()


class Helpers:
    """A chart's helpers by name (its own and its unpacked subcharts': one namespace in
    Helm), each one's body expanded once a chart (a label helper is included by every
    template)."""

    def __init__(self, defines: dict[str, Part], limit: int = MAX_EXPANDED) -> None:
        self.defines = defines
        self.limit = limit
        self.bodies: dict[str, Expansion | None] = {}
        self.depth = 0  # helpers being expanded, one inside the other

    def body(self, name: str) -> Expansion | None:
        """The helper's body with the helpers it includes expanded in it; None for a name
        not defined, or one being expanded (a helper that includes itself, at any depth:
        the inner include is not expanded)."""
        if name in self.bodies:
            return self.bodies[name]
        part = self.defines.get(name)
        if part is None or self.depth >= MAX_DEPTH:
            return None
        self.bodies[name] = None  # being expanded
        text = "\n".join(part.lines)
        after = included_calls(text) if "include" in text or "template" in text else {}
        found = Expansion(self, self.limit)
        self.depth += 1
        try:
            found.add(part.lines, part.path, part.first, after, helper=True)
        finally:
            self.depth -= 1
        self.bodies[name] = found
        return found


class Expansion:
    """A template with the bodies of the helpers it includes inserted after the include,
    each line with the file and 0-based line it is written at (`helper`: a line of a
    helper's body, not the template's own)."""

    def __init__(self, helpers: Helpers, limit: int = MAX_EXPANDED) -> None:
        self.helpers = helpers
        self.limit = limit
        self.lines: list[str] = []
        self.places: list[tuple[str, int]] = []
        self.helper: list[bool] = []
        # (start, end, include argument) of each helper body inserted, outer ones first
        self.spans: list[tuple[int, int, str]] = []
        self.inserted = 0
        self.by_key: dict[str, list[int]] | None = None

    def keyed(self, key: str) -> list[int]:
        """The lines with this key (helm_positions._line_key), once all are added."""
        if self.by_key is None:
            self.by_key = {}
            for i, line in enumerate(self.lines):
                self.by_key.setdefault(_line_key(line), []).append(i)
        return self.by_key.get(key, [])

    def add(self, lines: list[str] | tuple[str, ...], path: str, first: int,
            after: dict[int, list[tuple[str, str]]], *, helper: bool = False) -> None:
        """Append `lines` (written at `path` from 0-based line `first`), each followed by
        the bodies of the helpers `after` says its include writes."""
        if not after:
            self.lines.extend(lines)
            self.places.extend((path, first + i) for i in range(len(lines)))
            self.helper.extend([helper] * len(lines))
            return
        done = 0  # lines appended so far; then the bodies included after line i
        for i in sorted(k for k in after if 0 <= k < len(lines)):
            self.lines.extend(lines[done:i + 1])
            self.places.extend((path, first + k) for k in range(done, i + 1))
            self.helper.extend([helper] * (i + 1 - done))
            done = i + 1
            for name, argument in after[i]:
                body = self.helpers.body(name)
                if body is None or len(self.lines) + len(body.lines) > self.limit:
                    continue
                at = len(self.lines)
                self.spans.append((at, at + len(body.lines), argument))
                self.spans.extend((at + a, at + b, arg) for a, b, arg in body.spans)
                self.lines.extend(body.lines)
                self.places.extend(body.places)
                self.helper.extend(body.helper)
                self.inserted += len(body.lines)
        self.lines.extend(lines[done:])
        self.places.extend((path, first + k) for k in range(done, len(lines)))
        self.helper.extend([helper] * (len(lines) - done))


def helper_places(template: str, display: str, rendered: str, mapping: dict[int, int],
                  helpers: Helpers, values: dict[str, Any] | None = None
                  ) -> dict[int, Source]:
    """0-based rendered line -> the helper line (1-based Source) that writes it, for the
    lines `mapping` (rendered -> template line, helm_positions.line_map) cites at a
    template line that does not write them. {} when the template includes no helper
    whose body is known. `values`: the chart's merged values, which tell the branch of
    a helper's `if` Helm took (helm_branches); None when not known."""
    if not helpers.defines or ("include" not in template and "template" not in template):
        return {}
    after = included_calls(template)
    if not any(name in helpers.defines for calls in after.values() for name, _ in calls):
        return {}
    t_lines = template.splitlines()
    r_lines = rendered.splitlines()
    # the lines line_map cites at a template line that does not write them: the only
    # ones looked for in the helpers (the others are blanked, which _by_text skips)
    wanted = [line if line.strip() and not _writes(t_lines, mapping.get(r), line) else ""
              for r, line in enumerate(r_lines)]
    if not any(wanted):
        return {}
    expansion = Expansion(helpers)
    expansion.add(t_lines, display, 0, after)
    if not expansion.inserted:
        return {}
    e_map = _expanded_map(expansion.lines, r_lines, wanted)
    places: dict[int, Source] = {}
    states: list[LineState] | None = None
    for r, e in e_map.items():
        text = wanted[r].strip()
        if not text or not expansion.helper[e] or not _line_writes(expansion.lines[e], text):
            continue  # written by the template's own line: line_map's place stands
        # only a key written on more than one line of the expansion can have been
        # written by another branch than the alignment's pick: the branch walk (once a
        # template) is skipped for the rest (a label helper's one `version:` line)
        if expansion.spans and len(expansion.keyed(_line_key(expansion.lines[e]))) > 1:
            if states is None:
                states = line_states(expansion.lines, expansion.spans, values)
            chosen = _branch_taken(expansion, states, e, text, values)
            if chosen is None:
                continue  # not told which branch wrote it: the include line stands
            e = chosen
        path, line0 = expansion.places[e]
        places[r] = Source(path=path, line=line0 + 1)
    return places


def _line_writes(template_line: str, text: str) -> bool:
    """Whether the line writes `text` (stripped) in place: its own text, actions filled."""
    writer = _writer(template_line)
    return writer is not None and text.startswith(writer[0]) \
        and writer[1].fullmatch(text) is not None


def _branch_taken(expansion: Expansion, states: list[LineState], e: int, text: str,
                  values: dict[str, Any] | None) -> int | None:
    """`e`, the line the alignment took, unless the values say it did not write `text`
    (its branch not taken, or its text filled in another); then the one line of the
    same key in the other branches of an `if` around it (`DB_HOST: {{ include ... }}`
    too, which writes in place a value helm_positions cannot tell) that can have, or
    the one whose branch Helm took; None when that is not told. The alignment took
    the first branch's `DB_HOST:` for the one Helm took (Dify's config.tpl :215 for
    :236); where nothing read says otherwise, its pick stands (ess-helm _workloads.tpl:
    `type: RollingUpdate` in both branches of `if eq "Deployment" $kind`)."""
    if _verdict(expansion.lines[e], text, values, states[e]) != NO:
        return e
    here = states[e]
    others = [c for c in expansion.keyed(_line_key(expansion.lines[e]))
              if c != e and expansion.helper[c] and _exclusive(here.path, states[c].path)
              and _verdict(expansion.lines[c], text, values, states[c]) != NO]
    if len(others) == 1:
        return others[0]
    taken = [c for c in others if states[c].taken == YES]
    return taken[0] if len(taken) == 1 else None


def _verdict(line: str, text: str, values: dict[str, Any] | None, state: LineState) -> int:
    """NO when the line's branch was not taken or its text filled in is another."""
    if state.taken == NO:
        return NO
    return writes(line, text, values, state)


def _exclusive(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> bool:
    """Whether two lines are in different branches of one `if` (so Helm wrote one)."""
    for (chain_a, branch_a), (chain_b, branch_b) in zip(a, b, strict=False):
        if chain_a != chain_b:
            return False
        if branch_a != branch_b:
            return True
    return False


def _writes(t_lines: list[str], t: int | None, line: str) -> bool:
    """Whether template line `t` writes the rendered `line` (its text, actions filled in;
    a line of actions alone is no proof)."""
    if t is None or t >= len(t_lines):
        return False
    writer = _writer(t_lines[t])
    return writer is not None and _fills(t_lines[t], line)


def _expanded_map(e_lines: list[str], r_lines: list[str], wanted: list[str]
                  ) -> dict[int, int]:
    """line_map over the expansion (`wanted`: r_lines with those not looked for blank,
    not moved), a line written as it is (no action) aligned by its
    whole text rather than its key: a helper's branches write the same keys
    (temporalio/helm-charts _admintools-env.yaml: `- name: CASSANDRA_HOST` / `value:`
    pairs, then `- name: SQL_PLUGIN` / `value:` pairs), and by key alone the SQL store's
    `value:` lines were aligned to the Cassandra branch's."""
    stripped = [line.strip() for line in e_lines]
    literal = {t for t in stripped if t and "{{" not in t}
    e_keys = tuple(_LITERAL + t if t in literal else _line_key(line)
                   for line, t in zip(e_lines, stripped, strict=True))
    r_keys = tuple(_LITERAL + t if (t := line.strip()) in literal else _line_key(line)
                   for line in r_lines)
    mapping, matched = _aligned_runs(e_keys, r_keys, loop_lines("\n".join(e_lines)))
    moved = _by_text(e_lines, wanted, mapping, matched)
    return {**mapping, **moved} if moved else mapping


_LITERAL = "\1"  # the key of a line written as it is: its whole text after this mark


# Read only, as helm_positions._aligned: a chart's copies (a monorepo of charts from
# one scaffold) give the same keys.
@functools.lru_cache(maxsize=256)
def _aligned_runs(e_keys: tuple[str, ...], r_keys: tuple[str, ...],
                  loop: tuple[int, ...]) -> tuple[dict[int, int], frozenset[int]]:
    """helm_positions._aligned, keeping of the in-order alignment only runs of two lines
    or more, or a line written as it is: a lone `value:` matched wherever one was left
    in order (the second store's env items of a loop to the helper's Elasticsearch
    branch) is left to the loop passes, which match it with the lines around it."""
    matcher = difflib.SequenceMatcher(None, e_keys, r_keys, autojunk=False)
    mapping: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        if block.size == 1 and not e_keys[block.a].startswith(_LITERAL):
            continue
        for k in range(block.size):
            mapping[block.b + k] = block.a + k
    if loop:
        _match_repeats(e_keys, r_keys, loop, mapping)
    matched = frozenset(mapping)
    last = 0
    for r in range(len(r_keys)):
        if r in mapping:
            last = mapping[r]
        else:
            mapping[r] = last
    return mapping, matched


def field_places(body: Any, places: dict[int, Source], lines: list[int] | None = None
                 ) -> dict[str, Source]:
    """Dotted field path -> helper line, for each scalar of `body` (its positions still
    those of the rendered text) on a line `places` holds; a multi-line string is left to
    helm_positions.mark_generated. `lines`: sorted(places), when the caller has it."""
    if not places:
        return {}
    found: dict[str, Source] = {}
    for keys, line0 in _scalar_lines(body, (), lines if lines is not None else sorted(places)):
        source = places.get(line0)
        if source is not None:
            dotted = ".".join(map(str, keys))
            found[dotted] = Source(path=source.path, line=source.line, key=dotted)
    return found


_SCALARS = (str, int, float, bool)


def _scalar_lines(node: Any, keys: tuple[str | int, ...], wanted: list[int], depth: int = 0
                  ) -> Iterator[tuple[tuple[str | int, ...], int]]:
    """(keys, 0-based line) of the scalars under `node` that can be on a `wanted` line
    (sorted): an item or key whose lines, up to the next one's, hold none is skipped
    whole (most of a manifest, when a helper wrote its labels only)."""
    if depth > MAX_FIELD_DEPTH:
        return
    lc = getattr(node, "lc", None)
    if lc is None:
        return
    if isinstance(node, dict):
        names: list[Any] = list(node)
        at: Callable[[Any], tuple[int, int]] = lc.key
    elif isinstance(node, list):
        names = list(range(len(node)))
        at = lc.item
    else:
        return
    try:
        starts = [at(k)[0] for k in names]
    except (KeyError, IndexError, TypeError, AttributeError):
        return
    for j, k in enumerate(names):
        start = starts[j]
        end = starts[j + 1] if j + 1 < len(starts) and starts[j + 1] > start else None
        i = bisect.bisect_left(wanted, start)
        if i == len(wanted) or (end is not None and wanted[i] >= end):
            continue  # no wanted line from this key's line to the next key's
        v = node[k]
        if isinstance(v, dict | list):
            yield from _scalar_lines(v, (*keys, k), wanted, depth + 1)
        elif isinstance(v, _SCALARS) and not (isinstance(v, str) and "\n" in v.rstrip("\n")):
            yield (*keys, k), start
