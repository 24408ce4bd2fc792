class Rubygem < ApplicationRecord
  SEARCH_LABEL = "Execute search" # safe: UI constant, parses as EXECUTE

  def self.with_stats_timeout
    connection.execute("SET statement_timeout = '30s'") # expect: PA401 session SET in model code
    yield
  ensure
    connection.execute("RESET statement_timeout") # expect: PA401 RESET on another server
  end

  def self.refresh_counts
    transaction do
      connection.execute("SET LOCAL statement_timeout = '60s'") # safe: PA401 SET LOCAL in a transaction
      connection.execute("SELECT pg_advisory_xact_lock(17)") # safe: PA403 transaction-level lock
    end
  end

  def self.reorder
    with_advisory_lock("reorder") { true } # expect: PA403 with_advisory_lock default is session level
    with_advisory_lock("reorder-tx", transaction: true) { true } # safe: PA403 transaction: true uses the _xact lock
  end

  def legacy_sql
    sql = "SELECT set_config('app.tenant', '#{id}', false)" # expect: PA401 set_config(..., false) assigned to a name that reaches execute
    self.class.connection.execute(sql)
  end
end
