"""Hostile and broken repositories (issue 14): a crash while reading one file is a
finding naming the file, the others are still read, and the run exits 2 with one line;
the CLI never prints a traceback or a usage banner."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor import cli
from advisor.engine import internal_errors, run_check
from advisor.rules import load_rules

REPO = Path(__file__).resolve().parent.parent
ACME = REPO / "fixtures" / "acme-shop"


@pytest.fixture()
def acme(tmp_path: Path) -> Path:
    return Path(shutil.copytree(ACME, tmp_path / "acme"))


def _codes(result) -> list[str]:
    return [f.code for f in result.findings]


def test_a_crashing_reader_is_one_finding_and_the_other_files_still_count(acme, monkeypatch):
    from advisor.sources import pgbouncer_ini

    (acme / "pgbouncer.ini").write_text("[databases]\n* = host=postgres\n")

    def boom(*args, **kwargs):
        raise RuntimeError("simulated bug\nsecond line")

    monkeypatch.setattr(pgbouncer_ini, "read_pgbouncer_ini", boom)
    result = run_check([str(acme)])
    assert "PA101" in _codes(result)  # acme-shop's own finding is still there
    crash = [f for f in result.findings if f.code == "PA901"]
    assert [f.location.path for f in crash] == ["pgbouncer.ini"]
    assert crash[0].message.startswith("internal error while reading this file "
                                       "(RuntimeError: simulated bug)")
    assert internal_errors(result)


def test_a_crash_exits_2_with_one_line_naming_the_file(acme, monkeypatch, capsys):
    from advisor.sources import pgbouncer_ini

    (acme / "pgbouncer.ini").write_text("[databases]\n* = host=postgres\n")
    monkeypatch.setattr(pgbouncer_ini, "read_pgbouncer_ini",
                        lambda *a, **k: (_ for _ in ()).throw(KeyError("x")))
    assert cli.run(["check", str(acme)]) == 2
    out, err = capsys.readouterr()
    assert "PA101" in out and "pgbouncer.ini" in out
    assert err.count("\n") == 1 and err.startswith("pool-advisor: pgbouncer.ini: internal error")


def test_a_crashing_rule_leaves_the_others_and_exits_2(acme, capsys):
    registry = load_rules()
    rule = registry.rules["PA301"]

    def broken(topo, ctx):
        raise ZeroDivisionError("division by zero")
        yield

    from msgspec.structs import replace

    registry.rules["PA301"] = replace(rule, func=broken)
    result = run_check([str(acme)], registry=registry)
    assert "PA101" in _codes(result)
    assert any("internal error in rule PA301" in n for n in result.notices)
    assert internal_errors(result)


def test_wrong_typed_manifests_are_findings_not_crashes(acme):
    pg = acme / "k8s" / "postgres.yaml"
    pg.write_text(pg.read_text().replace("memory:", "memory: \"1.2.3Gi\"\n      x:", 1))
    result = run_check([str(acme)])
    assert not internal_errors(result), internal_errors(result)


@pytest.mark.parametrize("argv", [
    ["check", "--no-such-option"],
    ["check", "--format", "nope", "x"],
    ["no-such-command"],
    ["check", "--pg-version", "fifteen", "x"],
])
def test_cli_usage_errors_are_one_line_exit_2(argv, capsys):
    assert cli.run(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("pool-advisor: "), err


def test_an_unexpected_exception_in_a_command_is_one_line_exit_2(monkeypatch, capsys, acme):
    from advisor import engine

    monkeypatch.setattr(engine, "scan", lambda *a, **k: 1 / 0)
    assert cli.run(["check", str(acme)]) == 2
    _out, err = capsys.readouterr()
    assert err == "pool-advisor: internal error: ZeroDivisionError: division by zero " \
        "(please report this)\n"
