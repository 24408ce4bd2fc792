class NotifyJob < ApplicationJob
  def perform
    conn = ActiveRecord::Base.connection.raw_connection
    conn.async_exec("LISTEN gem_pushed") # expect: PA402 LISTEN through the pooler
    conn.async_exec("NOTIFY gem_pushed") # safe: PA402 NOTIFY works through a transaction pooler
    conn.exec("PREPARE find_gem AS SELECT * FROM rubygems WHERE id = $1") # expect: PA404 SQL PREPARE
    conn.exec("EXECUTE find_gem(1)") # expect: PA404 EXECUTE of a statement on another server
    conn.exec("DEALLOCATE find_gem") # expect: PA404 DEALLOCATE
    message = "Prepare the gem index" # safe: text, not SQL
    conn.exec_params("SELECT * FROM rubygems WHERE name = $1", ["rails"]) # safe: plain query
  end
end
