"""Rendered Helm charts in the run's parse cache (advisor.read.cache), so that a warm
check of a Helm repository starts no engine: what advisor.read.render.helm hands on for
a chart (its objects with their positions and value traces, its problems and notices)
is stored under a key made of every input that can change it:

- every file under the chart folder, by path and content (templates, values.yaml,
  Chart.yaml, .helmignore, vendored subcharts as folders or .tgz, files `.Files` reads);
  a chart holding a symlink or a file that is not a regular file is not cached;
- likewise every file under each `file://` dependency folder the render places in
  charts/ (advisor.read.render.helm_local_deps), under its path from the root;
- each `--values` file (or [[charts]] values) as given, the file it resolves to and its
  content, in order; each `--set` in order; the release name and the namespace;
- the repository root and the chart's path as shown (both are in what is reported);
- the engine: the files of the helm_python package (its Go library included) by size
  and modification time, and the HELM_* environment;
- the tool itself: FileCache keeps one folder per tool version and advisor sources.

A warm run does not read the chart's files to make that key when none changed: the key
is also kept under the chart's stat signature (every file's and folder's name, and each
file's size, mtime, ctime, inode and device, plus the other inputs above), kind
`helm-stat`, as advisor.read.cache knows an unchanged manifest. It is kept only when
every file's mtime and ctime are older than the run's start by RACY_NS (a file written
in the clock tick it was looked at could change again without its signature changing).

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

from advisor.read.fs import InputError, Root
from advisor.read.render import Rendered, render_cache
from advisor.read.render.render_cache import Newest, hash_file, sign, walk

try:  # as advisor.read.cache: hashlib's own blake2b without hashlib's OpenSSL load
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python without the built-in module
    from hashlib import blake2b

KIND = "helm"  # the FileCache kind of a rendered chart
STAT_KIND = "helm-stat"  # the FileCache kind of a chart's key under its stat signature
SCHEMA = 1
MAX_CHART_BYTES = 256 * 1024 * 1024  # a chart larger than this is rendered, not hashed


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


def known_key(cache: Any, root: Root, chart_path: Path, chart_rel: str,
              values_files: list[str], set_values: list[str], release: str,
              namespace: str | None, engine: str, local: tuple[Path, ...] = ()
              ) -> str | None:
    """`chart_key`, taken from `cache` when no input's stat signature changed since a
    run that made it; else made (every input read), and kept under the signature when
    every input is old enough to be known by it (advisor.read.cache.trusted)."""
    from advisor.read.cache import trusted

    head = _head(root, chart_path, chart_rel, values_files, set_values, release, namespace,
                 engine)
    signed = _stat_signature(root, chart_path, values_files, head, local)
    if signed is None:
        return None  # a symlink, a special file, an input that cannot be read
    signature, newest = signed
    known = cache.get(STAT_KIND, chart_rel, signature, str)
    if known is not None:
        return known
    key = chart_key(root, chart_path, chart_rel, values_files, set_values, release,
                    namespace, engine, local)
    if key is not None and trusted(newest, cache.started_ns):
        cache.put(STAT_KIND, chart_rel, signature, key)
    return key


def chart_key(root: Root, chart_path: Path, chart_rel: str, values_files: list[str],
              set_values: list[str], release: str, namespace: str | None,
              engine: str, local: tuple[Path, ...] = ()) -> str | None:
    """The key of a render of `chart_path` with these values (see the module's text);
    None when an input cannot be read as a plain file (the render says why, if it must)."""
    from advisor.read.render.helm_values import find_values_file

    digest = blake2b(digest_size=32)
    digest.update(_head(root, chart_path, chart_rel, values_files, set_values, release,
                        namespace, engine))
    if not _hash_folder(digest, chart_path, "", _skipped(root, chart_path)):
        return None
    for where in local:
        if not _hash_folder(digest, where, _local_rel(root, where), set()):
            return None
    for name in values_files:
        try:
            real = find_values_file(root, chart_path, name)
        except InputError:
            return None
        if not hash_file(digest, real, str(real)):
            return None
    return digest.hexdigest()


def _head(root: Root, chart_path: Path, chart_rel: str, values_files: list[str],
          set_values: list[str], release: str, namespace: str | None, engine: str) -> bytes:
    """The inputs of a render that are not files."""
    return json.dumps([SCHEMA, engine, str(root.path), chart_rel, values_files, set_values,
                       release, namespace]).encode("utf-8", "surrogatepass")


def _skipped(root: Root, chart_path: Path) -> set[str]:
    """The cache folder is in the chart when the chart is the repository root: it changes
    on every run that writes it, and the engine does not load it (EngineView)."""
    from advisor.read.cache import CACHE_DIR

    return {CACHE_DIR} if chart_path == root.path else set()


def _local_rel(root: Root, where: Path) -> str:
    """How a placed dependency's files are named in a key: apart from the chart's own."""
    return f"\0file:{root.rel(where)}/"


def _stat_signature(root: Root, chart_path: Path, values_files: list[str], head: bytes,
                    local: tuple[Path, ...] = ()) -> tuple[str, Newest] | None:
    """A digest of what `chart_key` reads, by stat signature instead of content (the same
    walk, so the same files and folders); and the newest times among them. None where
    `chart_key` is None for the kind of a file, or an input cannot be looked at."""
    from advisor.read.render.helm_values import find_values_file

    digest = blake2b(digest_size=32)
    digest.update(head)
    newest = Newest()
    for folder, rel, skip in ((chart_path, "", _skipped(root, chart_path)),
                              *((where, _local_rel(root, where), set()) for where in local)):
        if not walk(folder, rel, skip,
                    lambda shown, st, path: sign(digest, newest, shown, st),
                    lambda shown: digest.update(f"d\0{shown}\0".encode("utf-8",
                                                                       "surrogatepass")),
                    max_bytes=MAX_CHART_BYTES):
            return None
    for name in values_files:
        try:
            real = find_values_file(root, chart_path, name)
            st = os.stat(real, follow_symlinks=False)
        except (InputError, OSError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        sign(digest, newest, str(real), st)
    return digest.hexdigest(), newest


def _hash_folder(digest: Any, folder: Path, rel: str, skip: set[str]) -> bool:
    """Every file under `folder`, by path and content, in name order; False for a
    symlink, a special file or too much to read."""
    return walk(folder, rel, skip,
                lambda shown, st, path: hash_file(digest, path, shown),
                lambda shown: digest.update(f"d\0{shown}\0".encode("utf-8", "surrogatepass")),
                max_bytes=MAX_CHART_BYTES)


def lookup(cache: Any, chart_rel: str, key: str) -> Rendered | None:
    """The cached render of the chart under `key` (None: a miss, rendered again)."""
    return render_cache.lookup(cache, KIND, chart_rel, key)


def store(cache: Any, chart_rel: str, key: str, rendered: Rendered) -> None:
    """Keep the chart's `rendered` under `key`."""
    render_cache.store(cache, KIND, chart_rel, key, rendered)
