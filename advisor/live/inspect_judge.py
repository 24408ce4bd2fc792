"""Judging what `inspect` read: the signals worth acting on (slots in use, idle
transactions, clients queueing in PgBouncer) and the pool sizes to change."""

from __future__ import annotations

from advisor.live.inspect_records import BouncerLive, PoolProposal, ServerLive, Signal

IDLE_IN_TRANSACTION_WARN_SECONDS = 60.0


def signals_for(server: ServerLive | None, bouncer: BouncerLive | None) -> list[Signal]:
    out: list[Signal] = []
    if server is not None:
        out += _server_signals(server)
    if bouncer is not None:
        out += _bouncer_signals(bouncer, server)
    return out


def _server_signals(server: ServerLive) -> list[Signal]:
    out: list[Signal] = []
    s = server.slots
    used = max(s.client_backends, s.client_backends_peak)
    share = used / s.usable if s.usable > 0 else 1.0
    peak_note = (
        ""
        if s.client_backends_peak == s.client_backends
        else (f" (peak {s.client_backends_peak} over {server.samples} samples)")
    )
    text = f"{s.client_backends} client connections{peak_note} of {s.arithmetic} ({share:.0%})"
    if used >= s.usable:
        out.append(
            Signal(
                severity="error",
                subject="server",
                message=f"{text}: new non-superuser connections are refused",
            )
        )
    elif share >= 0.8:
        out.append(
            Signal(
                severity="warning",
                subject="server",
                message=f"{text}: little headroom for deploys, psql and migrations",
            )
        )
    else:
        out.append(Signal(severity="info", subject="server", message=text))
    if s.walsenders or s.other_backends:
        others = ", ".join(f"{v} {k}" for k, v in s.other_backends.items())
        out.append(
            Signal(
                severity="info",
                subject="server",
                message=(
                    f"not counted against client slots: {s.walsenders} walsender(s)"
                    + (f", {others}" if others else "")
                    + " (WAL senders have their own slots since PostgreSQL 12; autovacuum and "
                    "background workers never take client slots)"
                ),
            )
        )
    long_idle = [
        i for i in server.idle_in_transaction if i.seconds >= IDLE_IN_TRANSACTION_WARN_SECONDS
    ]
    timeout = server.settings.get("idle_in_transaction_session_timeout")
    timeout_off = timeout is not None and timeout.setting == "0"
    if server.idle_in_transaction:
        longest = max(server.idle_in_transaction, key=lambda i: i.seconds)
        who = ", ".join(
            sorted({f"{i.usename}/{i.application_name or '-'}" for i in server.idle_in_transaction})
        )
        message = (
            f"{len(server.idle_in_transaction)} session(s) idle in transaction ({who}); "
            f"longest {longest.seconds:.0f} s (pid {longest.pid}): each holds a slot, locks "
            "and a snapshot"
        )
        if timeout_off:
            message += "; idle_in_transaction_session_timeout is 0 (off)"
        out.append(
            Signal(
                # a session caught between two statements is idle in transaction for a
                # moment: only one past the threshold is worth a warning
                severity="warning" if long_idle else "info",
                subject="server",
                message=message,
            )
        )
    if not server.can_see_all:
        out.append(
            Signal(
                severity="info",
                subject="server",
                message=(
                    f"{server.current_user} is neither superuser nor in pg_read_all_stats: other "
                    "roles' sessions show no state or application_name"
                ),
            )
        )
    return out


def _bouncer_signals(bouncer: BouncerLive, server: ServerLive | None) -> list[Signal]:
    out: list[Signal] = []
    for p in bouncer.pools:
        subject = f"pgbouncer {p.database}/{p.user}"
        waiting = max(p.cl_waiting, p.cl_waiting_peak)
        wait = max(p.maxwait_seconds, p.maxwait_peak_seconds)
        if waiting or wait > 0:
            size = _pool_size(bouncer, p.database)
            out.append(
                Signal(
                    severity="warning",
                    subject=subject,
                    message=(
                        f"{waiting} client(s) waiting for a server connection (cl_waiting), "
                        f"oldest waiting {wait:.2f} s (maxwait) with {p.sv_active} active server "
                        f"connections of pool_size {size}: the pool is too small for this load, "
                        "or the server is slow to answer"
                    ),
                )
            )
    total = sum(p.server_connections for p in bouncer.pools)
    if server is not None and bouncer.pools:
        out.append(
            Signal(
                severity="info",
                subject="pgbouncer",
                message=(
                    f"{total} server connections open from this PgBouncer across "
                    f"{len(bouncer.pools)} pool(s); the server has "
                    f"{server.slots.usable} usable slots"
                ),
            )
        )
    return out


def _pool_size(bouncer: BouncerLive, database: str) -> str:
    db = next((d for d in bouncer.databases if d.name == database), None)
    if db is not None and db.pool_size is not None:
        return str(db.pool_size)
    return bouncer.config.get("default_pool_size", "?")


def propose_pool_sizes(server: ServerLive | None, bouncer: BouncerLive) -> list[PoolProposal]:
    """A pool whose clients queued (cl_waiting, maxwait) while every server connection
    was busy grows by the clients that waited, within the slots the server has free
    (usable - client connections at their peak). Queueing is the signal: a pool that
    never made anyone wait is not grown, whatever its size."""
    out: list[PoolProposal] = []
    for p in bouncer.pools:
        waiting = max(p.cl_waiting, p.cl_waiting_peak)
        wait = max(p.maxwait_seconds, p.maxwait_peak_seconds)
        size_text = _pool_size(bouncer, p.database)
        if not waiting or not size_text.isdigit() or p.sv_active < int(size_text):
            continue
        current = int(size_text)
        want = current + waiting
        reason = (f"{waiting} client(s) waited (cl_waiting, peak over {bouncer.samples} "
                  f"sample(s)), the oldest {wait:.2f} s (maxwait), with all {current} server "
                  f"connections active: {current} + {waiting} = {want}")
        proposed = want
        if server is not None:
            free = server.slots.usable - server.slots.client_backends_peak
            room = current + max(free, 0)
            if room < want:
                proposed = room
                reason += (f", capped at {room}: the server has {max(free, 0)} free of "
                           f"{server.slots.usable} usable slots ({server.slots.arithmetic})")
        if proposed <= current:
            continue
        reason += ("; measure the server's knee with `pool-advisor sweep` before growing "
                   "further: past it, more connections make every query slower")
        out.append(PoolProposal(database=p.database, user=p.user, current=current,
                                proposed=proposed, reason=reason))
    return out
