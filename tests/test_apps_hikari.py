from pathlib import Path

import pytest

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.spring import canonical, env_names
from advisor.read.fs import Root
from tests.apphelpers import container, containers_of, product

FIXTURE = Path(__file__).parent / "fixtures_apps" / "hikari"


def _app(tmp_path: Path, files: dict[str, str]):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return scan_app_dir(Root.of(tmp_path), "")


def test_fixture_prod_profile_primary_and_replica():
    root = Root.of(FIXTURE)
    app = scan_app_dir(root, "")
    (c,) = containers_of(FIXTURE, "k8s/deployment.yaml")
    found = pools_for_container(c, app)
    assert [p.label for p in found.pools] == [
        "HikariCP maximumPoolSize", "HikariCP maximumPoolSize (app.datasource.replica)"]
    primary, replica = found.pools
    # prod document of application.yml overrides the base document
    assert primary.size.source.label() == "src/main/resources/application.yml:27"
    assert primary.route.host == "orders-db" and primary.route.port == 5432
    assert primary.route.dbname == "orders" and primary.route.user == "checkout"
    # ${REPLICA_POOL_SIZE:4} resolved from the Deployment env
    assert replica.size.source.label() == "k8s/deployment.yaml:19"
    assert replica.route.host == "orders-db-ro" and replica.route.user == "checkout_ro"
    assert product(found.pools) == "1 x 20 + 1 x 6 = 26"


def test_fixture_staging_properties_and_default_profile():
    root = Root.of(FIXTURE)
    app = scan_app_dir(root, "")
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "staging"}), app)
    assert product(found.pools) == "1 x 3 + 1 x 4 = 7"
    assert found.pools[0].size.source.label() == \
        "src/main/resources/application-staging.properties:2"
    assert "placeholder default" in (found.pools[1].size.source.key or "")
    plain = pools_for_container(container(), app)  # "default" profile: base document
    assert product(plain.pools) == "1 x 8 + 1 x 4 = 12"
    # the caller's profile beats the env
    chosen = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "staging"}), app,
                                 profile="prod")
    assert product(chosen.pools) == "1 x 20 + 1 x 4 = 24"


@pytest.mark.parametrize("name", ["SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE",
                                  "SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE"])
def test_env_beats_application_yml(name):
    app = scan_app_dir(Root.of(FIXTURE), "")
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "prod", name: "15"}), app)
    assert found.pools[0].size.value == 15
    assert found.pools[0].size.source.key == name
    assert found.pools[0].bound == "fixed"


def test_precedence_args_over_sysprops_over_env():
    env = {"SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE": "15",
           "JAVA_TOOL_OPTIONS": "-Xmx512m -Dspring.datasource.hikari.maximum-pool-size=16"}
    c = container(env, args=("--spring.datasource.hikari.maximumPoolSize=17",),
                  command=("java", "-jar", "/app.jar"))
    assert pools_for_container(c).pools[0].size.value == 17
    c = container(env, command=("java", "-jar", "/app.jar"))
    assert pools_for_container(c).pools[0].size.value == 16
    c = container({"SPRING_APPLICATION_JSON":
                   '{"spring":{"datasource":{"hikari":{"maximum-pool-size":18}}}}', **env})
    assert pools_for_container(c).pools[0].size.value == 18


def test_default_applied_when_unset(tmp_path):
    app = _app(tmp_path, {"src/main/resources/application.properties":
                          "spring.datasource.url=jdbc:postgresql://db/app\n"})
    found = pools_for_container(container(), app)
    (pool,) = found.pools
    assert pool.size.value == 10 and pool.bound == "default"
    assert "HikariCP" in pool.size.source.label()
    assert found.default_applied == [pool]


def test_env_url_only_and_mysql_skipped(tmp_path):
    found = pools_for_container(container({"SPRING_DATASOURCE_URL":
                                           "jdbc:postgresql://pg.prod.svc:6432/shop"}))
    (pool,) = found.pools
    assert pool.route.host == "pg.prod.svc" and pool.route.port == 6432
    assert pool.route.source.key == "SPRING_DATASOURCE_URL"
    other = pools_for_container(container({"SPRING_DATASOURCE_URL": "jdbc:mysql://m/x"}))
    assert other.pools == [] and any("not a PostgreSQL" in n for n in other.notices)


def test_bad_values_are_problems_with_lines(tmp_path):
    app = _app(tmp_path, {"src/main/resources/application.yml":
                          "spring:\n  datasource:\n    hikari:\n      maximum-pool-size: lots\n"})
    found = pools_for_container(container(), app)
    assert found.pools == []
    (problem,) = found.problems
    assert problem.location.label() == "src/main/resources/application.yml:4"
    assert "Failed to bind" in problem.message
    app = _app(tmp_path, {"src/main/resources/application.yml":
                          "spring:\n  datasource:\n    hikari:\n      maximum-pool-size: 0\n"})
    (problem,) = pools_for_container(container(), app).problems
    assert "cannot be less than 1" in problem.message


def test_broken_yaml_is_a_problem_not_a_traceback(tmp_path):
    app = _app(tmp_path, {"src/main/resources/application.yml": "spring:\n  datasource: [\n"})
    found = pools_for_container(container({"SPRING_DATASOURCE_URL": "jdbc:postgresql://d/x"}),
                                app)
    assert found.problems and found.problems[0].location.path.endswith("application.yml")
    assert found.pools[0].size.value == 10


def test_a_size_from_a_secret_not_in_the_repository_is_unknown_not_the_files(tmp_path):
    """Spring binds the environment over application.yml: a maximumPoolSize variable set
    from a Secret the repository does not hold wins over the file's 12, and its value is
    not known here. The pool's size is unknown (why, for PA106), not 12 nor the default."""
    from advisor.model import Container, EnvVar, Source

    app = _app(tmp_path, {"src/main/resources/application.yml":
                          "spring:\n  datasource:\n    hikari:\n      maximumPoolSize: 12\n"})
    c = Container(name="app", source=Source(path="k.yaml", line=1), env=(
        EnvVar(name="SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE", value=None,
               source=Source(path="k.yaml", line=9), from_ref="secret:db/pool", secret=True),))
    found = pools_for_container(c, app)
    assert found.pools == []
    assert found.unknown == ["HikariCP maximumPoolSize is set by "
                             "SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE (k.yaml:9) from a secret "
                             "or reference whose value is not in the repository"]
    # said once, as unknown: not also a notice that the variable "was not used"
    assert not any("was not used" in n for n in found.notices)
    # without the secret-valued variable, the file's size stands
    plain = Container(name="app", source=Source(path="k.yaml", line=1))
    assert pools_for_container(plain, app).pools[0].size.value == 12
    assert pools_for_container(plain, app).unknown == []


def test_legacy_spring_profiles_document_and_properties_multidoc(tmp_path):
    app = _app(tmp_path, {
        "src/main/resources/application.yml":
            "spring.datasource.url: jdbc:postgresql://db/app\n---\nspring:\n  profiles: prod\n"
            "  datasource.hikari.maximum-pool-size: 30\n",
        "src/main/resources/application.properties":
            "spring.profiles.active=prod\n#---\nspring.config.activate.on-profile=!prod\n"
            "spring.datasource.hikari.maximum-pool-size=2\n",
    })
    (pool,) = pools_for_container(container(), app).pools
    assert pool.size.value == 30


def test_relaxed_names():
    assert canonical("spring.datasource.hikari.maximum-pool-size") == \
        canonical("Spring.DataSource.Hikari.maximumPoolSize") == \
        canonical("spring.datasource.hikari.maximum_pool_size")
    assert env_names("spring.datasource.hikari.maximum-pool-size") == (
        "SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE", "SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE")


def test_hikari_default_matches_source_citation():
    from advisor.read.apps import hikari

    assert hikari.DEFAULT_POOL_SIZE == 10
    assert "DEFAULT_POOL_SIZE = 10" in hikari.__doc__


def test_command_line_only_spring_app():
    c = container(command=("java", "-jar", "/app.jar",
                           "--spring.datasource.url=jdbc:postgresql://pg:5432/x",
                           "--spring.datasource.hikari.maximum-pool-size=12"))
    (pool,) = pools_for_container(c).pools
    assert pool.size.value == 12 and pool.route.host == "pg"
    assert pool.size.source.key == "command[4]"


def test_application_yml_from_a_mounted_configmap_beats_the_jar():
    from advisor.read.apps import mounted_app_file

    app = scan_app_dir(Root.of(FIXTURE), "")
    # k8s/config.yaml: the ConfigMap key application.yml starts on line 8 (offset 7)
    mounted = mounted_app_file("k8s/config.yaml", "application.yml",
                               "spring:\n  datasource:\n    hikari:\n"
                               "      maximum-pool-size: 7\n",
                               mount_path="/workspace/config", line_offset=7)
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "staging"}),
                                app.with_files([mounted]))
    # ./config/application.yml (outside the jar) beats the packaged profile file too
    assert found.pools[0].size.value == 7
    assert found.pools[0].size.source.label() == "k8s/config.yaml:11"


def test_plain_java_hikari_config(tmp_path):
    src = tmp_path / "src/main/java/com/acme/Db.java"
    src.parent.mkdir(parents=True)
    src.write_text("package com.acme;\nimport com.zaxxer.hikari.*;\nclass Db {\n"
                   "  static final int MAX_POOL = 12;\n  HikariDataSource ds() {\n"
                   "    HikariConfig config = new HikariConfig();\n"
                   "    config.setJdbcUrl(System.getenv(\"JDBC_URL\"));\n"
                   "    config.setMaximumPoolSize(MAX_POOL);\n"
                   "    return new HikariDataSource(config);\n  }\n}\n")
    (pool,) = pools_for_container(container(), scan_app_dir(Root.of(tmp_path), "")).pools
    assert pool.size.value == 12
    assert pool.size.source.label() == "src/main/java/com/acme/Db.java:8"


def test_flask_sqlalchemy_2_legacy_keys(tmp_path):
    (tmp_path / "app.py").write_text(
        "from flask_sqlalchemy import SQLAlchemy\ndb = SQLAlchemy()\n"
        "SQLALCHEMY_POOL_SIZE = 3\nSQLALCHEMY_MAX_OVERFLOW = 2\n")
    (pool,) = pools_for_container(container(), scan_app_dir(Root.of(tmp_path), "")).pools
    assert pool.size.value == 5


def test_shell_words_split_as_shlex_does():
    """JAVA_OPTS and `sh -c` words: without a quote or backslash the fast split gives
    shlex.split's words (its whitespace only: not \\v, \\f or no-break spaces); with one,
    shlex itself, and str.split where shlex refuses the text."""
    import random
    import shlex

    from advisor.read.apps.spring import _shell_words

    alphabet = "ab-D=.:/ \t\r\n\x0b\x0c\u00a0\u2003#;&|$()*~'\"\\"
    rng = random.Random(19)
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        try:
            expected = shlex.split(text)
        except ValueError:
            expected = text.split()
        assert _shell_words(text) == expected, repr(text)
    assert _shell_words("-Xmx512m  -Dspring.datasource.hikari.maximum-pool-size=7\t") == \
        ["-Xmx512m", "-Dspring.datasource.hikari.maximum-pool-size=7"]
    assert _shell_words("-Da='b c' -Dd=e\\ f") == ["-Da=b c", "-Dd=e f"]
    assert _shell_words("-Da='open") == ["-Da='open"]


_BOA_URL = "spring:\n  datasource:\n    url: jdbc:postgresql://ledger-db:5432/postgresdb\n"


def test_profile_group_member_file_applies_and_beats_the_group_profile(tmp_path):
    # Spring Boot 2.4+: spring.profiles.group.prod activates proddb after prod
    # (spring-boot f72ea48 Profiles.java expandProfiles), so application-proddb.yml's
    # size is the pool's, even over application-prod.yml's
    app = _app(tmp_path, {
        "src/main/resources/application.yml":
            _BOA_URL + "  profiles:\n    group:\n      prod: [proddb, \"prod-mq\"]\n",
        "src/main/resources/application-prod.yml":
            "spring.datasource.hikari.maximum-pool-size: 20\n",
        "src/main/resources/application-proddb.yml":
            "spring:\n  datasource:\n    hikari:\n      maximum-pool-size: 30\n",
        "src/main/resources/application-prod-mq.properties": "x.y=1\n"})
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "prod"}), app)
    (pool,) = found.pools
    assert pool.size.value == 30
    assert pool.size.source.label() == "src/main/resources/application-proddb.yml:4"
    assert any(n.startswith("Spring profiles prod, proddb, prod-mq (from k8s/app.yaml:10;"
                            " proddb: group prod at src/main/resources/application.yml:6")
               for n in found.notices), found.notices
    # the group's members only come with it
    staging = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "staging"}), app)
    assert staging.pools[0].size.value == 10


def test_profile_group_in_properties_and_of_the_default_profile(tmp_path):
    app = _app(tmp_path, {
        "src/main/resources/application.properties":
            "spring.datasource.url=jdbc:postgresql://db/app\n"
            "spring.profiles.group.default=local-db\n",
        "src/main/resources/application-local-db.properties":
            "spring.datasource.hikari.maximumPoolSize=4\n"})
    assert pools_for_container(container(), app).pools[0].size.value == 4


def test_included_profile_applies_below_the_active_ones(tmp_path):
    # spring.profiles.include adds its profiles ahead of the active ones (Profiles.java
    # getActivatedProfiles), so an active profile's file beats an included one's
    files = {
        "src/main/resources/application.yml": _BOA_URL + "  profiles:\n    include: db\n",
        "src/main/resources/application-db.yml":
            "spring.datasource.hikari.maximum-pool-size: 25\n"}
    app = _app(tmp_path, files)
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "prod"}), app)
    assert found.pools[0].size.value == 25
    assert any("db: spring.profiles.include at src/main/resources/application.yml:5" in n
               for n in found.notices), found.notices
    # with no active profile the included one is active (and `default` is not)
    assert pools_for_container(container(), app).pools[0].size.value == 25
    files["src/main/resources/application-prod.yml"] = \
        "spring.datasource.hikari.maximum-pool-size: 12\n"
    app = _app(tmp_path, files)
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "prod"}), app)
    assert found.pools[0].size.value == 12
    # SPRING_PROFILES_INCLUDE in the manifest includes too
    env = {"SPRING_PROFILES_INCLUDE": "db"}
    app = _app(tmp_path / "b", {"src/main/resources/application.yml": _BOA_URL,
                                "src/main/resources/application-db.yml":
                                    files["src/main/resources/application-db.yml"]})
    assert pools_for_container(container(env), app).pools[0].size.value == 25


def test_kotlin_hikari_config_apply_block(tmp_path):
    # HikariConfig().apply { maximumPoolSize = 25 }: Kotlin's property assignment inside
    # the block has no receiver written; it was missed and the Spring default 10 counted
    app = _app(tmp_path, {
        "src/main/resources/application.yml": _BOA_URL,
        "src/main/kotlin/demo/Db.kt":
            "package demo\nclass Db {\n  @Bean\n"
            "  fun dataSource(): DataSource = HikariDataSource(HikariConfig().apply {\n"
            "      jdbcUrl = \"jdbc:postgresql://ledger-db:5432/postgresdb\"\n"
            "      maximumPoolSize = 25\n  })\n}\n"})
    (pool,) = pools_for_container(container(), app).pools
    assert pool.size.value == 25
    assert pool.size.source.label() == "src/main/kotlin/demo/Db.kt:6"


def test_code_pool_size_not_read_is_unknown_not_the_spring_default(tmp_path):
    # The code's own DataSource replaces Spring Boot's (@ConditionalOnMissingBean), so a
    # setMaximumPoolSize(field) whose value is not read is unknown, never HikariCP's 10
    app = _app(tmp_path, {
        "src/main/resources/application.yml": _BOA_URL,
        "src/main/java/demo/Db.java":
            "package demo;\npublic class Db {\n"
            "  @Value(\"${ledger.pool-size:40}\")\n  private int poolSize;\n"
            "  @Bean public DataSource dataSource() {\n"
            "    HikariConfig config = new HikariConfig();\n"
            "    config.setMaximumPoolSize(poolSize);\n"
            "    return new HikariDataSource(config);\n  }\n}\n"})
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "prod"}), app)
    assert found.pools == []
    assert found.unknown == ["HikariCP maximumPoolSize at src/main/java/demo/Db.java:7 is "
                             "set to an expression not read statically"]


_TWO_DATASOURCES = (
    "package demo;\n@Configuration\npublic class DbConfig {\n"
    "  @Bean @Primary @ConfigurationProperties(\"spring.datasource\")\n"
    "  public DataSourceProperties mainProps() { return new DataSourceProperties(); }\n"
    "  @Bean @Primary\n  public DataSource mainDataSource() {\n"
    "    return mainProps().initializeDataSourceBuilder().type(HikariDataSource.class).build();\n"
    "  }\n"
    "  @Bean @ConfigurationProperties(prefix = \"app.reporting.datasource\")\n"
    "  public DataSourceProperties reportingProps() { return new DataSourceProperties(); }\n"
    "  @Bean\n  public DataSource reportingDataSource(\n"
    "      @Qualifier(\"reportingProps\") DataSourceProperties props) {\n"
    "    return props.initializeDataSourceBuilder().type(HikariDataSource.class).build();\n"
    "  }\n}\n")


def test_second_datasource_bound_by_url_only_is_a_pool(tmp_path):
    # audit 11b D2: a DataSourceProperties bean under app.reporting.datasource with only
    # its url written made no pool (found only by maximum-pool-size / jdbc-url keys):
    # each DataSource @Bean is a HikariCP pool, 10 when nothing binds a size
    app = _app(tmp_path, {
        "src/main/resources/application.yml":
            _BOA_URL + "app:\n  reporting:\n    datasource:\n"
            "      url: jdbc:postgresql://ledger-db:5432/reporting\n"
            "      username: report\n      hikari:\n        maximum-pool-size: 30\n",
        "src/main/java/demo/DbConfig.java": _TWO_DATASOURCES})
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "prod"}), app)
    assert [p.label for p in found.pools] == [
        "HikariCP maximumPoolSize (@Bean mainDataSource)",
        "HikariCP maximumPoolSize (@Bean reportingDataSource)"]
    main, reporting = found.pools
    assert main.route.dbname == "postgresdb"
    assert reporting.route.dbname == "reporting" and reporting.route.user == "report"
    # DataSourceProperties has no `hikari` property: app.reporting.datasource.hikari.*
    # binds onto nothing here (spring-boot v3.3.4 DataSourceProperties.java)
    assert product(found.pools) == "1 x 10 + 1 x 10 = 20"
    assert any("app.reporting.datasource.hikari.maximum-pool-size" in n
               and "bound to no DataSource" in n for n in found.notices), found.notices


def test_datasource_bean_properties_bind_onto_hikari_kotlin_and_profiles(tmp_path):
    # @ConfigurationProperties on the DataSource @Bean binds onto the HikariDataSource
    # it returns (JavaBeanBinder binds the instance's class): P.maximum-pool-size;
    # a @Profile("dev") bean is not made under prod
    app = _app(tmp_path, {
        "src/main/resources/application.yml":
            _BOA_URL + "    hikari:\n      maximum-pool-size: 12\n"
            "app:\n  audit:\n    url: jdbc:postgresql://audit-db:5432/audit\n",
        "src/main/kotlin/demo/Db.kt":
            "package demo\n@Configuration\nclass Db {\n"
            "  @Bean @Primary\n  @ConfigurationProperties(\"spring.datasource\")\n"
            "  fun mainProperties() = DataSourceProperties()\n\n"
            "  @Bean @Primary\n  @ConfigurationProperties(\"spring.datasource.hikari\")\n"
            "  fun dataSource(mainProperties: DataSourceProperties): HikariDataSource =\n"
            "      mainProperties.initializeDataSourceBuilder()"
            ".type(HikariDataSource::class.java).build()\n\n"
            "  @Bean\n  @ConfigurationProperties(\"app.audit\")\n"
            "  fun auditProperties(): DataSourceProperties = DataSourceProperties()\n\n"
            "  @Bean\n"
            "  fun auditDataSource(): DataSource =\n"
            "      auditProperties().initializeDataSourceBuilder().build()\n\n"
            "  @Bean @Profile(\"dev\")\n  fun devDataSource(): DataSource =\n"
            "      EmbeddedDatabaseBuilder().build()\n}\n"})
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "prod"}), app)
    assert product(found.pools) == "1 x 12 + 1 x 10 = 22"
    main, audit = found.pools
    assert main.size.source.label() == "src/main/resources/application.yml:5"
    assert main.route.host == "ledger-db" and audit.route.host == "audit-db"
    assert found.unknown == []


def test_datasource_bean_not_read_is_unknown(tmp_path):
    # a DataSource @Bean built some way not read here: Boot's own backs off, so its
    # size is unknown, not spring.datasource's
    app = _app(tmp_path, {
        "src/main/resources/application.yml": _BOA_URL,
        "src/main/java/demo/Db.java":
            "package demo;\nclass Db {\n  @Bean\n"
            "  public DataSource dataSource() { return lookup.getDataSource(\"jdbc/x\"); }\n}\n"})
    found = pools_for_container(container(), app)
    assert found.pools == []
    assert found.unknown == ["HikariCP maximumPoolSize (@Bean dataSource) at "
                             "src/main/java/demo/Db.java:4: a DataSource built in code "
                             "that is not read statically"]


def test_only_files_spring_boot_loads_are_read(tmp_path):
    # audit 11b D5: JHipster's src/main/docker/central-server-config/.../application.yml
    # (served by the JHipster registry) was read as ./application.yml, over the jar's.
    # Spring Boot reads classpath:/, classpath:/config/, ./, ./config/ (v3.3.4
    # ConfigDataEnvironment.java:91-92) and what spring.config.location names
    files = {
        "src/main/resources/application.yml":
            _BOA_URL + "    hikari:\n      maximum-pool-size: 8\n",
        "src/main/docker/central-server-config/docker-config/application.yml":
            "spring:\n  datasource:\n    hikari:\n      maximum-pool-size: 2\n"}
    app = _app(tmp_path, files)
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "prod"}), app)
    assert found.pools[0].size.value == 8
    assert any("central-server-config/docker-config/application.yml: not where Spring "
               "Boot reads configuration" in n for n in found.notices), found.notices
    # ./config/application.yml (the working directory's) still beats the jar's
    app = _app(tmp_path / "b", {**files, "config/application.yml":
                                "spring.datasource.hikari.maximum-pool-size: 5\n"})
    assert pools_for_container(container(), app).pools[0].size.value == 5
    # a folder SPRING_CONFIG_LOCATION names is read
    app = _app(tmp_path / "c", {**files, "deploy/conf/application.yml":
                                "spring.datasource.hikari.maximum-pool-size: 6\n"})
    assert pools_for_container(container(), app).pools[0].size.value == 8
    env = {"SPRING_CONFIG_ADDITIONAL_LOCATION": "optional:file:/app/conf/"}
    assert pools_for_container(container(env), app).pools[0].size.value == 6


def test_datasource_bean_under_a_profile_constant(tmp_path):
    # JHipster's CloudDatabaseConfiguration: @Profile(JHipsterConstants.SPRING_PROFILE_CLOUD)
    # (a library's constant, not read) is not active under prod, so Boot's own
    # DataSource stays; a constant of the code itself is resolved, for @Profile and for
    # @ConfigurationProperties
    code = ("package demo;\n@Configuration\n@Profile(%s)\n"
            "public class CloudDatabaseConfiguration {\n"
            "  private static final String PREFIX = \"spring.datasource.hikari\";\n"
            "  @Bean\n  @ConfigurationProperties(PREFIX)\n"
            "  public DataSource dataSource() {\n"
            "    return DataSourceBuilder.create().build();\n  }\n}\n")
    yml = _BOA_URL + "    hikari:\n      maximum-pool-size: 7\n"
    cloud = code % "JHipsterConstants.SPRING_PROFILE_CLOUD"
    app = _app(tmp_path, {"src/main/resources/application.yml": yml,
                          "src/main/java/demo/C.java": cloud})
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "prod"}), app)
    assert [p.label for p in found.pools] == ["HikariCP maximumPoolSize"]
    app = _app(tmp_path / "b", {
        "src/main/resources/application.yml": yml,
        "src/main/java/demo/C.java": code % "Profiles.CLOUD",
        "src/main/java/demo/Profiles.java":
            "package demo;\npublic class Profiles {\n"
            "  public static final String CLOUD = \"prod\";\n}\n"})
    found = pools_for_container(container({"SPRING_PROFILES_ACTIVE": "prod"}), app)
    (pool,) = found.pools
    assert pool.label == "HikariCP maximumPoolSize (@Bean dataSource)"
    assert pool.size.value == 7


_MICRONAUT_BUILD = ('plugins { id("io.micronaut.application") version "4.4.2" }\n'
                    'dependencies {\n  implementation("io.micronaut.sql:micronaut-jdbc-{pool}")\n'
                    '  runtimeOnly("org.postgresql:postgresql")\n}\n')


def test_micronaut_datasource_without_a_size_is_hikaris_default_not_nothing(tmp_path):
    # audit 19 D1: a Micronaut datasources.default with only its url made no pool, so the
    # server it names was "fits" with peak 0. micronaut-jdbc-hikari binds datasources.*
    # onto a HikariConfig (micronaut-sql v5.8.2 DatasourceConfiguration.java:41-42)
    app = _app(tmp_path, {
        "build.gradle.kts": _MICRONAUT_BUILD.replace("{pool}", "hikari"),
        "src/main/resources/application.yml":
            "datasources:\n  default:\n    url: jdbc:postgresql://db:5432/orders\n"
            "  audit:\n    url: jdbc:postgresql://audit-db/audit\n"
            "    maximum-pool-size: 4\n"})
    found = pools_for_container(container(), app)
    assert [(p.label, p.size.value, p.bound, p.route.host) for p in found.pools] == [
        ("HikariCP maximumPoolSize (datasources.audit)", 4, "fixed", "audit-db"),
        ("HikariCP maximumPoolSize (datasources.default)", 10, "default", "db")]
    # the environment's form of the url alone names a datasource too
    env_only = pools_for_container(container(
        {"DATASOURCES_DEFAULT_URL": "jdbc:postgresql://pg.prod.svc/orders"}), _app(
        tmp_path / "env", {"build.gradle.kts": _MICRONAUT_BUILD.replace("{pool}", "hikari"),
                           "src/main/resources/application.yml": "micronaut:\n  x: 1\n"}))
    (pool,) = env_only.pools
    assert pool.size.value == 10 and pool.route.host == "pg.prod.svc"


def test_micronaut_datasource_of_another_pool_module_is_unknown(tmp_path):
    app = _app(tmp_path, {
        "build.gradle.kts": _MICRONAUT_BUILD.replace("{pool}", "tomcat"),
        "src/main/resources/application.yml":
            "datasources:\n  default:\n    url: jdbc:postgresql://db:5432/orders\n"})
    found = pools_for_container(container(), app)
    assert found.pools == []
    assert found.unknown == ["Micronaut datasources.default: its pool is "
                             "micronaut-jdbc-tomcat, not modelled"]


def test_micronaut_build_naming_hikaricp_has_no_spring_datasource_pool(tmp_path):
    # audit 19 D2 (airbyte-platform's server shape): a version-catalog Micronaut build
    # naming HikariCP got a phantom spring.datasource pool of 10 beside its datasources.*
    app = _app(tmp_path, {
        "build.gradle.kts": "dependencies {\n  implementation(libs.bundles.micronaut)\n"
                            "  runtimeOnly(libs.hikaricp)\n}\n",
        "src/main/resources/application.yml":
            "datasources:\n  config:\n    url: jdbc:postgresql://db/config\n"
            "    maximum-pool-size: ${CONFIG_DB_MAX_POOL_SIZE:20}\n"})
    found = pools_for_container(container(), app)
    assert [(p.label, p.size.value) for p in found.pools] == [
        ("HikariCP maximumPoolSize (datasources.config)", 20)]


def test_micronaut_placeholder_of_an_empty_variable_takes_its_default(tmp_path):
    # audit 24: airbyte-platform's chart sets CONFIG_DB_MAX_POOL_SIZE "" (values.yaml
    # configDbMaxPoolSize: "") for ${CONFIG_DB_MAX_POOL_SIZE:20}. Micronaut resolves an
    # empty environment variable as no value (DefaultPropertyPlaceholderResolver
    # resolveExpression: StringUtils.isNotEmpty(envVar)), so the default 20 applies; it
    # was Spring Boot's "Failed to bind ... '' is not a number" (PA901 error) and no pool
    build = "dependencies {\n  implementation(libs.bundles.micronaut)\n" \
            "  runtimeOnly(libs.hikaricp)\n}\n"
    config = ("datasources:\n  config:\n    url: jdbc:postgresql://db/config\n"
              "    maximum-pool-size: ${CONFIG_DB_MAX_POOL_SIZE:20}\n")
    app = _app(tmp_path, {"build.gradle.kts": build, "src/main/resources/application.yml": config})
    found = pools_for_container(container({"CONFIG_DB_MAX_POOL_SIZE": ""}), app)
    assert [(p.label, p.size.value) for p in found.pools] == [
        ("HikariCP maximumPoolSize (datasources.config)", 20)]
    assert "placeholder default" in (found.pools[0].size.source.key or "")
    assert not [p for p in found.problems if "Failed to bind" in p.message]
    # a value set is taken
    found = pools_for_container(container({"CONFIG_DB_MAX_POOL_SIZE": "7"}), app)
    assert [p.size.value for p in found.pools] == [7]


_KTOR_DB = (
    "package demo\nobject Db {\n  fun init() {\n"
    "    val config = HikariConfig().apply {\n"
    "      jdbcUrl = \"jdbc:postgresql://grants-db:5432/grants\"\n"
    "      maximumPoolSize = System.getenv(\"DB_POOL_MAX\")?.toInt() ?: 3\n    }\n"
    "    Database.connect(HikariDataSource(config))\n  }\n}\n")
_KTOR_BUILD = ("dependencies {\n  implementation(\"io.ktor:ktor-server-netty:2.3.12\")\n"
               "  implementation(\"com.zaxxer:HikariCP:5.1.0\")\n}\n")


@pytest.mark.parametrize(("env", "size", "cited"), [
    ({}, 3, "src/main/kotlin/demo/Db.kt:6"), ({"DB_POOL_MAX": "12"}, 12, "")])
def test_kotlin_env_with_an_elvis_fallback(tmp_path, env, size, cited):
    """Ktor/Exposed's `maximumPoolSize = System.getenv("X")?.toInt() ?: 3`: the variable
    when the container sets it, else the fallback 3 at the code's line; it was an
    expression not read (unknown, audit 19)."""
    app = _app(tmp_path, {"build.gradle.kts": _KTOR_BUILD, "src/main/kotlin/demo/Db.kt": _KTOR_DB})
    found = pools_for_container(container(env), app)
    (pool,) = found.pools
    assert pool.size.value == size and found.unknown == []
    if cited:
        assert pool.size.source.label() == cited
