"""PA110 standby-below-primary: a hot standby configured with fewer of the
shared-memory-sized resources than its primary."""

from __future__ import annotations

from collections.abc import Iterable

from advisor.model import (
    Finding,
    Fix,
    Location,
    RelatedLocation,
    Replacement,
    Server,
    Setting,
    Severity,
    Topology,
)
from advisor.rule_context import RuleContext
from advisor.rules import rule

# xlog.c CheckRequiredParameterValues / xlogrecovery.c RecoveryRequiresIntParameter
# (PostgreSQL 15): the parameters a standby must have at least as high as the primary.
CHECKED = (
    "max_connections",
    "max_worker_processes",
    "max_wal_senders",
    "max_prepared_transactions",
    "max_locks_per_transaction",
)


@rule(
    "PA110",
    "standby-below-primary",
    Severity.error,
    "A standby has a lower max_connections (or worker, WAL sender, prepared-transaction "
    "or lock setting) than its primary: PostgreSQL will not run it",
)
def standby_below_primary(topology: Topology, context: RuleContext) -> Iterable[Finding]:
    """
    ## What it does
    Compares each standby (read replica) with its primary on the five settings that
    size shared memory for recovery: `max_connections`, `max_worker_processes`,
    `max_wal_senders`, `max_prepared_transactions` and `max_locks_per_transaction`
    (a setting not written down counts at the PostgreSQL default of the server's
    version). A standby lower than its primary on any of them is reported.

    ## Why is this bad
    A hot standby replays the primary's WAL with shared-memory structures sized by
    its own settings, so PostgreSQL requires each of these to be at least the
    primary's value. A standby started with less stops at once; PostgreSQL 15 here
    (primary max_connections 30, standby 20) logged:

        FATAL:  recovery aborted because of insufficient parameter settings
        DETAIL:  max_connections = 20 is a lower setting than on the primary server,
        where its value was 30.
        HINT:  You can restart the server after making the necessary configuration changes.

    When the primary raises a value while the standby runs, the standby logs
    `hot standby is not possible because of insufficient parameter settings` and
    pauses recovery, shutting down once recovery is resumed. Read traffic and
    failover capacity are gone either way. It typically happens when read replicas
    get their own configuration (Bitnami `readReplicas.extendedConfiguration`, a
    separate StatefulSet) and the primary's `max_connections` is raised alone.

    ## Example
    ```yaml
    primary:
      extendedConfiguration: |
        max_connections = 500
    readReplicas:
      extendedConfiguration: |
        max_connections = 200
    ```

    ## Use instead
    Raise the standby to at least the primary's value (then restart it), or keep one
    configuration for both:
    ```yaml
    readReplicas:
      extendedConfiguration: |
        max_connections = 500
    ```

    ## Options
    None.

    ## References
    - PostgreSQL 15 documentation, High Availability, "Hot Standby" / "Administrator's
      Overview": these parameters "must be set to the same or higher values on the
      standby server as on the primary server"
      (https://www.postgresql.org/docs/15/hot-standby.html#HOT-STANDBY-ADMIN).
    - PostgreSQL source src/backend/access/transam/xlogrecovery.c,
      RecoveryRequiresIntParameter (messages quoted above), called from
      CheckRequiredParameterValues in xlog.c.
    - Observed with PostgreSQL 15 from Debian (tests/test_deploy_standby.py starts a
      real primary and standby).
    """
    from advisor.facts.pg_defaults import setting_or_default

    for standby in topology.servers:
        if standby.role != "standby" or not standby.primary_id:
            continue
        primary = topology.server(standby.primary_id)
        if primary is None:
            continue
        for name in CHECKED:
            mine = setting_or_default(standby.settings, name, _version(standby, context))
            theirs = setting_or_default(primary.settings, name, _version(primary, context))
            if mine is None or theirs is None:
                continue
            if _number(mine) >= _number(theirs):
                continue
            yield _finding(standby, primary, name, mine, theirs)


def _version(server: Server, context: RuleContext) -> int:
    return context.pg_version or int(server.version.value)


def _number(setting: Setting) -> float:
    try:
        return float(setting.value)
    except (TypeError, ValueError):
        return float("nan")


def _shown(setting: Setting) -> str:
    value = setting.value
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _finding(standby: Server, primary: Server, name: str, mine: Setting, theirs: Setting
             ) -> Finding:
    mine_at = mine.source.location()
    theirs_at = theirs.source.location()
    location = mine_at or standby.location
    related = [RelatedLocation(location=theirs_at or primary.location,
                               message=f"{primary.name}: {name} = {_shown(theirs)} "
                               f"({theirs.source.label()})")]
    if mine_at is None:
        related.append(RelatedLocation(location=standby.location,
                                       message=f"{standby.name} runs with the default"))
    replacement = None
    if mine_at is not None and mine_at.line is not None:
        replacement = Replacement(path=mine_at.path, line=mine_at.line, key=name,
                                  old=_shown(mine), new=_shown(theirs))
    message = (f"standby {standby.name}: {name} = {_shown(mine)} ({mine.source.label()}) is "
               f"lower than on its primary {primary.name}: {_shown(theirs)} "
               f"({theirs.source.label()}); PostgreSQL refuses to run the standby "
               "(\"recovery aborted because of insufficient parameter settings\")")
    return Finding(
        code="PA110", name="standby-below-primary", severity=Severity.error, message=message,
        location=location if isinstance(location, Location) else standby.location,
        related=tuple(related),
        fix=Fix(description=f"set {name} on {standby.name} to at least {_shown(theirs)} "
                "(the primary's value) and restart it", replacement=replacement),
        subject=f"{standby.id}|{name}")
