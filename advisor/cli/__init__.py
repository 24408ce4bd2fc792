"""Command-line interface. Thin: parse options, call the engine, pick a reporter.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage or
input errors.

A check is parsed by advisor.cli.quick when its command line is plain (what pre-commit
and CI pass) and runs without importing typer; anything else goes to the typer
application (advisor.cli.typer_app, `app` here), which says what is wrong with it.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

# Commands the typer application defines itself; the rest live in advisor.commands.
BUILTIN_COMMANDS = frozenset({"check", "rules", "explain"})


def __getattr__(name: str) -> Any:
    # `from advisor.cli import app`: the typer application, imported when asked for.
    if name == "app":
        from advisor.cli.typer_app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def invoked_command(argv: list[str]) -> str | None:
    """The subcommand word: the first argument that is not an option (the root has only
    flags, --version and --help, so no option takes a value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main() -> None:
    # typer builds every registered command's parameters on each run; `check` runs on
    # every commit, so the other modules' commands are registered only when needed
    # (their name, --help, or an unknown word that wants the full list).
    if invoked_command(sys.argv[1:]) not in BUILTIN_COMMANDS:
        from advisor.cli.typer_app import app
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
    try:
        if argv[:1] == ["check"]:  # the other commands do not import the check's modules
            from advisor.cli.quick import quick_check_args

            args = quick_check_args(argv, os.environ)
            if args is not None:
                from advisor.cli.check import check_command

                return check_command(args)
        return _run_app(argv)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the last line of defence: one line, exit 2
        from advisor.cli.check import one_line
        from advisor.guard import crash_text

        print(f"pool-advisor: internal error: {one_line(crash_text(exc))} (please report "
              "this)", file=sys.stderr)
        return 2


def _run_app(argv: list[str]) -> int:
    """The typer application's exit code for `argv`; its usage errors as one line."""
    import typer

    from advisor.cli.typer_app import app

    try:  # typer 0.2x runs on a vendored click, whose exceptions are its own classes
        from typer import _click as click
    except ImportError:  # older typer: the click package
        import click

    try:
        code = app(args=argv, prog_name="pool-advisor", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        exc.show()  # `pool-advisor check` with no argument: its help, as click prints it
        return 2
    except click.ClickException as exc:
        from advisor.cli.check import one_line

        where = f" (see `{exc.ctx.command_path} --help`)" if getattr(exc, "ctx", None) else ""
        print(f"pool-advisor: {one_line(exc.format_message())}{where}", file=sys.stderr)
        return 2
    except typer.Abort:
        print("pool-advisor: aborted", file=sys.stderr)
        return 2
    return code if isinstance(code, int) else 0
