"""The HikariCP default's citation (audit 7a D6): no version claimed that the build does
not name; an explicit HikariCP dependency's version when it does."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container

_PROPS = "spring.datasource.url=jdbc:postgresql://billing-db:5432/billing\n"


def _app(tmp: Path, build: dict[str, str]):
    res = tmp / "src/main/resources"
    res.mkdir(parents=True)
    (res / "application.properties").write_text(_PROPS)
    for name, text in build.items():
        (tmp / name).write_text(text)
    return scan_app_dir(Root.of(tmp), "")


def _cited(app) -> str:
    (pool,) = pools_for_container(container(), app).pools
    assert int(pool.size.value) == 10 and pool.bound == "default"
    return pool.size.source.label()


def test_spring_boot_2_7_build_is_not_cited_as_hikaricp_5_or_6(tmp_path):
    pom = ("<project><parent><groupId>org.springframework.boot</groupId>"
           "<artifactId>spring-boot-starter-parent</artifactId><version>2.7.3</version>"
           "</parent><dependencies><dependency><groupId>org.springframework.boot</groupId>"
           "<artifactId>spring-boot-starter-jdbc</artifactId></dependency></dependencies>"
           "</project>\n")
    cited = _cited(_app(tmp_path, {"pom.xml": pom}))
    assert "5.1" not in cited and "6.0" not in cited
    assert "DEFAULT_POOL_SIZE" in cited


def test_an_explicit_hikaricp_dependency_names_the_version(tmp_path):
    pom = ("<project>\n  <dependencies>\n    <dependency>\n"
           "      <groupId>com.zaxxer</groupId>\n"
           "      <artifactId>HikariCP</artifactId>\n"
           "      <version>4.0.3</version>\n    </dependency>\n  </dependencies>\n</project>\n")
    assert "HikariCP 4.0.3 default" in _cited(_app(tmp_path, {"pom.xml": pom}))
    gradle = 'dependencies {\n  implementation "com.zaxxer:HikariCP:5.0.1"\n}\n'
    other = tmp_path / "g"
    other.mkdir()
    cited = _cited(_app(other, {"build.gradle": gradle}))
    assert "HikariCP 5.0.1 default" in cited and "build.gradle:2" in cited
