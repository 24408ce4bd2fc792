"""Rendered Helm charts in the run's parse cache (advisor.read.cache), so that a warm
check of a Helm repository starts no engine: what advisor.read.render.helm hands on for
a chart (its objects with their positions and value traces, its problems and notices)
is stored under a key made of every input that can change it:

- every file under the chart folder, by path and content (templates, values.yaml,
  Chart.yaml, .helmignore, vendored subcharts as folders or .tgz, files `.Files` reads);
  a chart holding a symlink or a file that is not a regular file is not cached;
- each `--values` file (or [[charts]] values) as given, the file it resolves to and its
  content, in order; each `--set` in order; the release name and the namespace;
- the repository root and the chart's path as shown (both are in what is reported);
- the engine: the files of the helm_python package (its Go library included) by size
  and modification time, and the HELM_* environment;
- the tool itself: FileCache keeps one folder per tool version and advisor sources.

What is not deterministic is not stored: a render a limit stopped, an engine that died,
values tracing stopped by its time or render budget, the values-only reading without
the engine.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import stat
from pathlib import Path
from typing import Any

import msgspec

from advisor.model import ConfigProblem, Source
from advisor.read.fs import InputError, Root, read_regular
from advisor.read.render import Rendered
from advisor.read.sources.k8s import K8sObject

try:  # as advisor.read.cache: hashlib's own blake2b without hashlib's OpenSSL load
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python without the built-in module
    from hashlib import blake2b

KIND = "helm"  # the FileCache kind of a rendered chart
SCHEMA = 1
MAX_CHART_BYTES = 256 * 1024 * 1024  # a chart larger than this is rendered, not hashed


class CachedHelmObject(msgspec.Struct, array_like=True):
    kind: str
    api_version: str
    name: str
    namespace: str | None
    body: Any  # advisor.read.cache.encode_tree's lists
    path: str
    line: int
    line_offset: int
    origin: str
    value_sources: dict[str, Source]


class ChartEntry(msgspec.Struct, array_like=True):
    objects: list[CachedHelmObject]
    problems: list[ConfigProblem]
    notices: list[str]


def engine_identity(environ: dict[str, str] | None = None) -> str | None:
    """What identifies the Helm engine a render would use, without loading it (loading
    the Go library is what a warm run avoids): the helm_python package's files and the
    HELM_* environment (HELM_C_LIB picks another library). None when not installed."""
    env = os.environ if environ is None else environ
    spec = importlib.machinery.PathFinder.find_spec("helm_python")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    parts: list[str] = [str(folder)]
    chosen = env.get("HELM_C_LIB")
    places = [folder, folder / "lib", *([Path(chosen)] if chosen else [])]
    for place in places:
        try:
            st = place.stat()
            names = sorted(os.listdir(place)) if stat.S_ISDIR(st.st_mode) else [""]
        except OSError:
            parts.append(f"{place}:-")
            continue
        for name in names:
            with_name = place / name if name else place
            try:
                st = with_name.stat()
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                parts.append(f"{with_name}:{st.st_size}:{st.st_mtime_ns}")
    parts += sorted(f"{k}={v}" for k, v in env.items() if k.startswith("HELM_"))
    return "\n".join(parts)


def chart_key(root: Root, chart_path: Path, chart_rel: str, values_files: list[str],
              set_values: list[str], release: str, namespace: str | None,
              engine: str) -> str | None:
    """The key of a render of `chart_path` with these values (see the module's text);
    None when an input cannot be read as a plain file (the render says why, if it must)."""
    from advisor.read.cache import CACHE_DIR
    from advisor.read.render.helm_values import find_values_file

    digest = blake2b(digest_size=32)
    digest.update(json.dumps([SCHEMA, engine, str(root.path), chart_rel, values_files,
                              set_values, release, namespace]).encode("utf-8", "surrogatepass"))
    # The cache folder is in the chart when the chart is the repository root: it changes
    # on every run that writes it.
    skip = {CACHE_DIR} if chart_path == root.path else set()
    if not _hash_folder(digest, chart_path, "", skip):
        return None
    for name in values_files:
        try:
            real = find_values_file(root, chart_path, name)
        except InputError:
            return None
        if not _hash_file(digest, real, str(real)):
            return None
    return digest.hexdigest()


def _hash_folder(digest: Any, folder: Path, rel: str, skip: set[str]) -> bool:
    """Every file under `folder`, by path and content, in name order; False for a
    symlink, a special file or too much to read."""
    total = 0
    stack = [(folder, rel)]
    while stack:
        here, prefix = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return False
        subfolders = []
        for entry in entries:
            if not prefix and entry.name in skip:
                continue
            shown = f"{prefix}{entry.name}"
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                return False
            if stat.S_ISDIR(st.st_mode):
                digest.update(f"d\0{shown}\0".encode("utf-8", "surrogatepass"))
                subfolders.append((Path(entry.path), f"{shown}/"))
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
                if total > MAX_CHART_BYTES or not _hash_file(digest, Path(entry.path), shown):
                    return False
            else:  # a symlink (Helm follows it), a FIFO, a socket: not cached
                return False
        stack.extend(reversed(subfolders))
    return True


def _hash_file(digest: Any, path: Path, shown: str) -> bool:
    try:
        data = read_regular(path)
    except OSError:
        return False
    digest.update(f"f\0{shown}\0{len(data)}\0".encode("utf-8", "surrogatepass"))
    digest.update(data)
    return True


def lookup(cache: Any, chart_rel: str, key: str) -> Rendered | None:
    """The cached render under `key`; None when there is none or it is not what this
    version writes (a miss: rendered again)."""
    from advisor.read.cache import decode_tree

    entry = cache.get(KIND, chart_rel, key, ChartEntry)
    if entry is None:
        return None
    try:
        objects = [K8sObject(kind=o.kind, api_version=o.api_version, name=o.name,
                             namespace=o.namespace, body=decode_tree(o.body), path=o.path,
                             line=o.line, line_offset=o.line_offset, origin=o.origin,
                             value_sources=o.value_sources) for o in entry.objects]
    except (ValueError, TypeError, KeyError, IndexError):
        return None
    return Rendered(objects=objects, problems=list(entry.problems), notices=list(entry.notices))


def store(cache: Any, chart_rel: str, key: str, rendered: Rendered) -> None:
    """Keep `rendered` under `key`; nothing when a body cannot be encoded."""
    from advisor.read.cache import encode_tree

    try:
        objects = [CachedHelmObject(kind=o.kind, api_version=o.api_version, name=o.name,
                                    namespace=o.namespace, body=encode_tree(o.body),
                                    path=o.path, line=o.line, line_offset=o.line_offset,
                                    origin=o.origin, value_sources=o.value_sources)
                   for o in rendered.objects]
    except TypeError:
        return
    cache.put(KIND, chart_rel, key, ChartEntry(objects, rendered.problems, rendered.notices))
