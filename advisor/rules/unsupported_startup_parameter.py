"""PA410 unsupported-startup-parameter (documented in the rule function's docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Severity, SqlHazard, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._transaction_mode import (
    RouteMode,
    build_finding,
    candidate_modes,
    client_route_mode,
    hazard_mode,
    is_suppressed,
    setting_list,
    strictest,
    unmapped_poolers,
)

CODE = "PA410"
NAME = "unsupported-startup-parameter"
CONSEQUENCE = "PgBouncer refuses the connection: `unsupported startup parameter`"
# Parameters PgBouncer itself tracks and so accepts in `options` from 1.20 on.
TRACKED = frozenset(
    {"client_encoding", "datestyle", "timezone", "standard_conforming_strings", "application_name"}
)


def _rejects(hazard: SqlHazard, route: RouteMode) -> str | None:
    from advisor.read.sql.drivers import startup_parameters  # only when there is a hazard

    pooler = route.pooler
    if pooler.kind == "managed":
        from advisor.facts.managed_poolers import not_checked

        if not_checked(pooler.managed, CODE) is not None:
            return None  # its provider does not document how it treats them
    direct = startup_parameters(hazard.detail)
    if direct:
        return _rejects_parameters(direct, route)
    if "options" in setting_list(pooler, "ignore_startup_parameters"):
        return None  # accepted, and dropped: the settings silently do not apply
    version = pooler.version
    if not version.at_least(1, 20):
        return (
            f"PgBouncer {version.text} ({version.source.label()}) accepts no `options` "
            "startup parameter unless it is listed in ignore_startup_parameters"
        )
    extra = setting_list(pooler, "track_extra_parameters")  # 1.20+ default IntervalStyle
    from advisor.read.sql.drivers import startup_options  # only when there is a hazard

    names = startup_options(hazard.detail)
    unknown = [n for n in names if n not in TRACKED and n not in extra]
    if names and not unknown:
        return None
    shown = ", ".join(unknown) or "a non `-c` option"
    return f"{version.cite()} forwards only parameters it tracks; not {shown}"


def _rejects_parameters(names: list[str], route: RouteMode) -> str | None:
    """Parameters sent in the startup packet itself (asyncpg server_settings): PgBouncer
    takes the ones it tracks (src/varcache.c, plus track_extra_parameters from 1.20),
    drops the ones ignore_startup_parameters lists, and refuses the connection for any
    other (pgbouncer_1_22_1 src/client.c:691-697)."""
    pooler = route.pooler
    version = pooler.version
    ignored = setting_list(pooler, "ignore_startup_parameters")
    extra = setting_list(pooler, "track_extra_parameters") if version.at_least(1, 20) else []
    unknown = [n for n in names if n not in TRACKED and n not in extra and n not in ignored]
    if not unknown:
        return None
    return (f"{version.cite()} tracks no {', '.join(unknown)} and ignore_startup_parameters "
            "does not list it")


@rule(
    CODE,
    NAME,
    Severity.error,
    "Startup parameter (libpq `options`, asyncpg `server_settings`) that PgBouncer refuses",
)
def unsupported_startup_parameter(topology: Topology, context: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds connection strings with `options=-c name=value` (URLs, libpq keyword strings,
    JDBC URLs), `PGOPTIONS`, a Django DATABASES entry's `OPTIONS: {"options": "-c ..."}`
    and `psycopg(2).connect(options=...)`, whose client goes through a PgBouncer (in any pool mode)
    that would refuse them; and asyncpg `server_settings` (given to asyncpg or through
    SQLAlchemy's `connect_args`), each sent as a startup parameter of its own, that
    PgBouncer neither tracks nor is told to ignore (`{"jit": "off"}`: `FATAL:
    unsupported startup parameter: jit`).

    ## Why is this bad
    PgBouncer answers a startup packet carrying a parameter it does not handle with
    `FATAL: unsupported startup parameter: options` (PgBouncer 1.18, shown in
    tests/test_sql_realbouncer.py). From 1.20 it parses `options` and accepts `-c` of
    the parameters it tracks (client_encoding, datestyle, timezone,
    standard_conforming_strings, application_name, track_extra_parameters). Listing
    `options` in `ignore_startup_parameters` lets the client in but silently drops the
    settings.

    ## Example
    ```ini
    DATABASE_URL=postgresql://app@pgbouncer:6432/app?options=-c%20statement_timeout%3D5s
    ```

    ## Use instead
    ```sql
    ALTER ROLE app SET statement_timeout = '5s';
    ```

    ## Options
    None.

    ## References
    - PgBouncer ignore_startup_parameters:
      https://www.pgbouncer.org/config.html#ignore_startup_parameters
    - PgBouncer 1.20.0 changelog (options parsing), PR #908
    """
    for hazard in topology.sql_hazards:
        if hazard.kind != "startup-parameter" or is_suppressed(hazard, CODE, NAME):
            continue
        if hazard.client_id is not None:
            # the client's pooler, or (its route not resolved: a Secret's URL) the
            # strictest one it may reach, as for the other PA4xx rules (hazard_mode)
            routes = [r for r in [client_route_mode(topology, hazard.client_id)
                                  or hazard_mode(topology, hazard)[0]] if r]
            unmapped = False
        else:  # any PgBouncer it may run behind that would refuse it
            found = (strictest(candidate_modes(p, None, None))
                     for p in unmapped_poolers(topology))
            routes = [r for r in found if r is not None]
            unmapped = True
        for route in routes:
            reason = _rejects(hazard, route)
            if reason is not None:
                yield build_finding(
                    CODE, NAME, Severity.error, hazard, route, unmapped, CONSEQUENCE, reason,
                    topology=topology,
                )
                break
