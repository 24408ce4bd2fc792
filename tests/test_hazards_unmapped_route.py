"""Audit 9a defects 1, 5, 6: code tied to no workload is judged only against a pooler it
may run behind; SQL a PostgreSQL image runs from /docker-entrypoint-initdb.d is no client
SQL; golang-migrate's lock is one hazard per constructor call, not per driver import."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.model import Topology
from advisor.read.fs import Root
from advisor.read.sql.extract import scan_sql_sources
from advisor.read.sql.initdb import compose_sources, dockerfile_sources
from advisor.rules._transaction_mode import bypassed_notice, unmapped_poolers
from tests.test_sql_hazards import client, hazard, pooler, run
from tests.tree_helpers import write

pytest.importorskip("pglast")

# --- defect 1: which poolers unmapped code may run behind -----------------------------


def test_unmapped_code_is_not_judged_against_a_pooler_every_placed_client_bypasses():
    direct = client("app", "app", target=None)  # straight to the server
    topo = Topology(poolers=[pooler()], clients=[direct],
                    sql_hazards=[hazard(client_id=None), hazard("protocol-prepare",
                                                                client_id=None)])
    assert unmapped_poolers(topo) == []
    assert run("PA401", topo) == [] and run("PA405", topo) == []
    notice = bypassed_notice(topo)
    assert notice is not None and "PgBouncer pgbouncer (transaction mode" in notice
    assert "no workload of the repository connects through it" in notice
    assert "2 pooling hazard(s)" in notice


def test_unplaced_client_keeps_the_pooler_only_while_its_host_may_be_the_pooler():
    h = [hazard(client_id=None)]

    def lost(host: str | None):
        c = replace(client("app", "app"), target_kind=None, target_id=None)
        pool = replace(c.pools[0], route=replace(c.pools[0].route, host=host))
        return replace(c, pools=[pool])

    direct = replace(client("app", "app", target=None), id="direct", name="direct")
    # a host named here that leads to nothing here (a Service outside the repository)
    # and is not named like the pooler: that workload bypasses the pooler too
    for host, judged in [("postgres", 0), ("db.example.com", 0), (None, 1),
                         ("$(PGBOUNCER_HOST)", 1), ("pgbouncer", 1), ("app-pgbouncer.db", 1)]:
        topo = Topology(poolers=[pooler()], clients=[lost(host), direct], sql_hazards=h)
        assert len(run("PA401", topo)) == judged, host


def test_unmapped_code_still_judged_when_a_client_uses_the_pooler_or_is_unplaced():
    h = [hazard(client_id=None)]
    pooled = Topology(poolers=[pooler()], clients=[client("app", "app")], sql_hazards=h)
    [found] = run("PA401", pooled)
    assert "not mapped to a workload" in found.message
    assert bypassed_notice(pooled) is None
    lost = replace(client("app", "app"), target_kind=None, target_id=None)
    direct = replace(client("app", "app", target=None), id="direct", name="direct")
    unplaced = Topology(poolers=[pooler()], clients=[lost, direct], sql_hazards=h)
    assert len(run("PA401", unplaced)) == 1
    named = Topology(poolers=[pooler()], clients=[direct], sql_hazards=h,
                     unplaced_clients=["k8s/web.yaml.erb (ERB template, not rendered)"])
    assert len(run("PA401", named)) == 1
    # no workload read at all: nothing says the code is not behind the pooler
    assert len(run("PA401", Topology(poolers=[pooler()], sql_hazards=h))) == 1


def test_unmapped_startup_parameter_not_judged_against_a_bypassed_pooler():
    h = [hazard("startup-parameter", client_id=None, detail="options: -c statement_timeout=5s")]
    direct = client("app", "app", target=None)
    assert run("PA410", Topology(poolers=[pooler("session")], clients=[direct],
                                 sql_hazards=h)) == []
    pooled = client("app", "app")
    assert len(run("PA410", Topology(poolers=[pooler("session")], clients=[pooled],
                                     sql_hazards=h))) == 1


# --- an end-to-end repository shaped like audit 9a's repro-3 -------------------------

DB = """\
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: db
          image: postgres:16.4
          args: ["-c", "idle_in_transaction_session_timeout=60s"]
"""
BOUNCER = """\
apiVersion: v1
kind: Service
metadata: {name: bouncer}
spec:
  selector: {app: bouncer}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bouncer}
spec:
  replicas: 1
  selector: {matchLabels: {app: bouncer}}
  template:
    metadata: {labels: {app: bouncer}}
    spec:
      containers:
        - name: bouncer
          image: edoburu/pgbouncer:v1.18.0-p0
          env:
            - {name: DB_HOST, value: db}
            - {name: DB_NAME, value: shop}
            - {name: POOL_MODE, value: transaction}
            - {name: DEFAULT_POOL_SIZE, value: "10"}
"""


def _web(host: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: web
          image: example/shop-web:2.1
          env:
            - {{name: DATABASE_URL, value: "postgres://shop:pw@{host}:5432/shop"}}
"""


def _repo(tmp_path: Path, host: str) -> Path:
    write(tmp_path, {
        "deploy/db.yaml": DB, "deploy/bouncer.yaml": BOUNCER, "deploy/web.yaml": _web(host),
        "jobs/report.py": "import psycopg\n\n\ndef run(dsn):\n"
                          "    with psycopg.connect(dsn) as conn:\n"
                          "        conn.execute(\"SET search_path = reports\")\n",
    })
    return tmp_path


def _check(root: Path):
    return run_check([str(root)], CheckOptions(cache=False, root=root))


def test_repository_whose_only_workload_bypasses_the_pooler(tmp_path):
    result = _check(_repo(tmp_path, "db"))
    assert [f for f in result.findings if f.code.startswith("PA4")] == []
    said = [n for n in result.notices if "no workload of the repository connects through it" in n]
    assert len(said) == 1 and "jobs/report.py" in said[0]


def test_repository_whose_workload_uses_the_pooler_keeps_the_findings(tmp_path):
    result = _check(_repo(tmp_path, "bouncer"))
    codes = sorted(f.code for f in result.findings if f.code.startswith("PA4"))
    assert codes == ["PA401", "PA405"]
    assert not any("no workload of the repository connects through it" in n for n in result.notices)


# --- defect 5: /docker-entrypoint-initdb.d scripts -----------------------------------

INIT_SQL = "CREATE EXTENSION IF NOT EXISTS citext;\nSET timezone = 'UTC';\n"


def test_dockerfile_copy_to_initdb_is_not_client_sql(tmp_path):
    root = _repo(tmp_path, "bouncer")
    write(root, {"db/Dockerfile": "FROM postgres:16.4\n"
                                 "COPY --chown=postgres init/ /docker-entrypoint-initdb.d/\n",
                 "db/init/10-setup.sql": INIT_SQL, "sql/report.sql": INIT_SQL})
    result = _check(root)
    at = sorted(f.location.path for f in result.findings if f.code == "PA401")
    assert at == ["jobs/report.py", "sql/report.sql"]  # not db/init/10-setup.sql
    [said] = [n for n in result.notices if "docker-entrypoint-initdb.d" in n]
    assert said.startswith("db/init/10-setup.sql (db/Dockerfile:2)")


def test_compose_volume_and_generated_configmap_to_initdb(tmp_path):
    root = _repo(tmp_path, "bouncer")
    mounted = DB.replace(
        '          args: ["-c", "idle_in_transaction_session_timeout=60s"]\n',
        '          args: ["-c", "idle_in_transaction_session_timeout=60s"]\n'
        "          volumeMounts: [{name: init, mountPath: /docker-entrypoint-initdb.d}]\n"
        "      volumes: [{name: init, configMap: {name: db-init}}]\n")
    write(root, {
        "deploy/db.yaml": mounted,
        "deploy/kustomization.yaml": "resources: [db.yaml, bouncer.yaml, web.yaml]\n"
                                     "configMapGenerator:\n  - name: db-init\n"
                                     "    files: [01-roles.sql=sql/roles.sql]\n",
        "deploy/sql/roles.sql": INIT_SQL,
        "docker-compose.yml": "services:\n  db:\n    image: postgres:16\n    volumes:\n"
                              "      - ./local/seed.sql:/docker-entrypoint-initdb.d/seed.sql:ro\n",
        "local/seed.sql": INIT_SQL,
    })
    result = _check(root)
    at = sorted(f.location.path for f in result.findings if f.code == "PA401")
    assert at == ["jobs/report.py"]
    [said] = [n for n in result.notices if "docker-entrypoint-initdb.d" in n]
    assert "deploy/sql/roles.sql (deploy/db.yaml:" in said and "local/seed.sql" in said


def test_initdb_sources_read_from_dockerfiles_and_compose():
    assert dockerfile_sources("FROM postgres\nCOPY a.sql b/*.sql /docker-entrypoint-initdb.d/\n"
                              "COPY --from=build /x.sql /docker-entrypoint-initdb.d/\n"
                              'ADD ["c.sql", "/docker-entrypoint-preinitdb.d/"]\n'
                              "COPY app.sql /srv/\n") == [("a.sql", 2), ("b/*.sql", 2),
                                                         ("c.sql", 4)]
    text = ("volumes:\n  - pgdata:/docker-entrypoint-initdb.d\n"
            "  - type: bind\n    source: ./init\n    target: /docker-entrypoint-initdb.d\n")
    assert compose_sources(text) == [("./init", 4)]


# --- defect 6: golang-migrate ---------------------------------------------------------

MIGRATE_GO = """\
package store

import (
	"database/sql"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/postgres"
)

func Migrate(db *sql.DB) error {
	driver, err := postgres.WithInstance(db, &postgres.Config{})
	if err != nil {
		return err
	}
	m, err := migrate.NewWithDatabaseInstance("file://migrations", "postgres", driver)
	if err != nil {
		return err
	}
	return m.Up()
}
"""
REGISTER_GO = """\
package store

import (
	_ "github.com/golang-migrate/migrate/v4/database/postgres"
)
"""
MAIN_GO = """\
package main

import (
	"os"

	gm "github.com/golang-migrate/migrate/v4"
)

func main() {
	m, _ := gm.New("file://migrations", os.Getenv("DATABASE_URL"))
	_ = m.Up()
}
"""


def _lock_lines(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, int]]:
    write(tmp_path, files)
    hazards, _ = scan_sql_sources(Root.of(tmp_path), sorted(files))
    return sorted((h.location.path, h.location.line) for h in hazards
                  if h.kind == "advisory-lock")


def test_golang_migrate_lock_once_per_constructor_not_per_import(tmp_path):
    assert _lock_lines(tmp_path, {"store/migrate.go": MIGRATE_GO,
                                  "store/sql.go": REGISTER_GO}) == [("store/migrate.go", 15)]


def test_golang_migrate_constructor_with_the_driver_registered_elsewhere(tmp_path):
    assert _lock_lines(tmp_path, {"cmd/main.go": MAIN_GO, "store/sql.go": REGISTER_GO}) \
        == [("cmd/main.go", 10)]
    # no postgres/pgx driver anywhere (mysql's, say): no lock of PostgreSQL's is taken
    assert _lock_lines(tmp_path / "other", {"cmd/main.go": MAIN_GO}) == []
