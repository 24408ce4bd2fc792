threads_count = ENV.fetch("RAILS_MAX_THREADS", 3)
threads threads_count, threads_count
worker_count = Integer(ENV.fetch("WEB_CONCURRENCY") { 4 })
workers worker_count if worker_count > 1
