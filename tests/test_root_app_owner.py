"""The repository root's application goes to the workload whose image is built from the
root, not to every workload no folder is named like (audit 50, item 1; shapes of
Adam-Vincent/springboot-postgres-docker-k8s and humble92/todo-pg, written here in our own
words). A Gradle root (settings.gradle rootProject.name order-service) deployed as
acme/order-service beside acme/notify-service, another project's image: notify-service
was given the root's Spring app and its `localhost` datasource, a false PA107. A Python
root built as acme/notes-api (`docker build -f Dockerfile.api -t acme/notes-api .` in a
README) beside acme/notes-web: the web pod was given the root too."""

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.locate import BuildHints, root_image_owner
from tests.tree_helpers import POSTGRES_DB, write

GRADLE_APP = {
    "settings.gradle": "rootProject.name = 'order-service'\n",
    "build.gradle": "plugins { id 'org.springframework.boot' version '3.1.0' }\n"
                    "dependencies {\n"
                    "    implementation 'org.springframework.boot:spring-boot-starter-data-jpa'\n"
                    "    runtimeOnly 'org.postgresql:postgresql'\n}\n",
    "src/main/java/com/acme/orders/OrderApplication.java":
        "package com.acme.orders;\n@SpringBootApplication\npublic class OrderApplication {}\n",
    "src/main/resources/application.yml":
        "spring:\n  datasource:\n    url: jdbc:postgresql://localhost:5432/orders\n",
    "Dockerfile": 'FROM eclipse-temurin:17\nCOPY build/libs/*.jar app.jar\n'
                  'ENTRYPOINT ["java","-jar","/app.jar"]\n',
}

ORDERS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: order-service}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: order-service
          image: acme/order-service:v2
          env: [{name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/orders"}]
"""
NOTIFY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: notify-service}
spec:
  template:
    spec:
      containers:
        - name: notify-service
          image: acme/notify-service:v2
          ports: [{containerPort: 8081}]
"""


def _check(tmp_path, files):
    write(tmp_path, files)
    return run_check([str(tmp_path)], CheckOptions())


def test_another_project_s_image_is_not_given_the_gradle_root(tmp_path):
    result = _check(tmp_path, {**GRADLE_APP, "k8s/db.yaml": POSTGRES_DB,
                               "k8s/orders.yaml": ORDERS, "k8s/notify.yaml": NOTIFY})
    (budget,) = result.budgets
    assert [c.who for c in budget.contributions] == ["order-service"], budget
    assert budget.peak == (2 + 1) * 10 and not budget.peak_is_floor, budget  # surge 1, Hikari 10
    assert not [f for f in result.findings if f.code == "PA107"], result.findings
    assert any("notify-service: application source not inferred" in n
               and "named as the root build's artifact (order-service)" in n
               for n in result.notices), result.notices


def test_the_root_stays_the_guess_when_no_workload_runs_its_image(tmp_path):
    # nothing else says what the root is built as: the one workload still takes it
    orders = ORDERS.replace("acme/order-service:v2", "acme/orders-api:v2")
    result = _check(tmp_path, {**GRADLE_APP, "k8s/db.yaml": POSTGRES_DB,
                               "k8s/orders.yaml": orders})
    (budget,) = result.budgets
    assert [c.who for c in budget.contributions] == ["order-service"], budget
    assert budget.peak == (2 + 1) * 10


API_MAIN = """import os

import asyncpg
from fastapi import FastAPI

app = FastAPI()


@app.on_event("startup")
async def startup():
    app.state.pool = await asyncpg.create_pool(host=os.environ["DB_HOST"], database="notes",
                                               max_size=8)
"""
PY_APP = {
    "requirements.txt": "fastapi\nasyncpg\nuvicorn\n",
    "main.py": API_MAIN,
    "Dockerfile.api": 'FROM python:3.11-slim\nCOPY requirements.txt main.py /app/\n'
                      'WORKDIR /app\nCMD ["uvicorn", "main:app", "--host", "0.0.0.0"]\n',
    "worker/requirements.txt": "asyncpg\n",
    "worker/remind.py": "import asyncio\nimport asyncpg\n\n"
                        "async def main():\n    await asyncpg.connect(host='localhost')\n",
    "worker/Dockerfile": 'FROM python:3.11-slim\nCOPY . /w\nCMD ["python", "/w/remind.py"]\n',
    "k8s/README.md": "Build:\n\n```bash\n"
                     "docker build -f Dockerfile.api -t acme/notes-api:latest .\n"
                     "docker build -f worker/Dockerfile -t acme/notes-worker:latest ./worker\n"
                     "```\n",
}
API = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: api
          image: acme/notes-api:latest
          env: [{name: DB_HOST, value: db}]
"""
WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
        - name: web
          image: acme/notes-web:latest
          env: [{name: BACKEND_URL, value: "http://api:8000"}]
"""


def test_a_web_pod_is_not_given_the_root_built_as_the_api_image(tmp_path):
    result = _check(tmp_path, {**PY_APP, "k8s/db.yaml": POSTGRES_DB, "k8s/api.yaml": API,
                               "k8s/web.yaml": WEB})
    (budget,) = result.budgets
    assert [c.who for c in budget.contributions] == ["api"], budget
    assert budget.peak == (3 + 1) * 8 and not budget.peak_is_floor, budget
    assert not [f for f in result.findings if f.code == "PA107"], result.findings
    assert any("web: application source not inferred" in n and "build context of "
               "acme/notes-api:latest" in n for n in result.notices), result.notices


def test_root_image_owner_is_pure():
    run = (("order-service", ("acme/order-service:v2",)), ("notify", ("acme/notify:v2",)))
    why = root_image_owner(None, "order-service", None, run, {"notify", "acme/notify:v2"})
    assert why is not None and "order-service runs it" in why
    # the workload that runs the root's image keeps it
    assert root_image_owner(None, "order-service", None, run,
                            {"order-service", "acme/order-service:v2"}) is None
    # no build name, no build context: nothing says what the root is built as
    assert root_image_owner(None, None, None, run, {"notify"}) is None
    hints = BuildHints(contexts=(("acme/notes-api:latest", "", "README.md:3"),))
    assert root_image_owner(hints, None, None, (("web", ("acme/notes-web",)),),
                            {"web", "notes-web"}) is None  # nobody runs notes-api
    assert root_image_owner(hints, None, None, (("api", ("acme/notes-api:1",)),
                                                ("web", ("acme/notes-web",))),
                            {"web", "notes-web"}) is not None
