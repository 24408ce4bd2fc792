"""Proof against the real thing (issue 6 item 5): PgBouncer 1.18 in transaction mode in
front of PostgreSQL 15, driven by two psycopg clients with deterministic server
assignment, shows each PA4xx hazard actually breaks and its safe form does not; then the
linter, given the same SQL and that PgBouncer's own pgbouncer.ini (read by
pool-advisor's reader and checked against SHOW CONFIG / SHOW DATABASES / SHOW VERSION),
flags exactly the breaking statements.

Server assignment:
- database `share` has pool_size=1: every client gets the same server connection, so
  session state one client leaves behind is seen by the next ("visible to another").
- database `two` has pool_size=2: client A runs on server S1 (then idle); client B opens
  a transaction and so holds S1 (the only idle server); A's next statement must get a
  second server S2 ("missing"). The tests assert B really got A's server (backend pid).
- database `stmt` is the same with pool_mode=statement.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from msgspec.structs import replace

from advisor.facts.pgbouncer import effective_setting
from advisor.model import (
    BouncerVersion,
    Client,
    Location,
    Pool,
    Pooler,
    Route,
    Setting,
    Source,
    Term,
    Topology,
)
from advisor.read.fs import Root
from advisor.read.sources.pgbouncer_ini import pooler_from_ini, read_pgbouncer_ini
from advisor.read.sql.extract import scan_text
from advisor.rule_context import RuleContext
from advisor.rules import load_rules
from advisor.rules._transaction_mode import effective_mode
from tests.realbouncer import have_pgbouncer, running_pgbouncer
from tests.realpg import have_postgres, running_postgres

psycopg = pytest.importorskip("psycopg")

pytestmark = [
    pytest.mark.pgbouncer,
    pytest.mark.postgres,
    pytest.mark.skipif(not have_pgbouncer(), reason="pgbouncer binary not installed"),
    pytest.mark.skipif(not have_postgres(), reason="PostgreSQL 15 binaries not installed"),
]

INI = """\
[databases]
share = host=127.0.0.1 port={port} dbname=postgres pool_size=1
two = host=127.0.0.1 port={port} dbname=postgres pool_size=2
stmt = host=127.0.0.1 port={port} dbname=postgres pool_size=2 pool_mode=statement
"""
# Passed as realbouncer `extra`, i.e. in the harness's own [pgbouncer] section: in
# PgBouncer 1.18 a second [pgbouncer] section resets the settings of the first to their
# defaults (seen here: pool_mode came back as session, default_pool_size as 20).
BOUNCER_SETTINGS = {
    "pool_mode": "transaction",
    "default_pool_size": "2",
    "query_wait_timeout": "10",
}


@dataclass
class Stack:
    pg: object
    bouncer: object

    def connect(self, db: str, **kw: object) -> psycopg.Connection:
        kw.setdefault("autocommit", True)
        kw.setdefault("prepare_threshold", None)  # only PA405 wants driver prepares
        return psycopg.connect(self.bouncer.dsn(db, "postgres"), connect_timeout=5, **kw)

    def direct(self) -> psycopg.Connection:
        return psycopg.connect(self.pg.dsn(), autocommit=True, connect_timeout=5)

    def pooler_model(self) -> Pooler:
        """The linter's model of this PgBouncer: its pgbouncer.ini read by pool-advisor's
        reader, checked against what the running process reports."""
        ini = read_pgbouncer_ini(Root.of(self.bouncer.dir), "pgbouncer.ini")
        assert [p for p in ini.problems if p.fatal] == []
        pooler = pooler_from_ini(ini, id="pgb", name="pgbouncer")
        config = {row["key"]: row["value"] for row in self.bouncer.admin_dicts("SHOW CONFIG")}
        assert (
            effective_setting(pooler.settings, "pool_mode", pooler.version).value
            == (config["pool_mode"])
        )
        for row in self.bouncer.admin_dicts("SHOW DATABASES"):
            if row["name"] != "pgbouncer":
                expected = row["pool_mode"] or config["pool_mode"]
                assert effective_mode(pooler, row["name"], "postgres").mode == expected
        version_text = self.bouncer.admin("SHOW VERSION")[0][0]  # "PgBouncer 1.18.0"
        assert version_text.startswith(f"PgBouncer {pooler.version.text}.")
        return pooler


@pytest.fixture
def stack() -> Iterator[Stack]:
    with running_postgres() as pg:
        ini = INI.format(port=pg.port)
        with running_pgbouncer(ini, users=["postgres"], extra=BOUNCER_SETTINGS) as bouncer:
            yield Stack(pg, bouncer)


def pid(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT pg_backend_pid()").fetchone()[0]


@contextlib.contextmanager
def holding_server(stack: Stack, db: str) -> Iterator[int]:
    """A second client holding the most recently used server connection of `db` in an
    open transaction (PgBouncer hands out idle servers LIFO); yields its backend pid."""
    with stack.connect(db, autocommit=False) as other:
        yield pid(other)
        other.rollback()


def one(conn: psycopg.Connection, sql: str) -> object:
    return conn.execute(sql).fetchone()[0]


# --- the linter's side ----------------------------------------------------------------

RULES = load_rules()


def lint(code: str, pooler: Pooler, text: str, kind: str = "sql", db: str = "two") -> list[int]:
    """Lines of `text` (as a file) that rule `code` reports, with the file's client
    routed to database `db` of this PgBouncer."""
    path = "app/x.sql" if kind == "sql" else "app/x.py"
    hazards, problems = scan_text(path, text, kind)
    assert problems == [], problems
    client = Client(
        id="app",
        name="app",
        replicas=Term(label="replicas", value=1, source=Source(path="k8s/app.yaml", line=1)),
        pools=[
            Pool(
                label="psycopg",
                size=Term(label="pool", value=1, source=Source(path="app/x.py", line=1)),
                route=Route(dbname=db, user="postgres", source=Source(path="app/x.py", line=1)),
            )
        ],
        target_kind="pooler",
        target_id=pooler.id,
        location=Location(path="k8s/app.yaml", line=1),
    )
    mapped = [replace(h, client_id="app") for h in hazards]
    topo = Topology(poolers=[pooler], clients=[client], sql_hazards=mapped)
    found = list(RULES.rules[code].func(topo, RuleContext()))
    return sorted(f.location.line for f in found)


def assert_flags_exactly(
    code: str, pooler: Pooler, bad: list[str], safe: list[str], kind: str = "sql", db: str = "two"
) -> None:
    text = "\n".join(bad + safe) + "\n"
    bad_lines = [i + 1 for i in range(len(bad))]
    assert lint(code, pooler, text, kind, db) == bad_lines
    for stmt in safe:
        assert lint(code, pooler, stmt + "\n", kind, db) == [], stmt


# --- PA401 ----------------------------------------------------------------------------

SET_BAD = ["SET work_mem = '77MB';", "SELECT set_config('work_mem', '66MB', false);"]
SET_SAFE = [
    "BEGIN; SET LOCAL work_mem = '55MB'; SHOW work_mem; COMMIT;",
    "SELECT set_config('work_mem', '44MB', true);",
]


def test_session_set_leaks_to_another_client(stack: Stack) -> None:
    with stack.connect("share") as a, stack.connect("share") as b:
        a.execute("SET work_mem = '77MB'")
        assert one(b, "SHOW work_mem") == "77MB"  # b never set it
        a.execute("SELECT set_config('work_mem', '66MB', false)")
        assert one(b, "SHOW work_mem") == "66MB"
        a.execute("RESET work_mem")
        # Safe forms: transaction-scoped, gone at COMMIT.
        with a.transaction():
            a.execute("SET LOCAL work_mem = '55MB'")
            assert one(a, "SHOW work_mem") == "55MB"
        assert one(b, "SHOW work_mem") == "4MB"
        with a.transaction():
            a.execute("SELECT set_config('work_mem', '44MB', true)")
            assert one(a, "SHOW work_mem") == "44MB"
        assert one(b, "SHOW work_mem") == "4MB"
    assert_flags_exactly("PA401", stack.pooler_model(), SET_BAD, SET_SAFE)


# --- PA402 ----------------------------------------------------------------------------


def test_listen_through_transaction_pooler_loses_notify(stack: Stack) -> None:
    with stack.connect("two") as listener, stack.direct() as direct_listener:
        server = pid(listener)
        listener.execute("LISTEN jobs")  # registers on server `server`, then released
        direct_listener.execute("LISTEN jobs")
        with stack.connect("two") as notifier:
            to_notifier: list[str] = []
            notifier.add_notify_handler(lambda n: to_notifier.append(n.payload))
            assert pid(notifier) == server  # the idle listening server is handed out next
            notifier.execute("NOTIFY jobs, 'n1'")  # NOTIFY through the pooler works...
            notifier.execute("SELECT 1")
        # ...the direct session gets it, the notifying client gets the pooled listener's
        # copy (it holds the server connection that ran LISTEN), the listener gets none.
        got_direct = [n.payload for n in direct_listener.notifies(timeout=2, stop_after=1)]
        assert got_direct == ["n1"]
        assert to_notifier == ["n1"]
        listener.execute("SELECT 1")
        got_pooled = [n.payload for n in listener.notifies(timeout=1, stop_after=1)]
        assert got_pooled == []
    assert_flags_exactly("PA402", stack.pooler_model(), ["LISTEN jobs;"], ["NOTIFY jobs, 'n1';"])


# --- PA403 ----------------------------------------------------------------------------

LOCK_BAD = ["SELECT pg_advisory_lock(42);", "SELECT pg_try_advisory_lock(43);"]
LOCK_SAFE = ["BEGIN; SELECT pg_advisory_xact_lock(44); COMMIT;"]


def test_session_advisory_lock_is_held_across_clients(stack: Stack) -> None:
    with stack.direct() as outsider:
        with stack.connect("share") as a:
            assert one(a, "SELECT pg_advisory_lock(42)") == ""
        # a is gone, its lock is not: it belongs to the pooled server connection...
        assert one(outsider, "SELECT pg_try_advisory_lock(42)") is False
        with stack.connect("share") as b:
            # ...and another client "holds" it too (re-entrant) and can release it.
            assert one(b, "SELECT pg_try_advisory_lock(42)") is True
            assert one(b, "SELECT pg_advisory_unlock(42)") is True
            assert one(b, "SELECT pg_advisory_unlock(42)") is True
        assert one(outsider, "SELECT pg_try_advisory_lock(42)") is True
        one(outsider, "SELECT pg_advisory_unlock(42)")
        # Safe form: released at COMMIT, whatever server connection ran it.
        with stack.connect("share") as c:
            with c.transaction():
                c.execute("SELECT pg_advisory_xact_lock(44)")
                assert one(outsider, "SELECT pg_try_advisory_lock(44)") is False
            assert one(outsider, "SELECT pg_try_advisory_lock(44)") is True
    assert_flags_exactly("PA403", stack.pooler_model(), LOCK_BAD, LOCK_SAFE)


# --- PA404 ----------------------------------------------------------------------------


def test_sql_prepare_missing_or_duplicate(stack: Stack) -> None:
    with stack.connect("two") as a:
        first = pid(a)
        a.execute("PREPARE q AS SELECT 1")
        with holding_server(stack, "two") as held:
            assert held == first  # b has a's server, so a's EXECUTE goes elsewhere
            with pytest.raises(psycopg.errors.InvalidSqlStatementName, match="does not exist"):
                a.execute("EXECUTE q")
    with stack.connect("share") as c, stack.connect("share") as d:
        c.execute("PREPARE r AS SELECT 1")
        with pytest.raises(psycopg.errors.DuplicatePreparedStatement, match="already exists"):
            d.execute("PREPARE r AS SELECT 2")
        # Safe form: a plain statement with a bound parameter.
        assert one(c, "SELECT 1") == 1
        assert c.execute("SELECT %s::int", [7], prepare=False).fetchone()[0] == 7
    assert_flags_exactly(
        "PA404",
        stack.pooler_model(),
        ["PREPARE q AS SELECT 1;", "EXECUTE q;", "DEALLOCATE q;"],
        ["SELECT 1;"],
    )


# --- PA405 ----------------------------------------------------------------------------


def test_driver_prepared_statements_break_on_118(stack: Stack) -> None:
    query = "SELECT count(*) FROM pg_class WHERE relpages >= %s"
    with stack.connect("two", prepare_threshold=0) as a:
        first = pid(a)
        a.execute(query, [0])  # psycopg prepares it as a named statement on S1
        with holding_server(stack, "two") as held:
            assert held == first
            with pytest.raises(psycopg.errors.InvalidSqlStatementName, match="does not exist"):
                a.execute(query, [0])  # Bind to "_pg3_0" on S2
    with stack.connect("two", prepare_threshold=None) as a:
        a.execute(query, [0])
        with holding_server(stack, "two"):
            for _ in range(6):
                a.execute(query, [0])  # never prepared: works on any server
    pooler = stack.pooler_model()
    assert pooler.version.text == "1.18"
    assert_flags_exactly(
        "PA405",
        pooler,
        [
            "psycopg.connect(dsn, prepare_threshold=0)",
            "psycopg.connect(dsn)",
        ],
        ["psycopg.connect(dsn, prepare_threshold=None)"],
        kind="python",
    )
    # The same driver settings are fine on PgBouncer 1.21+ with tracking on.
    tracked = replace(pooler, version=BouncerVersion(major=1, minor=21), settings={
                **pooler.settings,
                "max_prepared_statements": Setting(
                    name="max_prepared_statements",
                    raw="100",
                    value=100,
                    source=Source(path="pgbouncer.ini", line=9),
                ),
            })
    assert lint("PA405", tracked, "psycopg.connect(dsn)\n", "python") == []


# --- PA406 ----------------------------------------------------------------------------


def test_temp_table_visible_to_another_client_or_missing(stack: Stack) -> None:
    with stack.connect("share") as a, stack.connect("share") as b:
        a.execute("CREATE TEMP TABLE scratch (id int)")
        a.execute("INSERT INTO scratch VALUES (1)")
        assert one(b, "SELECT count(*) FROM scratch") == 1  # someone else's temp table
    with stack.connect("two") as a:
        first = pid(a)
        a.execute("CREATE TEMP TABLE mine (id int)")
        with holding_server(stack, "two") as held:
            assert held == first
            with pytest.raises(psycopg.errors.UndefinedTable):
                a.execute("SELECT * FROM mine")
    with stack.connect("share") as a, stack.connect("share") as b:
        with a.transaction():
            a.execute("CREATE TEMP TABLE tx_only (id int) ON COMMIT DROP")
            a.execute("INSERT INTO tx_only VALUES (1)")
            assert one(a, "SELECT count(*) FROM tx_only") == 1
        with pytest.raises(psycopg.errors.UndefinedTable):
            b.execute("SELECT * FROM tx_only")
    # dropped in the block that made it, or rolled back: nothing left for the next client
    with stack.connect("share") as a, stack.connect("share") as b:
        with a.transaction():
            a.execute("CREATE TEMP TABLE dropped (id int)")
            a.execute("DROP TABLE dropped")
        with a.transaction(force_rollback=True):
            a.execute("CREATE TEMP TABLE undone (id int)")
        for name in ("dropped", "undone"):
            with pytest.raises(psycopg.errors.UndefinedTable):
                b.execute(f"SELECT * FROM {name}")
            b.rollback()
    assert_flags_exactly(
        "PA406",
        stack.pooler_model(),
        ["CREATE TEMP TABLE scratch (id int);", "CREATE TEMP TABLE mine (id int);"],
        ["BEGIN; CREATE TEMP TABLE tx_only (id int) ON COMMIT DROP; COMMIT;",
         "BEGIN; CREATE TEMP TABLE dropped (id int); DROP TABLE dropped; COMMIT;",
         "BEGIN; CREATE TEMP TABLE undone (id int); ROLLBACK;"],
    )


# --- PA407 ----------------------------------------------------------------------------


def test_with_hold_cursor_missing_on_next_statement(stack: Stack) -> None:
    with stack.connect("two") as a:
        first = pid(a)
        a.execute("DECLARE big CURSOR WITH HOLD FOR SELECT generate_series(1, 3)")
        with holding_server(stack, "two") as held:
            assert held == first
            with pytest.raises(psycopg.errors.InvalidCursorName, match="does not exist"):
                a.execute("FETCH 1 FROM big")
        with a.transaction():
            a.execute("DECLARE small CURSOR FOR SELECT generate_series(1, 3)")
            assert one(a, "FETCH 1 FROM small") == 1
    assert_flags_exactly(
        "PA407",
        stack.pooler_model(),
        ["DECLARE big CURSOR WITH HOLD FOR SELECT generate_series(1, 3);"],
        ["BEGIN; DECLARE small CURSOR FOR SELECT generate_series(1, 3); COMMIT;"],
    )


# --- PA408 ----------------------------------------------------------------------------


def test_load_applies_to_one_server_connection(stack: Stack) -> None:
    probe = "SELECT current_setting('auto_explain.log_min_duration', true)"
    with stack.connect("two") as a:
        first = pid(a)
        a.execute("LOAD 'auto_explain'")
        assert one(a, probe) == "-1"  # loaded on S1
        with holding_server(stack, "two") as held:
            assert held == first
            assert one(a, probe) is None  # S2 never loaded it
    # Safe form: every new session loads it (`share` has opened no server yet).
    stack.pg.psql("ALTER ROLE postgres SET session_preload_libraries = 'auto_explain'")
    with stack.connect("share") as a, stack.connect("share") as b:
        assert one(a, probe) == "-1"
        assert one(b, probe) == "-1"
    assert_flags_exactly(
        "PA408",
        stack.pooler_model(),
        ["LOAD 'auto_explain';"],
        ["ALTER ROLE postgres SET session_preload_libraries = 'auto_explain';"],
    )


# --- PA409 ----------------------------------------------------------------------------


def test_statement_mode_refuses_transaction_blocks(stack: Stack) -> None:
    refused = pytest.raises(psycopg.OperationalError, match="transaction blocks not allowed")
    with stack.connect("stmt") as a, refused:
        a.execute("BEGIN")
        a.execute("SELECT 1")
    with stack.connect("stmt") as a:
        assert one(a, "SELECT 1") == 1
    pooler = stack.pooler_model()
    assert_flags_exactly("PA409", pooler, ["BEGIN; SELECT 1; COMMIT;"], ["SELECT 1;"], db="stmt")
    # The same transaction block is fine through the transaction-mode entry.
    assert lint("PA409", pooler, "BEGIN; SELECT 1; COMMIT;\n", db="two") == []


# --- PA410 ----------------------------------------------------------------------------


def test_options_startup_parameter_refused(stack: Stack) -> None:
    dsn = stack.bouncer.dsn("two", "postgres")
    with pytest.raises(psycopg.OperationalError, match="unsupported startup parameter: options"):
        psycopg.connect(f"{dsn} options='-c statement_timeout=5s'", connect_timeout=5)
    stack.pg.psql("ALTER ROLE postgres SET statement_timeout = '5s'")
    with psycopg.connect(dsn, connect_timeout=5) as ok:
        assert one(ok, "SHOW statement_timeout") == "5s"
    assert_flags_exactly(
        "PA410",
        stack.pooler_model(),
        [
            "psycopg.connect(\"host=pgbouncer dbname=two options='-c statement_timeout=5s'\")",
            'engine_url = "postgresql://app@pgbouncer/two?options=-c%20statement_timeout%3D5s"',
        ],
        ['psycopg.connect("host=pgbouncer dbname=two")'],
        kind="python",
    )
