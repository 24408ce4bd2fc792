"""Ecto reader: which config files are read at boot and what in them is code."""

from pathlib import Path

from msgspec.structs import replace

from advisor.model import EnvVar, Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.ecto import blank_comments
from advisor.read.fs import Root
from tests.apphelpers import container, product

REPO = """defmodule Till.Repo do
  use Ecto.Repo, otp_app: :till, adapter: Ecto.Adapters.Postgres
end
"""


def _tree(tmp_path: Path, files: dict[str, str]):
    for rel, text in {"mix.exs": 'defp deps, do: [{:ecto_sql, "~> 3.13"}]\n',
                      "lib/till/repo.ex": REPO, **files}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return scan_app_dir(Root.of(tmp_path), "")


def test_the_generated_commented_pool_count_is_not_read(tmp_path):
    """Phoenix 1.8's runtime.exs (phoenix v1.8.7 installer/lib/phx_new/generator.ex:494-499)
    comments out `pool_count: 4`: one pool per node, not four."""
    app = _tree(tmp_path, {"config/runtime.exs": """import Config
if config_env() == :prod do
  config :till, Till.Repo,
    # ssl: true,
    url: System.get_env("DATABASE_URL"),
    pool_size: String.to_integer(System.get_env("POOL_SIZE") || "10"),
    # For machines with several cores, consider starting multiple pools of `pool_size`
    # pool_count: 4,
    socket_options: []
end
"""})
    (pool,) = pools_for_container(container({"POOL_SIZE": "15"}), app).pools
    assert pool.processes is None and product([pool]) == "1 x 15 = 15"


def test_a_commented_pool_size_is_not_the_setting(tmp_path):
    app = _tree(tmp_path, {"config/prod.exs": """import Config
config :till, Till.Repo,
  # pool_size: 40,
  url: "ecto://till@till-db/till#main"
"""})
    (pool,) = pools_for_container(container(), app).pools
    assert pool.bound == "default" and product([pool]) == "1 x 10 = 10"


def test_blank_comments_keeps_strings_char_literals_and_lines():
    text = 'x = "a#b" # gone\ny = ?# # gone too\nz = """\n#{v} # kept\n"""\nok? # c\n'
    out = blank_comments(text)
    assert out.splitlines() == ['x = "a#b"       ', "y = ?#           ", 'z = """',
                                "#{v} # kept", '"""', "ok?    "]


RELEASES = """import Config
config :till, Till.Repo,
  url: System.get_env("DATABASE_URL"),
  pool_size: String.to_integer(System.get_env("POOL_SIZE") || "10")
"""


def test_releases_exs_is_the_runtime_config_without_a_runtime_exs(tmp_path):
    """Elixir 1.9-1.10 releases read config/releases.exs at boot; 1.11+ still do when there
    is no config/runtime.exs (elixir v1.18.0 lib/mix/lib/mix/tasks/release.ex:1233-1260)."""
    app = _tree(tmp_path, {"config/releases.exs": RELEASES,
                           "config/prod.exs": "import Config\n"})
    (pool,) = pools_for_container(container({"POOL_SIZE": "25"}), app).pools
    assert product([pool]) == "1 x 25 = 25" and pool.size.source.key == "POOL_SIZE"


def test_releases_exs_beside_a_runtime_exs_is_not_read(tmp_path):
    app = _tree(tmp_path, {"config/releases.exs": RELEASES,
                           "config/runtime.exs": "import Config\n",
                           "config/prod.exs": "config :till, Till.Repo, url: \"x\"\n"})
    (pool,) = pools_for_container(container({"POOL_SIZE": "25"}), app).pools
    assert pool.bound == "default" and product([pool]) == "1 x 10 = 10"


OBAN = """import Config
config :till, Till.Repo, url: System.get_env("DATABASE_URL"), pool_size: 8

config :till, Oban,
  repo: Till.Repo,
  queues: [default: 5]
"""


def test_oban_s_default_notifier_holds_one_connection_beside_the_pool(tmp_path):
    """Oban.Notifiers.Postgres (the default for the Basic engine, oban v2.23.0
    lib/oban/config.ex:86-89) is a Postgrex.SimpleConnection of its own
    (lib/oban/notifiers/postgres.ex:55-68), started whatever the queues (lib/oban.ex:561)."""
    app = _tree(tmp_path, {"config/prod.exs": OBAN})
    found = pools_for_container(container({"DATABASE_URL": "ecto://till@till-db/till"}), app)
    assert product(found.pools) == "1 x 8 + 1 x 1 = 9"
    notifier = found.pools[1]
    assert notifier.route.host == "till-db" and "config/prod.exs:4" in notifier.note


def test_oban_with_the_pg_notifier_opens_no_more(tmp_path):
    app = _tree(tmp_path, {"config/prod.exs": OBAN.replace(
        "queues:", "notifier: Oban.Notifiers.PG,\n  queues:")})
    assert product(pools_for_container(container(), app).pools) == "1 x 8 = 8"


MIGRATE = """defmodule Till.Release do
  @app :till
  def migrate do
    Application.load(@app)
    for repo <- Application.fetch_env!(@app, :ecto_repos) do
      {:ok, _, _} = Ecto.Migrator.with_repo(repo, &Ecto.Migrator.run(&1, :up, all: true))
    end
  end
end
"""


def test_a_release_migrate_container_holds_the_migrator_s_two(tmp_path):
    """`bin/till eval "Till.Release.migrate"` starts no application (no Oban): each repo
    is started by Ecto.Migrator.with_repo with pool_size 2 (ecto_sql v3.14.0
    lib/ecto/migrator.ex:161,817), not the configured 8."""
    app = _tree(tmp_path, {"config/prod.exs": OBAN, "lib/till/release.ex": MIGRATE})
    job = container(command=("/app/bin/till", "eval", "Till.Release.migrate"))
    (pool,) = pools_for_container(job, app).pools
    assert product([pool]) == "1 x 2 = 2" and "with_repo" in pool.size.source.default
    shell = container(command=("sh", "-c"), args=("bin/till eval Till.Release.migrate && "
                                                   "exec bin/till start",))
    assert product(pools_for_container(shell, app).pools) == "1 x 8 + 1 x 1 = 9"


TWO_REPOS = """import Config
if config_env() == :prod do
  database_url =
    System.get_env("DATABASE_URL") ||
      raise "DATABASE_URL is missing"

  config :till, Till.Repo,
    url: database_url,
    pool_size: 8

  config :till, Till.LedgerRepo,
    url: System.fetch_env!("LEDGER_DATABASE_URL"),
    pool_size: 4

  config :till, Till.ReplicaRepo,
    hostname: System.get_env("REPLICA_HOST"),
    database: "till",
    username: System.get_env("REPLICA_USER"),
    pool_size: 3
end
"""
TWO_REPO_MODULES = "".join(
    f"defmodule Till.{name} do\n  use Ecto.Repo, otp_app: :till, adapter: Ecto.Adapters.Postgres\n"
    "end\n" for name in ("Repo", "LedgerRepo", "ReplicaRepo"))


def test_each_repo_connects_where_its_own_url_or_hostname_says(tmp_path):
    """Each Repo is started with its own config (ecto v3.14.0 lib/ecto/repo/supervisor.ex
    runtime_config: the repo's otp_app config, `:url` parsed into it): a second Repo's
    LEDGER_DATABASE_URL is its server, not DATABASE_URL's."""
    app = _tree(tmp_path, {"config/runtime.exs": TWO_REPOS, "lib/till/repo.ex": TWO_REPO_MODULES})
    env = {"DATABASE_URL": "ecto://till@till-db/till",
           "LEDGER_DATABASE_URL": "ecto://ledger@ledger-db:5433/ledger",
           "REPLICA_HOST": "till-replica", "REPLICA_USER": "ro"}
    pools = pools_for_container(container(env), app).pools
    routes = {p.label: (p.route.host, p.route.port, p.route.dbname, p.route.user,
                        p.route.source.key) for p in pools}
    assert routes == {
        "Ecto Till.Repo pool_size": ("till-db", None, "till", "till", "DATABASE_URL"),
        "Ecto Till.LedgerRepo pool_size": ("ledger-db", 5433, "ledger", "ledger",
                                           "LEDGER_DATABASE_URL"),
        "Ecto Till.ReplicaRepo pool_size": ("till-replica", None, "till", "ro", "REPLICA_HOST"),
    }
    assert product(pools) == "1 x 8 + 1 x 4 + 1 x 3 = 15"


def test_a_repo_whose_url_is_a_secret_s_connects_where_this_does_not_say(tmp_path):
    app = _tree(tmp_path, {"config/runtime.exs": TWO_REPOS, "lib/till/repo.ex": TWO_REPO_MODULES})
    env = (*container({"DATABASE_URL": "ecto://till@till-db/till"}).env,
           EnvVar(name="LEDGER_DATABASE_URL", value=None, secret=True, from_ref="secret:l/url",
                  source=Source(path="k8s/app.yaml", line=30, key="LEDGER_DATABASE_URL")))
    found = pools_for_container(replace(container(), env=env), app)
    ledger = next(p for p in found.pools if "LedgerRepo" in p.label)
    assert ledger.route is None and "LEDGER_DATABASE_URL" in ledger.route_unknown
    main = next(p for p in found.pools if p.label == "Ecto Till.Repo pool_size")
    assert main.route.host == "till-db"


def test_release_migrate_of_several_repos_holds_two_at_a_time_per_server(tmp_path):
    """Release.migrate runs `for repo <- repos()` (phoenix v1.8.7 release.ex.eex:11-13):
    with_repo starts each with pool_size 2 and stops it before the next (ecto_sql v3.14.0
    lib/ecto/migrator.ex:161,817,853-855): 2 on a server at a time, not 2 per repo; a
    repo on another server holds its own 2 there."""
    app = _tree(tmp_path, {"config/runtime.exs": TWO_REPOS, "lib/till/repo.ex": TWO_REPO_MODULES,
                           "lib/till/release.ex": MIGRATE})
    job = ("/app/bin/till", "eval", "Till.Release.migrate")
    same = {"DATABASE_URL": "ecto://till@till-db/till",
            "LEDGER_DATABASE_URL": "ecto://till@till-db/till",
            "REPLICA_HOST": "till-replica", "REPLICA_USER": "ro"}
    pools = pools_for_container(container(same, command=job), app).pools
    assert product(pools) == "1 x 2 + 1 x 2 = 4"  # till-db's 2, till-replica's 2
    assert "Till.LedgerRepo migrates after it" in pools[0].note
    assert [p.route.host for p in pools] == ["till-db", "till-replica"]
