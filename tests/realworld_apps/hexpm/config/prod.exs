import Config

config :pkgs, Pkgs.Repo,
  ssl: false
