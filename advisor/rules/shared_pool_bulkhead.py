"""PA211 shared-pool-bulkhead: a batch workload and a latency-sensitive one share one
PgBouncer pool."""

from __future__ import annotations

import re
from collections.abc import Iterator

from advisor.budget.slots import behind
from advisor.lazyregex import lazy
from advisor.model import Client, Finding, Fix, Pooler, RelatedLocation, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule

# Names that say a workload runs long transactions rather than serving requests.
_BATCH_NAME = lazy(r"(^|[-_.])(batch|report|reports|reporting|etl|export|import|"
                   r"analytics|backfill|nightly|cron|jobs?)([-_.]|$)", re.I)


def is_batch(client: Client) -> bool:
    return client.kind in ("Job", "CronJob") or bool(_BATCH_NAME.search(client.name))


def _pool_keys(client: Client, pooler: Pooler) -> set[tuple[str, str]]:
    """The (database, user) PgBouncer pools the client's routes land in; a database
    entry's forced user puts every client of it in one pool."""
    keys = set()
    for pool in client.pools:
        route = pool.route
        if route is None or route.dbname is None:
            continue
        entry = next((d for d in reversed(pooler.databases) if d.name == route.dbname), None)
        user = entry.user if entry is not None and entry.user else route.user
        if user is not None:
            keys.add((route.dbname, user))
    return keys


@rule("PA211", "shared-pool-bulkhead", Severity.info,
      "A batch or reporting workload shares a PgBouncer pool with a latency-sensitive one")
def shared_pool_bulkhead(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds PgBouncer pools (one per database and user) that serve both a batch workload
    (a Job or CronJob, or a workload named like batch, report, etl, export, analytics,
    backfill) and a latency-sensitive one (any other Deployment or StatefulSet).

    ## Why is this bad
    A PgBouncer pool has `pool_size` server connections for everyone who logs in as
    that user to that database. A batch run holds its connections for long
    transactions; when it takes most of the pool, the web requests queue behind it in
    PgBouncer (up to `query_wait_timeout`) although the server itself is idle enough.
    A separate pool is a bulkhead: the batch can exhaust only its own.

    ## Example
    ```yaml
    # checkout (Deployment) and nightly-report (CronJob) both connect as `shop` to
    # database `shop` through the same PgBouncer
    ```

    ## Use instead
    Give the batch workload its own user (its own pool) with a small `pool_size` or
    `max_user_connections` in `[users]`, or its own database alias in `[databases]`
    with its own `pool_size`.

    ## Options
    None.

    ## References
    - PgBouncer docs: a pool per (database, user) pair; `[users]` pool_size and
      max_user_connections (1.23+ pool_size per user).
    - M. Nygard, Release It!: the Bulkheads pattern.
    """
    for pooler in topo.poolers:
        if pooler.kind != "pgbouncer":
            continue
        clients = behind(pooler, topo)
        keyed = [(c, _pool_keys(c, pooler)) for c in clients]
        batches = [(c, k) for c, k in keyed if is_batch(c)]
        online = [(c, k) for c, k in keyed if not is_batch(c)]
        for batch, batch_keys in batches:
            for web, web_keys in online:
                for db, user in sorted(batch_keys & web_keys):
                    yield Finding(
                        code="PA211", name="shared-pool-bulkhead", severity=Severity.info,
                        message=(f"{batch.name} ({batch.kind}) and {web.name} ({web.kind}) "
                                 f"share {pooler.name}'s pool for database {db!r}, user "
                                 f"{user!r}: a long batch run can hold the pool's server "
                                 f"connections while {web.name}'s requests queue behind it"),
                        location=batch.location,
                        related=(RelatedLocation(location=web.location,
                                                 message=f"{web.name} uses the same pool"),
                                 RelatedLocation(location=pooler.location,
                                                 message=f"PgBouncer {pooler.name}")),
                        fix=Fix(description=(f"give {batch.name} its own user (a [users] "
                                             "entry with a small pool_size or "
                                             "max_user_connections) or its own database "
                                             "alias with its own pool_size")),
                        subject=f"{pooler.id}|{batch.id}|{web.id}|{db}|{user}")
