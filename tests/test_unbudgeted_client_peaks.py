"""Audit 24 (session 28): with no server budgeted, the summary says each client's own
peak (audit 21 #1: KEDA's default 100 pods x jdbc.max-size 16 = 1600 printed nowhere)."""

from __future__ import annotations

from typer.testing import CliRunner

from advisor.cli import app
from tests.tree_helpers import deployment, write


def check(*args: str):
    return CliRunner().invoke(app, ["check", "--no-cache", *args])


def _node_service(max_size: int) -> dict[str, str]:
    return {
        "package.json": '{"name": "svc", "dependencies": {"pg": "8.11.0"}}\n',
        "index.js": "const { Pool } = require('pg');\n"
                    "const pool = new Pool({ connectionString: process.env.DATABASE_URL, "
                    f"max: {max_size} }});\n",
    }


# --- no server budgeted: each client's own peak -----------------------------------------

COMPOSE = """
services:
  psql:
    image: postgres:16
"""

KEDA_DEFAULT = """
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: backend}
spec:
  scaleTargetRef: {name: backend}
  triggers:
    - {type: cpu, metadata: {value: "60"}}
"""


def test_with_no_server_budgeted_the_summary_says_each_clients_peak(tmp_path):
    """redhat-na-ssa/himss_2022_scm_integration@1a4bf70b's shape: the server runs in docker
    compose (not read), the client is scaled by KEDA (default maximum 100) with a pool of
    16. Before, 100 x 16 = 1600 was printed nowhere."""
    files = {"etc/docker-compose.yaml": COMPOSE, "k8s/keda.yaml": KEDA_DEFAULT,
             "k8s/app.yaml": deployment("backend", "acme/backend:1",
                                        {"DATABASE_URL": "postgres://u:p@psql:5432/app"}),
             # no source: its size is unknown (PA106 says it), not a peak to print
             "k8s/other.yaml": deployment("other", "grafana/grafana:10",
                                          {"DATABASE_URL": "postgres://u:p@psql:5432/app"})}
    files.update({f"backend/{k}": v for k, v in _node_service(16).items()})
    write(tmp_path, files)
    out = check("--root", str(tmp_path), str(tmp_path / "k8s"), str(tmp_path / "etc"))
    last = out.output.strip().splitlines()[-1]
    assert ("which is not read: psql (etc/docker-compose.yaml); clients' own peaks, in no "
            "budget: backend: 100 x 16 = 1600)") in last, out.output
    assert "other:" not in last
