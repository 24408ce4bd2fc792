"""Which Python files a container's process runs, and the if/elif arms a call sits in.

The process's entry module (`python -m pkg.main`, `python app/main.py`, `gunicorn
pkg.wsgi:app`, `uvicorn pkg.asgi:app`) and every module of the app it imports, at any
depth (function-local imports too: they may run), with the packages' __init__.py that
importing a submodule runs. A module no import reaches (a developer script, another
program's CLI) is not the server's. Imports are matched by path suffix (a src/ layout
holds pkg/ one folder down); dynamic imports (importlib, a framework loading a dotted
name from settings) are not followed: the caller falls back to every module when the
entry reaches no pool and may load one by name (loads_by_name).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from msgspec import Struct

from advisor.read.apps.base import StackContext
from advisor.read.apps.pyeval import parse
from advisor.read.apps.source import AppFile

_PYTHON = re.compile(r"python[\d.]*$")
_SERVERS = ("gunicorn", "uvicorn", "hypercorn", "daphne")


def entry_paths(ctx: StackContext) -> list[str]:
    """The module paths (pkg/main.py) or file path the container's command runs; []
    when the command is not a Python interpreter or ASGI/WSGI server given a module."""
    from advisor.read.apps.cmdline import command_line

    for segment in command_line(ctx.container, ctx.app, []).segments():
        words = [w.text for w in segment]
        for i, word in enumerate(words):
            base = word.rsplit("/", 1)[-1]
            rest = words[i + 1:]
            if _PYTHON.match(base):
                if len(rest) >= 2 and rest[0] == "-m":
                    return _module_paths(rest[1])
                script = next((w for w in rest if w.endswith(".py")), None)
                return [script.lstrip("./")] if script else []
            if base == "arq":
                # `arq pkg.worker.WorkerSettings`: arq imports the module of that class
                # (arq/cli.py: import_string(worker_settings))
                target = next((w for w in rest if not w.startswith("-")), "")
                return _module_paths(target.rsplit(".", 1)[0]) if "." in target else []
            if base in _SERVERS:
                target = next((w for w in rest if not w.startswith("-") and ":" in w), None)
                return _module_paths(target.split(":", 1)[0]) if target else []
    return []


def _module_paths(dotted: str) -> list[str]:
    path = dotted.replace(".", "/")
    return [f"{path}.py", f"{path}/__main__.py", f"{path}/__init__.py"]


def _matching(files: list[AppFile], wanted: str) -> list[AppFile]:
    return [f for f in files if f.rel == wanted or f.rel.endswith("/" + wanted)]


def _imported(f: AppFile, tree: ast.Module) -> list[str]:
    """Module paths (a/b.py, a/b/__init__.py) the file's imports may load."""
    folder = f.rel.rsplit("/", 1)[0] if "/" in f.rel else ""
    out: list[str] = []

    def add(dotted_path: str) -> None:
        parts = [p for p in dotted_path.split("/") if p]
        for n in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__, a/b/__init__
            out.extend((f"{'/'.join(parts[:n])}/__init__.py",))
        if parts:
            out.append(f"{'/'.join(parts)}.py")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name.replace(".", "/"))
        elif isinstance(node, ast.ImportFrom):
            base = (node.module or "").replace(".", "/")
            if node.level:
                here = folder
                for _ in range(node.level - 1):
                    here = here.rsplit("/", 1)[0] if "/" in here else ""
                base = "/".join(p for p in (here, base) if p)
            add(base)
            for alias in node.names:  # `from pkg import submodule`
                add(f"{base}/{alias.name}" if base else alias.name)
    return out


def python_tree(ctx: StackContext, f: AppFile
                ) -> tuple[ast.Module | None, str | None, int | None]:
    """parse(f.text, f.path), once per file in a reading: the import closure, the
    by-name loads, the engine readers and python_modules all walk the same modules."""
    held = ctx.cache.setdefault("py-ast", {})
    assert isinstance(held, dict)
    if f.path not in held:
        held[f.path] = parse(f.text, f.path)
    return held[f.path]


def reachable(ctx: StackContext, entries: list[str]) -> set[str] | None:
    """The paths of the app's Python files the entry imports, at any depth; None when
    the entry is not among the app's files."""
    def imported(f: AppFile) -> list[str]:
        tree = python_tree(ctx, f)[0]
        return _imported(f, tree) if tree is not None else []

    return import_closure(ctx.files("python"), entries, imported)


def import_closure(files: list[AppFile], entries: list[str],
                   imported: Callable[[AppFile], list[str]], *,
                   suffix: bool = True) -> set[str] | None:
    """The paths of `files` the entries (paths in the app; with `suffix`, matched as a
    suffix of one: a src/ layout holds pkg/ one folder down) load, at any depth:
    `imported` gives the paths a file loads, each matched the same way. None when no
    entry is among `files`. Shared by the Python and the JS readers (apps/jsentry.py,
    whose paths are resolved already: exact)."""
    todo = [f for wanted in entries for f in _matching(files, wanted)
            if suffix or f.rel == wanted]
    if not todo:
        return None
    by_rel: dict[str, list[AppFile]] = {}
    for f in files:
        parts = f.rel.split("/")
        for n in range(len(parts) if suffix else 1):
            by_rel.setdefault("/".join(parts[n:]), []).append(f)
    seen: set[str] = set()
    while todo:
        f = todo.pop()
        if f.path in seen:
            continue
        seen.add(f.path)
        for wanted in imported(f):
            todo.extend(g for g in by_rel.get(wanted, ()) if g.path not in seen)
    return seen


# Calls that load a module named by a string: importlib, Django's, Werkzeug's and
# Starlette's import_string, Celery's autodiscovery, runpy, exec
_BY_NAME_CALLS = frozenset({"import_module", "__import__", "import_string",
                            "import_from_string", "autodiscover_tasks", "autodiscover",
                            "find_modules", "load_entry_point", "run_path", "run_module",
                            "exec", "execfile", "import_object"})


def loads_by_name(ctx: StackContext, reached: set[str]) -> str | None:
    """Where a module of `reached` (paths) may load another by its name, which the
    import closure does not follow: a _BY_NAME_CALLS call, or a string naming an app
    module outside the closure (`"app.tasks.send"`, a Celery include=, INSTALLED_APPS,
    arq's func("app.jobs.run")); None when none does."""
    files = ctx.files("python")
    unreached: set[str] = set()
    for f in files:
        if f.path in reached:
            continue
        parts = f.rel.removesuffix(".py").removesuffix("/__init__").split("/")
        unreached.update(".".join(parts[n:]) for n in range(len(parts) - 1))
    for f in files:
        if f.path not in reached:
            continue
        tree = python_tree(ctx, f)[0]
        if tree is None:
            return f"{f.path} is not read"
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else \
                    func.id if isinstance(func, ast.Name) else ""
                if name in _BY_NAME_CALLS:
                    return f"{f.path}:{node.lineno} ({name})"
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                dotted = node.value.split(":", 1)[0]
                if "." in dotted and any(dotted == m or dotted.startswith(m + ".")
                                         for m in unreached):
                    return f"{f.path}:{node.lineno} ({node.value!r})"
    return None


class Arm(Struct, frozen=True):
    """One arm of an if/elif/else chain: the chain (file:line of its `if`), the arm's
    index, and whether the arm is taken only for SQLite."""

    chain: str
    index: int
    arms: int
    sqlite: bool


_NEGATED = re.compile(r"\bnot\b|!=|\bis not\b")


def _sqlite_arms(tests: list[ast.expr], has_else: bool) -> list[bool]:
    texts = [ast.unparse(t).lower() for t in tests]
    out = ["sqlite" in t and not _NEGATED.search(t) for t in texts]
    if has_else:
        out.append(any("sqlite" in t and _NEGATED.search(t) for t in texts))
    return out


def arm_paths(path: str, body: list[ast.stmt]) -> dict[int, tuple[tuple[Arm, ...], ast.stmt]]:
    """id(call) -> (the if/elif arms around it, outermost first; its statement), for
    every call in `body` (a module's or a function's statements, nested defs included)."""
    out: dict[int, tuple[tuple[Arm, ...], ast.stmt]] = {}

    def visit(stmts: list[ast.stmt], arms: tuple[Arm, ...]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                chain: list[tuple[ast.expr, list[ast.stmt]]] = []
                node: ast.stmt = stmt
                orelse: list[ast.stmt] = []
                while isinstance(node, ast.If):
                    chain.append((node.test, node.body))
                    orelse = node.orelse
                    node = orelse[0] if len(orelse) == 1 and isinstance(orelse[0], ast.If) \
                        else None  # type: ignore[assignment]
                    if node is None:
                        break
                sqlite = _sqlite_arms([t for t, _ in chain], bool(orelse))
                bodies = [b for _, b in chain] + ([orelse] if orelse else [])
                where = f"{path}:{stmt.lineno}"
                for test, _ in chain:
                    mark(test, arms, stmt)
                for i, arm_body in enumerate(bodies):
                    visit(arm_body, (*arms, Arm(chain=where, index=i, arms=len(bodies),
                                                sqlite=sqlite[i])))
                continue
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    visit(inner, arms)
                elif isinstance(inner, list):
                    for handler in inner:
                        if isinstance(handler, ast.ExceptHandler):
                            visit(handler.body, arms)
            mark(stmt, arms, stmt, shallow=True)

    def mark(node: ast.AST, arms: tuple[Arm, ...], stmt: ast.stmt, *,
             shallow: bool = False) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Call):
                out.setdefault(id(n), (arms, stmt))
            for child in ast.iter_child_nodes(n):
                if shallow and isinstance(child, ast.stmt):
                    continue  # visited with their own arms
                stack.append(child)

    visit(body, ())
    return out
