"""Command-line interface. Thin: parse options, call the engine, pick a reporter.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage or
input errors.

No `from __future__ import annotations` here: typer would then eval every parameter's
annotation string on each run (about 3 ms of `check`'s startup).
"""

import gc
import importlib
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from advisor import __version__

app = typer.Typer(
    name="pool-advisor", no_args_is_help=True, add_completion=False,
    pretty_exceptions_enable=False, rich_markup_mode=None,
    help="Connection-budget linter and config advisor for PostgreSQL deployments.")


class Format(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"
    gitlab = "gitlab"
    rdjson = "rdjson"
    markdown = "markdown"


class Level(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"


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


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for raw in values or [] for v in raw.split(",") if v.strip()]


def one_line(message: str) -> str:
    """A message as one line of plain text: control characters (newlines, escapes) shown
    escaped, so stderr cannot start a workflow command or move the terminal."""
    from advisor.report.safe import escape_control

    return escape_control(" ".join(message.strip().splitlines()))


def fail(message: str) -> None:
    """Usage or input error: message on stderr, exit code 2."""
    print(f"pool-advisor: {one_line(message)}", file=sys.stderr)
    raise typer.Exit(2)


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
    from advisor.engine.check import run_check
    from advisor.engine.evaluate import at_or_above
    from advisor.engine.options import CheckOptions, UsageError
    from advisor.rules import load_rules

    registry = load_rules()
    extra_outputs = _outputs(write or [])
    options = CheckOptions(select=_split(select), ignore=_split(ignore), config=config,
                           pg_version=pg_version, excludes=_split(exclude),
                           values_files=values or [], set_values=set_values or [],
                           release=release, namespace=namespace, root=root,
                           changed_files=changed_files, cache=not no_cache)
    try:
        if cluster:
            result = _cluster_check(options, registry, kubeconfig, context, namespace)
        elif not paths:
            raise UsageError("give files or folders to check (or --cluster)")
        else:
            result = run_check(paths, options, registry)
    except UsageError as exc:
        fail(str(exc))
        return
    change = ""
    failing = result.findings
    if base is not None:
        from advisor.ci.basecheck import BaseError, apply_base, change_text, result_at

        try:
            if cluster:
                raise BaseError("--base compares files of two git revisions, not --cluster")
            base_result, sha = result_at(base, paths, options, registry)
        except (BaseError, UsageError) as exc:
            fail(str(exc))
            return
        result, diff = apply_base(result, base_result)
        change = change_text(diff, base, sha)
        if new_only:
            failing = diff.new
    elif new_only:
        fail("--new-only needs --base REF (the revision to compare with)")
    to_stdout = output is None or str(output) == "-"
    if to_stdout and format is Format.json:  # streamed: a large report is not held whole
        from advisor.report.json import write as write_json

        write_json(result, registry, sys.stdout)
        text = ""
    else:
        text = render(format.value, result, registry, to_terminal=to_stdout, verbose=verbose,
                      show_statistics=show_statistics)
    if to_stdout:
        sys.stdout.write(text)
        if format is Format.text and os.environ.get("GITHUB_ACTIONS") == "true":
            sys.stdout.write(render("github", result, registry, to_terminal=False))
    else:
        _write(output, text)
    for fmt, path in extra_outputs:
        extra = render(fmt, result, registry, to_terminal=False, verbose=verbose)
        if str(path) == "-":
            sys.stdout.write(extra)
        else:
            _write(path, extra)
    if change:
        # Machine-readable output stays parseable: the comparison goes to stderr then.
        on_stdout = format is Format.text and to_stdout
        (sys.stdout if on_stdout else sys.stderr).write(change)
    exit_on_internal_errors(result)
    level = fail_on.value if fail_on else result.fail_on
    if at_or_above(failing, level):
        raise typer.Exit(1)


def exit_on_internal_errors(result) -> None:
    """A run in which something crashed (caught per file or per rule, the report above
    shows the rest) exits 2 with one line naming the file: never 1, the findings code."""
    from advisor.engine.check import internal_errors

    errors = internal_errors(result)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        fail(f"{one_line(errors[0])}{more}; the report is incomplete")


def _outputs(specs: list[str]) -> list[tuple[str, Path]]:
    """`--write FORMAT=PATH` values, checked before the run so a typo costs nothing."""
    out = []
    for spec in specs:
        fmt, sep, path = spec.partition("=")
        if not sep or not path or fmt not in Format.__members__:
            fail(f"--write {spec!r}: expected FORMAT=PATH with FORMAT one of "
                 f"{', '.join(Format.__members__)}")
        out.append((fmt, Path(path)))
    return out


def _write(path: Path, text: str) -> None:
    """Write a report; a path that cannot be written is a usage error (exit 2)."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write the report to {path}: {exc.strerror or exc}")


def _cluster_check(options, registry, kubeconfig: Path | None, context: str | None,
                   namespace: str | None):
    from advisor.engine.options import UsageError
    from advisor.live.cluster import ClusterError, run_cluster_check

    try:
        return run_cluster_check(options, registry, kubeconfig=str(kubeconfig) if kubeconfig
                                 else None, context=context,
                                 namespaces=[namespace] if namespace else None)
    except ClusterError as exc:
        raise UsageError(str(exc)) from None


def render(fmt: str, result, registry, *, to_terminal: bool, verbose: bool = False,
           show_statistics: bool = False) -> str:
    if fmt == "text":
        from advisor.report.text import render as render_text
        from advisor.report.text import use_color

        return render_text(result, registry, color=to_terminal and use_color(),
                           verbose=verbose, show_statistics=show_statistics)
    try:
        module = importlib.import_module(f"advisor.report.{fmt}")
    except ImportError:
        fail(f"output format {fmt!r} is not available in this build")
        raise
    return module.render(result, registry)


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
        fail(f"unknown rule {rule!r} (see `pool-advisor rules`)")
        return
    print(f"# {found.code} {found.name} ({found.severity.value})\n")
    print(f"{found.summary}.\n")
    print(inspect.cleandoc(found.func.__doc__ or ""))


# Commands defined in this module; the rest live in advisor.commands.
BUILTIN_COMMANDS = frozenset({"check", "rules", "explain"})


def invoked_command(argv: list[str]) -> str | None:
    """The subcommand word: the first argument that is not an option (the root has only
    flags, --version and --help, so no option takes a value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main() -> None:
    # typer builds every registered command's parameters on each run; `check` runs on
    # every commit, so the other modules' commands are registered only when needed
    # (their name, --help, or an unknown word that wants the full list).
    if invoked_command(sys.argv[1:]) not in BUILTIN_COMMANDS:
        from advisor.commands import register_all

        register_all(app)
    # A check makes a Python object per YAML value and keeps them to the end: with the
    # default thresholds the cycle collector walks the growing heap over and over (13%
    # of the CPU of a 10k-manifest check). A run is short and makes few cycles, so the
    # collector runs rarely; memory held is the same (bench/scale.py).
    gc.set_threshold(100_000, 50, 100)
    if invoked_command(sys.argv[1:]) == "check":
        # A check is one pass that ends with the process and leaves almost no cyclic
        # garbage (a few hundred objects at exit, the same for the demo and 5,000
        # manifests; 15,000 for a repository of Helm and kustomize renders): even the
        # one collection the thresholds above let through walked the 100,000 objects
        # of a warm 5,000-manifest run (0.04-0.05 s CPU). Freed by reference counts.
        gc.disable()
        hard_exit(run(sys.argv[1:]))
    raise SystemExit(run(sys.argv[1:]))


def hard_exit(code: int) -> None:
    """End a check without the interpreter's teardown (as mypy's fast_exit does): with
    the collector off, freeing every object one by one at exit was 0.03-0.05 s of a
    warm 5,000-manifest check. Nothing is left to clean: the cache is written by then
    (atomic renames), no atexit handler is registered; the streams are flushed here."""
    import contextlib

    for stream in (sys.stdout, sys.stderr):
        # a closed pipe (`| head`): nothing more to say
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def run(argv: list[str]) -> int:
    """The command's exit code. Whatever goes wrong ends in one line on stderr and exit
    2: usage errors click would print with a usage banner, and anything unexpected
    (a traceback is never the output, and never exit 1, which means findings)."""
    try:  # typer 0.2x runs on a vendored click, whose exceptions are its own classes
        from typer import _click as click
    except ImportError:  # older typer: the click package
        import click

    try:
        code = app(args=argv, prog_name="pool-advisor", standalone_mode=False)
    except KeyboardInterrupt:
        return 130
    except click.exceptions.NoArgsIsHelpError as exc:
        exc.show()  # `pool-advisor check` with no argument: its help, as click prints it
        return 2
    except click.ClickException as exc:
        where = f" (see `{exc.ctx.command_path} --help`)" if getattr(exc, "ctx", None) else ""
        print(f"pool-advisor: {one_line(exc.format_message())}{where}", file=sys.stderr)
        return 2
    except typer.Abort:
        print("pool-advisor: aborted", file=sys.stderr)
        return 2
    except Exception as exc:  # the last line of defence: one line, exit 2
        from advisor.guard import crash_text

        print(f"pool-advisor: internal error: {one_line(crash_text(exc))} (please report "
              "this)", file=sys.stderr)
        return 2
    return code if isinstance(code, int) else 0
