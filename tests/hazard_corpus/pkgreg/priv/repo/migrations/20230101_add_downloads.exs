defmodule Pkgreg.RepoBase.Migrations.AddDownloads do
  use Ecto.Migration

  def up do
    execute "SET lock_timeout TO '5s'" # expect: PA401 migration SET
    execute """
    CREATE TEMP TABLE tmp_downloads (package_id int, downloads int) -- expect: PA406 session temp table in a migration
    """
    execute "CREATE INDEX downloads_day_idx ON downloads (day)" # safe: DDL
  end
end
