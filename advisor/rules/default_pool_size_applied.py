"""PA104 default-pool-size-applied."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.arith import num
from advisor.context import RuleContext
from advisor.model import Finding, Fix, Severity, Topology
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
    - Each reader's module documentation in advisor/apps/ cites the source file and
      version its default was read from; tests/test_apps_defaults.py checks the Python
      and node-postgres ones against the installed libraries.
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
