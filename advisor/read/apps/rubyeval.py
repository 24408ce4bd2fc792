"""Static evaluation of the Ruby expressions found in database.yml ERB tags, puma.rb
and sidekiq.yml, without running Ruby:

    5, "5", ENV["DB_POOL"] || 5, ENV.fetch("RAILS_MAX_THREADS") { 5 },
    ENV.fetch("RAILS_MAX_THREADS", 5), Integer(ENV.fetch("X", 5)), ENV["X"].to_i,
    ENV.fetch("WEB_CONCURRENCY") { Concurrent.physical_processor_count }   (CPU-derived)
    Sidekiq.server? ? ENV.fetch("SIDEKIQ_CONCURRENCY", 10) : 5   (a name the scope knows)

Unknown forms return None.
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from advisor.model import CpuFormula, EnvVar, Source
from advisor.read.apps.envfrom import may_set
from advisor.read.apps.pyeval import Val

_TOKEN = re.compile(r"""\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    |(?P<sym>:[A-Za-z_]\w*)|(?P<op>\|\||&&|[.()\[\]{},?:])|(?P<id>[A-Za-z_][\w:]*[?!]?))""", re.X)

_CPU_NAMES = {
    "Etc.nprocessors": False,
    "Concurrent.processor_count": False,
    "Concurrent.available_processor_count": False,
    "Concurrent.physical_processor_count": True,
}


_BLANK_TAIL = re.compile(r"\s*\Z")


def _tokens(text: str) -> list[tuple[str, str]] | None:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if _BLANK_TAIL.match(text, pos):  # not text[pos:].strip(): a copy per token
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return None
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class RubyScope:
    def __init__(self, path: str, line: int, env: dict[str, EnvVar], cpus: int,
                 names: dict[str, Val] | None = None) -> None:
        self.path, self.line, self.env, self.cpus = path, line, env, cpus
        self.names = names if names is not None else {}
        # Variables read whose value the repository does not hold (a Secret's, or one an
        # envFrom source not held may set: cited at its marker, keyed `<prefix>*`, as
        # pyeval's _env_lookup does): what made an expression unreadable, for the reader
        # to say so
        self.hidden: list[EnvVar] = []

    def src(self, key: str | None = None) -> Source:
        return Source(path=self.path, line=self.line, key=key)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], scope: RubyScope) -> None:
        self.t, self.i, self.scope = tokens, 0, scope

    def peek(self, value: str | None = None) -> bool:
        return self.i < len(self.t) and (value is None or self.t[self.i][1] == value)

    def take(self, value: str | None = None) -> str:
        if not self.peek(value):
            raise ValueError(value or "token")
        self.i += 1
        return self.t[self.i - 1][1]

    def expr(self) -> Val | None:
        """`cond ? a : b` (right-associative) over `||` chains."""
        cond = self.or_expr()
        if not self.peek("?"):
            return cond
        self.take("?")
        yes = self.expr()
        self.take(":")
        no = self.expr()
        if cond is None:
            return None  # the condition is not known: neither branch is
        # Ruby: only nil and false are falsy (0 and "" are true)
        return no if cond.value is None or cond.value is False else yes

    def or_expr(self) -> Val | None:
        left = self.postfix()
        # a left side not read may be non-nil: `||`'s right side is then not what runs
        # (`ENV["DB_POOL"] || 5` under a Secret's DB_POOL; a method this reader does not
        # evaluate, `Rails.application.credentials.db_pool || 5`). Nil (an ENV[] unset,
        # `nil`) is known: the right side decides.
        unknown = left is None
        while self.peek("||"):
            self.take("||")
            right = self.postfix()
            if not unknown and left is not None and left.value is None:
                left = right
                unknown = left is None
        return None if unknown else left

    def postfix(self) -> Val | None:
        v = self.atom()
        while self.peek("."):
            self.take(".")
            method = self.take()
            if v is None:
                continue
            if method == "to_i":
                v = _to_int(v)
            elif method == "to_s":
                v = Val(str(v.value), v.source, v.cpu, v.from_default)
            elif method == "fetch":  # e.g. some_hash.fetch: unknown
                return None
        return v

    def atom(self) -> Val | None:
        kind, value = self.t[self.i]
        if kind == "num":
            self.i += 1
            return Val(int(float(value)) if "." not in value else float(value),
                       self.scope.src())
        if kind == "str":
            self.i += 1
            return Val(bytes(value[1:-1], "utf-8").decode("unicode_escape"), self.scope.src())
        if value == "(":
            self.take("(")
            v = self.expr()
            self.take(")")
            return v
        if value == "ENV":
            self.take("ENV")
            if self.peek("["):
                self.take("[")
                name = self.expr()
                self.take("]")
                return self.env(name, None, brackets=True)
            self.take(".")
            self.take("fetch")
            self.take("(")
            name = self.expr()
            default = None
            if self.peek(","):
                self.take(",")
                default = self.expr()
            self.take(")")
            if self.peek("{"):
                self.take("{")
                default = self.expr()
                self.take("}")
            return self.env(name, default, brackets=False)
        if value == "Integer":
            self.take("Integer")
            self.take("(")
            v = self.expr()
            self.take(")")
            return _to_int(v) if v is not None else None
        if kind == "id":
            self.i += 1
            name = value
            # a dotted name known as a whole: a CPU count, or a fact of the process the
            # scope is for (`Sidekiq.server?`, advisor/read/apps/rails.py)
            while self.peek(".") and self.i + 1 < len(self.t) and self.t[self.i + 1][0] == "id" \
                    and (f"{name}.{self.t[self.i + 1][1]}" in _CPU_NAMES
                         or f"{name}.{self.t[self.i + 1][1]}" in self.scope.names):
                self.take(".")
                name = f"{name}.{self.take()}"
            if name in _CPU_NAMES:
                return Val(self.scope.cpus, self.scope.src(key=name),
                           CpuFormula(per_cpu=1, physical=_CPU_NAMES[name], text=name))
            if name == "nil":
                return Val(None, self.scope.src())
            return self.scope.names.get(name)
        raise ValueError(value)

    def env(self, name: Val | None, default: Val | None, *, brackets: bool) -> Val | None:
        if name is None or not isinstance(name.value, str):
            return None
        var = self.scope.env.get(name.value)
        if var is not None:
            if var.value is None:
                self.scope.hidden.append(var)
                return None
            return Val(var.value, replace(var.source, key=name.value))
        unheld = may_set(self.scope.env.values(), name.value)
        if unheld is not None:
            # an envFrom source whose keys are not held may set it: neither its value
            # nor the fallback is known
            self.scope.hidden.append(unheld)
            return None
        if default is not None:
            return Val(default.value, self.scope.src(key=f"{name.value} (default)"),
                       default.cpu, from_default=True)
        # ENV["X"] is nil when unset (then `|| 5` decides); ENV.fetch("X") raises KeyError.
        return Val(None, self.scope.src(key=name.value), from_default=True) if brackets \
            else None


def _to_int(v: Val) -> Val | None:
    if v.value is None:
        return Val(0, v.source, None, v.from_default)  # nil.to_i == 0
    try:
        return Val(int(str(v.value).strip() or 0), v.source, v.cpu, v.from_default)
    except ValueError:
        m = re.match(r"\s*(\d+)", str(v.value))  # "12abc".to_i == 12
        return Val(int(m.group(1)) if m else 0, v.source, v.cpu, v.from_default)


def ruby_eval(text: str, scope: RubyScope) -> Val | None:
    """Evaluate one Ruby expression; None when it is not one of the known forms."""
    tokens = _tokens(text.strip())
    if not tokens:
        return None
    parser = _Parser(tokens, scope)
    try:
        v = parser.expr()
    except (ValueError, IndexError, OverflowError, RecursionError):  # 1e400, "((((" x 5000
        return None
    return v if parser.i == len(tokens) else None
