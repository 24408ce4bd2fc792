"""A client URL naming a provider's managed transaction-mode pooler (audit 53): Supabase's
Supavisor on port 6543, Neon's `-pooler` endpoint. Facts and their URLs are in
advisor/facts/managed_poolers.py; what they do not document does not drive a rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.facts.managed_poolers import recognise
from tests.test_declared_pgbouncer import DATABASE_YML, GEMFILE, WEB

pytest.importorskip("pglast")

SUPABASE = "postgres://postgres.abcdefghij:pw@aws-0-eu-west-1.pooler.supabase.com:6543/postgres"
NEON = "postgresql://alex:pw@ep-cool-darkness-123456-pooler.us-east-2.aws.neon.tech/shop"
PA4XX = {f"PA4{n:02d}" for n in range(1, 11)}


def app(root: Path, url: str, yml: str = DATABASE_YML, pgoptions: bool = False) -> dict:
    """A Rails app whose Deployment's DATABASE_URL names `url` (Fly/Render/Vercel-style
    managed Postgres: no server, no pooler in the repository)."""
    (root / "config").mkdir(parents=True)
    (root / "k8s").mkdir()
    (root / "config" / "database.yml").write_text(yml)
    (root / "Gemfile").write_text(GEMFILE)
    web = WEB.replace("postgres://shop:secret@shop-db.flycast:5432/shop_production", url)
    if pgoptions:
        web += "            - name: PGOPTIONS\n              value: -c statement_timeout=5s\n"
    (root / "k8s" / "web.yaml").write_text(web)
    r = run_check([root], CheckOptions(root=root))
    out: dict = {"notices": r.notices}
    for f in r.findings:
        out.setdefault(f.code, []).append(f)
    return out


@pytest.mark.parametrize(("host", "port", "provider"), [
    ("aws-0-eu-west-1.pooler.supabase.com", 6543, "supabase"),
    ("aws-0-eu-west-1.pooler.supabase.com", 5432, None),  # session mode
    ("aws-0-eu-west-1.pooler.supabase.com", None, None),  # 5432, the default
    ("db.abcdefghij.supabase.co", 6543, None),  # the direct host
    ("ep-cool-darkness-123456-pooler.us-east-2.aws.neon.tech", None, "neon"),
    ("ep-cool-darkness-123456.us-east-2.aws.neon.tech", None, None),  # direct
    ("pooler.example.com", 6543, None),
])
def test_recognise(host: str, port: int | None, provider: str | None) -> None:
    found = recognise(host, port)
    assert (found.provider if found else None) == provider


def test_bad_rails_defaults_through_supavisor_transaction_mode(tmp_path: Path) -> None:
    found = app(tmp_path, SUPABASE)
    (pa405,) = found["PA405"]
    (pa403,) = found["PA403"]
    assert (pa405.location.path, pa405.location.line) == ("config/database.yml", 2)
    assert "Supabase Supavisor does not support prepared statements in transaction mode" \
        in pa405.message and "disabling-prepared-statements" in pa405.message
    assert "Supabase Supavisor aws-0-eu-west-1.pooler.supabase.com in transaction mode" \
        in pa403.message
    # its server is not in the repository: its connections are still in no budget
    assert "PA107" in found
    assert any("Supavisor" in n and "PA410 not checked" in n for n in found["notices"])


def test_good_rails_settings_through_supavisor(tmp_path: Path) -> None:
    yml = DATABASE_YML + "  prepared_statements: false\n  advisory_locks: false\n"
    assert not set(app(tmp_path, SUPABASE, yml)) & PA4XX


def test_supavisor_session_port_is_not_a_transaction_pooler(tmp_path: Path) -> None:
    found = app(tmp_path, SUPABASE.replace(":6543/", ":5432/"))
    assert not set(found) & PA4XX and "PA107" in found


def test_neon_pooled_endpoint_checks_session_state_not_prepared_statements(
        tmp_path: Path) -> None:
    found = app(tmp_path, NEON)
    # advisory locks break in transaction mode; Neon documents protocol-level prepared
    # statements as supported: no PA405
    assert "PA403" in found and "PA405" not in found
    assert "Neon PgBouncer" in found["PA403"][0].message


def test_startup_parameters_are_not_judged_without_documentation(tmp_path: Path) -> None:
    for name, url in (("s", SUPABASE), ("n", NEON)):
        assert "PA410" not in app(tmp_path / name, url, pgoptions=True)


def test_no_pgbouncer_settings_rule_runs_against_a_managed_pooler(tmp_path: Path) -> None:
    # PA201/PA210/PA504...: PgBouncer defaults (max_client_conn 100, one process, no
    # idle_transaction_timeout) are not the provider's: none runs
    found = app(tmp_path, SUPABASE)
    assert not {c for c in found if c.startswith(("PA2", "PA5"))}


def test_a_declared_pooler_for_the_host_wins(tmp_path: Path) -> None:
    (tmp_path / ".pool-advisor.toml").write_text(
        '[[servers]]\nname = "sb"\nhosts = ["db.abcdefghij.supabase.co"]\nmax_connections = 60\n'
        '\n[[proxies]]\nname = "supavisor"\nkind = "pgbouncer"\n'
        'hosts = ["aws-0-eu-west-1.pooler.supabase.com"]\ntarget = "sb"\n'
        'pool_mode = "transaction"\nversion = "1.24"\ndefault_pool_size = 15\n')
    found = app(tmp_path, SUPABASE)
    assert "PA107" not in found and "PA405" not in found  # 1.24 as declared
    assert not any("Supavisor" in n for n in found["notices"])
