class ApiController < ApplicationController
  around_action :api_call_timeout

  def api_call_timeout
    ActiveRecord::Base.connection.execute("SET statement_timeout = #{Settings.api_timeout * 1000}") # expect: PA401 interpolated session SET
    yield
  end

  def map
    flash[:notice] = "Set your home location" # safe: flash message
    render plain: "Execute the query again" # safe: response text
  end

  def changeset_upload
    Changeset.transaction do
      Changeset.connection.execute("SET LOCAL lock_timeout = '10s'") # safe: PA401 SET LOCAL
      Changeset.connection.execute("LOCK TABLE current_nodes IN SHARE MODE") # safe: lock in transaction
    end
  end
end
