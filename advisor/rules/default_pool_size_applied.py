"""PA104 default-pool-size-applied."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import Finding, Fix, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._app_pools import location_of, pods, pools_with, processes, related_of, subject


@rule("PA104", "default-pool-size-applied", Severity.info,
      "A pool size comes from the library's default, not from the repository")
def default_pool_size_applied(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports pools whose size nothing in the repository sets, so the driver's default
    applies: HikariCP 10, SQLAlchemy 5 + 10 overflow, psycopg_pool 4, asyncpg 10,
    node-postgres 10, Sequelize 5, Knex 10, Rails 5, Npgsql 100, Ecto 10, Agroal 20.
    The finding names the default and where it was read (library and version).

    ## Why is this bad
    The budget then rests on a number nobody chose, which changes when the library is
    upgraded or when someone adds the key without knowing the others; reviewers cannot
    see it in the diff. It is also where oversubscription usually hides: 40 pods x the
    default 10 is 400 connections no file mentions.

    ## Example
    ```yaml
    spring:
      datasource:
        url: jdbc:postgresql://db:5432/shop   # no hikari.maximum-pool-size: 10 applies
    ```

    ## Use instead
    ```yaml
    spring:
      datasource:
        url: jdbc:postgresql://db:5432/shop
        hikari:
          maximum-pool-size: 10
    ```

    ## Options
    None.

    ## References
    Defaults and where they were read (each reader's module in advisor/read/apps/ has more):
    - HikariCP 10: brettwooldridge/HikariCP HikariConfig.java, DEFAULT_POOL_SIZE = 10 at
      tags HikariCP-5.1.0 and HikariCP-6.0.0 (also run: Debian libhikaricp-java 2.7.9).
    - SQLAlchemy 5 + 10: QueuePool(pool_size=5, max_overflow=10), SQLAlchemy 2.1.9
      (introspected by tests/test_apps_defaults.py).
    - psycopg_pool 4: ConnectionPool(min_size=4, max_size=None -> min_size), 3.3.3.
    - asyncpg 10: create_pool(min_size=10, max_size=10), 0.32.0.
    - Django: one connection per thread per alias (ConnectionHandler.thread_critical),
      5.2.19; OPTIONS pool=True -> psycopg_pool defaults.
    - node-postgres 10: pg-pool 3.14.0 index.js `max || poolSize || 10` (run under node).
    - Sequelize 5: sequelize v6.37.8 src/dialects/abstract/connection-manager.js:34.
    - Knex 10: knex 3.3.0 lib/client.js:230 (`{ min: 2, max: 10 }`).
    - TypeORM: pg-pool's 10 (typeorm 1.1.0 PostgresDriver.ts passes `max: poolSize`);
      before 0.3.10 `poolSize` is ignored for postgres (PostgresDriver.ts@0.3.9), so
      10 also applies when the app's typeorm range allows only older versions.
    - Rails 5: rails/rails activerecord/.../database_configurations/hash_config.rb
      (`(configuration_hash[:pool] || 5).to_i`).
    - Npgsql 100: npgsql v10.0.0 NpgsqlConnectionStringBuilder.cs ([DefaultValue(100)]).
    - Ecto 10: ecto v3.14.1 lib/ecto/repo/supervisor.ex:12 (`pool_size: 10`).
    - Quarkus Agroal 20: quarkus DataSourceJdbcRuntimeConfig.java (`@WithDefault("20")`).
    """
    for client, pool in pools_with(topo, "default"):
        per_pod = pool.size.value * processes(pool)
        where = pool.size.source.default or pool.size.source.key or "library default"
        message = (f"{client.name}: {pool.label} = {num(pool.size.value)} is not set in the "
                   f"repository; {where} applies"
                   + (f" ({pool.note})" if pool.note else "")
                   + f": {num(pods(client))} pods x {num(per_pod)} per pod")
        yield Finding(code="PA104", name="default-pool-size-applied", severity=Severity.info,
                      message=message, location=location_of(client, pool),
                      related=related_of(client, pool),
                      fix=Fix(description=f"set {pool.label} explicitly"),
                      subject=subject(client, pool))
