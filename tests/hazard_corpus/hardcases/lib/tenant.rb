module Tenant
  def self.switch(schema)
    ActiveRecord::Base.connection.execute(
      ActiveRecord::Base.sanitize_sql(["SET search_path TO ?", schema]) # expect: PA401 sanitized SET
    )
  end

  def self.switch_local(schema)
    ActiveRecord::Base.transaction do
      ActiveRecord::Base.connection.execute("SET LOCAL search_path TO #{schema}") # safe: PA401 SET LOCAL
    end
  end

  TITLE = "Set tenant" # safe: label
end
