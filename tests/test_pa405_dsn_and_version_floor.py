"""Audit 9a defects 2-4 (PA405): driver settings in the workload's connection string,
the PgBouncer version of an unversioned image raised by a setting only a newer one
accepts, and postgres.js's default named prepared statements."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.model import BouncerVersion, EnvVar, Source
from tests.rule_pages import write_tree

DB = """\
apiVersion: v1
kind: Service
metadata: {name: postgres}
spec:
  selector: {app: postgres}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: postgres}
spec:
  replicas: 1
  selector: {matchLabels: {app: postgres}}
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.4
          args: ["-c", "idle_in_transaction_session_timeout=60s"]
"""

BOUNCER = """\
apiVersion: v1
kind: Service
metadata: {name: pgbouncer}
spec:
  selector: {app: pgbouncer}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pgbouncer}
spec:
  replicas: 1
  selector: {matchLabels: {app: pgbouncer}}
  template:
    metadata: {labels: {app: pgbouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: IMAGE
          env:
            - {name: DB_HOST, value: postgres}
            - {name: DB_PORT, value: "5432"}
            - {name: DB_NAME, value: shop}
            - {name: POOL_MODE, value: transaction}
            - {name: DEFAULT_POOL_SIZE, value: "20"}
EXTRA"""

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
        - name: shop
          image: acme/shop:1.0
          env:
            - name: DATABASE_URL
@URL@"""

GO = """\
package main

import (
\t"context"
\t"os"

\t"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
\tcfg, _ := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
\tcfg.MaxConns = 10
\tpool, _ := pgxpool.NewWithConfig(context.Background(), cfg)
\tdefer pool.Close()
}
"""

TS = """\
import postgres from "postgres";

export const sql = postgres(process.env.DATABASE_URL!, OPTIONS);
"""


def _repo(root: Path, *, url: str = "              value: postgres://shop:pw@pgbouncer:5432/shop",
          image: str = "edoburu/pgbouncer:v1.18.0-p0", extra: str = "",
          go: bool = True, options: str = "{ max: 10 }", files: dict[str, str] | None = None
          ) -> Path:
    tree = {
        "k8s/db.yaml": DB,
        "k8s/pgbouncer.yaml": BOUNCER.replace("IMAGE", image).replace("EXTRA", extra),
        "k8s/app.yaml": APP.replace("@URL@", url + "\n"),
        ".pool-advisor.toml": '[[workloads]]\nname = "shop"\nsource = "app"\n',
    }
    if go:
        tree["app/go.mod"] = ("module example.com/shop\n\ngo 1.22\n\n"
                              "require github.com/jackc/pgx/v5 v5.7.1\n")
        tree["app/main.go"] = GO
    else:
        tree["app/package.json"] = '{"name": "shop", "dependencies": {"postgres": "^3.4.5"}}\n'
        tree["app/src/db.ts"] = TS.replace("OPTIONS", options)
    tree.update(files or {})
    write_tree(root, tree)
    return root


def _pa405(root: Path):
    result = run_check([str(root)], CheckOptions(select=["PA405"]))
    return [f for f in result.findings if f.code == "PA405"], result


# --- 1. pgx's query exec mode in the workload's DSN ------------------------------------


def test_pgx_exec_mode_in_the_env_dsn_clears_pa405(tmp_path):
    plain = _pa405(_repo(tmp_path / "plain"))[0]
    assert len(plain) == 1 and "pgx pgxpool.NewWithConfig" in plain[0].message
    for mode in ("exec", "simple_protocol", "cache_describe"):
        root = _repo(tmp_path / mode, url="              value: postgres://shop:pw@pgbouncer:5432"
                     f"/shop?sslmode=disable&default_query_exec_mode={mode}")
        assert _pa405(root)[0] == [], mode


def test_pgx_describe_exec_in_the_dsn_still_breaks(tmp_path):
    # describe_exec runs the unnamed statement over two round trips (pgx conn.go doc
    # comment): a transaction pooler may switch servers between them
    root = _repo(tmp_path, url="              value: postgres://shop:pw@pgbouncer:5432/shop"
                 "?default_query_exec_mode=describe_exec")
    assert len(_pa405(root)[0]) == 1


def test_pgx_exec_mode_in_a_held_secret_clears_pa405(tmp_path):
    secret = ("apiVersion: v1\nkind: Secret\nmetadata: {name: shop-db}\nstringData:\n"
              "  url: postgres://shop:pw@pgbouncer:5432/shop?default_query_exec_mode=exec\n")
    root = _repo(tmp_path, url="              valueFrom: {secretKeyRef: {name: shop-db, key: url}}",
                 files={"k8s/secret.yaml": secret})
    assert _pa405(root)[0] == []


def test_pgx_dsn_in_a_secret_not_held_says_it_was_not_read(tmp_path):
    root = _repo(tmp_path, url="              valueFrom: {secretKeyRef: {name: shop-db, key: url}}")
    (finding,) = _pa405(root)[0]
    assert "connection string was not read (DATABASE_URL (secret:shop-db/url (not in " \
        "repository))): the setting may be there" in finding.message


def test_route_params_keep_driver_settings_and_never_a_password():
    from advisor.read.apps.urls import route_from_url

    src = Source(path="k8s/app.yaml", line=3)
    route = route_from_url("postgres://u:pw@pgbouncer:5432/shop?password=x&"
                           "default_query_exec_mode=exec&sslmode=disable", src)
    assert route is not None and route.host == "pgbouncer"
    assert "default_query_exec_mode=exec" in route.params
    assert not any("pass" in p or "pw" in p for p in route.params)
    kv = route_from_url("host=pgbouncer dbname=shop password=x default_query_exec_mode=exec", src)
    assert kv is not None and kv.params == ("default_query_exec_mode=exec",)


def test_hidden_dsn_vars_name_the_unread_sources():
    from advisor.read.apps.urls import hidden_dsn_vars

    src = Source(path="k8s/app.yaml", line=3)
    env = [EnvVar(name="DATABASE_URL", source=src, from_ref="secret:db/url (not in repository)",
                  secret=True),
           EnvVar(name="*", source=src, from_ref="secret:env (not in repository)", secret=True),
           EnvVar(name="POD_IP", source=src, from_ref="field:status.podIP"),
           EnvVar(name="DB_URL", value="postgres://db/x", source=src)]
    assert hidden_dsn_vars(env) == ["DATABASE_URL (secret:db/url (not in repository))",
                                    "envFrom secret:env (not in repository)"]


# --- 2. unversioned PgBouncer images --------------------------------------------------

PREPARED = "            - {name: MAX_PREPARED_STATEMENTS, value: \"100\"}\n"
# A `latest` the kubelet may have pulled long ago (IfNotPresent): its version is not known
CACHED_LATEST = "edoburu/pgbouncer:latest\n          imagePullPolicy: IfNotPresent"


def test_latest_image_with_a_1_21_setting_is_at_least_1_21(tmp_path):
    root = _repo(tmp_path, image=CACHED_LATEST, extra=PREPARED)
    topo = scan([str(root)], CheckOptions()).topology
    (pooler,) = topo.poolers
    assert (pooler.version.text, pooler.version.floor) == ("1.21", True)
    assert pooler.version.source.default == (
        "assumed: at least 1.21, because max_prepared_statements is set "
        "(k8s/pgbouncer.yaml:27)")
    assert pooler.settings["max_prepared_statements"].value == 100
    assert _pa405(root)[0] == []


def test_latest_image_without_newer_settings_stays_assumed(tmp_path):
    root = _repo(tmp_path, image=CACHED_LATEST)
    (pooler,) = scan([str(root)], CheckOptions()).topology.poolers
    assert pooler.version.assumed and not pooler.version.floor
    (finding,) = _pa405(root)[0]
    assert "PgBouncer 1.18 (default: assumed: Debian 12 PgBouncer 1.18)" in finding.message


def test_a_floor_version_is_cited_as_assumed(tmp_path):
    root = _repo(tmp_path, image=CACHED_LATEST,
                 extra="            - {name: AUTH_IDENT_FILE, value: /etc/pgbouncer/ident}\n")
    (finding,) = _pa405(root)[0]
    assert ("max_prepared_statements = 0 (default: PgBouncer 1.23 default (version assumed: "
            "at least 1.23, because auth_ident_file is set (k8s/pgbouncer.yaml:27)))"
            in finding.message)


def test_latest_pulled_at_every_start_is_at_least_1_24(tmp_path):
    # audit 36 (go-oidc shape): edoburu/pgbouncer:latest, no imagePullPolicy, so Always:
    # the current release runs, 1.24.0 or later since edoburu/docker-pgbouncer 36ac8ff
    # (2025-01-21), where max_prepared_statements defaults to 200: pgx's named
    # statements are tracked, no PA405 (was: "PgBouncer 1.18 (... assumed ...)")
    root = _repo(tmp_path, image="edoburu/pgbouncer:latest")
    (pooler,) = scan([str(root)], CheckOptions()).topology.poolers
    assert (pooler.version.text, pooler.version.floor) == ("1.24", True)
    assert "edoburu/pgbouncer:latest is pulled at every start" in pooler.version.source.default
    assert _pa405(root)[0] == []
    always = _repo(tmp_path / "always",
                   image="edoburu/pgbouncer\n          imagePullPolicy: Always",
                   extra="            - {name: MAX_PREPARED_STATEMENTS, value: \"0\"}\n")
    (finding,) = _pa405(always)[0]  # tracking turned off by hand: still reported
    assert "max_prepared_statements = 0 (k8s/pgbouncer.yaml:" in finding.message


def test_a_setting_the_images_version_lacks_is_a_notice(tmp_path):
    root = _repo(tmp_path, extra=PREPARED)  # edoburu v1.18.0-p0
    findings, result = _pa405(root)
    assert len(findings) == 1
    assert ("pgbouncer: MAX_PREPARED_STATEMENTS (k8s/pgbouncer.yaml:26) is ignored: "
            "max_prepared_statements is not a setting of PgBouncer 1.18") in "\n".join(
                result.notices)


INI_BOUNCER = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: pgbouncer-ini}
data:
  pgbouncer.ini: |
    [databases]
    shop = host=postgres port=5432 dbname=shop
    [pgbouncer]
    listen_addr = 0.0.0.0
    listen_port = 5432
    pool_mode = transaction
    default_pool_size = 20
    max_prepared_statements = 100
---
apiVersion: v1
kind: Service
metadata: {name: pgbouncer}
spec:
  selector: {app: pgbouncer}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pgbouncer}
spec:
  replicas: 1
  selector: {matchLabels: {app: pgbouncer}}
  template:
    metadata: {labels: {app: pgbouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: pgbouncer/pgbouncer:latest
          volumeMounts: [{name: ini, mountPath: /etc/pgbouncer}]
      volumes:
        - name: ini
          configMap: {name: pgbouncer-ini}
"""


def test_latest_image_with_a_1_21_key_in_its_ini_is_at_least_1_21(tmp_path):
    root = _repo(tmp_path, files={"k8s/pgbouncer.yaml": INI_BOUNCER})
    result = run_check([str(root)], CheckOptions())
    (pooler,) = scan([str(root)], CheckOptions()).topology.poolers
    assert (pooler.version.text, pooler.version.floor) == ("1.21", True)
    assert pooler.version.source.default == (
        "assumed: at least 1.21, because max_prepared_statements is set "
        "(k8s/pgbouncer.yaml:13)")
    # was: PA209 "unknown parameter: pgbouncer/max_prepared_statements" (PgBouncer 1.18
    # would not start with it, so the image is not 1.18), and PA405
    assert [f.code for f in result.findings if f.code in ("PA405", "PA209")] == []


def test_version_floor_takes_the_newest_key_and_leaves_read_versions():
    from advisor.facts.pgbouncer import introduced_in, version_floor

    assert introduced_in("max_prepared_statements") == (1, 21)
    assert introduced_in("client_tls_ciphers") == (1, 18)  # a 1.21 default change only
    assert introduced_in("no_such_key") is None
    src = Source(path="k8s/p.yaml", line=4)
    raised = version_floor(BouncerVersion(), [("pool_mode", src),
                                              ("max_prepared_statements", src),
                                              ("max_db_client_connections", src)])
    assert (raised.text, raised.floor) == ("1.24", True)
    read = BouncerVersion(major=1, minor=18, source=Source(path="k8s/p.yaml", line=2))
    assert version_floor(read, [("max_prepared_statements", src)]) is read


# --- 3. postgres.js -------------------------------------------------------------------


def test_postgresjs_default_prepare_behind_pgbouncer_1_21(tmp_path):
    root = _repo(tmp_path, go=False, image="edoburu/pgbouncer:v1.21.0-p2")
    (finding,) = _pa405(root)[0]
    assert finding.location.path == "app/src/db.ts" and finding.location.line == 3
    assert "postgres.js postgres(): prepare default true" in finding.message
    assert "max_prepared_statements = 0" in finding.message


def test_postgresjs_prepare_false_is_safe(tmp_path):
    for name, options in (("opt", "{ max: 10, prepare: false }"),
                          ("noprep", "{ max: 10, no_prepare: true }")):
        assert _pa405(_repo(tmp_path / name, go=False, options=options))[0] == [], name
    on = _repo(tmp_path / "on", go=False, options="{ max: 10, prepare: true }")
    (finding,) = _pa405(on)[0]
    assert "prepare: true" in finding.message


def test_postgresjs_prepare_false_in_the_env_url_is_safe(tmp_path):
    root = _repo(tmp_path, go=False, url="              value: postgres://shop:pw@pgbouncer:5432"
                 "/shop?prepare=false")
    assert _pa405(root)[0] == []


def test_postgresjs_behind_pgbouncer_that_tracks_statements(tmp_path):
    root = _repo(tmp_path, go=False, image="edoburu/pgbouncer:v1.24.1-p1")
    assert _pa405(root)[0] == []


# --- 4. sqlx (Rust): named prepared statements, whatever its cache capacity ------------

RUST_DB = """\
use sqlx::{postgres::PgPoolOptions, Pool, Postgres};

pub async fn connect(database_url: &str) -> Pool<Postgres> {
    PgPoolOptions::new()
        .max_connections(5)
        .statement_cache_capacity(0)
        .connect(database_url)
        .await
        .expect("Unable to connect")
}
"""


def test_sqlx_behind_a_transaction_pooler_before_1_21_is_pa405(tmp_path):
    """sqlx prepares every query with arguments as a named statement sqlx_s_N (persistent
    defaults to true, prepare() names it: launchbadge/sqlx v0.8.6 sqlx-core/src/query.rs,
    sqlx-postgres/src/connection/executor.rs), and statement_cache_capacity(0) only stops
    the caching: behind PgBouncer 1.18 in transaction mode it is PA405. Before, .rs files
    were not read for driver settings at all (audit 40, audit 36's open item); a test
    module opens its own pool and is not the service's."""
    cargo = ('[package]\nname = "shop"\nversion = "0.1.0"\n\n[dependencies]\n'
             'sqlx = { version = "0.8.6", features = ["postgres", "runtime-tokio"] }\n')
    test_pool = RUST_DB.replace("max_connections(5)", "max_connections(1)")
    root = _repo(tmp_path, go=False, files={
        "app/Cargo.toml": cargo, "app/src/db.rs": RUST_DB,
        "app/src/tests.rs": test_pool, "app/src/repo_test.rs": test_pool,
        "app/src/main.rs": "mod db;\n// let pool = PgPoolOptions::new().connect(url);\n"})
    # (the tree's postgres.js file is another finding: only sqlx's are asked here)
    (finding,) = [f for f in _pa405(root)[0] if "sqlx" in f.message]
    assert "sqlx PgPoolOptions::new()" in finding.message
    assert "named prepared statement (sqlx_s_N)" in finding.message
    assert finding.location.path.endswith("app/src/db.rs") and finding.location.line == 4
    # PgBouncer 1.21+ tracks protocol-level named statements (max_prepared_statements)
    newer = _repo(tmp_path / "newer", go=False, image="edoburu/pgbouncer:v1.23.1-p3",
                  extra="            - {name: MAX_PREPARED_STATEMENTS, value: \"100\"}\n",
                  files={"app/Cargo.toml": cargo, "app/src/db.rs": RUST_DB})
    assert [f for f in _pa405(newer)[0] if "sqlx" in f.message] == []
