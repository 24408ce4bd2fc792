"""Java `.properties` files, read the way `java.util.Properties.load(Reader)` reads them
(JDK 17 javadoc of Properties.load): `#`/`!` comment lines, the key ends at the first
unescaped `=`, `:` or whitespace, a line ending in an odd number of backslashes continues
on the next (whose leading whitespace is dropped), escapes `\\t \\n \\r \\f \\uXXXX`, any
other `\\x` is `x`. Spring Boot 2.4+ also splits a file into documents at lines that are
exactly `#---` or `!---` (Spring Boot reference, "Working With Multi-Document Files").
"""

from __future__ import annotations

import re

from advisor.model import Frozen

# Java's LineReader ends lines at \n, \r and \r\n only; str.splitlines would also split
# at \f, \v, \x1c-\x1e, \x85, U+2028/2029 (found by the java.util.Properties oracle).
_EOL = re.compile(r"\r\n|\r|\n")


class PropLine(Frozen, kw_only=True):
    key: str
    value: str
    line: int  # 1-based line where the entry starts


class PropError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[tuple[int, str, bool]]:
    """(first line number, joined text, is_document_separator) for each logical line."""
    out: list[tuple[int, str, bool]] = []
    physical = _EOL.split(text)
    if physical and physical[-1] == "":
        physical.pop()
    i = 0
    while i < len(physical):
        start = i + 1
        raw = physical[i]
        i += 1
        if raw in ("#---", "!---"):
            out.append((start, "", True))
            continue
        stripped = raw.lstrip(" \t\f")
        if not stripped or stripped[0] in "#!":
            continue
        parts = [stripped]
        while _continues(parts[-1]) and i < len(physical):
            parts[-1] = parts[-1][:-1]
            parts.append(physical[i].lstrip(" \t\f"))
            i += 1
        if _continues(parts[-1]):
            parts[-1] = parts[-1][:-1]  # backslash at end of file: dropped
        out.append((start, "".join(parts), False))
    return out


def _continues(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _unescape(text: str, line: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u":
                digits = text[i + 2 : i + 6]
                if len(digits) < 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise PropError(line, f"Malformed \\uxxxx encoding: \\u{digits}")
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _split(logical: str) -> tuple[str, str]:
    i = 0
    while i < len(logical):
        c = logical[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key = logical[:i]
    rest = logical[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":") and (i >= len(logical) or logical[i] in " \t\f=:"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def parse_properties(text: str) -> list[list[PropLine]]:
    """Documents (one unless `#---` separators), each a list of entries in file order.
    Later entries with the same key win, as in Properties.load."""
    docs: list[list[PropLine]] = [[]]
    for line, logical, separator in _logical_lines(text):
        if separator:
            docs.append([])
            continue
        key, value = _split(logical)
        docs[-1].append(PropLine(key=_unescape(key, line), value=_unescape(value, line),
                                 line=line))
    return docs
