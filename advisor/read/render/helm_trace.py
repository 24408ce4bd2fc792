"""Values tracing for charts the Helm engine renders: which values file line set each
rendered field (advisor.read.render.helm renders; advise edits the line traced here).

4. values tracing (`K8sObject.value_sources`): each scalar of the effective values
   (defaults and user files) is replaced by a unique sentinel and the chart is
   rendered again; a rendered field that then carries the sentinel came from that
   values key, and is reported at the values file line that set it (the last
   writer: a later `--values` file or `--set` wins). Many keys are perturbed per
   render and groups are split when a render fails or a sentinel disappears (a
   branch flipped), so the cost is about a few renders per hundred keys, plus one
   per key that does not show up verbatim, except that a render that is the
   baseline once its sentinels are put back flipped no branch and derived nothing:
   the keys that did not show up in it are not tried again. Put back, a Secret's
   base64 is decoded, a sha256sum (a checksum annotation) is any other, and a line
   that a second render of the baseline's values changes too (genCA, randAlphaNum,
   htpasswd: asked only of charts whose templates call such a function) is no change.
   A render that fails naming some of its keys (a template's own check) is tried
   again without them, and each of them alone, instead of being split. Numbers and
   strings are perturbed in one render, each group read as if rendered alone, when
   that render is such a baseline (a `helm create` chart: one render besides the
   baseline), else in a render each. Traced: values copied into a field as is
   or as part of a string (`"{{ .Values.db.host }}:5432"`, `| quote`, `| nindent`),
   including multi-line config text, line by line. A key that only reaches the
   output through arithmetic or encoding (`mul`, `b64enc`) is traced as "derived"
   when it is tested alone and the field changes without carrying the sentinel.
   Not traced: values that only select a branch (`if .Values.autoscaling.enabled`),
   lookups and randomness.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import os
import re
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from msgspec import Struct
from msgspec.structs import replace
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from advisor.model import Source
from advisor.read.render import field_path, flatten, traced_line_key
from advisor.read.render.helm_process import RenderLimit
from advisor.read.render.helm_values import Key, ValuesLayer, block_start, leaf_source
from advisor.read.sources.k8s import K8sObject, get
from advisor.read.yamlpos import LIBYAML, Composed

# Tracing budget, counted so that a chart traces the same on any machine: renders (a
# scaffold-sized chart renders in ~1 ms) and the text they return (what the engine and
# the reading of each render cost: a full trace of the Airflow chart returns 2.2 MB, 75
# KB a render, in about 3 s). Past either, refining stops and says so. The clock is
# only a safety limit, for renders slow for their size (a loop that prints little); it
# is said apart, as its cut-off varies from run to run.
MAX_TRACE_RENDERS = 400
MAX_TRACE_BYTES = 4_000_000
MAX_TRACE_SECONDS = 30.0
MAX_RETEST_DEPTH = 2  # re-renders of keys that vanished in a group (a flipped branch)
MAX_DERIVED_RENDERS = 60  # numbers tested alone for arithmetic in templates
MAX_NAMED = 8  # keys a render error names, rendered alone instead of splitting (_group)
MAX_MOVED = 150  # integers a values schema wants, traced by moving them (_moved_apart)
TRACE_RENDER_SECONDS = 2.0  # the least a tracing render may take before it is stopped
# Sentinels for numbers are 1.9xxxxx: printed exactly by Helm (six decimals, no exponent)
# and never a loop bound: `int` makes them 1 (`until`, `untilStep` and `range` then run
# once), and a numeric string ("1.900001") is 0 to `int`. A sentinel of 900001 made
# Bitnami postgresql-ha's `until` build 900,000 entries (55 s and 2.4 GB per check).
SENTINEL_BASE = 900_001


class ChartRenderer:
    """Renders of one chart; the first (the baseline) sets how long a tracing render may
    take: a few times the baseline, never the full limit of a render."""

    def __init__(self, chart: Any, release: str, namespace: str | None) -> None:
        self.chart = chart
        self.release = release
        self.namespace = namespace
        self.count = 0
        self.baseline_seconds: float | None = None

    def render(self, values: dict[str, Any]) -> dict[str, str]:
        from advisor.read.render.helm_process import RENDER_SECONDS

        self.count += 1
        timeout = RENDER_SECONDS if self.baseline_seconds is None else min(
            RENDER_SECONDS, max(TRACE_RENDER_SECONDS, 5 * self.baseline_seconds))
        started = time.monotonic()
        # The baseline's request merges its values too (the effective values tracing
        # perturbs): one request to the engine instead of two.
        rendered = self.chart.render(values=values, name=self.release,
                                     namespace=self.namespace, is_install=True, timeout=timeout,
                                     merge=self.baseline_seconds is None)
        if self.baseline_seconds is None:
            self.baseline_seconds = time.monotonic() - started
        return rendered


# --- tracing --------------------------------------------------------------------------


class _Leaf(Struct):
    key: Key
    value: Any
    source: Source
    sentinel: Any = None
    marker: str = ""  # what identifies the sentinel in rendered text


class _Hit(Struct):
    leaf: _Leaf
    verbatim: bool  # the field is exactly the sentinel (vs part of a string / derived)
    derived: bool = False
    at: int = 0  # where in the field's text (a URL's host comes before its port)
    line: int = 0  # a multi-line text's line (1-based) the value is on, 0 when not told
    column: int = 0  # where on that line the value starts in the baseline's text


class ValuesTracer:
    def __init__(self, renderer: ChartRenderer, user: dict[str, Any], effective: dict[str, Any],
                 layers: list[ValuesLayer], baseline: dict[str, str],
                 reads: dict[str, BaselineRead] | None = None, *,
                 may_vary: Callable[[], bool] | None = None) -> None:
        self.renderer = renderer
        # The templates call a function whose text differs from render to render
        # (varying_chart): such lines of the baseline are found by rendering it again.
        self.may_vary = may_vary
        self.varying: dict[str, set[int]] | None = None
        self.user = user
        self.effective = effective
        self.layers = layers
        self.baseline_text = "\n".join(baseline.values())
        self.baseline_texts = dict(baseline)
        self.found: set[str] = set()
        # Markers another render cannot add to: tested alone already, or absent from a
        # render that differed from the baseline by the sentinels only.
        self.settled: set[str] = set()
        self.derived_renders = 0
        try:
            # What the positioned read of each template gave (_objects_of) is not read
            # again.
            self.baseline = _parse_all(baseline, reads)
        except Exception:  # not YAML: k8s_objects already reported it; nothing to trace
            self.baseline = {}
        # What a Secret's base64 hides is in the output too (_appears looks here).
        self.baseline_text += "\n" + "\n".join(
            v for (_t, kind, _i), fields in self.baseline.items() if kind == "Secret"
            for p, v in fields.items() if p[0] == "data" and isinstance(v, str))
        self.hits: dict[tuple[Any, Key], list[_Hit]] = {}
        self.started = time.monotonic()
        self.renders = 0
        self.rendered_bytes = 0
        self.stopped = False
        self.timed_out = False  # stopped by MAX_TRACE_SECONDS, not a counted budget
        self.limit = ""  # why a render was stopped, when one was
        self.refused: dict[str, _Leaf] = {}  # numbers the values schema refused a sentinel for

    def leaves(self) -> list[_Leaf]:
        leaves: list[_Leaf] = []
        used: set[str] = set()
        number = SENTINEL_BASE
        for key, value in flatten(self.effective).items():
            if not key or isinstance(value, bool) or value is None:
                continue
            if isinstance(value, str) and not value.strip():
                continue
            if not isinstance(value, int | float | str):
                continue
            source = leaf_source(self.layers, key)
            if source is None:
                continue
            while (number % 10 == 0 or f"1.{number}" in self.baseline_text
                   or f"1.{number}" in used):
                number += 1  # a trailing zero would not be printed
            marker = f"1.{number}"
            used.add(marker)
            number += 1
            if isinstance(value, int | float):
                sentinel: Any = float(marker)
            elif re.fullmatch(r"-?\d+", value.strip()):
                sentinel = marker  # numeric string ("20"): keep it a number-looking string
            else:
                marker = f"zq{marker[2:]}x"
                sentinel = (value + marker) if "\n" not in value else (value.rstrip("\n")
                                                                      + marker + "\n")
            leaves.append(_Leaf(key, value, source, sentinel, marker))
        return leaves

    def budget_left(self) -> bool:
        if self.renders >= MAX_TRACE_RENDERS or self.rendered_bytes >= MAX_TRACE_BYTES:
            self.stopped = True
            return False
        if time.monotonic() - self.started > MAX_TRACE_SECONDS:
            self.stopped = self.timed_out = True
            return False
        return True

    def _render(self, values: dict[str, Any]) -> dict[str, str]:
        rendered = self.renderer.render(values)
        self.rendered_bytes += sum(map(len, rendered.values()))
        return rendered

    def trace(self) -> None:
        leaves = self.leaves()
        numbers = [x for x in leaves if not isinstance(x.sentinel, str)]
        strings = [x for x in leaves if isinstance(x.sentinel, str)]
        if not self._together(numbers, strings):
            for group in (numbers, strings):
                self._group(group, 0)
        self._moved_apart(list(self.refused.values()))
        # Numbers that never showed up verbatim may still reach a field through
        # arithmetic: test them alone (one render each), within the budget.
        for leaf in numbers:
            if leaf.marker in self.settled:
                continue
            if leaf.marker not in self.found and _appears(leaf.value, self.baseline_text):
                if self.derived_renders >= MAX_DERIVED_RENDERS:
                    self.stopped = True
                    break
                self.derived_renders += 1
                self._group([leaf], MAX_RETEST_DEPTH)

    def _moved_apart(self, leaves: list[_Leaf]) -> None:
        """Integers the values schema refused a 1.9xxxxx sentinel for (the Airflow chart's
        replicas, pgbouncer.maxClientConn), traced in one render by their own values each
        moved by a distinct prime: still integers, a loop they bound runs a few more
        times. A number in a field that moved by a key's prime from that key's value came
        from it; a product or sum of others' moves is not a prime of its own."""
        # A 0 moved is no longer falsy: `default` and `if` would take it (see _shown).
        leaves = [x for x in leaves if _integral(x.value) and x.value != 0
                  and _appears(x.value, self.baseline_text)]
        leaves = leaves[:MAX_MOVED]  # the 150th prime is 863: a loop runs that much longer
        for _attempt in range(3):  # keys a schema bound (maximum) refuses again: dropped
            if not leaves or not self.budget_left():
                return
            moves = dict(zip(_primes(len(leaves)), leaves, strict=True))
            values = copy.deepcopy(self.user)
            for prime, leaf in moves.items():
                _set_path(values, leaf.key, int(leaf.value) + prime, self.effective)
            self.renders += 1
            try:
                rendered = self._render(values)
            except RenderLimit as exc:
                self.stopped = True
                self.limit = str(exc)
                return
            except Exception as exc:  # refused again, or a template failed: not traced
                refused = _schema_refused(str(exc), leaves)
                leaves = [x for x in leaves if x not in refused] if refused else []
                continue
            self._collect_moves(moves, rendered)
            return

    def _collect_moves(self, moves: dict[int, _Leaf], rendered: dict[str, str]) -> None:
        changed = {k: t for k, t in rendered.items() if t != self.baseline_texts.get(k)}
        try:
            fields = _parse_all(changed)
        except Exception:  # not YAML
            return
        for obj_key, leaves in fields.items():
            base = self.baseline.get(obj_key)
            if base is None:
                continue
            for path, value in leaves.items():
                if path in base and str(value) != str(base[path]):
                    for hit in _moved_numbers(str(base[path]), str(value), moves):
                        self._add(obj_key, path, hit)

    def _together(self, numbers: list[_Leaf], strings: list[_Leaf]) -> bool:
        """The numbers and the strings traced in one render instead of one each, when
        that render is the baseline once its sentinels are put back (no branch flipped,
        nothing derived: the common case, a `helm create` chart): each group then reads
        the render with the other group's sentinels put back, which is the text a render
        of that group alone gives, and goes on as after its own render. Otherwise (a
        render that fails, is stopped or differs) nothing is kept and each group is
        rendered on its own, as before; the render tried is not counted. Keys the values
        schema refuses a sentinel for are dropped from both groups, as each group's own
        render would drop them, and the rest is tried together again."""
        if not numbers or not strings or not self.budget_left():
            return False
        for _attempt in range(3):  # as _moved_apart: a schema refuses in a few rounds
            both = numbers + strings
            try:
                rendered = self._render(self._values(both))
                break
            except RenderLimit:  # the groups alone may still render
                return False
            except Exception as exc:
                refused = _schema_refused(str(exc), both)
                if not refused:
                    return False
                self._refuse(refused)
                numbers[:] = [x for x in numbers if x not in refused]
                strings[:] = [x for x in strings if x not in refused]
                if not numbers or not strings:
                    return False
        else:
            return False
        if not self._sentinels_only(rendered, both):
            return False
        changed = {key: text for key, text in rendered.items()
                   if text != self.baseline_texts[key]}
        combined = self._parsed_in_shape(changed)
        for group, others in ((numbers, strings), (strings, numbers)):
            back = _put_back(others)
            self._count(group)  # as the render of this group alone would be
            if combined is None:
                # A template the sentinels did not change is the baseline's, in either
                # render.
                self._rendered(group, 0, {key: text if text == self.baseline_texts[key]
                                          else back(text) for key, text in rendered.items()})
                continue
            # The fields of the render of this group alone: those of the render of both
            # with the others' markers put back, in the templates that hold one of this
            # group's markers or a Secret, whose base64 hides them (which _parse_changed
            # would have read).
            markers = [x.marker for x in group]
            holding = {key for key, text in changed.items()
                       if any(m in text for m in markers) or "Secret" in text}
            # (every field is text: scalars are read as BaseLoader reads them)
            fields = {obj_key: {path: back(value) if isinstance(value, str) else value
                                for path, value in leaves.items()}
                      for obj_key, leaves in combined.items() if obj_key[0] in holding}
            self._read(group, 0, fields, lambda: True)
        return True

    def _parsed_in_shape(self, changed: dict[str, str]) -> dict[Any, dict[Key, Any]] | None:
        """The fields of the templates of a render that is the baseline once all its
        sentinels are put back, read once for both groups: when each object has the
        baseline's fields (the sentinels sit inside scalars, where a marker, made of
        letters, digits and a dot, is the same in the text and in the value, so putting
        one group's back in a value gives what reading the text with them put back
        gives); None when not (a value + marker that reads as another structure), and
        each group reads its own text."""
        try:
            combined = _parse_all(changed)
        except Exception:  # not YAML: each group finds out on its own
            return None
        if combined.keys() != {k for k in self.baseline if k[0] in changed}:
            return None
        for obj_key, leaves in combined.items():
            if self.baseline[obj_key].keys() != leaves.keys():
                return None
        return combined

    def _values(self, group: list[_Leaf]) -> dict[str, Any]:
        values = copy.deepcopy(self.user)
        for leaf in group:
            _set_path(values, leaf.key, leaf.sentinel, self.effective)
        return values

    def _count(self, group: list[_Leaf]) -> None:
        self.renders += 1
        if len(group) == 1:
            self.settled.add(group[0].marker)  # rendering it alone again says the same

    def _group(self, group: list[_Leaf], depth: int) -> None:
        if not group or not self.budget_left():
            return
        values = self._values(group)
        self._count(group)
        try:
            rendered = self._render(values)
        except RenderLimit as exc:  # not split: each half could take as long again
            self.stopped = True
            self.limit = str(exc)
            return
        except Exception as exc:  # a perturbed value failed schema/template checks
            refused = _schema_refused(str(exc), group)
            if refused:
                # A schema that wants an integer, or one of an enum, refuses every
                # sentinel of those keys: they are left untraced, the others rendered
                # again without them (a split found them one failed render at a time).
                self._refuse(refused)
                self._group([x for x in group if x not in refused], depth)
                return
            named = _named_in_error(str(exc), group)
            if 0 < len(named) <= MAX_NAMED and len(named) < len(group):
                # A template's own check that names the keys it refused (ess-helm's
                # "wellKnownDelegation.additional.client is invalid": a JSON text with a
                # sentinel): the others rendered without them, and each of them alone,
                # as a split would end (that render fails again, or traces it) without
                # the renders that look for them.
                self._group([x for x in group if x not in named], depth)
                for leaf in named:
                    self._group([leaf], depth)
                return
            self._split(group, depth)
            return
        self._rendered(group, depth, rendered)

    def _refuse(self, refused: list[_Leaf]) -> None:
        """Keys whose sentinel the values schema refused: not traced by sentinel; the
        numbers are moved apart instead (_moved_apart)."""
        self.settled.update(x.marker for x in refused)
        self.refused.update((x.marker, x) for x in refused if not isinstance(x.sentinel, str))

    def _split(self, group: list[_Leaf], depth: int) -> None:
        if len(group) > 1:
            half = len(group) // 2
            self._group(group[:half], depth)
            self._group(group[half:], depth)

    def _rendered(self, group: list[_Leaf], depth: int, rendered: dict[str, str]) -> None:
        """What a render of `group`'s sentinels says: the keys found, and which are
        tried again."""
        try:
            fields = self._parse_changed(rendered, group)
        except Exception:  # not YAML
            self._split(group, depth)
            return
        self._read(group, depth, fields, lambda: self._sentinels_only(rendered, group))

    def _read(self, group: list[_Leaf], depth: int, fields: dict[Any, dict[Key, Any]],
              sentinels_only: Callable[[], bool]) -> None:
        """What `_rendered` makes of the fields it read; `sentinels_only()`: whether the
        render is the baseline once the group's sentinels are put back (asked only when
        a key did not show up)."""
        found, discarded = self._collect(group, fields)
        self.found |= found
        if discarded and len(group) > 1 and depth < MAX_RETEST_DEPTH:
            # The key the baseline printed there lost to a discarded value's sentinel:
            # the others again, with the discarded values as they are.
            self._group([x for x in group if x.marker not in discarded], depth + 1)
        missing = [x for x in group if x.marker not in found
                   and _appears(x.value, self.baseline_text)]
        if len(group) == 1:
            if missing:
                self._derived(group[0], fields)
            return
        if missing and sentinels_only():
            # Nothing but the sentinels changed: no branch flipped and no value went
            # through arithmetic, so the keys that did not show up are not in the output.
            self.settled.update(x.marker for x in missing)
            return
        # A key that did not show up may sit under a branch another key of the group
        # flipped: try those again without the others, a bounded number of times.
        if not missing or depth >= MAX_RETEST_DEPTH:
            return
        if len(missing) < len(group):
            self._group(missing, depth + 1)
        else:
            half = len(missing) // 2
            self._group(missing[:half], depth + 1)
            self._group(missing[half:], depth + 1)

    def _sentinels_only(self, rendered: dict[str, str], group: list[_Leaf]) -> bool:
        """Whether `rendered` is the baseline once each sentinel is put back to its
        value (where `_collect` finds them: a number's marker not inside a longer
        number). A sentinel a template transformed (upper, trunc, arithmetic) is not
        put back, and then the render does not count as the baseline; one in base64 is
        (_decoded_line), a sha256sum is any other, and a line that varies from render
        to render in the baseline too (_varies_only) is no change."""
        if rendered.keys() != self.baseline_texts.keys():
            return False
        put_back = _put_back(group)
        for key, text in rendered.items():
            base = self.baseline_texts[key]
            if text == base:
                continue
            if len(text) > 4 * len(base) + 4096:  # a sentinel drove a loop (`until`)
                return False
            back = put_back(text)
            if back == base:
                continue
            ours, theirs = back.split("\n"), base.split("\n")
            if len(ours) != len(theirs):
                return False
            left = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
                    if a != b and _decoded_line(a, put_back) != _decoded_line(b, None)]
            if left and not self._varies_only(key, left):
                return False
        return True

    def _varies_only(self, key: str, lines: list[int]) -> bool:
        """Whether the baseline's `lines` (0-based) of template `key` are lines a render
        of the baseline's own values changes too (a generated certificate, a random
        password, htpasswd's salt): no sign of a sentinel, a branch or arithmetic."""
        varying = self._varying().get(key)
        return bool(varying) and all(i in varying for i in lines)

    def _varying(self) -> dict[str, set[int]]:
        """template -> the lines of the baseline a render of the same values changes;
        asked once, when a render is not the baseline once its sentinels are put back,
        for a chart whose templates call a varying function (else nothing varies). A
        template whose line count changes is left out: it never counts as the baseline."""
        if self.varying is not None:
            return self.varying
        self.varying = {}
        if self.may_vary is None or not self.may_vary() or not self.budget_left():
            return self.varying
        self.renders += 1
        try:
            again = self._render(copy.deepcopy(self.user))
        except Exception:  # RenderLimit included: nothing is known to vary
            return self.varying
        for key, text in again.items():
            base = self.baseline_texts.get(key)
            if base is None or text == base:
                continue
            ours, theirs = text.split("\n"), base.split("\n")
            if len(ours) == len(theirs):
                self.varying[key] = {i for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
                                     if a != b}
        return self.varying

    def _parse_changed(self, rendered: dict[str, str], group: list[_Leaf]
                       ) -> dict[Any, dict[Key, Any]]:
        """Fields of the templates that changed; a template whose text is the
        baseline's, or (for a group of more than one) carries none of the group's
        markers, is not parsed again."""
        markers = [x.marker for x in group]
        changed: dict[str, str] = {}
        for key, text in rendered.items():
            if text == self.baseline_texts.get(key):
                continue
            # A Secret's base64 data hides the markers until decoded (_parse_all).
            if len(group) > 1 and not any(m in text for m in markers) \
                    and "Secret" not in text:
                continue
            changed[key] = text
        return _unmarked_kinds(_parse_all(changed), _put_back(group))

    def _collect(self, group: list[_Leaf], fields: dict[Any, dict[Key, Any]]
                 ) -> tuple[set[str], set[str]]:
        """The markers that showed up, and those of them whose hit was dropped: a value
        the baseline does not show where its sentinel showed."""
        by_marker = {x.marker: x for x in group}
        pattern = re.compile("|".join(re.escape(m) for m in sorted(by_marker, key=len,
                                                                     reverse=True)))
        found: set[str] = set()
        discarded: set[str] = set()
        put_back = _put_back(group)
        for obj_key, leaves in fields.items():
            base = self.baseline.get(obj_key)
            if base is None:
                continue
            for path, value in leaves.items():
                if path not in base:
                    continue
                text = str(value)
                for match in pattern.finditer(text):
                    m = match.group(0)
                    if not m.startswith("zq") and _digit_neighbours(text, match.start(),
                                                                    match.end()):
                        continue
                    found.add(m)
                    leaf = by_marker[m]
                    verbatim = text == str(leaf.sentinel) or (
                        isinstance(value, int | float) and value == leaf.sentinel)
                    # A sentinel is truthy where the value may not be (0): `default`,
                    # `if` or `coalesce` then print a key the baseline discarded.
                    if not _shown(str(base[path]), leaf.value, verbatim):
                        discarded.add(m)
                        continue
                    line, column = _line_of(text, match.start(), str(base[path]), leaf,
                                            put_back)
                    self._add(obj_key, path, _Hit(leaf, verbatim, at=match.start(),
                                                  line=line, column=column))
        return found, discarded

    def _derived(self, leaf: _Leaf, fields: dict[Any, dict[Key, Any]]) -> None:
        for obj_key, leaves in fields.items():
            base = self.baseline.get(obj_key)
            if base is None or len(base) != len(leaves):
                continue  # the object changed shape: a branch, not a value
            for path, value in leaves.items():
                if path in base and str(base[path]) != str(value):
                    self._add(obj_key, path, _Hit(leaf, verbatim=False, derived=True))

    def _add(self, obj_key: Any, path: Key, hit: _Hit) -> None:
        bucket = self.hits.setdefault((obj_key, path), [])
        if all(h.leaf.key != hit.leaf.key for h in bucket):
            bucket.append(hit)


# What a template may print of another text or of a value, read by _decoded_line: a
# sha256sum (a `checksum/config` annotation) or base64 (b64enc).
_ENCODED = re.compile(r"\b[0-9a-f]{64}\b|[A-Za-z0-9+/]{4,}={0,2}")


def _decoded_line(line: str, put_back: Callable[[str], str] | None) -> str:
    """`line` with each sha256sum made one placeholder and each base64 text decoded (its
    sentinels put back): a checksum annotation changes with whatever it hashes (a
    template holding a sentinel, the values; Harbor's changed in every render, as no
    `include` of a template is the text it renders to once it holds random data), and
    no rule reads a number from one; a Secret's b64enc of a value + sentinel then reads
    as the value's."""
    def one(match: re.Match[str]) -> str:
        token = match.group(0)
        if len(token) == 64 and not token.strip("0123456789abcdef"):
            return "\0sha256\0"
        if len(token) % 4:
            return token
        try:
            text = base64.b64decode(token, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return token
        return f"\0base64:{put_back(text) if put_back is not None else text}\0"

    return _ENCODED.sub(one, line)


# Sprig/Helm template functions whose text differs from one render to the next: keys and
# certificates (gen*), random strings and numbers (rand*, uuidv4, shuffle), salted hashes
# (htpasswd, bcrypt), a random IV (encryptAES) and the clock (now); called, not a field
# (`.Values.now`).
_VARYING = re.compile(rb"(?<![\w.$])(?:gen(?:PrivateKey|CA|SelfSignedCert|SignedCert)\w*"
                      rb"|rand[A-Z]\w*|uuidv4|shuffle|htpasswd|bcrypt|encryptAES|now)\b")
_TEMPLATE_SUFFIXES = (".yaml", ".yml", ".tpl", ".txt", ".json")


def varying_chart(chart_dir: Path) -> bool:
    """Whether a template of the chart or of a vendored subchart (a folder or a .tgz)
    calls a function whose text differs from render to render. Only its `templates/`
    files are read: values and other files are data, never called."""
    for folder, dirs, files in os.walk(chart_dir, followlinks=True):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # .git, the parse cache
        inside = "templates" in Path(folder).relative_to(chart_dir).parts
        for name in files:
            path = Path(folder) / name
            try:
                if inside and name.endswith(_TEMPLATE_SUFFIXES):
                    if _VARYING.search(path.read_bytes()):
                        return True
                elif name.endswith((".tgz", ".tar.gz")) and _varying_archive(path):
                    return True
            except OSError:
                continue
    return False


def _varying_archive(path: Path) -> bool:
    try:
        with tarfile.open(path) as archive:
            for member in archive:
                if member.isfile() and "/templates/" in member.name \
                        and member.name.endswith(_TEMPLATE_SUFFIXES):
                    opened = archive.extractfile(member)
                    if opened is not None and _VARYING.search(opened.read()):
                        return True
    except (OSError, tarfile.TarError, EOFError):
        return False
    return False


# Every marker `leaves` hands out: 1.<six digits> not inside a longer number, or zq<digits>x.
# The look-behind follows the "1" (the character before it is not a digit or a dot): a
# pattern that opens with a literal in each branch lets re skip to the next "z" or "1"
# instead of trying the look-behind at every character (4x faster over a template).
_MARKERS = re.compile(r"zq\d+x|1(?<![\d.]1)\.\d{6}(?!\d)")
_MARKERS_SPLIT = re.compile(f"({_MARKERS.pattern})")  # the markers at odd indexes


def _put_back(group: list[_Leaf]) -> Any:
    """A text with each marker of `group` (where `_MARKERS` finds it) put back to the
    text of its value (a string sentinel that is the value + marker loses its marker);
    other markers stay. By `_MARKERS_SPLIT.split` and a lookup per marker: what
    `_MARKERS.sub` with a function would give, without a Python call per marker."""
    back: dict[str, str] = {}
    for leaf in group:
        if isinstance(leaf.sentinel, str) and leaf.sentinel != leaf.marker:
            back[leaf.marker] = ""  # value + marker: drop the marker
        else:
            value = leaf.value
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            back[leaf.marker] = str(value)

    # What every marker of the group starts with ("1.9" for numbers, "zq" for strings):
    # a text holding none of these holds none of the group's markers, and is returned
    # without a split (most fields of a render hold no marker).
    needles = tuple({m[:3] if m.startswith("1.") else m[:2] for m in back})

    def put_back(text: str) -> str:
        if not any(n in text for n in needles):
            return text
        parts = _MARKERS_SPLIT.split(text)
        if len(parts) > 1:
            get = back.get
            parts[1::2] = [get(m, m) for m in parts[1::2]]
        return "".join(parts)

    return put_back


_SCHEMA_CHART = re.compile(r"^(\S[^:\n]*):$")
_SCHEMA_REFUSED = re.compile(r"at '(/[^'\n]*)': ")


def _schema_refused(message: str, group: list[_Leaf]) -> list[_Leaf]:
    """The leaves of `group` Helm's values schema check refused ("got number, want
    integer", "value must be one of"), by the JSON pointer it names (under a subchart's
    name, that chart's values)."""
    refused: set[str] = set()
    chart = ""
    for line in message.splitlines():
        header = _SCHEMA_CHART.match(line)
        if header:
            chart = header.group(1).strip()
            continue
        for pointer in _SCHEMA_REFUSED.findall(line):
            refused.update((pointer, f"/{chart}{pointer}"))
    if not refused:
        return []
    return [x for x in group if _pointer(x.key) in refused]


def _named_in_error(message: str, group: list[_Leaf]) -> list[_Leaf]:
    """The leaves of `group` a render error names: by their dotted key of two parts or
    more (a top-level `name` is any word), not inside a longer one, or by their marker."""
    named = []
    for leaf in group:
        if leaf.marker in message:
            named.append(leaf)
            continue
        dotted = ".".join(map(str, leaf.key)) if len(leaf.key) > 1 else ""
        at = message.find(dotted) if dotted else -1
        while at >= 0:
            end = at + len(dotted)
            if (at == 0 or not _KEY_CHAR.match(message[at - 1])) and (
                    end == len(message) or not _KEY_CHAR.match(message[end])):
                break
            at = message.find(dotted, at + 1)
        if at >= 0:
            named.append(leaf)
    return named


_KEY_CHAR = re.compile(r"[\w.\-]")


def _pointer(key: Key) -> str:
    return "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in key)


# Unsigned: the 3 of `db-3` is no -3 (a negative value is not traced by its move).
_DIGITS = re.compile(r"(?<![\d.])\d+(?:\.\d+)?")


def _moved_numbers(base: str, text: str, moves: dict[int, _Leaf]) -> list[_Hit]:
    """Hits of the numbers of `text` that moved from `base` by a key's prime, from that
    key's value; the numbers are paired in order (none was added or dropped)."""
    before, after = list(_DIGITS.finditer(base)), list(_DIGITS.finditer(text))
    if len(before) != len(after):
        return []
    hits: list[_Hit] = []
    for was, now in zip(before, after, strict=True):
        moved = float(now.group()) - float(was.group())
        leaf = moves.get(int(moved)) if moved.is_integer() else None
        if leaf is None or not _same_number(was.group(), leaf.value):
            continue
        line = column = 0
        if "\n" in base:
            start = base.rfind("\n", 0, was.start()) + 1
            line, column = base.count("\n", 0, start) + 1, was.start() - start
        hits.append(_Hit(leaf, verbatim=base.strip() == was.group(), at=was.start(),
                         line=line, column=column))
    return hits


def _integral(value: Any) -> bool:
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _primes(count: int) -> list[int]:
    found: list[int] = []
    n = 2
    while len(found) < count:
        if all(n % p for p in found if p * p <= n):
            found.append(n)
        n += 1
    return found


def _line_of(text: str, at: int, base: str, leaf: _Leaf, put_back: Any) -> tuple[int, int]:
    """(line, column) in the baseline's multi-line `base` of the value whose marker is at
    `at` of the perturbed `text` (a pgbouncer.ini a helper wrote: each of its settings
    from its own key); (0, 0) for one line, or when the lines do not pair up or the
    value is not where its marker says."""
    if "\n" not in base or text.count("\n") != base.count("\n"):
        return 0, 0
    start = text.rfind("\n", 0, at) + 1
    line = text.count("\n", 0, start) + 1
    shown = _as_text(leaf.value)
    column = len(put_back(text[start:at]))
    if isinstance(leaf.sentinel, str) and leaf.sentinel != leaf.marker:
        column -= len(shown)  # value + marker: the value comes before its marker
    base_line = base.split("\n")[line - 1]
    if column < 0 or "\n" in shown or not base_line.startswith(shown, column):
        return 0, 0
    return line, column


def _as_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _digit_neighbours(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else ""
    return before.isdigit() or before == "." or (end < len(text) and text[end].isdigit())


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _shown(base: str, value: Any, verbatim: bool) -> bool:
    """Whether the baseline field `base` shows the key's real value: all of it for a
    verbatim hit, else somewhere in it. Numbers compare as numbers (Helm may print
    1000000 as 1e+06)."""
    if isinstance(value, int | float):
        tokens = [base.strip()] if verbatim else _NUMBER.findall(base)
        return any(_same_number(token, value) for token in tokens)
    if verbatim:
        return base == value or base.strip() == value.strip()
    return _appears(value, base)


def _same_number(text: str, value: float) -> bool:
    try:
        return float(text) == value
    except ValueError:
        return False


def _appears(value: Any, text: str) -> bool:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    shown = str(value)
    if "\n" in shown:
        shown = shown.strip().splitlines()[0]
    return shown in text


def _set_path(tree: dict[str, Any], key: Key, value: Any, effective: Any) -> None:
    """Set `key` in the user values, copying containers from the effective values
    where the user values do not have them (lists are replaced whole by Helm)."""
    node: Any = tree
    ref: Any = effective
    for i, k in enumerate(key[:-1]):
        ref = ref[k] if isinstance(ref, dict | list) else None
        nxt = key[i + 1]
        if isinstance(node, dict):
            child = node.get(k)
            want_list = isinstance(nxt, int)
            if not isinstance(child, list if want_list else dict):
                child = copy.deepcopy(ref) if ref is not None else ([] if want_list else {})
                node[k] = child
        else:
            child = node[k]
        node = child
    last = key[-1]
    if isinstance(node, list) and isinstance(last, int):
        while len(node) <= last:
            node.append(None)
    node[last] = value


def _parse_all(rendered: dict[str, str], reads: dict[str, BaselineRead] | None = None
               ) -> dict[Any, dict[Key, Any]]:
    """(template key, kind, index) -> flattened scalar fields of each object, indexed
    as `k8s_objects` indexes them. Tracing parses every perturbed render, so this uses
    libyaml (PyYAML's C loader, part of the `helm` extra) when present; positions are
    not needed here. `reads`: what the positioned read of some of the texts already
    gave (see baseline_read)."""
    out: dict[Any, dict[Key, Any]] = {}
    for key, text in rendered.items():
        if key.endswith("NOTES.txt") or not text.strip():
            continue
        read = reads.get(key) if reads else None
        if read is None or read.text is not text:
            read = BaselineRead(text)
        if read.error is not None:
            raise read.error
        found = read.fields if read.fields is not None else _objects_fields(text)
        for index, (kind, fields) in enumerate(found):
            out[(key, kind, index)] = _decoded(fields) if kind == "Secret" else fields
    return out


def _unmarked_kinds(fields: dict[Any, dict[Key, Any]], put_back: Callable[[str], str]
                    ) -> dict[Any, dict[Key, Any]]:
    """The objects of a render keyed by their kind with the group's markers put back: a
    values key that is an object's `kind` (an object `toYaml` writes from a values list,
    8gears/n8n-helm-chart extraManifests) gets a sentinel too, and the object then matched
    no object of the baseline: none of its fields in that render was traced."""
    if not any(isinstance(kind, str) and _MARKERS.search(kind) for _t, kind, _i in fields):
        return fields
    return {(t, put_back(kind) if isinstance(kind, str) else kind, i): leaves
            for (t, kind, i), leaves in fields.items()}


def _decoded(fields: dict[Key, Any]) -> dict[Key, Any]:
    """A Secret's fields with its `data` decoded from base64 (`b64enc` in a template):
    markers show in the text its reader is given (advisor.read.workloads)."""
    out = dict(fields)
    for path, value in fields.items():
        if len(path) == 2 and path[0] == "data" and isinstance(value, str):
            try:
                out[path] = base64.b64decode(value, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                continue
    return out


class BaselineRead(Struct):
    """What the positioned read of a baseline template (advisor.read.render.helm._objects_of)
    gives tracing: `_objects_fields` of its text, flattened from the nodes that read
    composed while they are at hand (kept until tracing starts, they made the collector
    run a third more often), or the exception that raised. Neither when that read did
    not take the whole stream with libyaml: tracing then reads the text itself."""

    text: str
    fields: list[tuple[str, dict[Key, Any]]] | None = None
    error: Exception | None = None


def baseline_read(read: Composed) -> BaselineRead:
    """The BaselineRead of a template from the nodes advisor.read.yamlpos composed, when
    it read the whole stream with libyaml: the nodes `_nodes` would compose (the same
    parser; yamlpos's tags differ, and neither `_node_fields` nor `_plain` reads a tag)."""
    if not read.complete or not LIBYAML:
        return BaselineRead(read.text)
    try:
        return BaselineRead(read.text, _objects_fields(read.text, read.nodes))
    except Exception as exc:  # _parse_all raises it again: the baseline is not traced
        return BaselineRead(read.text, error=exc)


def _objects_fields(text: str, nodes: list[Any] | None = None
                    ) -> list[tuple[str, dict[Key, Any]]]:
    """(kind, flattened fields) of each object in `text`: a document with a kind and a
    metadata.name, or an item of a List. A plain tree's fields come straight from its
    nodes (`_node_fields`); anything else is built as BaseLoader builds it, then
    flattened. `nodes`: the text's documents already composed by libyaml."""
    if nodes is None:
        nodes = _nodes(text)
    if nodes is not None:
        try:
            return [found for node in nodes if node is not None
                    for found in _node_fields(node)]
        except _NotTree:
            pass
    docs = _python_loader()(text) if nodes is None else [
        None if node is None else _plain(node, {}, set()) for node in nodes]
    return [(body["kind"], flatten(body)) for doc in docs for body in _unpack_plain(doc)
            if isinstance(body.get("kind"), str)
            and isinstance(get(body, "metadata", "name"), str)]


class _NotTree(Exception):
    """A document `_node_fields` leaves to `_plain`: a key written twice or not a
    scalar, a node inside itself, a List, or very deep nesting."""


_MAX_FLAT_DEPTH = 200  # far below where `_plain`'s recursion would fail


def _node_fields(node: Any) -> list[tuple[str, dict[Key, Any]]]:
    """flatten() of the document `_plain` would build from `node`, read from the nodes
    (scalars are their text; an alias is its anchor's node again), if it is an object;
    raises _NotTree where `_plain` would differ or fail."""
    fields: dict[Key, Any] = {}
    _flat(node, (), fields, set(), 0)
    kind = fields.get(("kind",))
    if kind is None or not isinstance(node, MappingNode):
        return []
    if kind.endswith("List"):
        raise _NotTree("a List: its items are the objects")
    return [(kind, fields)] if ("metadata", "name") in fields else []


def _flat(node: Any, prefix: Key, out: dict[Key, Any], active: set[int], depth: int) -> None:
    if isinstance(node, ScalarNode):
        out[prefix] = node.value
        return
    ident = id(node)
    if ident in active or depth > _MAX_FLAT_DEPTH:
        raise _NotTree("a node inside itself, or deep nesting")
    active.add(ident)
    if isinstance(node, SequenceNode):
        for i, child in enumerate(node.value):
            _flat(child, (*prefix, i), out, active, depth + 1)
    else:
        keys: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.value in keys:
                raise _NotTree("a key that is not a scalar, or written twice")
            keys.add(key_node.value)
            _flat(value_node, (*prefix, key_node.value), out, active, depth + 1)
    active.discard(ident)


def _unpack_plain(doc: Any) -> list[dict[str, Any]]:
    if not isinstance(doc, dict):
        return []
    if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        return [x for x in doc["items"] if isinstance(x, dict)]
    return [doc]


def _nodes(text: str) -> list[Any] | None:
    """The documents' nodes as libyaml composes them, tags unresolved (None for an
    empty document); None without libyaml. Read as PyYAML's BaseLoader reads them:
    every scalar the text Helm printed (`{{ .Values.port }}0` is "1.9000020", not the
    float 1.900002 that would pass for the sentinel itself), no tags executed, `<<` a
    plain key."""
    try:
        from yaml.cyaml import CParser
    except ImportError:
        return None
    parser = _text_parser(CParser)(text)
    try:
        nodes = []
        while parser.check_node():
            nodes.append(parser.get_node())
        return nodes
    finally:
        parser.dispose()


@functools.cache
def _text_parser(cparser: Any) -> Any:
    class TextParser(cparser):  # type: ignore[misc, valid-type]
        """libyaml's composer without tag resolution: the tags of a BaseLoader's nodes
        select nothing (it has no constructors), and resolving each node in Python was
        half of the read."""

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            pass

        def ascend_resolver(self) -> None:
            pass

        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            return ""

    return TextParser


def _plain(node: Any, done: dict[int, Any], active: set[int]) -> Any:
    """BaseConstructor's value of `node`: scalars their text, sequences lists, mappings
    dicts (a repeated key keeps its first place and its last value); an alias is the
    object of its anchor; a key that is not a scalar, or a node inside itself, raises."""
    if isinstance(node, ScalarNode):
        return node.value
    ident = id(node)
    if ident in done:
        return done[ident]
    if ident in active:
        raise ConstructorError(None, None, "found unconstructable recursive node",
                               node.start_mark)
    active.add(ident)
    data: Any
    if isinstance(node, SequenceNode):
        data = [_plain(child, done, active) for child in node.value]
    elif isinstance(node, MappingNode):
        data = {}
        for key_node, value_node in node.value:
            key = _plain(key_node, done, active)
            if not isinstance(key, str):
                raise ConstructorError("while constructing a mapping", node.start_mark,
                                       "found unhashable key", key_node.start_mark)
            data[key] = _plain(value_node, done, active)
    else:
        raise ConstructorError(None, None, f"unexpected node {node!r}", node.start_mark)
    active.discard(ident)
    done[ident] = data
    return data


def _python_loader() -> Any:
    import yaml  # PyYAML built without libyaml: its own BaseLoader, slower

    def load(text: str) -> list[Any]:
        return list(yaml.load_all(text, Loader=yaml.BaseLoader))  # no tags executed
    return load


def apply_traces(by_key: dict[Any, K8sObject], tracer: ValuesTracer) -> None:
    for (obj_key, path), hits in tracer.hits.items():
        obj = by_key.get(obj_key)
        if obj is None:
            continue
        hits.sort(key=lambda h: (not h.verbatim, h.derived, h.at))
        first = hits[0]
        how = "" if first.verbatim else " (derived)" if first.derived else " (part of)"
        names = ", ".join(_name(h) for h in hits)
        source = replace(first.leaf.source, key=f"values: {names}{how}")
        dotted = field_path(*path)
        obj.value_sources[dotted] = source
        for hit in hits:
            if hit.line:
                obj.value_sources[traced_line_key(dotted, hit.line, hit.column)] = replace(
                    hit.leaf.source, key=f"values: {_name(hit)}")
        # The baseline's fields: a Secret's data decoded, as its reader reads it. A
        # values block of one line (`extendedConfiguration: |` then `max_connections =
        # 500`) renders as one line when the template strips its newline (`|-` and
        # `nindent`, Bitnami's extended-configmap.yaml): still a block, line for line.
        value = tracer.baseline.get(obj_key, {}).get(path)
        if isinstance(value, str) and ("\n" in value or any(_block_value(h) for h in hits)):
            _trace_text_lines(obj, path, value, hits, tracer.layers)


def _block_value(hit: _Hit) -> bool:
    return isinstance(hit.leaf.value, str) and "\n" in hit.leaf.value


def _name(hit: _Hit) -> str:
    return hit.leaf.source.key or ".".join(map(str, hit.leaf.key))


def _trace_text_lines(obj: K8sObject, path: Key, rendered: str, hits: list[_Hit],
                      layers: list[ValuesLayer]) -> None:
    """A multi-line field holding values text verbatim (a postgresql.conf block):
    map each of its lines to the values file line it came from."""
    rendered_lines = [x.rstrip() for x in rendered.splitlines()]
    for hit in hits:
        if not _block_value(hit):
            continue
        start = block_start(layers, hit.leaf.key)
        if start is None:
            continue
        value_lines = [x.rstrip() for x in hit.leaf.value.splitlines()]
        at = _find_run(rendered_lines, value_lines)
        if at is None:
            continue
        shown, offset = start
        for k in range(len(value_lines)):
            obj.value_sources[f"{field_path(*path)}#{at + k + 1}"] = Source(
                path=shown, line=offset + k + 1,
                key=f"values: {'.'.join(map(str, hit.leaf.key))}")


def _find_run(haystack: list[str], needle: list[str]) -> int | None:
    while needle and not needle[-1]:
        needle = needle[:-1]
    if not needle:
        return None
    for i in range(len(haystack) - len(needle) + 1):
        if haystack[i:i + len(needle)] == needle:
            return i
    return None
