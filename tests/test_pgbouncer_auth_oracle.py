"""Auth-query oracle: the server connections PgBouncer 1.18 holds for auth_query lookups.

A client whose user is not in auth_file is looked up with auth_query as auth_user on a
server connection of the ordinary pool (auth database, auth_user) (src/client.c
start_auth_query: get_pool + find_server). Many clients log in at once as distinct
users; the lookup function sleeps, so lookups queue in that pool. pg_stat_activity
(sampled every 10 ms) must show auth_user's connections reach, and never exceed, the
auth pool server_side_max counts (pool_size + reserve, under max_db_connections of the
database and max_user_connections of auth_user's [users] entry), and keep them open
after the logins (server_idle_timeout, 600 s by default, closes them).

Scenario "global": global auth_user, db1 uncapped: 4 + 2 = 6.
Scenario "capped": db1 max_db_connections = 5 counts the lookups' and the clients'
connections together: 5 in all, and the lookups reach it.
Scenario "entry": auth_user= on an entry with a forced user: the lookups use
(db2, authu), not the forced user's pool, and authu's [users] max_user_connections 3
caps them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path

import pytest

from advisor.facts.pgbouncer import server_side_max
from advisor.model import BouncerVersion, Contribution
from advisor.read.fs import Root
from advisor.read.sources.pgbouncer_ini import pooler_from_ini, read_pgbouncer_ini
from tests.realbouncer import have_pgbouncer, running_pgbouncer
from tests.realpg import PgServer, have_postgres, running_postgres

pytestmark = [
    pytest.mark.pgbouncer,
    pytest.mark.postgres,
    pytest.mark.skipif(not have_pgbouncer(), reason="pgbouncer binary not installed"),
    pytest.mark.skipif(not have_postgres(), reason="PostgreSQL 15 binaries not installed"),
]

LOOKUP_S = 1.0  # each auth_query sleeps this long (every login overlaps on a loaded machine)
LOGINS = 24  # distinct users logging in at once: more than any auth pool
COMMON = """
[pgbouncer]
pool_mode = transaction
default_pool_size = 4
reserve_pool_size = 2
reserve_pool_timeout = 0.3
max_client_conn = 500
auth_query = SELECT usename, passwd FROM public.lookup($1)
"""
SCENARIOS = {
    # name: (ini, client database, authu peak, budget total: the oracle when given)
    "global": (
        "[databases]\ndb1 = host=127.0.0.1 port={port} dbname=db1\n" + COMMON
        + "auth_user = authu\n",
        "db1", 6, None,
    ),
    "capped": (
        "[databases]\ndb1 = host=127.0.0.1 port={port} dbname=db1 max_db_connections=5\n"
        + COMMON + "auth_user = authu\n",
        "db1", 5, 5,
    ),
    "entry": (
        "[databases]\ndb2 = host=127.0.0.1 port={port} dbname=db1 user=u3 auth_user=authu\n"
        "[users]\nauthu = max_user_connections=3\n" + COMMON,
        "db2", 3, 3 + 6,
    ),
}


@pytest.fixture(scope="module")
def pg():
    with running_postgres("max_connections = 100") as server:
        server.psql("CREATE ROLE authu LOGIN SUPERUSER")
        server.psql("CREATE ROLE u3 LOGIN")
        server.psql("".join(f"CREATE ROLE c{i} LOGIN PASSWORD 'x';" for i in range(LOGINS)))
        server.psql("CREATE DATABASE db1")
        server.psql(
            "CREATE FUNCTION public.lookup(u text) RETURNS TABLE(usename name, passwd text)"
            f" LANGUAGE sql AS $$ SELECT pg_sleep({LOOKUP_S});"
            " SELECT usename, passwd FROM pg_shadow WHERE usename = u $$",
            dbname="db1",
        )
        yield server


def _sample(pg: PgServer, stop: threading.Event) -> list[Counter[str]]:
    import psycopg

    samples: list[Counter[str]] = []
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        while not stop.is_set():
            rows = conn.execute(
                "SELECT usename FROM pg_stat_activity WHERE backend_type = 'client backend'"
                " AND usename <> 'postgres'"
            ).fetchall()
            samples.append(Counter("authu" if r[0] == "authu" else "other" for r in rows))
            time.sleep(0.01)
    return samples


def _login(dsn: str) -> bool | str:
    import psycopg

    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=20) as c:
            c.execute("SELECT 1")
            return True
    except psycopg.Error as exc:
        return str(exc)  # said by the assertion, where a bare False told nothing
    return False


def _auth_part(budget: Contribution, db: str) -> Contribution:
    parts = [p for d in budget.parts for p in d.parts if p.who == f"{db}/authu"]
    assert len(parts) == 1, budget
    assert "auth_query lookups" in parts[0].note
    return parts[0]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_auth_query_lookups_hold_the_auth_pool(pg: PgServer, scenario: str, tmp_path: Path):
    pytest.importorskip("psycopg")
    template, client_db, auth_max, total = SCENARIOS[scenario]
    users = [f"c{i}" for i in range(LOGINS)]
    with running_pgbouncer(template.format(port=pg.port), users=["u3"]) as pgb:
        (tmp_path / "pgbouncer.ini").write_text(pgb.ini_text)
        ini = read_pgbouncer_ini(
            Root.of(tmp_path), "pgbouncer.ini", version=BouncerVersion(major=1, minor=18)
        )
        assert not ini.problems, ini.problems
        pooler = pooler_from_ini(ini, id="pgb", name="pgbouncer")
        budget = server_side_max(pooler, [(client_db, u) for u in users])
        assert _auth_part(budget, client_db).total == 4 + 2  # caps apply across pools
        if total is not None:
            assert budget.total == total, budget.note

        stop = threading.Event()
        with ThreadPoolExecutor(max_workers=LOGINS + 1) as ex:
            sampler = ex.submit(_sample, pg, stop)
            logins = [ex.submit(_login, pgb.dsn(client_db, u)) for u in users]
            res = [f.result(timeout=60) for f in logins]
            assert all(r is True for r in res), [r for r in res if r is not True]
            time.sleep(0.5)
            stop.set()
            samples = sampler.result(timeout=10)
        pools = {(r["database"], r["user"]): r for r in pgb.admin_dicts("SHOW POOLS")}
    assert max(s["authu"] for s in samples) == auth_max
    if total is not None:
        over = [(i, dict(s)) for i, s in enumerate(samples) if sum(s.values()) > total]
        # PgBouncer swaps a pool's idle server connection for another pool's under the
        # cap by closing one and opening one; the closed backend stays in
        # pg_stat_activity until its process has exited, which on a loaded machine one
        # 10 ms sample can catch (2 lone samples of 477 in a full run beside 7
        # helpers). A real breach holds its connections: it shows in consecutive
        # samples and by more than one.
        held = [(i, s) for (i, s), (j, _) in pairwise(over) if j == i + 1]
        assert not held, (len(samples), over[:10])
        assert all(sum(s.values()) == total + 1 for _, s in over), (len(samples), over[:10])
    if scenario == "global":
        # the lookups' connections stay open, idle in the auth pool
        assert samples[-1]["authu"] == auth_max
        assert pools[(client_db, "authu")]["sv_idle"] == str(auth_max)
