"""A program's YAML configuration as the files it reads, merged the way it merges them,
each value with the file and line it is written on (pure).

A configuration is a tree of PodText nodes (advisor/read/apps/podfiles.py): one file's
text (`held`), files merged key by key (`deep`: maps merge, a later value wins),
top-level sections taken whole from the last file that has them (`concat`, and
`shallow` here: Synapse's read_config_files `dict.update`), or a file whose text is not
in the repository (`unheld`). `lookup(node, path)` says what is set at a dotted path and
which files not held, merged after it (or anywhere when it is not set), could set it
instead: such a value is counted with a note, and a value nobody sets whose default
such a file could replace is unknown, never the default.
"""

from __future__ import annotations

from typing import Literal

from msgspec import Struct, field

from advisor.read.apps.podfiles import PodText
from advisor.read.apps.source import AppFile


class _Unreadable:
    """A file whose YAML is not read (an error): what it sets is not known."""

    def __init__(self, why: str) -> None:
        self.why = why


class Lookup(Struct):
    state: Literal["set", "missing", "blocked"]  # blocked: a parent is no mapping
    value: object = None
    file: AppFile | None = None
    line: int | None = None  # 1-based, in file.text
    # Files not held that could set the value instead: merged after the one that sets it
    # (state set), or anywhere (state missing)
    later: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.state == "set"


def shallow(parts: list[PodText]) -> PodText:
    """Files whose top-level sections replace each other whole (Synapse's -c files)."""
    return PodText(kind="concat", parts=tuple(parts))


def deep(parts: list[PodText]) -> PodText:
    """Files merged key by key (figment's admerge, matrix-tools render-config)."""
    return PodText(kind="deep", parts=tuple(parts))


class Reader:
    """Lookups over one configuration, each file parsed once."""

    def __init__(self) -> None:
        self._docs: dict[int, object] = {}
        self.problems: list[str] = []

    def _doc(self, f: AppFile) -> object:
        key = id(f)
        if key not in self._docs:
            from advisor.read.sources.k8s import load_yaml_stream

            docs, problems = load_yaml_stream(f.text, f.path)
            self._docs[key] = _Unreadable(f"{f.path}: not read as YAML ("
                                          f"{problems[0].message})") if problems \
                else docs[0][0] if docs else None
        return self._docs[key]

    def lookup(self, node: PodText, path: tuple[str, ...]) -> Lookup:
        if node.kind == "unheld":
            return Lookup(state="missing", later=[node.why])
        if node.kind == "held" and node.file is not None:
            return self._in_file(node.file, path)
        if node.kind == "deep":
            result = Lookup(state="missing")
            for part in node.parts:
                found = self.lookup(part, path)
                if found.state == "set":
                    result = found
                elif found.state == "blocked":
                    result = Lookup(state="missing", later=found.later)
                else:
                    result.later = [*result.later, *found.later]
            return result
        # concat, shallow: the whole top-level section of the last file that has it
        later: list[str] = []
        for part in reversed(node.parts):
            top = self.lookup(part, path[:1])
            if top.state == "set":
                found = self.lookup(part, path)
                found.later = [*found.later, *later]
                return found
            later = [*top.later, *later]
        return Lookup(state="missing", later=later)

    def _in_file(self, f: AppFile, path: tuple[str, ...]) -> Lookup:
        node = self._doc(f)
        if isinstance(node, _Unreadable):
            return Lookup(state="missing", later=[node.why])
        parent = None
        for i, key in enumerate(path):
            if not isinstance(node, dict):
                return Lookup(state="blocked" if i else "missing")
            if key not in node:
                return Lookup(state="missing")
            parent, node = node, node[key]
        line = None
        lc = getattr(parent, "lc", None)
        if lc is not None:
            try:
                line = lc.key(path[-1])[0] + 1
            except (KeyError, TypeError, AttributeError):
                line = None
        return Lookup(state="set", value=node, file=f, line=line)

    def keys(self, node: PodText, path: tuple[str, ...]) -> list[str]:
        """The keys of the mapping at `path`, as merged."""
        if node.kind == "held" and node.file is not None:
            found = self._in_file(node.file, path)
            return [str(k) for k in found.value] if found.found and \
                isinstance(found.value, dict) else []
        if node.kind == "deep":
            out: list[str] = []
            for part in node.parts:
                out += [k for k in self.keys(part, path) if k not in out]
            return out
        if node.kind == "concat":
            for part in reversed(node.parts):
                if self.lookup(part, path[:1]).found:
                    return self.keys(part, path)
        return []


def cite(found: Lookup, key: str):
    """The Source of a value found (its file and line)."""
    assert found.file is not None
    return found.file.cite(found.line, key, key.rsplit(".", 1)[-1])


def later_note(found: Lookup, key: str) -> str:
    """The note on a value files not held, merged after it, could set instead."""
    if not found.later:
        return ""
    return (f"{key} could be set again by what is merged after it and not in the "
            f"repository: {'; '.join(found.later)}")
