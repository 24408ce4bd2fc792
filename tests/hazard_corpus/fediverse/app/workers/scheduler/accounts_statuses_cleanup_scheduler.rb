class Scheduler::AccountsStatusesCleanupScheduler
  include Sidekiq::Worker

  def perform
    return if under_load?
    with_redis_lock("cleanup") { cleanup! } # safe: Redis lock, not PostgreSQL
    ActiveRecord::Base.connection.execute("SET statement_timeout = '5min'") # expect: PA401 session SET from a Sidekiq job
  end
end
