"""advisor.facts.pg_startup against real servers: each major is started (127.0.0.1, a
free port, a temp dir: tests/realpg.py) on the slot settings of a case, and must refuse
with exactly the message pool-advisor gives, or start when it gives none. Majors other
than 15 come from scripts/get_pg_binaries.py (skipped when not installed)."""

from __future__ import annotations

import pytest

from advisor.facts.pg_startup import startup_refusal
from advisor.model import Source, Term
from tests.realpg import pg_bin_for, running_postgres

pytestmark = pytest.mark.postgres

# (max_connections, superuser_reserved_connections, reserved_connections (16+),
#  max_wal_senders): each set once refused and once one slot short of it
CASES = {
    10: [(3, 3, None, 2), (12, 3, None, 12), (12, 3, None, 10)],
    11: [(12, 3, None, 10), (12, 3, None, 8)],
    12: [(3, 3, None, None), (4, 3, None, 12)],
    15: [(3, 3, None, None), (4, 3, None, 12)],
    16: [(8, 3, 5, None), (9, 3, 5, None)],
    17: [(8, 3, 5, None), (3, 3, None, None)],
    18: [(8, 3, 5, None), (9, 3, 5, None)],
}
# the defaults where a case sets nothing (10 and 11: max_wal_senders 10; 16+: 0 reserved)
DEFAULT_WS, DEFAULT_RC = 10, 0


def _conf(mc: int, su: int, rc: int | None, ws: int | None) -> str:
    lines = [f"max_connections = {mc}", f"superuser_reserved_connections = {su}"]
    lines += [f"reserved_connections = {rc}"] if rc is not None else []
    lines += [f"max_wal_senders = {ws}"] if ws is not None else []
    return "\n".join(lines) + "\n"


def _expected(major: int, mc: int, su: int, rc: int | None, ws: int | None) -> str | None:
    def t(name: str, value: int) -> Term:
        return Term(label=name, value=value, source=Source.default_of("test"))

    found = startup_refusal(
        major, t("max_connections", mc), t("superuser_reserved_connections", su),
        t("reserved_connections", DEFAULT_RC if rc is None else rc) if major >= 16 else None,
        t("max_wal_senders", DEFAULT_WS if ws is None else ws) if major < 12 else None)
    return found.message if found else None


@pytest.mark.parametrize(("major", "case"), [(m, c) for m, cs in CASES.items() for c in cs])
def test_the_real_server_refuses_with_the_same_message(major, case):
    bin_dir = pg_bin_for(major)
    if bin_dir is None:
        pytest.skip(f"no PostgreSQL {major} here (scripts/get_pg_binaries.py {major})")
    expected = _expected(major, *case)
    try:
        with running_postgres(_conf(*case), bin_dir=bin_dir):
            started, log = True, ""
    except RuntimeError as exc:
        started, log = False, str(exc)
    if expected is None:
        assert started, log
    else:
        assert not started
        assert f"postgres: {expected}\n" in log + "\n", log


# postgresql.conf errors (the file and what it includes) the reader calls start errors,
# and warnings it does not: each file set started on a real 15 (advisor.read.sources
# .pgconf.start_errors; tests/test_pg_startup_conf.py for the budget and advise)
CONF_CASES = {
    "include_dir missing": ({"postgresql.conf": "include_dir 'conf.d'\n"}, True),
    "syntax error": ({"postgresql.conf": "work_mem = = 4MB\n"}, True),
    "invalid value": ({"postgresql.conf": "work_mem = 4mb\n"}, True),
    "out of range": ({"postgresql.conf": "max_connections = 0\n"}, True),
    "unknown name": ({"postgresql.conf": "max_conections = 60\n"}, True),
    "missing include": ({"postgresql.conf": "include 'extra.conf'\n"}, True),
    "include_if_exists missing": ({"postgresql.conf": "include_if_exists 'extra.conf'\n"},
                                  False),
    "custom placeholder": ({"postgresql.conf": "myapp.flag = on\n"}, False),
}


@pytest.mark.parametrize("case", list(CONF_CASES))
def test_the_real_server_refuses_the_config_errors_we_call_refusals(case, tmp_path):
    from advisor.read.fs import Root
    from advisor.read.sources.pgconf import read_pgconf, start_errors

    files, refuses = CONF_CASES[case]
    bin_dir = pg_bin_for(15)
    if bin_dir is None:
        pytest.skip("no PostgreSQL 15 here")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    conf = read_pgconf(Root.of(tmp_path), tmp_path / "postgresql.conf")
    assert bool(start_errors(conf.problems)) is refuses, conf.problems
    # the template's own postgresql.conf, then the case's lines: includes resolve in
    # the data dir as they do beside the file read above
    extra = {k: v for k, v in files.items() if k != "postgresql.conf"}
    try:
        with running_postgres(files["postgresql.conf"], files=extra, bin_dir=bin_dir):
            started, log = True, ""
    except RuntimeError as exc:
        started, log = False, str(exc)
    assert started is not refuses, log
    if refuses:
        assert "contains errors" in log, log


@pytest.mark.parametrize(("args", "refuses"), [
    (["-c", "shared_buffers=lots"], True),
    (["-c", "max_conections=60"], True),
    (["-c", "shared_buffers=256MB"], False),
])
def test_the_real_server_refuses_the_options_we_call_refusals(args, refuses):
    """A -c option the postmaster rejects is FATAL before it reads anything else
    (postgres -C parses the options as a start does)."""
    from advisor.model import Source
    from advisor.read.sources.pgconf import parse_postgres_args_checked, start_errors
    from tests.realpg import config_dir, postgres_C_result

    if pg_bin_for(15) is None:
        pytest.skip("no PostgreSQL 15 here")
    _, problems = parse_postgres_args_checked(args, Source(path="k8s/db.yaml", line=1))
    assert bool(start_errors(problems)) is refuses, problems
    with config_dir({"postgresql.conf": "\n"}) as d:
        result = postgres_C_result(d, ["shared_buffers"], args)
    assert result.ok is not refuses, result.stderr
    if refuses:
        assert "FATAL:" in result.stderr
