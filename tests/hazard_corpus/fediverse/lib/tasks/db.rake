namespace :db do
  namespace :migrate do
    desc "Setup the db or migrate depending on state of db" # safe: rake description
    task setup: :environment do
      ActiveRecord::Base.connection.execute("SELECT pg_advisory_lock(42)") # expect: PA403 rake task session lock
      Rake::Task["db:migrate"].invoke
    end
  end

  task pre_migration_check: :environment do
    version = ActiveRecord::Base.connection.select_one("SELECT current_setting('server_version_num') AS v")["v"] # safe: reads a setting
    abort "This version requires PostgreSQL 12 or newer" if version.to_i < 120_000 # safe: message
  end
end
