"""What a renderer hands on (advisor.read.render.Rendered: objects with their positions
and value traces, problems, notices) kept in the run's parse cache (advisor.read.cache),
and the folder walk both renderers' keys are made of. Each renderer makes its own key
of every input that can change its output: advisor.read.render.helm_cache for a chart,
advisor.read.render.kustomize_cache for a kustomize build.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from advisor.model import ConfigProblem, Source
from advisor.read.fs import read_regular
from advisor.read.render import Rendered
from advisor.read.sources.k8s import K8sObject


class CachedRenderedObject(msgspec.Struct, array_like=True):
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


class RenderedEntry(msgspec.Struct, array_like=True):
    objects: list[CachedRenderedObject]
    problems: list[ConfigProblem]
    notices: list[str]


def lookup(cache: Any, kind: str, name: str, key: str) -> Rendered | None:
    """The render kept under `key`; None when there is none or it is not what this
    version writes (a miss: rendered again)."""
    from advisor.read.cache import decode_tree

    entry = cache.get(kind, name, key, RenderedEntry)
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


def store(cache: Any, kind: str, name: str, key: str, rendered: Rendered) -> None:
    """Keep `rendered` under `key`; nothing when a body cannot be encoded."""
    from advisor.read.cache import encode_tree

    try:
        objects = [CachedRenderedObject(kind=o.kind, api_version=o.api_version, name=o.name,
                                        namespace=o.namespace, body=encode_tree(o.body),
                                        path=o.path, line=o.line, line_offset=o.line_offset,
                                        origin=o.origin, value_sources=o.value_sources or {})
                   for o in rendered.objects]
    except TypeError:
        return
    cache.put(kind, name, key, RenderedEntry(objects, rendered.problems, rendered.notices))


FileVisit = Callable[[str, os.stat_result, Path], bool]


def walk(folder: Path, rel: str, skip: set[str] | frozenset[str], on_file: FileVisit,
         on_folder: Callable[[str], object], *, max_bytes: int,
         skip_everywhere: frozenset[str] = frozenset()) -> bool:
    """`on_folder(shown)` for each folder and `on_file(shown, stat, path)` for each file
    under `folder` (`shown`: its path under `folder`, after `rel`), in name order; names
    in `skip` left out at the top, in `skip_everywhere` at every depth. False for a
    symlink, a special file, more than `max_bytes`, or `on_file` saying False."""
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
            if (not prefix and entry.name in skip) or entry.name in skip_everywhere:
                continue
            shown = f"{prefix}{entry.name}"
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                return False
            if stat.S_ISDIR(st.st_mode):
                on_folder(shown)
                subfolders.append((Path(entry.path), f"{shown}/"))
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
                if total > max_bytes or not on_file(shown, st, Path(entry.path)):
                    return False
            else:  # a symlink (the renderer follows it), a FIFO, a socket: not cached
                return False
        stack.extend(reversed(subfolders))
    return True


class Newest:
    """The latest mtime and ctime seen, in the shape advisor.read.cache.trusted reads."""

    st_mtime_ns = 0
    st_ctime_ns = 0


def sign(digest: Any, newest: Newest, shown: str, st: os.stat_result) -> bool:
    """A file's stat signature into `digest` (what it is known by when unchanged, as
    advisor.read.cache knows a manifest), and its times into `newest`."""
    digest.update(f"f\0{shown}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0"
                  f"{st.st_ino}\0{st.st_dev}\0".encode("utf-8", "surrogatepass"))
    newest.st_mtime_ns = max(newest.st_mtime_ns, st.st_mtime_ns)
    newest.st_ctime_ns = max(newest.st_ctime_ns, st.st_ctime_ns)
    return True


def hash_file(digest: Any, path: Path, shown: str) -> bool:
    """`path`'s name as shown, size and content into `digest`; False when it cannot be
    read as a regular file."""
    try:
        data = read_regular(path)
    except OSError:
        return False
    digest.update(f"f\0{shown}\0{len(data)}\0".encode("utf-8", "surrogatepass"))
    digest.update(data)
    return True
