"""What a custom image is built FROM (advisor.read.apps.locate): the Dockerfile's last
stage, followed through stage names and ARG defaults, matched to an image by its
skaffold/compose build context or its folder's name; and the PostgreSQL URL found in a
variable of any name (advisor.read.apps.urls)."""

from __future__ import annotations

import pytest

from advisor.model import EnvVar, Source
from advisor.read.apps.locate import BuildHints, built_from, dockerfile_base
from advisor.read.apps.urls import route_from_env


@pytest.mark.parametrize(("text", "expected"), [
    ("FROM postgres:16.4-alpine\nCOPY init/ /docker-entrypoint-initdb.d/\n",
     ("postgres:16.4-alpine", 1)),
    # the last stage counts; a stage name is followed to its image
    ("FROM golang:1.22 AS build\nRUN go build\nFROM gcr.io/distroless/static\n",
     ("gcr.io/distroless/static", 3)),
    ("FROM postgres:15 AS db\nRUN true\nFROM db\n", ("postgres:15", 3)),
    # ARG defaults before the first FROM; --platform flags; continuation lines
    ("ARG PG_MAJOR=17\nFROM --platform=$BUILDPLATFORM postgres:${PG_MAJOR}-bookworm\n",
     ("postgres:17-bookworm", 2)),
    ("# db\nFROM postgres:16 \\\n    AS base\nRUN apk add x \\\n  y\nFROM base\n",
     ("postgres:16", 6)),
    ("ARG IMAGE\nFROM $IMAGE\n", None),  # no default: not known
    ("RUN echo no from\n", None),
])
def test_dockerfile_base(text: str, expected):
    assert dockerfile_base(text) == expected


HINTS = BuildHints(
    contexts=(("ledger-db", "src/ledger/ledger-db", "src/ledger/ledger-db/skaffold.yaml"),),
    bases=(("src/ledger/ledger-db", "postgres:16", "src/ledger/ledger-db/Dockerfile", 1),
           ("src/accounts/accounts-db", "postgres:15", "src/accounts/accounts-db/Dockerfile", 2),
           ("a/web", "python:3.12", "a/web/Dockerfile", 1),
           ("b/web", "node:20", "b/web/Dockerfile", 1)))


def test_built_from_by_context_then_by_folder_name():
    assert built_from(HINTS, "registry.example.com/boa/ledger-db:v1@sha256:ab") == (
        "postgres:16", "src/ledger/ledger-db/Dockerfile", 1)
    assert built_from(HINTS, "accounts-db:v2") == (
        "postgres:15", "src/accounts/accounts-db/Dockerfile", 2)
    assert built_from(HINTS, "web:1") is None  # two folders named web: not a guess
    assert built_from(HINTS, "orders:1") is None


def _env(**values: str) -> tuple[EnvVar, ...]:
    return tuple(EnvVar(name=k, value=v, source=Source(path="k8s/app.yaml", line=i))
                 for i, (k, v) in enumerate(values.items(), 1))


def test_a_postgres_url_in_a_variable_of_any_name_is_the_route():
    route = route_from_env(_env(PORT="8080",
                                ACCOUNTS_DB_URI="postgresql://u:p@accounts-db:5432/accounts"))
    assert route is not None and route.host == "accounts-db" and route.dbname == "accounts"
    assert route.source.key == "ACCOUNTS_DB_URI"
    route = route_from_env(_env(LEDGER_JDBC="jdbc:postgresql://ledger-db:5432/ledger"))
    assert route is not None and route.host == "ledger-db"


def test_two_postgres_urls_are_not_one_route():
    """Airflow: the metadata database and Celery's result backend; a client has one
    route here, and picking one would drop the other's pool from the pooler's pairs."""
    assert route_from_env(_env(
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="postgresql://a@pgbouncer:6543/meta",
        AIRFLOW__CELERY__RESULT_BACKEND="db+postgresql://a@pgbouncer:6543/results")) is None


def test_skaffold_profiles_and_jib_modules(tmp_path):
    """Artifacts under profiles count; a Jib artifact builds the module `jib.project`
    of the build at its context (bank-of-anthos: context ../../../, project
    src/ledger/balancereader), so that module is the application's folder."""
    from advisor.read.apps.locate import _contexts
    from advisor.read.fs import Root

    folder = tmp_path / "src" / "ledger" / "balancereader"
    folder.mkdir(parents=True)
    (folder / "skaffold.yaml").write_text(
        "apiVersion: skaffold/v4beta1\nkind: Config\nbuild:\n  artifacts:\n"
        "  - image: balancereader\n    context: ../../../\n    jib:\n"
        "      project: src/ledger/balancereader\n      type: maven\n"
        "profiles:\n- name: dev\n  build:\n    artifacts:\n    - image: ledger-db\n"
        "      context: ../ledger-db\n")
    found = _contexts(Root.of(tmp_path), str(folder / "skaffold.yaml"), "src/ledger/balancereader")
    assert [(image, ctx) for image, ctx, _ in found] == [
        ("balancereader", "src/ledger/balancereader"), ("ledger-db", "src/ledger/ledger-db")]
