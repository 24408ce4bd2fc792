"""PA504 transaction-pool-without-idle-timeout: a transaction-mode pooler in front of a
server that never ends a transaction left idle."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model import Finding, Fix, Pooler, RelatedLocation, Setting, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule

_GUARDS = ("idle_in_transaction_session_timeout", "transaction_timeout")


def _transaction_modes(pooler: Pooler) -> list[Setting]:
    """The pool_mode settings of `pooler` that say transaction or statement."""
    from advisor.facts.pgbouncer import effective_setting

    found = [effective_setting(pooler.settings, "pool_mode", pooler.version)]
    found += [d.pool_mode for d in pooler.databases if d.pool_mode is not None]
    found += [u.pool_mode for u in pooler.users if u.pool_mode is not None]
    return [s for s in found if str(s.value).strip().lower() in ("transaction", "statement")]


def _enabled(setting: Setting | None) -> bool:
    try:
        return setting is not None and float(setting.value) > 0
    except (TypeError, ValueError):
        return False


def _fix_text(server_name: str, pooler: Pooler) -> str:
    from advisor.rules._common import bouncer_key_place

    text = f"set idle_in_transaction_session_timeout (e.g. 60s) on {server_name}"
    place = bouncer_key_place(pooler, "idle_transaction_timeout")
    return text + (f", or idle_transaction_timeout in {place}" if place else
                   f" ({pooler.name}'s deployment offers no PgBouncer idle_transaction_timeout)")


@rule("PA504", "transaction-pool-without-idle-timeout", Severity.warning,
      "A transaction-mode pooler fronts a server that never ends idle transactions")
def transaction_pool_without_idle_timeout(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    For each PgBouncer running transaction (or statement) pooling, checks that
    something ends a transaction a client leaves open and idle: on the server
    `idle_in_transaction_session_timeout` (or `transaction_timeout` on PostgreSQL 17+),
    or in PgBouncer `idle_transaction_timeout` (or its `transaction_timeout`, 1.25+).
    All default to 0, off.

    ## Why is this bad
    In transaction mode a server connection belongs to one client from BEGIN to
    COMMIT. A client that stalls inside a transaction (a slow HTTP call between two
    queries, a stuck worker, a forgotten `autocommit = False`) holds its server
    connection, and every other client queues for the rest. Measured behind PgBouncer:
    16 of 20 server connections sat idle in transaction while clients stalled, and the
    queue grew until `query_wait_timeout`. Held transactions also hold row locks and
    keep VACUUM from removing dead rows.

    ## Example
    ```ini
    ; pgbouncer.ini
    [pgbouncer]
    pool_mode = transaction
    ```
    with nothing set on the server.

    ## Use instead
    ```ini
    # postgresql.conf
    idle_in_transaction_session_timeout = 60s
    ```
    or `idle_transaction_timeout = 60` in pgbouncer.ini.

    ## Options
    None.

    ## References
    - PostgreSQL docs, runtime-config-client: idle_in_transaction_session_timeout,
      transaction_timeout (17+).
    - PgBouncer docs, configuration: idle_transaction_timeout (default 0),
      transaction_timeout (1.25+).
    """
    from advisor.facts.pgbouncer import effective_setting, has_setting

    for pooler in topo.poolers:
        if pooler.kind != "pgbouncer":
            continue
        modes = _transaction_modes(pooler)
        if not modes:
            continue
        server = topo.server(pooler.server_id) if pooler.server_id else None
        if server is None:
            continue  # its settings are unknown: nothing to say either way
        guards = [server.settings.get(name) for name in _GUARDS
                  if name != "transaction_timeout" or server.version.value >= 17]
        bouncer_guards = [effective_setting(pooler.settings, name, pooler.version)
                          for name in ("idle_transaction_timeout", "transaction_timeout")
                          if has_setting(name, pooler.version)]
        if any(_enabled(g) for g in [*guards, *bouncer_guards]):
            continue
        mode = modes[0]
        names = " or ".join(n for n in _GUARDS
                            if n != "transaction_timeout" or server.version.value >= 17)
        yield Finding(
            code="PA504", name="transaction-pool-without-idle-timeout",
            severity=Severity.warning,
            message=(f"{pooler.name} pools in {mode.value} mode ({mode.source.label()}) in "
                     f"front of {server.name} (PostgreSQL {server.version.int_value}), and "
                     f"neither the server ({names}) nor PgBouncer (idle_transaction_timeout) "
                     "ends a transaction left idle: one stalled client holds a server "
                     "connection, and the others queue behind it"),
            location=mode.source.location() or pooler.location,
            related=tuple(RelatedLocation(location=loc, message=f"pool_mode = {mode.raw}")
                          for loc in [mode.source.location()] if loc is not None),
            fix=Fix(description=_fix_text(server.name, pooler)),
            subject=pooler.id)
