"""An image named like an official one (no organisation) that a script of the repository
builds is the repository's application, not a published program (audit 13e D4,
fapcon/preAIproject: monolith/minikube/main.sh runs `docker build --no-cache -t
tradeapi:latest ../`, its Deployment runs tradeapi:latest; the tool said 'no application
source folder found' and counted 1 connection per pod)."""

from __future__ import annotations

import textwrap

from advisor.engine.check import run_check
from tests.test_kustomize_environments import _server
from tests.tree_helpers import write

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: orders-deployment}
spec:
  replicas: 3
  strategy: {rollingUpdate: {maxSurge: 0}}
  selector: {matchLabels: {app: orders}}
  template:
    metadata: {labels: {app: orders}}
    spec:
      containers:
        - name: orders
          image: IMAGE
          imagePullPolicy: Never
          env:
            - {name: DATABASE_URL, value: "postgres://u:p@orders-db:5432/orders"}
"""

MAIN = """\
package main

import (
	"database/sql"
	"os"

	_ "github.com/lib/pq"
)

func main() {
	db, err := sql.Open("postgres", os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	db.SetMaxOpenConns(7)
}
"""


def _tree(root, image: str, tag: str = "orders:latest") -> None:
    write(root, {"service/go.mod": "module example.com/orders\n\ngo 1.21\n\n"
                                   "require github.com/lib/pq v1.10.9\n",
                 "service/cmd/api/main.go": MAIN,
                 "service/Dockerfile": "FROM golang:1.21\nCOPY . .\n",
                 "service/minikube/main.sh": "eval $(minikube docker-env)\n"
                                             f"docker build  --no-cache -t {tag} ../\n",
                 "service/minikube/app.yaml": APP.replace("IMAGE", image),
                 "service/minikube/db.yaml": textwrap.dedent(_server("orders-db", 100)),
                 "other/Dockerfile": "FROM alpine\n"})


def test_a_local_image_a_script_builds_finds_its_source(tmp_path):
    _tree(tmp_path, "orders:latest")
    r = run_check([tmp_path])
    # 3 replicas (maxSurge 0) x SetMaxOpenConns(7)
    assert {b.server: b.peak for b in r.budgets} == {"orders-db": 21}
    assert not [f for f in r.findings if f.code == "PA106"]


def test_an_official_image_no_script_builds_stays_a_published_program(tmp_path):
    # redis:7 is built by nothing here: its folder is not looked for, and it is no client
    _tree(tmp_path, "redis:7")
    r = run_check([tmp_path])
    assert {b.server: b.peak for b in r.budgets} == {"orders-db": 3}


def test_an_untagged_build_tags_latest(tmp_path):
    """`docker build -t tradeapi ../` tags tradeapi:latest, which the Deployment runs
    (audit 35: DiLRandI/hrm's `docker build -t hrm-app .` never matched hrm-app:latest);
    named unlike the module, only the build command says it is built here."""
    _tree(tmp_path, "tradeapi:latest", tag="tradeapi")
    r = run_check([tmp_path])
    assert {b.server: b.peak for b in r.budgets} == {"orders-db": 21}
