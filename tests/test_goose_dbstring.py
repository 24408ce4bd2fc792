"""goose's GOOSE_DBSTRING in an application's ConfigMap beside the URL the program reads
(audit21 D2, 0xdbb/task-manager's shape: DB_URL to the in-cluster server, GOOSE_DBSTRING
to a managed database): only the goose CLI opens it (pressly/goose cmd/goose/main.go
loadEnvConfig), so a pod that does not run goose and whose code never names the variable
is no client of that server (it printed PA107 'its 13 pods are in no budget'); a pod
that runs goose, or code that reads the variable itself, still is."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

MAIN = """\
package main

import (
\t"context"
\t"os"

\t"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
\tpool, _ := pgxpool.New(context.Background(), os.Getenv("DB_URL"))
\tdefer pool.Close()
}
"""

K8S = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data:
  DB_URL: "postgresql://app@db:5432/app?pool_max_conns=5"
  GOOSE_DRIVER: "postgres"
  GOOSE_DBSTRING: "postgresql://owner@managed.example.com/app?sslmode=require"
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: example/api:1
          command: [COMMAND]
          envFrom: [{configMapRef: {name: cfg}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: postgres, image: "postgres:16.4"}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {selector: {app: db}}
"""


def _tree(main: str = MAIN, command: str = '"/app/main"') -> dict[str, str]:
    return {"go.mod": ("module example.com/api\n\ngo 1.22\n\n"
                       "require github.com/jackc/pgx/v5 v5.6.0\n"),
            "cmd/api/main.go": main,
            "Dockerfile": 'FROM golang:1.22\nCOPY . .\nCMD ["/app/main"]\n',
            "k8s/all.yaml": K8S.replace("COMMAND", command)}


def _pa107(result) -> list:
    return [f for f in result.findings if f.code == "PA107"]


def test_goose_dbstring_is_not_a_connection_of_the_running_program(tmp_path):
    write(tmp_path, _tree())
    result = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    assert _pa107(result) == []
    [budget] = result.budgets
    assert [c.total for c in budget.contributions] == [(2 + 1) * 5]
    assert any("GOOSE_DBSTRING" in n and "only the goose CLI opens" in n
               and "container api holds no connection on it" in n for n in result.notices)


def test_goose_dbstring_counts_when_goose_runs_or_the_code_reads_it(tmp_path):
    write(tmp_path / "runs", _tree(command='"sh", "-c", "goose up && /app/main"'))
    result = run_check([str(tmp_path / "runs")], CheckOptions(cache=False, root=tmp_path / "runs"))
    assert [f.message.split(":")[0] for f in _pa107(result)] == ["api"]
    reads = MAIN.replace("defer pool.Close()",
                         'defer pool.Close()\n\t_ = os.Getenv("GOOSE_DBSTRING")')
    write(tmp_path / "reads", _tree(main=reads))
    result = run_check([str(tmp_path / "reads")], CheckOptions(cache=False,
                                                               root=tmp_path / "reads"))
    assert len(_pa107(result)) == 1
