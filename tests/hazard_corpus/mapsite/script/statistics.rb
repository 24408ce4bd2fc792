# Daily statistics script run by cron on the web image.
ActiveRecord::Base.connection.execute("SET work_mem = '512MB'") # expect: PA401 script run in production
puts "Set up done" # safe: output
