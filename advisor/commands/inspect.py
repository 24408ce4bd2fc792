"""`pool-advisor inspect`: a live server (and PgBouncer) against the connection budget."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


def register(app: typer.Typer) -> None:
    app.command(
        "inspect",
        help=(
            "Read a live PostgreSQL (pg_settings, pg_stat_activity) and optionally PgBouncer's "
            "admin console (SHOW POOLS / STATS / CONFIG / DATABASES) and report usable slots, "
            "connections by user, application, state and backend type, waiting clients and "
            "idle-in-transaction sessions. With --repo, where the live values disagree with "
            "the files. Only the DSNs you give are contacted."
        ),
    )(inspect_command)


def inspect_command(
    dsn: Annotated[
        str | None,
        typer.Argument(help="PostgreSQL DSN or URL (postgresql://user@host:port/db)",
                       show_default=False),
    ] = None,
    pgbouncer: Annotated[
        str | None,
        typer.Option("--pgbouncer", help="PgBouncer admin console DSN "
                     "(postgresql://admin@host:6432/pgbouncer)"),
    ] = None,
    repo: Annotated[
        Path | None,
        typer.Option("--repo", help="the repository to compare the live values with"),
    ] = None,
    server_name: Annotated[
        str | None,
        typer.Option("--server", help="which server of the repository DSN is (default: the "
                     "only one, or the one whose host matches)"),
    ] = None,
    samples: Annotated[
        int, typer.Option("--samples", min=1, max=3600, help="sample activity this many times")
    ] = 1,
    interval: Annotated[
        float, typer.Option("--interval", min=0.05, help="seconds between samples")
    ] = 1.0,
    output_format: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.text,
) -> None:
    from advisor import __version__
    from advisor.live.inspect import inspect
    from advisor.live.inspect_records import LiveError
    from advisor.live.inspect_text import render_text

    if dsn is None and pgbouncer is None:
        typer.echo("error: give a PostgreSQL DSN, --pgbouncer DSN, or both", err=True)
        raise typer.Exit(2)
    if repo is not None and not repo.exists():
        typer.echo(f"error: --repo {repo}: no such file or directory", err=True)
        raise typer.Exit(2)
    try:
        report = inspect(dsn, pgbouncer, tool_version=__version__, samples=samples,
                         interval=interval)
    except LiveError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if repo is not None:
        from advisor.live.repo import compare_with_repo

        compare_with_repo(report, repo, server_name=server_name, live_host=_host_of(dsn))
    if output_format is OutputFormat.json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        typer.echo(render_text(report))
    if any(s.severity == "error" for s in report.signals):
        raise typer.Exit(1)


def _host_of(dsn: str | None) -> str | None:
    if dsn is None:
        return None
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        return conninfo_to_dict(dsn).get("host")
    except Exception:  # a malformed DSN has already failed to connect by now
        return None
