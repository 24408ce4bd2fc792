namespace :maintenance do
  desc "Reset MFA for a locked-out owner" # safe: rake description, not SQL
  task reset_mfa: :environment do
    puts "Reset complete" # safe: output, not SQL
  end

  desc "Set the download counter from the stats table" # safe: rake description
  task set_downloads: :environment do
    ActiveRecord::Base.connection.execute("SET work_mem = '256MB'") # expect: PA401 session SET from a rake task
    ActiveRecord::Base.connection.execute("UPDATE rubygems SET downloads = 0 WHERE id = 1") # safe: PA401 an UPDATE
    Rails.logger.info "Listen for the job to finish" # safe: log message
  end

  desc "Begin the yank sweep" # safe: rake description that parses as BEGIN
  task yank_sweep: :environment do
    ActiveRecord::Base.connection.select_value("SELECT pg_try_advisory_lock(4242)") # expect: PA403 session advisory lock
    ActiveRecord::Base.connection.select_value("SELECT pg_advisory_unlock(4242)") # expect: PA403 unlock on possibly another server
  end
end
