module Replication
  STATE_QUERY = "SELECT pg_try_advisory_lock(1)" # expect: PA403 constant named *QUERY holds a session lock

  def self.run
    conn = PG.connect(ENV["DATABASE_URL"])
    conn.exec(STATE_QUERY)
    conn.exec("SET application_name = 'replication'") # expect: PA401 session SET over the pooler
    conn.exec("SELECT set_config('application_name', 'replication', true)") # safe: PA401 set_config local
    conn.exec("LOAD 'auto_explain'") # expect: PA408 LOAD
    puts "Load complete" # safe: output
  end
end
