"""advisor.cli.quick: a plain `check` command line gives the CheckArgs the typer command
gives for it, and anything it does not read plainly is left to typer (None)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli import check, typer_app
from advisor.cli.check import CheckArgs
from advisor.cli.quick import FLAGS, LISTS, VALUES, quick_check_args

REPO = Path(__file__).resolve().parents[1]


def typer_args(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> CheckArgs | str:
    """What the typer command hands to check_command for `argv`, or the name of the
    error click raised instead."""
    seen: list[CheckArgs] = []

    def record(args: CheckArgs) -> int:
        seen.append(args)
        return 0

    monkeypatch.setattr(check, "check_command", record)  # what the typer command calls
    try:
        typer_app.app(args=argv, prog_name="pool-advisor", standalone_mode=False)
    except Exception as exc:  # click's usage errors
        return type(exc).__name__
    return seen[0] if seen else "no call"


PLAIN = [
    ["check", "."],
    ["check", "-"],
    ["check", "a", "b/c", "--format", "json"],
    ["check", "--changed-files", "k8s/a.yaml", "db/b.sql"],
    ["check", "--format=sarif", "x", "--fail-on", "error"],
    ["check", "-f", "github", "-o", "out.txt", "-v", "x"],
    ["check", "x", "--select", "PA1,PA2", "--select", "PA3", "--ignore", "PA101"],
    ["check", "x", "--exclude", "vendor/**", "--exclude=tmp"],
    ["check", "chart", "--values", "v1.yaml", "--values", "v2.yaml", "--set", "a.b=1",
     "--set=c=d", "--release", "r", "--namespace", "ns"],
    ["check", "x", "--pg-version", "15", "--config", "cfg.toml", "--root", "/tmp"],
    ["check", "x", "--pg-version", "09"],
    ["check", "x", "--base", "origin/main", "--new-only"],
    ["check", "--cluster", "--kubeconfig", "kc", "--context", "c1"],
    ["check", "x", "--write", "sarif=r.sarif", "--write", "json=-", "--statistics"],
    ["check", "x", "--no-cache", "--no-cache", "--show-arithmetic"],
    ["check", "x", "--output=-"],
    ["check", "--format", "json"],
    ["check", "check"],
]

LEFT_TO_TYPER = [
    ["check"],
    ["rules"],
    ["--version", "check", "x"],
    ["check", "--help"],
    ["check", "x", "--"],
    ["check", "--", "-x"],
    ["check", "x", "--format", "nope"],
    ["check", "x", "--format", "JSON"],
    ["check", "x", "--format"],
    ["check", "x", "--format="],
    ["check", "x", "--format", "json", "--format", "text"],
    ["check", "x", "-fjson"],
    ["check", "x", "-vf", "json"],
    ["check", "x", "--no-cache=1"],
    ["check", "x", "--pg-version", "fifteen"],
    ["check", "x", "--pg-version", "-1"],
    ["check", "x", "--pg-version", " 15"],
    ["check", "x", "-o", "-"],
    ["check", "x", "--fail-on", "fatal"],
    ["check", "x", "--no-such-option"],
    ["check", "x", "--form", "json"],
    ["check", "-1"],
]


@pytest.mark.parametrize("argv", PLAIN)
def test_a_plain_command_line_reads_as_typer_reads_it(argv, monkeypatch):
    quick = quick_check_args(argv, {})
    assert quick is not None
    assert quick == typer_args(argv, monkeypatch)


@pytest.mark.parametrize("argv", LEFT_TO_TYPER)
def test_anything_else_is_left_to_typer(argv):
    assert quick_check_args(argv, {}) is None


def test_the_no_cache_environment_variable_is_left_to_typer():
    assert quick_check_args(["check", "x"], {"POOL_ADVISOR_NO_CACHE": "1"}) is None
    assert quick_check_args(["check", "x"], {"OTHER": "1"}) is not None


def test_random_command_lines_never_read_otherwise_than_typer(monkeypatch):
    """Whatever quick reads, typer reads the same; what typer refuses, quick leaves."""
    words = [*FLAGS, *VALUES, *LISTS, "json", "text", "error", "15", "x", "y/z", "-",
             "--", "--help", "a=b", "-x", "--format=json", "--pg-version=7", "-vo",
             "--no-cache=", "warning", ""]
    rng = random.Random(19)
    read = 0
    for _ in range(1500):
        argv = ["check", *rng.choices(words, k=rng.randint(0, 7))]
        quick = quick_check_args(argv, {})
        if quick is None:
            continue
        read += 1
        assert quick == typer_args(argv, monkeypatch), argv
    assert read > 100  # the comparison is not vacuous


def test_a_plain_check_does_not_import_typer(tmp_path):
    code = ("import sys; from advisor.cli import run; "
            f"code = run(['check', {str(tmp_path)!r}, '--format', 'json']); "
            "print(code, 'typer' in sys.modules, 'click' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=REPO)
    assert proc.stdout.strip().splitlines()[-1] == "0 False False", proc.stderr


def test_a_usage_error_in_a_plain_check_is_one_line_exit_2(tmp_path, capsys):
    from advisor import cli

    assert cli.run(["check", str(tmp_path), "--write", "nope"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("pool-advisor: --write 'nope': expected FORMAT=PATH")
    assert err.count("\n") == 1
