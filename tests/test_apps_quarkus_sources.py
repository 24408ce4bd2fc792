"""Quarkus configuration sources and extensions (audit 7a D2, D4, D5): application.yaml,
the environment named like the property, and which pools the build's extensions make."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product

_POM = """<project>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def _dep(artifact: str) -> str:
    return (f"    <dependency>\n      <groupId>io.quarkus</groupId>\n"
            f"      <artifactId>{artifact}</artifactId>\n    </dependency>")


def _app(tmp: Path, files: dict[str, str], extensions: tuple[str, ...] = ()):
    if extensions:
        (tmp / "pom.xml").write_text(_POM.format(deps="\n".join(_dep(e) for e in extensions)))
    for rel, text in files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return scan_app_dir(Root.of(tmp), "")


_RES = "src/main/resources/"


def test_application_yaml_is_read_with_its_profile(tmp_path):
    app = _app(tmp_path, {_RES + "application.yml": (
        "quarkus:\n"
        "  datasource:\n"
        "    db-kind: postgresql\n"
        "    reactive:\n"
        "      url: postgresql://fleet-db:5432/fleet\n"
        "      max-size: 12\n"
        '"%prod":\n'
        "  quarkus:\n"
        "    datasource:\n"
        "      reactive:\n"
        "        max-size: 30\n")}, ("quarkus-reactive-pg-client",))
    found = pools_for_container(container(), app)
    (pool,) = found.pools
    assert pool.label == "Quarkus reactive max-size" and product(found.pools) == "1 x 30 = 30"
    assert pool.size.source.label() == _RES + "application.yml:11"
    assert pool.route.host == "fleet-db"
    dev = pools_for_container(container({"QUARKUS_PROFILE": "dev"}), app)
    assert product(dev.pools) == "1 x 12 = 12"


def test_yaml_beats_properties_in_the_jar(tmp_path):
    """application.yaml 255 over application.properties 250, even over its %prod. key."""
    app = _app(tmp_path, {
        _RES + "application.properties": "quarkus.datasource.db-kind=postgresql\n"
                                         "%prod.quarkus.datasource.jdbc.max-size=8\n",
        _RES + "application.yaml": "quarkus:\n  datasource:\n    jdbc:\n      max-size: 14\n"},
        ("quarkus-jdbc-postgresql",))
    (pool,) = pools_for_container(container(), app).pools
    assert int(pool.size.value) == 14 and pool.size.source.label().endswith("application.yaml:4")


def test_reactive_only_service_has_no_agroal_pool(tmp_path):
    app = _app(tmp_path, {_RES + "application.properties": (
        "quarkus.datasource.db-kind=postgresql\n"
        "quarkus.datasource.reactive.url=postgresql://heroes-db:5432/heroes\n"
        "quarkus.datasource.reactive.max-size=40\n")},
        ("quarkus-reactive-pg-client", "quarkus-hibernate-reactive-panache"))
    found = pools_for_container(container(), app)
    assert [p.label for p in found.pools] == ["Quarkus reactive max-size"]
    assert product(found.pools) == "1 x 40 = 40"


def test_both_extensions_make_both_pools(tmp_path):
    props = "quarkus.datasource.db-kind=postgresql\n"
    app = _app(tmp_path, {_RES + "application.properties": props},
               ("quarkus-jdbc-postgresql", "quarkus-reactive-pg-client"))
    found = pools_for_container(container(), app)
    assert [p.label for p in found.pools] == ["Quarkus jdbc max-size", "Quarkus reactive max-size"]
    assert product(found.pools) == "1 x 20 + 1 x 20 = 40"
    assert all(p.bound == "default" for p in found.pools)


def test_jdbc_keys_without_a_jdbc_extension_make_no_pool(tmp_path):
    app = _app(tmp_path, {_RES + "application.properties": (
        "quarkus.datasource.jdbc.url=jdbc:postgresql://db:5432/x\n"
        "quarkus.datasource.reactive.url=postgresql://db:5432/x\n")},
        ("quarkus-reactive-pg-client",))
    found = pools_for_container(container(), app)
    assert [p.label for p in found.pools] == ["Quarkus reactive max-size"]
    assert any("names no quarkus-jdbc-postgresql" in n for n in found.notices)


def test_url_from_an_env_key_named_like_the_property(tmp_path):
    """A ConfigMap key `quarkus.datasource.jdbc.url` loaded through envFrom: the
    datasource exists, with Agroal's default 20 (no key in application.properties)."""
    app = _app(tmp_path, {_RES + "application.properties": "quarkus.http.port=8084\n"},
               ("quarkus-hibernate-orm-panache", "quarkus-jdbc-postgresql"))
    env = container({"quarkus.datasource.jdbc.url": "jdbc:postgresql://villains-db:5432/v"})
    found = pools_for_container(env, app)
    (pool,) = found.pools
    assert pool.label == "Quarkus jdbc max-size" and pool.bound == "default"
    assert pool.route.host == "villains-db"
    assert pool.route.source.label() == "k8s/app.yaml:10"
    sized = container({"quarkus.datasource.jdbc.url": "jdbc:postgresql://villains-db:5432/v",
                       "QUARKUS_DATASOURCE_JDBC_MAX_SIZE": "7"})
    assert product(pools_for_container(sized, app).pools) == "1 x 7 = 7"
    dotted = container({"quarkus.datasource.jdbc.url": "jdbc:postgresql://villains-db:5432/v",
                        "quarkus.datasource.jdbc.max-size": "9"})
    assert product(pools_for_container(dotted, app).pools) == "1 x 9 = 9"


def test_env_beats_a_profiled_file_key(tmp_path):
    """The environment (300) beats `%prod.` in application.properties (250)."""
    app = _app(tmp_path, {_RES + "application.properties": (
        "quarkus.datasource.db-kind=postgresql\n%prod.quarkus.datasource.jdbc.max-size=16\n")},
        ("quarkus-jdbc-postgresql",))
    found = pools_for_container(container({"QUARKUS_DATASOURCE_JDBC_MAX_SIZE": "5"}), app)
    assert product(found.pools) == "1 x 5 = 5"


def test_a_non_postgresql_driver_extension_alone_is_not_ours(tmp_path):
    app = _app(tmp_path, {_RES + "application.properties": (
        "quarkus.datasource.jdbc.url=jdbc:mysql://db:3306/x\n")}, ("quarkus-jdbc-mysql",))
    assert pools_for_container(container(), app).pools == []


def test_a_max_size_not_read_as_a_number_is_unknown_not_20(tmp_path):
    app = _app(tmp_path, {_RES + "application.properties": (
        "quarkus.datasource.db-kind=postgresql\n"
        "quarkus.datasource.jdbc.url=jdbc:postgresql://db:5432/app\n"
        "quarkus.datasource.jdbc.max-size=${POOL_SIZE:16}\n")}, ("quarkus-jdbc-postgresql",))
    found = pools_for_container(container(), app)
    assert found.pools == []
    assert found.unknown == [f"Quarkus jdbc max-size at {_RES}application.properties:3 is "
                             "set to an expression not read statically"]
