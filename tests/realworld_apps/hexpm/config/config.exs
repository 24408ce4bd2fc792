import Config

config :pkgs, Pkgs.Repo,
  migration_timestamps: [type: :utc_datetime_usec]

import_config "#{config_env()}.exs"
