"""`[[proxies]] kind = "pgbouncer"`: a PgBouncer the repository does not deploy (Fly's
managed pooler, one on a VM). Audit 53: apps going through such a pooler could not be
checked at all, since only a PgBouncer found in the repository, or an RDS Proxy, was a
pooler: no budget through it and no PA4xx.

Facts (PgBouncer NEWS.md at tag pgbouncer_1_25_0, read in advisor/facts/pgbouncer.py):
max_client_conn defaults to 100, max_prepared_statements is 0 (off) from 1.21.0 until
1.24.0 makes it 200; PgBouncer refuses a parameter its version does not have.
ActiveRecord's postgresql adapter defaults prepared_statements and advisory_locks to
true (advisor/read/sql/drivers.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.config.settings import load_settings
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.fs import InputError
from tests.deploy_helpers import line_no

pytest.importorskip("pglast")

SERVER = """\
[[servers]]
name = "shop-pg"
hosts = ["shop-pg.internal"]
max_connections = 100
"""

PROXY = """
[[proxies]]
name = "fly-pgbouncer"
kind = "pgbouncer"
hosts = ["shop-db.flycast"]
target = "shop-pg"
pool_mode = "transaction"
version = "1.22"
default_pool_size = 20
"""

DATABASE_YML = """\
default: &default
  adapter: postgresql
  encoding: unicode
  pool: <%= ENV.fetch("RAILS_MAX_THREADS") { 5 } %>

production:
  <<: *default
  url: <%= ENV["DATABASE_URL"] %>
"""

GEMFILE = 'source "https://rubygems.org"\ngem "rails", "~> 7.1.3"\ngem "pg", "~> 1.5"\n' \
          'gem "puma", ">= 5.0"\n'

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  strategy: {rollingUpdate: {maxSurge: 0}}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.example.com/shop/web:1.0
          command: ["bundle", "exec", "puma", "-C", "config/puma.rb"]
          env:
            - name: RAILS_ENV
              value: production
            - name: RAILS_MAX_THREADS
              value: "5"
            - name: DATABASE_URL
              value: postgres://shop:secret@shop-db.flycast:5432/shop_production
"""

PA4XX = {f"PA4{n:02d}" for n in range(1, 11)}


def rails_app(root: Path, config: str, yml: str = DATABASE_YML) -> Path:
    """A Rails app in the shape of one deployed on Fly behind its managed PgBouncer:
    config/database.yml reads DATABASE_URL, the Deployment sets it to the pooler's host."""
    (root / "config").mkdir(parents=True)
    (root / "k8s").mkdir()
    (root / "config" / "database.yml").write_text(yml)
    (root / "Gemfile").write_text(GEMFILE)
    (root / "k8s" / "web.yaml").write_text(WEB)
    (root / ".pool-advisor.toml").write_text(config)
    return root


def codes(root: Path) -> dict[str, list]:
    r = run_check([root], CheckOptions(root=root))
    out: dict[str, list] = {}
    for f in r.findings:
        out.setdefault(f.code, []).append(f)
    return out


# --- configuration --------------------------------------------------------------------


def test_declaration_reads_and_keeps_its_lines(tmp_path: Path) -> None:
    path = tmp_path / ".pool-advisor.toml"
    path.write_text(SERVER + PROXY)
    (proxy,) = load_settings(path).proxies
    assert proxy.kind == "pgbouncer" and proxy.version == "1.22"
    assert (proxy.pool_mode, proxy.default_pool_size, proxy.max_client_conn) == (
        "transaction", 20, None)
    assert proxy.line_of("pool_mode") == line_no(path, "pool_mode")


@pytest.mark.parametrize(("extra", "message", "key"), [
    ('max_prepared_statements = 100\n', "PgBouncer 1.20 has no max_prepared_statements",
     "max_prepared_statements"),
    ('max_connections_percent = 50\n', "unknown key", "max_connections_percent"),
    ('instances = 0\n', "greater than or equal to 1", "instances"),
])
def test_bad_declarations_name_their_line(tmp_path: Path, extra: str, message: str,
                                          key: str) -> None:
    path = tmp_path / ".pool-advisor.toml"
    path.write_text(SERVER + PROXY.replace('"1.22"', '"1.20"') + extra)
    with pytest.raises(InputError) as err:
        load_settings(path)
    assert message in err.value.message and err.value.line == line_no(path, key)


def test_a_pool_mode_pgbouncer_lacks_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / ".pool-advisor.toml"
    path.write_text(SERVER + PROXY.replace('"transaction"', '"txn"'))
    with pytest.raises(InputError) as err:
        load_settings(path)
    assert err.value.line == line_no(path, "pool_mode")


# --- Bad / Good: a Rails app behind the pooler ------------------------------------------


def test_bad_rails_defaults_behind_a_transaction_pooler(tmp_path: Path) -> None:
    root = rails_app(tmp_path, SERVER + PROXY)
    found = codes(root)
    # ActiveRecord's defaults: prepared_statements and advisory_locks true, both broken in
    # transaction mode; PgBouncer 1.22's max_prepared_statements is 0 (tracking off)
    (pa405,) = found["PA405"]
    (pa403,) = found["PA403"]
    assert (pa405.location.path, pa405.location.line) == ("config/database.yml", 2)
    assert (pa403.location.path, pa403.location.line) == ("config/database.yml", 2)
    assert "fly-pgbouncer in transaction mode" in pa405.message
    assert "max_prepared_statements = 0 (default: PgBouncer 1.22 default)" in pa405.message


def test_good_rails_settings_behind_the_same_pooler(tmp_path: Path) -> None:
    yml = DATABASE_YML + "  prepared_statements: false\n  advisory_locks: false\n"
    root = rails_app(tmp_path, SERVER + PROXY, yml)
    assert not set(codes(root)) & PA4XX


def test_pgbouncer_1_24_tracks_prepared_statements_by_default(tmp_path: Path) -> None:
    # 1.24.0: "Enable prepared statement support by default" (max_prepared_statements 200)
    root = rails_app(tmp_path, SERVER + PROXY.replace('"1.22"', '"1.24"'))
    found = codes(root)
    assert "PA405" not in found and "PA403" in found


def test_declared_max_prepared_statements_clears_pa405(tmp_path: Path) -> None:
    root = rails_app(tmp_path, SERVER + PROXY + "max_prepared_statements = 100\n")
    assert "PA405" not in codes(root)


def test_session_mode_pooler_has_no_transaction_hazards(tmp_path: Path) -> None:
    root = rails_app(tmp_path, SERVER + PROXY.replace('"transaction"', '"session"'))
    assert not set(codes(root)) & PA4XX


def test_unset_version_is_assumed_and_raised_by_what_is_set(tmp_path: Path) -> None:
    # no version: assumed (1.18, as for any PgBouncer whose version is not read); a
    # max_prepared_statements it is given means at least 1.21, which then tracks them
    config = SERVER + PROXY.replace('version = "1.22"\n', "")
    assert "PA405" in codes(rails_app(tmp_path / "a", config))
    assert "PA405" not in codes(rails_app(tmp_path / "b",
                                          config + "max_prepared_statements = 50\n"))


# --- the budget -----------------------------------------------------------------------


def test_server_side_counts_in_the_target_budget(tmp_path: Path) -> None:
    root = rails_app(tmp_path, SERVER + PROXY + "instances = 2\n")
    r = run_check([root], CheckOptions(root=root))
    (b,) = r.budgets
    by = {c.who: c for c in b.contributions}
    # web: 3 replicas (maxSurge 0) x 5 (RAILS_MAX_THREADS) = 15 client connections; one
    # (shop_production, shop) pool per process, at most min(20, 15) = 15 each; 2 processes
    assert set(by) == {"fly-pgbouncer"}
    assert by["fly-pgbouncer"].total == 30 and b.peak == 30


def test_max_db_connections_caps_each_process(tmp_path: Path) -> None:
    root = rails_app(tmp_path, SERVER + PROXY + "instances = 2\nmax_db_connections = 4\n")
    (b,) = run_check([root], CheckOptions(root=root)).budgets
    assert b.peak == 8  # 2 processes x max_db_connections 4


def test_target_may_be_a_server_of_the_repository(tmp_path: Path) -> None:
    root = rails_app(tmp_path, PROXY.replace('"shop-pg"', '"postgres"'))
    (root / "k8s" / "db.yaml").write_text(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: postgres\nspec:\n"
        "  replicas: 1\n  selector:\n    matchLabels: {app: postgres}\n  template:\n"
        "    metadata:\n      labels: {app: postgres}\n    spec:\n      containers:\n"
        "        - name: postgres\n          image: postgres:16.3\n")
    r = run_check([root], CheckOptions(root=root))
    (b,) = r.budgets
    assert b.max_connections.value == 100  # PostgreSQL 16 default
    assert {c.who for c in b.contributions} == {"fly-pgbouncer"}


def test_unknown_target_is_a_problem_with_its_line(tmp_path: Path) -> None:
    root = rails_app(tmp_path, SERVER + PROXY.replace('target = "shop-pg"', 'target = "nope"'))
    r = run_check([root], CheckOptions(root=root))
    toml = root / ".pool-advisor.toml"
    assert any("target 'nope' is no declared server" in f.message
               and f.location.line == line_no(toml, "target =") for f in r.findings)


def test_pa504_fix_names_the_pooler_outside_and_its_declared_timeout_clears_it(
        tmp_path: Path) -> None:
    (pa504,) = codes(rails_app(tmp_path / "a", SERVER + PROXY))["PA504"]
    assert pa504.fix is not None and "pgbouncer.ini" not in pa504.fix.description
    assert "fly-pgbouncer's own settings (where it runs, outside the repository)" in (
        pa504.fix.description)
    config = SERVER + PROXY + "idle_transaction_timeout = 60\n"
    assert "PA504" not in codes(rails_app(tmp_path / "b", config))


def test_no_star_fallback_note_for_a_declared_pooler(tmp_path: Path) -> None:
    root = rails_app(tmp_path, SERVER + PROXY)
    (b,) = run_check([root], CheckOptions(root=root)).budgets
    (c,) = b.contributions
    assert "* fallback" not in c.note and "cancel request" in c.note


def test_unknown_target_is_not_also_an_unplaced_pooler(tmp_path: Path) -> None:
    root = rails_app(tmp_path, SERVER + PROXY.replace('target = "shop-pg"', 'target = "nope"'))
    r = run_check([root], CheckOptions(root=root))
    assert not any("lead to no server" in n for n in r.notices)
    (b,) = r.budgets  # shop-pg: nothing reaches it, and its peak is no floor
    assert b.peak == 0 and b.fits
