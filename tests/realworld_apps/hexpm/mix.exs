defmodule Pkgs.MixProject do
  use Mix.Project

  def project, do: [app: :pkgs, version: "0.1.0", deps: deps()]

  defp deps do
    [
      {:ecto_sql, "~> 3.12"},
      {:postgrex, ">= 0.0.0"}
    ]
  end
end
