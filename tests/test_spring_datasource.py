"""Spring datasources as deployed. A Service Binding (servicebinding.io): a Secret
whose `type` entry is postgresql, mounted below the container's $SERVICE_BINDING_ROOT,
gives the datasource its host ahead of the application's own URL (Spring Cloud
Bindings; spring-petclinic's k8s/ connects to demo-db this way while its properties
name localhost). An excluded DataSourceAutoConfiguration makes no pool."""

from __future__ import annotations

import pytest

from advisor.engine.check import CheckOptions, run_check
from tests.tree_helpers import POSTGRES_DB, write

BINDING = """apiVersion: v1
kind: Secret
metadata: {name: db-binding}
type: servicebinding.io/postgresql
stringData:
  type: postgresql
  provider: postgresql
  host: db
  port: "5432"
  database: shop
  username: shop
  password: secret
"""

APP = """apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: acme/shop:1
          env:
            - {name: SERVICE_BINDING_ROOT, value: /bindings}
          volumeMounts:
            - {name: binding, mountPath: /bindings/db, readOnly: true}
      volumes:
        - name: binding
          projected:
            sources:
              - secret: {name: db-binding}
"""

SPRING = {
    "pom.xml": ("<project><dependencies>\n<dependency><groupId>org.postgresql</groupId>"
                "<artifactId>postgresql</artifactId></dependency>\n<dependency><groupId>"
                "org.springframework.boot</groupId><artifactId>spring-boot-starter-data-jpa"
                "</artifactId></dependency>\n</dependencies></project>\n"),
    "src/main/resources/application.properties":
        "spring.datasource.url=jdbc:postgresql://localhost/shop\n"
        "spring.datasource.hikari.maximum-pool-size=7\n",
}


def test_a_postgresql_binding_links_the_app_to_the_bound_server(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/binding.yaml": BINDING,
                     "k8s/app.yaml": APP, **SPRING})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 2 * 7 and budget.unknown_clients == []
    assert not [f for f in result.findings if f.code == "PA107"]  # not localhost
    assert any("through the Service Binding Secret db-binding mounted at /bindings/db "
               "(SERVICE_BINDING_ROOT=/bindings)" in n and "'db' (k8s/binding.yaml:8)" in n
               for n in result.notices), result.notices


def test_a_binding_outside_the_root_or_of_another_type_changes_nothing(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/app.yaml": APP, **SPRING,
                     "k8s/binding.yaml": BINDING.replace("type: postgresql", "type: mysql")})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert result.budgets[0].peak == 0
    assert [f for f in result.findings if f.code == "PA107"]  # localhost, as configured
    write(tmp_path, {"k8s/binding.yaml": BINDING,
                     "k8s/app.yaml": APP.replace("value: /bindings}", "value: /elsewhere}")})
    assert run_check([str(tmp_path)], CheckOptions(cache=False)).budgets[0].peak == 0


EXCLUDED = """spring:
  autoconfigure:
    exclude:
      - org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration
"""

ENV_APP = APP.replace(
    "            - {name: SERVICE_BINDING_ROOT, value: /bindings}",
    '            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/shop"}')


@pytest.mark.parametrize("how", ["yaml", "annotation"])
def test_an_excluded_datasource_autoconfiguration_opens_no_pool(tmp_path, how):
    """DataSourceAutoConfiguration excluded: SPRING_DATASOURCE_* in the env (a chart
    gives it to every component) makes no HikariCP pool (DolphinScheduler's worker was
    counted 3 x 10); the workload is no client of the server."""
    files = {"k8s/db.yaml": POSTGRES_DB, "k8s/app.yaml": ENV_APP, "pom.xml": SPRING["pom.xml"]}
    if how == "yaml":
        files["src/main/resources/application.yaml"] = EXCLUDED
    else:
        files["src/main/java/shop/App.java"] = (
            "package shop;\n\n@SpringBootApplication(exclude = {DataSourceAutoConfiguration.class,"
            "\n    FlywayAutoConfiguration.class})\npublic class App {}\n")
    write(tmp_path, files)
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 0 and budget.unknown_clients == [], result.notices
    assert any(n.startswith("DataSourceAutoConfiguration excluded") for n in result.notices)
    assert not [f for f in result.findings if f.code in ("PA102", "PA104", "PA106")]
    # without the exclusion: HikariCP's default 10 on each of the 2 pods
    (tmp_path / ("src/main/resources/application.yaml" if how == "yaml"
                 else "src/main/java/shop/App.java")).unlink()
    assert run_check([str(tmp_path)], CheckOptions(cache=False)).budgets[0].peak == 20


_LEDGER = """apiVersion: apps/v1
kind: Deployment
metadata: {name: ledger}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: ledger
          image: acme/ledger:1
          env:
%s
"""


@pytest.mark.parametrize("url,env,on_db", [
    # written literally: DB_HOST is read by no property, the pool connects to localhost
    ("jdbc:postgresql://localhost:5432/ledger", "{name: DB_HOST, value: db}", False),
    # a placeholder the env fills: db
    ("jdbc:postgresql://${DB_HOST:localhost}:5432/ledger", "{name: DB_HOST, value: db}",
     True),
    # the environment binds spring.datasource.url over the file's (relaxed binding)
    ("jdbc:postgresql://localhost:5432/ledger",
     "{name: SPRING_DATASOURCE_URL, value: 'jdbc:postgresql://db:5432/ledger'}", True),
])
def test_a_host_variable_the_app_does_not_read_does_not_move_its_pool(tmp_path, url, env,
                                                                       on_db):
    """Audit 33 D2 (shofiq4744/spring-boot-postgres-k8ns shape): application.properties
    writes spring.datasource.url with localhost and no ${}; the Deployment sets DB_HOST,
    which nothing reads. The pool (3 pods x 30) was counted on server db, OVER, where the
    pods connect to their own loopback: PA107, db's peak 0."""
    write(tmp_path, {
        "build.gradle": "plugins { id 'org.springframework.boot' version '2.7.10' }\n"
                        "dependencies {\n"
                        "  implementation 'org.springframework.boot:spring-boot-starter-data-jpa'\n"
                        "  runtimeOnly 'org.postgresql:postgresql'\n}\n",
        "settings.gradle": "rootProject.name = 'ledger'\n",
        "src/main/resources/application.properties":
            f"spring.datasource.url={url}\nspring.datasource.hikari.maximum-pool-size=30\n",
        "src/main/java/demo/App.java": "package demo;\nclass App {}\n",
        "k8s/db.yaml": POSTGRES_DB,
        "k8s/app.yaml": _LEDGER % f"            - {env}",
    })
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    pa107 = [f for f in result.findings if f.code == "PA107"]
    if on_db:
        assert budget.peak == 60 and not pa107
    else:
        assert budget.peak == 0
        assert pa107 and "'localhost'" in pa107[0].message
        assert any("DB_HOST" in n and "not read" in n for n in result.notices)
