"""A chart's values.schema.json with what would be fetched left out, for the engine.

Helm validates the values against the chart's values.schema.json, and each vendored
subchart's, before it renders (helm/helm@e9b85e4 pkg/chart/common/util/jsonschema.go
ValidateAgainstSchema). The validator (santhosh-tekuri/jsonschema v6.0.3, go.mod) loads
what a `$ref` names outside the document through Helm's loaders: `http`/`https` with a
15 s client (newHTTPURLLoader), `file` from the disk (the document's own address is
file:///values.schema.json, so `"$ref": "defs.json"` reads /defs.json). A `$schema` that
is no draft it knows is loaded the same way (loader.go getDraft). zitadel/zitadel-charts@
9df601b charts/zitadel/values.schema.json `$ref`s
https://raw.githubusercontent.com/yannh/kubernetes-json-schema/...: offline the render
failed (no budget); online the check fetched what the repository names.

pool-advisor reads nothing outside the repository and reaches no network, so the engine
gets each schema with those references removed, and validation of the rest still runs
(bad values still stop the render, as they stop `helm install`):
- a `$ref`, `$dynamicRef` or `$recursiveRef` that is not a fragment of the document
  (`#...`) is removed: from draft 2019-09 on (and without `$schema`: the validator's
  default is 2020-12) its siblings still apply; up to draft-07 they are ignored next to a
  `$ref` (objcompiler.go compileDraft4 "All other properties in a $ref object MUST be
  ignored"), so only what a local reference may point into is kept (definitions, $defs);
- a `$schema` naming no draft the validator knows (draft.go draftFromURL) leaves the
  schema out (the whole document when it is the root's): its dialect cannot be known.
What is removed is said (HelmSchemaNote), never dropped without a word.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

from msgspec import Struct

MAX_SCHEMA_BYTES = 5 * 1024 * 1024  # Helm's MaxDecompressedFileSize (loader/archive)
MAX_ARCHIVE_BYTES = 100 * 1024 * 1024  # Helm's MaxDecompressedChartSize
MAX_ARCHIVE_DEPTH = 4  # a .tgz subchart inside a .tgz subchart ...

_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# keywords whose values are data, not schemas (a "$ref" there is a value)
_DATA = frozenset({"const", "enum", "default", "examples"})
# keywords whose values map names to schemas (a property may be named "default")
_MAPS = frozenset({"properties", "patternProperties", "definitions", "$defs",
                   "dependentSchemas", "dependencies"})
# what a draft-07 object with a $ref keeps: where a local reference may point
_CONTAINERS = frozenset({"definitions", "$defs", "$id", "id"})
# draftFromURL: the address without scheme, and the draft's year-like order
_DRAFTS = {"json-schema.org/schema": 2020, "json-schema.org/draft/2020-12/schema": 2020,
           "json-schema.org/draft/2019-09/schema": 2019, "json-schema.org/draft-07/schema": 7,
           "json-schema.org/draft-06/schema": 6, "json-schema.org/draft-04/schema": 4}
_DEFAULT_DRAFT = 2020


class SchemaNote(Struct, frozen=True):
    """What was left out of one schema: `where` (the schema's path in the chart, or in a
    .tgz subchart `archive.tgz#name/values.schema.json`), the references removed, and
    whether the whole schema was (an unknown `$schema` at its root)."""

    where: str
    refs: tuple[str, ...]
    whole: bool = False

    def text(self) -> str:
        documents = list(dict.fromkeys(r.split("#", 1)[0] or r for r in self.refs))
        shown = ", ".join(documents[:2]) + (", ..." if len(documents) > 2 else "")
        if self.whole and not self.refs:
            return (f"{self.where} not validated: it holds references and could not be "
                    "read or written back without them (not UTF-8, a number JSON cannot "
                    "hold, or nested too deep), and pool-advisor reaches no network, so the "
                    "values were not checked against it")
        if self.whole:
            return (f"{self.where} not validated: its $schema {shown} is no JSON Schema draft "
                    "the engine knows, and would be fetched (pool-advisor reaches no network "
                    "and reads nothing outside the repository), so the values were not "
                    "checked against it")
        n = len(self.refs)
        return (f"{self.where} not fully validated: {n} reference{'s' if n > 1 else ''} "
                f"outside the file ({shown}) not followed (Helm would fetch "
                f"{'them' if n > 1 else 'it'}; pool-advisor reaches no network and reads "
                "nothing outside the repository), so the values were checked against the "
                "rest of the schema only")


def _draft_of(url: str) -> int | None:
    address, _, fragment = url.partition("#")
    if fragment:
        return None
    for scheme in ("http://", "https://"):
        if address.startswith(scheme):
            address = address[len(scheme):]
            break
    return _DRAFTS.get(address)


def offline_schema(doc: Any) -> tuple[Any, list[str], bool]:
    """(`doc` without what the validator would load from outside it, what was removed
    in document order, whether the whole document was: then `doc` is `True`, the schema
    that accepts anything)."""
    removed: list[str] = []
    schema = doc.get("$schema") if isinstance(doc, dict) else None
    if isinstance(schema, str) and _draft_of(schema) is None:
        return True, [schema], True
    draft = _draft_of(schema) if isinstance(schema, str) else None
    return _schema(doc, draft or _DEFAULT_DRAFT, removed, root=True), removed, False


def _schema(node: Any, draft: int, removed: list[str], *, root: bool = False) -> Any:
    if isinstance(node, list):
        return [_schema(item, draft, removed) for item in node]
    if not isinstance(node, dict):
        return node
    schema = node.get("$schema")
    if isinstance(schema, str) and not root and ("$id" in node or "id" in node):
        known = _draft_of(schema)
        if known is None:  # a resource of its own, in a dialect not known: left out
            removed.append(schema)
            return True
        draft = known
    far = [k for k in _REFS if isinstance(node.get(k), str) and not node[k].startswith("#")]
    if far:
        removed.extend(node[k] for k in far)
        if draft < 2019 and "$ref" in far:
            node = {k: v for k, v in node.items() if k in _CONTAINERS}
        else:
            node = {k: v for k, v in node.items() if k not in far}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DATA:
            out[key] = value
        elif key in _MAPS and isinstance(value, dict):
            out[key] = {name: _schema(sub, draft, removed) for name, sub in value.items()}
        else:
            out[key] = _schema(value, draft, removed)
    return out


def offline_schema_text(data: bytes) -> tuple[bytes | None, list[str], bool]:
    """A values.schema.json's bytes made local: (the bytes the engine gets, or None when
    they are these, the references removed, whether the whole schema was)."""
    try:
        doc = json.loads(data.decode("utf-8-sig"))
        local, removed, whole = offline_schema(doc)
        if not removed:
            return None, [], False
        return json.dumps(local, allow_nan=False).encode(), removed, whole
    except (UnicodeDecodeError, ValueError, RecursionError):
        # Not JSON to Python (Go's reader is laxer: it takes invalid UTF-8), a number JSON
        # cannot write back (1e999), or nested past recursion. Without a reference in it
        # nothing is fetched (a `$schema` alone: the engine's proxy refuses it), and Helm
        # says what is wrong with it; else validation is left out rather than let the
        # engine fetch what it names.
        if not any(k.encode() in data for k in _REFS):
            return None, [], False
        return b"true", [], True


def schema_member(parts: list[str]) -> bool:
    """Whether an archive member (split on `/`) is a chart's values.schema.json:
    `top/values.schema.json` or a vendored subchart's, `top/charts/sub/values.schema.json`."""
    middle = parts[1:-1]
    return parts[-1] == "values.schema.json" and len(middle) % 2 == 0 \
        and all(p == "charts" for p in middle[0::2])


def archive_member(parts: list[str]) -> bool:
    """Whether an archive member is a subchart packed in the chart's charts/."""
    middle = parts[1:-1]
    return parts[-1].endswith(".tgz") and len(middle) % 2 == 1 \
        and all(p == "charts" for p in middle[0::2])


def offline_archive(data: bytes, shown: str, notes: list[SchemaNote], depth: int = 0
                    ) -> bytes | None:
    """A .tgz chart with every schema in it made local (its own, its subcharts', those of
    .tgz subcharts inside it), or None when nothing in it changes. An archive Helm would
    refuse (too large, unreadable) is left as it is: Helm refuses it without validating."""
    if depth > MAX_ARCHIVE_DEPTH:
        return None
    replaced: dict[str, bytes] = {}
    found: list[SchemaNote] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            total = 0
            for member in tar:
                total += member.size
                if total > MAX_ARCHIVE_BYTES:
                    return None
                parts = member.name.split("/")
                schema, packed = schema_member(parts), archive_member(parts)
                if not member.isfile() or not (schema or packed) \
                        or member.size > MAX_SCHEMA_BYTES:
                    continue
                handle = tar.extractfile(member)
                content = handle.read() if handle is not None else b""
                where = f"{shown}#{member.name}"
                if schema:
                    new, refs, whole = offline_schema_text(content)
                    if new is not None:
                        found.append(SchemaNote(where, tuple(refs), whole))
                else:
                    new = offline_archive(content, where, found, depth + 1)
                if new is not None:
                    replaced[member.name] = new
    except (tarfile.TarError, OSError, EOFError, ValueError):
        return None
    if not replaced:
        return None
    notes.extend(found)
    return _repacked(data, replaced)


def _repacked(data: bytes, replaced: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar, \
            tarfile.open(fileobj=out, mode="w:gz") as packed:
        for member in tar:
            if member.name in replaced:
                content = replaced[member.name]
                member.size = len(content)
                packed.addfile(member, io.BytesIO(content))
            elif member.isfile():
                packed.addfile(member, tar.extractfile(member))
            else:
                packed.addfile(member)
    return out.getvalue()


def offline_plan(chart: Path, notes: list[SchemaNote], shown: str = "") -> dict[str, Any]:
    """What the engine's view of the chart folder `chart` (helm_process.EngineView) puts in
    place of the chart's files so that no schema reaches outside: {name: bytes} for a file
    written instead, {name: plan} for a folder whose entries are. Vendored subcharts as
    Helm loads them: folders and .tgz in charts/, but names starting with `_` or `.`
    (load.go LoadFiles). `shown`: the chart's path from the top chart, for the notes."""
    from advisor.read.fs import read_regular

    plan: dict[str, Any] = {}
    if (chart / "values.schema.json").is_file():
        try:
            data = read_regular(chart / "values.schema.json", MAX_SCHEMA_BYTES)
        except OSError:
            data = None  # Helm says what is wrong with it
        new, refs, whole = offline_schema_text(data) if data is not None else (None, [], False)
        if new is not None:
            plan["values.schema.json"] = new
            notes.append(SchemaNote(_join(shown, "values.schema.json"), tuple(refs), whole))
    subs: dict[str, Any] = {}
    try:
        with os.scandir(chart / "charts") as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        entries = []
    for entry in entries:
        if entry.name.startswith(("_", ".")):
            continue
        where = _join(shown, f"charts/{entry.name}")
        try:
            if entry.is_dir():
                if (sub := offline_plan(Path(entry.path), notes, where)):
                    subs[entry.name] = sub
            elif entry.name.endswith(".tgz") and entry.is_file():
                packed = offline_archive(read_regular(Path(entry.path), MAX_ARCHIVE_BYTES),
                                         where, notes)
                if packed is not None:
                    subs[entry.name] = packed
        except OSError:
            continue  # Helm says what is wrong with it
    if subs:
        plan["charts"] = subs
    return plan


def _join(shown: str, name: str) -> str:
    return f"{shown}/{name}" if shown else name
