"""hasura/graphql-engine's Cloud SQL example (audit of session 21): Hasura takes its
database from `--database-url postgres://...@$(POSTGRES_DB_HOST)/postgres` with
POSTGRES_DB_HOST=127.0.0.1:5432, the gce-proxy sidecar's port. The host carried its
port into PA107 ('127.0.0.1:5432'), a server declared with that host then linked
nothing ('fits, peak 0'), and the command-line URL gave Hasura no pools."""

from __future__ import annotations

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

HASURA = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: hasura}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: graphql-engine
          image: hasura/graphql-engine:v2.48.16
          command: [graphql-engine, --database-url,
                    "postgres://$(POSTGRES_DB_USER):$(POSTGRES_DB_PASSWORD)@$(POSTGRES_DB_HOST)/postgres",
                    serve]
          env:
            - {name: POSTGRES_DB_HOST, value: "127.0.0.1:5432"}
            - name: POSTGRES_DB_USER
              valueFrom: {secretKeyRef: {name: cloudsql-db-credentials, key: username}}
            - name: POSTGRES_DB_PASSWORD
              valueFrom: {secretKeyRef: {name: cloudsql-db-credentials, key: password}}
{sidecar}"""
PROXY = """        - name: cloudsql-proxy
          image: gcr.io/cloudsql-docker/gce-proxy:1.11
          command: [/cloud_sql_proxy, "-instances=proj:region:db=tcp:5432"]
"""


def test_the_command_line_url_gives_hasura_its_pools_on_the_declared_server(tmp_path):
    write(tmp_path, {"k8s/hasura.yaml": HASURA.replace("{sidecar}", PROXY),
                     ".pool-advisor.toml": '[[servers]]\nname = "cloudsql"\n'
                                           'hosts = ["127.0.0.1:5432"]\n'
                                           "max_connections = 100\nversion = 15\n"})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.peak == 2 * (50 + 50) and budget.unknown_clients == []


def test_a_loopback_host_behind_a_proxy_sidecar_is_named_without_its_port(tmp_path):
    write(tmp_path, {"k8s/hasura.yaml": HASURA.replace("{sidecar}", PROXY)})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (finding,) = [f for f in result.findings if f.code == "PA107"]
    assert "connects to host '127.0.0.1' " in finding.message


def test_a_loopback_host_without_a_proxy_is_no_route_of_its_own(tmp_path):
    """DB_HOST=localhost in a pod with no proxy is a development default, not a
    server the repository lacks (as before)."""
    manifest = HASURA.replace("{sidecar}", "").replace(
        'command: [graphql-engine, --database-url,\n                    "postgres://$(POSTGRES_DB_USER):'
        '$(POSTGRES_DB_PASSWORD)@$(POSTGRES_DB_HOST)/postgres",\n                    serve]',
        "command: [graphql-engine, serve]")
    write(tmp_path, {"k8s/hasura.yaml": manifest.replace("hasura/graphql-engine:v2.48.16",
                                                         "ghcr.io/acme/api:1")})
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    assert topo.clients == []
