"""The cache of per-file parse results, like ruff's `.ruff_cache`.

What is cached: what a reader extracts from ONE file (a manifest's Kubernetes objects
with their YAML positions, its YAML problems, its suppression comments), keyed by the
file's path as shown and a hash of its content. Nothing that depends on another file
(linking, budgets, findings) is cached: the topology and the rules run on every check,
so the answer is always the whole repository's.

Where: `.pool-advisor-cache/` at the repository root, holding a `.gitignore` of `*`
(git never sees it) and a CACHEDIR.TAG; nothing else the user owns is written. One
folder per cache key: the tool version, the Python version, this file's SCHEMA and a
fingerprint of the installed advisor sources (their sizes and mtimes: a development
checkout whose parser changed does not reuse what the old parser produced).

Unchanged files are not read again: the pack also holds, per file, its stat signature
(size, mtime, ctime, inode, device) next to the key of its entry, as git's index and
ruff's cache do. A file whose signature is the one recorded has the content it had
then: writing a file sets its ctime to the clock's time, which no program can set
back. A signature is recorded only when the file's mtime and ctime are older than the
run's start by RACY_NS: a file written in the same clock tick as it was looked at
(racily clean, in git's words) could change again without its signature changing, so
it is read and hashed until its times are old enough.

Serialization: msgpack (msgspec) of our own structures, decoded into typed structs; a
YAML node tree is stored as plain lists and rebuilt into PosMap/PosList. Not pickle:
the cache folder is inside a repository that may come from anyone (a pull request
checked in CI can commit a `.pool-advisor-cache/` with `git add -f`), and unpickling
runs code. A corrupt, truncated or foreign file decodes to an error, which is a miss.

Concurrency: the pack is written to a temporary file in the same folder and moved over
the old one with os.replace (atomic on POSIX and Windows): a reader sees the old pack or
the new one, never half of one. Two runs writing at once: the last one wins; both packs
are valid, entries are keyed by content, so either is right.

A root that cannot be written (a read-only checkout): the run goes on without the cache.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

try:  # hashlib's own blake2b (it hands out this one), without hashlib's OpenSSL load:
    from _blake2 import blake2b  # ~11 M instructions of a 470 M check of the demo
except ImportError:  # pragma: no cover - a Python without the built-in module
    from hashlib import blake2b

from advisor import __version__
from advisor.model import ConfigProblem

CACHE_DIR = ".pool-advisor-cache"
SCHEMA = 5
PACK = "files.msgpack"
# What runs after the pack was written added to it (entries and stat signatures), for
# that pack only (its token): one changed file writes this, not the whole pack again.
DELTA = "delta.msgpack"
# A delta grows until it holds this share of the pack's bytes; the next save then writes
# the pack whole, with everything, and removes the delta.
DELTA_SHARE = 0.25
NO_CACHE_ENV = "POOL_ADVISOR_NO_CACHE"
# Entries of earlier runs kept beside this run's (a check of one folder does not evict
# the rest of the repository), up to this many in all.
MAX_ENTRIES = 200_000
# How much older than the run's start a file's mtime and ctime must be for its stat
# signature to be trusted next time: more than a file system's timestamp granularity
# (2 s on FAT, 1 s on ext3 and HFS+, a clock tick on ext4) and the skew between the
# clock that stamps files and this process's clock.
RACY_NS = 2_000_000_000

# A file's stat signature: size, mtime_ns, ctime_ns, inode, device; with its entry's key.
Signature = tuple[int, int, int, int, int]


class _Pack(msgspec.Struct, array_like=True):
    key: str  # the cache key the pack was written under (a foreign pack is a miss)
    entries: dict[str, bytes]
    # "kind\0path" -> (size, mtime_ns, ctime_ns, inode, device, entry key)
    stats: dict[str, tuple[int, int, int, int, int, str]] = {}
    # Made anew each time the pack is written whole: a delta names the pack it adds to
    # ("": no delta applies).
    token: str = ""


class _Delta(msgspec.Struct, array_like=True):
    key: str
    token: str  # the pack's: a delta for a pack written since by another run is ignored
    entries: dict[str, bytes]
    stats: dict[str, tuple[int, int, int, int, int, str]]


class CachedObject(msgspec.Struct, array_like=True):
    """A K8sObject without its path (the entry's key holds it)."""

    kind: str
    api_version: str
    name: str
    namespace: str | None
    # encode_tree's lists, as msgpack bytes of their own written as one bin value:
    # decoding an entry steps over it by its length (inline, the decoder walked every
    # node of every tree to find its end: 8 MB for 5,000 manifests), and a reader that
    # needs the tree decodes it (LazyK8sObject)
    body: msgspec.Raw
    line: int
    line_offset: int = 0
    origin: str = ""
    # What the reader of its kind takes (advisor.read.extract), as msgpack bytes decoded
    # with its type when first asked for, and the lines the reader asks for (keys ->
    # line0, a map whose keys are arrays: decoded into LazyK8sObject.lines' dict in C);
    # lines None: no extract, the reader reads the body.
    extract: msgspec.Raw = msgspec.Raw(b"\xc0")
    lines: dict[tuple[str | int, ...], int | None] | None = None


class ManifestEntry(msgspec.Struct, array_like=True):
    """What scan_paths takes from a YAML file that looks like Kubernetes."""

    objects: list[CachedObject]
    problems: list[ConfigProblem]
    comments: dict[int, list[str]] | None = None


def disabled_by_env(environ: dict[str, str] | None = None) -> bool:
    value = (environ if environ is not None else os.environ).get(NO_CACHE_ENV, "")
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def signature(st: os.stat_result) -> Signature:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def trusted(st: os.stat_result, started_ns: int) -> bool:
    """Whether a file looked at by a run started at `started_ns` (time.time_ns()) can
    be known by its signature next time: its mtime and ctime are older than the start
    by RACY_NS (a later write sets the ctime to a later time)."""
    return max(st.st_mtime_ns, st.st_ctime_ns) < started_ns - RACY_NS


def code_fingerprint() -> str:
    """The tool version, Python version, SCHEMA and the advisor sources' sizes and
    mtimes: what produced an entry."""
    package = str(Path(__file__).resolve().parent)
    digest = blake2b(digest_size=8)
    # scandir: its entries carry their paths and say a folder without a stat. This runs
    # on every check, and each module the tool gains adds to it (issue 19's start-up)
    folders = [package]
    while folders:
        folder = folders.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        lines = []
        for entry in entries:
            name = entry.name
            if name.endswith((".py", ".json", ".toml")):
                with contextlib.suppress(OSError):
                    st = os.stat(entry.path)
                    lines.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
            elif name != "__pycache__" and entry.is_dir():
                folders.append(entry.path)
        digest.update(f"{folder[len(package):]}/\n{chr(10).join(lines)}\n".encode())
    # positions are native ints (advisor.read.yamlpos): the byte order is part of the key
    py = f"py{sys.version_info[0]}{sys.version_info[1]}{sys.byteorder[0]}"
    return f"{__version__}-{py}-s{SCHEMA}-{digest.hexdigest()}"


class FileCache:
    """Per-file results of one run: `get` and `put` by (kind, path, text), `unchanged`
    by (kind, path, stat) for a file not read again; `save` once."""

    def __init__(self, folder: Path | None, key: str = "", started_ns: int = 0) -> None:
        self.folder = folder  # None: disabled (--no-cache, unwritable root)
        self.key = key
        self.started_ns = started_ns  # time.time_ns() at the start: see trusted()
        self._old: dict[str, bytes] = {}
        self._used: dict[str, bytes] = {}
        self._stats: dict[str, tuple[int, int, int, int, int, str]] = {}
        self._dirty = False
        # The pack as read (its token, entries, signatures, size): save writes a delta to it
        # when this run added little (see DELTA).
        self._pack: _Pack | None = None
        self._pack_size = 0
        self._put: set[str] = set()  # keys put this run (a damaged entry put anew)
        self._recorded: set[str] = set()  # signatures set this run ("kind\0path")
        self._delta: _Delta | None = None  # the delta read with the pack
        self.hits = 0
        self.misses = 0

    @classmethod
    def disabled(cls) -> FileCache:
        return cls(None)

    @classmethod
    def open(cls, root: Path) -> FileCache:
        """The cache of the repository at `root`; disabled when it cannot be made."""
        started = time.time_ns()  # before any file of the run is looked at
        key = code_fingerprint()
        base = root / CACHE_DIR
        try:
            _make_base(base)
        except OSError:
            return cls.disabled()
        cache = cls(base / key, key, started)
        found = _read_pack(base / key / PACK, key)
        if found is not None:
            pack, size = found
            cache._old, cache._stats = dict(pack.entries), dict(pack.stats)
            if pack.token:
                cache._pack, cache._pack_size = pack, size
                delta = _read_delta(base / key / DELTA, key, pack.token)
                if delta is not None:
                    cache._delta = delta
                    cache._old.update(delta.entries)
                    cache._stats.update(delta.stats)
        return cache

    @property
    def enabled(self) -> bool:
        return self.folder is not None

    def _entry_key(self, kind: str, path: str, text: str) -> str:
        digest = blake2b(digest_size=16)
        digest.update(f"{kind}\0{path}\0".encode("utf-8", "surrogatepass"))
        digest.update(text.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def get(self, kind: str, path: str, text: str, type_: type,
            stat: os.stat_result | None = None) -> Any | None:
        """The entry for this content at this path. `stat`: the file's, taken before
        its text was read: recorded with the entry (see `unchanged`)."""
        if self.folder is None:
            return None
        key = self._entry_key(kind, path, text)
        value = self._decoded(key, type_)
        if value is not None and stat is not None:
            self._record(kind, path, stat, key)
        return value

    def get_keyed(self, kind: str, key: bytes, type_: type) -> Any | None:
        """The entry put by `put_keyed` for this key (the bytes of what the value is a
        pure function of), not tied to a file."""
        if self.folder is None:
            return None
        return self._decoded(self._bytes_key(kind, key), type_)

    def put_keyed(self, kind: str, key: bytes, value: Any, type_: type) -> None:
        """Keep `value` for `key`, when it decodes back (as `type_`) equal to itself."""
        if self.folder is None:
            return
        try:
            raw = msgspec.msgpack.encode(value)
            if msgspec.msgpack.decode(raw, type=type_) != value:
                return
        except (TypeError, ValueError, OverflowError, msgspec.DecodeError):
            return
        self._keep(self._bytes_key(kind, key), raw)

    def _keep(self, key: str, raw: bytes) -> None:
        """An entry put this run: saved with the others (whole pack or delta)."""
        self._used[key] = raw
        self._put.add(key)
        self._dirty = True

    @staticmethod
    def _bytes_key(kind: str, key: bytes) -> str:
        digest = blake2b(digest_size=16)
        digest.update(f"{kind}\0\0".encode())
        digest.update(key)
        return digest.hexdigest()

    def unchanged(self, kind: str, path: str, stat: os.stat_result, type_: type
                  ) -> Any | None:
        """The entry of a file whose stat signature is the one recorded with it, without
        its text: None when the file may have changed (read it and `get`)."""
        if self.folder is None:
            return None
        known = self._stats.get(f"{kind}\0{path}")
        if known is None or known[:5] != signature(stat):
            return None
        return self._decoded(known[5], type_)

    def forget(self, kind: str, path: str, text: str | None = None) -> None:
        """Drop a file's entry found damaged after it was taken (a body that does not
        decode, see LazyK8sObject): the next run parses the file and writes it anew.
        `text`: the content it was looked up by; else the one its signature recorded."""
        if self.folder is None:
            return
        known = self._stats.pop(f"{kind}\0{path}", None)
        key = self._entry_key(kind, path, text) if text is not None else \
            known[5] if known is not None else None
        if key is not None:
            self._old.pop(key, None)
            self._used.pop(key, None)
        self._dirty = True

    def _decoded(self, key: str, type_: type) -> Any | None:
        raw = self._old.get(key)
        if raw is None:
            raw = self._used.get(key)
        if raw is None:
            self.misses += 1
            return None
        try:
            value = msgspec.msgpack.decode(raw, type=type_)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError):
            self.misses += 1
            return None
        self._used[key] = raw
        self.hits += 1
        return value

    def _record(self, kind: str, path: str, stat: os.stat_result, key: str) -> None:
        name = f"{kind}\0{path}"
        if not trusted(stat, self.started_ns):
            if self._stats.pop(name, None) is not None:  # that file has changed since
                self._dirty = True
            return
        known = (*signature(stat), key)
        if self._stats.get(name) != known:
            self._stats[name] = known
            self._recorded.add(name)
            self._dirty = True

    def put(self, kind: str, path: str, text: str, value: Any,
            stat: os.stat_result | None = None) -> None:
        if self.folder is None:
            return
        try:
            raw = msgspec.msgpack.encode(value)
        except (TypeError, ValueError, OverflowError):  # an int beyond 64 bits: not cached
            return
        key = self._entry_key(kind, path, text)
        self._keep(key, raw)
        if stat is not None:
            self._record(kind, path, stat, key)

    def save(self) -> None:
        """Write this run's entries (and earlier ones, up to MAX_ENTRIES) when anything
        is new: as a delta to the pack read when that is little, else the pack whole. A
        failure to write is not the user's problem: the next run parses again."""
        if self.folder is None or not self._dirty:
            return
        self._dirty = False  # saved (or not writable: not tried again this run)
        with contextlib.suppress(OSError):
            if self._save_delta():
                return
            entries = dict(self._used)
            for key, raw in self._old.items():
                if len(entries) >= MAX_ENTRIES:
                    break
                entries.setdefault(key, raw)
            # signatures whose entry is gone are of no use
            stats = {name: known for name, known in self._stats.items()
                     if known[5] in entries}
            new = not self.folder.is_dir()
            self.folder.mkdir(exist_ok=True)
            token = os.urandom(8).hex()
            _write_atomic(self.folder / PACK,
                          msgspec.msgpack.encode(_Pack(self.key, entries, stats, token)))
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.folder / DELTA)
            if new:
                _prune_versions(self.folder.parent, self.folder.name)

    def _save_delta(self) -> bool:
        """Write what runs added to the pack this one read (the delta read with it, and
        this run's new entries and signatures) as that pack's delta, when it is little
        (DELTA_SHARE of the pack); False: the pack is to be written whole. A signature
        this run dropped stays in the pack: a stat the file no longer has (a miss)."""
        pack, folder = self._pack, self.folder
        if pack is None or folder is None:
            return False
        old = pack.entries
        added = dict(self._delta.entries) if self._delta is not None else {}
        for key in self._put:
            raw = self._used.get(key)
            if raw is not None and old.get(key) != raw:
                added[key] = raw
        stats = dict(self._delta.stats) if self._delta is not None else {}
        for name in self._recorded:
            known = self._stats.get(name)
            if known is not None and pack.stats.get(name) != known:
                stats[name] = known
        if sum(len(raw) for raw in added.values()) + 64 * len(stats) \
                > DELTA_SHARE * self._pack_size:
            return False
        _write_atomic(folder / DELTA,
                      msgspec.msgpack.encode(_Delta(self.key, pack.token, added, stats)))
        return True


# Key folders kept beside a new one (the newest by their pack's mtime): each change of
# pool-advisor's sources in a checkout, or a new version, makes a new folder of a few MB.
# Two versions used in turn (a pinned pre-commit hook and a development install) are
# both kept; a folder is looked at only when another is made.
KEEP_VERSIONS = 4


def _prune_versions(base: Path, current: str) -> None:
    """Remove the key folders of `base` beyond the KEEP_VERSIONS newest (with `current`).
    Only folders holding a pack are ours to remove."""
    found: list[tuple[int, str]] = []
    with os.scandir(base) as entries:
        for entry in entries:
            if entry.name == current or not entry.is_dir(follow_symlinks=False):
                continue
            try:
                found.append((os.stat(os.path.join(entry.path, PACK)).st_mtime_ns, entry.path))
            except OSError:
                continue
    if len(found) < KEEP_VERSIONS:
        return
    import shutil  # only when a folder is removed

    for _mtime, path in sorted(found, reverse=True)[KEEP_VERSIONS - 1:]:
        shutil.rmtree(path, ignore_errors=True)


def _make_base(base: Path) -> None:
    """The cache folder with its .gitignore and CACHEDIR.TAG; OSError when the root is
    not writable."""
    if base.is_symlink():
        raise OSError(f"{base} is a symlink")  # never write through one
    base.mkdir(exist_ok=True)
    ignore = base / ".gitignore"
    if not ignore.is_file():
        _write_atomic(ignore, b"# Automatically created by pool-advisor.\n*\n")
    tag = base / "CACHEDIR.TAG"
    if not tag.is_file():
        _write_atomic(tag, b"Signature: 8a477f597d28d172789f06886806bc55\n"
                      b"# This file is a cache directory tag created by pool-advisor.\n")


def _read(path: Path, type_: type) -> tuple[Any, int] | None:
    """The file at `path` decoded as `type_`, and its size in bytes; None when it is
    missing or damaged."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        return msgspec.msgpack.decode(data, type=type_), len(data)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError):
        return None


def _read_pack(path: Path, key: str) -> tuple[_Pack, int] | None:
    """The pack at `path` and its size in bytes; None when it is missing, damaged or
    another key's."""
    found = _read(path, _Pack)
    return found if found is not None and found[0].key == key else None


def _read_delta(path: Path, key: str, token: str) -> _Delta | None:
    """The delta at `path` when it adds to the pack of `token` (else None: written for
    a pack another run has replaced since, damaged, or none)."""
    found = _read(path, _Delta)
    delta = found[0] if found is not None else None
    return delta if delta is not None and delta.key == key and delta.token == token else None


def _write_atomic(path: Path, data: bytes) -> None:
    # A name no other run picks (its pid and 8 random bytes), created exclusively, as
    # tempfile.mkstemp does, without importing tempfile (with shutil and random: ~12 M
    # instructions of a warm run that writes one entry); chmod 0644 after, as before
    tmp = os.path.join(path.parent, f".tmp-{os.getpid()}-{os.urandom(8).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)  # whatever the umask took off, as the files mkstemp wrote
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --- YAML node trees ---------------------------------------------------------------
# A mapping whose keys are strings, each with its position, is [0, line, col, {key:
# value}, positions] (a msgpack map: msgspec decodes it into a dict in C, and its key
# cache gives one str per recurring key); another mapping (keys that are not all
# strings, or merged keys without a position) is [3, line, col, keys, values, position
# keys, positions]; a sequence [1, line, col, values, positions], a block scalar [2, text,
# style]; other scalars are themselves (a list is always one of these). Positions are
# yamlnodes.Positions' packed form (the bytes of an int array: 4 per position key, 2 per item), as
# advisor.read.yamlpos holds them; a node whose `data` was unpacked (rewritten by a
# renderer) is packed again from it, and is not cached when a key or item has no position.


def encode_tree(value: Any) -> Any:
    from advisor.read.yamlnodes import BlockStr, PosList, PosMap

    if isinstance(value, PosMap):
        lc = value.lc
        pos = lc.packed
        keys = tuple(value)
        if pos is None:  # rewritten by a renderer (kustomize placing): packed again
            data = lc.data
            packed = _packed(data.values(), 4)
            if tuple(data) == keys and all(k.__class__ is str for k in keys):
                # as read: the short form, which decodes without packing again
                return [0, lc.line, lc.col, {k: encode_tree(v) for k, v in value.items()},
                        packed]
            return [3, lc.line, lc.col, list(keys), [encode_tree(v) for v in value.values()],
                    list(data), packed]
        if lc._keys is None:
            raise TypeError("positions not packed")
        if keys == lc._keys and all(k.__class__ is str for k in keys):
            return [0, lc.line, lc.col, {k: encode_tree(v) for k, v in value.items()}, pos]
        return [3, lc.line, lc.col, list(keys), [encode_tree(v) for v in value.values()],
                list(lc._keys), pos]
    if isinstance(value, PosList):
        lc = value.lc
        pos = lc.packed
        if pos is None:
            data = lc.data
            pos = _packed((data.get(i) for i in range(len(value))), 2)
        elif lc._keys is not None:
            raise TypeError("positions not packed")
        return [1, lc.line, lc.col, [encode_tree(v) for v in value], pos]
    if isinstance(value, BlockStr):
        return [2, str(value), value.style]
    if isinstance(value, (dict, list, tuple, bytes)):  # a plain container: not from yamlpos
        raise TypeError("not a yamlpos tree")
    return value


def _packed(positions: Any, width: int) -> bytes:
    """Unpacked positions (`width` ints each) as the bytes of an int array, as `packed`
    holds them; TypeError when one is missing or not `width` ints."""
    from array import array

    ints = array("i")
    for each in positions:
        if each is None or len(each) != width:
            raise TypeError("positions not known for every key or item")
        try:
            ints.extend(each)
        except (TypeError, OverflowError):
            raise TypeError("positions are not ints") from None
    return ints.tobytes()


def encode_body(value: Any) -> bytes:
    """A K8sObject's body for CachedObject.body (msgpack bytes, which the entry holds as
    a bin value); TypeError for what encode_tree refuses."""
    return msgspec.msgpack.encode(encode_tree(value))


def decode_body(raw: Any) -> Any:
    """encode_body's inverse, given the entry's bin value (LazyK8sObject.body);
    ValueError or TypeError when damaged."""
    try:
        value = msgspec.msgpack.decode(msgspec.msgpack.decode(raw, type=bytes))
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None
    return decode_tree(value)


# What a scalar decodes to (msgpack's other types, a map, bytes or an extension, are
# not what encode_tree writes).
_SCALARS = frozenset({str, int, float, bool, type(None)})


def decode_tree(value: Any) -> Any:
    """encode_tree's inverse; ValueError (or TypeError) for what encode_tree cannot have
    written. Scalars are taken as they are without a call each (a warm check decodes
    every manifest's tree: the recursion per scalar was half of it)."""
    if value.__class__ in _SCALARS:
        return value
    from advisor.read.yamlnodes import _KEY_TUPLES, _PAIR, BlockStr, PosList, PosMap, shared_keys

    scalars = _SCALARS
    known_keys = _KEY_TUPLES
    head = _PAIR.pack  # a packed `_pos` opens with the node's line and col

    def node(value: Any) -> Any:
        if value.__class__ is not list:
            raise ValueError("not an encoded tree")
        tag = value[0]
        if tag == 0:
            _, line, col, items, pos = value
            if items.__class__ is not dict or pos.__class__ is not bytes \
                    or len(pos) != 16 * len(items):
                raise ValueError("not an encoded tree")
            keys = tuple(items)
            "".join(keys)  # TypeError unless every key is a string, as written
            mapping = PosMap(items)
            for k, v in items.items():
                if v.__class__ not in scalars:
                    mapping[k] = node(v)
            # the positions set here, not by a call to place(): a third of decoding
            mapping._keys = known_keys.get(keys) or shared_keys(keys)
            mapping._pos = head(line, col) + pos
            return mapping
        if tag == 3:
            _, line, col, keys, values, lc_keys, pos = value
            if len(keys) != len(values) or pos.__class__ is not bytes \
                    or len(pos) != 16 * len(lc_keys):
                raise ValueError("not an encoded tree")
            mapping = PosMap(zip(keys, [v if v.__class__ in scalars else node(v)
                                        for v in values], strict=True))
            mapping.place(line, col, tuple(lc_keys), pos)
            return mapping
        if tag == 1:
            _, line, col, values, pos = value
            if pos.__class__ is not bytes or len(pos) != 8 * len(values):
                raise ValueError("not an encoded tree")
            seq = PosList([v if v.__class__ in scalars else node(v) for v in values])
            seq._keys = None
            seq._pos = head(line, col) + pos
            return seq
        if tag == 2:
            block = BlockStr(value[1])
            block.style = value[2]
            return block
        raise ValueError("not an encoded tree")

    try:
        return node(value)
    finally:
        # The closure holds itself through its cell: a cycle per tree, 40,000 objects
        # left to the cycle collector on a warm check of 5,000 files.
        node = None
