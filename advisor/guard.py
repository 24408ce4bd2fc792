"""Crash isolation: an unexpected exception while reading one file (or running one rule)
becomes a problem that names the file, and the run goes on with the others.

A crash is never exit 1 (findings) and never hides the other files' findings: the
failed file is reported as PA901 unreadable-input (an error, so "fits" is never printed
from something that was not read), and the CLI exits 2 when anything failed this way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from advisor.model import ConfigProblem, Location, WrongType

T = TypeVar("T")

# Marks an internal failure in a problem's message; the CLI exits 2 when one is present.
INTERNAL = "internal error"


def crash_text(exc: BaseException) -> str:
    """One line: the exception's type and its first line, bounded."""
    first = (str(exc).splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def crash_problem(path: str, exc: BaseException, what: str = "reading this file",
                  line: int | None = None) -> ConfigProblem:
    return ConfigProblem(
        location=Location(path=path or "<input>", line=line),
        message=f"{INTERNAL} while {what} ({crash_text(exc)}); what it sets is missing "
        "from the budget, the other files were read (please report this)",
        fatal=True, program="pool-advisor")


def guarded(problems: list[ConfigProblem], path: str, fn: Callable[[], T], default: T,
            what: str = "reading this file", line: int | None = None) -> T:
    """fn(), or `default` with a crash problem for `path` when it raises.

    KeyboardInterrupt and SystemExit pass through (they are not Exceptions)."""
    try:
        return fn()
    except WrongType as exc:
        problems.append(ConfigProblem(location=exc.location, message=exc.message, fatal=True,
                                      program=exc.program))
        return default
    except Exception as exc:
        problems.append(crash_problem(path, exc, what, line))
        return default


def is_internal(problem: ConfigProblem) -> bool:
    return problem.program == "pool-advisor" and problem.message.startswith(INTERNAL)
