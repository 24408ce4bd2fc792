class AddDownloadIndex < ActiveRecord::Migration[7.1]
  disable_ddl_transaction!

  def up
    execute "SET statement_timeout = 0" # expect: PA401 session SET in a migration run through the pooler
    execute <<~SQL
      CREATE INDEX CONCURRENTLY index_downloads_on_day ON downloads (occurred_at);
    SQL
    execute "SET LOCAL lock_timeout = '5s'" # safe: PA401 SET LOCAL
  end

  def down
    remove_index :downloads, name: "index_downloads_on_day"
  end
end
