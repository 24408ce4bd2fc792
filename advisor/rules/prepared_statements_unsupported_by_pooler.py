"""PA405 prepared-statements-unsupported-by-pooler (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, SqlHazard, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._transaction_mode import (
    RouteMode,
    hazard_findings,
    setting_int,
)

CODE = "PA405"
NAME = "prepared-statements-unsupported-by-pooler"
CONSEQUENCE = (
    "a statement the driver prepared on one server connection is executed on another: "
    '`prepared statement "..." does not exist` (or `already exists` for the next client)'
)


def _breaks(hazard: SqlHazard, route: RouteMode) -> str | None:
    pooler = route.pooler
    if pooler.kind == "managed":
        from advisor.facts.managed_poolers import not_checked, of

        known = of(pooler.managed)
        if known is None or not_checked(pooler.managed, CODE) is not None:
            return None  # its provider documents them as supported
        url = dict((k, u) for k, _raw, u in known.settings).get(
            "max_prepared_statements", known.mode_doc)
        return (f"{known.title} does not support prepared statements in transaction mode "
                f"({url})")
    version = pooler.version
    if not version.at_least(1, 21):
        return (
            f"PgBouncer {version.text} ({version.source.label()}) does not track "
            "protocol-level prepared statements (1.21+ does, with max_prepared_statements > 0)"
        )
    limit, source = setting_int(pooler, "max_prepared_statements")
    if limit > 0:
        return None  # PgBouncer 1.21+ tracks them per client
    return f"max_prepared_statements = {limit} ({source.label()}) turns PgBouncer's tracking off"


_OFF = "turn the driver's named prepared statements off"


def _fix(hazard: SqlHazard, route: RouteMode) -> str:
    """The fix for the pooler the hazard runs through, by its kind and version (audit 55:
    "upgrade PgBouncer to >= 1.21" was said to PgBouncer 1.22 and to Supavisor)."""
    pooler = route.pooler
    if pooler.kind == "managed":  # nothing to set or upgrade: the provider's own advice
        from advisor.facts.managed_poolers import of

        known = of(pooler.managed)
        return known.prepared_fix if known is not None and known.prepared_fix else _OFF
    from advisor.rules._common import bouncer_key_place

    declared = pooler.id.startswith("declared-proxy/")
    if not pooler.version.at_least(1, 21):
        if declared:
            return (f"upgrade {pooler.name} to PgBouncer >= 1.21 where it runs (outside the "
                    "repository) and set max_prepared_statements > 0 there (200 by default "
                    "from 1.24), then `version` and `max_prepared_statements` of its "
                    f"[[proxies]] declaration, or {_OFF}")
        return (f"upgrade PgBouncer to >= 1.21 and set max_prepared_statements > 0 (200 by "
                f"default from 1.24), or {_OFF}")
    # 1.21-1.23 track them once max_prepared_statements > 0: no upgrade needed
    place = bouncer_key_place(pooler, "max_prepared_statements")
    if place is None:
        return f"{_OFF} ({pooler.name}'s deployment offers no max_prepared_statements to set)"
    return (f"set max_prepared_statements > 0 (e.g. 200, its default from PgBouncer 1.24) in "
            f"{place}, or {_OFF}")


@rule(
    CODE,
    NAME,
    Severity.error,
    "Driver-level prepared statements behind a transaction pooler that does not track them",
)
def prepared_statements_unsupported_by_pooler(
    topology: Topology, context: RuleContext
) -> Iterator[Finding]:
    """## What it does
    Finds drivers and ORMs set to use named protocol-level prepared statements, when
    their client goes through a transaction- or statement-mode PgBouncer older than 1.21
    or with `max_prepared_statements = 0`:
    pgjdbc `prepareThreshold` (default 5: named statements from the 5th execution),
    asyncpg `statement_cache_size` (default 100), psycopg 3 `prepare_threshold`
    (default 5, also through psycopg_pool `kwargs`), SQLAlchemy asyncpg URLs without
    `prepared_statement_cache_size=0`, pgx's default `cache_statement` query exec mode
    (flagged where a pool or connection is opened: `pgxpool.New`, `pgx.Connect`,
    `sql.Open("pgx", ...)`, `stdlib.OpenDB`, gobuffalo/pop's `pop.NewConnection`, which
    opens pgx v4's stdlib driver; not where pgx is merely imported; a safe
    `default_query_exec_mode` in the workload's connection string, from its env or a
    Secret/ConfigMap the repository holds, clears it, and a connection string the
    repository does not hold is said to be unread), postgres.js `postgres(...)` calls
    (default `prepare: true`; `prepare: false` or `?prepare=false` in the URL turns it
    off), node-postgres queries with a `name`, Ecto repos with the Postgres adapter
    unless a config sets `prepare: :unnamed`, Laravel's pgsql connections in
    config/database.php (PDO pdo_pgsql prepares every query as `pdo_stmt_N` unless the
    connection's `options` set `PDO::ATTR_EMULATE_PREPARES => true`; a workload whose
    `DB_CONNECTION` names another connection is not flagged), Rails `prepared_statements` (default
    true; an ERB value such as `<%= ENV['PREPARED_STATEMENTS'] || 'true' %>` is
    evaluated with the workload's container env), Prisma without `pgbouncer=true` in a
    datasource url it can read (no url in schema.prisma: not reported), Rust's sqlx
    (every query with arguments is a named statement `sqlx_s_N`; flagged where a
    `PgPoolOptions`/`PgPool::connect`/`PgConnection::connect` opens one: no pool or URL
    setting turns it off, `statement_cache_capacity(0)` only stops the caching).
    Also behind Supabase's Supavisor in transaction mode (port 6543, recognised by host),
    which does not support them; not behind Neon's pooled endpoint, documented as
    supporting them. The fix follows the pooler: upgrade a PgBouncer older than 1.21, set
    `max_prepared_statements` on 1.21-1.23, and on Supavisor turn the driver's prepared
    statements off or use its session mode (port 5432), as Supabase's docs say.

    ## Why is this bad
    A named prepared statement lives in one server session. Behind a transaction pooler
    the driver's next `Bind` goes to whichever server connection is free, which either
    lacks the statement (`prepared statement "S_1" does not exist`) or already has one
    of that name from another client (`prepared statement "_pg3_0" already exists`).
    PgBouncer 1.21 added tracking of protocol-level prepared statements, enabled by
    `max_prepared_statements > 0` (default 0 in 1.21-1.23, 200 from 1.24).

    ## Example
    ```ini
    # jdbc:postgresql://pgbouncer:6432/app            (prepareThreshold defaults to 5)
    # asyncpg.create_pool(dsn)                          (statement_cache_size 100)
    # psycopg.connect(dsn)                              (prepare_threshold 5)
    ```

    ## Use instead
    ```ini
    # jdbc:postgresql://pgbouncer:6432/app?prepareThreshold=0
    # asyncpg.create_pool(dsn, statement_cache_size=0)
    # psycopg.connect(dsn, prepare_threshold=None)
    # or PgBouncer >= 1.21 with: max_prepared_statements = 200
    ```

    ## Options
    None.

    ## References
    - PgBouncer 1.21.0 changelog and max_prepared_statements:
      https://www.pgbouncer.org/config.html#max_prepared_statements
    - pgjdbc PGProperty.PREPARE_THRESHOLD (default "5"):
      https://jdbc.postgresql.org/documentation/use/
    - psycopg prepared statements: https://www.psycopg.org/psycopg3/docs/advanced/prepare.html
    - asyncpg and PgBouncer: https://magicstack.github.io/asyncpg/current/faq.html
    - pgx v5 `conn.go` ParseConfig: `defaultQueryExecMode := QueryExecModeCacheStatement`;
      `stdlib/sql.go` Conn.QueryContext/ExecContext run through that conn; pgx v4
      `conn.go`: `statementCacheMode := stmtcache.ModePrepare` unless
      `statement_cache_mode=describe` (https://github.com/jackc/pgx, tags v5.9.2, v4.18.3).
      QueryExecModeDescribeExec is not counted safe: its own doc comment says it may break
      behind poolers that switch connections between its two round trips.
    - gobuffalo/pop `dialect_postgresql.go`: imports `github.com/jackc/pgx/v4/stdlib`,
      `DefaultDriver()` "pgx" (https://github.com/gobuffalo/pop)
    - postgres.js `src/index.js` parseOptions (`prepare: true` default, the URL's
      `?prepare=false`) and README "Prepared statements" (https://github.com/porsager/postgres)
    - A PgBouncer image with no version tag is assumed 1.18 (edoburu/pgbouncer:latest pulled
      at every start: at least 1.24, advisor.link.poolers._latest_bouncer), or at least the version
      that introduced a [pgbouncer] setting it is given: PgBouncer does not start with an
      unknown parameter (libusual `cfparser.c` cf_set, `src/main.c` load_config).
    - node-postgres `packages/pg/lib/query.js` requiresPreparation: "named queries must
      always be prepared" (https://github.com/brianc/node-postgres)
    - Postgrex `lib/postgrex.ex`: `:prepare` "(default: `:named`)", `:unnamed` for
      PgBouncer before 1.21 (https://github.com/elixir-ecto/postgrex)
    - psycopg `psycopg/psycopg/_preparing.py`: `prepare_threshold: int | None = 5`
      (https://github.com/psycopg/psycopg)
    - Supavisor in transaction mode does not support prepared statements; how to turn
      them off per library (Prisma `?pgbouncer=true`, ...):
      https://supabase.com/docs/guides/troubleshooting/disabling-prepared-statements-qL8lEL;
      port 6543 transaction mode, 5432 session mode:
      https://supabase.com/docs/guides/database/connecting-to-postgres
    """
    yield from hazard_findings(
        topology,
        code=CODE,
        name=NAME,
        severity=Severity.error,
        kinds=frozenset({"protocol-prepare"}),
        breaks=_breaks,
        consequence=CONSEQUENCE,
        fix=_fix,
    )
