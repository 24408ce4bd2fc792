"""Spring Boot R2DBC pools (audit 7a D3): spring.r2dbc.url and spring.r2dbc.pool.*."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product

_YML = "src/main/resources/application.yml"


def _app(tmp: Path, text: str, rel: str = _YML):
    path = tmp / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return scan_app_dir(Root.of(tmp), "")


_BASE = ("spring:\n"
         "  r2dbc:\n"
         "    url: r2dbc:postgresql://ledger-db:5432/ledger\n"
         "    username: ledger\n")


def test_max_size_from_the_yaml_with_its_route(tmp_path):
    app = _app(tmp_path, _BASE + "    pool:\n      max-size: 25\n")
    found = pools_for_container(container(), app)
    (pool,) = found.pools
    assert pool.label == "R2DBC pool max-size" and product(found.pools) == "1 x 25 = 25"
    assert pool.size.source.label() == _YML + ":6"
    assert (pool.route.host, pool.route.user) == ("ledger-db", "ledger")


def test_spring_boot_default_and_env_override(tmp_path):
    app = _app(tmp_path, _BASE)
    (pool,) = pools_for_container(container(), app).pools
    assert int(pool.size.value) == 10 and pool.bound == "default"
    assert "R2dbcProperties.Pool" in pool.size.source.label()
    env = container({"SPRING_R2DBC_POOL_MAXSIZE": "40"})
    assert product(pools_for_container(env, app).pools) == "1 x 40 = 40"


def test_url_from_env_only(tmp_path):
    app = _app(tmp_path, "spring:\n  application:\n    name: ledger\n")
    env = container({"SPRING_R2DBC_URL": "r2dbc:postgresql://ledger-db:5432/ledger"})
    (pool,) = pools_for_container(env, app).pools
    assert int(pool.size.value) == 10 and pool.route.host == "ledger-db"


def test_pool_url_takes_its_own_max_size(tmp_path):
    app = _app(tmp_path, "spring.r2dbc.url=r2dbc:pool:postgresql://ledger-db:5432/ledger"
                         "?maxSize=7\n", "src/main/resources/application.properties")
    (pool,) = pools_for_container(container(), app).pools
    assert int(pool.size.value) == 7 and pool.route.host == "ledger-db"


def test_pooling_disabled_is_unbounded(tmp_path):
    app = _app(tmp_path, _BASE + "    pool:\n      enabled: false\n")
    (pool,) = pools_for_container(container(), app).pools
    assert pool.bound == "unbounded"


def test_size_from_a_secret_is_unknown(tmp_path):
    from msgspec.structs import replace

    from advisor.model import EnvVar, Source

    app = _app(tmp_path, _BASE + "    pool:\n      max-size: 25\n")
    hidden = EnvVar(name="SPRING_R2DBC_POOL_MAX_SIZE", value=None, secret=True,
                    source=Source(path="k8s/app.yaml", line=30, key="SPRING_R2DBC_POOL_MAX_SIZE"),
                    from_ref="secret:ledger/pool")
    found = pools_for_container(replace(container(), env=(hidden,)), app)
    assert found.pools == [] and found.unknown and "SPRING_R2DBC_POOL_MAX_SIZE" in found.unknown[0]


def test_another_database_is_not_ours(tmp_path):
    app = _app(tmp_path, "spring:\n  r2dbc:\n    url: r2dbc:mysql://db:3306/x\n")
    assert pools_for_container(container(), app).pools == []
