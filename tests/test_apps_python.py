"""Python stacks: each fixture's per-pod figure written out as processes x pool size."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, containers_of, product

FIX = Path(__file__).parent / "fixtures_apps"


def _pools(stack: str, manifest: str, index: int = 0, **kw):
    root = FIX / stack
    app = scan_app_dir(Root.of(root), "")
    c = containers_of(root, manifest)[index]
    return pools_for_container(c, app, **kw)


def test_sqlalchemy_gunicorn_workers():
    found = _pools("sqlalchemy", "k8s/deployment.yaml")
    (pool,) = found.pools
    assert product(found.pools) == "4 x 15 = 60"
    assert pool.processes.source.label() == "k8s/deployment.yaml:14"
    assert pool.processes.source.key == "--workers (args[1])"
    assert pool.size.source.label() == "app/db.py:6"
    assert pool.size.label == "SQLAlchemy pool_size 5 + max_overflow 10"
    assert (pool.route.host, pool.route.port, pool.route.dbname) == (
        "pgbouncer.db.svc", 6432, "orders")
    assert pool.route.source.key == "DATABASE_URL"


def test_flask_sqlalchemy_conf_file_env_and_binds():
    found = _pools("flask", "k8s/deployment.yaml")
    assert [p.label for p in found.pools] == [
        "Flask-SQLAlchemy pool_size + max_overflow",
        "Flask-SQLAlchemy bind reports pool_size + max_overflow"]
    # workers = int(os.environ.get("GUNICORN_WORKERS", "3")) in gunicorn.conf.py, env says 6
    assert product(found.pools) == "6 x 10 + 6 x 10 = 120"
    main, reports = found.pools
    assert main.processes.source.key == "GUNICORN_WORKERS"
    assert main.route.host == "shop-db" and reports.route.host == "reports-db.analytics.svc"


def test_flask_without_env_uses_conf_default():
    root = FIX / "flask"
    app = scan_app_dir(Root.of(root), "")
    found = pools_for_container(container(command=("gunicorn", "shop:create_app()")), app)
    assert product(found.pools) == "3 x 10 + 3 x 10 = 60"
    assert found.pools[0].processes.source.label() == "gunicorn.conf.py:4"


def test_django_settings_module_star_import_pool_and_threads():
    found = _pools("django", "k8s/deployment.yaml")
    assert [p.label for p in found.pools] == [
        "Django default OPTIONS pool max_size", "Django replica (1 connection per thread)"]
    default, replica = found.pools
    # production.py: OPTIONS pool max_size 8; replica: one connection per thread (--threads 4)
    assert product(found.pools) == "3 x 8 + 3 x 4 = 36"
    assert default.size.source.label() == "mysite/settings/production.py:4"
    assert default.route.host == "mysite-db-rw" and replica.route.host == "mysite-db-ro"
    assert default.route.source.key == "DB_HOST"


def test_django_base_settings_from_manage_py():
    root = FIX / "django"
    app = scan_app_dir(Root.of(root), "")
    found = pools_for_container(container(command=("gunicorn", "mysite.wsgi")), app)
    assert product(found.pools) == "1 x 1 + 1 x 1 = 2"
    assert found.pools[0].route.host == "localhost"


def test_psycopg_pool_uvicorn_workers_from_k8s_var():
    found = _pools("psycopg_pool", "k8s/deployment.yaml")
    (pool,) = found.pools
    assert product(found.pools) == "2 x 20 = 40"
    assert pool.processes.source.key == "UVICORN_PROCS"
    assert pool.route.host == "inventory-db" and pool.route.user == "inv"


def test_asyncpg_default_and_dockerfile_command():
    found = _pools("asyncpg", "k8s/deployment.yaml")
    (pool,) = found.pools
    assert product(found.pools) == "3 x 10 = 30"
    assert pool.bound == "default" and found.default_applied == [pool]
    assert pool.processes.source.path == "Dockerfile"
    assert any("command taken from Dockerfile" in n for n in found.notices)
    assert pool.route.host == "events-db"


def test_celery_concurrency_and_cpu_default():
    found = _pools("celery", "k8s/workers.yaml", 0)
    (pool,) = found.pools
    assert product(found.pools) == "8 x 15 = 120"
    assert pool.bound == "default"  # create_engine() without pool arguments
    auto = _pools("celery", "k8s/workers.yaml", 1, node_cpus=16)
    (pool,) = auto.pools
    assert product(auto.pools) == "16 x 15 = 240"
    assert pool.cpu_formula is not None and pool.cpu_formula.applies_to == "processes"
    assert pool.cpu_formula.at(2) == 2 and pool.cpus.value == 16
