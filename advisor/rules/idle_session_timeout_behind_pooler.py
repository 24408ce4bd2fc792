"""PA503 idle-session-timeout-behind-pooler: PostgreSQL closes the idle server
connections a pooler keeps for reuse."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import Finding, Fix, Replacement, Severity, Term, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import pg_seconds, related


@rule("PA503", "idle-session-timeout-behind-pooler", Severity.warning,
      "idle_session_timeout is set on a server that a pooler keeps idle connections to")
def idle_session_timeout_behind_pooler(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds servers with `idle_session_timeout` set (not 0) that a PgBouncer or RDS Proxy
    in the repository connects to, and compares the timeout with how long the pooler
    keeps an idle server connection (`server_idle_timeout`, default 600 s).

    ## Why is this bad
    A pooler keeps server connections open while they are idle, to hand them to the
    next transaction. `idle_session_timeout` closes any session idle for that long, so
    the pooler's idle connections are closed underneath it: the next client to get one
    fails (PgBouncer logs `server conn crashed?`, the client may see `server closed
    the connection unexpectedly`) and the pool pays a new connection each time. The
    PostgreSQL documentation warns about exactly this: "Be wary of enforcing this
    timeout on connections made through connection-pooling software or other
    middleware, as such a layer may not react well to unexpected connection closure."

    ## Example
    ```ini
    # postgresql.conf
    idle_session_timeout = 60s
    ```

    ## Use instead
    ```ini
    # postgresql.conf: leave idle_session_timeout at 0 on a server behind a pooler;
    # set it per role for the roles that connect directly
    idle_session_timeout = 0
    ```
    Let PgBouncer retire idle server connections itself (`server_idle_timeout`,
    `server_lifetime`); `ALTER ROLE psql_user SET idle_session_timeout = '10min'` keeps
    it for people.

    ## Options
    None.

    ## References
    - PostgreSQL docs, runtime-config-client: idle_session_timeout (since 14).
    - PgBouncer docs, configuration: server_idle_timeout (default 600), server_lifetime.
    """
    from advisor.facts.pgbouncer import effective_setting

    for pooler in topo.poolers:
        server = topo.server(pooler.server_id) if pooler.server_id else None
        if server is None or server.version.value < 14:
            continue
        setting = server.settings.get("idle_session_timeout")
        if setting is None or pg_seconds(setting) <= 0:
            continue
        timeout = Term(label="idle_session_timeout", value=pg_seconds(setting),
                       source=setting.source)
        terms = [timeout]
        pooler_side = ""
        if pooler.kind == "pgbouncer":
            idle = effective_setting(pooler.settings, "server_idle_timeout", pooler.version)
            idle_term = Term(label="server_idle_timeout", value=float(idle.value),
                             source=idle.source)
            terms.append(idle_term)
            pooler_side = (f"; {pooler.name} keeps idle server connections up to "
                           f"{idle_term.show()} s")
        loc = setting.source.location() or server.location
        replacement = None
        if loc.line is not None:
            replacement = Replacement(path=loc.path, line=loc.line, key="idle_session_timeout",
                                      old=setting.raw, new="0")
        yield Finding(
            code="PA503", name="idle-session-timeout-behind-pooler", severity=Severity.warning,
            message=(f"{server.name}: idle_session_timeout {num(timeout.value)} s "
                     f"({timeout.source.label()}) closes the idle server connections "
                     f"{pooler.name} keeps for reuse{pooler_side}; the next transaction "
                     "handed one fails or reconnects"),
            location=loc, related=related(terms),
            fix=Fix(description="set idle_session_timeout = 0 on the server and let the pooler "
                    "retire idle connections (server_idle_timeout); set it per role "
                    "(ALTER ROLE ... SET) for roles that connect directly",
                    replacement=replacement),
            subject=f"{server.id}|{pooler.id}")
