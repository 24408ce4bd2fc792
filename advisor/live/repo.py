"""Where the live server and PgBouncer disagree with what the repository declares.

The repository is read by the same scan `check` runs (advisor.scan.load); the live
values come from pg_settings and SHOW CONFIG. Values are compared in PostgreSQL's base
units (pg_settings.setting is in them, and so is what the conf reader keeps), so
`work_mem = 8MB` in a file and 8192 (kB) live agree.
"""

from __future__ import annotations

from pathlib import Path

from advisor.live.inspect_records import Disagreement, LiveReport, Signal
from advisor.model import Pooler, Server, Topology

# PgBouncer settings worth comparing: the ones the budget and the hazards depend on.
BOUNCER_KEYS = (
    "pool_mode",
    "default_pool_size",
    "min_pool_size",
    "reserve_pool_size",
    "reserve_pool_timeout",
    "max_client_conn",
    "max_db_connections",
    "max_user_connections",
    "max_prepared_statements",
    "server_lifetime",
    "server_idle_timeout",
    "query_wait_timeout",
)


def compare_with_repo(
    report: LiveReport,
    repo: Path,
    *,
    server_name: str | None,
    live_host: str | None,
) -> None:
    from advisor.scan import LoadError, load

    try:
        topo, budgets, _ = load([str(repo)])
    except LoadError as exc:
        report.notices.append(f"--repo {repo}: {exc}")
        return
    server = _pick_server(topo, server_name, live_host, report)
    if server is not None and report.server is not None:
        _compare_server(report, server)
        budget = next((b for b in budgets if b.server_id == server.id), None)
        if budget is not None:
            usable = report.server.slots.usable
            if budget.peak > usable:
                report.signals.append(
                    Signal(
                        severity="error",
                        subject="server",
                        message=(
                            f"the repository's clients may open {budget.peak:g} connections "
                            f"at peak to {server.name}; the live server has {usable} usable "
                            f"({report.server.slots.arithmetic})"
                        ),
                    )
                )
    if report.pgbouncer is not None:
        pooler = _pick_pooler(topo, server)
        if pooler is None:
            report.notices.append(f"--repo {repo}: no PgBouncer in the repository to compare")
        else:
            _compare_pooler(report, pooler)
            _locate_proposals(report, pooler)


def _pick_server(
    topo: Topology, name: str | None, live_host: str | None, report: LiveReport
) -> Server | None:
    servers = [s for s in topo.servers if s.role == "primary"] or topo.servers
    if name is not None:
        found = next((s for s in topo.servers if name in (s.name, s.id)), None)
        if found is None:
            report.notices.append(
                f"--server {name}: no such server in the repository (servers: "
                f"{', '.join(s.name for s in topo.servers) or 'none'})"
            )
        return found
    if len(servers) == 1:
        return servers[0]
    if live_host is not None:
        by_host = [s for s in servers if live_host in s.hosts]
        if len(by_host) == 1:
            return by_host[0]
    if servers:
        report.notices.append(
            "the repository has several servers; pick the one this DSN is with --server "
            f"({', '.join(s.name for s in servers)})"
        )
    else:
        report.notices.append("the repository declares no PostgreSQL server to compare")
    return None


def _pick_pooler(topo: Topology, server: Server | None) -> Pooler | None:
    bouncers = [p for p in topo.poolers if p.kind == "pgbouncer"]  # not RDS Proxy
    if server is not None:
        mine = [p for p in bouncers if p.server_id == server.id]
        if len(mine) == 1:
            return mine[0]
    return bouncers[0] if len(bouncers) == 1 else None


def _same(repo_value: object, live: str) -> bool:
    if isinstance(repo_value, bool):
        return live.lower() in (
            ("on", "true", "1", "yes") if repo_value else ("off", "false", "0", "no")
        )
    if isinstance(repo_value, int | float):
        try:
            return float(live) == float(repo_value)
        except ValueError:
            return False
    return str(repo_value).strip().lower() == live.strip().lower()


def _compare_server(report: LiveReport, server: Server) -> None:
    from advisor.budget.slots import setting_term

    assert report.server is not None
    live = report.server.settings
    names = set(server.settings) | {"max_connections", "superuser_reserved_connections"}
    for name in sorted(names):
        if name not in live:
            continue
        setting = server.settings.get(name)
        if setting is not None:
            repo_value: object = setting.value
            shown, where = setting.raw, setting.source.label()
        else:
            term = setting_term(server, name)
            if term is None:
                continue
            repo_value, shown, where = term.value, f"{term.value:g}", term.source.label()
        if not _same(repo_value, live[name].setting):
            report.disagreements.append(
                Disagreement(
                    subject=f"server {server.name}",
                    key=name,
                    repo_value=shown,
                    repo_source=where,
                    live_value=live[name].shown(),
                )
            )


def _compare_pooler(report: LiveReport, pooler: Pooler) -> None:
    from advisor.facts.pgbouncer import effective_setting

    assert report.pgbouncer is not None
    live = report.pgbouncer.config
    for key in BOUNCER_KEYS:
        if key not in live:
            continue
        setting = effective_setting(pooler.settings, key, pooler.version)
        if setting is None or _same(setting.value, live[key]):
            continue
        report.disagreements.append(
            Disagreement(
                subject=f"pgbouncer {pooler.name}",
                key=key,
                repo_value=setting.raw,
                repo_source=setting.source.label(),
                live_value=live[key],
            )
        )


def _locate_proposals(report: LiveReport, pooler: Pooler) -> None:
    """Which file:line holds each proposed pool size: the [databases] entry's pool_size,
    else default_pool_size (or that it is PgBouncer's default, to add)."""
    for pr in report.proposals:
        entry = next((d for d in reversed(pooler.databases) if d.name == pr.database), None)
        if entry is not None and entry.pool_size is not None:
            pr.key, pr.where = "pool_size", entry.pool_size.source.label()
            continue
        setting = pooler.settings.get("default_pool_size")
        pr.key = "default_pool_size"
        pr.where = (setting.source.label() if setting is not None
                    else f"not set in {pooler.name}'s pgbouncer.ini: add it")
