"""PA213 database-not-served-by-pooler: a client names a database its PgBouncer has no
[databases] entry for, and no `*` fallback: every login is refused."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.unserved import Unserved, entry_line, unserved_routes
from advisor.model import Finding, Fix, RelatedLocation, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule


@rule("PA213", "database-not-served-by-pooler", Severity.error,
      "A client names a database its PgBouncer has no [databases] entry for")
def database_not_served_by_pooler(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds clients whose connection goes through a PgBouncer whose pgbouncer.ini the
    repository holds (every `%include` read) and names a database that file has no
    `[databases]` entry for, with no `*` fallback. Only a database name read from the
    client's settings counts (a URL's path, POSTGRES_DB beside POSTGRES_HOST...); a name
    left out is not guessed. The admin console `pgbouncer` is always served. Operator
    poolers (CloudNativePG, Zalando, Crunchy PGO, whose config.files may add entries) and
    images configured by environment are not checked: their generated configs are not
    here.

    ## Why is this bad
    PgBouncer serves only the databases its `[databases]` section lists, plus any name
    through a `*` entry. For another name it lets the client authenticate against a
    placeholder, then disconnects it with `no such database: <name>`: the application
    cannot connect at all. The server budget then counts no connection for it, so
    "fits" there says nothing about this client.

    ## Example
    ```ini
    ; pgbouncer.ini
    [databases]
    payments = host=postgres port=5432 dbname=payments
    ```
    with the application's `POSTGRES_DB=payment_processing`.

    ## Use instead
    ```ini
    [databases]
    payments = host=postgres port=5432 dbname=payments
    payment_processing = host=postgres port=5432 dbname=payment_processing
    ```
    or point the application at a database PgBouncer serves (`POSTGRES_DB=payments`),
    or add a `* = host=postgres port=5432` fallback.

    ## Options
    None.

    ## References
    - PgBouncer docs, configuration, section [databases]: "\\* acts as a fallback
      database: if the exact name does not exist, its value is taken as connection
      string for the requested database".
    - PgBouncer source: src/objects.c register_auto_database, and the "no such
      database: %s" disconnect (pgbouncer_1_24_1 src/objects.c:2021).
    """
    for u in unserved_routes(topo):
        yield _finding(u)


def _finding(u: Unserved) -> Finding:
    pooler = u.pooler
    at = u.at
    served = [d for d in pooler.databases if d.name != "*"]
    names = ", ".join(d.name for d in served) or "none"
    ini = served[0].location.path if served else pooler.location.path
    section = next((d.location for d in served), pooler.location)
    related = [RelatedLocation(location=d.location,
                               message=f"[databases] {d.name} (of {pooler.name})")
               for d in served[:5]]
    var = f"{at.key} " if at.key else "the database setting "
    alternative = f", or point {var.strip()} at {served[0].name}" if served else ""
    return Finding(
        code="PA213", name="database-not-served-by-pooler", severity=Severity.error,
        message=(f"{u.client.name}: connects through {pooler.name} to database "
                 f"{u.dbname!r} ({at.label()}), which {ini} has no [databases] entry for "
                 f"(it serves {names}; no * fallback): PgBouncer authenticates the client, "
                 f"then disconnects it with 'no such database: {u.dbname}', so it cannot "
                 "connect at all"),
        location=at.location() or u.route.source.location() or u.client.location,
        related=(RelatedLocation(location=section,
                                 message=f"{pooler.name}'s [databases] ({ini})"),
                 *related[1:]),
        fix=Fix(description=(f"add `{entry_line(u.dbname, served)}` to [databases] in "
                             f"{section.label()}{alternative}")),
        subject=f"{u.client.id}|{pooler.id}|{u.dbname}")
