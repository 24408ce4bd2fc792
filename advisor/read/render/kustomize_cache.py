"""kustomize builds in the run's parse cache (advisor.read.cache), so that a warm check of
a kustomize or Flux repository runs no kustomize: what advisor.read.render.kustomize hands
on for a build (its objects placed in their files, with their overlay traces, its
problems and notices) is kept under a key made of every input that can change it:

- every file kustomize's working copy is made of (advisor.read.render.sandbox.copy_tree
  copies the kustomization folders of the scanned tree whole, and the files the scan
  found they name): under each folder, every file by path and content and every folder
  by name, leaving out what the copy leaves out (SKIP_DIRS); then each named file. The
  build reads nothing else, and the objects are placed and traced in these files;
- the Flux components added to the build, in order; the repository root and the
  kustomization's path as shown (both are in what is reported);
- the binary: its path, size and modification time, the command, and the network
  namespace prefix the run found (without one a build naming a location is refused);
- the tool itself: FileCache keeps one folder per tool version and advisor sources.

A warm run does not read the files to make that key when none changed: the key is also
kept under the inputs' stat signature (each file's name, size, mtime, ctime, inode and
device, each folder's name, and the inputs above), kind `kustomize-stat`, kept only when
every file's mtime and ctime are older than the run's start by RACY_NS, as
advisor.read.render.helm_cache does for a chart.

Not kept: a build whose folders hold a symlink or a special file (the copy follows a
symlink that stays in the repository; the key does not), folders beyond the copy's
limits, and a build that failed (a time or output limit another run may not hit).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from advisor.read.fs import Root
from advisor.read.render import Rendered, render_cache
from advisor.read.render.render_cache import FileVisit, Newest, hash_file, sign, walk
from advisor.read.render.sandbox import MAX_COPY_BYTES, SKIP_DIRS

try:  # as advisor.read.cache: hashlib's own blake2b without hashlib's OpenSSL load
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python without the built-in module
    from hashlib import blake2b

KIND = "kustomize"  # the FileCache kind of a build
STAT_KIND = "kustomize-stat"  # the FileCache kind of a build's key under its stat signature
SCHEMA = 1


def known_key(cache: Any, root: Root, top: Path, folders: list[Path], files: list[Path],
              components: list[str], prepared: Any) -> str | None:
    """`build_key`, taken from `cache` when no input's stat signature changed since a run
    that made it (no file is read); else made, and kept under the signature when every
    input is old enough to be known by it (advisor.read.cache.trusted)."""
    from advisor.read.cache import trusted

    head = _head(root, top, components, prepared)
    if head is None:
        return None
    digest = blake2b(digest_size=32)
    digest.update(head)
    newest = Newest()
    if not _inputs(root, folders, files, digest,
                   lambda shown, st, path: sign(digest, newest, shown, st)):
        return None
    signature = digest.hexdigest()
    shown = root.rel(top)
    known = cache.get(STAT_KIND, shown, signature, str)
    if known is not None:
        return known
    key = build_key(root, top, folders, files, components, prepared)
    if key is not None and trusted(newest, cache.started_ns):
        cache.put(STAT_KIND, shown, signature, key)
    return key


def build_key(root: Root, top: Path, folders: list[Path], files: list[Path],
              components: list[str], prepared: Any) -> str | None:
    """The key of the build at `top` whose working copy holds `folders` whole and `files`
    (advisor.read.render.kustomize.build_sandboxed's inputs), with `components` added,
    by `prepared` (kustomize.Prepared); None when it is not kept (see the module's text)."""
    head = _head(root, top, components, prepared)
    if head is None:
        return None
    digest = blake2b(digest_size=32)
    digest.update(head)
    if not _inputs(root, folders, files, digest,
                   lambda shown, st, path: hash_file(digest, path, shown)):
        return None
    return digest.hexdigest()


def _head(root: Root, top: Path, components: list[str], prepared: Any) -> bytes | None:
    """The inputs of a build that are not files; None when the binary cannot be known."""
    binary = _binary_identity(prepared.command)
    if binary is None:
        return None
    return json.dumps([SCHEMA, str(root.path), root.rel(top), components, prepared.command,
                       binary, prepared.prefix]).encode("utf-8", "surrogatepass")


def _inputs(root: Root, folders: list[Path], files: list[Path], digest: Any,
            on_file: FileVisit) -> bool:
    """`on_file` for every file of the working copy, in order (each folder's files, then
    the named files), each folder's name into `digest`; False for what is not kept."""
    from advisor.read.cache import CACHE_DIR

    skip = SKIP_DIRS | {CACHE_DIR}
    left = MAX_COPY_BYTES  # all folders together, as the copy counts them
    for folder in sorted(set(folders)):
        shown = _shown(root, folder)
        if shown is None or not _plain_folder(folder):
            return False
        digest.update(f"D\0{shown}\0".encode("utf-8", "surrogatepass"))
        size = 0

        def counted(name: str, st: os.stat_result, path: Path) -> bool:
            nonlocal size
            size += st.st_size
            return on_file(name, st, path)

        if not walk(folder, f"{shown}/", frozenset(), counted,
                    lambda name: digest.update(f"d\0{name}\0".encode("utf-8",
                                                                     "surrogatepass")),
                    max_bytes=left, skip_everywhere=skip):
            return False
        left -= size
    for path in sorted(set(files)):
        shown = _shown(root, path)
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return False
        if shown is None or not stat.S_ISREG(st.st_mode) or not on_file(f"F:{shown}", st,
                                                                          path):
            return False
    return True


def _shown(root: Root, path: Path) -> str | None:
    try:
        return path.relative_to(root.path).as_posix()
    except ValueError:
        return None


def _plain_folder(folder: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _binary_identity(command: list[str]) -> list[Any] | None:
    try:
        st = os.stat(command[0])
    except (OSError, IndexError):
        return None
    return [str(Path(command[0]).resolve()), st.st_size, st.st_mtime_ns]


def lookup(cache: Any, shown: str, key: str) -> Rendered | None:
    """The build of `shown` kept under `key` (None: a miss, built again)."""
    return render_cache.lookup(cache, KIND, shown, key)


def store(cache: Any, shown: str, key: str, rendered: Rendered) -> None:
    """Keep the build of `shown` under `key`."""
    render_cache.store(cache, KIND, shown, key, rendered)
