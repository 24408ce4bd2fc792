"""Which JS/TS files a container's Node process loads: the module its command runs and
every module of the app that one imports, at any depth (the JS side of
apps/pyentry.py, whose import_closure walks both).

The entry: `node server.js`, `ts-node src/main.ts`, `nodemon app.js`, a compiled
`node dist/main.js` read as its source `src/main.ts` (dist/ is not in the repository),
`nest start` (nest-cli's defaults: src/main.ts), `npm start` / `npm run X` / `yarn X`
through the app's package.json scripts, and npm's own default for `npm start` without
a start script: `node server.js` (npm docs, npm-start: "If there is a server.js file in
the root of your package, then npm will default the start command to node
server.js"). Imports: `require("./x")`, `import ... from "./x"`, `import("./x")`,
`export ... from "./x"`, resolved as Node and TypeScript do (x.js, x.ts, x/index.*; a
`.js` written in TypeScript source is its `.ts`); a path alias (`@/x`, `~/x`, `#x`) is
matched against the app's files. A `require(expr)` not written as a string, or an
import that names neither a file nor a declared package, leaves the walk partial:
what it loads is not known, so the files not reached may still run.
Pure: reads the app's files as scanned.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from advisor.read.apps.base import StackContext
from advisor.read.apps.pyentry import import_closure
from advisor.read.apps.source import AppFile

if TYPE_CHECKING:
    from advisor.read.apps.jssource import JsModule

_RUNNERS = frozenset({"node", "nodejs", "ts-node", "ts-node-dev", "tsx", "nodemon",
                      "babel-node", "bun", "pm2-runtime"})
_MANAGERS = frozenset({"npm", "yarn", "pnpm"})
_EXTS = (".ts", ".js", ".mts", ".mjs", ".cts", ".cjs", ".tsx", ".jsx")
_BUILD_DIRS = ("dist", "build", "out")
MAX_SCRIPT_DEPTH = 4  # npm start -> npm run serve -> node dist/main.js
_BUILTINS = frozenset({
    "assert", "async_hooks", "buffer", "child_process", "cluster", "console", "crypto",
    "dgram", "dns", "events", "fs", "http", "http2", "https", "inspector", "module",
    "net", "os", "path", "perf_hooks", "process", "querystring", "readline", "repl",
    "stream", "string_decoder", "timers", "tls", "tty", "url", "util", "v8", "vm",
    "worker_threads", "zlib"})
_STATIC = re.compile(r"""(?:\brequire\s*\(\s*|\bimport\s*\(\s*|\bfrom\s+|\bimport\s+)"""
                     r"""(['"`])([^'"`\n$]+)\1""")
_DYNAMIC = re.compile(r"""\b(?:require|import)\s*\(\s*(?![\s'"`)])([^)\n]*)""")


class Reach(Struct, frozen=True):
    """The files the process loads from `entry`; `partial`: why files not in `files`
    may still load (a dynamic require, an import not resolved), empty when none may."""

    entry: str
    files: frozenset[str]  # AppFile.path
    partial: tuple[str, ...] = ()


def js_reach(ctx: StackContext) -> Reach | None:
    """What the container's Node process loads; None when its command names no module
    among the app's files (then which files run is not decided). Made once per
    container."""
    cached = ctx.cache.get("js-reach", False)
    if cached is not False:
        return cached  # type: ignore[return-value]
    found = ctx.cache["js-reach"] = _reach(ctx)
    return found


def _reach(ctx: StackContext) -> Reach | None:
    files = ctx.files("js")
    by_rel = {f.rel: f for f in files}
    entries = _entries(ctx, by_rel)
    if not entries:
        return None
    declared = _declared(ctx)
    partial: list[str] = []

    def imported(f: AppFile) -> list[str]:
        out: list[str] = []
        for m in _STATIC.finditer(f.text):
            spec = m.group(2)
            target = _resolve(f, spec, by_rel, declared)
            if target is None:
                line = f.text.count("\n", 0, m.start()) + 1
                partial.append(f"{f.path}:{line} imports {spec!r}, not resolved here")
            out.extend(target or ())
        for m in _DYNAMIC.finditer(f.text):
            if ".json" in m.group(1):
                continue  # a JSON file (sequelize-cli's config/config.json): no code
            line = f.text.count("\n", 0, m.start()) + 1
            partial.append(f"{f.path}:{line} loads a module named at run time "
                           f"({m.group(0).strip()[:60]})")
        return out

    seen = import_closure(files, entries, imported, suffix=False)
    if seen is None:
        return None
    return Reach(entry=entries[0], files=frozenset(seen), partial=tuple(partial))


def _package_doc(ctx: StackContext, f: AppFile) -> dict[str, Any] | None:
    """package.json `f` as its JSON object (None when it is not one), parsed once per
    tree: kept on the app's root, as every container of the app and every script level
    asks again."""
    memo: dict[tuple[str, str], dict[str, Any] | None] = \
        ctx.app.root.__dict__.setdefault("package_json_docs", {}) if ctx.app is not None \
        else {}
    key = (f.path, f.text)
    if key not in memo:
        try:
            data = json.loads(f.text)
        except json.JSONDecodeError:
            data = None
        memo[key] = data if isinstance(data, dict) else None
    return memo[key]


def _root_package(ctx: StackContext) -> dict[str, Any] | None:
    """The app's own package.json (at its folder), parsed."""
    f = next((f for f in ctx.files("package-json") if f.rel == "package.json"), None)
    return _package_doc(ctx, f) if f is not None else None


def _declared(ctx: StackContext) -> dict[str, str]:
    """{package name: its workspace folder ("" for a package not in the workspace)} of
    every package the app's package.json files declare, and the workspace packages'
    own names."""
    out: dict[str, str] = {}
    for f in ctx.files("package-json"):
        data = _package_doc(ctx, f)
        if data is None:
            continue
        if f.package and isinstance(data.get("name"), str):
            out[data["name"]] = f.package
        for key in ("dependencies", "devDependencies", "optionalDependencies",
                    "peerDependencies"):
            section = data.get(key)
            if isinstance(section, dict):
                for name in section:
                    out.setdefault(name, "")
    return out


def _candidates(path: str) -> list[str]:
    """The files Node or TypeScript load for `path`: itself, with an extension, its
    index; a `.js` of TypeScript source is its `.ts`."""
    stem = re.sub(r"\.[cm]?js$", "", path)
    out = [path, *(path + e for e in _EXTS), *(f"{path}/index{e}" for e in _EXTS)]
    if stem != path:
        out += [stem + e for e in _EXTS]
    return out


def _resolve(f: AppFile, spec: str, by_rel: dict[str, AppFile],
             declared: dict[str, str]) -> list[str] | None:
    """The app files `spec`, imported by `f`, loads ([] for a package or a non-code
    file); None when it names nothing known."""
    if spec.startswith("."):
        folder = posixpath.dirname(f.rel)
        base = posixpath.normpath(posixpath.join(folder, spec))
        found = next((c for c in _candidates(base) if c in by_rel), None)
        if found is not None:
            return [found]
        # a JSON, CSS or asset file: no code; else a file the scan left out
        return [] if re.search(r"\.(json|css|scss|svg|png|html|graphql|node)$", spec) \
            else None
    name = spec.removeprefix("node:")
    top = "/".join(name.split("/")[:2]) if name.startswith("@") else name.split("/")[0]
    if spec.startswith("node:") or top in _BUILTINS or name in _BUILTINS:
        return []
    if top in declared:
        folder = declared[top]
        return [r for r, g in by_rel.items() if folder and g.package == folder] \
            if folder else []
    # a path alias (tsconfig paths, `@/x`, `~/x`, `#x`, a baseUrl `src/x`): the app's
    # files it may name, matched from any folder (more files, never fewer)
    bare = re.sub(r"^(?:[@~#]/?|[\w-]+:)", "", spec).lstrip("/")
    if "/" in bare and re.match(r"@[\w-]+/", spec):
        bare = bare.split("/", 1)[1]  # `@app/db/x`: the alias is `@app`
    wanted = set(_candidates(bare))
    hits = [r for r in by_rel if r in wanted or any(r.endswith("/" + w) for w in wanted)]
    # a package not declared here (express beside @nestjs/platform-express, a
    # transitive dependency) loads no app file; an alias that names none is not known
    return hits or (None if re.match(r"[~#]|@/", spec) else [])


def _entries(ctx: StackContext, by_rel: dict[str, AppFile]) -> list[str]:
    """The app files the container's command runs (normally one)."""
    from advisor.read.apps.cmdline import command_line

    line = command_line(ctx.container, ctx.app, [])
    for segment in reversed(line.segments()):
        found = _from_words([w.text for w in segment], ctx, by_rel, 0)
        if found:
            return found
    return []


def _scripts(ctx: StackContext) -> dict[str, str]:
    data = _root_package(ctx)
    scripts = data.get("scripts") if data is not None else None
    return {k: v for k, v in scripts.items() if isinstance(v, str)} \
        if isinstance(scripts, dict) else {}


def _from_words(words: list[str], ctx: StackContext, by_rel: dict[str, AppFile],
                depth: int) -> list[str]:
    if not words or depth > MAX_SCRIPT_DEPTH:
        return []
    program = words[0].rsplit("/", 1)[-1]
    rest = words[1:]
    if program in ("npx", "dotenv", "env", "cross-env") and rest:
        # `npx ts-node x.ts`; dotenv-cli's `dotenv -e .env -- nest start`
        if "--" in rest:
            return _from_words(rest[rest.index("--") + 1:], ctx, by_rel, depth)
        args = [w for w in rest if not w.startswith("-") and "=" not in w]
        return _from_words(args, ctx, by_rel, depth) if program == "npx" else \
            _from_words(rest[next((i for i, w in enumerate(rest) if not w.startswith("-")
                                   and "=" not in w), len(rest)):], ctx, by_rel, depth)
    if program in _RUNNERS:
        for w in rest:
            if w.startswith("-"):
                continue
            found = _script_file(w, by_rel)
            if found:
                return [found]
            if w in (".", "./"):
                return _package_main(ctx, by_rel)
        return []
    if program == "nest" and rest[:1] == ["start"]:
        return [r for r in ("src/main.ts", "src/main.js") if r in by_rel][:1]
    if program in _MANAGERS:
        args = [w for w in rest if not w.startswith("-")]
        if args[:1] in (["run"], ["run-script"]):
            args = args[1:]
        if not args:
            return []
        scripts = _scripts(ctx)
        name = "start" if args[0] == "start" else args[0]
        script = scripts.get(name)
        if script is None:
            # npm start without a start script: `node server.js` (npm-start docs)
            return ["server.js"] if name == "start" and "server.js" in by_rel else []
        for part in re.split(r"&&|\|\||;", script):
            try:
                found = _from_words(shlex.split(part), ctx, by_rel, depth + 1)
            except ValueError:
                continue
            if found:
                return found
    return []


def _script_file(word: str, by_rel: dict[str, AppFile]) -> str | None:
    """The app file `node <word>` runs: itself, or for a compiled build (dist/main.js,
    not in the repository) its source (src/main.ts)."""
    path = posixpath.normpath(word)
    found = next((c for c in _candidates(path) if c in by_rel), None)
    if found is not None:
        return found
    head, _, tail = path.partition("/")
    if head in _BUILD_DIRS and tail:
        for base in (f"src/{tail}", tail):
            found = next((c for c in _candidates(base) if c in by_rel), None)
            if found is not None:
                return found
    return None


def _package_main(ctx: StackContext, by_rel: dict[str, AppFile]) -> list[str]:
    data = _root_package(ctx)
    main = data.get("main") if data is not None else None
    found = _script_file(main, by_rel) if isinstance(main, str) else None
    return [found] if found else []


def served(ctx: StackContext, modules: list[JsModule], makes: Callable[[JsModule], bool],
           what: str) -> tuple[list[JsModule], list[JsModule]]:
    """(the modules of `modules` the process loads, those it may load) for a reader
    whose pools `makes` says a module constructs (`what`, as said). A module the entry
    does not reach, when the walk is complete, is not the process's (sequelize-cli's
    models/index.js, a migrations CLI's data source): left out, said once. Without an
    entry, or when the entry reaches none of them, every module may be loaded (as
    apps/sqlalchemy.py's _served_modules: imports made by name are not followed)."""
    reach = js_reach(ctx)
    if reach is None:
        return [], modules
    makers = [m for m in modules if makes(m)]
    loaded = [m for m in modules if m.file.path in reach.files]
    rest = [m for m in modules if m.file.path not in reach.files]
    if makers and not any(m in makers for m in loaded):
        ctx.notices.append(f"{ctx.container.name}: no {what} is in a module {reach.entry} "
                           "(its command's entry) imports; every one of the application "
                           "source is counted (an upper bound: imports made by name are "
                           "not followed)")
        return [], modules
    left = [m for m in rest if m in makers]
    if left and not reach.partial:
        ctx.notices.append(f"{ctx.container.name}: {what} at "
                           f"{', '.join(m.file.path for m in left)} not counted: "
                           f"{reach.entry} (its command's entry) does not import it, at any "
                           "depth (a CLI's or a scaffold's, not the server's)")
        return loaded, []
    if left:
        ctx.notices.append(f"{ctx.container.name}: whether {reach.entry} (its command's "
                           f"entry) loads {', '.join(m.file.path for m in left)} ({what}) is "
                           f"not known: {reach.partial[0]}")
    return loaded, rest
