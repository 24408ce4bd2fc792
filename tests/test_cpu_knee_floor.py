"""PA111 on a budget whose peak is a floor says "at least", as the server line does
(audit of session 20 on openreplay: "up to 23 connections at once" beside
"peak >= 23 (12 clients unknown)")."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

# tree_helpers' server, 500 connections on half a core (knee 0.5 x 12 = 6)
DB = POSTGRES_DB.replace('args: ["-c", "max_connections=50"]\n',
                         'args: ["-c", "max_connections=500"]\n'
                         '          resources: {limits: {cpu: 500m}}\n')


def client(name: str, pool: str, image: str = "") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 10
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: app
          image: {image or f"acme/{name}:1"}
          env:
            - {{name: DATABASE_URL, value: "postgresql://app@db:5432/app"}}
{pool}"""


def test_a_floor_past_the_knee_is_at_least(tmp_path):
    # known: 10 x 5 (PostgREST db-pool, its LISTEN connection off); unknown: 10 pods, at
    # least 1 each; knee 0.5 core x 12 = 6
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/known.yaml": client("known", "            - {name: PGRST_DB_POOL, "
                                                       "value: \"5\"}\n"
                                                       "            - {name: "
                                                       "PGRST_DB_CHANNEL_ENABLED, "
                                                       "value: \"false\"}\n",
                                              "postgrest/postgrest:v12.2.3"),
                     "k8s/unknown.yaml": client("unknown", "")})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    (finding,) = [f for f in result.findings if f.code == "PA111"]
    assert budget.peak_is_floor and budget.unknown_clients == ["unknown"]
    assert f"at least {budget.peak:g} connections at once" in finding.message
    assert f"per instance: >= {budget.peak:g}" in finding.detail
    # known only: an exact peak is "up to"
    (tmp_path / "k8s" / "unknown.yaml").unlink()
    result = run_check([str(tmp_path)], CheckOptions())
    (finding,) = [f for f in result.findings if f.code == "PA111"]
    assert "up to 50 connections at once" in finding.message


def test_a_cpu_request_without_a_limit_is_said_to_be_the_guaranteed_share(tmp_path):
    # audit s23 (PostHog's Bitnami PostgreSQL, 250m requested, no limit): the request is
    # what the scheduler guarantees, not a ceiling: the detail says so
    requested = DB.replace("resources: {limits: {cpu: 500m}}", "resources: {requests: {cpu: 500m}}")
    write(tmp_path, {"k8s/db.yaml": requested,
                     "k8s/known.yaml": client("known", "            - {name: PGRST_DB_POOL, "
                                                       "value: \"5\"}\n"
                                                       "            - {name: "
                                                       "PGRST_DB_CHANNEL_ENABLED, "
                                                       "value: \"false\"}\n",
                                              "postgrest/postgrest:v12.2.3")})
    result = run_check([str(tmp_path)], CheckOptions())
    (finding,) = [f for f in result.findings if f.code == "PA111"]
    assert finding.severity.value == "warning"
    assert "CPU request, with no CPU limit" in finding.detail
    (tmp_path / "k8s" / "db.yaml").write_text(DB)
    result = run_check([str(tmp_path)], CheckOptions())
    (finding,) = [f for f in result.findings if f.code == "PA111"]
    assert finding.severity.value == "warning" and "CPU request" not in finding.detail
