"""pydantic settings classes, read from their source (never imported): a field of a
`class Settings(BaseSettings)` is its environment variable's value when the container
sets it, else its default (`settings.db_pool_max_size` in `create_pool(max_size=...)`).

How pydantic-settings names a field's variable (pydantic/pydantic-settings v2.15.0,
f725ca18):
- main.py:617-623 BaseSettings.model_config: case_sensitive=False, env_prefix='',
  env_prefix_target='variable'.
- sources/base.py:424-476 _extract_field_info: a validation alias (a string, or each
  AliasChoices string) is the name, without the prefix unless env_prefix_target is
  'alias' or 'all'; else env_prefix + the field name; lower-cased unless case_sensitive
  (421-422); sources/utils.py:64-74 parse_env_vars lower-cases the environment's names
  the same way.
- pydantic v2.13.4 fields.py:1346-1347: `Field(alias=...)` is also the validation alias.
- pydantic v1.10.26 env_settings.py:95-118 (BaseSettings, `class Config`): `Field(env=...)`
  names the variable(s) without the prefix, else env_prefix + field name; lower-cased
  unless Config.case_sensitive.
Values passed to the constructor win over the environment (init settings come first).
"""

from __future__ import annotations

import ast
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from advisor.model import EnvVar
from advisor.read.apps.pyeval import _UNKNOWN, PyScope, Val, _number, dotted, evaluate

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
            default: Val | None = Val(_UNKNOWN, scope.src(value))
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
    for field, spec in cls.fields.items():
        if field in given:
            values[field] = evaluate(given[field], scope) or Val(_UNKNOWN, scope.src(call))
        else:
            values[field] = _value(cls, field, spec, scope)
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
