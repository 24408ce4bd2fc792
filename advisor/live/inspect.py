"""Read a live PostgreSQL (and optionally PgBouncer's admin console) and report usage
against the connection budget.

Only the DSNs the user names are contacted. Everything read is kept as plain data
(`LiveReport`) so the text and JSON reporters, and the comparison with the repository,
are pure functions of it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from advisor.live.inspect_judge import propose_pool_sizes, signals_for
from advisor.live.inspect_read import read_pgbouncer, read_server
from advisor.live.inspect_records import LiveReport


def inspect(
    server_dsn: str | None,
    bouncer_dsn: str | None,
    *,
    tool_version: str,
    samples: int = 1,
    interval: float = 1.0,
) -> LiveReport:
    report = LiveReport(
        tool_version=tool_version,
        taken_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    if server_dsn is not None:
        report.server = read_server(server_dsn, samples=samples, interval=interval)
    if bouncer_dsn is not None:
        report.pgbouncer = read_pgbouncer(bouncer_dsn, samples=samples, interval=interval)
    report.signals = signals_for(report.server, report.pgbouncer)
    if report.pgbouncer is not None:
        report.proposals = propose_pool_sizes(report.server, report.pgbouncer)
    return report
