"""Node and Go stacks: per-pod figures written out as processes x pool size."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, containers_of, product

FIX = Path(__file__).parent / "fixtures_apps"


def _app(stack: str):
    return scan_app_dir(Root.of(FIX / stack), "")


def _pools(stack: str, manifest: str, index: int = 0, **kw):
    c = containers_of(FIX / stack, manifest)[index]
    return pools_for_container(c, _app(stack), **kw)


def test_node_postgres_pm2_cluster_primary_and_replica():
    found = _pools("node_pg", "k8s/deployment.yaml")
    assert [p.label for p in found.pools] == ["node-postgres Pool max"] * 2
    primary, replica = found.pools
    # PM2 ecosystem instances 4; primary max from PG_POOL_MAX=15, replica pg-pool default
    assert product(found.pools) == "4 x 15 + 4 x 10 = 100"
    assert primary.processes.source.label() == "ecosystem.config.js:5"
    assert primary.size.source.key == "PG_POOL_MAX"
    assert replica.bound == "default" and replica.size.source.default.startswith("pg-pool")
    assert (primary.route.host, replica.route.host) == ("catalog-db", "catalog-db-ro")


def test_node_postgres_env_unset_falls_to_literal_default():
    found = pools_for_container(container({"DATABASE_URL": "postgres://a@b/c"}), _app("node_pg"))
    assert product(found.pools) == "1 x 10 + 1 x 10 = 20"  # Number(undefined) || 10


def test_prisma_cpu_default_and_connection_limit():
    found = _pools("prisma", "k8s/deployment.yaml", 0, node_cpus=8)
    (pool,) = found.pools
    # node-cpus counts logical CPUs: 8 / 1 thread per core (assumed: no SMT, the larger
    # pool, s26 review F3) = 8 physical cores, 8 x 2 + 1
    assert product(found.pools) == "1 x 17 = 17"
    assert pool.bound == "cpu" and pool.cpu_formula.physical
    assert pool.cpu_formula.at(16) == 33 and pool.cpus.value == 8
    assert pool.cpu_formula.on_node(16) == 33 and pool.cpu_formula.threads_per_core == 1
    assert "on 8 physical cores = 8 node CPUs (default: node-cpus, the configuration)" \
        in pool.note
    assert "1 thread per core (default: assumed threads-per-core 1 (no SMT" in pool.note
    assert pool.route.host == "accounts-db"
    capped = _pools("prisma", "k8s/deployment.yaml", 1)
    assert product(capped.pools) == "1 x 3 = 3"
    assert capped.pools[0].size.source.key == "DATABASE_URL connection_limit"
    assert any("pgbouncer=true" in n for n in capped.notices)


def test_sequelize_pool_max_from_env_default_expression():
    found = _pools("sequelize", "k8s/deployment.yaml")
    (pool,) = found.pools
    assert product(found.pools) == "1 x 8 = 8"  # process.env.DB_POOL_MAX ?? "8"
    assert pool.size.source.label() == "models.js:6"
    with_env = pools_for_container(container({"DB_POOL_MAX": "3"}), _app("sequelize"))
    assert product(with_env.pools) == "1 x 3 = 3"


def test_knexfile_per_node_env():
    app = _app("knex")
    prod = pools_for_container(container({"NODE_ENV": "production",
                                          "DATABASE_URL": "postgres://t@todo-db/todo"}), app)
    assert product(prod.pools) == "1 x 20 = 20"
    assert prod.pools[0].size.source.label() == "knexfile.js:9"
    dev = pools_for_container(container(), app)
    assert product(dev.pools) == "1 x 10 = 10" and dev.pools[0].bound == "default"
    assert dev.pools[0].route.host == "localhost"


def test_typeorm_extra_max_beats_pool_size():
    found = pools_for_container(container({"DATABASE_URL": "postgres://o@orders-db/orders"}),
                                _app("typeorm"))
    (pool,) = found.pools
    assert product(found.pools) == "1 x 25 = 25"
    assert pool.label == "TypeORM extra.max" and pool.route.host == "orders-db"


def test_pgx_default_is_cpu_dependent_and_url_cap():
    found = _pools("pgx", "k8s/deployment.yaml", 0, node_cpus=32)
    (pool,) = found.pools
    assert product(found.pools) == "1 x 32 = 32"
    assert pool.bound == "cpu" and pool.cpu_formula.at(2) == 4
    capped = _pools("pgx", "k8s/deployment.yaml", 1)
    assert product(capped.pools) == "1 x 6 = 6" and capped.pools[0].bound == "fixed"
    assert capped.pools[0].size.source.key == "pool_max_conns"


def test_go_database_sql_without_limit_is_unbounded():
    found = _pools("go_sql", "k8s/deployment.yaml")
    (pool,) = found.pools
    assert pool.bound == "unbounded" and pool.size.value == 0
    assert pool.size.source.label() == "internal/db/db.go:12"
    assert pool.route.host == "notify-db"
    assert found.unbounded == [pool]
