"""audit 35 (DiLRandI/hrm's shape): a Go service whose go.mod names module .../ledger,
built by the Makefile as `ledger-api` with no organisation. The image was taken for an
official library image (no organisation, not the project's exact name), so the build
context the Makefile names was never asked: PA106 "no application source folder found",
a floor of 1 per pod, where the pool is pgxpool MaxConns 15. Written in our own words."""

from __future__ import annotations

from advisor.engine.check import CheckOptions, run_check
from advisor.read.apps.locate import project_image
from tests.tree_helpers import POSTGRES_DB, write

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: ledger-api}
spec:
  replicas: 2
  selector: {matchLabels: {app: ledger-api}}
  template:
    metadata: {labels: {app: ledger-api}}
    spec:
      containers:
        - name: ledger-api
          image: ledger-api:latest
          env: [{name: DATABASE_URL, value: "postgres://u:p@db:5432/ledger"}]
"""

POOL = """package store

import (
\t"context"

\t"github.com/jackc/pgx/v5/pgxpool"
)

func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
\tcfg, err := pgxpool.ParseConfig(url)
\tif err != nil {
\t\treturn nil, err
\t}
\tcfg.MaxConns = 15
\treturn pgxpool.NewWithConfig(ctx, cfg)
}
"""


def test_the_project_name_with_a_role_suffix_is_the_project_image():
    assert project_image("ledger-api:latest", "ledger")
    assert project_image("ledger-app", "ledger")
    assert project_image("ledger:1", "ledger")
    assert not project_image("ledger-exporter:1", "ledger")  # not a role of the project
    assert not project_image("billing-api:1", "ledger")
    assert not project_image("acme/ledger-api:1", "ledger")  # an organisation: not this test


def test_a_go_service_built_as_project_api_reads_its_pool(tmp_path):
    write(tmp_path, {
        "go.mod": "module github.com/someone/ledger\n\ngo 1.24\n\n"
                  "require github.com/jackc/pgx/v5 v5.7.1\n",
        "cmd/server/main.go": "package main\n\n"
                              "import \"github.com/someone/ledger/internal/store\"\n\n"
                              "func main() { store.Open(nil, \"\") }\n",
        "internal/store/store.go": POOL,
        "Dockerfile": "FROM golang:1.24 AS b\nWORKDIR /app\nCOPY . .\n"
                      "RUN go build -o /app/ledger ./cmd/server\nFROM alpine\n"
                      "COPY --from=b /app/ledger /app/ledger\nCMD [\"/app/ledger\"]\n",
        "Makefile": "image:\n\tdocker build -t ledger-api .\n",
        "deploy/k8s/app.yaml": APP,
        "deploy/k8s/db.yaml": POSTGRES_DB,
    })
    r = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert not any(f.code == "PA106" for f in r.findings)
    budget = r.budgets[0]
    assert budget.peak == 45  # (2 replicas + 1 surge) x MaxConns 15
