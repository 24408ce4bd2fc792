"""A plain `check` command line parsed without typer.

pre-commit runs `pool-advisor check --changed-files FILE...` on every commit and CI a
`check PATH --format FMT`: importing typer and click and building the command from its
annotations was 100 M instructions of every such run (a third of a check of an empty
folder). `quick_check_args` reads the command lines whose meaning is plain, giving the
`CheckArgs` the typer command gives for them (tests/test_cli_quick.py compares the
two); for anything else (help, a typo, an option twice, a value that looks like an
option, `--`, the --no-cache environment variable) it gives None and typer parses it,
with its own messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from advisor.cli.check import CheckArgs, Format, Level

# option -> CheckArgs field
FLAGS = {"--cluster": "cluster", "--new-only": "new_only", "--changed-files": "changed_files",
         "--show-arithmetic": "verbose", "-v": "verbose", "--statistics": "show_statistics",
         "--no-cache": "no_cache"}
VALUES = {"--format": "format", "-f": "format", "--fail-on": "fail_on", "--config": "config",
          "--pg-version": "pg_version", "--output": "output", "-o": "output",
          "--release": "release", "--namespace": "namespace", "--kubeconfig": "kubeconfig",
          "--context": "context", "--base": "base", "--root": "root"}
LISTS = {"--select": "select", "--ignore": "ignore", "--exclude": "exclude",
         "--values": "values", "--set": "set_values", "--write": "write"}
_PATHS = frozenset({"config", "output", "kubeconfig", "root"})
# Read from the environment by typer for --no-cache: a run that sets it goes to typer.
NO_CACHE_ENV = "POOL_ADVISOR_NO_CACHE"
_DIGITS = re.compile(r"[0-9]+")


def quick_check_args(argv: list[str], environ: Mapping[str, str]) -> CheckArgs | None:
    """The check's options for `argv` (`check` then its words), or None when typer must
    parse it."""
    if len(argv) < 2 or argv[0] != "check" or NO_CACHE_ENV in environ:
        return None  # `check` alone prints its help
    fields: dict[str, object] = {}
    paths: list[str] = []
    words = iter(argv[1:])
    for word in words:
        if word == "-" or not word.startswith("-"):
            paths.append(word)
            continue
        name, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in FLAGS:
            if eq:
                return None
            fields[FLAGS[name]] = True
            continue
        field = VALUES.get(name) or LISTS.get(name)
        if field is None:
            return None  # --help, --, an unknown option, short options run together
        value = inline if eq else next(words, None)
        if not value or (not eq and value.startswith("-")):
            return None
        if name in LISTS:
            listed = fields.setdefault(field, [])
            assert isinstance(listed, list)
            listed.append(value)
            continue
        if field in fields:
            return None  # given twice
        converted = _convert(field, value)
        if converted is None:
            return None
        fields[field] = converted
    return CheckArgs(paths=paths or None, **fields)  # type: ignore[arg-type]


def _convert(field: str, value: str) -> object | None:
    """`value` as the typer command's parameter `field` takes it; None when typer would
    refuse it (or might read it otherwise)."""
    if field == "format":
        return Format(value) if value in Format._value2member_map_ else None
    if field == "fail_on":
        return Level(value) if value in Level._value2member_map_ else None
    if field == "pg_version":
        return int(value) if _DIGITS.fullmatch(value) else None
    if field in _PATHS:
        return Path(value)
    return value
