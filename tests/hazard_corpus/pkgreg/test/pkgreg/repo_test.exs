defmodule Pkgreg.RepoTest do
  test "lock" do
    Pkgreg.RepoBase.query!("SELECT pg_advisory_lock(1)") # safe: PA403 tests not scanned
  end
end
