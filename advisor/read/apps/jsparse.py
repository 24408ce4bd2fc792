"""Just enough JavaScript/TypeScript to read pool options: a tokenizer (strings,
template literals, comments, regex-free) and an evaluator for object literals and the
expressions pool sizes are written with:

    max: 20, max: Number(process.env.PG_POOL_MAX) || 10, poolSize: parseInt(x ?? "5", 10),
    pool: { min: 2, max: MAX_CONNECTIONS }, connectionString: process.env.DATABASE_URL

Repository code is never run. Unknown forms evaluate to None.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from msgspec import Struct
from msgspec.structs import replace

from advisor.model import CpuFormula, EnvVar, Source
from advisor.read.apps.envfrom import may_set
from advisor.read.apps.pyeval import Val, hidden_of

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*(?:.*?\*/|.*\Z))
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<tpl>`(?:[^`\\]|\\.)*(?:`|\\?\Z))
  | (?P<num>\d[\d_]*(?:\.\d+)?)
  | (?P<id>[A-Za-z_$][\w$]*)
  | (?P<op>\.\.\.|\?\?|\|\||&&|=>|===|!==|==|!=|[{}()\[\],:;.=?!+\-*/<>|&])
  | (?P<other>.)
""", re.S | re.X)


# `${NAME}` or `${process.env.NAME}` inside a template literal
_TPL_PART = re.compile(
    r"\$\{\s*(?:process\.env\.(?P<env>[A-Za-z_]\w*)|(?P<name>[A-Za-z_$][\w$]*))\s*\}")


class Tok(Struct, frozen=True):
    kind: str
    text: str
    line: int


def tokenize(text: str) -> list[Tok]:
    out: list[Tok] = []
    line = 1
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        value = m.group(kind)
        if kind not in ("ws", "comment"):
            out.append(Tok(kind, value, line))
        line += value.count("\n")
    return out


class JsScope(Struct):
    path: str
    env: dict[str, EnvVar]
    cpus: int
    names: dict[str, Val]
    # node-config's lookup for this container (apps/nodeconfig.py NodeConfig.get): the
    # value of a dotted key, given the expression as written; None when not read
    node_config: Callable[[str, str], Val | None] | None = None
    # the app's own definition of a config object's UPPER_CASE member
    # (jssource.config_member): its value for this container; None when not read
    config_member: Callable[[str], Val | None] | None = None


class _Unknown:
    pass


UNKNOWN = _Unknown()


# Brackets nested deeper than this evaluate to unknown (a 1000-deep literal is no pool
# setting, and Python's own stack is about 1000 frames).
MAX_NESTING = 100


class JsParser:
    def __init__(self, toks: list[Tok], scope: JsScope) -> None:
        self.t, self.scope = toks, scope
        self.depth = 0
        # Index after each opening bracket's group, found once: skip_balanced is called
        # for every call and literal, and scanning to the end each time was quadratic
        # for a file of unclosed `new Pool(`.
        self.after: dict[int, int] = {}
        # The innermost bracket holding each token (-1: top level), and where each
        # `const NAME = ...` inside a block is: a name no top-level const holds is looked
        # up there (local_const)
        self.parent: list[int] = [-1] * len(toks)
        self.locals: dict[str, list[int]] = {}
        self._local_vals: dict[int, Val | None] = {}
        stack: list[int] = []
        for i, tok in enumerate(toks):
            if stack:
                self.parent[i] = stack[-1]
            if tok.text in ("{", "(", "["):
                stack.append(i)
            elif tok.text in ("}", ")", "]") and stack:
                self.after[stack.pop()] = i + 1
            elif tok.text == "const" and stack and decl_value(toks, i) is not None:
                self.locals.setdefault(toks[i + 1].text, []).append(i)
        for i in stack:
            self.after[i] = len(toks)
        # local name -> function imported from "os"/"node:os" (`import { cpus } from`)
        self.os_names = os_imports(toks)
        # local names node-config's module is bound to (`const config = require("config")`)
        self.config_names = config_imports(toks) if scope.node_config is not None \
            else frozenset()

    def src(self, i: int, key: str | None = None) -> Source:
        line = self.t[i].line if i < len(self.t) else None
        return Source(path=self.scope.path, line=line, key=key)

    def at(self, i: int, text: str) -> bool:
        return i < len(self.t) and self.t[i].text == text

    def skip_balanced(self, i: int) -> int:
        """Index after the bracketed group starting at i, or after one token."""
        return self.after.get(i, i + 1)

    # expression := unary (('||' | '??' | '&&') unary)*  ; stops at , } ) ]
    def expr(self, i: int) -> tuple[Val | None, int]:
        left, i = self.postfix(i)
        while i < len(self.t) and self.t[i].text in ("||", "??", "&&", "+", "-", "*"):
            op = self.t[i].text
            right, i = self.postfix(i + 1)
            if left is not None and left.hidden and op in ("||", "??"):
                pass  # a secret-set variable is set: its value, unknown, wins
            elif op in ("||", "??") and (left is None or left.value is UNKNOWN):
                # a left side not read (a call, an import, an expression) may hold a
                # value: the right side is not what runs, so the whole is unknown
                left = None
            elif op == "||":
                left = left if left.value not in (None, "", 0, False) else \
                    _fallback(left, right)
            elif op == "??":
                left = left if left.value is not None else _fallback(left, right)
            elif op == "&&":
                left = None
            else:
                left = _arith(left, right, op)
        if i < len(self.t) and self.t[i].text == "?":  # ternary: unknown
            depth = 0
            while i < len(self.t) and not (depth == 0 and self.t[i].text in (",", "}", ")")):
                depth += self.t[i].text in "([{"
                depth -= self.t[i].text in ")]}"
                i += 1
            return None, i
        return left, i

    def postfix(self, i: int) -> tuple[Val | None, int]:
        v, i = self.atom(i)
        while self.at(i, ".") or self.at(i, "!"):
            if self.at(i, "!"):  # TypeScript non-null assertion
                i += 1
                continue
            i += 2
            if self.at(i, "("):
                i = self.skip_balanced(i)
                v = None
        while self.at(i, "as") and i + 1 < len(self.t):  # `x as number`
            i += 2
        return v, i

    def atom(self, i: int) -> tuple[Val | None, int]:
        if self.depth >= MAX_NESTING:
            return None, self.skip_balanced(i)
        self.depth += 1
        try:
            return self._atom(i)
        finally:
            self.depth -= 1

    def _atom(self, i: int) -> tuple[Val | None, int]:
        if i >= len(self.t):
            return None, i
        tok = self.t[i]
        if tok.kind == "num":
            n = float(tok.text.replace("_", ""))
            return Val(int(n) if n.is_integer() else n, self.src(i)), i + 1
        if tok.kind == "str":
            try:
                text = bytes(tok.text[1:-1], "utf-8").decode("unicode_escape")
            except UnicodeDecodeError:  # "\u12": a syntax error in JavaScript too
                return None, i + 1
            return Val(text, self.src(i)), i + 1
        if tok.kind == "tpl":
            body = tok.text[1:-1]
            if "${" not in body:
                return Val(body, self.src(i)), i + 1
            # `postgresql://${USER}:${PASSWORD}@postgres:5432/todos`: each `${NAME}` (a
            # const, process.env.NAME) whose value is known put in; the others left as
            # written, so a URL still names its host when only its password is unknown
            # (a placeholder left in the host makes no route)
            text = _TPL_PART.sub(self.template_part, body)
            return Val(text, self.src(i)), i + 1
        if tok.text == "{":
            return self.object(i)
        if tok.text == "[":
            end = self.skip_balanced(i)
            items = []
            j = i + 1
            while j < end - 1:
                v, j = self.expr(j)
                items.append(v if v is not None else Val(UNKNOWN, self.src(j)))
                if self.at(j, ","):
                    j += 1
                elif j < end - 1:
                    return None, end
            return Val(items, self.src(i)), end
        if tok.text == "(":
            v, j = self.expr(i + 1)
            return (v, j + 1) if self.at(j, ")") else (None, self.skip_balanced(i))
        if tok.text in ("+", "-") :
            v, j = self.postfix(i + 1)
            if v is not None and tok.text == "+":
                return _to_number(v), j
            if v is not None and isinstance(v.value, int | float):
                return Val(-v.value, v.source), j
            return None, j
        if tok.kind == "id":
            return self.identifier(i)
        return None, i + 1

    def template_part(self, m: re.Match[str]) -> str:
        """A template literal's `${...}` as text: a const's or env variable's known
        string or number, else the part as written."""
        name, env = m.group("name"), m.group("env")
        if env is not None:
            var = self.scope.env.get(env)
            value = var.value if var is not None else None
        else:
            found = self.scope.names.get(name)
            value = found.value if found is not None and not found.hidden else None
        if isinstance(value, bool) or not isinstance(value, str | int | float) or (
                isinstance(value, str) and "${" in value):
            return m.group(0)
        return str(value)

    def identifier(self, i: int) -> tuple[Val | None, int]:
        name = self.t[i].text
        if name == "process" and self.at(i + 1, ".") and self.at(i + 2, "env"):
            j = i + 3
            key = None
            if self.at(j, ".") and j + 1 < len(self.t):
                key, j = self.t[j + 1].text, j + 2
            elif self.at(j, "[") and j + 1 < len(self.t) and self.t[j + 1].kind == "str":
                key, j = self.t[j + 1].text[1:-1], j + 3
            if key is None:
                return None, j
            return self.env_var(i, key), j
        if name in ENV_MODULES and name not in self.scope.names and name not in self.locals \
                and self.at(i + 1, ".") and i + 2 < len(self.t) \
                and _ENV_NAME.fullmatch(self.t[i + 2].text) and not self.at(i + 3, "("):
            # an app's env module (Outline's server/env.ts: `DATABASE_CONNECTION_POOL_MAX
            # = this.toOptionalNumber(environment.DATABASE_CONNECTION_POOL_MAX)`): its
            # NAME is the container's NAME
            return self.env_var(i, self.t[i + 2].text), i + 3
        if name in self.config_names and self.at(i + 1, ".") and name not in self.locals:
            # node-config's module, before an env-parsed config object of the same name
            return self.config_value(i)
        if name in CONFIG_MODULES and name not in self.scope.names \
                and name not in self.locals and self.at(i + 1, ".") and i + 2 < len(self.t) \
                and _ENV_NAME.fullmatch(self.t[i + 2].text) and not self.at(i + 3, "("):
            member = self.t[i + 2].text
            # the app's own `NAME: parseInt(process.env.NAME || '20', 10)` (FCFColin's
            # databaseConfig.ts): what it evaluates to here, the code's default included
            defined = self.scope.config_member(member) \
                if self.scope.config_member is not None else None
            if defined is not None:
                return defined, i + 3
            if member in self.scope.env:
                # an app's config object parsed from process.env (rejourney's config.ts:
                # `z.object({ DATABASE_URL: z.string(), ... }).parse(process.env)`): a
                # NAME the container sets is its NAME; one it does not set may take the
                # schema's default, not read here
                return self.env_var(i, member), i + 3
        if name in ("parseInt", "Number", "parseFloat") and self.at(i + 1, "("):
            v, j = self.expr(i + 2)
            end = self.skip_balanced(i + 1)
            return (_to_number(v) if v is not None else None), end
        if name == "os" and self.at(i + 1, ".") and i + 2 < len(self.t) \
                and self.t[i + 2].text in ("cpus", "availableParallelism"):
            return self.cpu_count(i, self.t[i + 2].text, i + 3)
        if self.os_names.get(name) in ("cpus", "availableParallelism") and self.at(i + 1, "("):
            # `import { cpus } from "node:os"` then `cpus().length`
            return self.cpu_count(i, self.os_names[name], i + 1)
        if name == "Math" and self.at(i + 1, ".") and self.at(i + 3, "(") \
                and self.t[i + 2].text in ("max", "min"):
            return self.math_extreme(self.t[i + 2].text, i + 3)
        if name in ("true", "false"):
            return Val(name == "true", self.src(i)), i + 1
        if name in ("null", "undefined"):
            return Val(None, self.src(i)), i + 1
        if name == "new" or self.at(i + 1, "("):
            j = i + 1
            while j < len(self.t) and not self.at(j, "("):
                j += 1
            return None, self.skip_balanced(j)
        if name in self.scope.names and not self.at(i + 1, "."):
            return self.scope.names[name], i + 1
        if name in self.locals and not self.at(i + 1, "."):
            found = self.local_const(name, i)
            if found is not None:
                return found, i + 1
        j = i + 1
        while self.at(j, ".") and j + 1 < len(self.t):
            j += 2
        return None, j

    def config_value(self, i: int) -> tuple[Val | None, int]:
        """node-config's `config.get("a.b")` or `config.a.b` at token `i`: its value for
        this container (None: a call or member not read, or a key no file sets)."""
        assert self.scope.node_config is not None
        if self.at(i + 2, "get") and self.at(i + 3, "(") and i + 4 < len(self.t) \
                and self.t[i + 4].kind == "str" and self.at(i + 5, ")"):
            key, end = self.t[i + 4].text[1:-1], i + 6
        else:
            parts = []
            j = i + 1
            while self.at(j, ".") and j + 1 < len(self.t) and self.t[j + 1].kind == "id":
                parts.append(self.t[j + 1].text)
                j += 2
            if not parts or self.at(j, "(") or parts[0] in ("util", "has", "get"):
                while self.at(j, ".") and j + 1 < len(self.t):
                    j += 2
                return None, j
            key, end = ".".join(parts), j
        shown = _shown_tokens(self.t[i:end])
        return self.scope.node_config(key, shown), end

    def env_var(self, i: int, key: str) -> Val:
        """The container's variable `key`, read at token `i`: its value, unknown when a
        Secret or reference sets it or an envFrom source not held may, unset (None, a
        default's to take) when absent."""
        var = self.scope.env.get(key)
        if var is not None:
            if var.value is None:  # set from a secret/ref: its value not held here
                return Val(UNKNOWN, replace(var.source, key=key), hidden=key)
            return Val(var.value, replace(var.source, key=key))
        hidden = may_set(self.scope.env.values(), key)
        if hidden is not None:
            # an envFrom source whose keys are not held may set it: neither its value nor
            # the code's `|| default` is known (as pyeval's _env_lookup)
            return Val(UNKNOWN, hidden.source, hidden=key)
        return Val(None, self.src(i, key=key), from_default=True)

    def cpu_count(self, i: int, func: str, paren: int) -> tuple[Val | None, int]:
        """os.cpus().length (logical CPUs of the node: os.cpus() reads no cgroup) or
        os.availableParallelism(), `paren` the index of its call's `(`."""
        end = self.skip_balanced(paren)
        if func == "cpus":
            if not (self.at(end, ".") and self.at(end + 1, "length")):
                return None, end
            end += 2
        text = "os.cpus().length" if func == "cpus" else "os.availableParallelism()"
        return Val(self.scope.cpus, self.src(i, key=text),
                   CpuFormula(per_cpu=1, text=text)), end

    def math_extreme(self, func: str, paren: int) -> tuple[Val | None, int]:
        """Math.max(...) / Math.min(...) of numbers, at most one of them a CPU formula
        (`Math.max(2 * cpus().length + 1, 2)`): the formula with that floor or ceiling."""
        end = self.skip_balanced(paren)
        args: list[Val | None] = []
        i = paren + 1
        while i < end - 1:
            v, i = self.expr(i)
            args.append(v)
            if self.at(i, ","):
                i += 1
            elif i < end - 1:
                return None, end
        if not args or any(v is None or isinstance(v.value, bool) or not isinstance(
                v.value, int | float) for v in args):
            return None, end
        known = [v for v in args if v is not None]
        formulas = [v for v in known if v.cpu is not None]
        pick = max if func == "max" else min
        chosen = pick(known, key=lambda v: v.value)
        if not formulas:
            return Val(chosen.value, chosen.source), end
        if len(formulas) > 1:
            return None, end
        formula = formulas[0].cpu
        assert formula is not None
        bound = pick(v.value for v in known if v.cpu is None) if len(known) > 1 else None
        if bound is not None:
            if func == "max":
                if formula.ceiling is not None and bound > formula.ceiling:
                    return None, end
                formula = replace(formula, floor=max(formula.floor, bound))
            else:
                if bound < formula.floor:
                    return None, end
                formula = replace(formula, ceiling=bound if formula.ceiling is None
                                  else min(formula.ceiling, bound))
        text = f"Math.{func}({', '.join(_shown(v) for v in known)})"
        n = formula.at(self.scope.cpus)
        return Val(int(n) if float(n).is_integer() else n, formulas[0].source,
                   replace(formula, text=text)), end

    def local_const(self, name: str, i: int) -> Val | None:
        """The value of the `const name = ...` of a block holding token `i`, declared
        before it (the nearest: an inner block's shadows an outer one's), as a function's
        options object is often built (`const options = { pool: { max } }` then `new
        Sequelize(url, options)`); None when there is none or it is not read."""
        enclosing = set()
        q = self.parent[i] if i < len(self.t) else -1
        while q != -1:
            enclosing.add(q)
            q = self.parent[q]
        for k in reversed(self.locals[name]):
            if k >= i or self.parent[k] not in enclosing:
                continue
            if k not in self._local_vals:
                self._local_vals[k] = None  # while it is read: a self-reference is unknown
                start = decl_value(self.t, k)
                self._local_vals[k] = self.expr(start)[0] if start is not None else None
            return self._local_vals[k]
        return None

    def object(self, i: int) -> tuple[Val | None, int]:
        """{ key: value, "k": v, shorthand, ...spread, method() {} } -> dict of Vals."""
        out: dict[str, Val] = {}
        start = i
        end = self.skip_balanced(i)
        i += 1
        open_ = False  # a spread of an object not read: keys may come from it
        while i < end - 1:
            tok = self.t[i]
            key_at = i
            if tok.text == "...":
                v, i = self.expr(i + 1)
                if v is not None and isinstance(v.value, dict):
                    out.update(v.value)
                    open_ = open_ or v.open
                elif v is None or v.value is not None:
                    open_ = True  # `...undefined`/`...null` spread nothing
            elif tok.kind in ("id", "str", "num") and self.at(i + 1, ":"):
                key = tok.text[1:-1] if tok.kind == "str" else tok.text
                v, i = self.expr(i + 2)
                out[key] = v if v is not None and v.value is not UNKNOWN \
                    else self.unread_member(v, key_at + 2, self._member_end(i, end))
            elif tok.kind == "id" and (self.at(i + 1, ",") or i + 1 == end - 1):
                v = self.scope.names.get(tok.text)
                out[tok.text] = v if v is not None else Val(UNKNOWN, self.src(i))
                i += 1
            else:  # methods, computed keys: skip to the next top-level comma
                open_ = open_ or tok.text == "["  # `[name]: v` may set any key
                depth = 0
                while i < end - 1 and not (depth == 0 and self.t[i].text == ","):
                    depth += self.t[i].text in "([{"
                    depth -= self.t[i].text in ")]}"
                    i += 1
            if self.at(i, ","):
                i += 1
            elif i < end - 1:
                i = self._to_comma(i, end)
        return Val(out, self.src(start), open=open_), end

    def unread_member(self, v: Val | None, start: int, end: int) -> Val:
        """A member value not read (`v` None or unknown), tokens start..end: unknown,
        cited at its first token, saying what it is as written (and why, when `v`
        says)."""
        shown = _shown_tokens(self.t[start:end])
        where = self.src(start)
        why = v.unread if v is not None else ""
        text = f"{shown} at {where.label()} is not read" + (f" ({why})" if why else "")
        if v is None:
            return Val(UNKNOWN, where, unread=text)
        if v.hidden:
            return v  # a Secret's value: said as such (StackContext.hidden_read)
        return replace(v, source=where if v.source.path is None else v.source, unread=text)

    def _member_end(self, i: int, end: int) -> int:
        """Index of the `,` (or the object's `}`) that ends the member going on at `i`."""
        j = self._to_comma(i, end)
        return j - 1 if j > 0 and self.at(j - 1, ",") else j

    def _to_comma(self, i: int, end: int) -> int:
        depth = 0
        while i < end - 1 and not (depth == 0 and self.t[i].text == ","):
            depth += self.t[i].text in "([{"
            depth -= self.t[i].text in ")]}"
            i += 1
        return i + 1 if self.at(i, ",") else i


# Longest expression shown as written in a message; a longer one is cut
MAX_SHOWN = 80


def _shown_tokens(toks: list[Tok]) -> str:
    """Tokens as written, near enough: no space around `.`, inside brackets or before
    `,`."""
    out = ""
    for k, t in enumerate(toks):
        before = toks[k - 1].text if k else ""
        glue = not out or t.text in (".", ",", ")", "]", "(", "!") or before in (".", "(", "[", "!")
        out += ("" if glue else " ") + t.text
    return out if len(out) <= MAX_SHOWN else out[:MAX_SHOWN - 3] + "..."


def _shown(v: Val) -> str:
    if v.cpu is not None:
        return v.cpu.text
    return str(v.value)


def config_imports(toks: list[Tok]) -> frozenset[str]:
    """Names node-config's module is bound to: `const config = require("config")`,
    `import config from "config"`, `import * as config from "config"`."""
    out = set()
    for k, tok in enumerate(toks):
        if tok.kind != "str" or tok.text[1:-1] != "config" or k < 2:
            continue
        if toks[k - 1].text == "(" and toks[k - 2].text == "require" and k >= 5 \
                and toks[k - 3].text == "=" and toks[k - 4].kind == "id" \
                and toks[k - 5].text in ("const", "let", "var"):
            out.add(toks[k - 4].text)
        elif toks[k - 1].text == "from" and toks[k - 2].kind == "id" and k >= 3 and (
                toks[k - 3].text == "import" or (toks[k - 3].text == "as" and k >= 5
                                                 and toks[k - 4].text == "*")):
            out.add(toks[k - 2].text)
    return frozenset(out)


def os_imports(toks: list[Tok]) -> dict[str, str]:
    """{local name: exported name} of `import { cpus } from "node:os"` and
    `const { cpus: c } = require("os")`."""
    out: dict[str, str] = {}
    for k, tok in enumerate(toks):
        if tok.kind != "str" or tok.text[1:-1] not in ("os", "node:os"):
            continue
        close = next((j for j in range(k - 1, max(k - 5, -1), -1) if toks[j].text == "}"),
                     None)
        if close is None:
            continue
        segment: list[str] = []
        j = close - 1
        while j >= 0 and toks[j].text != "{" and close - j < 200:
            j -= 1
        for t in [*toks[j + 1:close], Tok("op", ",", 0)]:
            if t.text == ",":
                if segment:
                    out[segment[-1]] = segment[0]
                segment = []
            elif t.kind == "id" and t.text != "as":
                segment.append(t.text)
    return out


def _to_number(v: Val) -> Val | None:
    if v.value is UNKNOWN:
        return v
    if v.value is None:
        return Val(None, v.source, v.cpu, v.from_default)  # NaN: falsy, `|| 10` decides
    try:
        n = float(str(v.value).strip())
    except ValueError:
        return Val(None, v.source, v.cpu, v.from_default)
    return Val(int(n) if n.is_integer() else n, v.source, v.cpu, v.from_default)


def _fallback(left: Val, right: Val | None) -> Val | None:
    """The right side of `process.env.X || 'postgres'` when X is unset: a default, as
    pyeval's getenv fallback is (from_default), so a host it names is not taken for the
    one the deployment sets (audit 14: YonathanGuez/to_do_8200AC's client pod)."""
    if right is None or not left.from_default:
        return right
    return replace(right, from_default=True)


def _arith(a: Val | None, b: Val | None, op: str) -> Val | None:
    if (hidden := hidden_of(a, b)) is not None:
        return hidden
    if a is None or b is None or not all(isinstance(x.value, int | float) and
                                         not isinstance(x.value, bool) for x in (a, b)):
        return None
    if a.cpu and b.cpu:
        return None
    cpu = a.cpu or b.cpu
    const = b.value if a.cpu else a.value
    if cpu is not None:
        ceiling = cpu.ceiling
        if op == "+" or (op == "-" and a.cpu):
            shift = const if op == "+" else -const
            # max(f, x) + k = max(f + k, x + k); a floor of 0 is none
            cpu = replace(cpu, plus=cpu.plus + shift,
                          floor=cpu.floor + shift if cpu.floor else 0,
                          ceiling=ceiling + shift if ceiling is not None else None)
        elif op == "*" and (const > 0 or not (cpu.floor or ceiling is not None)):
            cpu = replace(cpu, per_cpu=cpu.per_cpu * const, plus=cpu.plus * const,
                          floor=cpu.floor * const,
                          ceiling=ceiling * const if ceiling is not None else None)
        else:
            return None
        text = (a.cpu or b.cpu).text  # type: ignore[union-attr]
        if op == "*" and re.search(r"[-+] ", text):
            text = f"({text})"
        number = f"{const:g}" if isinstance(const, float) else str(const)
        cpu = replace(cpu, text=f"{text} {op} {number}" if a.cpu else f"{number} {op} {text}")
    value = {"+": a.value + b.value, "-": a.value - b.value, "*": a.value * b.value}[op]
    return Val(value, a.source if not a.cpu else b.source, cpu)


def module_consts(toks: list[Tok], scope: JsScope) -> None:
    """Top-level `const|let|var NAME = expr` (best effort, in order) into scope.names."""
    parser = JsParser(toks, scope)
    depth = 0
    i = 0
    while i < len(toks):
        t = toks[i].text
        if t in "({[":
            depth += 1
        elif t in ")}]":
            depth -= 1
        elif depth == 0 and t in ("const", "let", "var") and \
                (start := decl_value(toks, i)) is not None:
            v, j = parser.expr(start)
            if v is not None:
                scope.names[toks[i + 1].text] = v
            i = max(j, start)
            continue
        i += 1
    _parameter_defaults(toks, scope)


# Names an app's env module is imported as, whose UPPER_CASE members mirror process.env
ENV_MODULES = frozenset({"env", "ENV", "environment"})
# Names an app's config object is imported as: an UPPER_CASE member the container sets
# is that variable (only then: a schema may default the others)
CONFIG_MODULES = frozenset({"config", "CONFIG"})
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


# Tokens a declaration's TypeScript type annotation may take (`const c: PoolConfig =`,
# `: Record<string, number> =`); a longer one is not read.
MAX_TYPE_TOKENS = 40


def decl_value(toks: list[Tok], i: int) -> int | None:
    """Where the value of the declaration `const|let|var NAME [: Type] = value` whose
    keyword is at `i` starts, or None when it is not one (a destructuring, no `=`)."""
    if i + 2 >= len(toks) or toks[i + 1].kind != "id":
        return None
    if toks[i + 2].text == "=":
        return i + 3
    if toks[i + 2].text != ":":
        return None
    depth = 0
    for j in range(i + 3, min(len(toks), i + 3 + MAX_TYPE_TOKENS)):
        text = toks[j].text
        if depth == 0 and text == "=":
            return j + 1
        if depth == 0 and text in (";", ",", ")", "]", "}"):
            return None
        depth += text in ("(", "[", "{", "<")
        depth -= text in (")", "]", "}", ">")
    return None


def _parameter_defaults(toks: list[Tok], scope: JsScope) -> None:
    """A function parameter's literal default (`function makePool(url, max = 10) {`), for
    a name no top-level const holds: what it is when a caller passes none, said so in
    its source, since a caller may pass another."""
    for i in range(1, len(toks) - 3):
        if toks[i].kind != "id" or toks[i - 1].text not in ("(", ",") \
                or toks[i + 1].text != "=" or toks[i + 2].kind != "num" \
                or toks[i + 3].text not in (",", ")") or toks[i].text in scope.names:
            continue
        number = float(toks[i + 2].text.replace("_", ""))
        if not number.is_integer():
            continue
        n = int(number)
        close = i + 3
        depth = 0
        while close < len(toks) and not (toks[close].text == ")" and depth == 0):
            depth += {"(": 1, ")": -1}.get(toks[close].text, 0)
            close += 1
        if close + 1 < len(toks) and toks[close + 1].text in ("{", "=>", ":"):
            name = toks[i].text
            scope.names[name] = Val(n, Source(
                path=scope.path, line=toks[i].line, key=name,
                default=f"parameter {name} default {n} (a caller may pass another)"))


def call_args(parser: JsParser, open_paren: int) -> list[Val | None]:
    """Evaluated arguments of the call whose `(` is at open_paren."""
    end = parser.skip_balanced(open_paren)
    out: list[Val | None] = []
    i = open_paren + 1
    while i < end - 1:
        v, i = parser.expr(i)
        out.append(v)
        i = parser._to_comma(i, end) if not parser.at(i, ",") else i + 1
    return out


def find_calls(toks: list[Tok], names: set[str], *, new: bool | None = None
               ) -> list[tuple[str, int]]:
    """(dotted callee, index of its `(`) for calls like `new pg.Pool(` or `knex(`."""
    out = []
    for i, tok in enumerate(toks):
        if tok.kind != "id" or (i > 0 and toks[i - 1].text == "."):
            continue
        j = i
        name = tok.text
        while j + 2 < len(toks) and toks[j + 1].text == "." and toks[j + 2].kind == "id":
            name += "." + toks[j + 2].text
            j += 2
        if j + 1 < len(toks) and toks[j + 1].text == "(" and (
                name in names or name.rsplit(".", 1)[-1] in names):
            is_new = i > 0 and toks[i - 1].text == "new"
            if new is None or new == is_new:
                out.append((name, j + 1))
    return out
