"""Mattermost's database config store and its MySQL setups (advisor/read/apps/
mattermost.py). Audit h5 on mattermost/mattermost-helm (mattermost-team-edition): the
chart always sets MM_CONFIG to a DSN, so Mattermost keeps its configuration in that
database on a pool of its own, SetMaxOpenConns(2) (server/config/database.go): 2 pods x
(300 + 2) = 604, not 600; and with the chart's defaults (MySQL) it was budgeted as a
PostgreSQL client of 300 per pod."""

from __future__ import annotations

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=1000")
PG_DSN = "postgres://mmuser:pw@db:5432/mattermost?sslmode=disable"
MYSQL_DSN = "mysql://mmuser:pw@tcp(mysql:3306)/mattermost?charset=utf8mb4"


def mattermost(env: dict[str, str], image: str =
               "mattermost/mattermost-team-edition:11.6.1") -> str:
    lines = "".join(f"            - {{name: {k}, value: \"{v}\"}}\n" for k, v in env.items())
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: mattermost}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: mattermost
          image: {image}
          env:
{lines}"""


def _clients(root):
    return {c.name: c for c in scan([str(root)], CheckOptions(cache=False)).topology.clients}


def _peak(root) -> float:
    result = run_check([str(root)], CheckOptions(cache=False))
    (budget,) = [b for b in result.budgets if b.server == "db"]
    return budget.peak


def test_a_database_config_store_opens_a_pool_of_2(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/mm.yaml": mattermost({"MM_CONFIG": PG_DSN})})
    pools = {p.label: p for p in _clients(tmp_path)["mattermost"].pools}
    assert set(pools) == {"Mattermost SqlSettings.MaxOpenConns",
                          "Mattermost database config store (SetMaxOpenConns(2))"}
    store = pools["Mattermost database config store (SetMaxOpenConns(2))"]
    assert (store.size.value, store.bound) == (2, "fixed")
    assert "server/config/database.go" in store.size.source.default
    assert {p.route.host for p in pools.values()} == {"db"}
    assert _peak(tmp_path) == 2 * (300 + 2)


def test_a_config_file_opens_no_store_pool(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/mm.yaml": mattermost(
        {"MM_CONFIG": "/mattermost/config/config.json",
         "MM_SQLSETTINGS_DATASOURCE": PG_DSN})})
    assert _peak(tmp_path) == 2 * 300


def test_before_5_32_the_store_pool_had_no_limit(tmp_path):
    """SetMaxOpenConns(2) came in 5.32.0 (mattermost-server #16512)."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/mm.yaml": mattermost(
        {"MM_CONFIG": PG_DSN}, image="mattermost/mattermost-team-edition:5.31.9")})
    pools = {p.label: p for p in _clients(tmp_path)["mattermost"].pools}
    assert pools["Mattermost database config store (SetMaxOpenConns(2))"].bound == \
        "unbounded"


def test_mysql_is_no_postgresql_client(tmp_path):
    """The chart's defaults: MM_CONFIG a mysql:// DSN and no driver setting: MySQL."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/mm.yaml": mattermost({"MM_CONFIG": MYSQL_DSN})})
    assert "mattermost" not in _clients(tmp_path)
    assert _peak(tmp_path) == 0
    # the application's database on PostgreSQL, its configuration on MySQL: only the
    # application's pool is on this server
    write(tmp_path, {"k8s/mm.yaml": mattermost({
        "MM_CONFIG": MYSQL_DSN, "MM_SQLSETTINGS_DRIVERNAME": "postgres",
        "MM_SQLSETTINGS_DATASOURCE": PG_DSN})})
    (pool,) = _clients(tmp_path)["mattermost"].pools
    assert pool.label == "Mattermost SqlSettings.MaxOpenConns" and pool.size.value == 300
    write(tmp_path, {"k8s/mm.yaml": mattermost({"MM_SQLSETTINGS_DRIVERNAME": "mysql",
                                                "MM_SQLSETTINGS_DATASOURCE": "x"})})
    assert "mattermost" not in _clients(tmp_path)


def test_mm_config_from_a_secret_not_held_is_unknown(tmp_path):
    manifest = mattermost({}).replace("          env:\n", """          env:
            - name: MM_CONFIG
              valueFrom: {secretKeyRef: {name: not-here, key: dsn}}
            - {name: MM_SQLSETTINGS_DATASOURCE, value: "postgres://mm@db/mm"}
""")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/mm.yaml": manifest})
    client = _clients(tmp_path)["mattermost"]
    assert client.pools == [] and "MM_CONFIG" in client.unknown


def test_a_data_source_from_a_secret_is_not_the_store_s_dsn():
    """MM_SQLSETTINGS_DATASOURCE from a Secret (value not held) was taken as unset, so
    the reader routed the application's pools to the config store's DSN. DataSource,
    when set, overrides it: where they open is not known (no route from the reader, and
    it says so: route_unknown, the reason in `unrouted`), and only the store's pool is on
    MM_CONFIG's database."""
    from advisor.model import Container, EnvVar, Source
    from advisor.read.apps import pools_for_container

    at = Source(path="k8s/mm.yaml", line=10)
    c = Container(name="mattermost", image="mattermost/mattermost-team-edition:11.6.1",
                  source=at, env=(
                      EnvVar(name="MM_CONFIG", value=PG_DSN.replace("/mattermost?",
                                                                    "/mmconfig?"), source=at),
                      EnvVar(name="MM_SQLSETTINGS_DATASOURCE", source=at,
                             from_ref="secret:mm-db/dsn", secret=True)))
    found = pools_for_container(c)
    pools = {p.label: p for p in found.pools}
    app = pools["Mattermost SqlSettings.MaxOpenConns"]
    assert app.route is None
    store = pools["Mattermost database config store (SetMaxOpenConns(2))"]
    assert (store.route.host, store.route.dbname) == ("db", "mmconfig")
    assert store.route_unknown == ""
    assert found.unrouted == [app.route_unknown] == [
        "Mattermost SqlSettings.MaxOpenConns: MM_SQLSETTINGS_DATASOURCE (k8s/mm.yaml:10) is "
        "set from a reference whose value is not held here, so where it connects is not "
        "known (SqlSettings.DataSource, which overrides the configuration store's DSN at "
        "k8s/mm.yaml:10)"]
