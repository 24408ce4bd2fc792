"""A client that names a Service by one of its addresses (spec.externalIPs,
loadBalancerIP, clusterIP) reaches that Service's endpoints, as kube-proxy routes it:
audit 30 D2 (PhucPV1/NestJS-k8s shape), where DB_HOST and the postgres Service's
externalIPs are the same address."""

from __future__ import annotations

import pytest

from advisor.engine.check import CheckOptions, run_check
from tests.tree_helpers import write

APP = {
    "package.json": ('{"name": "ledger-api", "dependencies": {"@nestjs/typeorm": "^10.0.0", '
                     '"typeorm": "^0.3.20", "pg": "^8.11.0"}}'),
    "src/app.module.ts": ("import { TypeOrmModule } from '@nestjs/typeorm';\n"
                          "export const db = TypeOrmModule.forRoot({ type: 'postgres', "
                          "host: process.env.DB_HOST, poolSize: 6 });\n"),
    "Dockerfile": 'FROM node:20\nCOPY . /app\nCMD ["node", "/app/dist/main"]\n',
}

DB = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: pg, namespace: prod}}
spec:
  replicas: 1
  template:
    metadata: {{labels: {{app: pg}}}}
    spec:
      containers:
        - name: pg
          image: postgres:15
          args: ["-c", "max_connections=12"]
---
apiVersion: v1
kind: Service
metadata: {{name: pg, namespace: prod}}
spec:
  selector: {{app: pg}}
  ports: [{{port: 5432}}]
{spec}
"""

LEDGER = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: ledger, namespace: {namespace}}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: ledger
          image: acme/ledger-api:2
          env:
            - {{name: DB_HOST, value: "{host}"}}
"""


@pytest.mark.parametrize("spec,host,namespace", [
    ('  externalIPs: ["203.0.113.7"]', "203.0.113.7", "prod"),
    ('  externalIPs: ["203.0.113.7"]', "203.0.113.7:5432", "other"),  # an IP: any namespace
    ("  clusterIP: 10.96.4.20", "10.96.4.20", "prod"),
    ("  type: LoadBalancer\n  loadBalancerIP: 198.51.100.3", "198.51.100.3", "prod"),
    ('  externalIPs: ["$HOST"]', "$HOST", "prod"),  # one placeholder filled in both
])
def test_a_client_at_a_service_address_is_in_its_budget(tmp_path, spec, host, namespace):
    write(tmp_path, {**APP, "k8s/db.yaml": DB.format(spec=spec),
                     "k8s/app.yaml": LEDGER.format(host=host, namespace=namespace)})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    codes = {f.code for f in result.findings}
    # 2 pods x TypeORM poolSize 6 = 12 > 9 usable (12 - 3 reserved)
    assert "PA107" not in codes and budget.peak == 12 and "PA101" in codes


def test_a_headless_service_has_no_address(tmp_path):
    write(tmp_path, {**APP, "k8s/db.yaml": DB.format(spec="  clusterIP: None"),
                     "k8s/app.yaml": LEDGER.format(host="None", namespace="prod")})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert "PA107" in {f.code for f in result.findings}
