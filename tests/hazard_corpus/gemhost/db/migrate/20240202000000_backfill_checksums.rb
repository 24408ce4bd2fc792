class BackfillChecksums < ActiveRecord::Migration[7.1]
  def up
    say "Set checksum for every version" # safe: migration log message, not SQL
    execute <<~SQL.squish
      CREATE TEMP TABLE checksum_backfill AS SELECT id FROM versions WHERE sha256 IS NULL; -- expect: PA406 temp table without ON COMMIT DROP
    SQL
    execute "CREATE TEMP TABLE scratch (id int) ON COMMIT DROP" # safe: PA406 ON COMMIT DROP
    execute "UPDATE versions SET sha256 = '' WHERE sha256 IS NULL" # safe: PA401 UPDATE ... SET is not a session SET
  end
end
