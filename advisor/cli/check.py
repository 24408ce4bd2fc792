"""`pool-advisor check`: the command's work, from its parsed options to its exit code.

Without typer: a check runs on every commit (pre-commit), and a plain command line is
parsed by advisor.cli.quick instead (importing typer and click and building the command
was a third of the start-up of a check); the typer command (advisor.cli.typer_app)
parses everything else and calls the same `check_command`.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from msgspec import Struct

from advisor.cli.formats import Format, Level


class CheckArgs(Struct, kw_only=True):
    """The check's options as the command line gave them (typer_app.check documents
    each)."""

    paths: list[str] | None = None
    format: Format = Format.text
    fail_on: Level | None = None
    select: list[str] | None = None
    ignore: list[str] | None = None
    config: Path | None = None
    pg_version: int | None = None
    exclude: list[str] | None = None
    output: Path | None = None
    values: list[str] | None = None
    set_values: list[str] | None = None
    release: str | None = None
    namespace: str | None = None
    cluster: bool = False
    kubeconfig: Path | None = None
    context: str | None = None
    base: str | None = None
    new_only: bool = False
    root: Path | None = None
    changed_files: bool = False
    verbose: bool = False
    show_statistics: bool = False
    write: list[str] | None = None
    no_cache: bool = False


class CommandExit(Exception):
    """Ends the command with `code` (its message, if any, is printed already)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def one_line(message: str) -> str:
    """A message as one line of plain text: control characters (newlines, escapes) shown
    escaped, so stderr cannot start a workflow command or move the terminal."""
    from advisor.report.safe import escape_control

    return escape_control(" ".join(message.strip().splitlines()))


def fail(message: str) -> None:
    """Usage or input error: message on stderr, exit code 2."""
    print(f"pool-advisor: {one_line(message)}", file=sys.stderr)
    raise CommandExit(2)


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for raw in values or [] for v in raw.split(",") if v.strip()]


def check_command(args: CheckArgs) -> int:
    """Lint: compute every server's connection budget and report what does not fit;
    the exit code (0 nothing at or above --fail-on, 1 findings, 2 usage or input error)."""
    try:
        _check(args)
    except CommandExit as exc:
        return exc.code
    return 0


def _check(args: CheckArgs) -> None:
    from advisor.engine.check import run_check
    from advisor.engine.evaluate import at_or_above
    from advisor.engine.options import CheckOptions, UsageError
    from advisor.rules import load_rules

    registry = load_rules()
    extra_outputs = _outputs(args.write or [])
    options = CheckOptions(select=_split(args.select), ignore=_split(args.ignore),
                           config=args.config, pg_version=args.pg_version,
                           excludes=_split(args.exclude), values_files=args.values or [],
                           set_values=args.set_values or [], release=args.release,
                           namespace=args.namespace, root=args.root,
                           changed_files=args.changed_files, cache=not args.no_cache)
    paths = args.paths
    try:
        if args.cluster:
            result = _cluster_check(options, registry, args.kubeconfig, args.context,
                                    args.namespace)
        elif not paths:
            raise UsageError("give files or folders to check (or --cluster)")
        else:
            result = run_check(paths, options, registry)
    except UsageError as exc:
        fail(str(exc))
        return
    change = ""
    base_report = None
    failing = result.findings
    if args.base is not None:
        from msgspec.structs import replace

        from advisor.ci.basecheck import (
            BaseError,
            apply_base,
            change_text,
            result_at,
            unread_notices,
        )
        from advisor.report.compare import BaseReport

        try:
            if args.cluster:
                raise BaseError("--base compares files of two git revisions, not --cluster")
            base_result, sha, unread = result_at(args.base, paths, options, registry)
        except (BaseError, UsageError) as exc:
            fail(str(exc))
            return
        result, diff = apply_base(result, base_result)
        change = change_text(diff, args.base, sha, unread)
        # every format says what the base did not read (notices), and the JSON and
        # markdown carry the comparison itself, not only stderr's text
        base_report = BaseReport(ref=args.base, commit=sha, not_read=unread, diff=diff)
        result = replace(result, notices=[*result.notices,
                                          *unread_notices(args.base, sha, unread)])
        if args.new_only:
            failing = diff.new
    elif args.new_only:
        fail("--new-only needs --base REF (the revision to compare with)")
    from advisor.report.safe import printable_result

    result = printable_result(result)  # a non-UTF-8 file name, escaped alike in every format
    output = args.output
    to_stdout = output is None or str(output) == "-"
    if to_stdout and args.format is Format.json:  # streamed: a large report is not held whole
        from advisor.report.json import write as write_json

        write_json(result, registry, sys.stdout, base_report)
        text = ""
    else:
        text = render(args.format.value, result, registry, to_terminal=to_stdout,
                      verbose=args.verbose, show_statistics=args.show_statistics,
                      base=base_report)
    if to_stdout:
        sys.stdout.write(text)
        if args.format is Format.text and os.environ.get("GITHUB_ACTIONS") == "true":
            sys.stdout.write(render("github", result, registry, to_terminal=False))
    else:
        assert output is not None
        _write(output, text)
    for fmt, path in extra_outputs:
        extra = render(fmt, result, registry, to_terminal=False, verbose=args.verbose,
                       base=base_report)
        if str(path) == "-":
            sys.stdout.write(extra)
        else:
            _write(path, extra)
    if change:
        # Machine-readable output stays parseable: the comparison goes to stderr then.
        on_stdout = args.format is Format.text and to_stdout
        (sys.stdout if on_stdout else sys.stderr).write(change)
    exit_on_internal_errors(result)
    level = args.fail_on.value if args.fail_on else result.fail_on
    if at_or_above(failing, level):
        raise CommandExit(1)


def exit_on_internal_errors(result: Any) -> None:
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


def _cluster_check(options: Any, registry: Any, kubeconfig: Path | None, context: str | None,
                   namespace: str | None) -> Any:
    from advisor.engine.options import UsageError
    from advisor.live.cluster import ClusterError, run_cluster_check

    try:
        return run_cluster_check(options, registry, kubeconfig=str(kubeconfig) if kubeconfig
                                 else None, context=context,
                                 namespaces=[namespace] if namespace else None)
    except ClusterError as exc:
        raise UsageError(str(exc)) from None


def render(fmt: str, result: Any, registry: Any, *, to_terminal: bool, verbose: bool = False,
           show_statistics: bool = False, base: Any = None) -> str:
    """One format of the result; `base` (report.compare.BaseReport, with --base) is
    carried by the JSON and markdown formats (text prints basecheck.change_text)."""
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
    if base is not None and fmt in ("json", "markdown"):
        return module.render(result, registry, base=base)
    return module.render(result, registry)
