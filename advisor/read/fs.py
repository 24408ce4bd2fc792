"""Reading files under the scanned root, safely.

Sources read through `Root` only: it refuses paths (and symlinks) that leave the
root, binary files and non-UTF-8 text, each as an `InputError` with the path, so one
bad file becomes one finding and never a traceback.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from msgspec import Struct

MAX_FILE_BYTES = 8 * 1024 * 1024


class InputError(Exception):
    """A file pool-advisor cannot read; carries where, for a file:line message."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message

    def label(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"


class ReadOnce:
    """What one run has read, so each file is read once: the texts of application
    sources (the app scan reads them for pool settings, the SQL scan again for queries)
    and the manifests whose suppression comments are known. Identity-hashed: a Root
    holding it stays hashable."""

    __slots__ = ("cache", "marks", "suppressions_read", "texts")

    def __init__(self) -> None:
        # The run's parse cache (advisor.read.cache.FileCache), once it is open: the app
        # readers keep what they extract from one source file there (apps/appcache.py).
        self.cache: object | None = None
        self.texts: dict[str, str] = {}  # by real path (str of the resolved Path)
        self.suppressions_read: set[str] = set()
        # The suppression comments of the sources the app and SQL scans read, by path as
        # shown: a finding in one of them does not make the check read it again.
        self.marks: dict[str, dict[int, list[str]]] = {}

    def note_marks(self, shown: str, text: str) -> None:
        from advisor.read.suppress import scan_suppressions

        self.marks[shown] = scan_suppressions(text) if "pool-advisor" in text else {}


class Root(Struct, frozen=True, dict=True):
    """The folder being scanned. Paths reported to users are relative to `display`.
    (`dict`: room for what is worked out once per root, never compared or encoded.)"""

    path: Path
    once: ReadOnce | None = None  # a run's reads (advisor.engine.check.scan); None: no memory

    @classmethod
    def of(cls, path: str | Path) -> Root:
        return cls(Path(path).resolve())

    def resolve(self, name: str | Path, *, relative_to: Path | None = None) -> Path:
        """Absolute, symlink-free path for `name`; InputError when it leaves the root."""
        if "\x00" in str(name):  # no OS path holds one (a C string ends there)
            raise InputError(str(name).replace("\x00", "\\0"),
                             "file name contains a NUL byte; not read")
        return self._resolved(self._given(name, relative_to))

    def _given(self, name: str | Path, relative_to: Path | None) -> Path:
        p = Path(name)
        return p if p.is_absolute() else (relative_to or self.path) / p

    def _real_root(self) -> str | None:
        """str(self.path) when it is its own real path (Root.of resolves it), else None;
        worked out once."""
        if "real_root" not in self.__dict__:
            shown = str(self.path)
            self.__dict__["real_root"] = shown if self.path.is_absolute() and \
                os.path.realpath(shown) == shown else None
        return self.__dict__["real_root"]

    def real(self, path: Path) -> Path:
        """`path.resolve()`. Below a root that is its own real path, only the components
        below the root are looked at (an lstat each); a symlink, a missing component or
        a `..` among them leaves it to `resolve()`. A manifest four folders deep in a
        repository five deep was eleven system calls, now four."""
        root = self._real_root()
        rel = relative_posix(str(path), root) if root is not None and \
            path.is_absolute() else None
        if rel is None:
            return _resolve(path)
        if rel == ".":
            return path
        seen = self._real_seen()
        if str(path) in seen:  # found so this run
            return path
        top = root.rstrip("/")
        parts: list[str] = []
        moved = False  # a `..` or `.` taken out: another path than `path` is returned
        names = rel.split("/")
        last = len(names) - 1
        for index, part in enumerate(names):
            if part in ("", "."):
                moved = True
                continue
            if part == "..":
                moved = True
                # the folder it leaves was looked at (no symlink): `..` is its parent
                # (kustomize's `../../base`: each was a whole resolve())
                if not parts:
                    return _resolve(path)
                parts.pop()
                continue
            parts.append(part)
            # the path itself, when nothing was taken out, is held as the text `path`
            # already caches: one string per file held by the run, not two
            here = str(path) if index == last and not moved else \
                f"{top}/{'/'.join(parts)}"
            if here in seen:
                continue
            try:
                mode = os.lstat(here).st_mode
            except OSError:
                return _resolve(path)
            if stat.S_ISLNK(mode):
                return _resolve(path)
            seen.add(here)
        if not moved:
            return path  # the same object: `regular` knows a real path so
        return Path(f"{top}/{'/'.join(parts)}") if parts else Path(top or "/")

    def regular(self, path: Path) -> tuple[str, os.stat_result] | None:
        """(`path` as shown, its lstat) for a regular file below a root that is its own
        real path, reached without a symlink (its folders looked at as `real` does, once
        per run); None for anything else: `read_text` reads it and says what is wrong.
        One lstat of the file: what a reader needs to know it unchanged (advisor.read.cache)."""
        root = self._real_root()
        if root is None:
            return None
        return self._regular(str(path), root)

    def _regular(self, shown: str, root: str) -> tuple[str, os.stat_result] | None:
        rel = relative_posix(shown, root)
        if rel is None or rel == ".":
            return None
        folder, _, name = shown.rpartition("/")
        if name in ("", ".", ".."):
            return None
        seen = self._real_seen()
        if folder != root and folder not in seen:
            parent = Path(folder)
            if self.real(parent) is not parent:  # a symlink, `..` or missing on the way
                return None
        try:
            st = os.lstat(shown)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        seen.add(shown)
        return rel, st

    def trust_folders(self, folders: list[str]) -> None:
        """Folders below the root that a walk from its real path entered without
        following a symlink (Discovered.real_dirs): real paths, not looked at again by
        `real` and `regular` (Path(folder) and an lstat per folder of a 5,000-manifest
        tree were a third of knowing its files by their stat)."""
        root = self._real_root()
        if root is not None:
            self._real_seen().update(f for f in folders
                                     if relative_posix(f, root) not in (None, "."))

    def read_below(self, rel: str, *, keep: bool = False
                   ) -> tuple[str, os.stat_result | None] | None:
        """(text, lstat) of the file at `rel`, a path relative to the root as shown (what
        `rel` returns, as the SQL scan's candidates are), read with one lstat of it, no
        pathlib and no stat before the open (the lstat said it is a regular file; the
        opened file is checked again): reading every source of a tree through
        `read_text` cost three times the read. The lstat is None when the text is one
        another reader of this run kept (`keep`, as read_text's). None when the file is
        not plainly a regular file below a root that is its own real path (a symlink on
        the way, `..`, missing, too large): `resolve` and `read_text` say what is wrong.
        InputError when it is one but is no UTF-8 text, as read_text's."""
        root = self._real_root()
        if root is None or not rel or rel[0] == "/" or "\x00" in rel \
                or posixpath.normpath(rel) != rel:
            return None  # "", absolute, `..`, `.` or `//` in it: not a path as shown
        full = f"{root.rstrip('/')}/{rel}"
        once = self.once
        if once is not None and (kept := once.texts.get(full)) is not None:
            return kept, None
        found = self._regular(full, root)
        if found is None or found[0] != rel or found[1].st_size > MAX_FILE_BYTES:
            return None
        st = found[1]
        try:
            data = read_regular(Path(full), lstat=st)
        except OSError:
            return None  # changed under us: read_text says how
        text = decode_text(rel, data)
        if keep and once is not None:
            once.texts[full] = text
        return text, st

    def _real_seen(self) -> set[str]:
        """The paths below the root found to be no symlink this run (folders and files):
        each is looked at once, not once per file below it and again per read of the file
        (three lstats of the same folders per manifest were a tenth of a warm check)."""
        seen = self.__dict__.get("real_seen")
        if seen is None:
            seen = self.__dict__["real_seen"] = set()
        return seen

    def _resolved(self, given: Path) -> Path:
        real = self.real(given)
        if relative_posix(str(real), str(self.path)) is None:
            raise InputError(self.rel(given), f"{given} is outside the scanned root {self.path}")
        return real

    def rel(self, p: str | Path) -> str:
        """Path as shown to users: relative to the root when inside it."""
        path = Path(p)
        found = relative_posix(str(self.real(path)), str(self.path))
        return found if found is not None else path.as_posix()

    def read_text(self, name: str | Path, *, relative_to: Path | None = None,
                  keep: bool = False, resolved: bool = False, bom: bool = False) -> str:
        """The text of a file under the root. `keep`: another reader of this run will
        ask for it too (an application source): kept in `once`, not read again.
        `resolved`: `name` is what `resolve` returned (not looked at again). `bom`: a
        UTF-8 byte-order mark is kept (a reader whose program refuses one: PgBouncer)."""
        if resolved:
            given = real = Path(name)
        else:
            if "\x00" in str(name):
                self.resolve(name)  # the InputError it raises
            given = self._given(name, relative_to)
            real = self._resolved(given)
        if not bom and self.once is not None and \
                (kept := self.once.texts.get(str(real))) is not None:
            return kept
        shown = self._shown(given)
        via = "" if str(given.absolute()) == str(real) else f"symlink to {self.rel(real)}: "
        try:
            data = read_regular(real)
        except NotRegularFile as exc:
            raise InputError(shown, f"{via}{exc.kind}, not a regular file; not read") from None
        except FileTooLarge as exc:
            raise InputError(shown, f"{via}file is larger than "
                             f"{MAX_FILE_BYTES // (1024 * 1024)} MiB ({exc.size} bytes); "
                             "not read") from None
        except IsADirectoryError:
            raise InputError(shown, f"{via}is a directory, expected a file") from None
        except FileNotFoundError:
            raise InputError(shown, f"{via}file not found") from None
        except OSError as exc:
            raise InputError(shown, f"{via}cannot read: {exc.strerror or exc}") from None
        text = decode_text(shown, data, keep_bom=bom)
        if keep and not bom and self.once is not None:
            self.once.texts[str(real)] = text
        return text

    def keep(self, name: str | Path, text: str) -> None:
        """Keep a text read without `keep` for the run's other readers (see read_text)."""
        if self.once is not None:
            self.once.texts[str(self._resolved(self._given(name, None)))] = text

    def _shown(self, given: Path) -> str:
        """The path as the user wrote it (a symlink's own name, not its target)."""
        found = relative_posix(str(given.absolute()), str(self.path))
        return found if found is not None else self.rel(given)


def _resolve(path: Path) -> Path:
    """path.resolve(); a symlink loop is left as it is (Python 3.11's pathlib raises
    RuntimeError for one, which stopped the whole run: audit 10a D6), so opening it
    fails with ELOOP and says so where the file is read."""
    try:
        return path.resolve()
    except RuntimeError:
        return path.absolute()


def relative_posix(path: str, root: str) -> str | None:
    """`Path(path).relative_to(root).as_posix()` for two absolute, normalised POSIX path
    strings (str() of a Path), or None when `path` is not `root` or below it: string
    work, where pathlib parses both paths again (a third of reading a small manifest)."""
    if path == root:
        return "."
    prefix = root if root.endswith("/") else root + "/"
    return path[len(prefix):] if path.startswith(prefix) else None


class NotRegularFile(OSError):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class FileTooLarge(OSError):
    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


def special_kind(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO", "a socket", ...); None for a regular file
    or a directory."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "not a regular file"


def read_regular(path: Path, limit: int = MAX_FILE_BYTES, *,
                 lstat: os.stat_result | None = None) -> bytes:
    """The bytes of a regular file of at most `limit` bytes. Checked before reading:
    a FIFO, socket or device is never opened for reading (stat first: opening a FIFO
    blocks until a writer comes, a device may act on open), and the size is known
    before a byte is read. O_NONBLOCK guards the moment between stat and open, and the
    opened file is checked again. `lstat`: the caller's lstat of `path`, which found a
    regular file (no symlink): the stat before the open is that one."""
    st = lstat if lstat is not None and stat.S_ISREG(lstat.st_mode) else os.stat(path)
    kind = special_kind(st.st_mode)
    if kind is not None:
        raise NotRegularFile(kind)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", str(path))
    if st.st_size > limit:
        raise FileTooLarge(st.st_size)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        kind = special_kind(st.st_mode)
        if kind is not None:
            raise NotRegularFile(kind)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        chunks: list[bytes] = []
        total = 0
        while total <= limit:  # the file may grow after the stat
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise FileTooLarge(total)
        return b"".join(chunks)
    finally:
        os.close(fd)


def decode_text(shown: str, data: bytes, *, keep_bom: bool = False) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise InputError(shown, f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    if b"\x00" in data[:8192]:
        raise InputError(shown, "binary file (contains NUL bytes), expected text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(shown, f"not valid UTF-8 (byte 0x{data[exc.start]:02x})", line) from None
    return text if keep_bom else text.removeprefix("\ufeff")


def walk(top: str | Path, followlinks: bool = False):
    """os.walk, top-down, without recursion: Python 3.11's os.walk recurses once per
    level, so a 1000-deep folder tree raised RecursionError. The caller may prune
    `dirs` in place, as with os.walk. Unreadable folders are skipped."""
    for folder, dirs, files, _links in walk_entries(top, followlinks):
        yield folder, dirs, [entry.name for entry in files]


def walk_entries(top: str | Path, followlinks: bool = False,
                 on_error: Callable[[str, OSError], None] | None = None):
    """`walk`, with the files as os.DirEntry (their type, symlink or regular file, comes
    with the folder listing, without a stat per file), and the names of the subfolders
    that are symlinks (known from the listing too, not by an lstat of each). A folder
    that cannot be listed is skipped, and given to `on_error` when there is one (the
    discovery of what is checked reports it: its files are not read)."""
    stack = [os.fspath(top)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            if on_error is not None:
                on_error(folder, exc)
            continue
        dirs, files = [], []
        links: set[str] = set()
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # as os.walk: a symlink to a folder is listed there
            except OSError:
                is_dir = False
            if is_dir:
                dirs.append(entry.name)
                if _is_link(entry):
                    links.add(entry.name)
            else:
                files.append(entry)
        yield folder, dirs, files, links
        for d in reversed(dirs):
            if followlinks or d not in links:
                stack.append(os.path.join(folder, d))


def _is_link(entry: os.DirEntry) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def rel_inside(path: str) -> str | None:
    """A relative POSIX path with `.` and `..` resolved ("" for the root itself); None
    when it leaves the root."""
    parts: list[str] = []
    for part in PurePosixPath(path).parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)
