"""Classify SQL text into transaction-pooling hazards with pglast (the PostgreSQL parser).

`find_sql_hazards(sql, location)` parses `sql` and returns one `SqlHazard` per statement
(or function call) whose effect outlives the transaction that ran it, so that behind a
PgBouncer in transaction or statement mode it lands on, or is lost with, a server
connection another client gets next:

| kind | statements |
|---|---|
| session-set | SET (not SET LOCAL, not SET TRANSACTION, not RESET), set_config(n, v, false) |
| listen | LISTEN, UNLISTEN |
| advisory-lock | pg_advisory_lock, pg_try_advisory_lock, their _shared and unlock variants |
| sql-prepare | PREPARE, EXECUTE, DEALLOCATE |
| temp-table | CREATE TEMP TABLE / TABLE AS / SELECT INTO TEMP without ON COMMIT DROP (*) |
| with-hold-cursor | DECLARE ... WITH HOLD |
| load | LOAD |
| transaction-block | BEGIN / START TRANSACTION (statement mode allows no transaction blocks) |

(*) nor a temporary table dropped in the explicit block that made it; a block ending in
ROLLBACK takes back its temp-table and session-set hazards (_undone_in_block).

With `pinning=True` (a repository with an AWS RDS Proxy) also the forms that are safe
behind PgBouncer but are on RDS Proxy's PostgreSQL pinning list (PINNING_ONLY_KINDS):

| kind | statements |
|---|---|
| scoped-set | SET LOCAL, SET TRANSACTION, RESET, set_config(n, v, true or not a constant) |
| cursor | DECLARE without WITH HOLD |
| temp-object | CREATE TEMP TABLE ... ON COMMIT DROP, CREATE TEMP SEQUENCE / VIEW |
| discard | DISCARD ALL / PLANS / SEQUENCES / TEMP |
| sequence-function | nextval, setval, currval, lastval |
| xact-advisory-lock | pg_advisory_xact_lock and its _try/_shared variants |
| long-statement | a statement longer than 16 KB (LONG_STATEMENT_BYTES) |

Decisions:
- SET LOCAL is never flagged. Inside a transaction it is the fix. Outside a
  transaction block PostgreSQL ignores it with `WARNING: SET LOCAL can only be used in
  transaction blocks` in every pool mode alike, so pooling changes nothing about it
  (and a driver with autocommit off has a transaction open that a script cannot see).
- A session-level SET inside BEGIN ... COMMIT is still flagged: it outlives COMMIT.
- set_config is flagged only when its third argument is the constant false (false,
  'f', 'off', 0 ...); a bound parameter is not known, so it is not reported.
- `CREATE FUNCTION ... SET x = y`, `ALTER ROLE/DATABASE ... SET` are scoped to the
  function or the role; they are the recommended fixes and are not flagged. Function
  and DO bodies are strings to the parser and are not looked into.
- A text without any word a hazard needs (set, listen, declare, prepare, execute,
  deallocate, temp, load, begin, start, advisory) is not parsed at all: it cannot
  hold a hazard, so whether it parses does not matter here.
- Unparseable SQL is not an error of the scan: `scan_sql_text` returns the problem
  (with the line PostgreSQL's parser stopped at) beside the hazards found so far
  (none: pglast parses a text as a whole).

Offsets: pglast reports `stmt_location` and error positions in characters of the
Python string (checked with multi-byte text), so they map to lines by counting
newlines. `char_lines[k]` gives the file line of the text's k-th character when the
text was cut out of a larger file (a string literal); else lines count from
`location.line`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from msgspec import Struct

from advisor.lazyregex import lazy
from advisor.model import ConfigProblem, Location, SqlHazard

# kind -> (what it is, the fix to suggest)
HAZARD_FIXES: dict[str, tuple[str, str]] = {
    "session-set": (
        "session-level setting",
        "use SET LOCAL (or set_config(name, value, true)) inside the transaction that "
        "needs it, set it for the role or database once (ALTER ROLE ... SET / ALTER "
        "DATABASE ... SET), put it in PgBouncer's connect_query, or give this user a "
        "session-mode pool",
    ),
    "listen": (
        "LISTEN/UNLISTEN",
        "LISTEN on a direct connection to PostgreSQL (or a session-mode pool for that "
        "user); NOTIFY itself works through a transaction pooler",
    ),
    "advisory-lock": (
        "session advisory lock",
        "use pg_advisory_xact_lock / pg_try_advisory_xact_lock inside a transaction (released at "
        "COMMIT), or take the lock over a session-mode pool or a direct connection",
    ),
    "sql-prepare": (
        "SQL-level prepared statement",
        "use the driver's protocol-level prepared statements (tracked by PgBouncer >= 1.21 "
        "with max_prepared_statements > 0) or plain statements; PgBouncer never tracks SQL "
        "PREPARE/EXECUTE/DEALLOCATE",
    ),
    "protocol-prepare": (
        "protocol-level prepared statements",
        "upgrade PgBouncer to >= 1.21 and set max_prepared_statements > 0, or turn the "
        "driver's named prepared statements off",
    ),
    "temp-table": (
        "temporary table that outlives its transaction",
        "create it inside the transaction with ON COMMIT DROP, or use a session-mode pool",
    ),
    "with-hold-cursor": (
        "WITH HOLD cursor",
        "use a cursor without WITH HOLD inside one transaction, or a session-mode pool",
    ),
    "load": (
        "LOAD of a shared library",
        "load it for every session with session_preload_libraries / "
        "shared_preload_libraries (ALTER ROLE ... SET session_preload_libraries)",
    ),
    "transaction-block": (
        "explicit transaction block",
        "statement mode allows no transaction blocks: give this user a transaction-mode or "
        "session-mode pool, or make each statement stand alone",
    ),
    "startup-parameter": (
        "startup parameter PgBouncer does not forward",
        "set the parameter with ALTER ROLE ... SET (or connect_query) instead, or list it in "
        "PgBouncer's ignore_startup_parameters (it is then dropped, not applied)",
    ),
}

# Kinds only RDS Proxy cares about (it pins the session); PgBouncer copes with them.
PINNING_ONLY_KINDS = frozenset(
    {"scoped-set", "cursor", "temp-object", "discard", "sequence-function",
     "xact-advisory-lock", "long-statement"}
)  # fmt: skip
# AWS: "Any statement with a text size greater than 16 KB causes the proxy to pin the
# session". KB read as 1024 bytes; the text is measured in UTF-8 bytes.
LONG_STATEMENT_BYTES = 16 * 1024
SEQUENCE_FUNCTIONS = frozenset({"nextval", "setval", "currval", "lastval"})
XACT_ADVISORY_FUNCTIONS = frozenset(
    {"pg_advisory_xact_lock", "pg_try_advisory_xact_lock", "pg_advisory_xact_lock_shared",
     "pg_try_advisory_xact_lock_shared"}
)  # fmt: skip

SESSION_ADVISORY_FUNCTIONS = frozenset(
    {
        "pg_advisory_lock",
        "pg_try_advisory_lock",
        "pg_advisory_lock_shared",
        "pg_try_advisory_lock_shared",
        "pg_advisory_unlock",
        "pg_advisory_unlock_shared",
        "pg_advisory_unlock_all",
    }
)

# A cheap gate before parsing: every hazard's statement contains one of these words
# (lowercased). It only decides whether to run the parser; the parser decides the rest.
_MAY_HAVE_HAZARD = lazy(
    r"set|listen|declare|prepare|execute|deallocate|temp|load|begin|start|advisory"
)
_MAY_PIN = lazy(r"discard|nextval|setval|currval|lastval")
_FALSE_TEXT = frozenset({"f", "false", "off", "no", "n", "0"})
_DETAIL_MAX = 120


class SqlScan(Struct, frozen=True):
    hazards: list[SqlHazard]
    problem: ConfigProblem | None = None


def find_sql_hazards(
    sql: str,
    location: Location,
    *,
    origin: str = "sql",
    char_lines: Sequence[int] | None = None,
    pinning: bool = False,
) -> list[SqlHazard]:
    """Hazards in `sql`; unparseable text gives none (see `scan_sql_text` for why)."""
    return scan_sql_text(
        sql, location, origin=origin, char_lines=char_lines, pinning=pinning
    ).hazards


def scan_sql_text(
    sql: str,
    location: Location,
    *,
    origin: str = "sql",
    char_lines: Sequence[int] | None = None,
    shown: Callable[[int, int], str] | None = None,
    pinning: bool = False,
) -> SqlScan:
    """Hazards in `sql` plus the parse problem, if PostgreSQL's parser rejects it.
    `shown(start, end)` gives the statement text to report when `sql` is a rewritten
    form of what the file says (placeholders replaced). `pinning` adds the kinds of
    PINNING_ONLY_KINDS (RDS Proxy's pinning list)."""
    import json

    from pglast.parser import ParseError, parse_sql_json

    lowered = sql.lower()
    may_pin = pinning and (
        _MAY_PIN.search(lowered) is not None or len(sql) > LONG_STATEMENT_BYTES // 4
    )
    if not _MAY_HAVE_HAZARD.search(lowered) and not may_pin:
        return SqlScan([])  # no word any hazard needs: nothing to parse for
    lines = _LineIndex(sql, location.line or 1, char_lines)
    calls = "advisory" in lowered or "set_config" in lowered
    calls = calls or (pinning and _MAY_PIN.search(lowered) is not None)
    try:
        # The JSON form is about 5x faster than pglast's Python AST objects.
        tree = json.loads(parse_sql_json(sql))
    except ParseError as exc:
        at = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else 0
        where = Location(path=location.path, line=lines.line_at(at))
        problem = ConfigProblem(
            location=where,
            message=f"SQL not checked for pooling hazards: {exc.args[0]}",
            program="PostgreSQL parser (pglast)",
        )
        return SqlScan([], problem)
    to_char = _byte_to_char(sql)  # statement offsets in the JSON are UTF-8 bytes
    hazards: list[SqlHazard] = []
    spans: list[tuple[dict, range]] = []  # each statement and the hazards it gave
    for raw in tree.get("stmts", ()):
        first = len(hazards)
        begin = to_char(raw.get("stmt_location", 0))
        length = raw.get("stmt_len", 0)
        end = to_char(raw.get("stmt_location", 0) + length) if length else len(sql)
        start = _skip_blank(sql, begin)
        text = shown(start, end) if shown else sql[start:end]
        where = Location(
            path=location.path,
            line=lines.line_at(start),
            end_line=lines.line_at(max(start, end - 1)),
        )
        found = list(_statement_hazards(raw.get("stmt", {}), calls))
        if pinning:
            found += _pinning_hazards(raw.get("stmt", {}), calls)
            size = len(sql[begin:end].encode("utf-8"))
            if size > LONG_STATEMENT_BYTES:
                found.append(("long-statement", f"{size} bytes"))
        for kind, what in found:
            if kind == "long-statement":
                detail = f"statement of {what}: {_shorten(text)}"
            else:
                detail = _shorten(text) if not what else f"{what}(...) in: {_shorten(text)}"
            hazards.append(SqlHazard(kind=kind, detail=detail, location=where, origin=origin))
        spans.append((raw.get("stmt", {}), range(first, len(hazards))))
    if not pinning:  # RDS Proxy pins at the statement, whatever the block does after
        undone = _undone_in_block(spans, hazards)
        hazards = [h for i, h in enumerate(hazards) if i not in undone]
    return SqlScan(hazards)


_BLOCK_STARTS = frozenset({"TRANS_STMT_BEGIN", "TRANS_STMT_START"})
# COMMIT / END, and PREPARE TRANSACTION, which ends the session's part of it
_BLOCK_ENDS = frozenset({"TRANS_STMT_COMMIT", "TRANS_STMT_PREPARE"})


def _undone_in_block(spans: list[tuple[dict, range]], hazards: list[SqlHazard]) -> set[int]:
    """Indices of hazards an explicit transaction block takes back before it ends, while
    the pooler keeps the client on one server connection (transaction mode): a temporary
    table dropped in the block that created it, and the session SETs and temporary
    tables of a block that ends in ROLLBACK ("the effects of the SET command disappear
    when the transaction is rolled back", PostgreSQL docs, SET; CREATE TABLE is
    transactional). Audit 36: BEGIN; CREATE TEMP TABLE t ...; DROP TABLE t; COMMIT."""
    undone: set[int] = set()
    block: list[int] | None = None  # the open block's SET / temp-table hazards
    temp: dict[str, list[int]] = {}  # its temporary tables by name
    for stmt, made in spans:
        ((tag, body),) = stmt.items() if stmt else (("", {}),)
        if tag == "TransactionStmt":
            kind = body.get("kind")
            if kind in _BLOCK_STARTS:
                block, temp = [], {}
            elif kind == "TRANS_STMT_ROLLBACK" and block is not None:
                undone.update(block)
                block, temp = ([], {}) if body.get("chain") else (None, {})
            elif kind in _BLOCK_ENDS:
                block, temp = ([], {}) if body.get("chain") and block is not None else (None, {})
            continue
        if block is None:
            continue
        for i in made:
            if hazards[i].kind in ("session-set", "temp-table"):
                block.append(i)
            if hazards[i].kind == "temp-table" and (name := _temp_table_name(tag, body)):
                temp.setdefault(name, []).append(i)
        if tag == "DropStmt" and body.get("removeType") == "OBJECT_TABLE":
            for obj in body.get("objects", ()):
                items = obj.get("List", {}).get("items", ())
                if items and (name := items[-1].get("String", {}).get("sval")):
                    undone.update(temp.pop(name, ()))
    return undone


def _temp_table_name(tag: str, body: dict) -> str | None:
    if tag == "CreateStmt":
        rel = body.get("relation", {})
    elif tag == "CreateTableAsStmt":
        rel = body.get("into", {}).get("rel", {})
    elif tag == "SelectStmt":
        rel = body.get("intoClause", {}).get("rel", {})
    else:
        return None
    return rel.get("relname")


def _byte_to_char(text: str) -> Callable[[int], int]:
    if text.isascii():
        return lambda offset: offset
    starts = []  # byte offset at which each character starts
    at = 0
    for ch in text:
        starts.append(at)
        at += len(ch.encode("utf-8"))
    from bisect import bisect_left

    return lambda offset: bisect_left(starts, offset)


_HOLD = 0x0020  # CURSOR_OPT_HOLD, src/include/nodes/parsenodes.h
_SCOPED = ("CreateFunctionStmt", "AlterFunctionStmt", "DoStmt")


# RESET name / RESET ALL / SET name TO DEFAULT put the session's value back to the one a
# fresh session has ("the value it would have had if no SET had been executed in the
# current session", PostgreSQL docs, SET and RESET): the server connection is left as the
# next client expects it (PgBouncer's own server_reset_query is DISCARD ALL, which does
# RESET ALL). Not a leak behind a pooler; still a SET-family statement to RDS Proxy.
_RESET_KINDS = frozenset({"VAR_RESET", "VAR_RESET_ALL", "VAR_SET_DEFAULT"})


def _resets(body: dict) -> bool:
    return body.get("kind") in _RESET_KINDS


def _statement_hazards(node: dict, calls: bool = True) -> Iterator[tuple[str, str]]:
    """(kind, function name or "") for each hazard in one statement (parser JSON);
    `calls` False skips looking for function calls (the text names none of them)."""
    if not node:
        return
    ((tag, body),) = node.items()
    if tag == "VariableSetStmt":
        # SET TRANSACTION ... is transaction-scoped; SET SESSION CHARACTERISTICS is not.
        scoped = body.get("kind") == "VAR_SET_MULTI" and body.get("name") == "TRANSACTION"
        if not body.get("is_local") and not scoped and not _resets(body):
            yield "session-set", ""
        return
    if tag in ("ListenStmt", "UnlistenStmt"):
        yield "listen", ""
        return
    if tag in ("PrepareStmt", "ExecuteStmt", "DeallocateStmt"):
        yield "sql-prepare", ""  # their bodies and arguments may call functions too
    if tag == "DeclareCursorStmt" and int(body.get("options", 0)) & _HOLD:
        yield "with-hold-cursor", ""
    if tag == "LoadStmt":
        yield "load", ""
        return
    if tag == "TransactionStmt":
        if body.get("kind") in ("TRANS_STMT_BEGIN", "TRANS_STMT_START"):
            yield "transaction-block", ""
        return
    if tag in _SCOPED:
        return  # SET clauses are function-scoped; bodies are strings
    if _creates_session_temp_table(tag, body):
        yield "temp-table", ""
    if not calls:
        return
    seen: set[str] = set()
    for call in _walk_calls(body):
        kind = _call_hazard(call)
        if kind and kind not in seen:
            seen.add(kind)
            yield kind, _func_name(call)


def _pinning_hazards(node: dict, calls: bool) -> list[tuple[str, str]]:
    """(kind, function name or "") for each PINNING_ONLY_KINDS form in one statement:
    the ones `_statement_hazards` leaves out because PgBouncer copes with them."""
    if not node:
        return []
    ((tag, body),) = node.items()
    found: list[tuple[str, str]] = []
    if tag == "VariableSetStmt":
        if body.get("is_local") or _resets(body) or (
            body.get("kind") == "VAR_SET_MULTI" and body.get("name") == "TRANSACTION"
        ):
            found.append(("scoped-set", ""))
        return found
    if tag == "DeclareCursorStmt" and not int(body.get("options", 0)) & _HOLD:
        found.append(("cursor", ""))
    if tag == "DiscardStmt":
        return [("discard", "")]
    if tag in _SCOPED:
        return found
    if _creates_temp_object(tag, body) and not _creates_session_temp_table(tag, body):
        found.append(("temp-object", ""))
    if not calls:
        return found
    seen: set[str] = set()
    for call in _walk_calls(body):
        name = _func_name(call)
        kind = None
        if name in SEQUENCE_FUNCTIONS:
            kind = "sequence-function"
        elif name in XACT_ADVISORY_FUNCTIONS:
            kind = "xact-advisory-lock"
        elif name == "set_config" and _call_hazard(call) is None:
            kind = "scoped-set"  # true, or not a constant: still a SET to RDS Proxy
        if kind and kind not in seen:
            seen.add(kind)
            found.append((kind, name))
    return found


def _creates_temp_object(tag: str, body: dict) -> bool:
    """CREATE TEMP TABLE / TABLE AS / SELECT INTO TEMP / SEQUENCE / VIEW, any ON COMMIT."""
    if tag in ("CreateStmt", "CreateSeqStmt"):
        rel = body.get("relation" if tag == "CreateStmt" else "sequence", {})
    elif tag == "ViewStmt":
        rel = body.get("view", {})
    elif tag == "CreateTableAsStmt":
        rel = body.get("into", {}).get("rel", {})
    elif tag == "SelectStmt" and "intoClause" in body:
        rel = body["intoClause"].get("rel", {})
    else:
        return False
    return rel.get("relpersistence") == "t"


def _creates_session_temp_table(tag: str, body: dict) -> bool:
    if tag == "CreateStmt":
        rel, on_commit = body.get("relation", {}), body.get("oncommit")
    elif tag == "CreateTableAsStmt":
        into = body.get("into", {})
        rel, on_commit = into.get("rel", {}), into.get("onCommit")
    elif tag == "SelectStmt" and "intoClause" in body:
        into = body["intoClause"]
        rel, on_commit = into.get("rel", {}), into.get("onCommit")
    else:
        return False
    return rel.get("relpersistence") == "t" and on_commit != "ONCOMMIT_DROP"


def _walk_calls(node: object) -> Iterator[dict]:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, list):
            stack.extend(current)
        elif isinstance(current, dict):
            call = current.get("FuncCall")
            if isinstance(call, dict):
                yield call
            stack.extend(v for v in current.values() if isinstance(v, dict | list))


def _call_hazard(call: dict) -> str | None:
    name = _func_name(call)
    if name in SESSION_ADVISORY_FUNCTIONS:
        return "advisory-lock"
    if name == "set_config":
        args = call.get("args", ())
        if len(args) == 3 and _constant_bool(args[2]) is False:
            return "session-set"
    return None


def _func_name(call: dict) -> str:
    parts = [p.get("String", {}).get("sval", "") for p in call.get("funcname", ())]
    if len(parts) == 2 and parts[0] != "pg_catalog":
        return ""  # someone's own schema.function, not the built-in
    return parts[-1] if parts else ""


def _constant_bool(node: dict) -> bool | None:
    """The boolean a constant argument stands for (the JSON omits false and 0 values)."""
    if "TypeCast" in node:
        node = node["TypeCast"].get("arg", {})
    const = node.get("A_Const")
    if const is None or const.get("isnull"):
        return None
    if "boolval" in const:
        return bool(const["boolval"].get("boolval", False))
    if "ival" in const:
        return bool(const["ival"].get("ival", 0))
    if "sval" in const:
        text = const["sval"].get("sval", "").strip().lower()
        if text in _FALSE_TEXT:
            return False
        return True if text in {"t", "true", "on", "yes", "y", "1"} else None
    return None


def _skip_blank(sql: str, pos: int) -> int:
    """Move past whitespace and comments (older parsers start a statement there)."""
    n = len(sql)
    while pos < n:
        if sql[pos].isspace():
            pos += 1
        elif sql.startswith("--", pos):
            nl = sql.find("\n", pos)
            pos = n if nl < 0 else nl + 1
        elif sql.startswith("/*", pos):
            close = sql.find("*/", pos + 2)
            pos = n if close < 0 else close + 2
        else:
            break
    return pos


def _shorten(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= _DETAIL_MAX else one_line[: _DETAIL_MAX - 3] + "..."


class _LineIndex:
    """Character offset -> file line, for text that starts at `first_line` or was cut
    from a file with `char_lines` (file line of each character)."""

    def __init__(self, text: str, first_line: int, char_lines: Sequence[int] | None) -> None:
        self._newlines = [i for i, ch in enumerate(text) if ch == "\n"]
        self._first = first_line
        self._chars = char_lines

    def line_at(self, offset: int) -> int:
        from bisect import bisect_left

        if self._chars:
            return self._chars[max(0, min(offset, len(self._chars) - 1))]
        return self._first + bisect_left(self._newlines, offset)  # newlines before offset
