"""A bare image name the repository builds, run at another tag, is the repository's own
image, not an official one (audit 39, andarpratama/banking-api's shape: docker/README.md
builds bank-api:latest from the root with -f docker/Dockerfile, the prod overlay's
kustomize `images: newTag` runs bank-api:v1.0.0; its source was not looked for, so the
application.yml pool of 20 was read as HikariCP's default 10). Our own tree."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

APPLICATION_YML = """spring:
  datasource:
    url: ${SPRING_DATASOURCE_URL:jdbc:postgresql://localhost:5432/bank}
    hikari:
      maximum-pool-size: ${HIKARI_MAX_POOL_SIZE:20}
"""
POM = """<project><artifactId>bank-api</artifactId><dependencies>
<dependency><groupId>org.springframework.boot</groupId><artifactId>spring-boot-starter-data-jpa</artifactId></dependency>
<dependency><groupId>org.postgresql</groupId><artifactId>postgresql</artifactId></dependency>
</dependencies></project>
"""
README = """# Images

```bash
docker build -t bank-api:latest -f docker/Dockerfile .
```
"""
K8S = """
apiVersion: v1
kind: Service
metadata: {name: postgres-service}
spec: {selector: {app: postgres}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: postgres}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers: [{name: postgres, image: "postgres:17-alpine"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bank-api}
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: bank-api
          image: bank-api:TAG
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://postgres-service:5432/bank"}
"""


def _peak(tmp_path, tag: str) -> int:
    write(tmp_path, {"pom.xml": POM, "src/main/resources/application.yml": APPLICATION_YML,
                     "src/main/java/bank/App.java": "package bank;\nclass App {}\n",
                     "docker/Dockerfile": "FROM eclipse-temurin:21\n",
                     "docker/README.md": README, "k8s/all.yaml": K8S.replace("TAG", tag)})
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    return budget.peak


def test_a_release_tag_of_a_bare_image_built_here_reads_its_source(tmp_path):
    assert _peak(tmp_path, "v1.0.0") == 60  # 3 pods x maximum-pool-size 20
    assert _peak(tmp_path, "latest") == 60
