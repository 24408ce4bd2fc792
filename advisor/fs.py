"""Reading files under the scanned root, safely.

Sources read through `Root` only: it refuses paths (and symlinks) that leave the
root, binary files and non-UTF-8 text, each as an `InputError` with the path, so one
bad file becomes one finding and never a traceback.
"""

from __future__ import annotations

from pathlib import Path

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


class Root(Struct, frozen=True):
    """The folder being scanned. Paths reported to users are relative to `display`."""

    path: Path

    @classmethod
    def of(cls, path: str | Path) -> Root:
        return cls(Path(path).resolve())

    def resolve(self, name: str | Path, *, relative_to: Path | None = None) -> Path:
        """Absolute, symlink-free path for `name`; InputError when it leaves the root."""
        p = Path(name)
        if not p.is_absolute():
            p = (relative_to or self.path) / p
        real = p.resolve()
        if real != self.path and self.path not in real.parents:
            raise InputError(self.rel(p), f"{p} is outside the scanned root {self.path}")
        return real

    def rel(self, p: str | Path) -> str:
        """Path as shown to users: relative to the root when inside it."""
        path = Path(p)
        try:
            return path.resolve().relative_to(self.path).as_posix()
        except ValueError:
            return path.as_posix()

    def read_text(self, name: str | Path, *, relative_to: Path | None = None) -> str:
        real = self.resolve(name, relative_to=relative_to)
        given = Path(name) if Path(name).is_absolute() else (relative_to or self.path) / name
        shown = self._shown(given)
        via = "" if given.absolute() == real else f"symlink to {self.rel(real)}: "
        try:
            data = real.read_bytes()
        except IsADirectoryError:
            raise InputError(shown, f"{via}is a directory, expected a file") from None
        except FileNotFoundError:
            raise InputError(shown, f"{via}file not found") from None
        except OSError as exc:
            raise InputError(shown, f"{via}cannot read: {exc.strerror or exc}") from None
        return decode_text(shown, data)

    def _shown(self, given: Path) -> str:
        """The path as the user wrote it (a symlink's own name, not its target)."""
        try:
            return given.absolute().relative_to(self.path).as_posix()
        except ValueError:
            return self.rel(given)


def decode_text(shown: str, data: bytes) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise InputError(shown, f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    if b"\x00" in data[:8192]:
        raise InputError(shown, "binary file (contains NUL bytes), expected text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(shown, f"not valid UTF-8 (byte 0x{data[exc.start]:02x})", line) from None
    return text.removeprefix("\ufeff")
