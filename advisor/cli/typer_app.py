"""The typer application: `check`, `rules` and `explain` (the other commands register
from advisor.commands), for whatever command line advisor.cli.quick does not parse.

No `from __future__ import annotations` here: typer would then eval every parameter's
annotation string on each run (about 3 ms of `check`'s startup).
"""

import sys
from pathlib import Path
from typing import Annotated

import typer

from advisor import __version__
from advisor.cli.formats import Format, Level

app = typer.Typer(
    name="pool-advisor", no_args_is_help=True, add_completion=False,
    pretty_exceptions_enable=False, rich_markup_mode=None,
    help="Connection-budget linter and config advisor for PostgreSQL deployments.")


def _version(value: bool) -> None:
    if value:
        print(f"pool-advisor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Connection-budget linter and config advisor for PostgreSQL deployments."""


@app.command()
def check(
    paths: Annotated[list[str] | None, typer.Argument(
        help="Files or folders; '-' reads a YAML stream from stdin.")] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = (
        Format.text),
    fail_on: Annotated[Level | None, typer.Option(
        "--fail-on", help="Exit 1 when findings at or above this severity exist "
        "(default: the configuration's fail-on, else warning).")] = None,
    select: Annotated[list[str] | None, typer.Option(
        "--select", help="Only these rules (code, name or code prefix).")] = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore", help="Skip these rules.")
                      ] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="Configuration file (default: nearest .pool-advisor.toml or "
        "pyproject.toml with [tool.pool-advisor]).")] = None,
    pg_version: Annotated[int | None, typer.Option(
        "--pg-version", help="PostgreSQL major version for every server (overrides what "
        "the repository says; 9 is 9.6).")] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", help="gitignore-style globs to skip, relative to the repository root.")
                      ] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the report to this file instead of stdout.")] = None,
    values: Annotated[list[str] | None, typer.Option(
        "--values", help="Helm values file (repeatable), read from the working directory "
        "as helm -f reads it; with several charts, the chart whose folder holds it.")
                      ] = None,
    set_values: Annotated[list[str] | None, typer.Option(
        "--set", help="Helm --set value for the one chart among the paths (repeatable).")
                          ] = None,
    release: Annotated[str | None, typer.Option("--release",
                                                help="Helm release name.")] = None,
    namespace: Annotated[str | None, typer.Option(
        "--namespace", help="Namespace for rendered objects; with --cluster, the only "
        "namespace read.")] = None,
    cluster: Annotated[bool, typer.Option(
        "--cluster", help="Read the topology from the live Kubernetes cluster of your "
        "kubeconfig instead of files (list calls only; Secrets are never read).")] = False,
    kubeconfig: Annotated[Path | None, typer.Option(
        "--kubeconfig", help="kubeconfig for --cluster (default: $KUBECONFIG or "
        "~/.kube/config).")] = None,
    context: Annotated[str | None, typer.Option(
        "--context", help="kubeconfig context for --cluster (default: current).")] = None,
    base: Annotated[str | None, typer.Option(
        "--base", help="Git revision to compare with (e.g. origin/main): prints each "
        "server's usable and peak before -> after.")] = None,
    new_only: Annotated[bool, typer.Option(
        "--new-only", help="With --base: fail only on findings the change introduced or "
        "made worse (matched by fingerprint, not line); every finding is still reported.")
                        ] = False,
    root: Annotated[Path | None, typer.Option(
        "--root", help="The repository: nothing outside it is read and every path is "
        "shown relative to it (default: the git top-level holding the paths, else their "
        "common folder).")] = None,
    changed_files: Annotated[bool, typer.Option(
        "--changed-files", help="PATHs are changed files (what pre-commit passes): check "
        "the whole repository holding them, and count the findings in them.")] = False,
    verbose: Annotated[bool, typer.Option(
        "--show-arithmetic", "-v", help="Text: each finding's full derivation, the lines "
        "of its numbers and its fix.")] = False,
    show_statistics: Annotated[bool, typer.Option(
        "--statistics", help="Text: counts per rule instead of one line per finding.")
                               ] = False,
    write: Annotated[list[str] | None, typer.Option(
        "--write", help="Also write FORMAT to PATH from the same run, e.g. "
        "--write sarif=results.sarif (repeatable; PATH '-' is stdout).")] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", envvar="POOL_ADVISOR_NO_CACHE",
        help="Parse every file again and write no cache. By default what each file "
        "parses to is kept in .pool-advisor-cache/ at the repository root (with its own "
        ".gitignore; the only thing check writes there).")] = False,
) -> None:
    """Lint: compute every server's connection budget and report what does not fit."""
    from advisor.cli.check import CheckArgs, check_command

    args = CheckArgs(paths=paths, format=format, fail_on=fail_on, select=select, ignore=ignore,
                     config=config, pg_version=pg_version, exclude=exclude, output=output,
                     values=values, set_values=set_values, release=release,
                     namespace=namespace, cluster=cluster, kubeconfig=kubeconfig,
                     context=context, base=base, new_only=new_only, root=root,
                     changed_files=changed_files, verbose=verbose,
                     show_statistics=show_statistics, write=write, no_cache=no_cache)
    code = check_command(args)
    if code:
        raise typer.Exit(code)


@app.command("rules")
def list_rules() -> None:
    """List every rule: code, name, default severity, summary."""
    from advisor.rules import load_rules

    ordered = load_rules().ordered()
    name_width = max((len(r.name) for r in ordered), default=0)
    for r in ordered:
        print(f"{r.code}  {r.name:<{name_width}}  {r.severity.value:<7}  {r.summary}")


@app.command()
def explain(rule: Annotated[str, typer.Argument(help="Rule code or name.")]) -> None:
    """Print a rule's documentation."""
    import inspect

    from advisor.rules import load_rules

    found = load_rules().resolve(rule)
    if found is None:
        from advisor.cli.check import one_line

        print(f"pool-advisor: {one_line(f'unknown rule {rule!r} (see `pool-advisor rules`)')}",
              file=sys.stderr)
        raise typer.Exit(2)
    print(f"# {found.code} {found.name} ({found.severity.value})\n")
    print(f"{found.summary}.\n")
    print(inspect.cleandoc(found.func.__doc__ or ""))
