defmodule Pkgreg.RepoBase do
  use Ecto.Repo, # expect: PA405 Postgrex default prepare: :named, no prepare: :unnamed in config
    otp_app: :pkgreg,
    adapter: Ecto.Adapters.Postgres
end

defmodule Pkgreg.Repo do
  alias Pkgreg.RepoBase

  def advisory_xact_lock(key) do
    RepoBase.query!("SELECT pg_advisory_xact_lock($1)", [key]) # safe: PA403 xact lock
  end

  def try_advisory_lock?(key) do
    %Postgrex.Result{rows: [[result]]} =
      RepoBase.query!(
        "SELECT pg_try_advisory_lock($1)", # expect: PA403 session lock in a helper
        [key]
      )

    result
  end

  def advisory_unlock(key) do
    RepoBase.query!("SELECT pg_advisory_unlock($1)", [key]) # expect: PA403 unlock
  end

  def refresh_view(source) do
    query = ~s(REFRESH MATERIALIZED VIEW CONCURRENTLY "#{source}") # safe: plain statement
    RepoBase.query!(query, [])
  end

  def set_timeout do
    RepoBase.query!("SET statement_timeout TO 60000") # expect: PA401 session SET
  end
end
