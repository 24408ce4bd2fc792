"""Where each pool of a client connects, and host variables that name a pooler.

A node-postgres Pool whose connectionString is a variable set from a Secret the
repository does not hold connects where the repository does not say: it is never put on
the URL another variable of the container names (the container's other pool's). The
shape of a Node backend with a primary `pool` (DATABASE_URL from a Secret) and a
`readPool` (DATABASE_URL_READ written out): both were charged to the read target, 2 x 30
= 60 > 47 usable (PA101), where 30 is known and the rest may go anywhere.

A host variable whose name says nothing of a database (PG_BOUNCER_HOST, beside the
POSTGRES_HOST of the server) links when its value is exactly the Service of a server or
pooler here: the pooler was said to have no client."""

from __future__ import annotations

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, deployment, write

NODE_APP = {
    "backend/package.json": '{"name": "api", "dependencies": {"pg": "8.11.3"}}\n',
    "backend/Dockerfile": 'FROM node:20-alpine\nCOPY . .\nCMD ["node", "src/index.js"]\n',
    "backend/src/index.js": "require('./db');\n",
}
PRIMARY_AND_READ = """
const { Pool } = require('pg');
const primary = new Pool({ connectionString: process.env.DATABASE_URL, max: 15 });
const replica = new Pool({ connectionString: process.env.DATABASE_URL_READ, max: 15 });
module.exports = { primary, replica };
"""
# the URL read through the app's config object (a zod schema parsed from process.env)
THROUGH_CONFIG = """
import pg from 'pg';
import { config } from './config.js';
export const primary = new pg.Pool({ connectionString: config.DATABASE_URL, max: 15 });
export const replica = new pg.Pool({ connectionString: config.DATABASE_URL_READ, max: 15 });
"""
API_ENV = {"DATABASE_URL": None, "DATABASE_URL_READ": "postgresql://app:pw@db:5432/app"}


def _check(root):
    result = run_check([str(root)], CheckOptions(cache=False))
    return result, {b.server: b for b in result.budgets}


def _node_tree(tmp_path, db_js: str, env: dict[str, str | None]):
    return write(tmp_path, {**NODE_APP, "backend/src/db.js": db_js,
                            "k8s/db.yaml": POSTGRES_DB,
                            "k8s/api.yaml": deployment("api", "ghcr.io/acme/api:1", env)})


def _unrouted_notice(result, line: int) -> bool:
    return (f"Deployment/api: node-postgres Pool: DATABASE_URL (k8s/api.yaml:{line}) is set "
            "from a reference whose value is not held here, so where it connects is not "
            "known: it may connect to any server here, so each peak is a floor (declare "
            "[[workloads]] target)") in result.notices


def test_a_pool_on_a_secret_url_is_not_put_on_the_other_pool_s_server(tmp_path):
    result, budgets = _check(_node_tree(tmp_path, PRIMARY_AND_READ, API_ENV))
    db = budgets["db"]
    assert [(c.who, c.total) for c in db.contributions] == [("api", 30)]
    assert db.peak == 30 and db.peak_is_floor and db.unplaced_clients == ["api"]
    assert not db.fits and not [f for f in result.findings if f.code == "PA101"]
    assert _unrouted_notice(result, 14)
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    lost = next(c for c in topo.clients if c.id == "Deployment/api>unknown-database")
    assert [(p.size.value, p.route) for p in lost.pools] == [(15, None)]


def test_the_url_read_through_a_config_object_is_that_variable(tmp_path):
    """`config.DATABASE_URL`: the container's DATABASE_URL (from a Secret here), and
    `config.DATABASE_URL_READ` its written URL."""
    result, budgets = _check(_node_tree(tmp_path, THROUGH_CONFIG, API_ENV))
    db = budgets["db"]
    assert [(c.who, c.total) for c in db.contributions] == [("api", 30)]
    assert db.peak_is_floor and db.unplaced_clients == ["api"]
    assert _unrouted_notice(result, 14)


def test_a_config_member_the_container_does_not_set_is_not_read(tmp_path):
    """`max: config.DB_POOL_MAX` with no DB_POOL_MAX in the env: the config schema may
    give it a default not read here, so the size is unknown, not pg-pool's 10."""
    db_js = THROUGH_CONFIG.replace("config.DATABASE_URL, max: 15 ",
                                   "config.DATABASE_URL, max: config.DB_POOL_MAX ")
    _, budgets = _check(_node_tree(tmp_path, db_js, {
        "DATABASE_URL": "postgresql://app:pw@db:5432/app"}))
    db = budgets["db"]
    assert db.unknown_clients == ["api"]


def test_a_written_url_still_routes_both_pools(tmp_path):
    """Both URLs written out to the same server: both pools there, as before."""
    _, budgets = _check(_node_tree(tmp_path, PRIMARY_AND_READ, {
        "DATABASE_URL": "postgresql://app:pw@db:5432/app",
        "DATABASE_URL_READ": "postgresql://app:pw@db:5432/app"}))
    db = budgets["db"]
    assert db.peak == 60 and not db.peak_is_floor and not db.unplaced_clients


BOUNCER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: pg-bouncer}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: pg-bouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:v1.22.1-p0
          env:
            - {name: DB_HOST, value: "db"}
            - {name: DEFAULT_POOL_SIZE, value: "10"}
---
apiVersion: v1
kind: Service
metadata: {name: pg-bouncer}
spec:
  selector: {app: pg-bouncer}
"""


def _bouncer_tree(tmp_path, env: dict[str, str | None]):
    return write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/bouncer.yaml": BOUNCER,
                            "k8s/pachd.yaml": deployment("pachd", "acme/pachd:2", env)})


def _parts(root) -> dict[str, tuple[str | None, str | None]]:
    topo = scan([str(root)], CheckOptions(cache=False)).topology
    return {c.id: (c.target_id, c.route.source.key if c.route else None)
            for c in topo.clients if c.name == "pachd"}


BOTH = {"POSTGRES_HOST": "db", "POSTGRES_PORT": "5432", "PG_BOUNCER_HOST": "pg-bouncer",
        "PG_BOUNCER_PORT": "5432", "LOKI_SERVICE_HOST": "loki"}


def test_a_pooler_named_by_a_host_variable_has_that_client(tmp_path):
    result, _ = _check(_bouncer_tree(tmp_path, BOTH))
    assert _parts(tmp_path) == {
        "Deployment/pachd": ("StatefulSet/db", "POSTGRES_HOST"),
        "Deployment/pachd>Deployment/pg-bouncer": ("Deployment/pg-bouncer", "PG_BOUNCER_HOST")}
    assert ("Deployment/pachd: PG_BOUNCER_HOST = pg-bouncer (k8s/pachd.yaml:16) is the "
            "Service of pooler Deployment/pg-bouncer: counted as a connection to it (a host "
            "variable whose value is a PostgreSQL server's or pooler's Service here); its "
            "database and user are not read") in result.notices


def test_a_host_variable_alone_links_the_workload(tmp_path):
    _check(_bouncer_tree(tmp_path, {"PG_BOUNCER_HOST": "pg-bouncer.default.svc"}))
    assert _parts(tmp_path) == {"Deployment/pachd": ("Deployment/pg-bouncer",
                                                     "PG_BOUNCER_HOST")}


def test_host_values_that_are_not_exactly_a_service_do_not_link(tmp_path):
    """A host of no server or pooler here, a template left to expand, an address, a
    bare Service name in a variable whose name does not end in HOST (too common a value
    to be a database address: hosts._endpoint_route wants its port): none links."""
    _check(_bouncer_tree(tmp_path, {"PG_BOUNCER_HOST": "pg-bouncer-2",
                                    "CACHE_HOST": "$(PG_BOUNCER)", "LOKI_HOST": "loki",
                                    "ADDR_HOST": "10.0.0.7", "UPSTREAM": "pg-bouncer"}))
    assert _parts(tmp_path) == {}


def test_a_host_variable_to_the_target_already_reached_adds_no_route(tmp_path):
    """PG_BOUNCER_HOST naming the server POSTGRES_HOST names: one route, no part with an
    unknown (database, user) beside it."""
    _check(_bouncer_tree(tmp_path, {"POSTGRES_HOST": "db", "PG_BOUNCER_HOST": "db"}))
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    (client,) = [c for c in topo.clients if c.name == "pachd"]
    assert client.target_id == "StatefulSet/db" and client.extra_routes == []


def test_a_lone_pool_on_a_secret_url_is_said_unplaced_once(tmp_path):
    """No other URL to fall back to: the pool is unplaced as before, with no second
    notice that its variable is not held."""
    db_js = PRIMARY_AND_READ.split("const replica")[0] + "module.exports = { primary };\n"
    result, budgets = _check(_node_tree(tmp_path, db_js, {"DATABASE_URL": None}))
    assert budgets["db"].unplaced_clients == ["api"]
    assert not _unrouted_notice(result, 14)


def test_a_pooler_host_variable_does_not_place_a_pool_on_a_secret_url(tmp_path):
    """PG_BOUNCER_HOST beside a pool whose DATABASE_URL is in a Secret not held: the pool
    is not put on the pooler (it may go straight to db); the variable is a further
    route of unknown size, and db's peak is a floor, never "fits"."""
    db_js = PRIMARY_AND_READ.split("const replica")[0] + "module.exports = { primary };\n"
    write(tmp_path, {"k8s/bouncer.yaml": BOUNCER})
    _, budgets = _check(_node_tree(tmp_path, db_js, {
        "DATABASE_URL": None, "PG_BOUNCER_HOST": "pg-bouncer"}))
    db = budgets["db"]
    assert not db.fits and db.peak_is_floor and db.unplaced_clients == ["api"]
    # the pooler's own pool only: api's 2 x 15 is not behind it
    assert [(c.who, c.total) for c in db.contributions] == [("pg-bouncer", 10)]
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    on_bouncer = [c for c in topo.clients if c.target_id == "Deployment/pg-bouncer"]
    assert [(c.id, [p.size.value for p in c.pools]) for c in on_bouncer] == [
        ("Deployment/api>Deployment/pg-bouncer", [])]


def _scraper_tree(tmp_path, env: dict[str, str | None]):
    svc = POSTGRES_DB.replace(
        "  selector: {app: db}\n",
        "  selector: {app: db}\n  ports: [{name: pg, port: 5432}, {name: metrics, port: 9187},"
        " {port: 15432, targetPort: 5432}]\n", 1)
    return write(tmp_path, {"k8s/db.yaml": svc,
                            "k8s/pachd.yaml": deployment("pachd", "acme/pachd:2", env)})


def test_a_host_variable_with_another_port_or_purpose_does_not_link(tmp_path):
    """EXPORTER_HOST=db with EXPORTER_PORT=9187 (a scraper of the metrics exporter), a
    prefix whose sibling port is the Service's metrics port, a bare HOST/PORT (the app's
    own listen address), REDIS_HOST: none is a PostgreSQL connection."""
    _check(_scraper_tree(tmp_path, {"EXPORTER_HOST": "db", "EXPORTER_PORT": "9187",
                                    "STORE_HOST": "db", "STORE_PORT": "9187",
                                    "HOST": "db", "PORT": "8080", "REDIS_HOST": "db"}))
    assert _parts(tmp_path) == {}


def test_a_host_variable_with_a_port_to_postgres_links(tmp_path):
    """The sibling port a Service port whose target is 5432 (15432 -> 5432): linked."""
    _check(_scraper_tree(tmp_path, {"STORE_HOST": "db", "STORE_PORT": "15432"}))
    assert _parts(tmp_path) == {"Deployment/pachd": ("StatefulSet/db", "STORE_HOST")}
