"""Audit 42 D5, in the shape of sima94/rust-microservices-architecture (written here in our
own words): a virtual Cargo workspace at the root (members auth-service/, user-service/,
shared/), a Kafka and a ZooKeeper of Confluent's images beside two PostgreSQL servers,
and each service deployed by a chart whose Secret leaves DATABASE_URL "" for the deploy
script to fill. Before: the Confluent images were given the root workspace (every
member's sqlx pools) and named as the clients that "may connect"; the services, whose
URL was empty, were named nowhere. Now: a virtual workspace root is no application, a
Confluent image is a published program, and an empty connection variable is a client
whose server is not known."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.locate import virtual_cargo_workspace
from tests.tree_helpers import POSTGRES_DB, write

WORKSPACE = """[workspace]
members = ["auth-service", "shared"]
resolver = "2"

[workspace.dependencies]
sqlx = { version = "0.8", features = ["postgres", "runtime-tokio"] }
"""
MEMBER = """[package]
name = "auth-service"
version = "0.1.0"
edition = "2021"

[dependencies]
sqlx = { workspace = true }
"""
DB_RS = """use sqlx::postgres::PgPoolOptions;

pub async fn pool(url: &str, max_size: u32) -> sqlx::PgPool {
    PgPoolOptions::new().max_connections(max_size).connect(url).await.unwrap()
}
"""
BROKER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: broker}
spec:
  template:
    spec:
      containers:
        - name: broker
          image: confluentinc/cp-kafka:7.5.0
          env: [{name: KAFKA_BROKER_ID, value: "1"}]
"""
SERVICE = """
apiVersion: v1
kind: Secret
metadata: {name: auth}
stringData: {DATABASE_URL: ""}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: auth}
spec:
  template:
    spec:
      containers:
        - name: auth
          image: auth-service-arm64:latest
          envFrom: [{secretRef: {name: auth}}]
"""


def _files(*manifests: str) -> dict[str, str]:
    files = {"Cargo.toml": WORKSPACE, "auth-service/Cargo.toml": MEMBER,
             "auth-service/src/db.rs": DB_RS, "auth-service/Dockerfile": "FROM rust:1.80\n",
             "shared/Cargo.toml": MEMBER.replace("auth-service", "shared"),
             "shared/src/lib.rs": DB_RS, "k8s/db.yaml": POSTGRES_DB}
    files.update({f"k8s/m{i}.yaml": m for i, m in enumerate(manifests)})
    return files


def test_a_published_broker_is_not_given_the_workspace_root(tmp_path):
    write(tmp_path, _files(BROKER))
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert not any("broker" in n for n in result.notices), result.notices
    assert budget.fits and budget.peak == 0 and budget.unplaced_clients == [], budget


def test_an_empty_database_url_is_a_client_whose_server_is_not_known(tmp_path):
    write(tmp_path, _files(BROKER, SERVICE))
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert not budget.fits and budget.unplaced_clients == ["auth"], budget
    assert any(n.startswith("Deployment/auth: container auth is given DATABASE_URL empty")
               for n in result.notices), result.notices


def test_virtual_cargo_workspace():
    assert virtual_cargo_workspace(WORKSPACE)
    assert not virtual_cargo_workspace(MEMBER)
    # a root package with its workspace builds the root's program
    assert not virtual_cargo_workspace(MEMBER + '\n[workspace]\nmembers = ["x"]\n')
    assert not virtual_cargo_workspace("[workspace\n")


def test_a_virtual_workspace_root_is_no_image_s_source(tmp_path):
    """An image of an owner no list knows: the root's virtual manifest is not its
    program (before, every member's pools were read for it)."""
    write(tmp_path, _files(BROKER.replace("confluentinc/cp-kafka:7.5.0", "streamco/broker:1")))
    result = run_check([str(tmp_path)], CheckOptions())
    assert not any("inferred as ./" in n for n in result.notices), result.notices
