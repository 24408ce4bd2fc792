"""PA109 postgresql-conf-invalid."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.slots import slot_refusal
from advisor.model import Budget, Finding, Fix, Severity, StartRefusal, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import primary, related


@rule("PA109", "postgresql-conf-invalid", Severity.error,
      "PostgreSQL would refuse to start with this configuration")
def postgresql_conf_invalid(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports what PostgreSQL itself rejects in postgresql.conf (and included files,
    postgresql.auto.conf, `-c` arguments): unknown units, bad numbers, values out of
    range, unknown parameters, syntax errors, missing includes. The message is the one
    PostgreSQL prints. Also the slot settings the postmaster cross-checks before it
    starts: `superuser_reserved_connections` (plus `reserved_connections` from 16, plus
    `max_wal_senders` in 11) must be less than `max_connections`; before 11 each of
    `superuser_reserved_connections` and `max_wal_senders` must be. A server with any of
    these errors (the fatal ones: not the warnings) has no budget: its verdict is "will
    not start", not fits or OVER.

    ## Why is this bad
    The server does not start: `FATAL: configuration file ".../postgresql.conf"
    contains errors`. Memory units are case-sensitive: `work_mem = 4mb` is an error.

    ## Example
    ```ini
    work_mem = 4mb
    ```

    ## Use instead
    ```ini
    work_mem = 4MB
    ```

    ## Options
    None.

    ## References
    - PostgreSQL 15 docs, 20.1 Setting Parameters (units: B, kB, MB, GB, TB; us, ms,
      s, min, h, d).
    - src/backend/postmaster/postmaster.c (PostmasterMain: "Check for invalid
      combinations of GUC settings"); advisor/facts/pg_startup.py per major.
    """
    for p in topo.problems:
        if p.program == "PostgreSQL":
            yield Finding(code="PA109", name="postgresql-conf-invalid",
                          severity=Severity.error if p.fatal else Severity.warning,
                          message=p.message, location=p.location,
                          subject=f"{p.location.path}|{p.message}")
    for budget in ctx.budgets:
        refused = budget.refused
        if refused is not None and refused.location is not None:
            # an error of the configuration, reported above at its line; the slot
            # settings refuse next, once it is fixed
            server = topo.server(budget.server_id)
            refused = slot_refusal(server) if server is not None else None
        if refused is not None:
            yield _refused(budget, refused)


def _refused(budget: Budget, refused: StartRefusal) -> Finding:
    """The server's start-up refusal, at the first of the compared settings a file sets."""
    return Finding(code="PA109", name="postgresql-conf-invalid", severity=Severity.error,
                   message=f"{budget.server}: PostgreSQL {budget.version.int_value} will not "
                           f"start: {refused.message}",
                   detail="\n".join(t.show() for t in refused.terms),
                   fix=Fix(description="raise max_connections above the slots the other settings "
                                       "named take, or lower those (check memory: PA301)"),
                   location=primary(refused.terms, budget.location),
                   related=related(refused.terms), subject=f"{budget.server_id}|start")
