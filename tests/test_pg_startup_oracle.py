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
