"""PA502 pool-lifetime-exceeds-idle-close: something closes idle connections before the
application's pool retires them."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import Client, Finding, Fix, Severity, Source, Term, Topology
from advisor.options import OPTIONS_CONFIG, at_least, options_class
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import pg_seconds, related, secs


@options_class
class IdleCloseOptions:
    __pydantic_config__ = OPTIONS_CONFIG

    # Idle timeout, in seconds, of a load balancer or NAT between the applications and
    # their database or PgBouncer (AWS NLB: 350; Azure LB: 240 by default), if any.
    load_balancer_idle_timeout: float | None = None

    def __post_init__(self) -> None:
        at_least(self, "load_balancer_idle_timeout", 1)



def _closers(client: Client, topo: Topology, options: IdleCloseOptions) -> list[Term]:
    """What closes this client's idle connections underneath its pool, in seconds."""
    out: list[Term] = []
    if options.load_balancer_idle_timeout:
        out.append(Term(label="load balancer idle timeout",
                        value=float(options.load_balancer_idle_timeout),
                        source=Source(default="option PA502 load_balancer_idle_timeout")))
    if client.target_kind == "server" and client.target_id:
        server = topo.server(client.target_id)
        setting = server.settings.get("idle_session_timeout") if server else None
        if server is not None and setting is not None and server.version.value >= 14:
            seconds = pg_seconds(setting)
            if seconds > 0:
                out.append(Term(label=f"idle_session_timeout on {server.name}", value=seconds,
                                source=setting.source))
    elif client.target_kind == "pooler" and client.target_id:
        pooler = topo.pooler(client.target_id)
        if pooler is not None and pooler.kind == "pgbouncer":
            from advisor.facts.pgbouncer import effective_setting

            setting = effective_setting(pooler.settings, "client_idle_timeout", pooler.version)
            if float(setting.value or 0) > 0:
                out.append(Term(label=f"client_idle_timeout of {pooler.name}",
                                value=float(setting.value), source=setting.source))
    return out


@rule("PA502", "pool-lifetime-exceeds-idle-close", Severity.warning,
      "Idle connections are closed underneath the application's pool before it retires "
      "them", options=IdleCloseOptions)
def pool_lifetime_exceeds_idle_close(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Compares the age at which an application pool retires a connection (HikariCP
    `maxLifetime`, default 30 min; 0 means never) with whatever closes idle
    connections underneath it: PostgreSQL's `idle_session_timeout` for a client that
    connects directly, PgBouncer's `client_idle_timeout` for one behind PgBouncer,
    and a load balancer's idle timeout when you declare one.

    ## Why is this bad
    A pool keeps connections open while idle (HikariCP keeps `minimumIdle`, by default
    all of `maximumPoolSize`). When the server, PgBouncer or a load balancer closes an
    idle connection first, the pool does not know: the next request that borrows it
    fails with `An I/O error occurred while sending to the backend` or `This
    connection has been closed`. HikariCP's own advice: maxLifetime "should be several
    seconds shorter than any database or infrastructure imposed connection time
    limit".

    ## Example
    ```yaml
    # postgresql.conf: idle_session_timeout = 10min
    # application.yaml: HikariCP maxLifetime not set (30 min)
    ```

    ## Use instead
    ```yaml
    spring.datasource.hikari.max-lifetime: 570000   # 9.5 min, below the 10 min close
    ```
    or leave idle sessions to the pool (idle_session_timeout = 0).

    ## Options
    - `load_balancer_idle_timeout` (seconds, unset): the idle timeout of a load
      balancer or NAT gateway on the path (AWS NLB 350 s, Azure Load Balancer 4 min).

    ## References
    - HikariCP README: maxLifetime (default 1800000 ms).
    - PostgreSQL docs: idle_session_timeout (14+). PgBouncer docs: client_idle_timeout.
    """
    options = ctx.options_for("PA502", IdleCloseOptions)
    for client in topo.clients:
        closers = _closers(client, topo, options)
        if not closers:
            continue
        closer = min(closers, key=lambda t: t.value)
        for pool in client.pools:
            life = pool.timeouts.get("lifetime")
            if life is None or 0 < life.value < closer.value:
                continue
            ages = "never (0)" if life.value == 0 else f"at {secs(life)}"
            target_ms = max(1, int(closer.value) - 30) * 1000
            yield Finding(
                code="PA502", name="pool-lifetime-exceeds-idle-close",
                severity=Severity.warning,
                message=(f"{client.name}: {pool.label} retires a connection {ages}, but "
                         f"{secs(closer)} closes idle connections first: the next "
                         "borrower of a connection closed underneath the pool gets an "
                         "I/O error"),
                location=life.source.location() or client.location,
                related=related([life, closer]),
                fix=Fix(description=(f"set the pool's maximum lifetime below "
                                     f"{num(closer.value)} s (e.g. HikariCP maxLifetime "
                                     f"{target_ms}), or stop closing idle connections "
                                     "underneath it")),
                subject=f"{client.id}|{pool.label}")
