import Config

config :pkgreg2, Pkgreg2.Repo,
  url: System.fetch_env!("DATABASE_URL"),
  pool_size: String.to_integer(System.get_env("POOL_SIZE", "10")),
  prepare: :unnamed
