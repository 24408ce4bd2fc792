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

from advisor.read import jsontext
from advisor.read.apps.base import StackContext
from advisor.read.apps.pyentry import import_closure
from advisor.read.apps.source import AppFile
from advisor.read.shellwords import bounded

if TYPE_CHECKING:
    from advisor.read.apps.jssource import JsModule

_RUNNERS = frozenset({"node", "nodejs", "ts-node", "ts-node-dev", "tsx", "nodemon",
                      "babel-node", "bun"})
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
# every `require(` / `import(`: one whose argument is not a plain string literal (an
# expression, a template literal with `${...}`, a concatenation) loads a module named at
# run time
_LOAD = re.compile(r"""\b(?:require|import)\s*\(""")
_ARG_END = re.compile(r"\s*[,)]")
_LITERAL_ARG = re.compile(r"""\s*(?:'[^'\n]*'|"[^"\n]*"|`[^`$]*`)\s*[,)]""")
# programs that start other programs, read as they do: concurrently's quoted commands,
# npm-run-all's script names, pm2's script or ecosystem file
_CONCURRENTLY = frozenset({"concurrently"})
_RUN_ALL = frozenset({"npm-run-all", "run-p", "run-s", "npm-run-all2"})
_PM2 = frozenset({"pm2", "pm2-runtime", "pm2-docker", "pm2-dev"})
_WRAPPERS = frozenset({"npx", "dotenv", "env", "cross-env"})
_PROGRAMS = _RUNNERS | _MANAGERS | _CONCURRENTLY | _RUN_ALL | _PM2 | {"nest"}


class Reach(Struct, frozen=True):
    """The files the process loads from `entry`; `partial`: why files not in `files`
    may still load (a dynamic require, an import not resolved), empty when none may."""

    entry: str  # the entries, as said: `server.js` or `server.js, worker.js`
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
    partial: list[str] = []
    entries = _entries(ctx, by_rel, partial)
    if not entries:
        return None
    declared = _declared(ctx)

    def imported(f: AppFile) -> list[str]:
        out: list[str] = []
        for m in _STATIC.finditer(f.text):
            spec = m.group(2)
            if "(" in f.text[m.start():m.start(1)] and not _ARG_END.match(f.text, m.end()):
                continue  # `require('./jobs/' + name)`: named at run time (below)
            target = _resolve(f, spec, by_rel, declared)
            if target is None:
                line = f.text.count("\n", 0, m.start()) + 1
                partial.append(f"{f.path}:{line} imports {spec!r}, not resolved here")
            out.extend(target or ())
        for m in _LOAD.finditer(f.text):
            if _LITERAL_ARG.match(f.text, m.end()):
                continue  # a string: read above
            arg = f.text[m.end():].split("\n", 1)[0]
            if ".json" in arg.split(")", 1)[0]:
                continue  # a JSON file (sequelize-cli's config/config.json): no code
            line = f.text.count("\n", 0, m.start()) + 1
            partial.append(f"{f.path}:{line} loads a module named at run time "
                           f"({(m.group(0) + arg).strip()[:60]})")
        return out

    seen = import_closure(files, entries, imported, suffix=False)
    if seen is None:
        return None
    return Reach(entry=", ".join(entries), files=frozenset(seen), partial=tuple(partial))


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
            data = jsontext.loads(f.text)
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


def _entries(ctx: StackContext, by_rel: dict[str, AppFile], unread: list[str]) -> list[str]:
    """The app files the container's command runs: every program of it (`&`, `&&`,
    `;`, `||`, `|`, the lines of a `sh -c` script), each read as an entry; `unread`
    gets each program that runs the app's code from a file not read here."""
    from advisor.read.apps.cmdline import command_line

    line = command_line(ctx.container, ctx.app, [])
    out: list[str] = []
    for segment in line.segments():
        for words in _programs([w.text for w in segment]):
            out += _from_words(words, ctx, by_rel, 0, unread)
    return list(dict.fromkeys(out))


def _programs(words: list[str]) -> list[list[str]]:
    """`words` (one command: segments() and _split_commands split at the shell's
    separators, `&` and a script's newlines) split into the programs they run: at a
    Node program named after another's arguments. A wrapper's program (`npx ts-node
    x.ts`, `nodemon --exec ts-node x.ts`) stays its own."""
    out: list[list[str]] = [[]]
    for w in words:
        cur = out[-1]
        name = w.rsplit("/", 1)[-1]
        if cur and name in _PROGRAMS and cur[-1] != "--" and not cur[-1].startswith("-") \
                and cur[0].rsplit("/", 1)[-1] not in _WRAPPERS:
            out.append([w])
        else:
            cur.append(w)
    return [p for p in out if p]


def _script_words(script: str) -> list[list[str]]:
    """The programs a package.json script runs (split as its shell splits it)."""
    from advisor.read.apps.cmdline import _split_commands

    out: list[list[str]] = []
    for text, _ in _split_commands(script):
        try:
            out += _programs(shlex.split(bounded(text)))
        except ValueError:
            continue
    return out


def _scripts(ctx: StackContext) -> dict[str, str]:
    data = _root_package(ctx)
    scripts = data.get("scripts") if data is not None else None
    return {k: v for k, v in scripts.items() if isinstance(v, str)} \
        if isinstance(scripts, dict) else {}


def _run_script(name: str, ctx: StackContext, by_rel: dict[str, AppFile], depth: int,
                unread: list[str]) -> list[str]:
    """The entries of `npm run <name>` (every program of its script)."""
    script = _scripts(ctx).get(name)
    if script is None:
        # npm start without a start script: `node server.js` (npm-start docs)
        return ["server.js"] if name == "start" and "server.js" in by_rel else []
    out: list[str] = []
    for words in _script_words(script):
        out += _from_words(words, ctx, by_rel, depth + 1, unread)
    return out


def _from_words(words: list[str], ctx: StackContext, by_rel: dict[str, AppFile],
                depth: int, unread: list[str]) -> list[str]:
    if not words or depth > MAX_SCRIPT_DEPTH:
        return []
    program = words[0].rsplit("/", 1)[-1]
    rest = words[1:]
    if program in _WRAPPERS and rest:
        # `npx ts-node x.ts`; dotenv-cli's `dotenv -e .env -- nest start`
        if "--" in rest:
            return _from_words(rest[rest.index("--") + 1:], ctx, by_rel, depth, unread)
        args = [w for w in rest if not w.startswith("-") and "=" not in w]
        return _from_words(args, ctx, by_rel, depth, unread) if program == "npx" else \
            _from_words(rest[next((i for i, w in enumerate(rest) if not w.startswith("-")
                                   and "=" not in w), len(rest)):], ctx, by_rel, depth,
                        unread)
    if program in _RUNNERS:
        named = [w for w in rest if not w.startswith("-")]
        for w in named:
            found = _script_file(w, by_rel)
            if found:
                return [found]
            if w in (".", "./"):
                return _package_main(ctx, by_rel)
        if named and "node_modules/" not in named[0]:
            unread.append(f"{' '.join(words)[:60]} runs a file not read here")
        return []
    if program == "nest" and rest[:1] == ["start"]:
        return [r for r in ("src/main.ts", "src/main.js") if r in by_rel][:1]
    if program in _MANAGERS:
        args = [w for w in rest if not w.startswith("-")]
        if args[:1] in (["run"], ["run-script"]):
            args = args[1:]
        if not args:
            return []
        return _run_script(args[0], ctx, by_rel, depth, unread)
    if program in _CONCURRENTLY:
        return _concurrently(rest, ctx, by_rel, depth, unread)
    if program in _RUN_ALL:
        names = [w for w in rest if not w.startswith("-")]
        return [e for n in _script_names(names, ctx)
                for e in _run_script(n, ctx, by_rel, depth, unread)]
    if program in _PM2:
        return _pm2(words, ctx, by_rel, unread)
    return []


# concurrently's options that take a value (concurrently --help, 8.x)
_CONCURRENTLY_VALUED = frozenset({"-n", "--names", "-c", "--prefix-colors", "-p", "--prefix",
                                  "-l", "--prefix-length", "-t", "--timestamp-format",
                                  "-m", "--max-processes", "-s", "--success",
                                  "--restart-tries", "--restart-after", "--name-separator",
                                  "--default-input-target", "--pad-prefix"})


def _concurrently(rest: list[str], ctx: StackContext, by_rel: dict[str, AppFile],
                  depth: int, unread: list[str]) -> list[str]:
    """concurrently's commands: each argument a command line, `npm:x` npm run x."""
    out: list[str] = []
    skip = False
    for w in rest:
        if skip or w.startswith("-"):
            skip = not skip and w in _CONCURRENTLY_VALUED
            continue
        for short in ("npm:", "yarn:", "pnpm:", "bun:"):
            if w.startswith(short):
                out += [e for n in _script_names([w[len(short):].split()[0]], ctx)
                        for e in _run_script(n, ctx, by_rel, depth, unread)]
                break
        else:
            for words in _script_words(w):
                out += _from_words(words, ctx, by_rel, depth + 1, unread)
    return out


def _script_names(patterns: list[str], ctx: StackContext) -> list[str]:
    """The package.json scripts `patterns` name (npm-run-all's `start:*` globs)."""
    import fnmatch

    scripts = _scripts(ctx)
    out: list[str] = []
    for p in patterns:
        p = p.split()[0] if p.split() else p
        out += [n for n in scripts if fnmatch.fnmatchcase(n, p)] if "*" in p else [p]
    return out


# an app's `script: './server.js'` (ecosystem.config.js, pm2.json) or `script: app.js`
# (process.yml); unquoted in JS, an expression (`path.join(...)`), not read
_PM2_SCRIPT = re.compile(r"""\bscript["']?\s*:\s*(?:(['"`])([^'"`\n]*)\1|([^\s,}\]]+))""")
_PM2_CONFIG = re.compile(r"(?:^|/)(?:ecosystem[^/]*|pm2[^/]*|process[^/]*)\.(?:c?js|json|ya?ml)$")


def _pm2(words: list[str], ctx: StackContext, by_rel: dict[str, AppFile],
         unread: list[str]) -> list[str]:
    """pm2's program: the script it starts, or each app's `script` of its ecosystem
    file; one not read leaves the walk partial."""
    named = [w for w in words[1:] if not w.startswith("-")
             and w not in ("start", "restart", "reload", "startOrRestart", "startOrReload")]
    if not named:
        return []
    target = named[0]
    if _PM2_CONFIG.search(target) is None:
        found = _script_file(target, by_rel)
        if found is None:
            unread.append(f"{' '.join(words)[:60]} starts {target}, not read here")
        return [found] if found else []
    rel = posixpath.normpath(target)
    config = next((f for f in (*ctx.files("pm2"), *by_rel.values()) if f.rel == rel), None)
    if config is None:
        unread.append(f"{' '.join(words)[:60]}: {target} not read here")
        return []
    out: list[str] = []
    before = len(unread)
    for m in _PM2_SCRIPT.finditer(config.text):
        name = m.group(2) if m.group(1) else None
        script = _script_file(name, by_rel) if name else None
        if script is None:
            unread.append(f"{config.path}: pm2 runs {name or m.group(3)}, not read here")
        else:
            out.append(script)
    if not out and len(unread) == before:
        unread.append(f"{config.path}: no pm2 app's script read")
    return out


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
                           f"{_its(reach)} imports; every one of the application "
                           "source is counted (an upper bound: imports made by name are "
                           "not followed)")
        return [], modules
    left = [m for m in rest if m in makers]
    if left and not reach.partial:
        ctx.notices.append(f"{ctx.container.name}: {what} at "
                           f"{', '.join(m.file.path for m in left)} not counted: "
                           f"{reach.entry} {_its(reach)} "
                           f"{'do' if ', ' in reach.entry else 'does'} not import it, at any "
                           "depth (a CLI's or a scaffold's, not the server's)")
        return loaded, []
    if left:
        ctx.notices.append(f"{ctx.container.name}: whether {reach.entry} {_its(reach)} "
                           f"loads {', '.join(m.file.path for m in left)} ({what}) is "
                           f"not known: {reach.partial[0]}")
    return loaded, rest


def _its(reach: Reach) -> str:
    return "(its command's entries)" if ", " in reach.entry else "(its command's entry)"
