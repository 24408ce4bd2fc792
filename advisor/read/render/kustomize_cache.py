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
from advisor.read.render.render_cache import hash_file, walk
from advisor.read.render.sandbox import MAX_COPY_BYTES, SKIP_DIRS

try:  # as advisor.read.cache: hashlib's own blake2b without hashlib's OpenSSL load
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python without the built-in module
    from hashlib import blake2b

KIND = "kustomize"  # the FileCache kind of a build
SCHEMA = 1


def build_key(root: Root, top: Path, folders: list[Path], files: list[Path],
              components: list[str], prepared: Any) -> str | None:
    """The key of the build at `top` whose working copy holds `folders` whole and `files`
    (advisor.read.render.kustomize.build_sandboxed's inputs), with `components` added,
    by `prepared` (kustomize.Prepared); None when it is not kept (see the module's text)."""
    from advisor.read.cache import CACHE_DIR

    binary = _binary_identity(prepared.command)
    if binary is None:
        return None
    digest = blake2b(digest_size=32)
    digest.update(json.dumps([SCHEMA, str(root.path), root.rel(top), components,
                              prepared.command, binary, prepared.prefix]
                             ).encode("utf-8", "surrogatepass"))
    skip = SKIP_DIRS | {CACHE_DIR}
    budget = [MAX_COPY_BYTES]  # all folders together, as the copy counts them
    for folder in sorted(set(folders)):
        shown = _shown(root, folder)
        if shown is None or not _plain_folder(folder):
            return None
        digest.update(f"D\0{shown}\0".encode("utf-8", "surrogatepass"))
        size = [0]

        def on_file(name: str, st: os.stat_result, path: Path, size: list[int] = size) -> bool:
            size[0] += st.st_size
            return hash_file(digest, path, name)

        if not walk(folder, f"{shown}/", frozenset(), on_file,
                    lambda name: digest.update(f"d\0{name}\0".encode("utf-8",
                                                                     "surrogatepass")),
                    max_bytes=budget[0], skip_everywhere=skip):
            return None
        budget[0] -= size[0]
    for path in sorted(set(files)):
        shown = _shown(root, path)
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        if shown is None or not stat.S_ISREG(st.st_mode) or not hash_file(digest, path,
                                                                         f"F:{shown}"):
            return None
    return digest.hexdigest()


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
