"""The positioned YAML tree's node types, without PyYAML: a mapping (PosMap) or sequence
(PosList) that carries its positions, packed, and a block scalar (BlockStr).

advisor.read.yamlpos builds them from libyaml's nodes; the parse cache
(advisor.read.cache) rebuilds them from its bytes. A warm check that parses no YAML
decodes cached trees without importing PyYAML (its import, with yamlpos's reader and
resolver set-up, was 45 M instructions of such a run).
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

_PAIR = struct.Struct("=2i")  # two of array("i")'s ints, as its bytes hold them
_SHORT_PAIR = struct.Struct("=2H")  # two of array("H")'s, the short form (below)
_HEAD = 8  # bytes of the (line, col) pair that opens a packed `_pos` of ints


def pack_positions(ints: array) -> bytes:
    """Positions' packed form of `ints` (array("i"): line, col, then the positions):
    two bytes each when every one is below 65,536 (nearly every file), marked by one
    byte more (an odd length), else four."""
    if not ints or (max(ints) < 65536 and min(ints) >= 0):
        return array("H", ints).tobytes() + b"\0"
    return ints.tobytes()


def _pair(pos: bytes, j: int) -> tuple[int, int]:
    """The j-th (line, col) pair of a packed `_pos` (0: the node's own)."""
    if len(pos) & 1:
        return _SHORT_PAIR.unpack_from(pos, 4 * j)
    return _PAIR.unpack_from(pos, 8 * j)


def _pairs(pos: bytes) -> int:
    return len(pos) // 4 if len(pos) & 1 else len(pos) // 8


def _ints(pos: bytes) -> memoryview:
    return memoryview(pos)[:-1].cast("H") if len(pos) & 1 else memoryview(pos).cast("i")


class _Unpacked:
    """Where a Positions keeps its line, col and `data` once `data` was asked for."""

    __slots__ = ("col", "data", "line")

    def __init__(self, line: int, col: int, data: dict[Any, list[int]]) -> None:
        self.line = line
        self.col = col
        self.data = data


class Positions:
    """0-based positions of a mapping or sequence, its `lc` (itself: no object of their
    own), read as ruamel.yaml's LineCol: `line`, `col` where it starts; for a mapping,
    data[key] = [key line, key col, value line, value col]; for a sequence,
    data[index] = [line, col].

    Held packed, as read, in two slots: the keys (None for a sequence) and the bytes of an
    int array, line and col first, then 4 per key or 2 per item, two bytes each when
    they all fit (pack_positions). `data` is made from them the first time it is asked
    for (and is then what key/value/item read, so a renderer may rewrite it; `_keys`
    then holds it, with line and col, and `_pos` is None): a dict of 4-int lists per
    mapping was two thirds of the memory a manifest held, a LineCol object per mapping
    beside it 72 bytes more, and slots of their own for line, col and the unpacked data
    32 bytes more (a mapping of 112 bytes is 80 with two). A PosMap/PosList whose
    positions were never set has no `lc` (AttributeError, as a plain dict)."""

    __slots__ = ()
    _keys: Any  # tuple | None while packed; _Unpacked once `data` was made
    _pos: bytes | None

    def place(self, line: int, col: int, keys: tuple | None = None,
              pos: bytes | None = None) -> None:
        """Set the positions (`pos` None: none known per key or item yet; else the bytes
        of an int array, 4 ints per key or 2 per item)."""
        if pos is None:
            self._keys = _Unpacked(line, col, {})
            self._pos = None
        else:
            self._keys = keys
            self._pos = pack_positions(array("i", (line, col)) + array("i", pos))

    @property
    def line(self) -> int:
        pos = self._pos
        return self._keys.line if pos is None else _pair(pos, 0)[0]

    @line.setter
    def line(self, line: int) -> None:
        if self._pos is None:
            self._keys.line = line
        else:
            self._repack(0, line)

    @property
    def col(self) -> int:
        pos = self._pos
        return self._keys.col if pos is None else _pair(pos, 0)[1]

    @col.setter
    def col(self, col: int) -> None:
        if self._pos is None:
            self._keys.col = col
        else:
            self._repack(1, col)

    def _repack(self, at: int, value: int) -> None:
        ints = array("i", _ints(self._pos))
        ints[at] = value
        self._pos = pack_positions(ints)

    @property
    def _data(self) -> dict[Any, list[int]] | None:
        """The unpacked `data`; None while the positions are packed."""
        return None if self._pos is not None else self._keys.data

    @property
    def packed(self) -> bytes | None:
        """The per-key or per-item positions as the bytes of an int array (without line
        and col), or None once `data` was made."""
        pos = self._pos
        if pos is None:
            return None
        return array("i", _ints(pos)[2:]).tobytes() if len(pos) & 1 else pos[_HEAD:]

    @property
    def lc(self) -> Positions:
        self._pos  # noqa: B018 - AttributeError when no positions were set
        return self

    @property
    def data(self) -> dict[Any, list[int]]:
        pos = self._pos
        if pos is None:
            return self._keys.data
        ints = _ints(pos)
        line, col = ints[0], ints[1]
        if self._keys is None:
            data = {i: [ints[2 * i + 2], ints[2 * i + 3]] for i in range(len(ints) // 2 - 1)}
        else:
            data = {k: list(ints[4 * i + 2:4 * i + 6]) for i, k in enumerate(self._keys)}
        self._keys = _Unpacked(line, col, data)
        self._pos = None
        return data

    def _slot(self, k: Any) -> int:
        """The index of key `k`'s pair in the packed positions; -1 when they are not (or
        no longer) packed, or the mapping is long enough for a dict to pay."""
        keys = self._keys
        if self._pos is None or keys is None or len(keys) > 8:
            return -1
        try:
            return 1 + 2 * keys.index(k)
        except ValueError:
            raise KeyError(k) from None

    def key(self, k: Any) -> tuple[int, int]:
        j = self._slot(k)
        if j >= 0:  # _pair, inline: linking asks this for every source it records
            pos = self._pos
            return _SHORT_PAIR.unpack_from(pos, 4 * j) if len(pos) & 1 \
                else _PAIR.unpack_from(pos, 8 * j)
        got = self.data[k]
        return got[0], got[1]

    def value(self, k: Any) -> tuple[int, int]:
        j = self._slot(k)
        if j >= 0:
            pos = self._pos
            return _SHORT_PAIR.unpack_from(pos, 4 * j + 4) if len(pos) & 1 \
                else _PAIR.unpack_from(pos, 8 * j + 8)
        got = self.data[k]
        return got[2], got[3]

    def item(self, index: int) -> tuple[int, int]:
        pos = self._pos
        if pos is not None and self._keys is None and type(index) is int \
                and 0 <= index < _pairs(pos) - 1:
            return _SHORT_PAIR.unpack_from(pos, 4 + 4 * index) if len(pos) & 1 \
                else _PAIR.unpack_from(pos, 8 + 8 * index)
        got = self.data[index]
        return got[0], got[1]


class PosMap(Positions, dict):
    """A mapping with its positions (`lc`: itself)."""

    __slots__ = ("_keys", "_pos")


class PosList(Positions, list):
    """A sequence with its positions (`lc`: itself)."""

    __slots__ = ("_keys", "_pos")


class BlockStr(str):
    """A block scalar (`|` or `>`): its content starts on the line after the key."""

    __slots__ = ("style",)




# The keys of a mapping, in order, recur from manifest to manifest ((name, namespace,
# labels), (apiVersion, kind, metadata, spec)): one tuple for each, not one per mapping
# (a tenth of what a parsed manifest held). Only keys that are all strings: a tuple of
# 1 equals one of True or 1.0, and the key kept must be the one written. Bounded, as
# re's cache is: past the bound a new tuple is simply not shared.
_KEY_TUPLES: dict[tuple[str, ...], tuple[str, ...]] = {}
_KEY_TUPLES_MAX = 8192


def shared_keys(keys: tuple[str, ...]) -> tuple[str, ...]:
    found = _KEY_TUPLES.get(keys)
    if found is not None:
        return found
    if len(_KEY_TUPLES) < _KEY_TUPLES_MAX:
        _KEY_TUPLES[keys] = keys
    return keys


