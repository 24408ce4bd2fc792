"""A Spring application.yml mounted from a ConfigMap into ./config under the image's
WORKDIR is read, above the jar's own file (audit 39 D7, mjreb/Codescene-kirolImplementation's
shape: the Dockerfile's WORKDIR /app, the ConfigMap's application.yml mounted at /app/config
with maximum-pool-size 20, the jar's application.yml an H2 database; the mount was not read,
so HikariCP's default 10 was used). Spring Boot reads optional:file:./, ./config/ and
./config/*/ after the classpath (ConfigDataEnvironment DEFAULT_SEARCH_LOCATIONS, the same
from 2.4 to 3.3: spring-projects/spring-boot v3.3.4 ConfigDataEnvironment.java:91-92), and
spring.config.additional-location adds more. Our own tree."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

POM = """<project><artifactId>agent</artifactId><dependencies>
<dependency><groupId>org.springframework.boot</groupId><artifactId>spring-boot-starter-data-jpa</artifactId></dependency>
<dependency><groupId>org.postgresql</groupId><artifactId>postgresql</artifactId></dependency>
</dependencies></project>
"""
JAR_YML = """spring:
  datasource:
    url: jdbc:h2:mem:agent
    driver-class-name: org.h2.Driver
"""
DOCKERFILE = """FROM eclipse-temurin:17-jre-alpine
WORKDIR /app
COPY target/agent.jar app.jar
ENTRYPOINT ["java", "-jar", "app.jar"]
"""
K8S = """
apiVersion: v1
kind: Service
metadata: {name: pg}
spec: {selector: {app: pg}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pg}
spec:
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers: [{name: postgres, image: "postgres:15-alpine"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: agent-config}
data:
  application.yml: |
    spring:
      datasource:
        url: jdbc:postgresql://pg:5432/agent
        hikari:
          maximum-pool-size: 20
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: agent}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: agent
          image: agent:latest
          ENVENV
          volumeMounts: [{name: cfg, mountPath: MOUNT}]
      volumes: [{name: cfg, configMap: {name: agent-config}}]
"""


def _run(tmp_path, mount: str, env: str = ""):
    k8s = K8S.replace("MOUNT", mount).replace(
        "ENVENV", f"env: [{env}]" if env else "env: []")
    write(tmp_path, {"pom.xml": POM, "Dockerfile": DOCKERFILE,
                     "src/main/resources/application.yml": JAR_YML,
                     "src/main/java/agent/App.java": "package agent;\nclass App {}\n",
                     "README.md": "```\ndocker build -t agent:latest .\n```\n",
                     "k8s/all.yaml": k8s})
    return run_check([str(tmp_path)], CheckOptions())


def test_application_yml_mounted_in_the_workdirs_config_is_read(tmp_path):
    (budget,) = _run(tmp_path, "/app/config").budgets
    assert budget.peak == 40  # 2 pods x maximum-pool-size 20 (k8s/all.yaml)


def test_a_mount_spring_does_not_look_in_is_not_read(tmp_path):
    result = _run(tmp_path, "/etc/agent")
    assert all(b.peak != 40 for b in result.budgets)
    assert any("mounted at /etc/agent/application.yml, not where Spring Boot reads"
               in n for n in result.notices)


def test_additional_location_naming_the_mount_reads_it(tmp_path):
    env = '{name: SPRING_CONFIG_ADDITIONAL_LOCATION, value: "optional:file:/etc/agent/"}'
    (budget,) = _run(tmp_path, "/etc/agent", env).budgets
    assert budget.peak == 40
