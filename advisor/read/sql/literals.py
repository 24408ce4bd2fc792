"""String literals out of source code, with the file line of every line of their text.

One small scanner per language family; none executes or imports anything. Each
returns `Literal`s: the literal's text after escape decoding, interpolations
(`${x}`, `#{x}`, `$name`) replaced by the placeholder `x`, and `lines[k]`, the file line
of the text's k-th character, so a statement found at character k maps back to its
exact file line even when escapes (`\\n`), interpolations spanning lines or `"a" +
"b"` across lines make the text's line count differ from the source's.

Adjacent literals joined by `+` (Java, Kotlin, Go, JS/TS) are merged, as the compiler
would. Python goes through `ast` (see python_literals); Ruby has its own scanner for
heredocs and %q.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

from msgspec import Struct, field

from advisor.lazyregex import lazy

PLACEHOLDER = "x"
# First words of statements worth parsing in a code literal: parsing every string of a
# large tree with the PostgreSQL parser would be slow, and "hello" is not SQL.
STATEMENT_WORDS = frozenset(
    {
        "select", "set", "reset", "listen", "unlisten", "declare", "prepare", "execute",
        "deallocate", "create", "load", "begin", "start", "with", "insert", "update",
        "delete", "do", "alter", "values", "lock", "call", "copy", "notify", "discard",
    }
)  # fmt: skip

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "f": "\f", "v": "\v"}


class Literal(Struct):
    text: str
    lines: list[int]  # file line of each character of `text`
    line: int  # file line where the literal starts
    start: int = 0  # offsets in the file, for merging "a" + "b"
    end: int = 0
    tag: str = ""  # a Ruby heredoc's identifier (SQL in <<~SQL)


class _Builder(Struct):
    """Accumulates decoded text and the source line of every character."""

    line: int
    parts: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def add(self, text: str, source_line: int) -> None:
        self.parts.append(text)
        self.lines.extend([source_line] * len(text))

    def literal(self, start: int, end: int) -> Literal:
        return Literal("".join(self.parts), self.lines, self.line, start, end)


class _Cursor:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < len(self.text) else ""

    def startswith(self, s: str) -> bool:
        return self.text.startswith(s, self.pos)

    def advance(self, n: int = 1) -> str:
        chunk = self.text[self.pos : self.pos + n]
        self.line += chunk.count("\n")
        self.pos += len(chunk)
        return chunk

    def jump(self, pattern: re.Pattern[str]) -> None:
        """Advance to the next match of `pattern` (or the end) in one step."""
        found = pattern.search(self.text, self.pos)
        self.advance((found.start() if found else len(self.text)) - self.pos)

    def run(self, pattern: re.Pattern[str]) -> str:
        """Consume and return the characters up to the next match of `pattern`."""
        found = pattern.search(self.text, self.pos)
        end = found.start() if found else len(self.text)
        chunk = self.text[self.pos : end]
        self.pos = end  # `pattern` matches every newline, so none is skipped here
        return chunk

    def skip_to(self, marker: str) -> None:
        i = self.text.find(marker, self.pos)
        self.advance((len(self.text) if i < 0 else i + len(marker)) - self.pos)

    @property
    def done(self) -> bool:
        return self.pos >= len(self.text)


def _escape(cur: _Cursor, b: _Builder) -> None:
    """At a backslash: decode one escape sequence into `b`."""
    cur.advance()
    ch = cur.advance()
    if ch == "u" and all(c in "0123456789abcdefABCDEF" for c in cur.text[cur.pos : cur.pos + 4]):
        b.add(chr(int(cur.advance(4), 16)), cur.line)
    elif ch != "\n":  # a backslash-newline continues the line: adds nothing
        b.add(_ESCAPES.get(ch, ch), cur.line)


def _interpolation(cur: _Cursor, b: _Builder, opener: str) -> None:
    """At `${` / `#{` (or an f-string's `{`): skip the balanced expression, emit the
    placeholder."""
    cur.advance(len(opener))
    text, pos, depth = cur.text, cur.pos, 1
    while depth:  # from brace to brace, past the one that closes the opener
        brace = _BRACE.search(text, pos)
        if brace is None:
            pos = len(text)
            break
        pos = brace.end()
        depth += 1 if brace.group() == "{" else -1
    cur.advance(pos - cur.pos)
    b.add(PLACEHOLDER, cur.line)


_BRACE = lazy(r"[{}]")


def _quoted(
    cur: _Cursor,
    close: str,
    *,
    escapes: bool = True,
    interp: str | None = None,
    dollar_names: bool = False,
    single_line: bool = False,
) -> Literal:
    start = cur.pos
    cur.advance(len(close))
    b = _Builder(cur.line)
    special = _special(close[0] + ("{}" if interp == "{" else ""))
    while not cur.done:
        plain = cur.run(special)
        if plain:
            b.add(plain, cur.line)
            continue
        if cur.startswith(close):
            cur.advance(len(close))
            return b.literal(start, cur.pos)
        ch = cur.peek()
        if single_line and ch == "\n":
            break  # unterminated: stop at the line end
        if escapes and ch == "\\":
            _escape(cur, b)
        elif interp == "{" and (cur.startswith("{{") or cur.startswith("}}")):
            b.add(cur.advance(2)[0], cur.line)  # an f-string's escaped brace
        elif interp and cur.startswith(interp):
            _interpolation(cur, b, interp)
        elif dollar_names and ch == "$" and (cur.peek(1).isalpha() or cur.peek(1) == "_"):
            cur.advance()
            while cur.peek().isalnum() or cur.peek() == "_":
                cur.advance()
            b.add(PLACEHOLDER, cur.line)
        else:
            b.add(cur.advance(), cur.line)
    return b.literal(start, cur.pos)


@lru_cache(maxsize=8)
def _special(close: str) -> re.Pattern[str]:
    """Characters a quoted-string scanner must look at: the rest it copies in runs."""
    return re.compile("[" + re.escape(close + "\\\n$#") + "]")


_CLIKE_TOKEN = lazy(r"//|/\*|[\"']")
_CLIKE_TOKEN_BACKTICK = lazy(r"//|/\*|[\"'`]")
_RUBY_NEXT = lazy(r"[#\"'%<]|\n(?==begin)")


def _skip_char_literal(cur: _Cursor) -> None:
    cur.advance()
    while not cur.done and cur.peek() not in "'\n":
        cur.advance(2 if cur.peek() == "\\" else 1)
    cur.advance()


def clike_literals(text: str, lang: str) -> list[Literal]:
    """String literals of Java, Kotlin, Go or JS/TS source."""
    cur = _Cursor(text)
    found: list[Literal] = []
    java_like, kotlin, js = lang in ("java", "kotlin"), lang == "kotlin", lang == "js"
    backticks = lang in ("go", "js")
    # A literal with nothing to decode is matched whole (most of them), the rest is read
    # by _quoted; offsets and lines are kept here, not in the cursor, between literals.
    plain_backtick = _PLAIN_GO_RAW if lang == "go" else _PLAIN_BACKTICK
    token = _CLIKE_TOKEN_BACKTICK if backticks else _CLIKE_TOKEN
    pos, line, n = 0, 1, len(text)
    while pos < n:
        # To the next comment or quote: a lone `/` (division, a JS regex literal) and a
        # Java/Kotlin backtick are skipped.
        found_token = token.search(text, pos)
        if found_token is None:
            break
        line += text.count("\n", pos, found_token.start())
        pos = found_token.start()
        ch = found_token.group()
        if ch in ("//", "/*"):  # a comment: to the line end (included), or past */
            marker = "\n" if ch == "//" else "*/"
            i = text.find(marker, pos)
            stop = n if i < 0 else i + len(marker)
        elif ch == '"' and not (java_like and text.startswith('"""', pos)):
            plain = _PLAIN_DOUBLE.match(text, pos)
            if plain:
                found.append(_plain(plain, line))
                pos = plain.end()
                continue
            one_line = None if kotlin else _ONE_LINE_DOUBLE.match(text, pos)
            if one_line:
                found.append(_one_line(one_line, line))
                pos = one_line.end()
                continue
            cur.pos, cur.line = pos, line
            found.append(_quoted(cur, '"', interp="${" if kotlin else None,
                                 dollar_names=kotlin, single_line=True))
            pos, line = cur.pos, cur.line
            continue
        elif ch == '"':
            cur.pos, cur.line = pos, line
            found.append(_quoted(cur, '"""', escapes=lang == "java",
                                 interp="${" if kotlin else None, dollar_names=kotlin))
            pos, line = cur.pos, cur.line
            continue
        elif ch == "'" and js:
            plain = _PLAIN_SINGLE.match(text, pos)
            if plain:
                found.append(_plain(plain, line))
                pos = plain.end()
                continue
            one_line = _ONE_LINE_SINGLE.match(text, pos)
            if one_line:
                found.append(_one_line(one_line, line))
                pos = one_line.end()
                continue
            cur.pos, cur.line = pos, line
            found.append(_quoted(cur, "'", single_line=True))
            pos, line = cur.pos, cur.line
            continue
        elif ch == "'":
            cur.pos, cur.line = pos, line
            _skip_char_literal(cur)
            pos, line = cur.pos, cur.line
            continue
        else:  # a backtick, in Go and JS
            plain = plain_backtick.match(text, pos)
            if plain:
                found.append(_plain(plain, line))
                line += plain.group(1).count("\n")
                pos = plain.end()
                continue
            cur.pos, cur.line = pos, line
            found.append(_quoted(cur, "`", escapes=js, interp="${" if js else None))
            pos, line = cur.pos, cur.line
            continue
        line += text.count("\n", pos, stop)
        pos = stop
    return _merge_concatenated(text, found)


# Literals _quoted would copy character for character: no escape, no interpolation
# (`$`, `#`: the languages that interpolate), no line end where a literal must close on
# its line. Go's raw strings decode nothing.
_PLAIN_DOUBLE = lazy(r'"([^"\\\n$#]*)"')
_PLAIN_SINGLE = lazy(r"'([^'\\\n$#]*)'")
_PLAIN_BACKTICK = lazy(r"`([^`\\$#]*)`")
_PLAIN_GO_RAW = lazy(r"`([^`]*)`")
_PLAIN_RUBY_DOUBLE = lazy(r'"([^"\\#]*)"')
_PLAIN_RUBY_SINGLE = lazy(r"'([^']*)'")  # no escapes read in '...' (as _quoted)


# A literal on one line with escapes and no interpolation (all but Kotlin's "...", whose
# `$` and `${` are placeholders): decoded here as _escape does, in one pass; the rest (a
# backslash-newline, an unterminated literal) is left to _quoted.
_ONE_LINE_DOUBLE = lazy(r'"((?:[^"\\\n]|\\[^\n])*)"')
_ONE_LINE_SINGLE = lazy(r"'((?:[^'\\\n]|\\[^\n])*)'")
_ESCAPE_IN_LINE = lazy(r"\\(?:u([0-9a-fA-F]{4})|(.))")


def _unescape(match: re.Match[str]) -> str:
    code, ch = match.groups()
    return chr(int(code, 16)) if code else _ESCAPES.get(ch, ch)


def _one_line(match: re.Match[str], line: int) -> Literal:
    """The literal of a one-line match, its escapes decoded, every character on `line`."""
    body = _ESCAPE_IN_LINE.sub(_unescape, match.group(1))
    return Literal(body, [line] * len(body), line, match.start(), match.end())


def _plain(match: re.Match[str], line: int) -> Literal:
    """The literal of a plain match: its text as written, each character on the line
    _quoted gives it (a line end counts on the line it opens)."""
    body = match.group(1)
    if "\n" not in body:
        return Literal(body, [line] * len(body), line, match.start(), match.end())
    lines: list[int] = []
    for k, row in enumerate(body.split("\n")):
        if k:
            lines.append(line + k)
        lines.extend([line + k] * len(row))
    return Literal(body, lines, line, match.start(), match.end())


# `+ name +` between two literals, or `+ name` after the last: a value spliced into the
# text (`"SET search_path = " + schema`), stood in for by the placeholder.
_SPLICE = lazy(r"\s*\+\s*[A-Za-z_$][\w.$]*(?:\([^()\n]*\))?(?:\[[^\]\n]*\])?\s*")


_SPLICE_BETWEEN = lazy(f"(?:{_SPLICE.pattern})+" + r"\+\s*")
_PLUS = lazy(r"\s*\+")


def _merge_concatenated(text: str, found: list[Literal]) -> list[Literal]:
    merged: list[Literal] = []
    # The chain being joined: its texts and lines grow in place and make one Literal when
    # it ends (a generated Go descriptor is `"" + "..." + ...` of hundreds: a Literal per
    # join copied the chain each time, a tenth of temporal's scan).
    texts: list[str] = []
    lines: list[int] = []
    for lit in found:
        # Both joins start with a `+`: no slice of the code between the others.
        joined = bool(merged) and _PLUS.match(text, merged[-1].end, lit.start) is not None
        between = text[merged[-1].end : lit.start] if joined else ""
        if joined and len(texts) == 1:
            lines = list(lines)  # the first literal's own list is not grown
        if joined and between.strip() == "+":
            texts.append(lit.text)
            lines.extend(lit.lines)
        elif joined and _SPLICE_BETWEEN.fullmatch(between):
            if lines and lit.lines:
                lines.extend([lines[-1]] * len(PLACEHOLDER))
                lines.extend(lit.lines)
            else:
                lines = []
            texts += (PLACEHOLDER, lit.text)
        else:
            if merged:
                merged[-1] = _chain(merged[-1], texts, lines)
            merged.append(lit)
            texts, lines = [lit.text], lit.lines
            continue
        merged[-1].end = lit.end
    if merged:
        merged[-1] = _chain(merged[-1], texts, lines)
    for i, lit in enumerate(merged):  # a trailing `+ value`
        after = _SPLICE.match(text, lit.end)
        if after and after.group().strip() and not text.startswith(("+", "=", "+="), after.end()):
            tail = text[after.end() : after.end() + 1]
            if tail in (")", ";", ",", "\n", "") or tail.isspace():
                lines = lit.lines + [lit.lines[-1]] * len(PLACEHOLDER) if lit.lines else []
                merged[i] = Literal(lit.text + PLACEHOLDER, lines, lit.line, lit.start, lit.end)
    return merged


def _chain(first: Literal, texts: list[str], lines: list[int]) -> Literal:
    """The literal a chain that starts at `first` makes (`first` itself when alone)."""
    if len(texts) == 1:
        return first
    return Literal("".join(texts), lines, first.line, first.start, first.end)


_RUBY_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def ruby_literals(text: str) -> list[Literal]:
    """String literals of Ruby source: quotes, %q/%Q/%(), and heredocs (<<~ID, <<-ID, <<ID)."""
    cur = _Cursor(text)
    found: list[Literal] = []
    skip_at: dict[int, int] = {}  # heredoc body start -> end: jumped over when reached
    at_line_start = True
    while not cur.done:
        if cur.pos in skip_at:
            cur.advance(skip_at.pop(cur.pos) - cur.pos)
            continue
        if at_line_start and cur.startswith("=begin"):
            cur.skip_to("\n=end")
            continue
        ch = cur.peek()
        at_line_start = ch == "\n"
        if ch == "#":
            cur.skip_to("\n")
            at_line_start = True
        elif ch in "\"'":
            plain = (_PLAIN_RUBY_DOUBLE if ch == '"' else _PLAIN_RUBY_SINGLE).match(text, cur.pos)
            if plain:
                found.append(_plain(plain, cur.line))
                cur.line += plain.group(1).count("\n")
                cur.pos = plain.end()
            elif ch == '"':
                found.append(_quoted(cur, '"', interp="#{"))
            else:
                found.append(_quoted(cur, "'", escapes=False))
        elif ch == "%" and cur.peek(1) in "qQ" and cur.peek(2) in _RUBY_PAIRS:
            cur.advance(2)
            found.append(_ruby_delimited(cur, cur.peek(-1) == "Q"))
        elif ch == "%" and cur.peek(1) in _RUBY_PAIRS:
            cur.advance()
            found.append(_ruby_delimited(cur, True))
        elif cur.startswith("<<"):
            header = cur.pos
            heredoc = _ruby_heredoc(cur)
            if heredoc is None:
                cur.advance(2)
            else:
                lit, body_start, body_end = heredoc
                lit.start = header  # where the expression using it is written
                found.append(lit)
                skip_at[body_start] = body_end
        elif ch in "\n%<":
            cur.advance()
        else:
            # Plain code: on to the next quote, comment, %, <<, or line start that matters
            # (=begin, a heredoc's body), not line by line.
            stop = _RUBY_NEXT.search(text, cur.pos)
            target = stop.start() if stop else len(text)
            bodies = [start - 1 for start in skip_at if start - 1 >= cur.pos]
            cur.advance(min([target, *bodies]) - cur.pos)
    return found


_ELIXIR_SIGIL_PAIR = lazy(r"~([sS])(?=[(\[{<])")
_ELIXIR_SIGIL_QUOTE = lazy(r"~[sS](?=[\"'])")


def elixir_literals(text: str) -> list[Literal]:
    return [lit for lit in ruby_literals(elixir_source(text)) if lit.text]


def elixir_source(text: str) -> str:
    """String literals of Elixir source: "..." with #{} interpolation, \"\"\"
    heredocs, ~s/~S sigils. Comments (#) as in Ruby. Heredocs and sigils are rewritten
    to Ruby's %Q{}/%q of the same length, so offsets and lines are kept."""
    rewritten = _ELIXIR_SIGIL_PAIR.sub(lambda m: "%Q" if m.group(1) == "s" else "%q", text)
    rewritten = _ELIXIR_SIGIL_QUOTE.sub("  ", rewritten)
    opening = [True]

    def heredoc(_: re.Match[str]) -> str:  # \"\"\" ... \"\"\" -> %Q{ ... }
        opening[0] = not opening[0]
        return "}  " if opening[0] else "%Q{"

    return re.sub(r'"""', heredoc, rewritten)


def _ruby_delimited(cur: _Cursor, interpolate: bool) -> Literal:
    opener = cur.peek()
    closer = _RUBY_PAIRS[opener]
    start = cur.pos
    cur.advance()
    b = _Builder(cur.line)
    depth = 1
    while not cur.done:
        ch = cur.peek()
        if ch == "\\":
            _escape(cur, b)
            continue
        if interpolate and cur.startswith("#{"):
            _interpolation(cur, b, "#{")
            continue
        if ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                cur.advance()
                break
        b.add(cur.advance(), cur.line)
    return b.literal(start, cur.pos)


def _ruby_heredoc(cur: _Cursor) -> tuple[Literal, int, int] | None:
    text = cur.text
    i = cur.pos + 2
    squiggly = i < len(text) and text[i] in "~-"
    if squiggly:
        i += 1
    quote = text[i] if i < len(text) and text[i] in "'\"" else ""
    if quote:
        i += 1
    j = i
    while j < len(text) and (text[j].isalnum() or text[j] == "_"):
        j += 1
    ident = text[i:j]
    if not ident or not (ident[0].isupper() or quote or squiggly):
        return None  # `a << b`, not a heredoc
    if quote:
        if j >= len(text) or text[j] != quote:
            return None
        j += 1
    header_line = cur.line
    cur.advance(j - cur.pos)
    newline = text.find("\n", cur.pos)
    if newline < 0:
        return None
    body_start = newline + 1
    first_body_line = header_line + 1
    b = _Builder(first_body_line)
    pos, line = body_start, first_body_line
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        row = text[pos:end]
        if (row.strip() if squiggly else row) == ident:
            lit = b.literal(body_start, end)
            lit.tag = ident
            lit.text = lit.text.removesuffix("\n")
            lit.lines = lit.lines[: len(lit.text)]
            body_end = min(len(text), end + 1)
            return lit, body_start, body_end
        sub = _Cursor(row + "\n")
        sub.line = line
        while not sub.done:
            if quote != "'" and sub.peek() == "\\":
                _escape(sub, b)
            elif quote != "'" and sub.startswith("#{"):
                _interpolation(sub, b, "#{")
            else:
                b.add(sub.advance(), line)
        pos, line = end + 1, line + 1
    return None


_PY_START = lazy(r"[#\"'\n]")
_PY_PREFIX = lazy(r"([rRbBuUfF]{0,2})$")


def python_text_literals(text: str) -> list[Literal]:
    """String literals of Python source that `ast` cannot parse (syntax newer than the
    running Python, e.g. PEP 695 `def f[T]()` on 3.11): quotes, triple quotes, string
    prefixes, f-string fields -> placeholder, # comments. Adjacent `+` literals are
    merged as for C-like code."""
    cur = _Cursor(text)
    found: list[Literal] = []
    while not cur.done:
        ch = cur.peek()
        if ch == "#":
            cur.skip_to("\n")
        elif ch in "\"'":
            prefix = _PY_PREFIX.search(text[max(0, cur.pos - 2) : cur.pos])
            flags = (prefix.group(1) if prefix else "").lower()
            close = ch * 3 if cur.startswith(ch * 3) else ch
            found.append(
                _quoted(
                    cur,
                    close,
                    escapes="r" not in flags,
                    interp="{" if "f" in flags else None,
                    single_line=len(close) == 1,
                )
            )
        elif ch == "\n":
            cur.advance()
        else:
            cur.jump(_PY_START)
    return _merge_concatenated(text, found)


# What a Python literal the SQL scan uses can look like in the source (extract.scan_text
# uses a literal only when it looks like a statement (looks_like_statement: a statement's
# first word, then more words or the word in capitals), or when drivers.literal_settings
# can read it: "postgres" in it, or "options" with a URL or host=/dbname=): its opening
# quote, whitespace and escapes (a line end only after a triple quote), then the word and
# more text: whitespace, an escape, or the quote of a joined literal ("update " "x",
# "update" + " x"); or the word in capitals. Each literal is tried from its own opening
# quote, so what joins it to the ones before does not matter (their text before the word
# is only white space). A text none of these can be in has no literal that matters, and
# the parse and walk are skipped. Decoding makes such a word out of other source text
# only by an escape that makes a letter (\x73, \u0073, \N{...}, octal), a word split
# across joined literals ("SEL" "ECT", "post" + "gres", a backslash-newline inside a
# string) or a placeholder completing "execute" (f"e{x}ecute", "e" + v + "ecute"): each
# of those makes the walk run. A docstring is never used (python_literals skips bare
# strings): one that opens a def's or class's body is passed over (may_hold_sql_literal).
_JUNK = r"""(?:[\s"'+()]|\\\r?\n|\#[^\n]*+)*"""
_TRIPLE = ('"' * 3, "'" * 3)
_QUOTED = lazy(
    r"""["'](?:"""
    # a word split across joined literals: letter, quote, what joins them, quote, letter
    rf"""(?<=[A-Za-z]["']){_JUNK}[rRuUbBfF]{{0,2}}["'][A-Za-z]"""
    # what may open a literal's text before its first word (possessive: nothing to undo)
    rf"""|(?:(?<={_TRIPLE[0]}|{_TRIPLE[1]})(?:\s|\\.)*+|(?:[ \t\f\v]|\\.)*+)(?:"""
    rf"""(?:{"|".join(sorted(w.upper() for w in STATEMENT_WORDS))})(?!\w)"""
    rf"""|(?i:{"|".join(sorted(STATEMENT_WORDS))})\b[;(]*"""
    rf"""(?=[\s\\]|["']{_JUNK}[rRuUbBfF]{{0,2}}["'])"""
    # "e", then a placeholder ("x") that may make "execute"
    r"""|[eE](?=\{|(?:[\s()"'rRuUbBfF]|\#[^\n]*+)*[+{])))""",
    re.DOTALL,
)
# An escape that may make a letter; a backslash-newline inside a word ("post\<newline>gres")
_ESCAPED = lazy(
    r"\\(?:[xuUN0-7]|\n(?<=[A-Za-z]\\\n)[A-Za-z]|\r\n(?<=[A-Za-z]\\\r\n)[A-Za-z]"
    r"|\r(?<=[A-Za-z]\\\r)[A-Za-z])"
)
# The line before a def's or class's docstring: its header, or a header's last line
_BODY_HEADER = lazy(r"(?:async[ \t]+def|def|class)\b|\)")


def may_hold_sql_literal(text: str) -> bool:
    """False when no string literal of this Python source can look like a statement or
    be read by drivers.literal_settings (see _QUOTED); True when one may."""
    if "postgres" in text or ("options" in text and (
            "host=" in text or "dbname=" in text or "postgres" in text.casefold())):
        return True
    if _ESCAPED.search(text) is not None:
        return True
    return any(not _opens_body(text, m.start()) for m in _QUOTED.finditer(text))


def _opens_body(text: str, at: int) -> bool:
    """Whether the triple quote ending at `at` opens a docstring: first on its line, after
    a def or class header (or first in the module), so a bare string python_literals skips."""
    if text[at - 2 : at + 1] not in _TRIPLE:
        return False
    start = text.rfind("\n", 0, at - 2) + 1
    if text[start : at - 2].strip(" \t"):
        return False
    end = start - 1
    while end > 0:
        line_start = text.rfind("\n", 0, end) + 1
        line = text[line_start:end].strip()
        if line and not line.startswith("#"):
            return line.endswith(":") and _BODY_HEADER.match(line) is not None
        end = line_start - 1
    return True


# The same for Java, Kotlin, Go and JS/TS (clike_literals), whose literals the scan uses
# when they look like a statement or hold a connection string (drivers.literal_settings,
# below; Go's pgx and golang-migrate also read their import paths): `+` joins and
# placeholders (`${x}`, Kotlin's `$name`, a spliced `+ name +`) as Python's, and an
# escape of any character but b f n r t v is that character ("\s" is "s"), so such an
# escape makes the scan run. Comments and Go/Java runes are matched as if they were
# strings: the filter only lets more through.
_FIRST_LETTERS = "".join(sorted({w[0] for w in STATEMENT_WORDS} | {"e"}))
_AFTER_QUOTE_CLIKE = (
    # a word split across a `+` join (no implicit concatenation here: Go's import
    # blocks and lists of strings are not joins)
    r"""(?:(?<=[A-Za-z][`'"])[\s()]*\+[\s+()]*[`'"][A-Za-z=]"""
    # what may open a literal's text before its first word, then a first letter a word
    # may have (a look-ahead that fails fast on most strings), then the word
    rf"""|(?:[\s`'"+()]|\\.)*+(?=[{_FIRST_LETTERS}{_FIRST_LETTERS.upper()}])(?i:"""
    rf"""(?:{"|".join(sorted(STATEMENT_WORDS))})\b|e(?=\$|[\s`'"()]*\+)))"""
)
# One pattern per quote: a pattern that starts with one character is searched for it
# much faster than one that starts with a class (sre), ~2.8x over Go sources.
_QUOTED_CLIKE = tuple(lazy(quote + _AFTER_QUOTE_CLIKE, re.DOTALL) for quote in "\"'`")
# "\x" is "x" (the scanner decodes no hex escape), which completes a word only between
# "e" and "ecu" (execute) or after a "g" (pgx): not in a hex byte string ("\x0e\x12").
# A backslash-newline joins a word only between two letters ("SEL\<newline>ECT"); after
# a literal's opening quote the quoted patterns read it (a code line's continuation,
# "foo \<newline>  .bar", is neither).
_ESCAPED_CLIKE = lazy(
    r"\\(?:[A-Zacdeghijklmopqsuwyz=]|(?<=[eE]\\)x(?=[eE][cC][uU])|(?<=[gG]\\)x"
    r"|(?<=[A-Za-z]\\)(?:\r?\n|\r)(?=[A-Za-z=]))"
)
# Go import paths drivers._pgx reads from literals (pgx, pop, golang-migrate's drivers)
_GO_DRIVER_PATHS = ("jackc/pgx", "gobuffalo/pop", "golang-migrate")


def may_hold_clike_sql_literal(text: str, lang: str) -> bool:
    """False when no string literal of this Java, Kotlin, Go or JS/TS source can look
    like a statement or hold what drivers.literal_settings reads (see _QUOTED_CLIKE);
    True when one may."""
    # literal_settings reads a literal holding "postgres" (this case) or "options"; with
    # "options", a URL of any case or host=/dbname= makes a hazard. (text.casefold() on
    # every file cost more than reading it.)
    return ("postgres" in text
            or ("options" in text and ("host=" in text or "dbname=" in text
                                       or "postgres" in text.casefold()))
            or (lang == "go" and any(path in text for path in _GO_DRIVER_PATHS))
            or _ESCAPED_CLIKE.search(text) is not None
            or any(quoted.search(text) is not None for quoted in _QUOTED_CLIKE))


# The same for Ruby (ruby_literals): no joins (the scanner merges no "a" "b" nor +), so a
# literal the scan uses opens with its word after only whitespace and escapes, in quotes,
# %q()/%Q{}/%() or a heredoc's body (any heredoc lets the file through: its body starts
# on the next line); `#{x}` is the placeholder that may complete "execute".
_AFTER_OPENER_RUBY = (
    rf"""(?:[\s"']|\\.)*+(?=[{_FIRST_LETTERS}{_FIRST_LETTERS.upper()}])(?i:"""
    rf"""(?:{"|".join(sorted(STATEMENT_WORDS))})\b|e(?=\#\{{))"""
)
_QUOTED_RUBY = (
    lazy('"' + _AFTER_OPENER_RUBY, re.DOTALL),
    lazy("'" + _AFTER_OPENER_RUBY, re.DOTALL),
    lazy(r"%[qQ]?[(\[{<]" + _AFTER_OPENER_RUBY, re.DOTALL),
    # _ruby_heredoc's openers: <<~ID, <<-ID, <<'ID', <<"ID", <<ID (a capital first)
    lazy(r"<<(?:[~\-\"']|[^\W\d_])"),
)


def may_hold_ruby_sql_literal(text: str) -> bool:
    """False when no string literal of this Ruby source can look like a statement or hold
    what drivers.literal_settings reads (its Ruby checks read the text itself); True
    when one may."""
    return ("postgres" in text
            or ("options" in text and ("host=" in text or "dbname=" in text
                                       or "postgres" in text.casefold()))
            or _ESCAPED_CLIKE.search(text) is not None
            or any(opener.search(text) is not None for opener in _QUOTED_RUBY))


def python_literals(tree: ast.AST) -> list[Literal]:
    """String constants, f-strings (formatted parts -> placeholder) and `"a" + "b"`,
    skipping bare string statements (docstrings)."""
    found: list[Literal] = []
    node_type = ast.AST
    expr, string_kinds, children = ast.Expr, _STRING_KINDS, CHILD_FIELDS

    def visit(node: ast.AST) -> None:
        kind = type(node)
        if kind is expr:
            if type(node.value) in _DOC_KINDS:
                return
        elif kind in string_kinds:
            text = _python_string(node)
            if text is not None:
                found.append(_python_literal(node, text))
                return
        # ast.iter_child_nodes' order, without its two generators per node, and without
        # the fields that never hold a string (ctx, op, names ...)
        for name in children.get(kind, node._fields):
            value = getattr(node, name, None)
            if isinstance(value, node_type):
                visit(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, node_type):
                        visit(item)

    visit(tree)
    return found


# The node kinds _python_string can read, and the statement kinds that are docstrings.
_STRING_KINDS = frozenset({ast.Constant, ast.JoinedStr, ast.BinOp})
_DOC_KINDS = frozenset({ast.Constant, ast.JoinedStr})
# Fields whose value is never a node holding a string: expression contexts, operators
# (leaf nodes) and plain values. A Constant's value is a plain value too.
_NO_STRING_FIELDS = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "kind", "type_comment", "level", "module",
     "is_async", "conversion", "lineno", "col_offset", "end_lineno", "end_col_offset"}
)  # fmt: skip
CHILD_FIELDS: dict[type, tuple[str, ...]] = {
    kind: () if kind is ast.Constant else
    tuple(f for f in kind._fields if f not in _NO_STRING_FIELDS)
    for kind in vars(ast).values()
    if isinstance(kind, type) and issubclass(kind, ast.AST)
}


def _python_string(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        pieces = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                pieces.append(part.value)
            else:
                pieces.append(PLACEHOLDER)
        return "".join(pieces)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _python_string(node.left), _python_string(node.right)
        if left is not None and right is not None:
            return left + right
        if left is not None and _is_value(node.right):  # "SET x = " + value
            return left + PLACEHOLDER
        if right is not None and _is_value(node.left):
            return PLACEHOLDER + right
    return None


def _is_value(node: ast.AST) -> bool:
    """A name, attribute, call or subscript spliced into a string with `+`."""
    return isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Subscript)


def _python_literal(node: ast.AST, text: str) -> Literal:
    first = node.lineno
    last = node.end_lineno or first
    # `start` holds the column: with `line` it names the expression (context.py's keys)
    if text.count("\n") != last - first:  # escapes or implicit concatenation
        return Literal(text, [first] * len(text), first, node.col_offset)
    # Lines are 1:1 with the source: an empty map makes the scanner count newlines
    # from `line`, which is exact here and saves building a list per string.
    return Literal(text, [], first, node.col_offset)
