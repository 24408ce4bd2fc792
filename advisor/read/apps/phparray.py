"""The array a PHP config file returns (`return [...];`, Laravel's config/*.php): literals
only. Strings, integers, booleans, null, nested arrays ([...] or array(...)) and
`env('NAME', default)` calls are read; any other expression is an Opaque value, never
guessed. Every value keeps its 1-based line, for the Source that cites it."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|\#[^\n]*|/\*.*?\*/)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<num>-?\d+)
  | (?P<arrow>=>)
  | (?P<name>[A-Za-z_\\][\w\\]*(?:::[A-Za-z_]\w*)?)
  | (?P<punct>[\[\](),;])
  | (?P<other>.)
""", re.X | re.S)


@dataclass(frozen=True)
class Opaque:
    """An expression pool-advisor does not evaluate."""

    text: str


@dataclass(frozen=True)
class EnvCall:
    """env('NAME') or env('NAME', default): the variable, else the default."""

    name: str
    default: Value | None


@dataclass(frozen=True)
class Value:
    value: object  # str | int | bool | None | dict[str | int, Value] | EnvCall | Opaque
    line: int


_Tok = tuple[str, str, int]


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    line = 1
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        if kind not in ("ws", "comment"):
            out.append((kind, m.group(), line))
        line += m.group().count("\n")
    return out


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s[1:-1])


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.i = 0

    def peek(self, k: int = 0) -> _Tok:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ("eof", "", 0)

    def take(self) -> _Tok:
        tok = self.peek()
        self.i += 1
        return tok

    def value(self) -> Value:
        kind, text, line = self.peek()
        if text == "[" or (kind == "name" and text.lower() == "array" and self.peek(1)[1] == "("):
            return self.array()
        if kind == "str":
            self.take()
            return self._rest(Value(_unquote(text), line))
        if kind == "num":
            self.take()
            return self._rest(Value(int(text), line))
        if kind == "name" and text.lower() in ("true", "false", "null"):
            self.take()
            literal = {"true": True, "false": False, "null": None}[text.lower()]
            return self._rest(Value(literal, line))
        if kind == "name" and text == "env" and self.peek(1)[1] == "(":
            return self._rest(self.env_call())
        return Value(Opaque(self.skip_expression()), line)

    def _rest(self, v: Value) -> Value:
        """v, unless an operator follows it (`10 * 2`, `'a' . $b`): then opaque."""
        if self.peek()[1] in (",", "]", ")", ";") or self.peek()[0] in ("eof", "arrow"):
            return v
        return Value(Opaque(self.skip_expression()), v.line)

    def env_call(self) -> Value:
        _, _, line = self.take()
        self.take()  # (
        name = self.value()
        default = None
        if self.peek()[1] == ",":
            self.take()
            default = self.value()
        if self.peek()[1] != ")" or not isinstance(name.value, str):
            return Value(Opaque("env(" + self.skip_expression()), line)
        self.take()
        return Value(EnvCall(name.value, default), line)

    def skip_expression(self) -> str:
        """Past one expression, to the `,` `]` `)` or `;` that ends it at depth 0."""
        depth, words = 0, []
        while (tok := self.peek())[0] != "eof":
            if depth == 0 and (tok[1] in (",", "]", ")", ";") or tok[0] == "arrow"):
                break
            depth += tok[1] in ("[", "(")
            depth -= tok[1] in ("]", ")")
            words.append(self.take()[1])
        return " ".join(words)

    def array(self) -> Value:
        _, text, line = self.take()
        close = "]"
        if text.lower() == "array":
            self.take()
            close = ")"
        items: dict[str | int, Value] = {}
        index = 0
        while self.peek()[1] != close:
            if self.peek()[0] == "eof":
                return Value(Opaque("unterminated array"), line)
            first = self.value()
            if self.peek()[0] == "arrow":
                self.take()
                key = first.value
                item = self.value()
                if isinstance(key, (str, int)) and not isinstance(key, bool):
                    items[key] = item
                    if isinstance(key, int):
                        index = key + 1
                else:  # a computed key: the array's content is not known
                    return Value(Opaque("computed key"), line)
            else:
                items[index] = first
                index += 1
            if self.peek()[1] == ",":
                self.take()
            elif self.peek()[1] != close:
                return Value(Opaque(self.skip_expression()), line)
        self.take()
        return Value(items, line)


def returned_array(text: str) -> Value | None:
    """The value of the file's top-level `return`, None when it has none."""
    toks = _tokens(text)
    for i, (kind, word, line) in enumerate(toks):
        if kind == "name" and word == "return":
            try:
                return _Parser(toks[i + 1:]).value()
            except RecursionError:  # arrays nested thousands deep: not a config we read
                return Value(Opaque("nested too deep"), line)
    return None
