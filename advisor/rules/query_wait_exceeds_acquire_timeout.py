"""PA501 query-wait-exceeds-acquire-timeout: PgBouncer keeps a client waiting longer than
the application is prepared to wait for a connection."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import Finding, Fix, Pooler, Replacement, Severity, Term, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import bouncer_key_place, related, secs


def _fix_text(pooler: Pooler, client_name: str, target: int, acquire: Term) -> str:
    place = bouncer_key_place(pooler, "query_wait_timeout")
    below = f"below {client_name}'s {num(acquire.value)} s"
    if place is None:
        return (f"{pooler.name}'s deployment offers no query_wait_timeout setting: run a "
                f"PgBouncer whose query_wait_timeout you set ({target}, {below})")
    return f"set query_wait_timeout = {target} in {place} ({below})"


@rule("PA501", "query-wait-exceeds-acquire-timeout", Severity.warning,
      "PgBouncer's query_wait_timeout is longer than the application's connection-acquire "
      "timeout")
def query_wait_exceeds_acquire_timeout(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    For each client that connects through a PgBouncer, compares the longest time its
    pool lets a caller wait for a connection (HikariCP `connectionTimeout`, default
    30 s) with PgBouncer's `query_wait_timeout` (default 120 s; 0 waits forever).

    ## Why is this bad
    Behind PgBouncer the wait for a server connection moves out of the application's
    pool and into PgBouncer's queue: the application's pool hands out a client
    connection at once, and the query then waits in PgBouncer until a server
    connection frees up, for as long as `query_wait_timeout`. The application's own
    timeout never fires; when the server pool is exhausted, requests hang four times
    longer than the application was written to expect (120 s against 30 s), threads
    and sockets pile up, and the error users finally see is PgBouncer's
    `query_wait_timeout`, not the one the application handles.

    ## Example
    ```ini
    [pgbouncer]
    pool_mode = transaction
    ; query_wait_timeout not set: 120 s, while HikariCP gives up after 30 s
    ```

    ## Use instead
    ```ini
    [pgbouncer]
    pool_mode = transaction
    query_wait_timeout = 25
    ```
    Below the shortest acquire timeout of the clients behind it, so PgBouncer fails
    a query before the application has given up on it.

    ## Options
    None.

    ## References
    - PgBouncer docs, configuration: query_wait_timeout ("Maximum time queries are
      allowed to spend waiting for execution", default 120 s, 0 disables).
    - HikariCP README: connectionTimeout (default 30000 ms).
    """
    from advisor.facts.pgbouncer import effective_setting

    for client in topo.clients:
        if client.target_kind != "pooler" or client.target_id is None:
            continue
        pooler = topo.pooler(client.target_id)
        if pooler is None or pooler.kind != "pgbouncer":
            continue
        acquires = [p.timeouts["acquire"] for p in client.pools
                    if "acquire" in p.timeouts and p.timeouts["acquire"].value > 0]
        if not acquires:
            continue
        acquire = min(acquires, key=lambda t: t.value)
        setting = effective_setting(pooler.settings, "query_wait_timeout", pooler.version)
        wait = Term(label="query_wait_timeout", value=float(setting.value), source=setting.source)
        if 0 < wait.value <= acquire.value:
            continue
        waits = "forever (0)" if wait.value == 0 else f"up to {secs(wait)}"
        target = max(1, int(acquire.value) - 5)
        loc = setting.source.location()
        replacement = None
        if loc is not None and loc.line is not None:
            replacement = Replacement(path=loc.path, line=loc.line, key="query_wait_timeout",
                                      old=setting.raw, new=str(target))
        yield Finding(
            code="PA501", name="query-wait-exceeds-acquire-timeout", severity=Severity.warning,
            message=(f"{client.name} waits at most {secs(acquire)} for a connection, but "
                     f"through {pooler.name} the wait happens in PgBouncer's queue, which "
                     f"holds a query {waits}: when the server pool is exhausted, requests "
                     f"hang past the application's timeout"
                     + (f" ({wait.value / acquire.value:.0f}x)" if wait.value else "")),
            location=loc or pooler.location, related=related([acquire, wait]),
            fix=Fix(description=_fix_text(pooler, client.name, target, acquire),
                    replacement=replacement),
            subject=f"{pooler.id}|{client.id}")
