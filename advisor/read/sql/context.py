"""Which code string literals are used as SQL (issue 15 item 1).

A literal is SQL when the code uses it as SQL:

- it is an argument (directly, or spliced through `%`, `.format`, `+`, f-strings,
  fmt.Sprintf, a list) of a call whose name says it runs SQL: execute, exec, query,
  raw, select_all, find_by_sql, RunSQL, prepareStatement, @Query ... (SQL_CALLS);
- it is a template tagged `sql` (JS: sql`...`, Prisma.sql`...`, $queryRaw`...`) or a
  Ruby heredoc named SQL (`<<~SQL`);
- it is assigned to a name that reaches such a call in the same file (`sql = "..."`
  then `cursor.execute(sql)`), or to a name that says it holds SQL (`*sql*`,
  `*query*`, `*stmt*`, `*statement*`).

Everything else (UI labels, log messages, rake `desc`, test names, i18n keys) is not
SQL, however well pglast parses it: "Reset MFA" is a label, not a RESET.

Nothing here imports or runs the code. Python goes through `ast`; the other languages
through the literal spans the scanners in advisor.read.sql.literals found, looking back from
a literal over the brackets that enclose it.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from functools import cached_property, lru_cache

from advisor.lazyregex import lazy
from advisor.read.sql.literals import CHILD_FIELDS, Literal

# Call names (the last part of a dotted name, lowercased) that run their SQL argument,
# in every language, and the generic ones only where that language's libraries use them
# (`text(...)` is SQLAlchemy in Python but sets a DOM node's text in JS).
SQL_CALLS = frozenset(
    {
        "execute", "executemany", "executescript", "exec", "query", "raw", "sql",
        "unsafe", "prepare", "runsql", "run_sql", "execute_sql",
        "execcontext", "querycontext", "queryrow", "queryrowcontext", "preparecontext",
        "mustexec", "mustexeccontext", "namedexec", "namedquery", "namedexeccontext",
        "queryx", "queryrowx", "queryxcontext", "queryrowxcontext", "rawquery",
        "exec_query", "exec_update", "exec_delete", "exec_insert", "select_all",
        "select_one", "select_value", "select_values", "select_rows", "find_by_sql",
        "count_by_sql", "exec_params", "async_exec", "async_exec_params", "sync_exec",
        "$queryraw", "$executeraw", "$queryrawunsafe", "$executerawunsafe",
        "preparestatement", "preparecall", "executequery", "executeupdate",
        "executelargeupdate", "addbatch", "createnativequery", "queryforobject",
        "queryforlist", "queryformap", "queryforrowset", "execinbatch",
    }
)  # fmt: skip
LANGUAGE_CALLS = {
    "python": frozenset(
        {"mogrify", "fetch", "fetchrow", "fetchval", "copy", "copy_expert", "text",
         "exec_driver_sql", "copy_from", "copy_to"}
    ),
    "go": frozenset({"select", "get", "queue", "selectcontext", "getcontext"}),
    "js": frozenset(
        {"none", "one", "many", "any", "oneornone", "manyornone", "multi", "result"}
    ),
    "java": frozenset({"update", "batchupdate"}),
    "kotlin": frozenset({"update", "batchupdate", "exec"}),
    "ruby": frozenset({"run", "exec_prepared"}),
    "elixir": frozenset({"query!", "query_many", "query_many!"}),
}  # fmt: skip
_SQL_NAME = lazy(r"sql|quer(y|ies)|stmt|statement", re.IGNORECASE)
_IDENT_BEFORE = lazy(r"(@?[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*[!?]?)\s*$")
_ASSIGN_BEFORE = lazy(
    r"(?:^|[\s;{(,])(?:(?:const|let|var|val|final|static|private|public|String|string)\s+)*"
    r"(@{0,2}[A-Za-z_$][\w$.]*)\s*(?::\s*[\w<>\[\]]+\s*)?(?:=|:=|\|\|=)\s*$"
)
_SQL_HEREDOC = frozenset({"SQL", "PSQL", "EOSQL", "POSTGRESQL", "PGSQL"})
_LOOKBACK = 800
_DOTTED_PART = lazy(r"\.|::")


@lru_cache(maxsize=4096)
def is_sql_call(name: str, lang: str = "") -> bool:
    # Cached: a file asks it of every call it makes, and the same few hundred names
    # (get, map, push, filter ...) come back in every file of a tree.
    last = _DOTTED_PART.split(name)[-1].lstrip("@").rstrip("!?").lower()
    if last in SQL_CALLS or last in LANGUAGE_CALLS.get(lang, ()):
        return True
    return last.endswith("sql") and last not in ("tosql", "to_sql", "nosql", "mysql")


class CodeContext:
    """SQL use of the literals of one non-Python source file."""

    def __init__(self, text: str, literals: list[Literal], lang: str) -> None:
        self.text = text
        self.lang = lang
        self._starts = [lit.start for lit in literals]
        self._spans = [(lit.start, lit.end) for lit in literals]

    @cached_property
    def sql_names(self) -> set[str]:
        """Names reaching a SQL call: worked out when a literal assigned to a name asks,
        not for every file (most files have no literal that looks like a statement)."""
        return _names_reaching_sql(self.text, self._spans, self.lang)

    def is_sql(self, lit: Literal) -> bool:
        if lit.tag.upper() in _SQL_HEREDOC:
            return True
        before_start = self._code_before(lit.start)
        if before_start.rstrip().endswith(("+", "+=", "<<")):
            return False  # the tail of a text built by appending: not a statement's start
        if self.lang == "js" and self.text.startswith("`", lit.start):
            tag = _IDENT_BEFORE.search(before_start)
            if tag and is_sql_call(tag.group(1), self.lang):
                return True  # sql`...`, Prisma.sql`...`, $queryRaw`...`
        callees, head = self._enclosing_calls(lit.start)
        if any(is_sql_call(c, self.lang) for c in callees):
            return True
        if self.lang in ("ruby", "elixir"):
            bare = re.search(r"(?:^|[\s.;(])([A-Za-z_][\w]*[!?]?)\s+(?:%[qQ]?)?$", head)
            if bare and is_sql_call(bare.group(1), "ruby"):
                return True  # execute "..." / execute <<~SQL
        assigned = _ASSIGN_BEFORE.search(head)
        if assigned:
            name = assigned.group(1).split(".")[-1].lstrip("@")
            return name in self.sql_names or bool(_SQL_NAME.search(name))
        return False

    def _code_before(self, pos: int) -> str:
        return self.text[max(0, pos - 200) : pos]

    def _enclosing_calls(self, pos: int) -> tuple[list[str], str]:
        """Names of the calls whose argument lists enclose offset `pos` (innermost
        first, up to 3), and the text of the line before the outermost of them."""
        text = self.text
        callees: list[str] = []
        depth = 0
        i = pos - 1
        stop = max(0, pos - _LOOKBACK)
        outer = pos
        while i >= stop and len(callees) < 3:
            k = bisect_right(self._starts, i) - 1
            if k >= 0 and self._spans[k][0] <= i < self._spans[k][1]:
                i = self._spans[k][0] - 1  # skip another literal
                continue
            ch = text[i]
            if ch in ")]}":
                depth += 1
            elif ch in "([{":
                if depth > 0:
                    depth -= 1
                elif ch == "(":
                    name = _IDENT_BEFORE.search(text[max(0, i - 120) : i])
                    if not name:
                        break
                    callees.append(name.group(1))
                    outer = i - len(name.group(0))
                elif ch == "{" and re.search(r"(\)|=>|->|\bdo)\s*$", text[max(0, i - 20) : i]):
                    break  # a block or function body: no longer an argument
            elif depth == 0 and (ch == ";" or (ch == "\n" and not callees and self._ends(i))):
                break
            i -= 1
        line_start = text.rfind("\n", 0, outer) + 1
        return callees, text[line_start:outer]

    def _ends(self, i: int) -> bool:
        """Whether the newline at `i` ends a statement (no operator continues it)."""
        before = self.text[max(0, i - 40) : i].rstrip()
        return not before.endswith(("(", ",", "+", "=", "{", "[", "\\", "&&", "||", "<<"))


_PAREN_DEPTH = {"(": 1, ")": -1}  # built once, not per character scanned
# `*+`: a name not followed by `(` is given up whole, not retried one character shorter
# at a time (no shorter name can be followed by one): 0.6x the time, the same matches.
_CALL_OPEN = lazy(r"(?<![A-Za-z_$])([A-Za-z_$][\w$]*+[!?]?)\s*\(")


def _names_reaching_sql(text: str, spans: list[tuple[int, int]], lang: str) -> set[str]:
    """Identifiers that appear in the argument list of a SQL call (`execute(sql)`,
    `db.Query(ctx, q, id)`, Ruby `execute sql`)."""
    names: set[str] = set()
    spans = sorted(spans)
    if any(spans[k][1] > spans[k + 1][0] for k in range(len(spans) - 1)):
        spans = _merged(spans)  # nested or overlapping (a heredoc): as one span each
    # The look-behind starts a try only where a name starts: the same matches (one starting
    # inside a name would have matched from the letter before it), without retrying every
    # suffix of every name that is not a call (quadratic in the name's length).
    for m in _CALL_OPEN.finditer(text):
        if not is_sql_call(m.group(1), lang):
            continue
        depth, j, end = 1, m.end(), min(len(text), m.end() + 400)
        while j < end and depth:
            depth += _PAREN_DEPTH.get(text[j], 0)
            j += 1
        names.update(re.findall(r"[A-Za-z_$][\w$]*", _blank_literals(text, m.end(), j, spans)))
    if lang in ("ruby", "elixir"):
        for m in re.finditer(r"\b([a-z_]\w*[!?]?)[ \t]+([a-z_@][\w.]*)", text):
            if is_sql_call(m.group(1), "ruby"):
                names.add(m.group(2).split(".")[-1].lstrip("@"))
    return names


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted spans with the overlapping ones joined: what they cover together."""
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and s < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _blank_literals(text: str, a: int, b: int, spans: list[tuple[int, int]]) -> str:
    """text[a:b] with the literals in it blanked. `spans` are sorted and do not
    overlap: the first one that may reach past `a` is found by bisection (a look at
    every literal of the file per SQL call was calls x literals)."""
    k = max(0, bisect_right(spans, (a, a)) - 1)
    pieces: list[str] = []
    at = a
    while k < len(spans) and spans[k][0] < b:
        s, e = spans[k]
        k += 1
        if e <= at:
            continue
        s = max(s, at)
        pieces.append(text[at:s])
        end = min(e, b)
        pieces.append(" " * (end - s))
        at = end
    pieces.append(text[at:b])
    return "".join(pieces)


# --- Python -------------------------------------------------------------------------

_PASS_THROUGH = (
    ast.BinOp, ast.JoinedStr, ast.FormattedValue, ast.List, ast.Tuple, ast.IfExp,
    ast.keyword, ast.Starred, ast.BoolOp,
)  # fmt: skip
_STRING_METHODS = frozenset(
    {"format", "strip", "replace", "join", "lower", "upper", "rstrip", "lstrip",
     "format_map", "encode", "dedent"}
)  # fmt: skip


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _walk_with_parents(tree: ast.AST) -> tuple[list[ast.AST], dict[ast.AST, ast.AST]]:
    """Every node in ast.walk's order (breadth first), and each node's parent, in one
    pass: ast.walk and ast.iter_child_nodes are generators over generators, and walking
    twice plus a child scan per node was most of the Python SQL scan's time."""
    parents: dict[ast.AST, ast.AST] = {}
    nodes: list[ast.AST] = [tree]
    node_type = ast.AST
    children = CHILD_FIELDS
    for node in nodes:  # grows while iterated: a queue
        for name in children.get(type(node), node._fields):  # no ctx, op: leaves
            value = getattr(node, name, None)
            if isinstance(value, node_type):
                parents[value] = node
                nodes.append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, node_type):
                        parents[item] = node
                        nodes.append(item)
    return nodes, parents


def python_sql_positions(
    tree: ast.AST, wanted: set[tuple[int, int]] | None = None
) -> set[tuple[int, int]]:
    """(line, column) of the string expressions (constants, f-strings, `+` chains) of a
    Python module that are used as SQL; with `wanted`, only those among `wanted` are
    sure to be in the answer (the others are not looked at)."""
    nodes, parents = _walk_with_parents(tree)
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Call) and is_sql_call(_call_name(node.func), "python"):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                for sub in ast.walk(arg):
                    if isinstance(sub, ast.Name):
                        names.add(sub.id)
                    elif isinstance(sub, ast.Attribute):
                        names.add(sub.attr)
    found: set[tuple[int, int]] = set()
    for node in nodes:
        if not isinstance(node, ast.Constant | ast.JoinedStr):
            continue
        at = [(node.lineno, node.col_offset)]
        top = node
        while isinstance(parents.get(top), ast.BinOp | ast.JoinedStr):
            top = parents[top]
            at.append((top.lineno, top.col_offset))  # a `+` chain is one literal
        if wanted is not None and wanted.isdisjoint(at):
            continue
        if _python_used_as_sql(node, parents, names):
            found.update(at)
    return found


def _python_used_as_sql(
    node: ast.AST, parents: dict[ast.AST, ast.AST], names: set[str]
) -> bool:
    child, parent = node, parents.get(node)
    for _ in range(12):
        if parent is None:
            return False
        if isinstance(parent, ast.Call):
            if child is parent.func and not (
                isinstance(child, ast.Attribute) and child.attr in _STRING_METHODS
            ):
                return False
            if is_sql_call(_call_name(parent.func), "python"):
                return True
        elif isinstance(parent, ast.Attribute) and parent.attr in _STRING_METHODS:
            pass  # "...".format(x) / "\n".join(...): the call above decides
        elif isinstance(parent, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return any(_target_is_sql(t, names) for t in targets)
        elif isinstance(parent, ast.Dict):
            key = _dict_key(parent, child)
            if key is not None and _SQL_NAME.search(key):
                return True  # {"sql": "..."}; else the dict's own name decides
            if child not in parent.values:
                return False
        elif not isinstance(parent, _PASS_THROUGH):
            return False
        child, parent = parent, parents.get(parent)
    return False


def _dict_key(d: ast.Dict, value: ast.AST) -> str | None:
    for k, v in zip(d.keys, d.values, strict=False):
        if v is value and isinstance(k, ast.Constant) and isinstance(k.value, str):
            return k.value
    return None


def _target_is_sql(target: ast.AST, names: set[str]) -> bool:
    if isinstance(target, ast.Tuple | ast.List):
        return any(_target_is_sql(t, names) for t in target.elts)
    name = _call_name(target)
    return bool(name) and (name in names or bool(_SQL_NAME.search(name)))
