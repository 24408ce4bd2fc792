"""SQL hazard classification (pglast), extraction from files and code, driver settings,
and the PA4xx rules' pool-mode logic. The real-PgBouncer proof is test_sql_realbouncer.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from advisor.model import (
    BouncerVersion,
    Client,
    EnvVar,
    Location,
    Pool,
    Pooler,
    PoolerDatabase,
    PoolerUser,
    Route,
    Setting,
    Source,
    SqlHazard,
    Term,
    Topology,
)
from advisor.read.fs import Root
from advisor.read.sql.drivers import env_hazards
from advisor.read.sql.extract import assign_clients, is_sql_candidate, scan_sql_sources, scan_text
from advisor.read.sql.hazards import find_sql_hazards, scan_sql_text
from advisor.rule_context import RuleContext
from advisor.rules import load_rules
from advisor.rules._transaction_mode import effective_mode

pytest.importorskip("pglast")

RULES = load_rules()
LOC = Location(path="x.sql", line=1)


def kinds(sql: str) -> list[tuple[int, str]]:
    return [(h.location.line, h.kind) for h in find_sql_hazards(sql, LOC)]


# --- classification -------------------------------------------------------------------


def test_an_explicit_block_takes_back_what_it_drops_or_rolls_back() -> None:
    # audit 36 (KuraLive's cleanup script shape): the temp table is created and dropped
    # inside one BEGIN ... COMMIT, on the one server connection the block holds
    cleanup = """\
BEGIN;
CREATE TEMP TABLE _keep_ids AS
    SELECT id FROM users WHERE role = 'admin';
DELETE FROM sessions WHERE user_id NOT IN (SELECT id FROM _keep_ids);
DROP TABLE _keep_ids;
COMMIT;
"""
    assert kinds(cleanup) == [(1, "transaction-block")]
    assert kinds("BEGIN;\nSET search_path TO public;\nCREATE TEMP TABLE x (i int);\nROLLBACK;\n") \
        == [(1, "transaction-block")]  # undone by the rollback
    # still hazards: kept past COMMIT, dropped only in a later block or in autocommit,
    # another table dropped, a savepoint rolled back
    later = "BEGIN;\nCREATE TEMP TABLE a (i int);\nCOMMIT;\nBEGIN;\nDROP TABLE a;\nCOMMIT;\n"
    assert kinds(later) == [(1, "transaction-block"), (2, "temp-table"), (4, "transaction-block")]
    assert kinds("CREATE TEMP TABLE a (i int);\nDROP TABLE a;\n") == [(1, "temp-table")]
    assert kinds("BEGIN;\nCREATE TEMP TABLE a (i int);\nDROP TABLE b;\nCOMMIT;\n") \
        == [(1, "transaction-block"), (2, "temp-table")]
    assert kinds("BEGIN;\nSET work_mem = '1MB';\nSAVEPOINT s;\nROLLBACK TO SAVEPOINT s;\n"
                 "COMMIT;\n") == [(1, "transaction-block"), (2, "session-set")]
    # RDS Proxy pins the session at the statement itself
    pinned = find_sql_hazards(cleanup, LOC, pinning=True)
    assert "temp-table" in [h.kind for h in pinned]


def test_each_hazard_kind_and_its_safe_form() -> None:
    sql = """\
SET search_path = app;
SET LOCAL work_mem = '1MB';
RESET ALL;
SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY;
SELECT set_config('a.b', 'c', false), set_config('a.b', 'c', true);
SELECT set_config('a.b', 'c', $1);
LISTEN ch; UNLISTEN *; NOTIFY ch;
DECLARE c CURSOR WITH HOLD FOR SELECT 1; DECLARE d CURSOR FOR SELECT 1;
PREPARE p AS SELECT 1; EXECUTE p; DEALLOCATE ALL;
CREATE TEMP TABLE t (a int);
CREATE TEMP TABLE u (a int) ON COMMIT DROP;
CREATE TEMP TABLE v (a int) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE w AS SELECT 1;
SELECT 1 INTO TEMP z;
CREATE TABLE plain (a int);
LOAD 'auto_explain';
SELECT pg_advisory_lock(1), pg_try_advisory_lock_shared(2);
SELECT pg_advisory_xact_lock(1), pg_try_advisory_xact_lock(2);
SELECT pg_catalog.pg_advisory_unlock_all();
SELECT myschema.pg_advisory_lock(1);
BEGIN; SELECT 1; COMMIT;
START TRANSACTION; ROLLBACK;
CREATE FUNCTION f() RETURNS int LANGUAGE sql SET search_path = a AS 'select 1';
ALTER ROLE app SET statement_timeout = '5s';
ALTER DATABASE app SET search_path = a;
"""
    assert kinds(sql) == [
        (1, "session-set"),
        (5, "session-set"),
        (6, "session-set"),
        (8, "listen"),
        (8, "listen"),
        (9, "with-hold-cursor"),
        (10, "sql-prepare"),
        (10, "sql-prepare"),
        (10, "sql-prepare"),
        (11, "temp-table"),
        (13, "temp-table"),
        (14, "temp-table"),
        (15, "temp-table"),
        (17, "load"),
        (18, "advisory-lock"),
        (20, "advisory-lock"),
        (22, "transaction-block"),
        (23, "transaction-block"),
    ]


def test_reset_puts_the_session_default_back_and_leaks_nothing() -> None:
    # audit 13f: AcadMix's `SET LOCAL statement_timeout = '3s'` ... `RESET
    # statement_timeout` was a PA401 error; RESET leaves the server connection as a fresh
    # session has it (PostgreSQL docs, RESET), as PgBouncer's DISCARD ALL would.
    sql = ("RESET statement_timeout;\nRESET ALL;\nSET work_mem TO DEFAULT;\n"
           "RESET ROLE;\nSET work_mem = '1GB';\n")
    assert kinds(sql) == [(5, "session-set")]
    # still a SET-family statement to RDS Proxy (pins the session)
    pinned = [(h.location.line, h.kind) for h in find_sql_hazards(sql, LOC, pinning=True)]
    assert pinned == [(1, "scoped-set"), (2, "scoped-set"), (3, "scoped-set"),
                      (4, "scoped-set"), (5, "session-set")]


def test_lines_follow_comments_blank_lines_and_multibyte_text() -> None:
    sql = "-- héllo wörld\n\n/* a\n comment */ SELECT 'ééé';\n\n  SET\n   work_mem = 1;\n"
    hazards = find_sql_hazards(sql, Location(path="m.sql", line=1))
    assert [(h.location.line, h.location.end_line) for h in hazards] == [(6, 7)]
    assert hazards[0].detail == "SET work_mem = 1"


def test_unparseable_sql_is_a_problem_not_a_crash() -> None:
    scan = scan_sql_text("SELECT 1;\nSELEC 2;\nSET x = 1;\n", Location(path="bad.sql", line=1))
    assert scan.hazards == []
    assert scan.problem is not None
    assert scan.problem.location.line == 2
    assert "syntax error" in scan.problem.message
    # Text with no word any hazard needs is not parsed: it cannot hold a hazard.
    assert scan_sql_text("SELEC 2;\n", Location(path="b.sql")).problem is None


# --- files and code -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("db/migration/V1__init.sql", True),
        ("migrations/000001_init.up.sql", True),
        ("app/models.py", True),
        ("src/main/java/A.java", True),
        ("src/main/kotlin/A.kt", True),
        ("cmd/main.go", True),
        ("web/src/db.ts", True),
        ("db/migrate/20240101_add.rb", True),
        ("config/database.yml", True),
        ("src/main/resources/application-prod.properties", True),
        ("prisma/schema.prisma", True),
        (".env.production", True),
        ("config/database.php", True),
        ("docker/Dockerfile", True),
        ("app/Http/Controllers/HomeController.php", False),
        ("node_modules/pg/lib/client.js", False),
        ("k8s/deployment.yaml", False),
        ("README.md", False),
    ],
)
def test_is_sql_candidate(path: str, expected: bool) -> None:
    assert is_sql_candidate(path) is expected


def test_flyway_file_with_placeholders_and_psql_meta_commands() -> None:
    text = "\\set ON_ERROR_STOP on\nSET search_path = ${schema};\nSELECT :'x';\n"
    hazards, problems = scan_text("V1__x.sql", text, "sql")
    assert problems == []
    assert [(h.location.line, h.kind) for h in hazards] == [(2, "session-set")]


def test_sql_file_parse_error_reported_with_line(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "bad.sql").write_text("SELECT 1;\n\nCREAT TEMP TABLE x ();\n")
    (tmp_path / "db" / "ok.sql").write_text("LISTEN x;\n")
    (tmp_path / "db" / "bin.sql").write_bytes(b"\x00\x01")
    hazards, problems = scan_sql_sources(
        Root.of(tmp_path), ["db/bad.sql", "db/ok.sql", "db/bin.sql"]
    )
    assert [(h.location.path, h.location.line, h.kind) for h in hazards] == [
        ("db/ok.sql", 1, "listen")
    ]
    assert sorted((p.location.path, p.location.line) for p in problems) == [
        ("db/bad.sql", 3),
        ("db/bin.sql", None),
    ]


def test_python_ast_alembic_django_fstrings_and_docstrings() -> None:
    text = '''"""SET x = 1 is only a docstring."""
from alembic import op


def upgrade():
    op.execute("SELECT pg_advisory_lock(%s)")
    op.execute(f"SET search_path = {schema}")
    migrations.RunSQL(sql=["LISTEN a"], reverse_sql="UNLISTEN a")
    op.execute(
        """
        SELECT 1;
        DECLARE c CURSOR WITH HOLD FOR SELECT 1;
        """
    )
    label = "set up the thing"
    key = "begin"
'''
    hazards, _ = scan_text("alembic/versions/1_x.py", text, "python")
    assert [(h.location.line, h.kind, h.origin) for h in hazards] == [
        (6, "advisory-lock", "python"),
        (7, "session-set", "python"),
        (8, "listen", "python"),
        (8, "listen", "python"),
        (12, "with-hold-cursor", "python"),
    ]


def test_python_syntax_error_is_a_problem() -> None:
    hazards, problems = scan_text("broken.py", "def f(:\n    q = 'SELECT 1'\n", "python")
    assert hazards == [] and problems[0].location.line == 1
    # a source with no literal the scan would use is not parsed: nothing to say of it
    assert scan_text("broken.py", "def f(:\n", "python") == ([], [])


def test_java_text_block_concatenation_comments_and_char_literals() -> None:
    text = """class A {
  // "SET x = 1" in a comment is not code
  /* "LISTEN y" */
  char q = '"';
  String a = "SELECT pg_advisory_lock(?)";
  String b = \"\"\"
      SELECT 1;
      LISTEN jobs;
      \"\"\";
  String c = "SELECT a " +
      "FROM t; SET work_mem = '1GB'";
  String d = "SELECT 1\\n; SET lock_timeout = 1";
  String label = "Reset MFA";  // a UI label is not SQL, however well it parses
  void run() { stmt.execute(a); stmt.execute(b); jdbc.update(c + d); }
}
"""
    hazards, _ = scan_text("A.java", text, "java")
    # Parsed with the placeholder replaced, reported as written.
    assert hazards[0].detail == "pg_advisory_lock(...) in: SELECT pg_advisory_lock(?)"
    assert [(h.location.line, h.kind) for h in hazards] == [
        (5, "advisory-lock"),
        (8, "listen"),
        (11, "session-set"),
        (12, "session-set"),
    ]


def test_go_js_kotlin_ruby_literals_keep_lines() -> None:
    go = (
        "package x\nconst q = `\nSELECT 1;\nSET statement_timeout = 0;\n`\n"
        'var s = "LISTEN \\"c\\""\nfunc f() { db.Exec(q); db.Exec(s) }\n'
    )
    assert [(h.location.line, h.kind) for h in scan_text("a.go", go, "go")[0]] == [
        (4, "session-set"),
        (6, "listen"),
    ]
    js = (
        "const a = `SELECT ${\n  x\n}; PREPARE p AS SELECT 1`;\nconst b = 'SET LOCAL x = 1';\n"
        "await pool.query(a); await pool.query(b); showTitle('Reset MFA');\n"
    )
    assert [(h.location.line, h.kind) for h in scan_text("a.ts", js, "js")[0]] == [
        (3, "sql-prepare")
    ]
    kt = 'val q = """\n   SET search_path = $schema;\n"""\nfun f() = jdbc.execute(q)\n'
    assert [(h.location.line, h.kind) for h in scan_text("a.kt", kt, "kotlin")[0]] == [
        (2, "session-set")
    ]
    rb = """class M < ActiveRecord::Migration[7.1]
  # execute "SET x = 1" in a comment
  def up
    execute <<~SQL.squish
      SELECT 1;
      CREATE TEMP TABLE x (a int);
    SQL
    execute "SET lock_timeout = '#{t}'"
    execute %q(LOAD 'auto_explain')
    rows << 1
  end
end
"""
    assert [(h.location.line, h.kind) for h in scan_text("db/migrate/1_m.rb", rb, "ruby")[0]] == [
        (6, "temp-table"),
        (8, "session-set"),
        (9, "load"),
    ]


def test_suppression_comment_marks_the_hazard() -> None:
    text = (
        "-- pool-advisor: ignore[PA401] tenant switch is reset below\n"
        "SET search_path = t;\nLISTEN x;\n"
    )
    hazards, _ = scan_text("a.sql", text, "sql")
    assert [(h.kind, h.suppressed) for h in hazards] == [
        ("session-set", ("PA401",)),
        ("listen", ()),
    ]


def test_assign_clients_by_source_folder() -> None:
    def at(path: str) -> SqlHazard:
        return SqlHazard(kind="listen", detail="LISTEN x", location=Location(path=path, line=1))

    hazards = [at("services/web/db/V1.sql"), at("services/web2/q.py"), at("db/x.sql")]
    dirs = {"web": "services/web", "worker": "services/web/", "all": "."}
    got = [(h.location.path, h.client_id) for h in assign_clients(hazards, dirs)]
    assert got == [
        ("services/web/db/V1.sql", "web"),
        ("services/web/db/V1.sql", "worker"),
        ("services/web2/q.py", "all"),
        ("db/x.sql", "all"),
    ]
    assert assign_clients(hazards, {"web": "services/web"})[2].client_id is None


# --- driver and ORM settings ----------------------------------------------------------


def driver(path: str, text: str, kind: str) -> list[tuple[int, str]]:
    return [(h.location.line, h.kind) for h in scan_text(path, text, kind)[0]]


def test_python_driver_settings() -> None:
    text = """import asyncpg, psycopg
a = await asyncpg.create_pool(dsn)
b = await asyncpg.connect(dsn, statement_cache_size=0)
c = psycopg.connect(dsn)
d = psycopg.connect(dsn, prepare_threshold=None)
DATABASES = {
    "default": {"ENGINE": "django.db.backends.postgresql", "NAME": "app"},
    "safe": {"ENGINE": "django.db.backends.postgresql", "DISABLE_SERVER_SIDE_CURSORS": True},
    "lite": {"ENGINE": "django.db.backends.sqlite3"},
}
"""
    assert driver("settings.py", text, "python") == [
        (2, "protocol-prepare"),
        (4, "protocol-prepare"),
        (7, "with-hold-cursor"),
    ]


def test_a_scheme_taken_off_or_tested_for_is_not_a_connection_string() -> None:
    # audit 13f: AcadMix's one-off scripts turn DATABASE_URL into asyncpg's form with
    # .replace("postgresql+asyncpg://", "postgresql://") and connect with
    # statement_cache_size=0; the scheme literal was a PA405 "SQLAlchemy asyncpg
    # prepared_statement_cache_size not set" error in each.
    text = """import asyncpg, os
DB = os.getenv("DATABASE_URL", "").replace("postgresql+asyncpg://", "postgresql://")
if DB.startswith("jdbc:postgresql://"):
    DB = DB.removeprefix("jdbc:")
conn = await asyncpg.connect(DB, statement_cache_size=0)
"""
    assert driver("backend/patch_rows.py", text, "python") == []
    # the scheme put on: the URL the engine connects with is asyncpg's
    put = 'url = os.environ["DATABASE_URL"].replace("postgresql://", "postgresql+asyncpg://")\n'
    assert driver("backend/db.py", "import os\n" + put, "python") == [(2, "protocol-prepare")]
    js = ('const url = process.env.DATABASE_URL.replace("jdbc:postgresql://", "postgres://")\n'
          'const api = "jdbc:postgresql://db:5432/app"\n')
    assert driver("src/db.ts", js, "js") == [(2, "protocol-prepare")]
    go = ('package db\nimport "strings"\n'
          'func dsn(u string) string { return strings.TrimPrefix(u, "jdbc:postgresql://") }\n')
    assert driver("db.go", go, "go") == []


def test_psycopg_pool_sqlalchemy_asyncpg_pgx_and_django_later_assignment() -> None:
    text = """from psycopg_pool import ConnectionPool
a = ConnectionPool(dsn)
b = ConnectionPool(dsn, kwargs={"prepare_threshold": None})
url = "postgresql+asyncpg://app@pgbouncer/app"
ok = "postgresql+asyncpg://app@pgbouncer/app?prepared_statement_cache_size=0"
DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql"}}
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
"""
    assert driver("settings.py", text, "python") == [
        (2, "protocol-prepare"),
        (4, "protocol-prepare"),
    ]
    go = (
        'package db\nimport (\n\t"context"\n\t"github.com/jackc/pgx/v5/pgxpool"\n)\n'
        "func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {\n"
        "\treturn pgxpool.New(ctx, url)\n}\n"
    )
    # flagged where the pool is opened, not at every file importing pgx
    assert driver("db.go", go, "go") == [(7, "protocol-prepare")]
    assert driver("q.go", 'package db\nimport "github.com/jackc/pgx/v5"\n', "go") == []
    safe = go + "var mode = pgx.QueryExecModeCacheDescribe\n"
    assert driver("db.go", safe, "go") == []


def test_jdbc_urls_spring_properties_and_hikari_init_sql() -> None:
    props = """spring.datasource.url=jdbc:postgresql://pgbouncer:6432/app
spring.datasource.hikari.connection-init-sql=SET search_path TO app
other.url=jdbc:postgresql://pgbouncer:6432/app?prepareThreshold=0
"""
    assert driver("application.properties", props, "spring") == [
        (1, "protocol-prepare"),
        (2, "session-set"),
    ]
    yml = (
        "spring:\n  datasource:\n    url: jdbc:postgresql://db/app\n    hikari:\n"
        "      data-source-properties:\n        prepareThreshold: 0\n"
    )
    assert driver("application.yml", yml, "spring") == []
    java = 'class A { String u = "jdbc:postgresql://db:5432/app?user=x&prepareThreshold=5"; }\n'
    assert driver("A.java", java, "java") == [(1, "protocol-prepare")]


def test_rails_database_yml_prisma_and_env() -> None:
    yml = "default: &default\n  adapter: postgresql\n  pool: 5\nproduction:\n  <<: *default\n"
    assert driver("config/database.yml", yml, "rails-database") == [
        (2, "protocol-prepare"),
        (2, "advisory-lock"),
    ]
    safe = yml + "  prepared_statements: false\n  advisory_locks: false\n"
    assert driver("config/database.yml", safe, "rails-database") == []
    prisma = 'datasource db {\n  provider = "postgresql"\n  url      = env("DATABASE_URL")\n}\n'
    assert driver("prisma/schema.prisma", prisma, "prisma") == [(2, "protocol-prepare")]
    ok = prisma.replace('env("DATABASE_URL")', '"postgresql://u@h/db?pgbouncer=true"')
    assert driver("prisma/schema.prisma", ok, "prisma") == []
    env = "PGOPTIONS=-c statement_timeout=5s\nDATABASE_URL=postgres://a@b/c?options=-c%20x%3D1\n"
    assert driver(".env", env, "dotenv") == [(1, "startup-parameter"), (2, "startup-parameter")]


def test_env_hazards_from_container_environment() -> None:
    at = Source(path="k8s/web.yaml", line=30)
    pgoptions = EnvVar(name="PGOPTIONS", value="-c statement_timeout=5s", source=at)
    url = EnvVar(name="JDBC_URL", value="jdbc:postgresql://pgbouncer:6432/app", source=at)
    secret = EnvVar(name="DATABASE_URL", value=None, source=at, secret=True)
    got = [
        (h.kind, h.client_id, h.location.line)
        for e in (pgoptions, url, secret)
        for h in env_hazards(e, "web")
    ]
    assert got == [("startup-parameter", "web", 30), ("protocol-prepare", "web", 30)]


@pytest.mark.parametrize("name, value", [
    ("PGOPTIONS", "-c statement_timeout=5s"), ("PGOPTIONS", ""),
    ("JDBC_URL", "jdbc:postgresql://pgbouncer:6432/app"),
    ("JDBC_URL", "jdbc:postgresql://pgbouncer:6432/app?prepareThreshold=0"),
    ("DATABASE_URL", "POSTGRES://a@b/c?options=-c%20x%3D1"),
    ("DATABASE_URL", "postgresql+asyncpg://a@b/c"),
    ("DSN", "host=db dbname=app options='-c search_path=x'"),
    ("DSN", "host=db dbname=app"), ("JAVA_OPTS", "-Xmx512m"), ("POOL", "20"),
    ("URL", "mysql://a@b/c?options=x"), ("EMPTY", ""), ("SECRET", None),
])
def test_env_hazards_prefilter_lets_every_hazard_through(name, value) -> None:
    from advisor.read.sql.drivers import may_hold_env_hazard

    env = EnvVar(name=name, value=value, source=Source(path="k8s/web.yaml", line=3))
    if not may_hold_env_hazard(env):
        assert env_hazards(env, "web") == []
    assert may_hold_env_hazard(env) == (value is not None and (
        name == "PGOPTIONS" or "options" in value or "postgres" in value.lower()))


# --- rules ----------------------------------------------------------------------------

SRC = Source(path="pgbouncer.ini", line=3)


def setting(name: str, value: str, line: int = 3) -> Setting:
    return Setting(
        name=name, raw=value, value=value, source=Source(path="pgbouncer.ini", line=line)
    )


def pooler(
    mode: str | None = "transaction",
    *,
    version: tuple[int, int] = (1, 18),
    databases: list[PoolerDatabase] | None = None,
    users: list[PoolerUser] | None = None,
    **settings: str,
) -> Pooler:
    values = {k: setting(k, v) for k, v in settings.items()}
    if mode:
        values["pool_mode"] = setting("pool_mode", mode)
    return Pooler(
        id="pgb",
        name="pgbouncer",
        replicas=Term(label="replicas", value=1, source=SRC),
        version=BouncerVersion(major=version[0], minor=version[1]),
        settings=values,
        databases=databases or [],
        users=users or [],
        location=Location(path="pgbouncer.ini", line=1),
    )


def client(db: str | None, user: str | None, target: str | None = "pgb") -> Client:
    return Client(
        id="web",
        name="web",
        replicas=Term(label="replicas", value=2, source=SRC),
        pools=[
            Pool(
                label="psycopg",
                size=Term(label="pool", value=5, source=SRC),
                route=Route(dbname=db, user=user, source=SRC),
            )
        ],
        target_kind="pooler" if target else "server",
        target_id=target or "pg",
        location=Location(path="k8s/web.yaml", line=1),
    )


def hazard(kind: str = "session-set", client_id: str | None = "web", **kw: object) -> SqlHazard:
    return SqlHazard(
        kind=kind,
        detail=str(kw.pop("detail", "SET work_mem = '1GB'")),
        location=Location(path="app/q.sql", line=7),
        client_id=client_id,
        **kw,
    )


def run(code: str, topo: Topology) -> list:
    return list(RULES.rules[code].func(topo, RuleContext()))


def test_pool_mode_precedence_user_over_database_over_global() -> None:
    p = pooler(
        "session",
        databases=[
            PoolerDatabase(
                name="app",
                pool_mode=setting("pool_mode", "transaction", 5),
                location=SRC.location(),
            ),
            PoolerDatabase(name="*", location=SRC.location()),
        ],
        users=[
            PoolerUser(
                name="batch", pool_mode=setting("pool_mode", "session", 9), location=SRC.location()
            )
        ],
    )
    assert effective_mode(p, "app", "web").mode == "transaction"
    assert effective_mode(p, "app", "batch").mode == "session"
    assert effective_mode(p, "other", "web").scope == "[pgbouncer]"
    assert effective_mode(pooler(None), "app", "web").scope == "default"
    topo = Topology(poolers=[p], clients=[client("app", "web")], sql_hazards=[hazard()])
    [finding] = run("PA401", topo)
    assert finding.location.line == 7
    assert "transaction mode ([databases] app, pgbouncer.ini:5)" in finding.message
    assert "SET LOCAL" in finding.fix.description
    assert {r.location.line for r in finding.related} == {5, 1}
    batch = replace(topo, clients=[client("app", "batch")])
    assert run("PA401", batch) == []


def test_no_transaction_pooler_no_findings() -> None:
    assert run("PA401", Topology(sql_hazards=[hazard(client_id=None)])) == []
    session = Topology(poolers=[pooler("session")], sql_hazards=[hazard(client_id=None)])
    assert run("PA401", session) == []
    direct = Topology(
        poolers=[pooler()], clients=[client("app", "web", target=None)], sql_hazards=[hazard()]
    )
    assert run("PA401", direct) == []


def test_unmapped_hazard_uses_strictest_mode_and_says_so() -> None:
    p = pooler(
        "session",
        databases=[
            PoolerDatabase(
                name="rep", pool_mode=setting("pool_mode", "statement", 4), location=SRC.location()
            )
        ],
    )
    topo = Topology(
        poolers=[p], sql_hazards=[hazard("transaction-block", client_id=None, detail="BEGIN")]
    )
    [finding] = run("PA409", topo)
    assert "not mapped to a workload" in finding.message and "statement mode" in finding.message


def test_suppressed_hazard_is_skipped() -> None:
    topo = Topology(
        poolers=[pooler()],
        clients=[client("app", "web")],
        sql_hazards=[
            hazard(suppressed=("PA401",)),
            hazard("listen", suppressed=("session-set-in-transaction-pool",)),
        ],
    )
    assert run("PA401", topo) == []
    assert len(run("PA402", topo)) == 1


def test_protocol_prepares_depend_on_version_and_max_prepared_statements() -> None:
    h = [hazard("protocol-prepare", detail="asyncpg.create_pool(...)")]
    c = [client("app", "web")]
    old = Topology(poolers=[pooler()], clients=c, sql_hazards=h)
    [finding] = run("PA405", old)
    assert "PgBouncer 1.18" in finding.message and "1.21" in finding.message
    off = replace(old, poolers=[pooler(version=(1, 21))])
    assert "max_prepared_statements = 0" in run("PA405", off)[0].message
    on = replace(old, poolers=[pooler(version=(1, 21), max_prepared_statements="100")])
    assert run("PA405", on) == []
    default_on = replace(old, poolers=[pooler(version=(1, 24))])
    assert run("PA405", default_on) == []
    # SQL-level PREPARE is never tracked, whatever the version.
    sql = replace(old, poolers=[pooler(version=(1, 24))], sql_hazards=[hazard("sql-prepare")])
    assert len(run("PA404", sql)) == 1


def test_startup_parameter_any_mode_unless_ignored_or_tracked() -> None:
    h = [hazard("startup-parameter", client_id=None, detail="options: -c statement_timeout=5s")]
    assert len(run("PA410", Topology(poolers=[pooler("session")], sql_hazards=h))) == 1
    ignored = pooler(ignore_startup_parameters="extra_float_digits, options")
    assert run("PA410", Topology(poolers=[ignored], sql_hazards=h)) == []
    newer = pooler(version=(1, 20))
    assert len(run("PA410", Topology(poolers=[newer], sql_hazards=h))) == 1
    tz = [hazard("startup-parameter", client_id=None, detail="options: -c timezone=UTC")]
    assert run("PA410", Topology(poolers=[newer], sql_hazards=tz)) == []
    assert len(run("PA410", Topology(poolers=[pooler()], sql_hazards=tz))) == 1


def test_asyncpg_server_settings_are_startup_parameters_pgbouncer_must_know() -> None:
    # audit 13f: AcadMix's engines pass connect_args={"server_settings": {"jit": "off"}}
    # behind PgBouncer 1.22.1 (ignore_startup_parameters = extra_float_digits,options):
    # asyncpg puts jit=off in the startup packet and PgBouncer answers "unsupported
    # startup parameter: jit" (pgbouncer_1_22_1 src/client.c:691-697).
    text = """import asyncpg
from sqlalchemy.ext.asyncio import create_async_engine
engine = create_async_engine(
    DATABASE_URL,
    connect_args={
        "statement_cache_size": 0,
        "prepared_statement_cache_size": 0,
        "server_settings": {"jit": "off", "application_name": "api"},
    },
)
pool = await asyncpg.create_pool(dsn, statement_cache_size=0, server_settings=settings)
conn = await asyncpg.connect(dsn, statement_cache_size=0, server_settings={"TimeZone": "UTC"})
"""
    found = scan_text("backend/database.py", text, "python")[0]
    assert [(h.location.line, h.kind, h.detail) for h in found] == [
        (8, "startup-parameter",
         "parameters: jit, application_name (asyncpg server_settings in connect_args)"),
        (12, "startup-parameter", "parameters: TimeZone (asyncpg server_settings)"),
    ]
    jit, tz = ([replace(h, client_id=None)] for h in found)
    assert len(run("PA410", Topology(poolers=[pooler(version=(1, 22))], sql_hazards=jit))) == 1
    [finding] = run("PA410", Topology(poolers=[pooler(version=(1, 22))], sql_hazards=jit))
    assert ("PgBouncer 1.22 tracks no jit and ignore_startup_parameters does not list it"
            in finding.message)
    ignored = pooler(version=(1, 22), ignore_startup_parameters="extra_float_digits,jit")
    assert run("PA410", Topology(poolers=[ignored], sql_hazards=jit)) == []
    tracked = pooler(version=(1, 22), track_extra_parameters="IntervalStyle,jit")
    assert run("PA410", Topology(poolers=[tracked], sql_hazards=jit)) == []
    # TimeZone is one of the parameters every PgBouncer tracks (src/varcache.c)
    assert run("PA410", Topology(poolers=[pooler()], sql_hazards=tz)) == []


def test_sqlalchemy_asyncpg_engine_known_by_its_connect_args() -> None:
    # audit 13f: AcadMix's engine reads its URL from the environment; connect_args names
    # asyncpg's statement_cache_size, and SQLAlchemy's own prepared_statement_cache_size
    # (default 100, named statements kept across transactions) is not set.
    text = """import os
from sqlalchemy.ext.asyncio import create_async_engine
engine = create_async_engine(
    os.environ["DATABASE_URL"],
    pool_size=5,
    connect_args={"statement_cache_size": 0, "command_timeout": 30},
)
safe = create_async_engine(url, connect_args={"statement_cache_size": 0,
                                              "prepared_statement_cache_size": 0})
plain = create_async_engine(url, connect_args={"timeout": 30})
"""
    found = scan_text("backend/database.py", text, "python")[0]
    assert [(h.location.line, h.kind) for h in found] == [(3, "protocol-prepare")]
    assert found[0].cleared_by == ("prepared_statement_cache_size=0",)
    assert "command_timeout, statement_cache_size" in found[0].detail
    # a URL written in the file is judged by the URL's own check, once
    written = text.replace('os.environ["DATABASE_URL"]', "URL") + \
        'URL = "postgresql+asyncpg://app@pgbouncer/app?prepared_statement_cache_size=0"\n'
    assert scan_text("backend/database.py", written, "python")[0] == []


# --- issue 15: one finding per place, unresolved routes, ERB, what is SQL -------------


def test_shared_folder_hazard_is_one_finding_with_the_workloads_related() -> None:
    web = client("app", "app")
    worker = replace(client("app", "app"), id="worker", name="worker",
                     location=Location(path="k8s/worker.yaml", line=1))
    topo = Topology(
        poolers=[pooler()],
        clients=[web, worker],
        sql_hazards=assign_clients([hazard(client_id=None)], {"web": "app", "worker": "app"}),
    )
    [finding] = run("PA401", topo)
    related = {r.location.path for r in finding.related}
    assert {"k8s/web.yaml", "k8s/worker.yaml"} <= related


def test_client_with_unresolved_route_uses_strictest_mode_and_says_so() -> None:
    lost = replace(client("app", "app"), target_kind=None, target_id=None)
    direct = replace(client("app", "app", target=None), id="direct", name="direct")
    topo = Topology(
        poolers=[pooler()],
        clients=[lost, direct],
        sql_hazards=[hazard(), hazard(client_id="direct")],
    )
    [finding] = run("PA401", topo)  # the client that goes straight to a server: no finding
    assert "route to a server is not resolved" in finding.message
    assert "strictest pool mode" in finding.message


def test_database_yml_erb_evaluated_with_the_workload_env() -> None:
    from advisor.read.sql.drivers import resolve_erb

    text = (
        "production:\n  adapter: postgresql\n  advisory_locks: false\n"
        "  prepared_statements: <%= ENV['PREPARED_STATEMENTS'] || 'true' %>\n"
    )
    [h] = scan_text("config/database.yml", text, "rails-database")[0]
    assert h.kind == "protocol-prepare" and h.location.line == 4
    mapped = replace(h, client_id="web")
    off = EnvVar(name="PREPARED_STATEMENTS", value="false", source=Source(path="k8s/web.yaml"))
    assert resolve_erb([mapped], {"web": [off]}) == []
    [kept] = resolve_erb([mapped], {})
    assert "PREPARED_STATEMENTS not set in the container env" in kept.detail


def test_labels_logs_and_rake_descriptions_are_not_sql() -> None:
    rb = (
        'desc "Reset MFA for a user"\n'
        'link_to "Execute Selected", path\n'
        'Rails.logger.info "Set up done"\n'
        'connection.execute("SET statement_timeout = 0")\n'
    )
    assert driver("lib/tasks/x.rake", rb, "ruby") == [(4, "session-set")]
    py = (
        'label = _("Execute Selected")\n'
        'log.info("Listen started")\n'
        'cursor.execute(f"SET search_path TO {schema}")\n'
        'query = "SELECT pg_advisory_lock(%s)" % key\n'
    )
    assert driver("app/views.py", py, "python") == [(3, "session-set"), (4, "advisory-lock")]


def test_test_and_example_code_is_not_production() -> None:
    from advisor.read.sql.extract import is_test_path

    for path in ("spec/models/a_spec.rb", "app/__tests__/x.ts", "internal/riverdbtest/db.go",
                 "netbox/configuration_example.py", "test/fixtures/q.sql", "examples/a.py",
                 ".github/scripts/x.py", "pkg/db_test.go"):
        assert is_test_path(path), path
    for path in ("db/migrations/V2__example.sql", "app/models/latest.rb", "db/structure.sql"):
        assert not is_test_path(path), path


def test_other_dialects_and_templates_are_a_notice_not_pa901() -> None:
    from advisor.read.sql.extract import NOT_CHECKED, not_checked_notices

    mysql = "SET NAMES utf8mb4;\nCREATE TABLE `a` (`id` int) ENGINE=InnoDB;\n"
    hazards, problems = scan_text("db/mysql/1.sql", mysql, "sql")
    assert hazards == [] and [p.program for p in problems] == [NOT_CHECKED]
    templated = "SET search_path = {{ index .Options \"Namespace\" }};\n"
    hazards, problems = scan_text("migrations/1.up.sql", templated, "sql")
    assert hazards == [] and "template" in problems[0].message
    notices, rest = not_checked_notices(problems)
    assert rest == [] and notices[0].startswith("migrations/1.up.sql")


def test_pg_dump_preamble_is_not_a_hazard_but_a_migration_set_is() -> None:
    dump = (
        "SET statement_timeout = 0;\nSET lock_timeout = 0;\n"
        "SELECT pg_catalog.set_config('search_path', '', false);\n"
        "CREATE TABLE t (a int);\nLISTEN x;\n"
    )
    assert driver("db/structure.sql", dump, "sql") == [(5, "listen")]
    assert driver("db/migrate/V3__t.sql", "SET search_path = app;\n", "sql") == [
        (1, "session-set")
    ]


def test_elixir_ecto_named_prepares_and_postgrex_queries() -> None:
    repo = (
        "defmodule App.Repo do\n  use Ecto.Repo,\n    otp_app: :app,\n"
        "    adapter: Ecto.Adapters.Postgres\nend\n"
        'def lock(k), do: Repo.query!("SELECT pg_try_advisory_lock($1)", [k])\n'
    )
    assert driver("lib/app/repo.ex", repo, "elixir") == [
        (2, "protocol-prepare"),
        (6, "advisory-lock"),
    ]
    assert driver("lib/app/repo.ex", repo.replace("end\n", "  prepare: :unnamed\nend\n", 1),
                  "elixir") == [(7, "advisory-lock")]


OBAN_CONFIG = """import Config

config :shelf, Oban,
  repo: Shelf.Repo,
  queues: [default: 10]

# config :shelf, Oban, repo: Shelf.Repo
"""


def test_oban_s_default_notifier_listens_at_its_config_block() -> None:
    """Oban.Notifiers.Postgres is the Basic engine's default (oban v2.23.0
    lib/oban/config.ex:86-89) and LISTENs (lib/oban/notifiers/postgres.ex:5-10)."""
    assert driver("config/config.exs", OBAN_CONFIG, "elixir") == [(3, "listen")]
    # test and dev configs are not what the release runs; a block without a repo
    # (config/test.exs's `testing: :manual`) opens nothing
    assert driver("config/test.exs", OBAN_CONFIG, "elixir") == []
    assert driver("config/config.exs", "config :shelf, Oban, testing: :manual\n",
                  "elixir") == []
    assert driver("lib/shelf/application.ex", OBAN_CONFIG, "elixir") == []


def test_oban_s_notifier_set_in_another_config_file_clears_it(tmp_path: Path) -> None:
    """The notifier may be set in runtime.exs while the Oban block is in config.exs: the
    per-file scan carries it as a repository fact (extract._RepoFacts)."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config/config.exs").write_text(OBAN_CONFIG)
    other = 'import Config\nconfig :shelf, Oban, notifier: Oban.Notifiers.PG\n'
    paths = ["config/config.exs", "config/runtime.exs"]
    for where, text, kept in (("config/runtime.exs", other, []),
                              ("config/runtime.exs", "# notifier: Oban.Notifiers.PG\n",
                               [("config/config.exs", 3)]),
                              ("config/test.exs", other, [("config/config.exs", 3)])):
        for stale in ("config/runtime.exs", "config/test.exs"):
            (tmp_path / stale).unlink(missing_ok=True)
        (tmp_path / where).write_text(text)
        hazards, _ = scan_sql_sources(Root.of(tmp_path), [*paths, "config/test.exs"])
        assert [(h.location.path, h.location.line) for h in hazards
                if h.kind == "listen"] == kept, where


def test_prepare_unnamed_only_in_the_dev_config_leaves_the_release_s_named(tmp_path) -> None:
    """Postgrex prepares named statements unless `prepare: :unnamed` (postgrex v0.22.2
    lib/postgrex.ex:147-148, lib/postgrex/protocol.ex:118): one in config/dev.exs is not
    the release's (MIX_ENV=prod) config."""
    (tmp_path / "config").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/repo.ex").write_text(
        "defmodule App.Repo do\n  use Ecto.Repo, otp_app: :app, adapter: Ecto.Adapters.Postgres\n"
        "end\n")
    for where, kept in (("config/dev.exs", 1), ("config/runtime.exs", 0)):
        for stale in ("config/dev.exs", "config/runtime.exs"):
            (tmp_path / stale).unlink(missing_ok=True)
        (tmp_path / where).write_text("import Config\nconfig :app, App.Repo, prepare: :unnamed\n")
        hazards, _ = scan_sql_sources(Root.of(tmp_path), ["lib/repo.ex", where])
        assert len([h for h in hazards if h.kind == "protocol-prepare"]) == kept, where


def test_wrapper_locks_and_named_queries() -> None:
    py = "from django_pglocks import advisory_lock\nwith advisory_lock('k'):\n    pass\n"
    assert driver("app/jobs.py", py, "python") == [(2, "advisory-lock")]
    rb = 'with_advisory_lock("a") { }\nwith_advisory_lock("b", transaction: true) { }\n'
    assert driver("app/models/a.rb", rb, "ruby") == [(1, "advisory-lock")]
    js = (
        "await client.query({\n  name: 'get_job',\n  text: 'select 1',\n});\n"
        "await client.query({ name: undefined, text: 'select 2' });\n"
    )
    assert driver("src/q.ts", js, "js") == [(2, "protocol-prepare")]


def test_python_newer_syntax_is_read_by_the_string_scanner_with_a_notice() -> None:
    from advisor.read.sql.extract import NOT_CHECKED

    text = (
        "def first[T](rows: list[T]) -> T:\n"
        '    cursor.execute(f"SET search_path TO {schema}")  # {braces} in a comment\n'
        '    title = "Reset MFA"\n'
        "    return rows[0]\n"
    )
    hazards, problems = scan_text("app/generic.py", text, "python")
    assert [(h.location.line, h.kind) for h in hazards] == [(2, "session-set")]
    assert [p.program for p in problems] == [NOT_CHECKED]


def test_backtick_in_java_or_kotlin_does_not_hang_the_scanner() -> None:
    for kind, path in (("java", "A.java"), ("kotlin", "a.kt")):
        assert scan_text(path, 'class A { String s = "`"; char c = \'`\'; } `x`\n', kind)
