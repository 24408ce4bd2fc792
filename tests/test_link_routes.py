"""Which routes a workload's pods take, and to whom they count: a database's own pods are
never its clients (bank-of-anthos ledger-db names its own Service in its env)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions

# A database built from the project's own image (not read as PostgreSQL) whose env,
# shared with its clients through one ConfigMap, names its own Service.
CUSTOM_DB = """
apiVersion: v1
kind: ConfigMap
metadata: {name: db-config}
data:
  POSTGRES_DB: shop
  SPRING_DATASOURCE_URL: jdbc:postgresql://db:5432/shop
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  template:
    metadata: {labels: {app: db, tier: db}}
    spec:
      containers:
        - name: db
          image: registry.example/acme/db:v1
          envFrom: [{configMapRef: {name: db-config}}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: acme/web:1
          envFrom: [{configMapRef: {name: db-config}}]
          env:
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "7"}
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def test_database_naming_its_own_service_is_not_its_own_client(tmp_path):
    write(tmp_path, {"k8s/all.yaml": CUSTOM_DB})
    result = run_check([str(tmp_path)], CheckOptions())
    named = {f.message.split(":", 1)[0] for f in result.findings}
    assert "db" not in named, [f.message for f in result.findings]
    assert "web" in named  # PA107: the Service leads to no image read as PostgreSQL
    (notice,) = [n for n in result.notices if n.startswith("StatefulSet/db:")]
    assert "Service db" in notice and "its own pods" in notice


def test_database_is_not_counted_against_the_server_declared_for_its_service(tmp_path):
    write(tmp_path, {
        "k8s/all.yaml": CUSTOM_DB,
        ".pool-advisor.toml": """
            [[servers]]
            name = "db"
            hosts = ["db"]
            max_connections = 100
            version = 16
            """,
    })
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    # web: 3 replicas x HikariCP 7; the StatefulSet db (1 pod x HikariCP default 10
    # before) is the server itself
    assert [c.who for c in budget.contributions] == ["web"]
    assert budget.peak == 3 * 7


def test_a_service_selecting_other_pods_still_links(tmp_path):
    """Control: a Service whose selector does not take the workload's labels is not its
    own, even when their names match."""
    other = CUSTOM_DB.replace("selector: {app: db}", "selector: {app: db, tier: primary}")
    write(tmp_path, {"k8s/all.yaml": other})
    result = run_check([str(tmp_path)], CheckOptions())
    named = {f.message.split(":", 1)[0] for f in result.findings}
    assert "db" in named
