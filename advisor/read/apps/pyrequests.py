"""Which Python functions run per request, and whether a value a function makes is
thrown away when it returns.

A request handler is a function a web framework calls per request: decorated with a
route (`@app.route`, `@bp.get`, `@router.post`, `@ns.route` ...), a method named for an
HTTP verb of a class routed so or subclassing a view class (flask-restx Resource,
MethodView, Django/DRF views), or a view taking `request` first (Django). The functions
they call, by name, at any depth, run per request too. Names are matched, not bindings:
an over-reach is bounded by what the caller then asks (a function that also throws its
engine away)."""

from __future__ import annotations

import ast

from advisor.read.apps.pyeval import dotted

_ROUTE_DECORATORS = frozenset({"route", "get", "post", "put", "patch", "delete", "head",
                               "options", "api_route", "websocket", "view"})
_VERBS = frozenset({"get", "post", "put", "patch", "delete", "head", "options",
                    "list", "create", "retrieve", "update", "partial_update", "destroy"})
_VIEW_BASES = frozenset({"Resource", "MethodView", "View", "APIView", "GenericAPIView",
                         "ViewSet", "ModelViewSet", "GenericViewSet", "HTTPEndpoint",
                         "TemplateView", "RequestHandler"})
# a cache around a function makes what it returns once, not per call
_CACHES = ("cache", "cached", "lru_cache", "memoize", "cache_resource", "singleton")
Func = ast.FunctionDef | ast.AsyncFunctionDef


def _routed(decorators: list[ast.expr]) -> bool:
    return any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
               and d.func.attr in _ROUTE_DECORATORS for d in decorators)


def _handlers(tree: ast.Module) -> list[Func]:
    out: list[Func] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = {dotted(b).rsplit(".", 1)[-1] for b in node.bases}
            if _routed(node.decorator_list) or bases & _VIEW_BASES:
                out.extend(f for f in node.body
                           if isinstance(f, Func) and f.name in _VERBS)
        elif isinstance(node, Func):
            first = [a.arg for a in node.args.args[:2] if a.arg not in ("self", "cls")][:1]
            if _routed(node.decorator_list) or first == ["request"]:
                out.append(node)
    return out


def _called_names(func: Func) -> set[str]:
    """The last name of each call (`UserHandler().get_user(...)`: get_user)."""
    out: set[str] = set()
    for n in ast.walk(func):
        if isinstance(n, ast.Call):
            if isinstance(n.func, ast.Attribute):
                out.add(n.func.attr)
            elif isinstance(n.func, ast.Name):
                out.add(n.func.id)
    return out


def request_functions(trees: list[ast.Module]) -> set[int]:
    """id() of every function (of these modules) a request handler runs, by name, at any
    depth, the handlers included."""
    by_name: dict[str, list[Func]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, Func):
                by_name.setdefault(node.name, []).append(node)
    todo = [f for tree in trees for f in _handlers(tree)]
    seen: set[int] = set()
    while todo:
        func = todo.pop()
        if id(func) in seen:
            continue
        seen.add(id(func))
        for name in _called_names(func):
            todo.extend(f for f in by_name.get(name, ()) if id(f) not in seen)
    return seen


def _cached(func: Func) -> bool:
    return any(dotted(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1]
               in _CACHES for d in func.decorator_list)


def thrown_away(func: Func, call: ast.Call, uses: frozenset[str]) -> bool:
    """Whether what `call` makes in `func` is dropped when func returns: not cached, not
    declared global, and only ever used as `x.<one of uses>` (the call itself, or the
    one local name it is assigned to): never returned, stored or passed on."""
    if _cached(func) or any(isinstance(n, ast.Global | ast.Nonlocal) for n in ast.walk(func)):
        return False
    parents = {id(c): p for p in ast.walk(func) for c in ast.iter_child_nodes(p)}
    parent = parents.get(id(call))
    if isinstance(parent, ast.Attribute):
        return parent.attr in uses
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Name)):
        return False
    name = parent.targets[0].id
    loads = [n for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == name
             and n is not parent.targets[0]]
    return all(isinstance(parents.get(id(n)), ast.Attribute)
               and parents[id(n)].attr in uses for n in loads)  # type: ignore[union-attr]
