"""Python sources of an app, parsed once per container with `ast` (never imported)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from msgspec import Struct

from advisor.model import Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.pyeval import PyScope, Val, dotted, evaluate, module_names, parse
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
            tree, error, line = parse(f.text, f.path)
            if tree is None:
                ctx.problem(Source(path=f.path, line=line), error or "cannot parse",
                            program="Python")
                cache[f.path] = None
            else:
                scope = PyScope(path=f.path, env=ctx.env_map(), cpus=ctx.cpus, cite=f.cite)
                module_names(tree, scope)
                cache[f.path] = PyModule(file=f, tree=tree, scope=scope)
        if cache[f.path] is not None:
            out.append(cache[f.path])
    return out


def calls(module: PyModule, names: set[str]) -> Iterator[tuple[ast.Call, str]]:
    """Calls whose dotted name (or its last part) is in `names`, in ast.walk's order."""
    for node in _nodes(module.tree, ast.Call):
        name = dotted(node.func)
        if name in names or name.rsplit(".", 1)[-1] in names:
            yield node, name


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


def value_of(module: PyModule, node: ast.expr | None) -> Val | None:
    return evaluate(node, module.scope) if node is not None else None


def imports(module: PyModule, package: str) -> bool:
    for node in _nodes(module.tree, (ast.Import, ast.ImportFrom)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == package
                                                for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package:
            return True
    return False
