"""Budget oracle: the usable number pool-advisor prints equals the sessions a
non-superuser can actually open on a real PostgreSQL 15 started with that conf."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.realpg import have_postgres, running_postgres

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(not have_postgres(), reason="PostgreSQL 15 not installed")]

CONFS = {
    # name: postgresql.conf text (the test server's listen/port settings come after)
    "defaults-max10": "max_connections = 10\n",
    "reserved-2": "max_connections = 12\nsuperuser_reserved_connections = 2\n",
    "walsenders-autovacuum": ("max_connections = 10\nmax_wal_senders = 4\n"
                              "autovacuum = on\nautovacuum_max_workers = 5\n"
                              "max_worker_processes = 4\n"),
    "units-and-include": "max_connections = 9 # via include below\ninclude 'extra.conf'\n",
}
EXTRA = {"units-and-include": {"extra.conf": "superuser_reserved_connections = 1\n"}}


def usable_from_pool_advisor(tmp_path: Path, conf: str, extra: dict[str, str]) -> float:
    repo = tmp_path / "repo"
    (repo / "db").mkdir(parents=True)
    (repo / "db" / "postgresql.conf").write_text(conf)
    for name, text in extra.items():
        (repo / "db" / name).write_text(text)
    result = run_check([str(repo)], CheckOptions(pg_version=15))
    (budget,) = result.budgets
    return budget.usable


def sessions_admitted(conf: str, extra: dict[str, str]) -> tuple[int, str]:
    import psycopg

    with running_postgres(conf, files=extra) as pg:
        pg.psql("CREATE ROLE app LOGIN NOSUPERUSER")
        opened = 0
        error = ""
        with ExitStack() as stack:
            for _ in range(200):
                try:
                    conn = psycopg.connect(pg.dsn(user="app"), connect_timeout=5)
                except psycopg.OperationalError as exc:
                    error = str(exc)
                    break
                stack.enter_context(conn)
                opened += 1
        return opened, error


@pytest.mark.parametrize("name", sorted(CONFS))
def test_usable_equals_sessions_a_real_server_admits(name, tmp_path):
    conf, extra = CONFS[name], EXTRA.get(name, {})
    usable = usable_from_pool_advisor(tmp_path, conf, extra)
    opened, error = sessions_admitted(conf, extra)
    assert opened == usable, f"pool-advisor said {usable}, the server admitted {opened}"
    assert "remaining connection slots are reserved for non-replication superuser" in error


# --- other majors: a real server of that major (scripts/get_pg_binaries.py) -----------

# major: (postgresql.conf, replication connections held open while counting)
OTHER_MAJORS = {
    # before 12 a WAL sender takes a max_connections slot: 12 - 3 - 2 = 7, with both
    # WAL senders connected (what max_wal_senders allows at peak)
    11: ("max_connections = 12\nmax_wal_senders = 2\nwal_level = replica\n", 2),
    10: ("max_connections = 12\nsuperuser_reserved_connections = 1\nmax_wal_senders = 3\n", 3),
    # from 12 they have their own slots: 12 - 3 = 9 with 2 WAL senders connected
    12: ("max_connections = 12\nmax_wal_senders = 2\n", 2),
    # 16+: reserved_connections (pg_use_reserved_connections) come off too: 12 - 2 - 3
    16: ("max_connections = 12\nsuperuser_reserved_connections = 2\n"
         "reserved_connections = 3\n", 0),
    18: ("max_connections = 12\nsuperuser_reserved_connections = 2\n"
         "reserved_connections = 3\nmax_wal_senders = 2\n", 2),
}


def sessions_admitted_on(major: int, bin_dir: Path, conf: str, walsenders: int
                         ) -> tuple[int, str]:
    """Sessions a plain role opens while `walsenders` replication connections are held."""
    import psycopg

    with running_postgres(conf, bin_dir=bin_dir) as pg:
        pg.psql("CREATE ROLE app LOGIN NOSUPERUSER")
        pg.psql("CREATE ROLE repl LOGIN REPLICATION NOSUPERUSER")
        opened = 0
        error = ""
        with ExitStack() as stack:
            for _ in range(walsenders):
                # a physical WAL sender, idle: it holds its slot as a standby's would
                stack.enter_context(psycopg.connect(pg.dsn(user="repl") + " replication=true",
                                                    connect_timeout=5, autocommit=True))
            senders = pg.psql("select count(*) from pg_stat_replication").strip()
            assert senders == str(walsenders), (major, senders)
            for _ in range(200):
                try:
                    conn = psycopg.connect(pg.dsn(user="app"), connect_timeout=5)
                except psycopg.OperationalError as exc:
                    error = str(exc)
                    break
                stack.enter_context(conn)
                opened += 1
        return opened, error


@pytest.mark.parametrize("major", sorted(OTHER_MAJORS))
def test_usable_equals_sessions_a_real_server_of_that_major_admits(major, tmp_path):
    from tests.realpg import pg_bin_for

    bin_dir = pg_bin_for(major)
    if bin_dir is None:
        pytest.skip(f"no PostgreSQL {major} here (scripts/get_pg_binaries.py {major})")
    conf, walsenders = OTHER_MAJORS[major]
    repo = tmp_path / "repo"
    (repo / "db").mkdir(parents=True)
    (repo / "db" / "postgresql.conf").write_text(conf)
    result = run_check([str(repo)], CheckOptions(pg_version=major))
    (budget,) = result.budgets
    opened, error = sessions_admitted_on(major, bin_dir, conf, walsenders)
    assert opened == budget.usable, f"pool-advisor said {budget.usable}, PostgreSQL {major} " \
                                    f"admitted {opened}"
    assert "remaining connection slots are reserved" in error or \
        "too many clients" in error, error
