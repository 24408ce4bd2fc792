"""Python sources of an app, parsed once per container with `ast` (never imported)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from msgspec import Struct

from advisor.model import Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.pyentry import python_tree
from advisor.read.apps.pyeval import (
    PyScope,
    Val,
    block_names,
    dotted,
    evaluate,
    module_names,
)
from advisor.read.apps.source import AppFile, auxiliary_script

# Code that runs only for migrations or tests is not the serving process's pool.
_SKIP_DIRS = ("alembic", "migrations")


def _skipped(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return any(p in _SKIP_DIRS for p in parts[:-1]) or name == "conftest.py" \
        or name.startswith("test_") or name.endswith("_test.py") or auxiliary_script(rel)


class PyModule(Struct):
    file: AppFile
    tree: ast.Module
    scope: PyScope


def python_modules(ctx: StackContext, needle: str) -> list[PyModule]:
    """Parsed modules whose text contains `needle` (a cheap filter before ast.parse)."""
    cache = ctx.cache.setdefault("python", {})
    assert isinstance(cache, dict)
    out = []
    for f in ctx.files("python", "gunicorn-conf"):
        if needle not in f.text:
            continue
        if _skipped(f.rel):
            continue
        if f.path not in cache:
            tree, error, line = python_tree(ctx, f)
            if tree is None:
                ctx.problem(Source(path=f.path, line=line), error or "cannot parse",
                            program="Python")
                cache[f.path] = None
            else:
                scope = PyScope(path=f.path, env=ctx.env_map(), cpus=ctx.cpus, cite=f.cite)
                scope.names.update(imported_settings(ctx, f, tree))
                module_names(tree, scope)
                cache[f.path] = PyModule(file=f, tree=tree, scope=scope)
        if cache[f.path] is not None:
            out.append(cache[f.path])
    return out


def _module_files(ctx: StackContext, f: AppFile, node: ast.ImportFrom) -> list[AppFile]:
    """The app's files an `from X import ...` names (X.py or X/__init__.py, relative
    imports from `f`'s folder), that may define pydantic settings."""
    dotted_path = (node.module or "").replace(".", "/")
    if node.level:
        folder = f.rel.rsplit("/", 1)[0] if "/" in f.rel else ""
        for _ in range(node.level - 1):
            folder = folder.rsplit("/", 1)[0] if "/" in folder else ""
        dotted_path = "/".join(p for p in (folder, dotted_path) if p)
    wanted = [f"{dotted_path}.py", f"{dotted_path}/__init__.py"] if dotted_path else []
    return [g for g in ctx.files("python") if "Settings" in g.text and any(
        g.rel == w or g.rel.endswith("/" + w) for w in wanted)]


def imported_settings(ctx: StackContext, f: AppFile, tree: ast.Module,
                      seen: frozenset[str] = frozenset()) -> dict[str, Val]:
    """The pydantic settings classes, instances and getters `tree` imports from the
    app's own modules (`from app.config import settings`), read in those modules."""
    if "import" not in f.text or f.path in seen:
        return {}
    from advisor.read.apps.pyeval import SettingsClass, SettingsGetter, SettingsObject

    cache = ctx.cache.setdefault("python-settings", {})
    assert isinstance(cache, dict)
    out: dict[str, Val] = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        for g in _module_files(ctx, f, node):
            if g.path not in cache:
                g_tree = python_tree(ctx, g)[0]
                names: dict[str, Val] = {}
                if g_tree is not None:
                    scope = PyScope(path=g.path, env=ctx.env_map(), cpus=ctx.cpus, cite=g.cite)
                    scope.names.update(imported_settings(ctx, g, g_tree, seen | {f.path}))
                    names = {k: v for k, v in module_names(g_tree, scope).items() if isinstance(
                        v.value, SettingsClass | SettingsGetter | SettingsObject)}
                cache[g.path] = names
            names = cache[g.path]
            for alias in node.names:
                if alias.name in names:
                    out[alias.asname or alias.name] = names[alias.name]
    return out


def calls(module: PyModule, names: set[str]) -> Iterator[tuple[ast.Call, str]]:
    """Calls whose dotted name (or its last part) is in `names`, in ast.walk's order."""
    for node in nodes_of(module.tree, ast.Call):
        name = dotted(node.func)
        if name in names or name.rsplit(".", 1)[-1] in names:
            yield node, name


def nodes_of(tree: ast.AST, kinds: type | tuple[type, ...]) -> list:
    """The nodes of `tree` of these kinds in ast.walk's order (breadth first), walked
    once per tree and kinds: the engine readers ask for each engine call (its function,
    its class, its callers), and a 45k-line module with 20 engines was walked ~100 times,
    27 s (audit 44). The list is shared: not to be changed."""
    memo = tree.__dict__.setdefault("_pa_nodes", {})
    if kinds not in memo:
        memo[kinds] = _nodes(tree, kinds)
    return memo[kinds]


def _nodes(tree: ast.AST, kinds: type | tuple[type, ...]) -> list:
    """The nodes of `tree` of these kinds in ast.walk's order (breadth first), walked
    without its generators and without the fields that hold no node (ctx, op, ...):
    ast.walk was two thirds of reading a Django/SQLAlchemy app's pools."""
    from advisor.read.sql.literals import CHILD_FIELDS

    node_type = ast.AST
    children = CHILD_FIELDS
    queue: list[ast.AST] = [tree]
    found = []
    for node in queue:  # grows while iterated
        if isinstance(node, kinds):
            found.append(node)
        for field_name in children.get(type(node), node._fields):
            value = getattr(node, field_name, None)
            if isinstance(value, node_type):
                queue.append(value)
            elif isinstance(value, list):
                queue.extend(item for item in value if isinstance(item, node_type))
    return found


def kwarg(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def arg(call: ast.Call, index: int, name: str) -> ast.expr | None:
    found = kwarg(call, name)
    if found is not None:
        return found
    return call.args[index] if len(call.args) > index else None


def value_of(module: PyModule, node: ast.expr | None, scope: PyScope | None = None
             ) -> Val | None:
    return evaluate(node, scope or module.scope) if node is not None else None


def local_scope(module: PyModule, call: ast.Call) -> PyScope:
    """The module's names and those the function around `call` assigns before it
    (`db_config = get_db_config()`, `pool_size = int(os.getenv(...))`), in order;
    the module's scope when `call` is at module level."""
    around = [fn for fn in nodes_of(module.tree, (ast.FunctionDef, ast.AsyncFunctionDef))
              if fn.lineno <= call.lineno <= (fn.end_lineno or fn.lineno)]
    if not around:
        return module.scope
    fn = max(around, key=lambda f: f.lineno)  # the innermost
    base = module.scope
    scope = PyScope(path=base.path, env=base.env, cpus=base.cpus, names=dict(base.names),
                    cite=base.cite)
    scope.names.update(_instance_attributes(module, fn))
    scope.names.update(_settings_parameters(fn, scope))
    block_names([s for s in fn.body if s.lineno <= call.lineno], scope)
    return scope


def _settings_parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: PyScope
                         ) -> dict[str, Val]:
    """A parameter annotated with a pydantic settings class (`settings: Settings`, what
    FastAPI's Depends or a DI container's provider passes): an instance as the
    container's environment makes it, the class built with no arguments."""
    from advisor.read.apps.pyeval import SettingsClass, instantiate

    out: dict[str, Val] = {}
    for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
        if a.annotation is None:
            continue
        known = scope.names.get(dotted(a.annotation))
        if known is not None and isinstance(known.value, SettingsClass):
            out[a.arg] = instantiate(known.value, None, scope)
    return out


def _instance_attributes(module: PyModule, fn: ast.FunctionDef | ast.AsyncFunctionDef
                         ) -> dict[str, Val]:
    """`self.X` as its class's __init__ assigns it, for a method's scope
    (`self.settings = settings or get_settings()`, then `create_async_engine(...,
    pool_size=self.settings.DATABASE_POOL_SIZE)` in another method). A parameter of
    __init__ that defaults to None is None (the class built with no arguments), any
    other is unknown; only __init__'s own top-level assignments are read."""
    owner = next((c for c in nodes_of(module.tree, ast.ClassDef) if fn in c.body), None)
    init = next((f for f in owner.body if isinstance(f, ast.FunctionDef)
                 and f.name == "__init__"), None) if owner is not None else None
    if init is None or init is fn:
        return {}
    base = module.scope
    inner = PyScope(path=base.path, env=base.env, cpus=base.cpus, names=dict(base.names),
                    cite=base.cite)
    params = [*init.args.posonlyargs, *init.args.args]
    defaults = [None] * (len(params) - len(init.args.defaults)) + list(init.args.defaults)
    pairs = [*zip(params, defaults, strict=True),
             *zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True)]
    for a, default in pairs:
        inner.names.pop(a.arg, None)  # a parameter hides the module's name
        if isinstance(default, ast.Constant) and default.value is None:
            inner.names[a.arg] = Val(None, inner.src(default))
    out: dict[str, Val] = {}
    for stmt in init.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
            name = dotted(target)
            if name.startswith("self.") and name.count(".") == 1 and \
                    (got := evaluate(stmt.value, inner)) is not None:
                out[name] = got
    return out


def imports(module: PyModule, package: str) -> bool:
    for node in nodes_of(module.tree, (ast.Import, ast.ImportFrom)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == package
                                                for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package:
            return True
    return False
