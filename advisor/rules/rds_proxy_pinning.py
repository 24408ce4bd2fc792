"""PA411 rds-proxy-pinning (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import (
    Finding,
    Fix,
    Location,
    Pooler,
    RelatedLocation,
    Severity,
    SqlHazard,
    Topology,
)
from advisor.options import OPTIONS_CONFIG, options_class
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._transaction_mode import is_suppressed

CODE = "PA411"
NAME = "rds-proxy-pinning"

# The item of AWS's list ("Avoiding pinning an RDS Proxy", conditions for all engine
# families and for RDS for PostgreSQL) each hazard kind falls under, and the fix.
_SET = "Using SET commands; setting parameters, or resetting a parameter to its default"
_SET_FIX = (
    "set it for every connection in the proxy's initialization query (InitQuery), or for "
    "the role or database (ALTER ROLE ... SET / ALTER DATABASE ... SET), and drop it from "
    "the client"
)
_PREPARE = "prepared statements, whether SQL text or the binary protocol"
_PREPARE_FIX = (
    "turn the driver's named prepared statements off (pgjdbc prepareThreshold=0, asyncpg "
    "statement_cache_size=0, psycopg prepare_threshold=None) and use plain statements "
    "instead of SQL PREPARE/EXECUTE"
)
_LOCK = "Interacting with locks using functions such as pg_advisory_lock"
_LOCK_FIX = (
    "take the lock over a direct connection to the DB instance, or lock a row instead "
    "(SELECT ... FOR UPDATE in the transaction)"
)
_TEMP = "Creating temporary sequences, tables, or views"
_TEMP_FIX = "use a regular table (keyed by session or job), a CTE or a subquery"
_CURSOR = "Declaring cursors"
_CURSOR_FIX = "page with LIMIT and a key (keyset pagination) instead of a cursor"
PIN_CONDITIONS: dict[str, tuple[str, str, str]] = {
    # kind -> (what it is, AWS's condition, fix)
    "session-set": ("session-level setting", _SET, _SET_FIX),
    "scoped-set": ("SET LOCAL / SET TRANSACTION / RESET / set_config", _SET, _SET_FIX),
    "listen": (
        "LISTEN/UNLISTEN",
        "Listening on a notification channel",
        "LISTEN on a direct connection to the DB instance, not through the proxy",
    ),
    "advisory-lock": ("session advisory lock", _LOCK, _LOCK_FIX),
    "xact-advisory-lock": ("transaction advisory lock", _LOCK, _LOCK_FIX),
    "sql-prepare": ("SQL-level prepared statement", _PREPARE, _PREPARE_FIX),
    "protocol-prepare": ("protocol-level prepared statements", _PREPARE, _PREPARE_FIX),
    "temp-table": ("temporary table", _TEMP, _TEMP_FIX),
    "temp-object": ("temporary table, sequence or view", _TEMP, _TEMP_FIX),
    "with-hold-cursor": ("WITH HOLD cursor", _CURSOR, _CURSOR_FIX),
    "cursor": ("cursor", _CURSOR, _CURSOR_FIX),
    "load": (
        "LOAD of a shared library",
        "Loading a library module such as auto_explain",
        "load it for every session in the DB parameter group (shared_preload_libraries "
        "or session_preload_libraries)",
    ),
    "discard": (
        "DISCARD",
        "Discarding the session state",
        "remove the DISCARD (often a connection pool's reset query) from the client",
    ),
    "sequence-function": (
        "sequence function call",
        "Manipulating sequences using functions such as nextval and setval",
        "let the column's DEFAULT or identity fill the value and read it back with "
        "INSERT ... RETURNING, instead of calling the sequence functions in the statement",
    ),
    "long-statement": (
        "long statement",
        "Any statement with a text size greater than 16 KB",
        "split it into statements under 16 KB (smaller batches of rows), or use COPY",
    ),
}
SCOPED = frozenset({"scoped-set"})


@options_class
class PinningOptions:
    __pydantic_config__ = OPTIONS_CONFIG

    # report SET LOCAL, SET TRANSACTION and set_config(..., true): AWS's PostgreSQL list
    # names SET commands with no exception for transaction-scoped ones
    include_scoped_set: bool = True


@rule(
    CODE,
    NAME,
    Severity.warning,
    "SQL or driver settings that pin client sessions to server connections in RDS Proxy",
    options=PinningOptions,
)
def rds_proxy_pinning(topology: Topology, context: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds SQL statements and driver settings of clients that connect through a declared
    AWS RDS Proxy (`[[proxies]] kind = "rds-proxy"`) and that are on RDS Proxy's pinning
    list for PostgreSQL: `SET` and `RESET` (also `SET LOCAL`, `SET TRANSACTION` and
    `set_config`), prepared statements (SQL `PREPARE`/`EXECUTE`/`DEALLOCATE` and driver
    named prepared statements), temporary tables, sequences and views, `DECLARE`
    cursors, `DISCARD`, `LISTEN`, `LOAD`, advisory lock functions (session and
    transaction), `nextval`/`setval`/`currval`/`lastval`, and any statement longer
    than 16 KB. SQL not mapped to a workload is checked against every RDS Proxy of the
    repository, and the message says so.

    ## Why is this bad
    RDS Proxy multiplexes: after each transaction it may give the server connection to
    another client. When it sees one of these statements it pins the client session to
    its server connection until the client disconnects. Nothing breaks, but a pinned
    session holds a server connection while idle, so the proxy degrades to one server
    connection per client connection and its pool maximum (MaxConnectionsPercent of
    max_connections) is reached by as many client connections; the next clients wait
    up to ConnectionBorrowTimeout (120 s by default) and then fail. The PgBouncer rules
    PA401-PA410 do not apply to RDS Proxy routes: RDS Proxy pins instead of sharing the
    session state.

    ## Example
    ```sql
    SET search_path = app;              -- pins
    SELECT nextval('orders_id_seq');    -- pins
    ```

    ## Use instead
    ```sql
    ALTER ROLE app SET search_path = app;        -- or the proxy's InitQuery
    INSERT INTO orders (item) VALUES ('x') RETURNING id;
    ```

    ## Options
    - `include_scoped_set` (default true): also report `SET LOCAL`, `SET TRANSACTION`
      and `set_config(..., true)`. AWS lists "Using SET commands" for PostgreSQL and
      documents no exception for transaction-scoped ones; set it to false once you have
      seen (CloudWatch `DatabaseConnectionsCurrentlySessionPinned`) that they do not pin.

    ## References
    - Avoiding pinning an RDS Proxy, conditions for all engine families and for RDS for
      PostgreSQL: https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/rds-proxy-pinning.html
    - MaxConnectionsPercent, ConnectionBorrowTimeout:
      https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/rds-proxy-connections.html
    """
    options = context.options_for(CODE, PinningOptions)
    assert isinstance(options, PinningOptions)
    proxies = [p for p in topology.poolers if p.kind == "rds-proxy"]
    if not proxies:
        return
    seen: set[tuple[str, str, int | None, str, str]] = set()
    for hazard in topology.sql_hazards:
        if hazard.kind not in PIN_CONDITIONS or is_suppressed(hazard, CODE, NAME):
            continue
        if hazard.kind in SCOPED and not options.include_scoped_set:
            continue
        for proxy, unmapped in _proxies_of(topology, hazard, proxies):
            key = (hazard.kind, hazard.location.path, hazard.location.line, hazard.detail,
                   proxy.id)
            if key in seen:
                continue
            seen.add(key)
            yield _finding(topology, hazard, proxy, unmapped)


def _proxies_of(topology: Topology, hazard: SqlHazard, proxies: list[Pooler]
                ) -> list[tuple[Pooler, bool]]:
    """The RDS Proxy the hazard's client goes through; every one when it is unmapped."""
    if hazard.client_id is None:
        return [(p, True) for p in proxies]
    client = topology.client(hazard.client_id)
    if client is None or client.target_kind != "pooler":
        return []
    return [(p, False) for p in proxies if p.id == client.target_id]


def _finding(topology: Topology, hazard: SqlHazard, proxy: Pooler, unmapped: bool) -> Finding:
    from advisor.budget.slots import client_contribution, proxy_contribution

    what, condition, fix = PIN_CONDITIONS[hazard.kind]
    origin = "" if hazard.origin == "sql" else f" ({hazard.origin})"
    via = f"RDS Proxy {proxy.name}"
    if unmapped:
        via += (": not mapped to a workload, so checked against every RDS Proxy in the "
                "repository")
    pool = proxy_contribution(proxy, topology)
    cap = pool.factors[0] if pool.factors else None
    client = topology.client(hazard.client_id)
    held = ""
    if client is not None and cap is not None:
        demand = client_contribution(client).total
        held = (f"; {client.name}'s {num(demand)} client connections may then hold "
                f"{num(min(demand, cap.value))} of the proxy's {num(cap.value)} server "
                f"connections ({cap.label}, {cap.source.label()})")
    message = (f"{what}{origin} `{hazard.detail}` runs through {via}, and RDS Proxy pins "
               f'the session on it (AWS pinning list: "{condition}"): the session keeps its '
               "server connection until the client disconnects, so the proxy cannot "
               f"multiplex it{held}")
    related = [RelatedLocation(location=proxy.location, message=f"RDS Proxy {proxy.name}")]
    if cap is not None and (at := cap.source.location()) is not None:
        related.append(RelatedLocation(location=at, message=cap.label))
    return Finding(
        code=CODE,
        name=NAME,
        severity=Severity.warning,
        message=message,
        location=Location(path=hazard.location.path, line=hazard.location.line,
                          column=hazard.location.column),
        related=tuple(related),
        fix=Fix(description=fix),
        subject=f"{hazard.kind}|{hazard.detail}|{proxy.id}",
    )
