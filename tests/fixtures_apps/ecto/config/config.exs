import Config

config :shop, Shop.Repo,
  database: "shop_dev",
  pool_size: 5

import_config "#{config_env()}.exs"
