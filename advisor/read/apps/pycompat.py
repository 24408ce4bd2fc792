"""Reading Python 3.12+ sources on an older interpreter (`ast` parses only the grammar
of the Python running pool-advisor). When a file fails to parse, a copy is rewritten
into the older grammar with every line kept where it was, and parsed again:

- PEP 701 f-strings (same quotes nested, backslashes or comments in replacement
  fields, replacement fields across lines) become a plain string of the f-string's
  literal text with each `{...}` field left as `{}`: the pool readers treat any
  f-string as text they cannot evaluate fully anyway;
- PEP 695 `type X = ...` statements become `X = None`, and type parameter lists
  (`def f[T](...)`, `class C[T]:`) are dropped.

The caller reports what was rewritten; nothing is guessed beyond these forms.
"""

from __future__ import annotations

import re

_PREFIX = re.compile(r"(?i)(?<![\w])(rb|br|fr|rf|[rbuf])?('''|\"\"\"|'|\")")
_TYPE_STMT = re.compile(r"^(\s*)type\s+([A-Za-z_]\w*)\s*(\[[^=]*\])?\s*=", re.M)
_TYPE_PARAMS = re.compile(r"^(\s*(?:async\s+)?(?:def|class)\s+[A-Za-z_]\w*)\[[^\]\n]*\]", re.M)


def _string_end(text: str, i: int, quote: str, fmt: bool, raw: bool) -> int:
    """Index just past the string whose body starts at i (after the opening quote)."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if depth == 0:
            if c == "\\" and not raw:
                i += 2
                continue
            if text.startswith(quote, i):
                return i + len(quote)
            if len(quote) == 1 and c == "\n":
                return i  # unterminated: stop at the line end
            if fmt and c == "{":
                if text.startswith("{{", i):
                    i += 2
                    continue
                depth = 1
            i += 1
            continue
        # inside a replacement field: nested strings, brackets, comments
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        m = _PREFIX.match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            prefix = (m.group(1) or "").lower()
            i = _string_end(text, m.end(), m.group(2), "f" in prefix, "r" in prefix)
            continue
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        i += 1
    return n


def _flatten_fstring(literal: str, prefix: str, quote: str) -> str:
    """The f-string as a plain string of the same line count: fields become `{}`.
    Escapes in the literal text are kept as written (the text is only shown)."""
    body = literal[len(prefix) + len(quote):-len(quote)] if literal.endswith(quote) else \
        literal[len(prefix) + len(quote):]
    out, depth = [], 0
    for c in body:
        if depth == 0 and c != "{":
            out.append(c)
        elif c == "{":
            depth += 1
            if depth == 1:
                out.append("{}")
        elif c == "}":
            depth = max(0, depth - 1)
        elif c == "\n":
            out.append("\n")
    lines = "".join(out).split("\n")
    if len(lines) == 1:
        return repr(lines[0])
    # parenthesised pieces, one a line, so that the line count stays
    pieces = [repr(line + "\n") for line in lines[:-1]] + [repr(lines[-1])]
    return "(" + "\n".join(pieces) + ")"


def rewrite_for_older_python(text: str) -> tuple[str, list[str]]:
    """(rewritten source, what was rewritten). Line numbers are unchanged."""
    notes: list[str] = []
    out: list[str] = []
    i, n, changed_f = 0, len(text), 0
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(text[i:j])
            i = j
            continue
        m = _PREFIX.match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            prefix, quote = m.group(1) or "", m.group(2)
            end = _string_end(text, m.end(), quote, "f" in prefix.lower(),
                              "r" in prefix.lower())
            literal = text[i:end]
            if "f" in prefix.lower():
                flat = _flatten_fstring(literal, prefix, quote)
                changed_f += flat != literal
                out.append(flat)
            else:
                out.append(literal)
            i = end
            continue
        out.append(c)
        i += 1
    result = "".join(out)
    if changed_f:
        notes.append(f"{changed_f} f-string(s) read as text (fields not evaluated)")
    result, k = _TYPE_STMT.subn(lambda m: f"{m.group(1)}{m.group(2)} =", result)
    if k:
        notes.append(f"{k} `type` statement(s) read as assignments")
    result, k = _TYPE_PARAMS.subn(lambda m: m.group(1), result)
    if k:
        notes.append(f"{k} type parameter list(s) dropped")
    return result, notes
