"""JSON output. Schema (version 1): schemas/pool-advisor-report.schema.json, documented
in docs/json-schema.md. In short:

{"schema_version": 1, "tool": {"name", "version"}, "roots": [...],
 "budgets": [{"server", "server_id", "version", "max_connections", "usable", "peak",
              "fits", "terms": {"max_connections": Term, "reserved": [Term],
              "contributions": [Contribution], "not_subtracted": [...]}, "memory"}],
 "findings": [{"code", "name", "severity", "message", "location": {"path", "line"},
               "related": [{"location", "message"}], "fix": {"description",
               "replacement"}, "fingerprint", "subject"}],
 "notices": [...]}
A Term is {"label", "value", "source": {"path", "line", "key", "default"}}.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

import msgspec
import msgspec.json

from advisor.budget.arith import derivation
from advisor.model import CheckResult, Finding, Location
from advisor.rules import Registry

if TYPE_CHECKING:
    from advisor.report.compare import BaseReport

SCHEMA_VERSION = 1


def _location(location: Location) -> dict:
    # A location is mostly a path and a line: those built as such, in field order (a
    # report of 1,100 findings holds 3,500 locations: asdict and a filter were 3.5 ms)
    if type(location) is Location and location.column is None \
            and location.end_line is None and location.path is not None:
        line = location.line
        return {"path": location.path} if line is None else {"path": location.path,
                                                              "line": line}
    return {k: v for k, v in msgspec.structs.asdict(location).items() if v is not None}


def to_dict(result: CheckResult, base: BaseReport | None = None) -> dict:
    budgets = []
    for b in result.budgets:
        budgets.append({
            "server": b.server,
            "server_id": b.server_id,
            "version": b.version.value,
            "max_connections": b.max_connections.value,
            "usable": b.usable,
            "peak": b.peak,
            "total_peak": b.total_peak,
            "fits": b.fits,
            "unknown_clients": list(b.unknown_clients),
            "unbounded_clients": list(b.unbounded_clients),
            "unknown_pairs": list(b.unknown_pairs),
            "unplaced_clients": list(b.unplaced_clients),
            "unread_files": list(b.unread_files),
            "exposed": list(b.exposed),
            "peak_is_floor": b.peak_is_floor,
            "rests_on": list(b.rests_on),
            # clients behind a PgBouncer that refuses their database (PA213): "fits"
            # is the arithmetic without them, not their fit
            "unserved": list(b.unserved),
            "refused": msgspec.to_builtins(b.refused) if b.refused else None,
            "client_sides": list(b.client_sides),
            "terms": {
                "version": msgspec.to_builtins(b.version),
                "max_connections": msgspec.to_builtins(b.max_connections),
                "reserved": [msgspec.to_builtins(t) for t in b.reserved],
                "contributions": [msgspec.to_builtins(c) for c in b.contributions],
                "not_subtracted": [msgspec.to_builtins(n) for n in b.not_subtracted],
                "spread_over": msgspec.to_builtins(b.spread_over) if b.spread_over else None,
            },
            # The arithmetic as every other format prints it (advisor.budget.arith), one step a line
            "arithmetic": derivation(b),
            "memory": msgspec.to_builtins(b.memory) if b.memory else None,
            "location": _location(b.location),
        })
    return {"schema_version": SCHEMA_VERSION,
            "tool": {"name": "pool-advisor", "version": result.tool_version},
            "roots": result.roots, "budgets": budgets,
            "findings": [_finding(f) for f in result.findings],
            "suppressed": [_finding(f) for f in result.suppressed],
            "notices": result.notices,
            "summary": _summary(result),
            **({"base": _base(base)} if base is not None else {})}


def _base(base: BaseReport) -> dict:
    """`check --base REF`: per server usable and peak before and after, the change, the
    head's verdict (as the change table says it), the terms that moved, what of the base
    was not read, and the findings new, fixed and unchanged by fingerprint. Before audit
    51 the JSON of a --base run had none of it (only stderr's text did)."""
    from advisor.report.compare import status, term_move

    diff = base.diff
    servers = [{
        "server": s.server, "server_id": s.server_id,
        "usable_before": s.usable_before, "usable_after": s.usable_after,
        "peak_before": s.peak_before, "peak_after": s.peak_after,
        "floor_before": s.floor_before, "floor_after": s.floor_after,
        "change": s.change, "status": status(s),
        "unread_before": s.unread_before, "unread_after": s.unread_after,
        "terms": [term_move(t) for t in s.terms],
    } for s in diff.servers]
    return {"ref": base.ref, "commit": base.commit, "not_read": list(base.not_read),
            "servers": servers,
            "findings": {"new": [f.fingerprint for f in diff.new],
                         "regressed": [f.fingerprint for f in diff.regressed],
                         "fixed": [f.fingerprint for f in diff.fixed],
                         "not_known": [n.finding.fingerprint for n in diff.not_known],
                         "unchanged": len(diff.unchanged)}}


def _finding(f: Finding) -> dict:
    return {
        "code": f.code, "name": f.name, "severity": f.severity.value,
        "message": f.message,
        "detail": f.detail,
        "location": _location(f.location),
        "related": [{"location": _location(r.location),
                     "message": r.message} for r in f.related],
        "fix": msgspec.to_builtins(f.fix) if f.fix else None,
        "fingerprint": f.fingerprint,
        "subject": f.subject,
    }


def _summary(result: CheckResult) -> dict:
    counts = {s: 0 for s in ("error", "warning", "info")}
    for f in result.findings:
        counts[f.severity.value] += 1
    return {"findings": len(result.findings), **counts,
            "suppressed": len(result.suppressed), "notices": len(result.notices),
            "servers": len(result.budgets),
            # over: the peak, a floor or not, is past what is usable; cannot_tell: a floor
            # still within it (some client unknown), which is no verdict either way
            "over": sum(1 for b in result.budgets if b.over),
            "cannot_tell": sum(1 for b in result.budgets
                               if not b.fits and b.peak <= b.usable and not b.refused
                               and not b.no_room_once_streaming),
            "cannot_connect": sum(1 for b in result.budgets if b.fits and b.unserved)}


def render(result: CheckResult, registry: Registry, base: BaseReport | None = None) -> str:
    return "".join(_chunks(to_dict(result, base))) + "\n"


# Characters gathered per write: few writes, little text held at once (1 MiB batches
# held 2.4 MB more at the peak of a 10,000-manifest check than 64 KiB ones).
WRITE_SIZE = 1 << 16


def write(result: CheckResult, registry: Registry, out: TextIO,
          base: BaseReport | None = None) -> None:
    """render()'s text, written to `out` as it is encoded. The whole text of a large
    repository's report was held three times at once (the encoder's chunks, their join,
    stdout's UTF-8 bytes): 24 MB of text, ~50 MB at the peak of a 30,000-manifest check."""
    batch: list[str] = []
    size = 0
    for chunk in _chunks(to_dict(result, base)):
        batch.append(chunk)
        size += len(chunk)
        if size >= WRITE_SIZE:
            out.write("".join(batch))
            batch.clear()
            size = 0
    batch.append("\n")
    out.write("".join(batch))


def _chunks(data: dict) -> Iterator[str]:
    """json.dumps(data, indent=2) in pieces: the top-level lists (budgets, findings,
    notices) one item at a time, so that a large report is never held whole."""
    if not data or any(type(k) is not str for k in data):
        yield _indented(data)  # json turns other keys into text its own way
        return
    sep = "{\n  "
    for key, value in data.items():
        yield f"{sep}{json.dumps(key)}: "
        sep = ",\n  "
        if isinstance(value, list) and value:
            item_sep = "[\n    "
            floatless = key in FLOATLESS
            for item in value:
                yield item_sep + _indented(item, floatless).replace("\n", "\n    ")
                item_sep = ",\n    "
            yield "\n  ]"
        else:
            yield _indented(value).replace("\n", "\n  ")
    yield "\n}"


# json.dumps(value) without its check for cycles (a report's dicts are trees): the
# same text, 15% sooner.
_COMPACT = json.JSONEncoder(check_circular=False)
# The report's lists whose items hold no float: a finding's fields are text, ints, None
# and bools (advisor.model.Finding, Location, Fix), a notice is text.
FLOATLESS = frozenset({"findings", "suppressed", "notices"})


def _indented(value: object, floatless: bool = False) -> str:
    """json.dumps(value, indent=2), made faster: with an indent, json takes its
    pure-Python encoder (0.23 s for a 5,000-manifest repository's 4.6 MB), without one
    its C encoder; msgspec lays that text out with the same indentation, every token
    (numbers, escapes) as the C encoder wrote it. NaN and Infinity are no JSON, and
    msgspec refuses them: such a value takes json's own indent=2.

    `floatless`: the value holds no float (msgspec writes 1e16 where json writes
    1e+16, and NaN as null); else _plain_floats looks at its floats. Then msgspec's own
    encoder, 3x json's, writes the same
    tokens when its text is ASCII without DEL (json escapes every other character,
    msgspec writes it as UTF-8); other text (and whatever msgspec refuses: a lone
    surrogate, an int beyond 64 bits) takes json's."""
    if floatless or _plain_floats(value):
        try:
            compact = msgspec.json.encode(value)
        except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
            pass
        else:
            if compact.isascii() and b"\x7f" not in compact:
                return msgspec.json.format(compact, indent=2).decode("ascii")
    try:
        return msgspec.json.format(_COMPACT.encode(value), indent=2)
    except msgspec.DecodeError:
        return json.dumps(value, indent=2)


def _plain_floats(value: object) -> bool:
    """Whether every float in `value` (plain data: dicts, lists and scalars) is one
    msgspec writes as json does: 0, or a magnitude from 1e-4 up to 1e16 (json's repr
    has an exponent out of that range, 1e+16 and 1e-05, where msgspec writes 1e16 and
    0.00001; NaN and infinities are refused by the comparisons). A budget holds a few
    thousand numbers: looked at here, 2.1 MB of budgets take msgspec's encoder (~40 M
    instructions) instead of json's (~130 M)."""
    if type(value) is not dict and type(value) is not list:
        return False
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            for key in item:  # type: ignore[attr-defined]
                if type(key) is not str:
                    return False  # json writes other keys its own way
            values = item.values()  # type: ignore[attr-defined]
        else:
            values = item
        for v in values:  # type: ignore[attr-defined]
            kind = type(v)
            if kind is str or kind is int or v is None or kind is bool:
                continue
            if kind is float:
                if v != 0 and not 1e-4 <= abs(v) < 1e16:
                    return False
            elif kind is dict or kind is list:
                stack.append(v)
            else:
                return False  # a tuple, a float subclass, a struct: json's own way
    return True


def load(text: str) -> CheckResult:
    """Read this module's output back into a CheckResult (for `comment`, `--base`)."""
    data = json.loads(text)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"unsupported pool-advisor JSON schema_version "
                         f"{data.get('schema_version')!r} (expected {SCHEMA_VERSION})")
    budgets = [{"server": b["server"], "server_id": b["server_id"], "usable": b["usable"],
                "peak": b["peak"], "total_peak": b.get("total_peak"),
                "spread_over": b["terms"].get("spread_over"),
                "version": b["terms"]["version"],
                "max_connections": b["terms"]["max_connections"],
                "reserved": b["terms"]["reserved"],
                "contributions": b["terms"]["contributions"],
                "not_subtracted": b["terms"]["not_subtracted"], "memory": b["memory"],
                "location": b["location"],
                "unknown_clients": b.get("unknown_clients", []),
                "unbounded_clients": b.get("unbounded_clients", []),
                "unknown_pairs": b.get("unknown_pairs", []),
                "unplaced_clients": b.get("unplaced_clients", []),
                "unread_files": b.get("unread_files", []),
                "exposed": b.get("exposed", []),
                "rests_on": b.get("rests_on", []),
                "unserved": b.get("unserved", []),
                "refused": b.get("refused"),
                "client_sides": b.get("client_sides", [])}
               for b in data["budgets"]]

    def finding(f: dict) -> dict:
        return {"code": f["code"], "name": f["name"], "severity": f["severity"],
                "message": f["message"], "detail": f.get("detail", ""),
                "location": f["location"], "related": f["related"], "fix": f["fix"],
                "subject": f.get("subject", "")}

    return check_result_from({"tool_version": data["tool"]["version"],
                              "roots": data["roots"], "budgets": budgets,
                              "findings": [finding(f) for f in data["findings"]],
                              "suppressed": [finding(f) for f in data.get("suppressed", [])],
                              "notices": data["notices"]})


def check_result_from(data: dict | str | bytes) -> CheckResult:
    """A CheckResult from plain data or JSON text; msgspec.ValidationError (a
    ValueError) names the first field that does not fit."""
    if isinstance(data, str | bytes):
        return msgspec.json.decode(data, type=CheckResult)
    return msgspec.convert(data, CheckResult)
