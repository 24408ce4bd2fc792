"""Argo CD Applications and ApplicationSets (argoproj.io): the folders of the repository
they build, and whether a manifest there that no kustomization lists is applied.

Argo CD builds a source `path` by what the folder holds (reposerver GetAppSourceType):
a kustomization is built by kustomize (only what it lists is applied), a Chart.yaml is
a chart, and anything else is a plain directory, of which Argo CD applies the folder's
own .yaml/.yml/.json files, those of its subfolders only with `directory.recurse: true`,
narrowed by the `directory.include` / `exclude` globs (reposerver findManifests). An
ApplicationSet's git directory generator makes one Application per folder its
`directories[].path` patterns match (Go's path.Match: `*` stays within one folder; a
folder an `exclude: true` pattern matches is left out whatever else matches it), its
template's `path` being `{{path}}` (`{{.path.path}}` with goTemplate); its git files
generator makes one per file its `files[].path` patterns match, `{{path}}` being the
folder that holds the file (applicationset docs, Git generator: "path: the path to the
directory containing the matching configuration file"). A plain directory's `*.jsonnet`
files are rendered by Argo CD's built-in Jsonnet (reposerver findManifests: manifestFile
`^.*[.](yaml|yml|json|jsonnet)$`, a `.jsonnet` file evaluated with the app folder and
`directory.jsonnet.libs` as its import paths, TLAs and extVars from
`directory.jsonnet`); a `.libsonnet` file is only imported.

Pure functions over already-loaded objects: folders are resolved and listed through the
callables the caller gives.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from fnmatch import fnmatchcase
from functools import partial
from typing import Any

from msgspec import Struct

from advisor.read.releases import ARGO_GROUP
from advisor.read.sources.k8s import K8sObject, get

ARGO_KINDS = frozenset({"Application", "ApplicationSet"})


class ArgoBuild(Struct, frozen=True):
    """A folder (relative to the root; "" is the root) an Argo CD Application builds."""

    folder: str
    by: K8sObject
    recurse: bool = False  # directory.recurse: a plain folder's subfolders too
    include: str = ""  # directory.include / exclude globs, relative to the folder
    exclude: str = ""
    # directory.jsonnet: libs (relative to the repository root), TLAs and extVars as
    # (name, value, code)
    jsonnet_libs: tuple[str, ...] = ()
    tlas: tuple[tuple[str, str, bool], ...] = ()
    ext_vars: tuple[tuple[str, str, bool], ...] = ()
    # an ApplicationSet's: the generated Application's name once its generator's
    # parameters are put in ("" when not known), and the first TLA or extVar value
    # still templated after that (a parameter not read here: it is not rendered)
    app_name: str = ""
    unfilled: str = ""


def destination(build: ArgoBuild) -> str:
    """The cluster an Application sends its build to: spec.destination's server or name
    (an ApplicationSet's in its template); Argo CD's own cluster when neither is set."""
    spec = build.by.body.get("spec")
    if build.by.kind == "ApplicationSet":
        spec = get(spec, "template", "spec")
    where = get(spec, "destination")
    if isinstance(where, dict):
        for key in ("server", "name"):
            if isinstance(where.get(key), str) and where[key] and "{{" not in where[key]:
                return where[key]
    return "https://kubernetes.default.svc"


def is_argo_cd(obj: K8sObject) -> bool:
    return obj.kind in ARGO_KINDS and obj.api_version.startswith(ARGO_GROUP)


def _sources(spec: Any) -> list[dict]:
    if not isinstance(spec, dict):
        return []
    found = [spec["source"]] if isinstance(spec.get("source"), dict) else []
    if isinstance(spec.get("sources"), list):
        found += [s for s in spec["sources"] if isinstance(s, dict)]
    return found


def _jsonnet_vars(items: Any) -> tuple[tuple[str, str, bool], ...]:
    return tuple((str(v["name"]), str(v.get("value") or ""), v.get("code") is True)
                 for v in items if isinstance(v, dict) and isinstance(v.get("name"), str)
                 ) if isinstance(items, list) else ()


def _build(obj: K8sObject, source: dict, folder: str,
           fill: Callable[[str], str] | None = None) -> ArgoBuild:
    """The build of `source` into `folder`; `fill` puts an ApplicationSet generator's
    parameters into its template's values."""
    directory = source.get("directory") if isinstance(source.get("directory"), dict) else {}
    jsonnet = directory.get("jsonnet") if isinstance(directory.get("jsonnet"), dict) else {}
    libs = jsonnet.get("libs")
    tlas = _jsonnet_vars(jsonnet.get("tlas"))
    ext_vars = _jsonnet_vars(jsonnet.get("extVars"))
    app_name, unfilled = "", ""
    if fill is not None:
        tlas = tuple((n, fill(v), c) for n, v, c in tlas)
        ext_vars = tuple((n, fill(v), c) for n, v, c in ext_vars)
        left = [f"{what} {n} = {v!r}" for what, pairs in (("TLA", tlas), ("extVar", ext_vars))
                for n, v, _c in pairs if "{{" in v]
        unfilled = left[0] if left else ""
        name = get(obj.body, "spec", "template", "metadata", "name")
        app_name = fill(name) if isinstance(name, str) and "{{" not in fill(name) else ""
    return ArgoBuild(folder=folder, by=obj, recurse=directory.get("recurse") is True,
                     include=str(directory.get("include") or ""),
                     exclude=str(directory.get("exclude") or ""),
                     jsonnet_libs=tuple(str(x) for x in libs if isinstance(x, str))
                     if isinstance(libs, list) else (),
                     tlas=tlas, ext_vars=ext_vars, app_name=app_name, unfilled=unfilled)


def argo_builds(objects: list[K8sObject], resolve: Callable[[str], str | None],
                subfolders: Callable[[str], list[str]],
                files: Callable[[str], list[str]] | None = None) -> list[ArgoBuild]:
    """The folders Argo CD Applications and ApplicationSets of `objects` build from a git
    `path` (not a chart of a Helm repository): `resolve(path)` gives a git path as a
    folder of the root (None: not in the repository), `subfolders(folder)` the names of
    a folder's subfolders. A path still holding `{{` after the generator's folder is put
    in is left out (nothing says which folder it is)."""
    out: list[ArgoBuild] = []
    for obj in objects:
        if not is_argo_cd(obj):
            continue
        if obj.kind == "Application":
            for source in _sources(obj.body.get("spec")):
                path = source.get("path")
                if source.get("chart") or not isinstance(path, str) or "{{" in path:
                    continue
                folder = resolve(path)
                if folder is not None:
                    out.append(_build(obj, source, folder))
            continue
        spec = obj.body.get("spec")
        go = isinstance(spec, dict) and spec.get("goTemplate") is True
        sources = _sources(get(spec, "template", "spec"))
        for prefix, folders in _generated(spec, subfolders, files):
            for source in sources:
                path = source.get("path")
                if source.get("chart") or not isinstance(path, str):
                    continue
                for generated in folders:
                    filled = _fill(path, prefix, generated, go)
                    folder = resolve(filled) if "{{" not in filled else None
                    if folder is not None:
                        out.append(_build(obj, source, folder,
                                          partial(_fill, prefix=prefix, folder=generated,
                                                  go=go)))
    return out


def _git_generators(generators: Any, depth: int = 0) -> Iterator[dict]:
    """The git generators of a list, also inside matrix and merge generators."""
    for gen in generators if isinstance(generators, list) else []:
        if not isinstance(gen, dict):
            continue
        if isinstance(gen.get("git"), dict):
            yield gen["git"]
        for nested in ("matrix", "merge"):
            if depth < 2 and isinstance(gen.get(nested), dict):
                yield from _git_generators(gen[nested].get("generators"), depth + 1)


def _patterns(items: Any) -> list[tuple[str, bool]]:
    return [(str(d["path"]), d.get("exclude") is True) for d in items
            if isinstance(d, dict) and isinstance(d.get("path"), str)
            ] if isinstance(items, list) else []


def _generated(spec: Any, subfolders: Callable[[str], list[str]],
               files: Callable[[str], list[str]] | None = None
               ) -> Iterator[tuple[str, list[str]]]:
    """(pathParamPrefix, the folders) of each git directory generator, and of each git
    files generator when `files(folder)` (the names of a folder's files) is given: the
    folders holding the files it matches (walnuts1018/infra's `k8s/apps/*/app.json5`)."""
    for git in _git_generators(get(spec, "generators")):
        prefix = str(git.get("pathParamPrefix") or "")
        patterns = _patterns(git.get("directories"))
        if patterns:
            found: set[str] = set()
            for pattern, exclude in patterns:
                if not exclude:
                    found.update(glob_folders(pattern, subfolders))
            kept = [f for f in sorted(found)
                    if not any(exclude and path_match(p, f) for p, exclude in patterns)]
            yield prefix, kept
        patterns = _patterns(git.get("files"))
        if patterns and files is not None:
            matched: set[str] = set()
            for pattern, exclude in patterns:
                if not exclude:
                    matched.update(glob_files(pattern, subfolders, files))
            held = {f.rpartition("/")[0] for f in matched
                    if not any(exclude and path_match(p, f) for p, exclude in patterns)}
            yield prefix, sorted(held)


def _params(prefix: str, folder: str, go: bool) -> list[tuple[str, str]]:
    """(a template expression's pattern, its value) for the path parameters a git
    generator gives for `folder` (applicationset docs, Git generator: `path`,
    `path.basename`, `path[n]`; with goTemplate `.path.path`, `.path.basename`,
    `index .path.segments n`), behind a pathParamPrefix when one is set."""
    dotted = f"{prefix}.path" if prefix else "path"
    segments = folder.split("/") if folder else []
    base = segments[-1] if segments else ""
    if go:
        at = re.escape("." + dotted)
        out = [(at + r"\.path", folder), (at + r"\.basename", base)]
        out += [(r"index\s+" + at + rf"\.segments\s+{i}", seg)
                for i, seg in enumerate(segments)]
        return out
    at = re.escape(dotted)
    return [(at, folder), (at + r"\.basename", base),
            *((at + rf"\[{i}\]", seg) for i, seg in enumerate(segments))]


def _fill(text: str, prefix: str, folder: str, go: bool) -> str:
    """A template value with the generated folder's path parameters put in (see
    _params); spaces inside the braces are allowed, as Argo CD trims them. Other
    parameters (a files generator's keys, a list generator's) are left as written."""
    for pattern, value in _params(prefix, folder, go):
        text = re.sub(r"\{\{-?\s*" + pattern + r"\s*-?\}\}", lambda _m, v=value: v, text)
    return text


def _segments(pattern: str) -> list[str] | None:
    parts = [p for p in pattern.strip().strip("/").split("/") if p not in ("", ".")]
    return None if ".." in parts else parts


def _go_glob(segment: str) -> str:
    """A path.Match segment in fnmatch's syntax (`[^a]` is `[!a]` there)."""
    return segment.replace("[^", "[!")


def path_match(pattern: str, folder: str) -> bool:
    """Go's path.Match of a folder path: as many segments, each matching."""
    want, have = _segments(pattern), folder.split("/") if folder else []
    return want is not None and len(want) == len(have) and all(
        fnmatchcase(h, _go_glob(w)) for w, h in zip(want, have, strict=True))


def glob_folders(pattern: str, subfolders: Callable[[str], list[str]]) -> list[str]:
    """The folders of the repository a git directory generator's pattern matches,
    walked segment by segment (only the folders the pattern can reach are listed)."""
    parts = _segments(pattern)
    if not parts:
        return []
    found = [""]
    for part in parts:
        nxt: list[str] = []
        for parent in found:
            names = subfolders(parent)
            if any(c in part for c in "*?["):
                nxt += [f"{parent}/{n}" if parent else n for n in names
                        if fnmatchcase(n, _go_glob(part))]
            elif part in names:
                nxt.append(f"{parent}/{part}" if parent else part)
        found = nxt
    return found


def glob_files(pattern: str, subfolders: Callable[[str], list[str]],
               files: Callable[[str], list[str]]) -> list[str]:
    """The files of the repository a git files generator's pattern matches, one folder
    level per segment (a `**` pattern, which newer Argo CD reads as any depth, matches
    nothing here)."""
    parts = _segments(pattern)
    if not parts or len(parts) < 2 or any("**" in p for p in parts):
        return []
    last = _go_glob(parts[-1])
    return [f"{folder}/{name}" for folder in glob_folders("/".join(parts[:-1]), subfolders)
            for name in files(folder) if fnmatchcase(name, last)]


def _braces(pattern: str) -> list[str]:
    """`{a,b}` alternatives expanded (Argo CD's directory globs take them)."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if m is None:
        return [pattern]
    return [x for alt in m.group(1).split(",")
            for x in _braces(pattern[:m.start()] + alt + pattern[m.end():])]


def _glob(pattern: str, rel: str) -> bool:
    return any(fnmatchcase(rel, p) for p in _braces(pattern))


def applies(build: ArgoBuild, file: str, plain: Callable[[str], bool]) -> bool:
    """Whether Argo CD applies manifest `file` (relative to the root) as a file of its
    own when it builds `build`: only from a plain folder (`plain(folder)`: no
    kustomization, no chart), its own files, or its subfolders' with recurse."""
    if not plain(build.folder):
        return False
    rel = file[len(build.folder) + 1:] if build.folder else file
    if "/" in rel and not build.recurse:
        return False
    if build.exclude and _glob(build.exclude, rel):
        return False
    return not build.include or _glob(build.include, rel)


def holds(folder: str, file: str) -> bool:
    return folder == "" or file.startswith(folder + "/")


def not_applied(files: list[str], builds: list[ArgoBuild], plain: Callable[[str], bool]
                ) -> set[str]:
    """The files that folders Argo CD builds hold but that none of them applies."""
    out = set()
    for file in files:
        holding = [b for b in builds if holds(b.folder, file)]
        if holding and not any(applies(b, file, plain) for b in holding):
            out.add(file)
    return out


def rendered_jsonnet(files: list[str], builds: list[ArgoBuild], plain: Callable[[str], bool]
                     ) -> list[tuple[ArgoBuild, list[str]]]:
    """The `.jsonnet` files among `files` (relative to the root) that each build renders
    (a plain folder's, as it applies its YAML: recurse, include, exclude). A file two
    builds render is listed with each: they may pass it different TLAs or extVars
    (prod and staging), so each is evaluated (the caller drops identical ones)."""
    out: list[tuple[ArgoBuild, list[str]]] = []
    for build in builds:
        mine = [f for f in files if f.endswith(".jsonnet")
                and holds(build.folder, f) and applies(build, f, plain)]
        if mine:
            out.append((build, mine))
    return out
