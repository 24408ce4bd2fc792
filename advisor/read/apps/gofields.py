"""A pool limit read from a configuration struct's field: `db.SetMaxOpenConns(cfg.MaxConn)`
where, in the same function, `cfg := config.Load()` (or `cfg, err := Load()`) and that
function builds the struct with a composite literal `&Config{MaxConn: 10, ...}` or
`MaxConn: env.GetInt("DB_MAX_CONN", 10)`. Only that one level is followed: a field
whose struct comes from a parameter, a decoder (viper, envconfig) or another
assignment is not read here (the caller then says the size is not read)."""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.gosource import GoFile, body_at, call_args, go_files, literal
from advisor.read.apps.jsparse import Tok
from advisor.read.apps.numbers import parse_int

Field = tuple[int, Source, str]  # (value, where it is set, how it reaches the call)


def field_limit(ctx: StackContext, g: GoFile, at: int, arg: list[Tok]) -> Field | None:
    """The value of the argument `arg` (`X.Field`, maybe in an int conversion) of the
    call at g.toks[at], when X is assigned in the same function from a call whose body
    sets Field in a composite literal to a literal or an env helper with a default."""
    while len(arg) > 3 and arg[0].kind == "id" and arg[1].text == "(" and arg[-1].text == ")" \
            and arg[0].text.startswith(("int", "uint")):
        arg = arg[2:-1]  # int(cfg.MaxConns), int32(...)
    if len(arg) != 3 or arg[1].text != "." or arg[0].kind != "id" or arg[2].kind != "id":
        return None
    holder, name = arg[0].text, arg[2].text
    loader = _loaded_from(g, at, holder)
    if loader is None:
        return None
    qualifier, func = loader
    set_at = [found for other in _defining(ctx, g, qualifier, func)
              for found in _field_values(other, func, name)]
    if len(set_at) != 1:
        return None  # not set, or set in several places: which one holds is not read
    other, expr = set_at[0]
    at_line = Source(path=other.file.path, line=expr[0].line).label()
    how = f"{holder}.{name} from {f'{qualifier}.' if qualifier else ''}{func}() ({at_line})"
    return _evaluate(ctx, other, expr, name, how)


def _loaded_from(g: GoFile, at: int, holder: str) -> tuple[str, str] | None:
    """`holder := pkg.Func(...)` (or `holder, err := Func(...)`, `=`) as the last
    assignment to holder before toks[at] in the function around it: (pkg or "", Func)."""
    body = body_at(g.bodies, at)
    if body is None:
        return None
    toks = g.toks
    found: tuple[str, str] | None = None
    for k in range(body.start + 1, at):
        if toks[k].text != holder or toks[k - 1].text in (".", ","):
            continue
        j = k + 1
        while toks[j].text == "," and toks[j + 1].kind == "id":
            j += 2
        if toks[j].text == ":" and toks[j + 1].text == "=":
            j += 2
        elif toks[j].text == "=" and toks[j + 1].text != "=":
            j += 1
        else:
            continue
        if toks[j].kind == "id" and toks[j + 1].text == "." and toks[j + 2].kind == "id" \
                and toks[j + 3].text == "(":
            found = (toks[j].text, toks[j + 2].text)
        elif toks[j].kind == "id" and toks[j + 1].text == "(":
            found = ("", toks[j].text)
        else:
            found = None  # assigned something else afterwards
    return found


def _defining(ctx: StackContext, g: GoFile, qualifier: str, func: str) -> list[GoFile]:
    """The files that may define function `func`: g's folder's (unqualified), else the
    folders named `qualifier` (a package is imported under its folder's name)."""
    here = g.file.path.rpartition("/")[0]
    out = []
    for other in go_files(ctx, func):
        folder = other.file.path.rpartition("/")[0]
        if (folder == here) if not qualifier else folder.rpartition("/")[2] == qualifier:
            out.append(other)
    return out


def _field_values(g: GoFile, func: str, name: str) -> list[tuple[GoFile, list[Tok]]]:
    """The expressions `name: <expr>` of the composite literals in function `func`."""
    toks = g.toks
    out = []
    for body in g.bodies:
        if body.func.name != func or body.func.method:
            continue
        for k in range(body.start + 1, body.end - 1):
            if toks[k].text == name and toks[k + 1].text == ":" \
                    and toks[k + 2].text != "=" and toks[k - 1].text in ("{", ","):
                end, depth = k + 2, 0
                while end < body.end and (depth or toks[end].text not in (",", "}")):
                    depth += toks[end].text in ("(", "[", "{")
                    depth -= toks[end].text in (")", "]", "}")
                    end += 1
                out.append((g, toks[k + 2:end]))
    return out


def _evaluate(ctx: StackContext, g: GoFile, expr: list[Tok], name: str, how: str
              ) -> Field | None:
    """A literal (or constant), or an env helper `pkg.GetInt("X", 10)` (a function or its
    package whose name says env, given the variable and a literal default): the
    container's value of X when it sets one, the default when it does not; None when
    it is set where the repository does not hold the value."""
    while len(expr) > 3 and expr[0].text.startswith(("int", "uint")) and expr[1].text == "(" \
            and expr[-1].text == ")":
        expr = expr[2:-1]
    where = Source(path=g.file.path, line=expr[0].line, key=name)
    if len(expr) == 1:
        n = parse_int(literal(g, expr[0]) or "")
        return (n, where, how) if n is not None else None
    helper = _env_helper(g, expr)
    if helper is None:
        return None
    var, default = helper
    set_here = ctx.env(var)
    if set_here is not None:
        n = parse_int(set_here.value) if set_here.value else None
        return (n, ctx.env_source(var), f"{how}, {var}") if n is not None else None
    if ctx.env_from_hidden(var) is not None:
        return None  # may be set where the repository does not hold it
    return default, replace(where, default=f"{var} default {default} in code ({where.label()})"
                            ), f"{how}, {var} unset in the container env"


def _env_helper(g: GoFile, expr: list[Tok]) -> tuple[str, int] | None:
    """`env.GetInt("X", 10)` / `getEnvInt("X", 10)`: (X, 10)."""
    if expr[-1].text != ")" or expr[-2].text == "(":
        return None
    paren = next((k for k, t in enumerate(expr) if t.text == "("), None)
    if paren is None or paren < 1:
        return None
    named = " ".join(t.text for t in expr[:paren]).lower()
    if "env" not in named:
        return None
    args = call_args(expr, paren)
    if len(args) != 2 or any(len(a) != 1 for a in args) or args[0][0].kind != "str":
        return None
    var, default = literal(g, args[0][0]), parse_int(literal(g, args[1][0]) or "")
    return (var, default) if var and default is not None else None
