"""An image named exactly like the root mix.exs's OTP application is the release built
here, not an official image of that name (audit23 D3, Nor145/phoenixK8s: Deployment runs
phoenixkubernetes:release, mix.exs `app: :phoenixkubernetes`, built by
Dockerfile.release from the `mix release` tarball; the tool said 'no application source
was found' and read none of its Ecto pool_size 20)."""

from __future__ import annotations

import textwrap

from advisor.engine.check import run_check
from tests.test_kustomize_environments import _server
from tests.tree_helpers import write

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: shelfkube-deployment}
spec:
  replicas: 2
  strategy: {rollingUpdate: {maxSurge: 0}}
  selector: {matchLabels: {app: shelfkube}}
  template:
    metadata: {labels: {app: shelfkube}}
    spec:
      containers:
        - name: shelfkube
          image: IMAGE
          args: ["foreground"]
          env:
            - {name: DB_HOSTNAME, value: shelf-db}
"""


def _tree(root, image: str) -> None:
    write(root, {
        "mix.exs": "defmodule Shelfkube.Mixfile do\n  use Mix.Project\n  def project do\n"
                   "    [app: :shelfkube, version: \"0.0.1\", deps: deps()]\n  end\n"
                   "  defp deps, do: [{:phoenix_ecto, \"~> 3.2\"}, {:postgrex, \">= 0.0.0\"}]\n"
                   "end\n",
        "lib/shelfkube/repo.ex": "defmodule Shelfkube.Repo do\n"
                                 "  use Ecto.Repo, otp_app: :shelfkube\nend\n",
        "config/prod.exs": "use Mix.Config\nconfig :shelfkube, Shelfkube.Repo,\n"
                           "  adapter: Ecto.Adapters.Postgres,\n  hostname: \"${DB_HOSTNAME}\",\n"
                           "  pool_size: 15\n",
        "Dockerfile.release": "FROM elixir:1.4.2\nCOPY ./shelfkube.tar.gz ./\n",
        "k8s/app.yaml": APP.replace("IMAGE", image),
        "k8s/db.yaml": textwrap.dedent(_server("shelf-db", 100)),
    })


def test_the_mix_release_s_image_reads_the_root_application(tmp_path):
    _tree(tmp_path, "shelfkube:release")
    r = run_check([tmp_path])
    # 2 replicas (maxSurge 0) x pool_size 15 (config/prod.exs)
    assert {b.server: b.peak for b in r.budgets} == {"shelf-db": 30}


def test_an_official_image_of_another_name_stays_a_published_program(tmp_path):
    _tree(tmp_path, "redis:7")
    r = run_check([tmp_path])
    # 1 connection per pod (unknown client default), not the root application's 15
    assert {b.server: b.peak for b in r.budgets} == {"shelf-db": 2}
