"""`inspect`'s report as text (the JSON is the LiveReport itself)."""

from __future__ import annotations

from advisor.live.inspect_records import LiveReport


def render_text(report: LiveReport) -> str:
    lines: list[str] = []
    s = report.server
    if s is not None:
        lines.append(
            f"PostgreSQL {s.version} at {s.target} (as {s.current_user}"
            f"{', superuser' if s.superuser else ''})"
        )
        lines.append(
            f"  slots: {s.slots.arithmetic}; in use {s.slots.client_backends} "
            f"client connections (peak {s.slots.client_backends_peak}"
            f" over {s.samples} sample(s))"
        )
        for name in (
            "max_connections",
            "superuser_reserved_connections",
            "reserved_connections",
            "work_mem",
            "shared_buffers",
            "idle_in_transaction_session_timeout",
        ):
            if name in s.settings:
                lines.append(f"  {name} = {s.settings[name].label()}")
        lines.append("  connections by usename / application_name / state / backend_type:")
        for g in s.groups:
            peak = f" (peak {g.peak})" if g.peak != g.count else ""
            lines.append(
                f"    {g.count:>5}{peak}  {g.usename or '-'} / {g.application_name or '-'} / "
                f"{g.state or '-'} / {g.backend_type or '-'}"
            )
    b = report.pgbouncer
    if b is not None:
        lines.append(f"{b.version or 'PgBouncer'} at {b.target}")
        keys = (
            "pool_mode",
            "default_pool_size",
            "reserve_pool_size",
            "max_client_conn",
            "max_db_connections",
            "max_user_connections",
        )
        lines.append("  " + ", ".join(f"{k}={b.config[k]}" for k in keys if k in b.config))
        lines.append(f"  pools (database/user: cl_active sv_active sv_idle at the last "
                     f"sample; cl_waiting maxwait at their peak over {b.samples} sample(s)):")
        for p in b.pools:
            lines.append(
                f"    {p.database}/{p.user}: {p.cl_active} {p.sv_active} {p.sv_idle}; "
                f"{max(p.cl_waiting, p.cl_waiting_peak)} "
                f"{max(p.maxwait_seconds, p.maxwait_peak_seconds):.2f}s ({p.pool_mode or '-'})"
            )
    if report.signals:
        lines.append("")
        for sig in report.signals:
            lines.append(f"{sig.severity}: {sig.subject}: {sig.message}")
    if report.disagreements:
        lines.append("")
        lines.append("Where the live system disagrees with the repository:")
        for d in report.disagreements:
            lines.append(
                f"  {d.subject}: {d.key} = {d.live_value} live, {d.repo_value} in "
                f"the repository ({d.repo_source})"
            )
    if report.proposals:
        lines.append("")
        lines.append("Proposals:")
        for pr in report.proposals:
            where = f" ({pr.where})" if pr.where else ""
            lines.append(f"  {pr.database}/{pr.user}: {pr.key} {pr.current} -> {pr.proposed}"
                         f"{where}")
            lines.append(f"    why: {pr.reason}")
    lines.extend(f"notice: {n}" for n in report.notices)
    return "\n".join(lines)
