"""JS/TS sources of an app, tokenized once per container; helpers the JS stacks share."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from msgspec.structs import replace

from advisor.model import Route, Source
from advisor.read import jsontext
from advisor.read.apps.appcache import JS_KEYS, file_keys, run_cache
from advisor.read.apps.base import StackContext
from advisor.read.apps.cmdline import dockerfile_env
from advisor.read.apps.jsparse import UNKNOWN, JsParser, JsScope, Tok, module_consts, tokenize
from advisor.read.apps.nodeconfig import NodeConfig
from advisor.read.apps.npmlock import npm_pin
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.pyeval import Val
from advisor.read.apps.source import AppFile, auxiliary_script
from advisor.read.apps.urls import route_from_env, route_from_url


class JsModule:
    """A JS/TS file as the readers read it; tokenized and its top-level constants
    evaluated only when a reader asks (a warm run asks for the few that matter)."""

    def __init__(self, file: AppFile, ctx: StackContext) -> None:
        self.file = file
        self._ctx = ctx
        self._toks: list[Tok] | None = None
        self._parser: JsParser | None = None

    @property
    def toks(self) -> list[Tok]:
        if self._toks is None:
            self._toks = tokenize(self.file.text)
        return self._toks

    @property
    def parser(self) -> JsParser:
        if self._parser is None:
            ctx = self._ctx
            scope = JsScope(path=self.file.path, env=ctx.env_map(), cpus=ctx.cpus, names={},
                            node_config=node_config(ctx).get,
                            config_member=lambda name: config_member(ctx, name))
            module_consts(self.toks, scope)
            self._parser = JsParser(self.toks, scope)
        return self._parser


def node_config(ctx: StackContext) -> NodeConfig:
    """The container's node-config, made once: its config-folder files (JSON/YAML and JS
    alike; nodeconfig.NodeConfig picks the folder), env, the image's Dockerfile ENV and
    the major version of config the app's lock installs (v3 and v4 order files apart)."""
    found = ctx.cache.get("node-config")
    if not isinstance(found, NodeConfig):
        files = ctx.files("node-config") + [f for f in ctx.files("js")
                                            if f.rel.startswith("config/") or "/config/" in f.rel]
        pin = npm_pin(ctx.app, "config")
        found = ctx.cache["node-config"] = NodeConfig(
            files, ctx.env_map(), dockerfile_env(ctx.app, ctx.container.image),
            int(pin[0].split(".")[0]) if pin is not None else None)
    return found


def config_member(ctx: StackContext, name: str) -> Val | None:
    """`config.NAME` as the app defines it: the value, for this container, of its one
    `NAME: <expr>` (an object literal's member) or `const NAME = <expr>` whose expression
    reads process.env (`DB_POOL_MAX: parseInt(process.env.DB_POOL_MAX || '20', 10)`): the
    env's value when the container sets it, unknown when a Secret does, else the code's
    default, cited where it is written. None when no definition reads the env, one is not
    read, or two disagree (a test's mock config holds a literal, and is not one)."""
    cache = ctx.cache.setdefault("js-config-members", {})
    assert isinstance(cache, dict)
    if name in cache:
        return cache[name]
    if cache.get(_READING):
        return None  # a definition that reads another config member: not followed
    cache[_READING] = True
    try:
        found = [v for module in js_modules(ctx, name) if "process.env" in module.file.text
                 for v in _definitions(module, name)]
    finally:
        cache[_READING] = False
    values = {(v.value, v.hidden) for v in found if v is not None}
    one = found[0] if found and None not in found and len(values) == 1 else None
    cache[name] = one
    return one


_READING = " reading"  # no member name: the flag of a lookup under way


def _definitions(module: JsModule, name: str) -> list[Val | None]:
    """The values of `module`'s definitions of `name` that read process.env (None: one
    not read)."""
    toks = module.toks
    out: list[Val | None] = []
    for k, tok in enumerate(toks):
        if tok.text != name or k == 0 or k + 2 >= len(toks):
            continue
        before, after = toks[k - 1].text, toks[k + 1].text
        if not ((after == ":" and before in ("{", ",")) or
                (after == "=" and before in ("const", "let", "var"))):
            continue
        v, end = module.parser.expr(k + 2)
        if not any(toks[j].text == "process" and toks[j + 2].text == "env"
                   for j in range(k + 2, min(end, len(toks) - 2))):
            continue  # a literal (a test's mock), an interface's type
        if v is not None and v.value is not UNKNOWN and v.source.path == module.file.path:
            # not the container's variable: the code's default
            v = replace(v, source=replace(v.source, key=f"{name} (default)"))
        out.append(v if v is not None and (v.value is not UNKNOWN or v.hidden) else None)
    return out


_SOURCE_DIRS = ("src", "lib", "server", "app", "config")


def _skipped(rel: str, has_source_dir: bool = False) -> bool:
    """Tests, migrations, benchmark/example scripts; and when the app keeps its code in
    src/, lib/, server/ or app/, scripts in its other top folders (load tests, tools).
    `rel`: the path in the app, or in the workspace package the file is from."""
    name = rel.rsplit("/", 1)[-1]
    if "/" in rel and has_source_dir and rel.split("/", 1)[0] not in _SOURCE_DIRS \
            and rel.split("/", 1)[0] != "packages":
        return True
    return bool(re.search(r"\.(test|spec)\.[cm]?[jt]s$", name)) or \
        "/migrations/" in f"/{rel}" or auxiliary_script(rel)


def _in_package(f: AppFile) -> str:
    """The file's path in the app, or in the workspace package it is read from (whose
    own src/, scripts/, tests are judged as the app's are)."""
    return f.rel[len(f.package) + 1:] if f.package else f.rel


def js_modules(ctx: StackContext, needle: str, keys: frozenset[str] | None = None,
               where: Callable[[AppFile], bool] | None = None) -> list[JsModule]:
    """The app's JS/TS modules whose text holds `needle`, that `where` accepts, and
    (`keys`, a subset of appcache.JS_KEYS) that hold one of `keys` as an identifier:
    the readers' call names (known from the cache for an unchanged file)."""
    cache = ctx.cache.setdefault("js", {})
    assert isinstance(cache, dict)
    out = []
    files = ctx.files("js")
    has_source_dir = {f.package: False for f in files}
    for f in files:
        top = _in_package(f).split("/", 1)
        if len(top) > 1 and top[0] in _SOURCE_DIRS[:-1]:
            has_source_dir[f.package] = True
    run = run_cache(ctx) if keys is not None else None
    for f in files:
        if needle not in f.text or _skipped(_in_package(f), has_source_dir[f.package]) or \
                (where is not None and not where(f)):
            continue
        module = cache.get(f.path)
        if module is None:
            module = cache[f.path] = JsModule(f, ctx)
        if keys is not None:
            held = ctx.cache.setdefault("js-keys", {})
            assert isinstance(held, dict)
            if f.path not in held:
                held[f.path] = file_keys(f, run, "app-js", JS_KEYS, lambda m=module: m.toks)
            if held[f.path].isdisjoint(keys):
                continue
        out.append(module)
    return out


def dependencies(ctx: StackContext) -> set[str]:
    """Names in dependencies/devDependencies of every package.json in the app."""
    names: set[str] = set()
    for f in ctx.files("package-json"):
        try:
            data = jsontext.loads(f.text)
        except json.JSONDecodeError as exc:
            ctx.problem(replace(ctx.container.source, path=f.path, line=exc.lineno),
                        f"package.json is not valid JSON: {exc.msg}", program="npm")
            continue
        for key in ("dependencies", "devDependencies", "optionalDependencies"):
            section = data.get(key) if isinstance(data, dict) else None
            if isinstance(section, dict):
                names.update(section)
    return names


def dependency_spec(ctx: StackContext, name: str, near: str = "") -> tuple[str, Source] | None:
    """The version range `name` is declared with, and where: in the package.json of the
    folder nearest above `near` (a path relative to the app) that declares it, else the
    first that does. None when no package.json declares it."""
    found: list[tuple[int, str, Source]] = []
    for f in ctx.files("package-json"):
        try:
            data = jsontext.loads(f.text)
        except json.JSONDecodeError:
            continue  # said by dependencies()
        if not isinstance(data, dict):
            continue
        for key in ("dependencies", "devDependencies", "optionalDependencies"):
            section = data.get(key)
            spec = section.get(name) if isinstance(section, dict) else None
            if not isinstance(spec, str):
                continue
            m = re.search(rf'"{re.escape(name)}"\s*:', f.text)
            line = f.text.count("\n", 0, m.start()) + 1 if m else None
            folder = f.rel.rsplit("/", 1)[0] + "/" if "/" in f.rel else ""
            depth = len(folder) if near.startswith(folder) else -1
            found.append((depth, spec, f.cite(line, name, name)))
            break
    if not found:
        return None
    _, spec, source = max(found, key=lambda t: t[0])
    if spec.startswith("catalog:"):
        return catalog_version(ctx, name, spec.removeprefix("catalog:").strip()) or \
            (spec, source)
    return spec, source


def catalog_version(ctx: StackContext, name: str, catalog: str) -> tuple[str, Source] | None:
    """The version pnpm-workspace.yaml's catalog gives `name` (`"typeorm": "catalog:"`
    is the `catalog:` map's, `catalog:<c>` the `catalogs: <c>:` map's; pnpm's default
    catalog is also `catalogs: default:`), and where; None when not found."""
    from advisor.read.sources.k8s import get, line_of, load_yaml_stream

    for f in ctx.files("pnpm-workspace"):
        docs, _ = load_yaml_stream(f.text, f.path)
        doc = docs[0][0] if docs else None
        section = get(doc, "catalogs", catalog or "default")
        if not isinstance(section, dict) and catalog in ("", "default"):
            section = get(doc, "catalog")
        version = section.get(name) if isinstance(section, dict) else None
        if isinstance(version, str | int | float) and not isinstance(version, bool):
            line = line_of(section, name)  # 0-based
            return str(version), f.cite(line + 1 if line is not None else None, name, name)
    return None


def known(v: Val | None) -> bool:
    return v is not None and v.value is not UNKNOWN and v.value is not None


def as_int(v: Val | None) -> int | None:
    return parse_int(str(v.value)) if known(v) else None


def get(obj: Val | None, *path: str) -> Val | None:
    cur = obj
    for key in path:
        if cur is None or not isinstance(cur.value, dict):
            return None
        cur = cur.value.get(key)
    return cur


def may_hold(obj: Val | None, *path: str) -> bool:
    """Whether `path`, not in `obj` as read, may still be set in it: `obj` (or an object
    on the path) is an expression not read statically (an object from another module, a
    call's result), or a literal with a spread of one (`{...config}`). Then the
    library's default for that key is not known to apply."""
    cur = obj
    for key in path:
        if cur is None or cur.value is UNKNOWN:
            return True
        if not isinstance(cur.value, dict):
            return False  # undefined, null: no options
        found = cur.value.get(key)
        if found is None:
            return cur.open
        cur = found
    return cur is not None and cur.value is UNKNOWN  # set, to an expression not read


def unread_member(obj: Val | None, *path: str) -> tuple[str, Val] | None:
    """(dotted path, value) of the first member on `path` of the literal `obj` whose
    value is not read (a call, an import), when that is why `path` is not known."""
    cur = obj
    for k, key in enumerate(path):
        if cur is None or not isinstance(cur.value, dict):
            return None
        found = cur.value.get(key)
        if found is None:
            return None
        if found.value is UNKNOWN:
            return (".".join(path[:k + 1]), found) if found.unread else None
        cur = found
    return None


def options_unread(ctx: StackContext, label: str, where: Source, key: str,
                   options: Val | None = None, path: tuple[str, ...] = ()) -> None:
    """Pool `label`'s options at `where` are not read statically and may set `key`:
    its size is unknown (PA106), never the library's default. With the `options`
    literal and the `path` of `key` in it: the member not read is said, where it is."""
    member = unread_member(options, *path) if path else None
    if member is not None:
        name, v = member
        why = (f"{label}: {name} = {v.unread}, so "
               + (f"{key} is not known" if name == ".".join(path) else
                  f"whether it sets {key} is not known (the library's default applies "
                  "only without it)"))
    else:
        why = (f"{label}: the options at {where.label()} are not read statically (an "
               f"object from another module or a call, or a spread of one), so whether "
               f"they set {key} is not known (the library's default applies only without "
               "it)")
    if why not in ctx.unknown:
        ctx.unknown.append(why)


def route_of(v: Val | None, ctx: StackContext) -> Route | None:
    """Route from a URL value; the container env when the value is not known."""
    if known(v) and isinstance(v.value, str):
        found = route_from_url(v.value, v.source)
        # a template literal whose host part is not known here: the env may say
        return found if found is not None or "${" not in v.value \
            else route_from_env(ctx.container.env)
    return route_from_env(ctx.container.env)


def imports_module(module: JsModule, package: str) -> bool:
    text = module.file.text
    return bool(re.search(rf"""(?:require\(\s*|from\s+|import\s+)["']{re.escape(package)}["']""",
                          text))
