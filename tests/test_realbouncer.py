"""The shared PgBouncer launcher itself: starts, answers the admin console, reports failures."""

from __future__ import annotations

import pytest

from tests.realbouncer import have_pgbouncer, running_pgbouncer, try_pgbouncer

pytestmark = [
    pytest.mark.pgbouncer,
    pytest.mark.skipif(not have_pgbouncer(), reason="pgbouncer binary not installed"),
]


def test_starts_and_answers_show_commands() -> None:
    ini = "[databases]\nappdb = host=127.0.0.1 port=1 dbname=app pool_size=7\n"
    with running_pgbouncer(ini, users=["app"]) as pgb:
        config = {row["key"]: row["value"] for row in pgb.admin_dicts("SHOW CONFIG")}
        assert config["listen_port"] == str(pgb.port)
        dbs = {row["name"]: row for row in pgb.admin_dicts("SHOW DATABASES")}
        assert dbs["appdb"]["pool_size"] == "7"
        assert ("pgbouncer",) in [row[:1] for row in pgb.admin("SHOW DATABASES")]


def test_refused_config_is_reported_with_log() -> None:
    outcome = try_pgbouncer("[pgbouncer]\ndefault_pool_size = 20 ; note\n")
    assert not outcome.started
    assert 'invalid value "20 ; note" for parameter default_pool_size' in outcome.log


def test_harness_settings_do_not_reset_the_texts_own() -> None:
    # A second [pgbouncer] header would reset max_client_conn: the harness inserts its
    # settings into the text's last [pgbouncer] section instead.
    ini = "[pgbouncer]\nmax_client_conn = 55\n[databases]\nappdb = host=127.0.0.1 port=1\n"
    with running_pgbouncer(ini) as pgb:
        config = {row["key"]: row["value"] for row in pgb.admin_dicts("SHOW CONFIG")}
        assert config["max_client_conn"] == "55"
        assert pgb.ini_text.index("listen_port") < pgb.ini_text.index("[databases]")
    with running_pgbouncer("[databases]\nappdb = host=127.0.0.1 port=1\n") as pgb:
        assert pgb.ini_text.rstrip().endswith("pgbouncer.pid")
