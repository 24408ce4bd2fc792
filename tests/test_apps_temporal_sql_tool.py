"""Temporal's schema tool (advisor.read.apps.temporal sql_tool_run): temporalio/helm-charts'
schema Job runs temporal-sql-tool in its init containers, create-database then
`setup-schema -v 0.0 && update-schema` per store, with SQL_* env. Each run holds one
connection (temporalio/temporal tools/sql/handler.go); the init containers run one after
another: the Job holds one. Only with a PostgreSQL plugin (postgres12, postgres12_pgx):
the tool's default plugin is mysql8."""

from __future__ import annotations

import pytest

from advisor.engine.check import scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write


def _init(name: str, command: str, plugin: str | None, db: str) -> str:
    env = {"SQL_HOST": "db", "SQL_PORT": "5432", "SQL_DATABASE": db, "SQL_USER": "temporal"}
    if plugin is not None:
        env = {"SQL_PLUGIN": plugin, **env}
    lines = "".join(f"            - {{name: {k}, value: \"{v}\"}}\n" for k, v in env.items())
    return f"""\
        - name: {name}
          image: temporalio/admin-tools:1.27.2
          command: {command}
          env:
{lines}"""


def schema_job(plugin: str | None = "postgres12") -> str:
    create = "['temporal-sql-tool', 'create-database']"
    manage = ("['sh', '-c', 'temporal-sql-tool setup-schema -v 0.0 && temporal-sql-tool "
              "update-schema --schema-dir /etc/temporal/schema/postgresql/v12/temporal/"
              "versioned']")
    inits = "".join(_init(f"{what}-{store}-store", command, plugin, db)
                    for store, db in (("default", "temporal"),
                                      ("visibility", "temporal_visibility"))
                    for what, command in (("create", create), ("manage-schema", manage)))
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: temporal-schema}}
spec:
  template:
    spec:
      restartPolicy: OnFailure
      initContainers:
{inits}      containers:
        - name: done
          image: temporalio/admin-tools:1.27.2
          command: ['sh', '-c', 'echo "Store setup completed"']
"""


def _clients(tmp_path, job: str):
    write(tmp_path, {"db.yaml": POSTGRES_DB, "job.yaml": job})
    return scan([str(tmp_path)], CheckOptions(cache=False)).topology


@pytest.mark.parametrize("plugin", ["postgres12", "postgres12_pgx"])
def test_the_schema_job_holds_one_connection_to_the_server_its_env_names(tmp_path, plugin):
    topo = _clients(tmp_path, schema_job(plugin))
    (client,) = [c for c in topo.clients if c.name == "temporal-schema"]
    assert (client.target_kind, client.target_id) == ("server", "StatefulSet/db")
    (pool,) = client.pools  # four runs, one after another: one connection, not four
    assert pool.label == "temporal-sql-tool (create-database)"
    assert pool.size.value == 1
    assert "tools/sql/handler.go" in (pool.size.source.default or "")
    assert pool.route is not None
    assert (pool.route.host, pool.route.port, pool.route.dbname, pool.route.user) == \
        ("db", 5432, "temporal", "temporal")
    assert (pool.route.source.path, pool.route.source.line) == ("job.yaml", 15)  # SQL_HOST
    assert sum(p.per_pod() for p in client.pools) == 1
    assert any("run one after another" in n for n in topo.notices)


@pytest.mark.parametrize("plugin", ["mysql8", None])  # None: the tool's default, mysql8
def test_a_mysql_schema_job_is_no_postgresql_client(tmp_path, plugin):
    topo = _clients(tmp_path, schema_job(plugin))
    assert [c.name for c in topo.clients if c.name == "temporal-schema"] == []
    assert any("with the mysql8 plugin" in n and "not a PostgreSQL client" in n
               for n in topo.notices)


def test_flags_before_the_command_win_over_the_env(tmp_path):
    # the documented form: temporal-sql-tool --plugin postgres12 --ep db -p 5432 --db x ...
    job = schema_job("mysql8").replace(
        "['temporal-sql-tool', 'create-database']",
        "['temporal-sql-tool', '--pl', 'postgres12', '--ep', 'db', '-p', '5432', "
        "'--db=flagged', 'create']")
    topo = _clients(tmp_path, job)
    (client,) = [c for c in topo.clients if c.name == "temporal-schema"]
    (pool,) = client.pools
    assert pool.label == "temporal-sql-tool (create-database)"
    assert pool.route is not None and pool.route.dbname == "flagged"
