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
# Patroni's own superuser sessions, heartbeat and restapi, on each instance it runs
# (patroni/patroni de6b22c8 patroni/postgresql/__init__.py:94-95, patroni/api.py:1584)
PATRONI_SESSIONS = 2
# PgBouncer defaults (doc/config.md): default_pool_size 20, reserve_pool_size 0,
# reserve_pool_timeout 5 s, max_db_connections 0 (unlimited).
PGBOUNCER_DEFAULT_POOL_SIZE = 20


def check_json(folder: str, *args: str) -> dict:
    from advisor.cli import app

    # Each fixture is a repository of its own (--root): paths are relative to it.
    result = CliRunner().invoke(app, ["check", str(CORPUS / folder), "--format", "json",
                                      "--root", str(CORPUS / folder), *args])
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
    # pooler-example-rw: (2 instances (poolers.yaml) + 1 surge: CloudNativePG leaves the
    #   Deployment's strategy to Kubernetes, 25% rounded up) x default_pool_size "25" for
    #   the one pair its client names (worker: database app from its URL, user app from
    #   the Secret), and as much for the auth_query pool of (postgres,
    #   cnpg_pooler_pgbouncer): the operator's auth_user and auth_dbname: (2 + 1) x 50 =
    #   150 (worker's 32 connections, 4 pods x 8, ask for more than 25 a process: its
    #   clients' bound, advisor.budget.demand, is not lower)
    assert contributions(primary) == {"web": 3 * 10, "pooler-example-rw": (2 + 1) * 50}
    assert primary["peak"] == 30 + 150 == 180
    # replicas: instances 3 - 1 primary = 2 standbys behind cluster-example-ro
    # pooler-example-ro: 1 instance x default_pool_size 20 (PgBouncer default): no client
    #   names a pair, so one (database, user) pair is assumed, never 0
    #   (1 instance + 1 surge), twice: the auth_query pool's lookups run on -ro too
    assert contributions(replicas) == {
        "pooler-example-ro": (1 + 1) * 2 * PGBOUNCER_DEFAULT_POOL_SIZE}
    assert replicas["total_peak"] == 80
    assert replicas["peak"] == 80 / 2 == 40  # spread over the 2 standbys


def test_crunchy_examples_keycloak_through_pgbouncer():
    b = budgets(check_json("crunchy-examples"))
    primary = b["keycloakdb"]
    # usable = max_connections 150 (postgres.yaml patroni.dynamicConfiguration) - 3 (PG 16)
    #   - 2 (Patroni's superuser sessions)
    assert primary["usable"] == 150 - SUPERUSER_RESERVED_DEFAULT - PATRONI_SESSIONS
    # keycloakdb-pgbouncer: (2 replicas (proxy.pgBouncer.replicas) + 1 surge: PGO's
    #   RollingUpdate sets no maxSurge, 25% rounded up) x default_pool_size "15"
    #   (config.global) for one pair: Keycloak reads host, database and user from the
    #   operator's keycloakdb-pguser-keycloakdb Secret (PGO's default user and database
    #   are named like the cluster); Keycloak itself talks to PgBouncer, not the server;
    #   and as much for the auth_query pool of (keycloakdb, _crunchypgbouncer): PGO's
    #   auth_user, no auth_dbname, so the lookups run in the client's database
    assert contributions(primary) == {"keycloakdb-pgbouncer": (2 + 1) * (15 + 15)}
    assert primary["peak"] == 90
    # instances[0].replicas 2 = 1 primary + 1 standby; nothing reads from the standby
    assert b["keycloakdb replicas"]["peak"] == 0


def test_zalando_manifests_pooler_and_direct_client():
    b = budgets(check_json("zalando-manifests"))
    primary = b["acid-minimal-cluster"]
    # usable = max_connections "120" (spec.postgresql.parameters) - 3 (PG 16 default)
    #   - 2 (Patroni's superuser sessions: Spilo runs Patroni)
    assert primary["usable"] == 115
    # acid-minimal-cluster-pooler: connectionPooler.numberOfInstances 2; per pod the
    #   operator sets max_db_connections = maxDBConnections 60 (default) // 2 = 30,
    #   default_pool_size = 30 // 2 = 15, reserve_pool_size = min_pool_size = 15 // 2 = 7;
    #   one pair (foo from DB_NAME, foo_user from the operator's credentials Secret):
    #   min(15 + 7, 30) = 22 per pod x (2 pods + 1 surge: the operator sets no strategy on
    #   the pooler Deployment, Kubernetes' 25% rounded up) = 66; the template's auth_query
    #   pool of (postgres, pooler) (auth_dbname postgres, auth_user=$PGUSER) as much again,
    #   under the postgres database's own max_db_connections 30
    # foo-reports: 2 replicas x HikariCP 10 straight to the acid-minimal-cluster Service
    assert contributions(primary) == {
        "acid-minimal-cluster-pooler": (2 + 1) * 2 * min(15 + 7, 30), "foo-reports": 2 * 10}
    assert primary["peak"] == 152


def test_crunchy_ha_star_only_pgbouncer_assumes_one_pair():
    b = budgets(check_json("crunchy-ha"))
    # usable = max_connections 100 (PostgreSQL default: PGO sets none here) - 3 - 2
    #   (Patroni's superuser sessions)
    assert b["hippo-ha"]["usable"] == \
        MAX_CONNECTIONS_DEFAULT - SUPERUSER_RESERVED_DEFAULT - PATRONI_SESSIONS
    # hippo-ha-pgbouncer: (proxy.pgBouncer.replicas 2 + 1 surge) x default_pool_size 20
    #   (PgBouncer default) for one assumed (database, user) pair: PGO writes only `*`
    #   and no client is in the repository; never 0; and as much for its auth_query
    #   pool (PGO's auth_user _crunchypgbouncer in that database)
    assert contributions(b["hippo-ha"]) == {
        "hippo-ha-pgbouncer": (2 + 1) * 2 * PGBOUNCER_DEFAULT_POOL_SIZE}


def test_posthog_bitnami_pgbouncer_with_hpa():
    b = budgets(check_json("posthog"))["posthog-postgresql"]
    # usable = 100 (no configuration in the Bitnami subchart) - 3 (PG 14 default)
    assert b["usable"] == 97
    # posthog-pgbouncer: HPA maxReplicas 10 + rolling-update surge ceil(10 x 25%) = 3
    #   (Deployment default maxSurge) = 13 pods x default_pool_size 20 (PGBOUNCER_*
    #   sets none: PgBouncer default) for its one database PGBOUNCER_DATABASE=posthog;
    #   the pgbouncer-exporter sidecar is no pooler
    assert contributions(b) == {"posthog-pgbouncer/posthog-pgbouncer": (10 + 3) * 20}
    assert b["peak"] == 260 and b["fits"] is False


def test_supabase_one_server_postgrest_a_client():
    report = check_json("supabase")
    b = budgets(report)
    # one server: supabase/postgres (its init container is no second server); PostgREST,
    # postgres-exporter are clients/tools, not servers
    assert list(b) == ["supabase-supabase-db"]
    # usable = max_connections=150 (-c argument of the db container) - 3 (PG 15 default)
    assert b["supabase-supabase-db"]["usable"] == 147
    # supabase-supabase-rest: 2 replicas x (PGRST_DB_POOL 10 + the schema-cache LISTEN
    # connection, db-channel-enabled by default since v8)
    assert contributions(b["supabase-supabase-db"]) == {"supabase-supabase-rest": 2 * (10 + 1)}


def test_supabase_servers_only():
    b = budgets(check_json("supabase"))
    assert list(b) == ["supabase-supabase-db"]
    assert b["supabase-supabase-db"]["usable"] == 150 - 3


def test_keycloakx_over_budget():
    b = budgets(check_json("keycloakx"))
    # the dbchecker init container (postgres image, pg_isready) is no server
    assert list(b) == ["keycloak-db"]
    # usable = max_connections=60 (-c) - 3 (PG 16 default) = 57
    # keycloak-keycloakx: 2 replicas x KC_DB_POOL_MAX_SIZE 40 = 80 > 57
    assert b["keycloak-db"]["usable"] == 57
    assert contributions(b["keycloak-db"]) == {"keycloak-keycloakx": 2 * 40}
    assert b["keycloak-db"]["fits"] is False


def test_keycloakx_links_and_init_container_is_no_server():
    b = budgets(check_json("keycloakx"))
    assert list(b) == ["keycloak-db"]
    assert "keycloak-keycloakx" in contributions(b["keycloak-db"])


def test_harbor_external_database():
    b = budgets(check_json("harbor"))["harbor-rds"]
    # usable = max_connections 400 (declared in .pool-advisor.toml) - 3 (PG 15 default)
    assert b["usable"] == 397
    # harbor-core: 2 replicas x POSTGRESQL_MAX_OPEN_CONNS 900 (database.maxOpenConns)
    # harbor-exporter: 1 replica x HARBOR_DATABASE_MAX_OPEN_CONNS 900
    assert contributions(b) == {"harbor-core": 2 * 900, "harbor-exporter": 1 * 900}
    assert b["peak"] == 2700 and b["fits"] is False


def test_harbor_internal_database_over():
    b = budgets(check_json("harbor-internal"))
    # one server: harbor-database (goharbor/harbor-db); its init container is none
    assert list(b) == ["harbor-database"]
    # usable = max_connections 1024 (harbor-db entrypoint default, POSTGRES_MAX_CONNECTIONS
    #   unset) - 3 superuser_reserved_connections (PostgreSQL default)
    # harbor-core: 2 replicas x POSTGRESQL_MAX_OPEN_CONNS 900 = 1800 > 1021
    assert b["harbor-database"]["usable"] == 1024 - 3
    assert contributions(b["harbor-database"]) == {"harbor-core": 2 * 900}
    assert b["harbor-database"]["fits"] is False


def test_harbor_db_is_a_server_with_its_entrypoint_default():
    b = budgets(check_json("harbor-internal"))
    assert list(b) == ["harbor-database"]
    assert b["harbor-database"]["max_connections"] == 1024
    assert b["harbor-database"]["usable"] == 1021


def test_mattermost_default_max_open_conns():
    b = budgets(check_json("mattermost"))
    # the init-postgres init container (postgres:13, pg_isready) is no server
    assert list(b) == ["mattermost-postgresql"]
    # usable = max_connections=200 (-c) - 3 (PG 13 default) = 197
    # mattermost: 1 replica x MaxOpenConns 300 (Mattermost default) = 300 > 197
    assert contributions(b["mattermost-postgresql"]) == {
        "mattermost-mattermost-team-edition": 300}


def test_airflow_pgbouncer_ini_from_secret():
    b = budgets(check_json("airflow"))["airflow-postgresql"]
    # usable = POSTGRESQL_MAX_CONNECTIONS "120" (Bitnami image env) - 3 (PG 16 default)
    assert b["usable"] == 117
    # airflow-pgbouncer: 1 replica x (pool_size 10 of airflow-metadata
    #   + pool_size 5 of airflow-result-backend), from pgbouncer.ini in the Secret
    #   airflow-pgbouncer-config (base64 data); reserve_pool_size 0 (default)
    assert contributions(b) == {"airflow-pgbouncer/pgbouncer": 1 * (10 + 5)}


def test_airflow_scheduler_takes_both_its_routes():
    """The scheduler's env holds two PostgreSQL URLs (AIRFLOW__DATABASE__SQL_ALCHEMY_CONN,
    and AIRFLOW__CELERY__RESULT_BACKEND with Celery's db+ prefix), both through
    airflow-pgbouncer: it is a client of that pooler, its size read from the image's
    command (apps/airflow.py: scheduler, DagFileProcessorManager and 2 parsers, 5 + 10
    each), and each URL's (database, user) is a pair the pooler opens a pool for."""
    report = check_json("airflow")
    assert not [f for f in report["findings"] if f["code"] == "PA106"]
    scheduler = [f for f in report["findings"] if f["code"] == "PA104"
                 and f["message"].startswith("airflow-scheduler: Airflow SQLAlchemy pool")]
    assert len(scheduler) == 3, scheduler
    bouncer = budgets(report)["airflow-postgresql"]["terms"]["contributions"][0]
    text = json.dumps(bouncer)
    assert "airflow-metadata/postgres" in text and "airflow-result-backend/postgres" in text
    assert "pairs not given" not in text


def test_mastodon_web_sidekiq_streaming():
    b = budgets(check_json("mastodon"))["mastodon-postgresql"]
    assert b["usable"] == 97  # 100 (Bitnami subchart, no configuration) - 3
    # web: 1 replica x WEB_CONCURRENCY 2 workers x pool MAX_THREADS 5 = 10
    # sidekiq-all-queues: 1 replica x DB_POOL 25 = 25
    # streaming: 1 replica x pg pool max 10 (DB_POOL unset) = 10
    assert contributions(b) == {"mastodon-web": 10, "mastodon-sidekiq-all-queues": 25,
                                "mastodon-streaming": 10}
    assert b["peak"] == 45


def test_temporal_four_services_two_stores():
    b = budgets(check_json("temporal"))["temporal-postgresql"]
    assert b["usable"] == 197  # max_connections=200 (-c) - 3
    # each of frontend, history, matching, worker: 1 replica x (maxConns 20 default store
    #   + maxConns 20 visibility store) = 40
    assert contributions(b) == {f"temporal-{s}": 40
                                for s in ("frontend", "history", "matching", "worker")}
    assert b["peak"] == 160


# Sentry's own uWSGI defaults (sentry/services/http.py SentryHTTPServer: setdefault)
SENTRY_WEB_THREADS_DEFAULT = 2


def test_sentry_worker_and_web_processes():
    report = check_json("sentry")
    b = budgets(report)["sentry-sentry-postgresql"]
    assert b["usable"] == 97  # Bitnami subchart, no configuration: 100 - 3
    # sentry-worker: 2 replicas x 4 Celery processes x 1 Django connection each
    # sentry-web: 1 replica x 3 uWSGI workers (the ConfigMap's SENTRY_WEB_OPTIONS) x 2
    #   threads (Sentry's default), a Django connection per thread (audit G: was 1 x 1)
    assert contributions(b) == {"sentry-worker": 2 * 4 * 1,
                                "sentry-web": 1 * 3 * SENTRY_WEB_THREADS_DEFAULT}


def test_bitnami_postgresql_replication():
    report = check_json("bitnami-postgresql")
    b = budgets(report)
    primary, read = b["pg-postgresql-primary"], b["pg-postgresql-read"]
    # usable = max_connections 300 (postgresql.conf, primary.configuration) - 3 (PG 16
    #   default). override.conf (primary.extendedConfiguration, 250) is mounted at
    #   conf/conf.d/ but not read: the Bitnami image uses a mounted postgresql.conf as it
    #   is, and this one names no include_dir (bitnami/containers@31d94259
    #   libpostgresql.sh postgresql_initialize); the tool says so.
    assert primary["usable"] == 300 - 3
    [unread] = [f for f in report["findings"] if "is not read" in f["message"]]
    assert unread["message"].startswith(
        "ConfigMap pg-postgresql-primary-extended-configuration mounted at "
        "/bitnami/postgresql/conf/conf.d is not read")
    assert (unread["location"]["path"], unread["location"]["line"]) == (
        "rendered/postgresql.yaml", 10)
    # orders: 3 replicas x HikariCP 20 to pg-postgresql-primary (FQDN form)
    assert contributions(primary) == {"orders": 60}
    # read: 2 replicas of pg-postgresql-read, mounting no configuration: 100 - 3;
    #   reports: 2 x HikariCP 30 = 60, spread over 2 = 30 per instance
    assert read["usable"] == 97
    assert contributions(read) == {"reports": 60}
    assert read["peak"] == 30


@pytest.mark.xfail(strict=True, reason="issue 13: nginx unit's process count (NetBox image) "
                   "and Django's one connection per process are not known: the three clients "
                   "are linked (HOST in the mounted netbox.yaml) but their sizes are unknown")
def test_netbox_unit_processes_worker_housekeeping():
    b = budgets(check_json("netbox"))["netbox-postgresql"]
    assert b["usable"] == 97  # Bitnami subchart, no configuration: 100 - 3
    # netbox: 1 replica x 4 unit processes (nginx-unit.json processes.max) x 1 connection
    # netbox-worker: 1 x 1 rqworker process; netbox-housekeeping: 1 run x 1 process
    assert contributions(b) == {"netbox": 4, "netbox-worker": 1, "netbox-housekeeping": 1}
    assert b["peak"] == 6


def test_airflow_chart_renders_pgbouncer_ini_into_a_secret():
    report = check_json("airflow-chart", "--release", "airflow", "--namespace", "default")
    b = budgets(report)["airflow-postgresql"]
    # usable = postgresql.maxConnections 120 (values.yaml -> POSTGRESQL_MAX_CONNECTIONS)
    #          - 3 (PG 16 default)
    assert b["usable"] == 117
    assert b["terms"]["max_connections"]["source"]["path"] == "chart/values.yaml"
    # airflow-pgbouncer: pgbouncer.replicas 2 x (metadataPoolSize 10 + resultBackendPoolSize
    #   5), each the pool_size of its [databases] entry in the pgbouncer.ini that the chart
    #   base64-encodes into the Secret airflow-pgbouncer-config
    assert contributions(b) == {"airflow-pgbouncer": 2 * (10 + 5)}


def test_bitnami_chart_with_vendored_common_library():
    b = budgets(check_json("bitnami-chart", "--release", "shop"))["shop-postgresql"]
    # usable = max_connections = 180 (primary.extendedConfiguration -> override.conf,
    #   values.yaml line 9) - 3 superuser_reserved_connections (PostgreSQL 17 default)
    mc = b["terms"]["max_connections"]["source"]
    assert (mc["path"], mc["line"]) == ("postgresql/values.yaml", 9)
    assert b["usable"] == 177
    # shop-api: 4 replicas x HikariCP 50 = 200 > 177: over by 23
    assert contributions(b) == {"shop-api": 4 * 50}
    assert b["peak"] == 200 and b["fits"] is False


@pytest.mark.parametrize(("folder", "server", "clients"), [
    ("netbox", "netbox-postgresql", ["netbox", "netbox-worker", "netbox-housekeeping"]),
])
def test_clients_configured_by_mounted_files_are_linked_never_fits_by_default(
        folder, server, clients):
    # The host is in a file the pod mounts from a ConfigMap (Sentry DATABASES HOST,
    # NetBox DATABASE HOST): each client is linked to the server, and
    # while its size is unknown the budget is a floor, never "fits".
    b = budgets(check_json(folder))[server]
    assert sorted(b["unknown_clients"]) == sorted(clients)
    assert b["peak_is_floor"] is True and b["fits"] is False


def test_bank_of_anthos_databases_built_from_postgres():
    """The databases run the project's own images (registry/.../ledger-db:v0.6.10), built
    FROM postgres in src/<team>/<db>/Dockerfile: each is a server, its major version read
    from that FROM line; a client's URL variable of any name (ACCOUNTS_DB_URI) links it;
    an application under src/<team>/<service>/ is found by its folder's name."""
    report = check_json("bank-of-anthos")
    by_server = budgets(report)
    assert set(by_server) == {"ledger-db", "accounts-db"}
    ledger = by_server["ledger-db"]
    # FROM postgres:16.4-alpine (the FROM and its continuation start on line 2)
    assert ledger["terms"]["version"]["value"] == 16
    assert ledger["terms"]["version"]["source"]["path"].endswith(
        "src/ledger/ledger-db/Dockerfile")
    assert ledger["terms"]["version"]["source"]["line"] == 2
    assert ledger["usable"] == MAX_CONNECTIONS_DEFAULT - SUPERUSER_RESERVED_DEFAULT
    # ledgerwriter: (1 replica + 1 surge (maxSurge 25% rounded up)) x HikariCP default 10
    # (SPRING_DATASOURCE_URL from ledger-db-config). The StatefulSet ledger-db reads the
    # same ConfigMap but is the server, not a client of itself.
    assert contributions(ledger) == {"ledgerwriter": (1 + 1) * 10}
    accounts = by_server["accounts-db"]
    # ARG PG_MAJOR=15 / FROM postgres:${PG_MAJOR}-bookworm
    assert accounts["terms"]["version"]["value"] == 15
    # userservice: (2 replicas + 1 surge) x 1 gunicorn worker (--threads 2 only) x
    # SQLAlchemy create_engine defaults (pool_size 5 + max_overflow 10)
    assert contributions(accounts) == {"userservice": (2 + 1) * 1 * (5 + 10)}
    assert not [f for f in report["findings"] if f["code"] in ("PA106", "PA107")]


def test_bank_of_anthos_manifests_folder_reads_the_sources_beside_it():
    """`check kubernetes-manifests` in the repository: the databases' Dockerfiles and the
    services' sources are under src/, beside the folder checked; they are found in the
    whole repository, so the budgets are those of the repository's own run (before, the
    databases were not servers and every client was PA107)."""
    from advisor.cli import app

    root = CORPUS / "bank-of-anthos"
    result = CliRunner().invoke(app, ["check", str(root / "kubernetes-manifests"), "--format",
                                      "json", "--root", str(root), "--no-cache"])
    report = json.loads(result.output[result.output.index("{"):])
    whole = budgets(check_json("bank-of-anthos"))
    assert {b: contributions(x) for b, x in budgets(report).items()} == \
        {b: contributions(x) for b, x in whole.items()}
    assert not [f for f in report["findings"] if f["code"] in ("PA106", "PA107")]


def test_temporal_config_with_template_actions(tmp_path):
    """helm-charts 1.x (server 1.31) renders `password: {{ env "..." | quote }}` into
    config_template.yaml, which the server expands at start: read as text, not as a YAML
    flow mapping that failed the whole file (audit A: the four services were 'connections
    per pod unknown', and with the database outside the repository no PA107 at all)."""
    text = (CORPUS / "temporal" / "rendered" / "temporal.yaml").read_text()
    text = text.replace('            user: temporal\n',
                        '            user: temporal\n'
                        '            password: {{ env "TEMPORAL_STORE_PASSWORD" | quote }}\n')
    assert text.count("{{ env") == 2
    (tmp_path / "temporal.yaml").write_text(text)
    report = budgets(check_json_at(tmp_path))
    assert contributions(report["temporal-postgresql"]) == {
        f"temporal-{s}": 40 for s in ("frontend", "history", "matching", "worker")}
    # the database elsewhere: every service is a client of a server the repository lacks
    (tmp_path / "temporal.yaml").write_text(
        text.replace('"temporal-postgresql:5432"', "pg.example.com:5432"))
    report = check_json_at(tmp_path)
    unlinked = [f for f in report["findings"] if f["code"] == "PA107"]
    assert len(unlinked) == 4
    assert "connects to host 'pg.example.com' (temporal.yaml:20)" in unlinked[0]["message"]


def check_json_at(root: Path) -> dict:
    from advisor.cli import app

    result = CliRunner().invoke(app, ["check", str(root), "--format", "json", "--no-cache",
                                      "--root", str(root)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output[result.output.index("{"):])


JOBSERVICE = """---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: harbor-jobservice
spec:
  replicas: 1
  strategy:
    type: Recreate
  template:
    spec:
      containers:
        - name: jobservice
          image: goharbor/harbor-jobservice:v2.11.1
          env:
            - name: CORE_URL
              value: http://harbor-core:80
"""


def test_harbor_jobservice_connects_with_cores_database(tmp_path):
    """Harbor's jobservice loads its database settings from core at start (RestCfgManager,
    then dao.InitDatabase with core's POSTGRESQL_MAX_OPEN_CONNS): a pool of core's size
    in each of its pods, though its own env names no database (audit A: harbor-helm's
    jobservice was in no budget, 1800 where 3600 is right)."""
    text = (CORPUS / "harbor-internal" / "rendered" / "harbor.yaml").read_text()
    (tmp_path / "harbor.yaml").write_text(text + JOBSERVICE)
    report = check_json_at(tmp_path)
    b = budgets(report)["harbor-database"]
    # harbor-core: 2 x 900; harbor-jobservice: 1 x core's 900
    assert contributions(b) == {"harbor-core": 2 * 900, "harbor-jobservice": 900}
    pool = next(c for c in b["terms"]["contributions"] if c["who"] == "harbor-jobservice")
    assert pool["factors"][-1]["source"]["path"] == "harbor.yaml"
    assert pool["factors"][-1]["source"]["line"] == 70  # core's POSTGRESQL_MAX_OPEN_CONNS
    (notice,) = [n for n in report["notices"] if "jobservice" in n]
    assert notice.startswith("harbor-jobservice: Harbor jobservice connects with core's "
                             "database settings (harbor-core, harbor.yaml:")


def test_temporal_store_without_max_conns_cites_its_own_sql_line(tmp_path):
    """Audit K: a store with no maxConns was cited with no line; the first maxConns
    below its name is the next store's (line 34 here, visibility's 20), so the line it
    would be written at is the store's own `sql:` (16)."""
    from advisor.engine.check import scan
    from advisor.engine.options import CheckOptions

    text = (CORPUS / "temporal" / "rendered" / "temporal.yaml").read_text()
    lines = text.splitlines(keepends=True)
    assert lines[22].strip() == "maxConns: 20" and lines[15].strip() == "sql:"
    (tmp_path / "temporal.yaml").write_text("".join([*lines[:22], "\n", *lines[23:]]))
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    pools = [p for c in topo.clients for p in c.pools if "default store" in p.label]
    assert pools and all(p.bound == "unbounded" for p in pools)
    src = pools[0].size.source
    assert (src.path, src.line) == ("temporal.yaml", 16), src
    assert src.key == "persistence.datastores.default.sql.maxConns (not set)"


def test_temporal_config_in_an_escaped_string_is_cited_and_left_at_its_key(tmp_path):
    """config_template.yaml as one escaped string ("persistence:\\n  ..."): both stores'
    maxConns were cited at the key's line + their line in the text, past the ConfigMap;
    they are at the key's line, named, and advise edits nothing there (a host or a
    maxConns), where the first `maxConns: 20` on the line is the default store's
    whichever store it shrinks."""
    import yaml

    from advisor.advise.plan import advise
    from advisor.advise.records import AdviseOptions
    from advisor.scan import load_with_settings

    text = (CORPUS / "temporal" / "rendered" / "temporal.yaml").read_text()
    head, sep, rest = text.partition("---\n")
    config = yaml.safe_load(head)["data"]["config_template.yaml"]
    escaped = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: temporal-config\ndata:\n" \
        f"  config_template.yaml: {json.dumps(config)}\n"
    (tmp_path / "temporal.yaml").write_text(
        escaped + sep + rest.replace("max_connections=200", "max_connections=50"))
    topo, budgets, *_ = load_with_settings([str(tmp_path)])
    sizes = [p.size for c in topo.clients for p in c.pools]
    assert sizes and {(t.source.path, t.source.line) for t in sizes} == {("temporal.yaml", 6)}
    assert {t.source.key for t in sizes} == {
        f"data.config_template.yaml: persistence.datastores.{s}.sql.maxConns"
        for s in ("default", "visibility")}
    for options in (AdviseOptions(), AdviseOptions(new_pooler=False)):
        # the hosts pointed at a new PgBouncer, then the pools shrunk
        proposals = [p for a in advise(topo, budgets, options) for p in a.proposals
                     if p.kind == "client-pool"]
        assert proposals and all(p.edit is None and p.manual for p in proposals), proposals
    assert {p.key for p in proposals} == {t.source.key for t in sizes}


def test_sentry_conf_py_mounted_from_a_configmap_cites_its_own_lines():
    """A Python settings file mounted from a ConfigMap (sentry.conf.py) was cited at its
    own line numbers in the manifest, not the key's line + them: the HOST of DATABASES at
    sentry.yaml:6, a line of the file's header comment, where it is at :18."""
    from advisor.engine.check import scan
    from advisor.engine.options import CheckOptions

    topo = scan([str(CORPUS / "sentry")], CheckOptions(cache=False)).topology
    routes = {p.route.source for c in topo.clients for p in c.pools if p.route is not None}
    assert {(s.path.rsplit("/", 1)[-1], s.line) for s in routes} == {("sentry.yaml", 18)}
    lines = (CORPUS / "sentry" / "rendered" / "sentry.yaml").read_text().splitlines()
    assert lines[17].strip() == '"HOST": "sentry-sentry-postgresql",'


def test_temporal_store_without_max_conns_prints_its_named_default(tmp_path):
    """D7: a store with no maxConns printed 'Temporal default store maxConns = 0', a 0
    the file does not hold; it is the server's default (database/sql's no limit,
    temporalio/temporal v1.31.2 sqlplugin/postgresql/session/session.go:76-77), named in
    the finding and in the budget; a written 0 still prints as written."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from advisor.report import text
    from advisor.rules import load_rules

    lines = (CORPUS / "temporal" / "rendered" / "temporal.yaml").read_text().splitlines(
        keepends=True)
    assert lines[22].strip() == "maxConns: 20" and lines[33].strip() == "maxConns: 20"
    lines[33] = lines[33].replace("20", "0")
    (tmp_path / "temporal.yaml").write_text("".join([*lines[:22], *lines[23:]]))
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    related = {r.message for f in result.findings if f.code == "PA102" for r in f.related}
    assert "Temporal default store maxConns = 0" not in related
    assert ("Temporal default store maxConns: unset, Temporal server default: database/sql "
            "MaxOpenConns 0 = no limit (temporalio/temporal v1.31.2 common/persistence/sql/"
            "sqlplugin/postgresql/session/session.go:76-77 sets it only for maxConns > 0)"
            ) in related
    assert "Temporal visibility store maxConns = 0" in related
    out = text.render(result, load_rules(), verbose=True)
    assert "Temporal default store maxConns: 1 (unset, Temporal server default:" in out
    assert "Temporal visibility store maxConns: 1 (no limit, counted as at least 1" in out
