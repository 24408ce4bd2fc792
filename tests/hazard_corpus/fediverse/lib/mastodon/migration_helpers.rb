module Mastodon
  module MigrationHelpers
    def disable_statement_timeout
      if ActiveRecord::Base.connection.transaction_open?
        execute("SET LOCAL statement_timeout TO 0") # safe: PA401 SET LOCAL inside the migration's transaction
      else
        execute("SET statement_timeout TO 0") # expect: PA401 session SET outside a transaction
      end
    end

    def with_lock_retries
      execute("SET lock_timeout TO '100ms'") # expect: PA401 session SET
      yield
    ensure
      execute("RESET lock_timeout") # expect: PA401 RESET
    end
  end
end
