import Config

config :pkgreg, ecto_repos: [Pkgreg.RepoBase]

config :pkgreg, Pkgreg.RepoBase,
  priv: "priv/repo",
  migration_timestamps: [type: :utc_datetime_usec]

config :logger, :console, format: "Set by config: $message\n" # safe: log format
