"""The Dockerfile that builds a workload's image decides what is read for it:
- a Go service in services/<name>/ of a root go.mod whose Dockerfile lives in infra/
  (heilrake/go-microservice's shape) is read from services/<name>/, not from the
  repository's one other application folder (a web/ front end);
- a pod whose image is built by another Dockerfile (a backups image FROM postgres, as
  thechangelog/changelog.com's) is not given the root application's pools;
- the command is taken from the Dockerfile that builds the image (skaffold's
  docker.dockerfile, a Dockerfile named like it), and said not to be taken when no
  Dockerfile is known to build it."""

from __future__ import annotations

from advisor.engine.check import CheckOptions, run_check
from advisor.read.apps.locate import BuildHints, image_dockerfile
from tests.tree_helpers import POSTGRES_DB, write

GO_MOD = "module example.com/shop\n\ngo 1.22\n\nrequire github.com/jackc/pgx/v5 v5.7.1\n"
GO_MAIN = """package main

import (
\t"database/sql"
\t"os"

\t_ "github.com/jackc/pgx/v5/stdlib"
)

func main() {
\tdb, _ := sql.Open("pgx", os.Getenv("DATABASE_URL"))
\tdb.SetMaxOpenConns(12)
\tselect {}
}
"""
ORDERS = """apiVersion: apps/v1
kind: Deployment
metadata: {name: orders}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: orders
          image: shop/orders
          env:
            - {name: DATABASE_URL, value: "postgres://orders@db:5432/orders"}
"""
WEB_APP = {"web/package.json": '{"name": "web", "dependencies": {"next": "14.0.0"}}\n'}


def _notices(result) -> str:
    return "\n".join(result.notices)


def test_a_service_folder_named_like_the_workload_wins_over_the_only_app_folder(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/orders.yaml": ORDERS, **WEB_APP,
                     "go.mod": GO_MOD, "services/orders/cmd/main.go": GO_MAIN,
                     "infra/docker/orders.Dockerfile":
                         "FROM golang:1.22\nCOPY . .\nRUN go build ./services/orders/cmd\n"})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 2 * 12 and budget.unknown_clients == [], _notices(result)
    assert "orders: application source inferred as services/orders/" in _notices(result)
    assert "inferred as web/" not in _notices(result)


def test_a_dockerfile_of_the_image_elsewhere_makes_the_only_app_folder_no_guess(tmp_path):
    # no folder named like it; its Dockerfile (infra/) copies a built binary: web/ is
    # not its source, and it is an unknown client (PA106), not dropped
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/orders.yaml": ORDERS, **WEB_APP,
                     "go.mod": GO_MOD, "backend/main.go": GO_MAIN, "build/.keep": "",
                     "infra/docker/orders.Dockerfile":
                         "FROM alpine\nADD build build\nENTRYPOINT build/orders\n"})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == ["orders"], _notices(result)
    assert "inferred as web/" not in _notices(result)
    assert "orders: application source not inferred: infra/docker/orders.Dockerfile " \
        "builds its image" in _notices(result)


def test_a_dockerfile_of_the_image_that_copies_a_service_folder_decides(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/orders.yaml": ORDERS, **WEB_APP,
                     "go.mod": GO_MOD, "services/ordering/main.go": GO_MAIN,
                     "infra/docker/orders.Dockerfile":
                         "FROM golang:1.22\nCOPY go.mod ./\nCOPY services/ordering ./src\n"})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 2 * 12, _notices(result)
    assert "orders: application source inferred as services/ordering/ " \
        "(infra/docker/orders.Dockerfile builds its image" in _notices(result)


ELIXIR_APP = {
    "mix.exs": ('defmodule Shop.MixProject do\n  use Mix.Project\n'
                '  def project, do: [app: :shop, version: "1.0.0", deps: deps()]\n'
                '  defp deps, do: [{:ecto_sql, "~> 3.9"}, {:postgrex, ">= 0.0.0"}]\nend\n'),
    "config/prod.exs": ('import Config\n\nconfig :shop, Shop.Repo,\n'
                        '  hostname: System.get_env("DB_HOST", "db"),\n  pool_size: 30\n'),
    "lib/shop/repo.ex": ("defmodule Shop.Repo do\n  use Ecto.Repo, otp_app: :shop, "
                         "adapter: Ecto.Adapters.Postgres\nend\n"),
    "docker/app.Dockerfile": "FROM elixir:1.15\nCOPY . .\nCMD [\"/app/bin/shop\", \"start\"]\n",
    "docker/dump_to_s3": "#!/bin/sh\npg_dump \"$PGDATABASE\" | aws s3 cp - s3://b/x\n",
}
APP_AND_BACKUP = """apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: example/shop:main
          env:
            - {name: DB_HOST, value: db}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: dump
              image: example/backups:2024
              command: ["dump_to_s3"]
              env:
                - {name: PGHOST, value: db}
"""


def _backup_run(tmp_path, backups_dockerfile: str):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/all.yaml": APP_AND_BACKUP,
                     **ELIXIR_APP, "docker/backups.Dockerfile": backups_dockerfile})
    return run_check([str(tmp_path)], CheckOptions(cache=False))


def test_a_backup_image_built_from_postgres_takes_no_pool_of_the_root_app(tmp_path):
    result = _backup_run(tmp_path, "FROM postgres:16\nCOPY dump_to_s3 /usr/local/bin/\n")
    (budget,) = result.budgets
    # app 1 x 30; backup: unknown (at least 1), not the Elixir app's 30
    assert budget.peak == 30 + 1 and budget.unknown_clients == ["backup"], _notices(result)
    assert "CronJob/backup: its image is built by docker/backups.Dockerfile" in \
        _notices(result)
    assert "app: command taken from docker/app.Dockerfile" in _notices(result)


def test_a_backup_image_that_copies_no_application_takes_no_pool_of_it(tmp_path):
    result = _backup_run(tmp_path, "FROM alpine:3.20\nRUN apk add postgresql16-client\n"
                                   "COPY dump_to_s3 /usr/local/bin/\n")
    (budget,) = result.budgets
    assert budget.peak == 30 + 1 and budget.unknown_clients == ["backup"], _notices(result)


def test_the_command_is_not_taken_from_a_dockerfile_of_another_image(tmp_path):
    # the app's image is named like no Dockerfile: neither is taken (backups.Dockerfile,
    # first by name, was), and that is said
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB,
                     "k8s/all.yaml": APP_AND_BACKUP.replace("name: app}", "name: site}"),
                     **{k: v for k, v in ELIXIR_APP.items() if k != "docker/app.Dockerfile"},
                     "docker/production.Dockerfile": "FROM elixir:1.15\nCMD mix phx.server\n",
                     "docker/backups.Dockerfile": "FROM postgres:16\nCMD sleep infinity\n"})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    text = _notices(result)
    assert "command taken from docker/backups.Dockerfile" not in text
    assert "app: command not taken from a Dockerfile: none of its Dockerfiles " \
        "(docker/backups.Dockerfile, docker/production.Dockerfile) is named for " \
        "example/shop:main" in text


SKAFFOLD = """apiVersion: skaffold/v2beta28
kind: Config
build:
  artifacts:
  - image: acme/{name}
    context: ..
    docker:
      dockerfile: ./{name}/Dockerfile
"""
MIGRATE = """apiVersion: batch/v1
kind: Job
metadata: {name: migrate-db}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate-db
          image: acme/migrate-db
          env:
            - {name: DATABASE_URL, value: "postgres://app@db:5432/app"}
"""


def test_the_command_comes_from_the_dockerfile_the_skaffold_build_names(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/migrate.yaml": MIGRATE,
                     "Cargo.toml": '[workspace]\nmembers = ["api", "migrate-db"]\n',
                     "api/skaffold.yaml": SKAFFOLD.format(name="api"),
                     "api/Dockerfile": "FROM rust:1.80\nCMD [\"./api\"]\n",
                     "migrate-db/skaffold.yaml": SKAFFOLD.format(name="migrate-db"),
                     "migrate-db/Dockerfile": "FROM rust:1.80\nCMD [\"./migrate-db\"]\n"})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    text = _notices(result)
    assert "migrate-db: command taken from migrate-db/Dockerfile" in text, text
    assert "command taken from api/Dockerfile" not in text


def test_image_dockerfile_prefers_the_build_that_names_it_and_else_the_file_name():
    hints = BuildHints(dockerfiles=(("acme/api", "api/Dockerfile", "skaffold.yaml"),),
                       dockerfile_files=(("api/Dockerfile", "rust:1.80"),
                                         ("docker/backups.Dockerfile", "postgres:16"),
                                         ("docker/Dockerfile.worker", "python:3.12")))
    assert image_dockerfile(hints, ["acme/api:1.0"], {"api"}).path == "api/Dockerfile"
    built = image_dockerfile(hints, ["acme/backups:2024"], {"backup"})
    assert built.path == "docker/backups.Dockerfile" and built.base == "postgres:16"
    assert image_dockerfile(hints, ["acme/x"], {"worker"}).path == "docker/Dockerfile.worker"
    assert image_dockerfile(hints, ["acme/web"], {"web"}) is None
