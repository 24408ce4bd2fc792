"""Audit 55: what the PA4xx findings say about a declared PgBouncer (`[[proxies]] kind =
"pgbouncer"`) and a managed pooler recognised by host (audit 53).

- PA405's fix was "upgrade PgBouncer to >= 1.21 and set max_prepared_statements > 0" for
  every pooler: wrong for PgBouncer 1.21-1.23 (no upgrade is needed: its
  max_prepared_statements is 0, set it) and for Supabase's Supavisor, which is not
  PgBouncer and has no such setting; Supabase's fix is on the client side
  (https://supabase.com/docs/guides/troubleshooting/disabling-prepared-statements-qL8lEL:
  Prisma `?pgbouncer=true`, `prepare: false`, prepare_threshold None,
  statement_cache_size=0; "direct connections and Supavisor in session mode support
  prepared statements"), or its session mode on port 5432
  (https://supabase.com/docs/guides/database/connecting-to-postgres).
- A managed pooler was named "PgBouncer <host>" in the related line, and its mode's
  source read "(default, default: ...)": it is the provider's host/port rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.facts.managed_poolers import NEON_POOLING, SUPABASE_CONNECT, SUPABASE_PREPARED
from tests.test_declared_pgbouncer import PROXY, SERVER, codes, rails_app
from tests.test_managed_poolers import NEON, SUPABASE, app

pytest.importorskip("pglast")


def test_pa405_fix_for_pgbouncer_1_22_sets_max_prepared_statements(tmp_path: Path) -> None:
    (pa405,) = codes(rails_app(tmp_path, SERVER + PROXY))["PA405"]
    fix = pa405.fix.description
    assert "upgrade" not in fix  # 1.22 already tracks them once the setting is > 0
    assert "set max_prepared_statements > 0" in fix
    # where: the pooler runs outside the repository, its declaration follows it
    assert "fly-pgbouncer's own settings" in fix
    assert "`max_prepared_statements` of its [[proxies]] declaration" in fix


def test_pa405_fix_for_pgbouncer_before_1_21_upgrades(tmp_path: Path) -> None:
    config = SERVER + PROXY.replace('"1.22"', '"1.18"')
    (pa405,) = codes(rails_app(tmp_path, config))["PA405"]
    assert "upgrade fly-pgbouncer to PgBouncer >= 1.21" in pa405.fix.description


def test_pa405_fix_for_supavisor_is_the_client_side(tmp_path: Path) -> None:
    (pa405,) = app(tmp_path, SUPABASE)["PA405"]
    fix = pa405.fix.description
    assert "PgBouncer" not in fix and "max_prepared_statements" not in fix
    assert "?pgbouncer=true" in fix and "port 5432" in fix
    assert SUPABASE_PREPARED in fix and SUPABASE_CONNECT in fix


def test_supavisor_is_named_with_its_mode_rule(tmp_path: Path) -> None:
    found = app(tmp_path, SUPABASE)
    for f in found["PA403"] + found["PA405"]:
        assert "(default, default:" not in f.message and "default: Supabase" not in f.message
        assert ("Supabase Supavisor aws-0-eu-west-1.pooler.supabase.com in transaction mode "
                f"(port 6543 of aws-[region].pooler.supabase.com: {SUPABASE_CONNECT})"
                in f.message)
        (related,) = [r for r in f.related if "pooler.supabase.com" in r.message]
        assert related.message == ("Supabase Supavisor (transaction mode, port 6543) "
                                   "aws-0-eu-west-1.pooler.supabase.com")
    (pa405,) = found["PA405"]
    assert ("Supabase Supavisor does not support prepared statements in transaction mode "
            f"({SUPABASE_PREPARED})") in pa405.message


def test_neon_is_named_with_its_mode_rule(tmp_path: Path) -> None:
    (pa403,) = app(tmp_path, NEON)["PA403"]
    assert "(default, default:" not in pa403.message
    assert ("Neon PgBouncer ep-cool-darkness-123456-pooler.us-east-2.aws.neon.tech in "
            f"transaction mode (an endpoint ID ending in -pooler: {NEON_POOLING})"
            in pa403.message)
    assert [r.message for r in pa403.related] == [
        "Neon PgBouncer (transaction mode, -pooler endpoint) "
        "ep-cool-darkness-123456-pooler.us-east-2.aws.neon.tech"]


@pytest.mark.parametrize("url", [SUPABASE, NEON])
def test_pa107_does_not_call_a_managed_pooler_no_pooler(tmp_path: Path, url: str) -> None:
    found = app(tmp_path, url)
    (pa107,) = found["PA107"]
    host = url.split("@")[1].split(":")[0].split("/")[0]
    # it is linked to the managed pooler: "no ... pooler" was false, and a [[servers]]
    # entry with the pooler's host would take the pooler for the server (and stop its
    # PA4xx checks: the client would then link to that server)
    assert "no Service, operator service, pooler" not in pa107.message
    assert "a managed pooler" in pa107.message
    assert pa107.fix is None or f"hosts include {host!r}" not in pa107.fix.description


def test_supavisor_notice_does_not_call_it_pgbouncer(tmp_path: Path) -> None:
    (notice,) = [n for n in app(tmp_path, SUPABASE)["notices"] if "Supavisor" in n]
    assert "declare the server and a [[proxies]]" not in notice
    assert "Supavisor is not PgBouncer" in notice


def test_pa405_fix_for_a_deployed_pgbouncer_with_tracking_off(tmp_path: Path) -> None:
    # a pgbouncer.ini that sets max_prepared_statements = 0 is at least 1.21 (the version
    # that added it): the fix is the setting, in that file, not an upgrade
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from tests.rule_pages import load_pages, write_tree

    (page,) = [p for p in load_pages() if p.code == "PA405"]
    files = dict(page.bad)
    ini = next(k for k in files if k.endswith("pgbouncer.ini"))
    files[ini] += "max_prepared_statements = 0\n"
    write_tree(tmp_path, files)
    r = run_check([tmp_path], CheckOptions(root=tmp_path))
    (pa405,) = [f for f in r.findings if f.code == "PA405"]
    assert "upgrade" not in pa405.fix.description
    assert "set max_prepared_statements > 0" in pa405.fix.description
    assert "pgbouncer.ini" in pa405.fix.description
