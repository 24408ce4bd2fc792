"""django-configurations settings and where a settings module sits in the image.

django-configurations (jazzband/django-configurations@2.5.1, ffe979b): the settings
module defines classes over `configurations.Configuration`; configurations.importer
(importer.py:17, :57) takes the class named by DJANGO_CONFIGURATION, instantiates it
(:157-166) and makes each UPPERCASE attribute of the instance a setting
(utils.py:15-16 uppercase_attributes, so a `@property` is called). A module-level
DATABASES stays a setting only when no class attribute replaces it. The class's
DATABASES follows Python attribute lookup: the first class of its MRO that defines it.

`values.DatabaseURLValue(default, **kwargs)` (values.py:437-460): one alias, `alias=`
(default "default"), read from the variable `environ_name` (DATABASE_URL) with
`environ_prefix` None unless given (DictBackendMixin.__init__, :440-444; a given prefix
is joined with "_", Value.full_environ_name :89-96), else `default` parsed; the URL
goes to dj_database_url.parse with the keywords it takes (CastingMixin, :149-167:
conn_max_age, conn_health_checks, engine, ...).
"""

from __future__ import annotations

import ast
import posixpath
import re
from typing import NamedTuple

from msgspec.structs import replace

from advisor.model import Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.pyeval import (
    PyScope,
    Val,
    block_names,
    dotted,
    evaluate,
    hidden_note,
    is_unknown,
)
from advisor.read.apps.source import AppSource

VAR = "DJANGO_CONFIGURATION"
_CITE = "jazzband/django-configurations@2.5.1"
_SETDEFAULT = re.compile(r"""DJANGO_CONFIGURATION["']\s*,\s*(["'](\w+)["']|[^)\s])""")
# dj_database_url.parse keywords (dj-database-url 2.x) and the settings keys they set
_PARSE_KEYS = {"conn_max_age": "CONN_MAX_AGE", "conn_health_checks": "CONN_HEALTH_CHECKS",
               "engine": "ENGINE", "disable_server_side_cursors": "DISABLE_SERVER_SIDE_CURSORS"}


class Chosen(NamedTuple):
    """The DATABASES the chosen class gives: a value (`databases`), a
    DatabaseURLValue call (`url_call`), nothing (both None: the module's applies), or
    `unknown` (why it is not read)."""

    databases: Val | None = None
    url_call: ast.Call | None = None
    scope: PyScope | None = None  # where `url_call`'s arguments are evaluated
    where: Source | None = None
    unknown: str = ""


def _imports_configurations(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] \
                == "configurations":
            return True
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "configurations"
                                                for a in node.names):
            return True
    return False


def configuration_classes(trees: list[tuple[str, ast.Module]]
                          ) -> dict[str, tuple[str, ast.ClassDef]]:
    """Module-level classes over Configuration (directly or through one another), in
    the modules `from X import *` brought in first."""
    found: dict[str, tuple[str, ast.ClassDef]] = {}
    for path, tree in trees:
        direct = _imports_configurations(tree)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [dotted(b) for b in node.bases]
            if any(b in found for b in bases) or (direct and any(
                    b.rsplit(".", 1)[-1] == "Configuration" for b in bases)):
                found[node.name] = (path, node)
    return found


def _mro(name: str, classes: dict[str, tuple[str, ast.ClassDef]]) -> list[str]:
    """Python's order for the usual shapes: depth first, left to right, each class at
    its last place (a shared base after the classes that derive from it)."""
    order: list[str] = []

    def walk(n: str, depth: int) -> None:
        if n not in classes or depth > 20:
            return
        order.append(n)
        for base in classes[n][1].bases:
            walk(dotted(base), depth + 1)

    walk(name, 0)
    return [n for i, n in enumerate(order) if n not in order[i + 1:]]


def _setdefaults(ctx: StackContext) -> list[tuple[str | None, Source]]:
    """`os.environ.setdefault("DJANGO_CONFIGURATION", "Prod")` in the app's Python
    files: (class name, where); None for a value not written as a literal."""
    out: list[tuple[str | None, Source]] = []
    for f in ctx.files("python"):
        if VAR not in f.text:
            continue
        for m in _SETDEFAULT.finditer(f.text):
            if "setdefault" not in f.text[max(0, m.start() - 40):m.start()]:
                continue
            line = f.text.count("\n", 0, m.start()) + 1
            out.append((m.group(2), f.cite(line, VAR)))
    return out


def configuration_name(ctx: StackContext) -> tuple[str, Source] | str:
    """The class DJANGO_CONFIGURATION names, and where: the container's env, else the
    image's Dockerfile ENV, else the `setdefault` default the app's entry modules
    write (when they agree). A str: why it is not known."""
    from advisor.read.apps.cmdline import dockerfile_env

    var = ctx.env(VAR)
    if var is not None and var.value is None:
        return hidden_note("the django-configurations class", VAR, ctx.env_source(VAR))
    if var is not None and var.value:
        return var.value, ctx.env_source(VAR)
    marker = ctx.env_from_hidden(VAR)
    if marker is not None:
        return hidden_note("the django-configurations class", VAR,
                           replace(marker.source, key=marker.name))
    image = dockerfile_env(ctx.app, ctx.container.image).get(VAR)
    if image is not None:
        if image.value:
            return image.value, replace(image.source, key=VAR)
        return f"the django-configurations class: {VAR} at {image.source.label()} " \
               "expands a build argument not known here"
    defaults = _setdefaults(ctx)
    names = {n for n, _ in defaults}
    if len(names) == 1 and None not in names:
        name, where = defaults[0]
        return str(name), where
    if not defaults:
        return f"the django-configurations class: {VAR} is not set in the container's env " \
               "and no module sets a default"
    shown = ", ".join(w.label() for _, w in defaults[:3])
    return f"the django-configurations class: {VAR} is not set in the container's env and " \
           f"the defaults written ({shown}) are not one literal class name"


def _method_result(fn: ast.FunctionDef, scope: PyScope) -> Val | str:
    """What a DATABASES method returns, read when its body is assignments, branches
    whose conditions are read, and one final `return`; else why not."""
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # docstring
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return f"{fn.name} (line {fn.lineno}) does not end in one `return`"
    for node in ast.walk(ast.Module(body=body[:-1], type_ignores=[])):
        if isinstance(node, ast.Return):
            return f"{fn.name} returns early (line {node.lineno})"
        if isinstance(node, ast.If | ast.IfExp | ast.While):
            test = evaluate(node.test, scope)
            if test is None or is_unknown(test) or test.hidden:
                return (f"{fn.name} branches at line {node.lineno} on "
                        f"`{ast.unparse(node.test)}`, not read here")
        if isinstance(node, ast.For | ast.Try | ast.With | ast.Match):
            return f"{fn.name} has a {type(node).__name__.lower()} at line {node.lineno}"
    inner = PyScope(path=scope.path, env=scope.env, cpus=scope.cpus, names=dict(scope.names),
                    cite=scope.cite)
    block_names(body[:-1], inner)
    got = evaluate(body[-1].value, inner)
    if got is None or is_unknown(got) or not isinstance(got.value, dict):
        return f"{fn.name} returns `{ast.unparse(body[-1].value)[:60]}`, not read here"
    return got


def _defined(cls: ast.ClassDef) -> ast.stmt | None:
    """The class-body statement that defines DATABASES last, or None."""
    last: ast.stmt | None = None
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef):
            if stmt.name == "DATABASES":
                last = stmt
            continue
        if isinstance(stmt, ast.ClassDef):
            continue
        if any(isinstance(n, ast.Name) and n.id == "DATABASES" and isinstance(n.ctx, ast.Store)
               for n in ast.walk(stmt)):
            last = stmt  # an assignment, or one in a branch of the class body
    return last


def chosen_databases(ctx: StackContext, trees: list[tuple[str, ast.Module]],
                     scope: PyScope) -> Chosen | None:
    """The DATABASES of the django-configurations class the container runs; None when
    the settings define no Configuration class."""
    classes = configuration_classes(trees)
    if not classes:
        return None
    found = configuration_name(ctx)
    if isinstance(found, str):
        # whichever class runs, when they all take DATABASES from one place, that is it
        each = [_resolve(n, None, classes, scope) for n in classes]
        places = {(c.where, c.unknown) for c in each}
        return each[0] if len(places) == 1 and not each[0].unknown else Chosen(unknown=found)
    name, named_at = found
    if name not in classes:
        return Chosen(unknown=f"the django-configurations class {name!r} ({VAR} at "
                              f"{named_at.label()}) is not a Configuration class of the "
                              f"settings module ({', '.join(sorted(classes))})")
    return _resolve(name, named_at, classes, scope)


def _resolve(name: str, named_at: Source | None, classes: dict[str, tuple[str, ast.ClassDef]],
             scope: PyScope) -> Chosen:
    """Class `name`'s DATABASES: the first class of its MRO that defines it."""
    mro = _mro(name, classes)
    # class bodies, bases first, see the module's names and their own earlier ones
    inner = PyScope(path=scope.path, env=scope.env, cpus=scope.cpus, names=dict(scope.names))
    for n in reversed(mro):
        block_names(classes[n][1].body, inner)
    named = f" ({VAR} at {named_at.label()})" if named_at is not None else ""
    for n in mro:
        path, cls = classes[n]
        stmt = _defined(cls)
        if stmt is None:
            continue
        here = PyScope(path=path, env=scope.env, cpus=scope.cpus, names=inner.names)
        where = Source(path=path, line=stmt.lineno, key=f"{n}.DATABASES")
        why_prefix = f"Django DATABASES of the django-configurations class {name}{named}: " \
                     f"{n}.DATABASES at {where.label()}"
        if isinstance(stmt, ast.FunctionDef):
            got = _method_result(stmt, here)
            if isinstance(got, str):
                return Chosen(where=where, unknown=f"{why_prefix} is computed by a method: "
                                                   f"{got}")
            return Chosen(databases=got, where=where)
        if not isinstance(stmt, ast.Assign | ast.AnnAssign) or stmt.value is None:
            return Chosen(where=where, unknown=f"{why_prefix} is set in a branch of the "
                                               "class body, not read here")
        value = stmt.value
        if isinstance(value, ast.Call) and dotted(value.func).endswith("DatabaseURLValue"):
            return Chosen(url_call=value, scope=here, where=where)
        got_value = evaluate(value, here)
        if got_value is None or is_unknown(got_value) or not isinstance(got_value.value, dict):
            return Chosen(where=where, unknown=f"{why_prefix} is `{ast.unparse(value)[:60]}`, "
                                               "not read here")
        return Chosen(databases=got_value, where=where)
    return Chosen()  # no class defines it: the module-level DATABASES


def url_value_alias(ctx: StackContext, call: ast.Call, scope: PyScope
                    ) -> tuple[str, dict[str, Val], str | None, Source | None]:
    """(alias, settings, URL, its source) of `values.DatabaseURLValue(...)`: the URL
    None when neither the variable nor the default is read."""
    kw = {k.arg: k.value for k in call.keywords if k.arg}

    def text(key: str, default: str | None) -> str | None:
        if key not in kw:
            return default
        got = evaluate(kw[key], scope)
        return got.value if got is not None and isinstance(got.value, str | type(None)) \
            else default

    alias = text("alias", "default") or "default"
    prefix = (text("environ_prefix", None) or "").removesuffix("_")
    env_name = text("environ_name", "DATABASE_URL") or "DATABASE_URL"
    full = f"{prefix}_{env_name}" if prefix else env_name
    environ = evaluate(kw["environ"], scope) if "environ" in kw else None
    opts: dict[str, Val] = {}
    for key, setting in _PARSE_KEYS.items():
        if key in kw:
            opts[setting] = evaluate(kw[key], scope) or Val(None, scope.src(kw[key]))
    if environ is None or environ.value is not False:
        var = ctx.env(full)
        if (var.value is None) if var is not None else ctx.env_from_hidden(full) is not None:
            # set where the repository does not hold it: the scheme (engine) is not known
            return alias, opts, None, None
        if var is not None and var.value:
            return alias, opts, var.value, ctx.env_source(full)
    node = call.args[0] if call.args else kw.get("default")
    default = evaluate(node, scope) if node is not None else None
    if default is not None and isinstance(default.value, str):
        return alias, opts, default.value, replace(default.source,
                                                   key=f"DatabaseURLValue default, {full} unset")
    return alias, opts, None, None


def unread_pool_key(trees: list[tuple[str, ast.Module]]) -> Source | None:
    """Where the settings write a `"pool"` key (a dict key or an item assignment): an
    OPTIONS pool the reader did not follow, when DATABASES was not read."""
    for path, tree in trees:
        for node in ast.walk(tree):
            keys: list[ast.expr | None] = []
            if isinstance(node, ast.Dict):
                keys = list(node.keys)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                keys = [node.slice]
            for k in keys:
                if isinstance(k, ast.Constant) and k.value == "pool":
                    return Source(path=path, line=k.lineno, key='OPTIONS "pool"')
    return None


def container_module_files(app: AppSource | None, image: str, rel: str) -> list[str]:
    """The app-relative paths of module `rel` (`mysite/settings`) as imported in the
    image: under WORKDIR (the process's directory, on sys.path), mapped back through the
    Dockerfile's COPY (a folder's contents go to its destination: `COPY site .` puts
    site/mysite/settings.py at WORKDIR/mysite/settings.py). Later copies first."""
    from advisor.read.apps.cmdline import dockerfile_copies, pick_dockerfile

    if app is None:
        return []
    f = pick_dockerfile(app, image)[0] if image else None
    if f is None:
        files = sorted(app.of_kind("dockerfile"), key=lambda x: (x.rel.count("/"), x.rel))
        if len(files) != 1:
            return []
        f = files[0]
    copies, workdir = dockerfile_copies(f.text)
    out: list[str] = []
    for tail in (f"{rel}.py", f"{rel}/__init__.py"):
        path = posixpath.join(workdir, tail)
        for c in reversed(copies):
            if path.startswith(c.dest.rstrip("/") + "/"):
                inner = path[len(c.dest.rstrip("/")) + 1:]
                out.append(posixpath.normpath(posixpath.join(c.src, inner)))
            elif path == posixpath.join(c.dest, posixpath.basename(c.src)) \
                    or path == c.dest:
                out.append(c.src)
    return out
