"""A corpus of real layouts (issue 12 item 8): each folder of tests/realworld/ is written
by us in the shape of a named public project (its file layout, resource names and the
defaults it ships), never copied. Each test computes the budget by hand, every term
with where it comes from, and asserts that `pool-advisor check --format json` prints
exactly that: usable, peak and who contributes what.

Where the tool is wrong because of another issue's area the test keeps the correct
expectation and is marked xfail(strict=True) with the cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

CORPUS = Path(__file__).resolve().parent / "realworld"

# PostgreSQL defaults used below (PostgreSQL 12-18 docs, runtime-config-connection):
MAX_CONNECTIONS_DEFAULT = 100
SUPERUSER_RESERVED_DEFAULT = 3
# PgBouncer defaults (doc/config.md): default_pool_size 20, reserve_pool_size 0,
# reserve_pool_timeout 5 s, max_db_connections 0 (unlimited).
PGBOUNCER_DEFAULT_POOL_SIZE = 20


def check_json(folder: str, *args: str) -> dict:
    from advisor.cli import app

    result = CliRunner().invoke(app, ["check", str(CORPUS / folder), "--format", "json",
                                      *args])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output[result.output.index("{"):])


def budgets(report: dict) -> dict[str, dict]:
    return {b["server"]: b for b in report["budgets"]}


def contributions(budget: dict) -> dict[str, float]:
    return {c["who"]: c["total"] for c in budget["terms"]["contributions"]}


def test_cnpg_samples():
    b = budgets(check_json("cnpg-samples"))
    primary, replicas = b["cluster-example"], b["cluster-example replicas"]
    # usable = max_connections "200" (cluster-example.yaml spec.postgresql.parameters)
    #          - 3 superuser_reserved_connections (PostgreSQL 16 default)
    assert primary["usable"] == 200 - SUPERUSER_RESERVED_DEFAULT == 197
    # web: 3 replicas (app.yaml) x HikariCP 10 (SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE);
    #   its jdbc-uri comes from the operator's cluster-example-app Secret -> cluster-example-rw
    # pooler-example-rw: 2 instances (poolers.yaml) x default_pool_size "25" for the one
    #   pair its client names (worker: database app from its URL, user app from the Secret)
    assert contributions(primary) == {"web": 3 * 10, "pooler-example-rw": 2 * 25}
    assert primary["peak"] == 30 + 50 == 80
    # replicas: instances 3 - 1 primary = 2 standbys behind cluster-example-ro
    # pooler-example-ro: 1 instance x default_pool_size 20 (PgBouncer default): no client
    #   names a pair, so one (database, user) pair is assumed, never 0
    assert contributions(replicas) == {"pooler-example-ro": 1 * PGBOUNCER_DEFAULT_POOL_SIZE}
    assert replicas["total_peak"] == 20
    assert replicas["peak"] == 20 / 2 == 10  # spread over the 2 standbys


def test_crunchy_examples_keycloak_through_pgbouncer():
    b = budgets(check_json("crunchy-examples"))
    primary = b["keycloakdb"]
    # usable = max_connections 150 (postgres.yaml patroni.dynamicConfiguration) - 3 (PG 16)
    assert primary["usable"] == 150 - SUPERUSER_RESERVED_DEFAULT
    # keycloakdb-pgbouncer: 2 replicas (proxy.pgBouncer.replicas) x default_pool_size "15"
    #   (config.global) for one pair: Keycloak reads host, database and user from the
    #   operator's keycloakdb-pguser-keycloakdb Secret (PGO's default user and database
    #   are named like the cluster); Keycloak itself talks to PgBouncer, not the server
    assert contributions(primary) == {"keycloakdb-pgbouncer": 2 * 15}
    assert primary["peak"] == 30
    # instances[0].replicas 2 = 1 primary + 1 standby; nothing reads from the standby
    assert b["keycloakdb replicas"]["peak"] == 0


def test_zalando_manifests_pooler_and_direct_client():
    b = budgets(check_json("zalando-manifests"))
    primary = b["acid-minimal-cluster"]
    # usable = max_connections "120" (spec.postgresql.parameters) - 3 (PG 16 default)
    assert primary["usable"] == 117
    # acid-minimal-cluster-pooler: connectionPooler.numberOfInstances 2; per pod the
    #   operator sets max_db_connections = maxDBConnections 60 (default) // 2 = 30,
    #   default_pool_size = 30 // 2 = 15, reserve_pool_size = min_pool_size = 15 // 2 = 7;
    #   one pair (foo from DB_NAME, foo_user from the operator's credentials Secret):
    #   min(15 + 7, 30) = 22 per pod x 2 pods = 44
    # foo-reports: 2 replicas x HikariCP 10 straight to the acid-minimal-cluster Service
    assert contributions(primary) == {"acid-minimal-cluster-pooler": 2 * min(15 + 7, 30),
                                      "foo-reports": 2 * 10}
    assert primary["peak"] == 64
