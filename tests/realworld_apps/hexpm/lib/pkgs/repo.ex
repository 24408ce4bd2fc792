defmodule Pkgs.Repo do
  use Ecto.Repo,
    otp_app: :pkgs,
    adapter: Ecto.Adapters.Postgres

  def init(_reason, opts) do
    if url = System.get_env("PKGS_DATABASE_URL") do
      pool_size_env = System.get_env("PKGS_DATABASE_POOL_SIZE")
      pool_size = if pool_size_env, do: String.to_integer(pool_size_env), else: opts[:pool_size]
      {:ok, opts |> Keyword.put(:url, url) |> Keyword.put(:pool_size, pool_size)}
    else
      {:ok, opts}
    end
  end
end
