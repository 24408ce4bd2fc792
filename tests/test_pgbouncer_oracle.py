"""Oracle: every file of tests/pgbouncer_corpus loaded into the real PgBouncer 1.18.

For each file: PgBouncer refuses to start exactly when the parser marks it fatal, with
exactly the ERROR lines (file:line included) the parser predicts; when it starts, SHOW
CONFIG, SHOW DATABASES and SHOW USERS equal the parser's explicit values merged with
the version's defaults (advisor.facts.pgbouncer.bouncer_default). The text compared is the
exact text PgBouncer loaded (the corpus file plus the harness's listen/auth settings).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from advisor.facts.pgbouncer import bouncer_default, effective_pool, params, show_value
from advisor.model import BouncerVersion
from advisor.read.fs import Root
from advisor.read.sources.pgbouncer_ini import PgBouncerIni, pooler_from_ini, read_pgbouncer_ini
from tests.realbouncer import (
    ADMIN_USER,
    PSQL,
    RunningBouncer,
    have_pgbouncer,
    running_pgbouncer,
    try_pgbouncer,
)

CORPUS = Path(__file__).parent / "pgbouncer_corpus"
CASES = sorted(p.name for p in CORPUS.glob("*.ini"))
V118 = BouncerVersion(major=1, minor=18)

pytestmark = [
    pytest.mark.pgbouncer,
    pytest.mark.skipif(not have_pgbouncer(), reason="pgbouncer binary not installed"),
]

_LOG_ERROR = re.compile(r"^\S+ \S+ \S+ \[\d+\] ERROR (.*)$")


def _include_files() -> dict[str, str | bytes]:
    return {f"inc/{p.name}": p.read_bytes() for p in sorted((CORPUS / "inc").iterdir())}


def _parse_as_loaded(loaded: str) -> PgBouncerIni:
    """Parse the text PgBouncer loaded, from disk, laid out as PgBouncer's cwd was."""
    d = Path(tempfile.mkdtemp(prefix="pgb-oracle-"))
    try:
        (d / "pgbouncer.ini").write_bytes(loaded.encode())
        for name, content in _include_files().items():
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
        return read_pgbouncer_ini(Root.of(d), "pgbouncer.ini", version=V118)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _errors(log: str) -> list[str]:
    return [m.group(1) for line in log.splitlines() if (m := _LOG_ERROR.match(line))]


def test_corpus_is_big_enough() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("name", CASES)
def test_pgbouncer_agrees(name: str) -> None:
    text = (CORPUS / name).read_bytes().decode()
    outcome = try_pgbouncer(text, files=_include_files())
    ini = _parse_as_loaded(outcome.ini_text)
    assert outcome.started == (not ini.fatal), (outcome.log, ini.problems)
    if not outcome.started:
        assert _errors(outcome.log) == ini.refusal, outcome.log
        assert "FATAL cannot load config file" in outcome.log
        fatal = [p for p in ini.problems if p.fatal]
        assert len(fatal) == 1
        for line in ini.refusal:
            core = re.sub(r" in configuration \([^)]*\)| \([^)]*:\d+\)", "", line)
            core = core.removesuffix(", stopping loading")
            if core in ("fill_defaults fail", "error processing include file"):
                continue  # noise, and the include chain above the innermost error
            assert core in fatal[0].message, (core, fatal[0].message)
        return
    with running_pgbouncer(text, files=_include_files()) as pgb:
        config = pgb.admin_dicts("SHOW CONFIG")
        databases = pgb.admin_dicts("SHOW DATABASES")
        users = pgb.admin_dicts("SHOW USERS")
        if "* =" in text:
            databases += _autodb_rows(pgb)
    ini = _parse_as_loaded(pgb.ini_text)
    _compare_config(ini, config)
    _compare_databases(ini, databases)
    _compare_users(ini, users)


AUTODB_PROBE = "autodb_probe"


def _autodb_rows(pgb: RunningBouncer) -> list[dict[str, str]]:
    """Ask for an unknown database: PgBouncer creates it from the `*` entry at login
    (before it tries the server, which is a closed loopback port here)."""
    env = {**os.environ, "PGCONNECT_TIMEOUT": "3"}
    cmd = [PSQL, "-X", "-h", pgb.host, "-p", str(pgb.port), "-U", ADMIN_USER]
    client = subprocess.Popen(
        [*cmd, "-d", AUTODB_PROBE, "-c", "select 1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            rows = [r for r in pgb.admin_dicts("SHOW DATABASES") if r["name"] == AUTODB_PROBE]
            if rows:
                return rows
            time.sleep(0.02)
        raise AssertionError("the * fallback did not create " + AUTODB_PROBE)
    finally:
        client.kill()
        client.wait()


def _compare_config(ini: PgBouncerIni, rows: list[dict[str, str]]) -> None:
    table = params(V118)
    assert {r["key"] for r in rows} == set(table)
    for row in rows:
        key = row["key"]
        kind, default, no_reload = table[key]
        assert row["default"] == (default or ""), key
        assert row["changeable"] == ("no" if no_reload else "yes"), key
        if key == "conffile" and key not in ini.settings:
            continue  # set from the command line
        setting = ini.settings.get(key) or bouncer_default(key, V118)
        assert row["value"] == show_value(kind, setting.value), key


def _compare_databases(ini: PgBouncerIni, rows: list[dict[str, str]]) -> None:
    shown = {r["name"]: r for r in rows if r["name"] != "pgbouncer"}
    ours = {d.name: d for d in ini.databases if d.name != "*"}
    star = ini.database("*")
    if star is not None:
        ours[AUTODB_PROBE] = star
    assert set(shown) == set(ours)
    pooler = pooler_from_ini(ini, id="p", name="p")
    for name, db in ours.items():
        row = shown[name]
        pool = effective_pool(pooler, name, "someone")
        assert pool is not None and pool.database == name
        assert row["host"] == (db.host or ""), name
        assert row["port"] == str(db.port if db.port is not None else 5432), name
        assert row["database"] == (db.dbname or name), name
        assert row["force_user"] == (db.user or ""), name
        assert row["pool_size"] == str(pool.pool_size.int_value), name
        assert row["min_pool_size"] == str(pool.min_pool_size.int_value), name
        assert row["reserve_pool"] == str(pool.reserve_pool_size.int_value), name
        assert row["pool_mode"] == (str(db.pool_mode.value) if db.pool_mode else ""), name
        assert row["max_connections"] == str(pool.max_db_connections.int_value), name


def _compare_users(ini: PgBouncerIni, rows: list[dict[str, str]]) -> None:
    shown = {r["name"]: r for r in rows}
    for user in ini.users:
        assert shown[user.name]["pool_mode"] == (
            str(user.pool_mode.value) if user.pool_mode else ""
        )
    auth_users = {p["auth_user"] for p in ini.database_params.values() if "auth_user" in p}
    assert set(shown) <= {u.name for u in ini.users} | {ADMIN_USER, "pgbouncer"} | auth_users


def test_defaults_of_118_match_show_config() -> None:
    """bouncer_default for the budget-relevant keys equals the running 1.18's values."""
    names = [
        "pool_mode",
        "max_client_conn",
        "default_pool_size",
        "min_pool_size",
        "reserve_pool_size",
        "reserve_pool_timeout",
        "max_db_connections",
        "max_user_connections",
        "server_lifetime",
        "server_idle_timeout",
        "query_wait_timeout",
        "ignore_startup_parameters",
        "so_reuseport",
        "listen_port",
    ]
    outcome = try_pgbouncer("[pgbouncer]\n")
    assert outcome.started
    with running_pgbouncer("[pgbouncer]\n") as pgb:
        rows = {r["key"]: r for r in pgb.admin_dicts("SHOW CONFIG")}
    for name in names:
        kind = params(V118)[name][0]
        default = bouncer_default(name, V118)
        assert rows[name]["default"] == default.raw, name
        if name != "listen_port":  # the harness sets it
            assert rows[name]["value"] == show_value(kind, default.value), name
    assert "max_prepared_statements" not in rows and "transaction_timeout" not in rows
