"""Classify SQL text into transaction-pooling hazards with pglast (the PostgreSQL parser).

`find_sql_hazards(sql, location)` parses `sql` and returns one `SqlHazard` per statement
(or function call) whose effect outlives the transaction that ran it, so that behind a
PgBouncer in transaction or statement mode it lands on, or is lost with, a server
connection another client gets next:

| kind | statements |
|---|---|
| session-set | SET / RESET (not SET LOCAL, not SET TRANSACTION), set_config(n, v, false) |
| listen | LISTEN, UNLISTEN |
| advisory-lock | pg_advisory_lock, pg_try_advisory_lock, their _shared and unlock variants |
| sql-prepare | PREPARE, EXECUTE, DEALLOCATE |
| temp-table | CREATE TEMP TABLE / CREATE TEMP TABLE AS / SELECT INTO TEMP without ON COMMIT DROP |
| with-hold-cursor | DECLARE ... WITH HOLD |
| load | LOAD |
| transaction-block | BEGIN / START TRANSACTION (statement mode allows no transaction blocks) |

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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

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

_FALSE_TEXT = frozenset({"f", "false", "off", "no", "n", "0"})
_DETAIL_MAX = 120


@dataclass(frozen=True)
class SqlScan:
    hazards: list[SqlHazard]
    problem: ConfigProblem | None = None


def find_sql_hazards(
    sql: str,
    location: Location,
    *,
    origin: str = "sql",
    char_lines: Sequence[int] | None = None,
) -> list[SqlHazard]:
    """Hazards in `sql`; unparseable text gives none (see `scan_sql_text` for why)."""
    return scan_sql_text(sql, location, origin=origin, char_lines=char_lines).hazards


def parses_as_sql(sql: str) -> bool:
    from pglast.parser import ParseError, parse_sql

    try:
        return bool(parse_sql(sql))
    except ParseError:
        return False


def scan_sql_text(
    sql: str,
    location: Location,
    *,
    origin: str = "sql",
    char_lines: Sequence[int] | None = None,
) -> SqlScan:
    """Hazards in `sql` plus the parse problem, if PostgreSQL's parser rejects it."""
    from pglast.parser import ParseError, parse_sql

    lines = _LineIndex(sql, location.line or 1, char_lines)
    try:
        raw_stmts = parse_sql(sql)
    except ParseError as exc:
        at = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else 0
        where = Location(path=location.path, line=lines.line_at(at))
        return SqlScan(
            [],
            ConfigProblem(
                location=where,
                message=f"SQL not checked for pooling hazards: {exc.args[0]}",
                program="PostgreSQL parser (pglast)",
            ),
        )
    hazards: list[SqlHazard] = []
    for raw in raw_stmts:
        start = _skip_blank(sql, raw.stmt_location or 0)
        end = (raw.stmt_location or 0) + raw.stmt_len if raw.stmt_len else len(sql)
        text = sql[start:end]
        where = Location(
            path=location.path,
            line=lines.line_at(start),
            end_line=lines.line_at(max(start, end - 1)),
        )
        for kind, what in _statement_hazards(raw.stmt):
            detail = _shorten(text) if not what else f"{what}(...) in: {_shorten(text)}"
            hazards.append(SqlHazard(kind=kind, detail=detail, location=where, origin=origin))
    return SqlScan(hazards)


def _statement_hazards(stmt: object) -> Iterator[tuple[str, str]]:
    """(kind, function name or "") for each hazard in one statement."""
    from pglast import ast, enums

    if isinstance(stmt, ast.VariableSetStmt):
        # SET TRANSACTION ... is transaction-scoped; SET SESSION CHARACTERISTICS is not.
        if not stmt.is_local and not (
            stmt.kind == enums.VariableSetKind.VAR_SET_MULTI and stmt.name == "TRANSACTION"
        ):
            yield "session-set", ""
        return
    if isinstance(stmt, ast.ListenStmt | ast.UnlistenStmt):
        yield "listen", ""
        return
    if isinstance(stmt, ast.PrepareStmt | ast.ExecuteStmt | ast.DeallocateStmt):
        yield "sql-prepare", ""
        # EXECUTE's arguments and PREPARE's body may call functions too.
    if isinstance(stmt, ast.DeclareCursorStmt) and (stmt.options or 0) & enums.CURSOR_OPT_HOLD:
        yield "with-hold-cursor", ""
    if isinstance(stmt, ast.LoadStmt):
        yield "load", ""
        return
    if isinstance(stmt, ast.TransactionStmt):
        if stmt.kind in (
            enums.TransactionStmtKind.TRANS_STMT_BEGIN,
            enums.TransactionStmtKind.TRANS_STMT_START,
        ):
            yield "transaction-block", ""
        return
    if isinstance(stmt, ast.CreateFunctionStmt | ast.AlterFunctionStmt | ast.DoStmt):
        return  # SET clauses are function-scoped; bodies are strings
    if _creates_session_temp_table(stmt):
        yield "temp-table", ""
    seen: set[str] = set()
    for call in _walk_calls(stmt):
        kind = _call_hazard(call)
        if kind and kind not in seen:
            seen.add(kind)
            yield kind, _func_name(call)


def _creates_session_temp_table(stmt: object) -> bool:
    from pglast import ast, enums

    drop = enums.OnCommitAction.ONCOMMIT_DROP
    if isinstance(stmt, ast.CreateStmt):
        return stmt.relation.relpersistence == "t" and stmt.oncommit != drop
    into = None
    if isinstance(stmt, ast.CreateTableAsStmt):
        into = stmt.into
    elif isinstance(stmt, ast.SelectStmt):
        into = stmt.intoClause
    return bool(into is not None and into.rel.relpersistence == "t" and into.onCommit != drop)


def _walk_calls(node: object) -> Iterator[object]:
    from pglast import ast

    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, tuple | list):
            stack.extend(current)
            continue
        if not isinstance(current, ast.Node):
            continue
        if isinstance(current, ast.FuncCall):
            yield current
        for attr in current:
            stack.append(getattr(current, attr))


def _call_hazard(call: object) -> str | None:
    name = _func_name(call)
    if name in SESSION_ADVISORY_FUNCTIONS:
        return "advisory-lock"
    if name == "set_config":
        args = call.args or ()
        if len(args) == 3 and _constant_bool(args[2]) is False:
            return "session-set"
    return None


def _func_name(call: object) -> str:
    parts = [getattr(p, "sval", "") for p in (call.funcname or ())]
    if len(parts) == 2 and parts[0] != "pg_catalog":
        return ""  # someone's own schema.function, not the built-in
    return parts[-1] if parts else ""


def _constant_bool(node: object) -> bool | None:
    from pglast import ast

    if isinstance(node, ast.TypeCast):
        node = node.arg
    if not isinstance(node, ast.A_Const) or node.isnull:
        return None
    val = node.val
    if isinstance(val, ast.Boolean):
        return bool(val.boolval)
    if isinstance(val, ast.Integer):
        return bool(val.ival)
    if isinstance(val, ast.String):
        text = val.sval.strip().lower()
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
