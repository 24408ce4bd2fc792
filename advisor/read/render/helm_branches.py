"""Which of a helper's `if`/`else` branches can have written a rendered line, told from
the chart's merged values, for helm_include_lines: a helper's branches write the same
key, and the alignment by keys can take the first branch's line for the branch Helm took.

BorisPolonsky/dify-helm (3c4ef10) charts/dify/templates/config.tpl, `dify.db.config`:
`if .Values.externalPostgres.enabled` writes `DB_HOST: {{ .Values.externalPostgres.address
}}` (:215), `else if .Values.postgresql.enabled` writes `DB_HOST: {{ include
"dify.postgresql.primary.fullname" . }}` (:236); rendered with postgresql enabled, DB_HOST
was cited at :215.

Each answer is YES, NO or UNKNOWN; NO only from what was read (a condition of literals and
`.Values` paths that is false, a line whose text filled in from the values is not the
rendered one), so a line is never taken away from a branch on a guess.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

YES, NO, UNKNOWN = 1, 0, -1

MAX_TOKENS = 64  # a condition longer than this is not read

_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.DOTALL)
_WORD = re.compile(r"(if|else\s+if|else\s+with|else|end|with|range|define|block)\b\s*(.*)",
                   re.DOTALL)
_TOKEN = re.compile(r'\(|\)|"(?:[^"\\]|\\.)*"|`[^`]*`|[^\s()]+')
_PATH = re.compile(r"(\$)?\.Values((?:\.[\w-]+)+)$")
# Pipelines that give a value's text as it is, or quoted.
_PIPES = {"": '{}', "quote": '"{}"', "squote": "'{}'", "toString": "{}",
          "toString | quote": '"{}"'}


class Frame:
    """An open `if`/`with` chain (its branches' conditions so far), a `range`, or a
    helper's body (`span`: what its `.` and `$` are)."""

    __slots__ = ("branch", "chain", "conds", "dollar_root", "dot_root", "kind")

    def __init__(self, kind: str, chain: int, dot_root: bool, dollar_root: bool) -> None:
        self.kind = kind
        self.chain = chain
        self.branch = 0
        self.conds: list[int] = []  # each branch's condition, YES/NO/UNKNOWN
        self.dot_root = dot_root
        self.dollar_root = dollar_root


class LineState:
    """Where a line stands: the (chain, branch) of each `if`/`with` around it, whether
    Helm took all of them (YES/NO/UNKNOWN), and whether its `.Values` and `$.Values`
    are the chart's values."""

    __slots__ = ("dollar_root", "dot_root", "path", "taken")

    def __init__(self, path: tuple[tuple[int, int], ...], taken: int, dot_root: bool,
                 dollar_root: bool) -> None:
        self.path = path
        self.taken = taken
        self.dot_root = dot_root
        self.dollar_root = dollar_root


def line_states(lines: Sequence[str], spans: Sequence[tuple[int, int, str]],
                values: dict[str, Any] | None) -> list[LineState]:
    """The state of each line of an expansion (helm_include_lines.Expansion: `spans`,
    (start, end, include argument) of each helper body inserted, outer ones first)."""
    stack: list[Frame] = []
    chains = 0
    out: list[LineState] = []
    state: LineState | None = None
    done = 0  # lines given a state so far
    for i, closes, opens, actions in _steps(tuple(lines), tuple(spans)):
        if i > done:
            # the lines since the last step left the stack as it was: the same state
            # (read only), not one built again from the whole stack per line
            state = state or _state(stack)
            out.extend([state] * (i - done))
        for _ in range(closes):
            _close_span(stack)
        for arg in opens:
            # the body's `.` and `$` are the include's argument, read where it stands
            dot, dollar = _roots(stack)
            root = (arg == "." and dot) or (arg == "$" and dollar)
            stack.append(Frame("span", -1, root, root))
        for word, rest in actions:
            chains = _act(word, rest, stack, chains, values)
        state = _state(stack)
        out.append(state)
        done = i + 1
    if len(lines) > done:
        state = state or _state(stack)
        out.extend([state] * (len(lines) - done))
    return out


Step = tuple[int, int, tuple[str, ...], tuple[tuple[str, str], ...]]


# Read only. The lines of an expansion that can move the stack, found without the
# values: a chart's copies (a monorepo of charts from one scaffold) expand the same
# helpers into the same lines, and the walk over every line (an action regex per line)
# was most of line_states, itself half of helm_include_lines.helper_places.
@functools.lru_cache(maxsize=256)
def _steps(lines: tuple[str, ...], spans: tuple[tuple[int, int, str], ...]) -> tuple[Step, ...]:
    """(line, bodies that end there, include arguments of the bodies that start there,
    its `if`/`with`/`range`/`else`/`end`/`define`/`block` actions, each as (word, the
    rest)) of each line where one of them is. A body is closed at its end line if it
    started before it (one that starts and ends on the same line is never closed, as
    the walk line by line did)."""
    starts: dict[int, list[str]] = {}
    closes: dict[int, int] = {}
    for start, end, arg in spans:
        starts.setdefault(start, []).append(arg)
        if start < end:
            closes[end] = closes.get(end, 0) + 1
    steps: list[Step] = []
    for i, line in enumerate(lines):
        actions = tuple((re.sub(r"\s+", " ", w.group(1)), w.group(2))
                        for m in _ACTION.finditer(line)
                        if (w := _WORD.match(m.group(1))) is not None) if "{{" in line else ()
        if actions or i in starts or i in closes:
            steps.append((i, closes.get(i, 0), tuple(starts.get(i, ())), actions))
    return tuple(steps)


def _close_span(stack: list[Frame]) -> None:
    """Drop the innermost body and what it left open (a body is balanced; the guard is
    for one that is not)."""
    while stack:
        if stack.pop().kind == "span":
            return


def _roots(stack: list[Frame]) -> tuple[bool, bool]:
    """Whether `.Values` and `$.Values` are the chart's values here."""
    dot = True
    for frame in reversed(stack):
        if frame.kind in ("with", "range"):
            dot = False
        elif frame.kind == "span":
            return dot and frame.dot_root, frame.dollar_root
    return dot, True


def _act(word: str, rest: str, stack: list[Frame], chains: int,
         values: dict[str, Any] | None) -> int:
    """An action's `word` (its _WORD, spaces made one) and the `rest` of it, on the
    stack."""
    if word in ("if", "with", "range", "define", "block"):
        dot, dollar = _roots(stack)
        frame = Frame(word if word in ("with", "range") else "if", chains, dot, dollar)
        chains += 1
        if word in ("if", "with"):
            frame.conds.append(condition(rest, values, dot, dollar))
        elif word == "range":
            frame.conds.append(UNKNOWN)
        else:
            frame.conds.append(YES)  # define/block: not a branch
        stack.append(frame)
    elif word.startswith("else") and stack and stack[-1].kind != "span":
        frame = stack[-1]
        frame.branch += 1
        dot, dollar = _roots(stack[:-1])
        if word == "else":
            frame.conds.append(YES if frame.kind != "range" else UNKNOWN)
        else:
            frame.conds.append(condition(rest, values, dot, dollar))
        if frame.kind == "with" and word != "else with":
            frame.kind = "if"  # an `else` branch of a `with` keeps the outer `.`
    elif word == "end" and stack and stack[-1].kind != "span":
        stack.pop()
    return chains


def _state(stack: list[Frame]) -> LineState:
    path: list[tuple[int, int]] = []
    taken = YES
    for frame in stack:
        if frame.kind == "span":
            continue
        path.append((frame.chain, frame.branch))
        here = _branch_taken(frame.conds)
        if here == NO or taken == NO:
            taken = NO
        elif here == UNKNOWN:
            taken = UNKNOWN
    dot, dollar = _roots(stack)
    return LineState(tuple(path), taken, dot, dollar)


def _branch_taken(conds: list[int]) -> int:
    """Whether Helm took the last branch: its condition true and every one before false."""
    if conds[-1] == NO or YES in conds[:-1]:
        return NO
    if conds[-1] == YES and all(c == NO for c in conds[:-1]):
        return YES
    return UNKNOWN


# --- conditions ------------------------------------------------------------------------

_MISSING = object()  # a path through a key that is not there: Helm would have failed


def condition(text: str, values: dict[str, Any] | None, dot: bool, dollar: bool) -> int:
    """YES/NO/UNKNOWN of an `if` condition made of `.Values` paths, literals, `not`,
    `and`, `or`, `eq`, `ne`, `empty`; UNKNOWN for anything else (a pipeline, a
    variable, another function)."""
    if values is None:
        return UNKNOWN
    parsed = _parsed(text)
    if parsed is None:
        return UNKNOWN
    value = _evaluate(parsed, values, dot, dollar)
    return UNKNOWN if value is _UNKNOWN else (YES if _truth(value) else NO)


_UNKNOWN = object()


# Read only (_evaluate does not change it): a chart's copies test the same conditions.
@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> list[Any] | None:
    """The condition's command (_command), None when it is not one read here: a
    pipeline, a variable set, too many tokens, unbalanced parentheses."""
    if "|" in text or ":=" in text:
        return None
    tokens = _TOKEN.findall(text)
    if not tokens or len(tokens) > MAX_TOKENS:
        return None
    parsed, rest = _command(tokens, 0)
    return None if parsed is None or rest != len(tokens) else parsed


def _command(tokens: list[str], i: int) -> tuple[list[Any] | None, int]:
    """The words of a command from tokens[i] up to a `)` or the end, a parenthesized
    one as a list."""
    words: list[Any] = []
    while i < len(tokens) and tokens[i] != ")":
        if tokens[i] == "(":
            inner, i = _command(tokens, i + 1)
            if inner is None or i >= len(tokens):
                return None, i
            words.append(inner)
        else:
            words.append(tokens[i])
        i += 1
    return (words or None), i


def _evaluate(node: Any, values: dict[str, Any], dot: bool, dollar: bool) -> Any:
    if isinstance(node, list):
        if len(node) == 1:
            return _evaluate(node[0], values, dot, dollar)
        name, args = node[0], [_evaluate(a, values, dot, dollar) for a in node[1:]]
        if not isinstance(name, str) or any(a is _UNKNOWN for a in args):
            return _UNKNOWN
        return _call(name, args)
    return _operand(node, values, dot, dollar)


def _call(name: str, args: list[Any]) -> Any:
    if name == "not" and len(args) == 1:
        return not _truth(args[0])
    if name in ("and", "or") and args:
        want = name == "or"  # Go: the first arg that decides, else the last
        return next((a for a in args if _truth(a) == want), args[-1])
    if name in ("eq", "ne") and len(args) == 2 and all(_comparable(a) for a in args):
        same = args[0] == args[1]
        return same if name == "eq" else not same
    if name == "empty" and len(args) == 1:
        return not _truth(args[0])
    return _UNKNOWN


def _comparable(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _operand(word: str, values: dict[str, Any], dot: bool, dollar: bool) -> Any:
    if word in ("true", "false"):
        return word == "true"
    if word[:1] in ('"', "`"):
        return _unquote(word)
    if re.fullmatch(r"-?\d+", word):
        return int(word)
    m = _PATH.match(word)
    if m is None or not (dollar if m.group(1) else dot):
        return _UNKNOWN
    found = lookup(values, m.group(2)[1:].split("."))
    return _UNKNOWN if found is _MISSING else found


def _unquote(word: str) -> str:
    if word.startswith("`"):
        return word[1:-1]
    return re.sub(r"\\(.)", r"\1", word[1:-1])


def lookup(values: dict[str, Any], keys: list[str]) -> Any:
    """The value at `keys`; None for a last key not there (Helm: no value), _MISSING for
    a path through a key that is not there or not a map."""
    node: Any = values
    for n, key in enumerate(keys):
        if not isinstance(node, dict):
            return _MISSING
        if key not in node:
            return None if n == len(keys) - 1 else _MISSING
        node = node[key]
    return node


def _truth(value: Any) -> bool:
    """Go template truth: false, 0, nil, and an empty string, map or list are false."""
    if value is None or value is False:
        return False
    if isinstance(value, int | float | str | dict | list):
        return bool(value)
    return True


# --- a line's text ---------------------------------------------------------------------

_VALUE = re.compile(r"(\$)?\.Values((?:\.[\w-]+)+)\s*((?:\|\s*[\w]+\s*)*)$")


def writes(template_line: str, rendered: str, values: dict[str, Any] | None,
           state: LineState) -> int:
    """YES when the line, its actions filled in from the values (`.Values` paths, as
    they are or piped to quote/squote/toString), is the rendered text; NO when it is
    another; UNKNOWN when an action is anything else. A line without actions: YES
    when its text is the rendered text."""
    text = template_line.strip()
    want = rendered.strip()
    parts: list[str] = []
    last = 0
    for m in _ACTION.finditer(text):
        parts.append(re.escape(text[last:m.start()]))
        filled = _filled(m.group(1), values, state)
        if filled is None:
            return UNKNOWN
        parts.append(re.escape(filled))
        last = m.end()
    parts.append(re.escape(text[last:]))
    # Helm's `{{-` and `-}}` trim the spaces around an action
    return YES if re.fullmatch(r"\s*".join(parts), want) else NO


def _filled(action: str, values: dict[str, Any] | None, state: LineState) -> str | None:
    m = _VALUE.match(action)
    if m is None or values is None or not (state.dollar_root if m.group(1) else state.dot_root):
        return None
    pipes = " | ".join(p.strip() for p in m.group(3).split("|") if p.strip())
    shape = _PIPES.get(pipes)
    found = lookup(values, m.group(2)[1:].split("."))
    text = _text(found)
    if shape is None or text is None:
        return None
    if "quote" in pipes and re.search(r'[\\"\x00-\x1f]', text):
        return None  # text `quote` escapes (%q): left to UNKNOWN
    return shape.format(text)


def _text(value: Any) -> str | None:
    """How Helm prints a value: a string as it is, a bool as true/false, an int; None
    for the rest (a float, nil, a map)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return None
