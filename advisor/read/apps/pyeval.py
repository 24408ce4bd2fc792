"""Static evaluation of the small Python expressions pool settings are written with,
using `ast` only (repository code is never imported or executed):

    pool_size=10                                  -> 10
    int(os.environ.get("POOL_SIZE", "5"))          -> the container's env, else 5
    os.getenv("X") or 4, env.int("X", default=4)   -> django-environ / decouple forms too
    multiprocessing.cpu_count() * 2 + 1            -> CPU-derived (a CpuFormula)

Anything else is unknown (None): callers say so instead of guessing. A variable the
container sets from a Secret or reference the repository does not hold evaluates to an
unknown value that names it (`Val.hidden`), through casts, `or` and arithmetic: the code
reads it, so its fallback is not what runs.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from advisor.model import CpuFormula, EnvVar, Source
from advisor.read.apps.envfrom import may_set


class Val(Struct, frozen=True):
    value: Any  # int/float/str/bool/None, dict[str, Val], list[Val]
    source: Source  # where the deciding literal or env var is
    cpu: CpuFormula | None = None  # set when value was computed from the CPU count
    from_default: bool = False  # an env lookup's fallback was used
    # The env variable, set from a Secret or reference whose value the repository does
    # not hold, that this value reads (its value is then unknown): a pool size computed
    # from it is unknown, never the expression's fallback (`getenv("X", 5)`, `|| 10`).
    hidden: str = ""
    # A mapping that may hold keys not listed (a spread of an object not read here,
    # `{...config, ssl: true}`): a key it lacks is not known to be unset.
    open: bool = False
    # For a value not read: that it is not, as written, where, and why when known
    # ("parseInt(f()) at app/knexfile.js:13 is not read"), for the message that says so
    # (jssource.options_unread); for one a reader could not resolve, only why
    unread: str = ""


class PyScope(Struct):
    path: str  # display path of the file
    env: dict[str, EnvVar]
    cpus: int  # CPU count assumed for cpu_count()
    names: dict[str, Val] = field(default_factory=dict)
    # The Source of a line of the file when its lines are not the file's own (a
    # ConfigMap key's text: AppFile.cite); None for a file read from disk.
    cite: Callable[[int | None, str | None], Source] | None = None

    def src(self, node: ast.AST, key: str | None = None) -> Source:
        line = getattr(node, "lineno", None)
        if self.cite is not None:
            return self.cite(line, key)
        return Source(path=self.path, line=line, key=key)


def dotted(node: ast.AST) -> str:
    """`os.environ.get` for an Attribute chain, "" for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


_ENV_GETTERS = {"os.environ.get", "os.getenv", "environ.get", "getenv", "os.environ.setdefault"}
_TYPED_ENV = {"env", "env.int", "env.str", "env.bool", "env.float", "config", "env.db",
              "environ.Env.int"}
_CPU_CALLS = {"multiprocessing.cpu_count", "os.cpu_count", "cpu_count", "psutil.cpu_count",
              "os.process_cpu_count", "len.os.sched_getaffinity"}


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _env_lookup(name: str, default: ast.expr | None, node: ast.AST, scope: PyScope
                ) -> Val | None:
    var = scope.env.get(name)
    if var is not None:
        if var.value is None:  # from a secret/ref: set, its value not in the repository
            return Val(_UNKNOWN, replace(var.source, key=name), hidden=name)
        return Val(var.value, replace(var.source, key=name))
    unheld = may_set(scope.env.values(), name)
    if unheld is not None:
        # an envFrom source whose keys are not held may set it: neither its value nor
        # the fallback is known (cited at the marker, as StackContext.env_from_marker reads)
        return Val(_UNKNOWN, unheld.source, hidden=name)
    if default is None:
        return Val(None, scope.src(node, key=name), from_default=True)
    got = evaluate(default, scope)
    if got is None:
        return None
    return Val(got.value, scope.src(node, key=f"{name} (default)"), got.cpu, from_default=True)


def _number(v: Val, cast: type) -> Val | None:
    if v.hidden:
        return v
    try:
        if isinstance(v.value, str):
            return Val(cast(v.value.strip()), v.source, v.cpu, v.from_default)
        if isinstance(v.value, bool):
            return None
        if isinstance(v.value, int | float):
            return Val(cast(v.value), v.source, v.cpu, v.from_default)
    except ValueError:
        return None
    return None


def _linear(a: Val, b: Val, op: ast.operator) -> CpuFormula | bool | None:
    """Combine CPU formulas through + - * with a constant; False when not linear."""
    if a.cpu is not None and b.cpu is not None:
        return False
    cpu, const = (a.cpu, b.value) if a.cpu is not None else (b.cpu, a.value)
    if cpu is None:
        return None
    if not isinstance(const, int | float) or cpu.floor:
        return False
    if isinstance(op, ast.Add):
        return replace(cpu, plus=cpu.plus + const)
    if isinstance(op, ast.Sub) and a.cpu is not None:
        return replace(cpu, plus=cpu.plus - const)
    if isinstance(op, ast.Mult):
        return replace(cpu, per_cpu=cpu.per_cpu * const, plus=cpu.plus * const)
    return False


def evaluate(node: ast.AST | None, scope: PyScope) -> Val | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return Val(node.value, scope.src(node))
    if isinstance(node, ast.Name):
        return scope.names.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = evaluate(node.operand, scope)
        if v is not None and isinstance(v.value, int | float) and v.cpu is None:
            return Val(-v.value, v.source)
        return hidden_of(v)
    if isinstance(node, ast.Dict):
        out: dict[str, Val] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:  # {**other}
                merged = evaluate(v, scope)
                if merged is not None and isinstance(merged.value, dict):
                    out.update(merged.value)
                continue
            key = evaluate(k, scope)
            val = evaluate(v, scope)
            if key is not None and isinstance(key.value, str):
                out[key.value] = val if val is not None else Val(_UNKNOWN, scope.src(v))
        return Val(out, scope.src(node))
    if isinstance(node, ast.List | ast.Tuple):
        items = [evaluate(e, scope) for e in node.elts]
        return Val([i if i is not None else Val(_UNKNOWN, scope.src(node)) for i in items],
                   scope.src(node))
    if isinstance(node, ast.Subscript):
        base = dotted(node.value)
        key = evaluate(node.slice, scope)
        if base in ("os.environ", "environ") and key is not None and isinstance(key.value, str):
            found = _env_lookup(key.value, None, node, scope)
            return found if found is not None and found.value is not None else None
        container = evaluate(node.value, scope)
        if container is not None and key is not None and isinstance(container.value, dict):
            return container.value.get(key.value)
        return None
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        for value in node.values:
            v = evaluate(value, scope)
            if v is None:
                return None
            if v.value:
                return v
        return v
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
            isinstance(node.ops[0], ast.In | ast.NotIn) and \
            (found := _membership(node.left, node.comparators[0], scope)) is not None:
        return found if isinstance(node.ops[0], ast.In) or found.value is _UNKNOWN \
            else Val(not found.value, found.source)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        # `os.getenv("DB") == "postgres"`: settings modules choose DATABASES this way
        a, b = evaluate(node.left, scope), evaluate(node.comparators[0], scope)
        if a is None or b is None or a.value is _UNKNOWN or b.value is _UNKNOWN:
            return None
        op = node.ops[0]
        try:
            if isinstance(op, ast.Eq | ast.NotEq):
                result = (a.value == b.value) == isinstance(op, ast.Eq)
            elif isinstance(op, ast.In | ast.NotIn) and isinstance(b.value, list | str):
                items = [x.value if isinstance(x, Val) else x for x in b.value] \
                    if isinstance(b.value, list) else b.value
                result = (a.value in items) == isinstance(op, ast.In)
            else:
                return None
        except TypeError:
            return None
        return Val(result, scope.src(node))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        v = evaluate(node.operand, scope)
        return Val(not v.value, v.source) if v is not None and v.value is not _UNKNOWN \
            else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and \
            (text := _percent(node, scope)) is not None:
        return text
    if isinstance(node, ast.ListComp):
        return _list_comp(node, scope)
    if isinstance(node, ast.BinOp):
        a, b = evaluate(node.left, scope), evaluate(node.right, scope)
        if (hidden := hidden_of(a, b)) is not None:
            return hidden
        if a is None or b is None:
            return None
        if not all(isinstance(x.value, int | float) and not isinstance(x.value, bool)
                   for x in (a, b)):
            return None
        ops = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y,
               ast.Mult: lambda x, y: x * y, ast.FloorDiv: lambda x, y: x // y if y else None}
        fn = ops.get(type(node.op))
        if fn is None:
            return None
        cpu = _linear(a, b, node.op)
        if cpu is False:
            return None
        result = fn(a.value, b.value)
        if result is None:
            return None
        return Val(result, scope.src(node), cpu if isinstance(cpu, CpuFormula) else None)
    if isinstance(node, ast.Call):
        return _call(node, scope)
    if isinstance(node, ast.Attribute):
        # a pydantic settings instance's field (`settings.db_pool_max_size`), also one an
        # instance attribute holds (`self.settings.X`: local_scope binds `self.settings`)
        # and a nested settings object's (`settings.database.pool_size`)
        held = dotted(node.value)
        base = scope.names[held] if held.startswith("self.") and held in scope.names \
            else evaluate(node.value, scope) \
            if isinstance(node.value, ast.Name | ast.Call | ast.Attribute) else None
        if base is not None and isinstance(base.value, SettingsObject):
            return attribute(base.value, node.attr, scope)
        return None
    if isinstance(node, ast.JoinedStr):
        return _fstring(node, scope)
    return None


def _membership(left: ast.expr, right: ast.expr, scope: PyScope) -> Val | None:
    """`"DATABASE_URL" in os.environ` from the container's env (set, even from a Secret:
    True; an envFrom source not held may set it: unknown; else False), and
    `"DATABASES" in locals()` / `globals()` from the names read so far; None for any
    other membership test (evaluated as a comparison)."""
    key = evaluate(left, scope)
    if key is None or not isinstance(key.value, str):
        return None
    where = scope.src(right)
    if dotted(right) in ("os.environ", "environ"):
        var = scope.env.get(key.value)
        if var is not None:
            return Val(True, replace(var.source, key=key.value))
        unheld = may_set(scope.env.values(), key.value)
        if unheld is not None:
            return Val(_UNKNOWN, unheld.source, hidden=key.value)
        return Val(False, replace(where, key=f"{key.value} (not set)"))
    if isinstance(right, ast.Call) and not right.args and dotted(right.func) in (
            "locals", "globals", "vars"):
        return Val(key.value in scope.names, where)
    return None


_PERCENT = re.compile(r"%(?:\((\w+)\))?([sdir%])")


def _put_in(got: Val | None, field: str) -> str:
    """A known string or number as text, else `${field}` (a placeholder, as in an
    f-string: a host left so makes no route)."""
    known = got is not None and not got.hidden and not isinstance(got.value, bool) \
        and isinstance(got.value, str | int | float) and got.cpu is None
    if known and got is not None:
        return str(got.value)
    # no `?` in it: a URL parser would take the rest for a query string
    return "${" + (got.hidden if got is not None and got.hidden else field) + "}"


def _percent(node: ast.BinOp, scope: PyScope) -> Val | None:
    """`"postgres://%s:%s@%s/%s" % t` (printf-style, %s/%d/%i/%r and %(name)s only) as
    text, unknown items left as placeholders; None when the left side is not a known
    string or a conversion is not one of those (not formatted here)."""
    fmt = evaluate(node.left, scope)
    if fmt is None or not isinstance(fmt.value, str) or fmt.hidden:
        return None
    text = fmt.value
    if "%" not in _PERCENT.sub("", text):
        right = evaluate(node.right, scope)
        if isinstance(node.right, ast.Tuple | ast.List):
            fields = [ast.unparse(e) for e in node.right.elts]
        else:
            fields = []
        items: list[Val | None] | dict[str, Val] | None
        if right is not None and isinstance(right.value, dict):
            items = right.value
        elif right is not None and isinstance(right.value, list):
            items = list(right.value)
        else:
            items = [right] if right is None or not right.hidden else [None]
            fields = fields or [ast.unparse(node.right)]
        out: list[str] = []
        pos = 0
        at = 0
        for m in _PERCENT.finditer(text):
            out.append(text[pos:m.start()])
            pos = m.end()
            if m.group(2) == "%":
                out.append("%")
                continue
            if isinstance(items, dict):
                name = m.group(1) or f"arg{at}"
                out.append(_put_in(items.get(name), name))
                continue
            got = items[at] if at < len(items) else None
            out.append(_put_in(got, fields[at] if at < len(fields) else f"arg{at}"))
            at += 1
        out.append(text[pos:])
        return Val("".join(out), scope.src(node))
    return None


def _list_comp(node: ast.ListComp, scope: PyScope) -> Val | None:
    """`[os.environ.get(i) for i in ["DB_USER", "DB_HOST"]]`: one loop over a known
    list, no condition, its element evaluated with the loop name bound to each item."""
    if len(node.generators) != 1:
        return None
    gen = node.generators[0]
    if gen.ifs or gen.is_async or not isinstance(gen.target, ast.Name):
        return None
    over = evaluate(gen.iter, scope)
    if over is None or not isinstance(over.value, list):
        return None
    out: list[Val] = []
    for item in over.value:
        inner = PyScope(path=scope.path, env=scope.env, cpus=scope.cpus,
                        names={**scope.names, gen.target.id: item}, cite=scope.cite)
        got = evaluate(node.elt, inner)
        out.append(got if got is not None else Val(_UNKNOWN, scope.src(node.elt)))
    return Val(out, scope.src(node))


def _fstring(node: ast.JoinedStr, scope: PyScope) -> Val:
    """An f-string as text: each field whose value is a known string or number put in,
    the others left as `${field}`, so a URL still names its host when only its user or
    password is unknown (`f'postgresql://{USER}:{PASSWORD}@postgres:5432/books'`); a
    placeholder left in the host makes no route (urls._has_placeholder)."""
    parts: list[str] = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
            continue
        if not isinstance(value, ast.FormattedValue):
            parts.append("${?}")
            continue
        got = evaluate(value.value, scope) if value.format_spec is None and \
            value.conversion in (-1, ord("s")) else None
        known = got is not None and not got.hidden and not isinstance(got.value, bool) \
            and isinstance(got.value, str | int | float) and got.cpu is None
        parts.append(str(got.value) if known and got is not None
                     else "${" + ast.unparse(value.value) + "}")
    return Val("".join(parts), scope.src(node))


def _call(node: ast.Call, scope: PyScope) -> Val | None:
    name = dotted(node.func)
    args = node.args
    known = scope.names.get(name) if isinstance(node.func, ast.Name) else None
    if known is not None and not isinstance(known.value, str | int | float | dict | list):
        if isinstance(known.value, SettingsClass):
            return instantiate(known.value, node, scope)
        if isinstance(known.value, SettingsGetter):
            return instantiate(known.value.cls, None, scope)
    if isinstance(node.func, ast.Attribute) and node.func.attr == "replace" and len(args) == 2:
        # `url.replace("postgresql://", "postgresql+asyncpg://")`
        text, old, new = (evaluate(x, scope) for x in (node.func.value, *args))
        if text is not None and text.hidden:
            return text
        if all(v is not None and isinstance(v.value, str) for v in (text, old, new)):
            return Val(text.value.replace(old.value, new.value), text.source)  # type: ignore[union-attr]
        return None
    if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and \
            name not in _ENV_GETTERS and 1 <= len(args) <= 2:
        # `DATABASES.get("default", {})`: a mapping read here, by a known key
        mapping, key = evaluate(node.func.value, scope), evaluate(args[0], scope)
        if mapping is not None and isinstance(mapping.value, dict) and not mapping.open \
                and key is not None and isinstance(key.value, str):
            got = mapping.value.get(key.value)
            if got is not None:
                return got
            return evaluate(args[1], scope) if len(args) == 2 else Val(None, scope.src(node))
    if name in ("tuple", "list") and len(args) == 1 and not node.keywords:
        v = evaluate(args[0], scope)  # tuple([...]): the same items
        return v if v is not None and isinstance(v.value, list) else None
    if name in ("int", "float"):
        v = evaluate(args[0], scope) if args else None
        return _number(v, int if name == "int" else float) if v is not None else None
    if name == "str" and args:
        v = evaluate(args[0], scope)
        if v is None or v.hidden:
            return v
        return Val(str(v.value), v.source, v.cpu, v.from_default)
    if name in ("max", "min") and len(args) == 2:
        a, b = evaluate(args[0], scope), evaluate(args[1], scope)
        if (hidden := hidden_of(a, b)) is not None:
            return hidden
        if a is None or b is None or not all(isinstance(x.value, int | float) for x in (a, b)):
            return None
        if name == "max" and (a.cpu or b.cpu) and not (a.cpu and b.cpu):
            cpu, floor = (a.cpu, b.value) if a.cpu else (b.cpu, a.value)
            return Val(max(a.value, b.value), scope.src(node),
                       replace(cpu, floor=max(cpu.floor, floor)))
        if a.cpu or b.cpu:
            return None
        return Val(max(a.value, b.value) if name == "max" else min(a.value, b.value),
                   scope.src(node))
    if name == "len" and args and dotted(getattr(args[0], "func", ast.Name(id=""))) \
            == "os.sched_getaffinity":
        name = "len.os.sched_getaffinity"
    if name in _CPU_CALLS:
        text = "len(os.sched_getaffinity(0))" if name.startswith("len.") else f"{name}()"
        return Val(scope.cpus, scope.src(node, key=text),
                   CpuFormula(per_cpu=1, text=text, applies_to="processes"))
    if name in _ENV_GETTERS and args:
        key = evaluate(args[0], scope)
        if key is None or not isinstance(key.value, str):
            return None
        default = args[1] if len(args) > 1 else _kw(node, "default")
        return _env_lookup(key.value, default, node, scope)
    if (name in _TYPED_ENV or name.endswith((".int", ".str"))) and args:
        key = evaluate(args[0], scope)
        if key is None or not isinstance(key.value, str):
            return None
        default = _kw(node, "default") or (args[1] if len(args) > 1 else None)
        found = _env_lookup(key.value, default, node, scope)
        cast = _kw(node, "cast")
        if found is not None and (name.endswith(".int") or dotted(cast) == "int"):
            return _number(found, int)
        return found
    return None


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


_UNKNOWN = _Unknown()


def is_unknown(v: Val | None) -> bool:
    return v is None or v.value is _UNKNOWN


def hidden_note(what: str, name: str, source: Source) -> str:
    """Why `what` is unknown: set by `name` from a Secret or reference whose value the
    repository does not hold (said by PA106; StackContext.hidden_size, process
    detection)."""
    if (source.key or "").endswith("*"):
        # cited at an envFrom marker (_env_lookup): that source only may hold `name`
        prefix = source.key[:-1]
        return (f"{what}: {name} may be set by the envFrom source"
                f"{f' with prefix {prefix}' if prefix else ''} at {source.label()}, whose "
                "keys are not in the repository")
    return (f"{what} is set by {name} ({source.label()}) from a secret or reference whose "
            "value is not in the repository")


def hidden_of(*operands: Val | None) -> Val | None:
    """The first operand that reads a secret-set variable: what an expression of them
    evaluates to (unknown, naming that variable), or None when none does."""
    return next((v for v in operands if v is not None and v.hidden), None)


def module_names(tree: ast.Module, scope: PyScope) -> dict[str, Val]:
    """Top-level `NAME = expr` / `NAME: T = expr` / `D["k"]["j"] = expr` in order; the
    result is also left in scope.names, so later lines see earlier ones. Module-level
    `if` blocks are followed: the branch the condition picks when it can be evaluated
    from the container env (`if os.getenv("DB") == "postgres":`), else the `if` body
    (settings modules override defaults there); `try` bodies are read."""
    _statements(tree.body, scope)
    return scope.names


def block_names(body: list[ast.stmt], scope: PyScope) -> dict[str, Val]:
    """As module_names, for a block of statements (a class body) read in `scope`."""
    _statements(body, scope)
    return scope.names


def _statements(body: list[ast.stmt], scope: PyScope) -> None:
    for stmt in body:
        if isinstance(stmt, ast.If):
            test = evaluate(stmt.test, scope)
            if test is None or test.value is _UNKNOWN:
                _statements(stmt.body, scope)
            else:
                _statements(stmt.body if test.value else stmt.orelse, scope)
            continue
        if isinstance(stmt, ast.Try):
            _statements(stmt.body, scope)
            continue
        if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            # pydantic settings classes and the functions that return one
            define(stmt, scope)
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            _update_items(stmt.value, scope)
            continue
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        if value is None:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                got = evaluate(value, scope)
                if got is not None:
                    scope.names[target.id] = got
                else:
                    scope.names.pop(target.id, None)
                    scope.names[target.id] = Val(_UNKNOWN, scope.src(value))
            elif isinstance(target, ast.Subscript):
                _assign_item(target, value, scope)


def _item_path(target: ast.expr, scope: PyScope) -> tuple[str, list[Any]] | None:
    """(name, keys) of `DATABASES["default"]["OPTIONS"]` when each key is read."""
    path: list[Any] = []
    node: ast.expr = target
    while isinstance(node, ast.Subscript):
        key = evaluate(node.slice, scope)
        if key is None:
            return None
        path.append(key.value)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in scope.names:
        return None
    path.reverse()
    return node.id, path


def _update_items(call: ast.Call, scope: PyScope) -> None:
    """`DATABASES["default"].update({...})` (or `.update(HOST=...)`): each key as an item
    assignment (Heroku-style settings override the default alias this way); a value not
    read is unknown, never the one it replaces. An argument not read as a mapping
    (`.update(dj_database_url.config())`) makes the whole mapping unknown, cited at the
    call's line (where django.py finds a URL helper)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "update" or len(call.args) > 1:
        return
    found = _item_path(func.value, scope)
    if found is None:
        return
    items: dict[Any, Val] = {}
    if call.args:
        given = evaluate(call.args[0], scope)
        if given is None or not isinstance(given.value, dict):
            _put_item(*found, Val(_UNKNOWN, scope.src(call)), scope)
            return
        items.update(given.value)
    for k in call.keywords:
        if k.arg is None:
            _put_item(*found, Val(_UNKNOWN, scope.src(call)), scope)
            return
        items[k.arg] = evaluate(k.value, scope) or Val(_UNKNOWN, scope.src(k.value))
    name, path = found
    for key, got in items.items():
        _put_item(name, [*path, key], got, scope)


def _assign_item(target: ast.Subscript, value: ast.expr, scope: PyScope) -> None:
    """DATABASES["default"]["CONN_MAX_AGE"] = 60 (dicts are copied, Vals are frozen)."""
    found = _item_path(target, scope)
    if found is None:
        return
    _put_item(*found, evaluate(value, scope) or Val(_UNKNOWN, scope.src(value)), scope)


def _put_item(name: str, path: list[Any], got: Val, scope: PyScope) -> None:
    """Set `name[path...]` to `got` (`name` itself when `path` is empty)."""
    if not path:
        scope.names[name] = got
        return

    def put(cur: Val, keys: list[Any]) -> Val:
        if not isinstance(cur.value, dict):
            return cur
        items = dict(cur.value)
        if len(keys) == 1:
            items[keys[0]] = got
        elif keys[0] in items:
            items[keys[0]] = put(items[keys[0]], keys[1:])
        return Val(items, cur.source)

    scope.names[name] = put(scope.names[name], path)


def parse(text: str, path: str) -> tuple[ast.Module | None, str | None, int | None]:
    """(tree, error message, error line): syntax errors are reported, never raised."""
    try:
        return ast.parse(text, filename=path), None, None
    except SyntaxError as exc:
        error = exc
    except (ValueError, RecursionError) as exc:
        return None, f"cannot parse Python: {exc}", None
    if sys.version_info < (3, 12):
        # Perhaps Python 3.12+ grammar (PEP 701 f-strings, PEP 695 `type`): read a
        # rewritten copy with the same lines (advisor/read/apps/pycompat.py).
        from advisor.read.apps.pycompat import rewrite_for_older_python

        try:
            rewritten, _notes = rewrite_for_older_python(text)
            return ast.parse(rewritten, filename=path), None, None
        except (SyntaxError, ValueError, RecursionError):
            pass
    return None, f"Python syntax error: {error.msg}", error.lineno


# --- pydantic settings classes (kept in this module: the evaluator and they call each
# other, and a module of their own would be an import circle) ---
# pydantic settings classes, read from their source (never imported): a field of a
# `class Settings(BaseSettings)` is its environment variable's value when the container
# sets it, else its default (`settings.db_pool_max_size` in `create_pool(max_size=...)`).
#
# How pydantic-settings names a field's variable (pydantic/pydantic-settings v2.15.0,
# f725ca18):
# - main.py:617-623 BaseSettings.model_config: case_sensitive=False, env_prefix='',
#   env_prefix_target='variable'.
# - sources/base.py:424-476 _extract_field_info: a validation alias (a string, or each
#   AliasChoices string) is the name, without the prefix unless env_prefix_target is
#   'alias' or 'all'; else env_prefix + the field name; lower-cased unless case_sensitive
#   (421-422); sources/utils.py:64-74 parse_env_vars lower-cases the environment's names
#   the same way.
# - pydantic v2.13.4 fields.py:1346-1347: `Field(alias=...)` is also the validation alias.
# - pydantic v1.10.26 env_settings.py:95-118 (BaseSettings, `class Config`): `Field(env=...)`
#   names the variable(s) without the prefix, else env_prefix + field name; lower-cased
#   unless Config.case_sensitive.
# Values passed to the constructor win over the environment (init settings come first).

_BASE_NAMES = ("BaseSettings",)
_FIELD_CALLS = ("Field", "pydantic.Field")
_CASTS = {"int": int, "float": float}


class SettingsField(Struct, frozen=True):
    default: Val | None  # None: required (no default)
    names: tuple[str, ...] | None  # explicit variable names (an alias, v1 env=); no prefix
    cast: str = ""  # "int"/"float": the annotation a value from the environment becomes


class SettingsClass(Struct, frozen=True):
    name: str
    fields: dict[str, SettingsField]
    prefix: str = ""
    case_sensitive: bool = False
    # @property methods that return one expression (a DSN built from the fields)
    properties: dict[str, ast.expr] = {}


class SettingsObject(Struct, frozen=True):
    """An instance: each field's value, and the class (for its properties)."""

    cls: SettingsClass
    values: dict[str, Val]


class SettingsGetter(Struct, frozen=True):
    """A function that returns an instance (`@lru_cache def get_settings()`)."""

    cls: SettingsClass


def _str(node: ast.expr | None, scope: PyScope) -> str | None:
    got = evaluate(node, scope)
    return got.value if got is not None and isinstance(got.value, str) else None


def _config(cls: ast.ClassDef, scope: PyScope, prefix: str, case: bool) -> tuple[str, bool]:
    """env_prefix and case_sensitive: class keywords, `model_config = SettingsConfigDict(..)`
    or a dict, or v1's `class Config:` attributes."""
    items: dict[str, ast.expr] = {k.arg: k.value for k in cls.keywords if k.arg}
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
            if isinstance(target, ast.Name) and target.id == "model_config":
                value = stmt.value
                if isinstance(value, ast.Call):
                    items.update({k.arg: k.value for k in value.keywords if k.arg})
                elif isinstance(value, ast.Dict):
                    items.update({k.value: v for k, v in zip(value.keys, value.values,
                                                              strict=True)
                                  if isinstance(k, ast.Constant) and isinstance(k.value, str)})
        elif isinstance(stmt, ast.ClassDef) and stmt.name == "Config":
            for inner in stmt.body:
                if isinstance(inner, ast.Assign) and isinstance(inner.targets[0], ast.Name):
                    items[inner.targets[0].id] = inner.value
    if "env_prefix" in items:
        prefix = _str(items["env_prefix"], scope) or ""
    if "case_sensitive" in items:
        got = evaluate(items["case_sensitive"], scope)
        case = bool(got.value) if got is not None and isinstance(got.value, bool) else case
    return prefix, case


def _alias_names(node: ast.expr | None, scope: PyScope) -> tuple[str, ...] | None:
    """A validation alias's names: a string, AliasChoices("A", "B") (strings only), or
    v1's env="X" / env=["X", "Y"]."""
    if node is None:
        return None
    if isinstance(node, ast.Call) and dotted(node.func).endswith("AliasChoices"):
        names = tuple(n for a in node.args if (n := _str(a, scope)) is not None)
        return names or None
    got = evaluate(node, scope)
    if got is None:
        return None
    if isinstance(got.value, str):
        return (got.value,)
    if isinstance(got.value, list):
        names = tuple(v.value for v in got.value if isinstance(v.value, str))
        return names or None
    return None


def _field(stmt: ast.AnnAssign, scope: PyScope) -> SettingsField:
    cast = dotted(stmt.annotation)
    value = stmt.value
    names = None
    if isinstance(value, ast.Call) and dotted(value.func) in _FIELD_CALLS:
        kw = {k.arg: k.value for k in value.keywords if k.arg}
        names = _alias_names(kw.get("validation_alias") or kw.get("alias") or kw.get("env"),
                             scope)
        if "default_factory" in kw:
            # a nested settings class (`Field(default_factory=DatabaseSettings)`) is built
            # with no arguments: it reads its own fields from the environment (_value)
            factory = scope.names.get(dotted(kw["default_factory"]))
            default: Val | None = Val(factory.value, scope.src(value)) \
                if factory is not None and isinstance(factory.value, SettingsClass) \
                else Val(_UNKNOWN, scope.src(value))
        else:
            node = value.args[0] if value.args else kw.get("default")
            default = None if node is None or (isinstance(node, ast.Constant)
                                               and node.value is Ellipsis) else \
                (evaluate(node, scope) or Val(_UNKNOWN, scope.src(node)))
    elif value is None:
        default = None
    else:
        default = evaluate(value, scope) or Val(_UNKNOWN, scope.src(value))
    return SettingsField(default=default, names=names, cast=cast if cast in _CASTS else "")


def _property(fn: ast.FunctionDef) -> ast.expr | None:
    """The expression a `@property` returns as its last statement."""
    if not any(dotted(d) == "property" for d in fn.decorator_list):
        return None
    last = fn.body[-1] if fn.body else None
    return last.value if isinstance(last, ast.Return) and last.value is not None else None


def settings_class(cls: ast.ClassDef, scope: PyScope) -> SettingsClass | None:
    """The class when it derives from BaseSettings (or from a settings class in scope)."""
    parent: SettingsClass | None = None
    for base in cls.bases:
        name = dotted(base)
        known = scope.names.get(name)
        if known is not None and isinstance(known.value, SettingsClass):
            parent = known.value
        elif name.rsplit(".", 1)[-1] in _BASE_NAMES:
            parent = parent or SettingsClass(name="BaseSettings", fields={})
    if parent is None:
        return None
    prefix, case = _config(cls, scope, parent.prefix, parent.case_sensitive)
    fields = dict(parent.fields)
    properties = dict(parent.properties)
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                and stmt.target.id != "model_config" \
                and "ClassVar" not in ast.unparse(stmt.annotation):
            fields[stmt.target.id] = _field(stmt, scope)
        elif isinstance(stmt, ast.FunctionDef) and (expr := _property(stmt)) is not None:
            properties[stmt.name] = expr
    return SettingsClass(name=cls.name, fields=fields, prefix=prefix, case_sensitive=case,
                         properties=properties)


def settings_getter(fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: PyScope
                    ) -> SettingsGetter | None:
    """A function annotated to return a settings class, or that returns `Cls()`."""
    candidates = [fn.returns] if fn.returns is not None else []
    candidates += [n.value.func for n in ast.walk(fn) if isinstance(n, ast.Return)
                   and isinstance(n.value, ast.Call)]
    for node in candidates:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value  # a string annotation
        else:
            name = dotted(node)
        known = scope.names.get(name)
        if known is not None and isinstance(known.value, SettingsClass):
            return SettingsGetter(cls=known.value)
    return None


def _lookup(names: tuple[str, ...], case: bool, env: dict[str, EnvVar]
            ) -> tuple[str, EnvVar] | None:
    """The first name the environment sets (in any case unless `case`), or an envFrom
    source not held that may set it (its marker `<prefix>*`, without a value)."""
    for name in names:
        if case:
            var = env.get(name)
        else:
            var = next((v for k, v in reversed(env.items())
                        if not k.endswith("*") and k.lower() == name.lower()), None)
        if var is not None:
            return name, var
    for name in names:
        for key, var in env.items():
            prefix = key[:-1]
            if key.endswith("*") and var.value is None and (
                    name.startswith(prefix) if case else name.lower().startswith(prefix.lower())):
                return name, var
    return None


def _value(cls: SettingsClass, field: str, spec: SettingsField, scope: PyScope) -> Val:
    names = spec.names or (cls.prefix + field,)
    found = _lookup(names, cls.case_sensitive, scope.env)
    display = names[0] if cls.case_sensitive else names[0].upper()
    if found is not None:
        name, var = found
        if var.value is None:  # from a Secret or envFrom source not held
            return Val(_UNKNOWN, replace(var.source, key=var.name if var.name.endswith("*")
                                         else name), hidden=name.upper()
                       if not cls.case_sensitive else name)
        got = Val(var.value, replace(var.source, key=var.name))
    elif spec.default is None:
        return Val(_UNKNOWN, scope.src(None, key=display))  # required, not set: unknown
    elif isinstance(spec.default.value, SettingsClass):
        return instantiate(spec.default.value, None, scope)  # a nested settings object
    else:
        got = Val(spec.default.value, replace(spec.default.source,
                                              key=f"{cls.name}.{field}, {display} unset"),
                  spec.default.cpu, from_default=True, hidden=spec.default.hidden)
    if spec.cast and not got.hidden and got.value is not _UNKNOWN:
        return _number(got, _CASTS[spec.cast]) or got
    return got


def instantiate(cls: SettingsClass, call: ast.Call | None, scope: PyScope) -> Val:
    """An instance as the container's environment makes it: constructor keywords, then
    the environment, then each field's default."""
    given = {k.arg: k.value for k in call.keywords if k.arg} if call is not None else {}
    values: dict[str, Val] = {}
    for key, spec in cls.fields.items():
        if key in given:
            values[key] = evaluate(given[key], scope) or Val(_UNKNOWN, scope.src(call))
        else:
            values[key] = _value(cls, key, spec, scope)
    return Val(SettingsObject(cls=cls, values=values), scope.src(call))


def attribute(obj: SettingsObject, attr: str, scope: PyScope) -> Val | None:
    """A field's value, or a property's expression evaluated with `self` the instance."""
    if attr in obj.values:
        return obj.values[attr]
    expr = obj.cls.properties.get(attr)
    if expr is None:
        return None
    inner = PyScope(path=scope.path, env=scope.env, cpus=scope.cpus,
                    names={**scope.names, "self": Val(obj, scope.src(expr))}, cite=scope.cite)
    return evaluate(expr, inner)


def define(stmt: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, scope: PyScope
           ) -> Any:
    """Record a settings class or getter defined at module level in `scope.names`."""
    if isinstance(stmt, ast.ClassDef):
        found: Any = settings_class(stmt, scope)
    elif any(isinstance(v.value, SettingsClass) for v in scope.names.values()):
        found = settings_getter(stmt, scope)
    else:
        found = None
    if found is not None:
        scope.names[stmt.name] = Val(found, scope.src(stmt))
    return found
