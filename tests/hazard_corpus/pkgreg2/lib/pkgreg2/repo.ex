defmodule Pkgreg2.Repo do
  use Ecto.Repo, # safe: PA405 config/runtime.exs sets prepare: :unnamed
    otp_app: :pkgreg2,
    adapter: Ecto.Adapters.Postgres
end

defmodule Pkgreg2.Listener do
  def start_link(opts) do
    {:ok, pid} = Postgrex.Notifications.start_link(opts)
    {:ok, _ref} = Postgrex.Notifications.listen(pid, "package_published") # expect: PA402 LISTEN via Postgrex.Notifications
    {:ok, pid}
  end
end
