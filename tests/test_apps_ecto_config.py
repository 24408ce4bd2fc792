"""Ecto reader: which config files are read at boot and what in them is code."""

from pathlib import Path

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
