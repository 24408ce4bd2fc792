max_threads_count = ENV.fetch('MAX_THREADS') { 5 }.to_i
threads max_threads_count, max_threads_count
environment ENV.fetch('RAILS_ENV') { 'development' }
workers ENV.fetch('WEB_CONCURRENCY') { 2 }.to_i
preload_app!
